"""The monitoring methods by name (``monitoring.method``) and the one a scenario runs.

The interface is :class:`drsim.utility.monitoring_method.MonitoringMethod`; a new method is
a subclass in a module of its own and one entry of :data:`METHODS` (its name and how it is
built from a scenario). ``aggregate``'s reference, where its test's E_j and σ_j come from
(:mod:`drsim.utility.aggregate_reference`), is chosen here too, once per scenario
(:func:`reference_of`), and what its utility tests (:func:`utility_rule_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drsim.utility.aggregate_method import Aggregate
from drsim.utility.aggregate_reference import AggregateReference
from drsim.utility.control_reference import ControlGroupReference
from drsim.utility.known_cv_reference import KnownCv
from drsim.utility.monitoring_method import Counting, MonitoringMethod, known_cv
from drsim.utility.pooled_rule import PooledCusum
from drsim.utility.tolerance_method import Tolerance
from drsim.utility.utility_rule import LATCHED_GROUPS, UtilityRule

__all__ = ["METHODS", "method_of", "reference_of", "utility_rule_of"]


def reference_of(scenario: Any) -> AggregateReference:
    """Return where ``aggregate``'s E_j and σ_j come from for ``scenario``, chosen once.

    The control group's same-day load when the scenario has one
    (``baseline.control_group.share`` > 0 in some group,
    :class:`~drsim.utility.control_reference.ControlGroupReference`), else the M&V
    method's aggregate P̂ and its known error
    (:class:`~drsim.utility.known_cv_reference.KnownCv`); docs/decisions.md, "The
    aggregate test against the control group".

    Examples
    --------
    >>> from drsim.scenario import scenario_from_dict
    >>> s = {"name": "doc", "seed": 7, "households": 20, "groups": [{"name": "g", "size": 20}]}
    >>> reference_of(scenario_from_dict(s))
    KnownCv(cv=0.0, correlated_share=0.0, floor=0.01)
    >>> reference_of(scenario_from_dict({**s, "baseline": {"control_group": {"share": 0.2}}}))
    ControlGroupReference(control=(4,), called=(16,), floor=0.01)
    """
    settings = scenario.monitoring.aggregate
    control = tuple(scenario.control_group_sizes())
    if any(control):
        return ControlGroupReference(control, tuple(scenario.called_group_sizes()),
                                     settings.floor)
    return KnownCv(known_cv(settings.cv, scenario), settings.correlated_share, settings.floor)

def utility_rule_of(scenario: Any) -> UtilityRule:
    """Return what ``aggregate``'s utility tests for ``scenario``.

    ``monitoring.aggregate.utility``: Listing 6.3 over the groups' latches, or one
    CUSUM of the groups' summed excess (:class:`~drsim.utility.pooled_rule.PooledCusum`,
    its k and h the groups' unless ``utility_k``, ``utility_h`` say otherwise).

    Examples
    --------
    >>> from drsim.scenario import scenario_from_dict
    >>> s = {"name": "doc", "seed": 7, "households": 20, "groups": [{"name": "g", "size": 20}]}
    >>> utility_rule_of(scenario_from_dict(s)).name
    'groups'
    >>> mon = {"method": "aggregate", "aggregate": {"k": 1.0, "utility": "pooled",
    ...                                             "utility_h": 3.0}}
    >>> utility_rule_of(scenario_from_dict({**s, "monitoring": mon}))
    PooledCusum(k=1.0, h=3.0)
    """
    settings = scenario.monitoring.aggregate
    if settings.utility == "groups":
        return LATCHED_GROUPS
    return PooledCusum(settings.k if settings.utility_k is None else settings.utility_k,
                       settings.h if settings.utility_h is None else settings.utility_h)

#: each method's name and how it is built from a scenario's settings
METHODS: dict[str, Callable[[Any], MonitoringMethod]] = {
    "counting": lambda scenario: Counting(),
    "tolerance": lambda scenario: Tolerance(
        z=scenario.monitoring.tolerance.z,
        cv=known_cv(scenario.monitoring.tolerance.cv, scenario)),
    "aggregate": lambda scenario: Aggregate(
        k=scenario.monitoring.aggregate.k, h=scenario.monitoring.aggregate.h,
        reference=reference_of(scenario), utility=utility_rule_of(scenario)),
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
