"""How non-compliance is tested under baseline error: the monitoring methods' interface.

The interface of the monitoring methods (``monitoring.method``) and the dissertation's
own, ``counting``.

A monitoring method is what the meter and group tiers test (docs/decisions.md,
"Monitoring methods under baseline error"); the utility tier (Listing 6.3) reads the
group events every method raises alike, unless the method's utility rule says otherwise
(:meth:`~MonitoringMethod.utility_rule`). One subclass of :class:`MonitoringMethod` per
method, in a module of its own, and one line in
:data:`drsim.utility.method_registry.METHODS`; the tiers ask the plan's method
(:attr:`drsim.utility.monitoring.MonitoringPlan.method`) and never name one:

* :meth:`~MonitoringMethod.queries`: the query texts it runs instead of Listings
  6.1-6.3 as drsim reads them (a scenario's ``monitoring.queries`` still replaces any);
* :meth:`~MonitoringMethod.params`, :attr:`~MonitoringMethod.tables` and
  :meth:`~MonitoringMethod.meter_tables`: the parameters and lookup tables its meter
  query reads beside ``λ[houseID, time]``;
* :attr:`~MonitoringMethod.group_test`: whether the group leader tests the group's
  summed readings itself (``aggregate``), so that the meters send sums, not user events
  (the pipeline's group leader asks it; :meth:`~MonitoringMethod.meter`: what the
  meters send instead, which :func:`drsim.utility.monitoring.meter_tier` asks);
* :meth:`~MonitoringMethod.gamma_user`: the γ_user its group tier reads (the scenario's,
  or none when it counts no flagged households);
* :meth:`~MonitoringMethod.utility_rule`: what the utility tier tests
  (:mod:`drsim.utility.utility_rule`; Listing 6.3 over the groups' latches by default);
* :meth:`~MonitoringMethod.refusal`: why it does not run beside a scenario's other
  settings (None: it does);
* :meth:`~MonitoringMethod.summary`: its part of summary.json's ``monitoring`` section.

γ[groupID, time] follows the method without a hook of its own: the replicas of the
expected response (:func:`drsim.utility.threshold.replica_flags`) run the plan's meter
tier, so each replica is tested by the same method as the day.

``counting``
    Listings 6.1-6.3 as drsim runs them (:data:`drsim.utility.monitoring.QUERIES`): Eq. 6.4
    per household, m_user + 1 failed tests in a row flag it, and a group alerts when more
    than γ of its households are flagged. Every value is that of drsim before the methods
    were introduced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from drsim.utility.aggregate_reference import ReferenceReadings
from drsim.utility.meter_result import MeterResult
from drsim.utility.utility_rule import LATCHED_GROUPS, UtilityRule

__all__ = ["Counting", "MonitoringMethod", "known_cv"]


@dataclass(frozen=True)
class MonitoringMethod:
    """A monitoring method: what its tiers test (module doc).

    The defaults are those of ``counting``, the dissertation's Listings 6.1-6.3; keep
    subclasses frozen and picklable (they travel to the executors inside the plan).
    """

    #: ``monitoring.method``'s value
    name: ClassVar[str] = "counting"
    #: the lookup tables its meter query reads beside ``λ`` (each keyed like ``λ``)
    tables: ClassVar[tuple[str, ...]] = ()
    #: whether the group leader tests the group's summed readings itself
    group_test: ClassVar[bool] = False

    def queries(self) -> dict[str, str]:
        """Return the query texts it runs instead of Listings 6.1-6.3, by name.

        The names are those of :data:`drsim.utility.monitoring.QUERIES` (none: the
        listings as drsim reads them).
        """
        return {}

    def params(self) -> dict[str, Any]:
        """Return the parameters its query texts read beside the plan's."""
        return {}

    def meter_tables(self, lam: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """Return the lookup tables of :attr:`tables` for a block of households.

        Each is made from the households' ``λ[houseID, time]`` (one row per household, one
        column per test time) [kWh] and keyed alike.
        """
        return {}

    def meter(self, house_ids: np.ndarray, group_id: int, times: np.ndarray,
              acc_kwh: np.ndarray, expected_acc_kwh: np.ndarray,
              readings: ReferenceReadings | None = None) -> MeterResult | None:
        """Return what a block's meters send when they run no query (None: they run one).

        Parameters as :func:`drsim.utility.monitoring.meter_tier`'s; ``readings``: the
        block's readings beside its called households' (its control households'), which
        a group test's reference may read.
        """
        return None

    def gamma_user(self, gamma_user: Any) -> Any:
        """Return the γ_user of Listing 6.2 its group tier reads: the scenario's."""
        return gamma_user

    def refusal(self, scenario: Any) -> str | None:
        """Return why it does not run with ``scenario``'s other settings (None: it does)."""
        return None

    def utility_rule(self) -> UtilityRule:
        """Return what the utility tier tests: Listing 6.3 over the groups' latches."""
        return LATCHED_GROUPS

    def summary(self) -> dict[str, Any]:
        """Return its part of summary.json's ``monitoring`` section.

        The method's name and its settings as run (None: it has none).
        """
        return {"method": self.name, "method_settings": None}


@dataclass(frozen=True)
class Counting(MonitoringMethod):
    """Listings 6.1-6.3 as drsim runs them (module doc): the interface's defaults.

    Examples
    --------
    >>> Counting().summary()
    {'method': 'counting', 'method_settings': None}
    """


def known_cv(settings_cv: float | None, scenario: Any) -> float:
    """Return what the utility knows of its M&V method's error.

    That is the coefficient of variation cv_k of a household's expected response: the
    method's setting when given, else the size of the simulated M&V error,
    ``baseline.error`` (drsim.utility.baseline, :func:`~drsim.utility.baseline.with_mv_error`):
    the utility knows how large its error is, not its realisation. A table of each M&V
    method's measured error can supply it here.

    Parameters
    ----------
    settings_cv : float or None
        ``monitoring.tolerance.cv`` or ``monitoring.aggregate.cv`` [1].
    scenario : drsim.scenario.Scenario
        Its ``baseline.error`` is read.

    Returns
    -------
    float
        cv_k, the same for every household [1].

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> s = NS(baseline=NS(error=0.1))
    >>> known_cv(None, s), known_cv(0.2, s)
    (0.1, 0.2)
    """
    return float(scenario.baseline.error if settings_cv is None else settings_cv)
