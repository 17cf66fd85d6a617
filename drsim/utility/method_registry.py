"""The monitoring methods by name (``monitoring.method``) and the one a scenario runs.

The interface is :class:`drsim.utility.monitoring_method.MonitoringMethod`; a new method is
a subclass in a module of its own and one entry of :data:`METHODS` (its name and how it is
built from a scenario).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drsim.utility.aggregate_method import Aggregate
from drsim.utility.monitoring_method import Counting, MonitoringMethod, known_cv
from drsim.utility.tolerance_method import Tolerance

__all__ = ["METHODS", "method_of"]

#: each method's name and how it is built from a scenario's settings
METHODS: dict[str, Callable[[Any], MonitoringMethod]] = {
    "counting": lambda scenario: Counting(),
    "tolerance": lambda scenario: Tolerance(
        z=scenario.monitoring.tolerance.z,
        cv=known_cv(scenario.monitoring.tolerance.cv, scenario)),
    "aggregate": lambda scenario: Aggregate(
        k=scenario.monitoring.aggregate.k, h=scenario.monitoring.aggregate.h,
        cv=known_cv(scenario.monitoring.aggregate.cv, scenario),
        correlated_share=scenario.monitoring.aggregate.correlated_share,
        floor=scenario.monitoring.aggregate.floor),
}


def method_of(scenario: Any) -> MonitoringMethod:
    """Return the monitoring method ``scenario`` runs (``monitoring.method``).

    Examples
    --------
    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}],
    ...              baseline={"error": 0.1}, monitoring={"method": "tolerance"})
    >>> method_of(s)
    Tolerance(z=1.64, cv=0.1)
    """
    return METHODS[scenario.monitoring.method](scenario)
