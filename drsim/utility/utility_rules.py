"""The utility tier of a run, by its rule (:mod:`drsim.utility.utility_rule`).

Each rule's name and the function that runs it over the group leaders' output: Listing
6.3 over the groups' latches (``groups``,
:func:`drsim.utility.group_and_utility_tiers.utility_tier`) or the pooled CUSUM over the
leaders' statistics (``pooled``, :func:`drsim.utility.pooled_tier.pooled_tier`). A new
rule is a subclass of :class:`~drsim.utility.utility_rule.UtilityRule` and one entry of
:data:`TIERS`.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from drsim.utility.group_and_utility_tiers import UtilityResult, utility_tier
from drsim.utility.monitoring import MonitoringPlan
from drsim.utility.pooled_tier import leader_statistics, pooled_tier

__all__ = ["TIERS", "run_utility"]

#: per rule's name, its utility tier over (plan, latches, latch loads, the leaders' rows)
TIERS: dict[str, Callable[[MonitoringPlan, dict[int, int], dict[int, float], pd.DataFrame],
                          UtilityResult]] = {
    "groups": lambda plan, latches, loads, rows: utility_tier(plan, latches, loads),
    "pooled": lambda plan, latches, loads, rows: pooled_tier(
        plan, *leader_statistics(rows, plan.n_groups, plan.test_times)),
}


def run_utility(plan: MonitoringPlan, latches: dict[int, int], latch_loads: dict[int, float],
                rows: pd.DataFrame) -> UtilityResult:
    """Run the utility tier of ``plan``'s rule.

    The rule is the method's (:meth:`MonitoringMethod.utility_rule
    <drsim.utility.monitoring_method.MonitoringMethod.utility_rule>`).

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring.
    latches : dict of int to int
        Per group, its latch minute or NOT_LATCHED [minutes since midnight].
    latch_loads : dict of int to float
        Per group, the accumulated load its group event carried [kWh].
    rows : pandas.DataFrame
        The leaders' output of the pass (rows of the tiers' output: group, kind, time,
        load).

    Returns
    -------
    drsim.utility.group_and_utility_tiers.UtilityResult
        The utility's alerts, t_nc and work per tick.

    Examples
    --------
    >>> from drsim.utility.monitoring import NOT_LATCHED
    >>> plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 2)
    >>> run_utility(plan, {0: 1136, 1: NOT_LATCHED}, {0: 2.5}, pd.DataFrame()).t_nc
    1137
    """
    return TIERS[plan.method.utility_rule().name](plan, latches, latch_loads, rows)
