"""The utility of ``utility: pooled``: one CUSUM over the group leaders' statistics.

The group leaders of ``aggregate`` send the utility their group's excess A_j − E_j and
its variance σ_j² at every test time (:func:`leader_rows`; :func:`leader_statistics` reads
them from the leaders' output); the utility sums them, runs the CUSUM of
:mod:`drsim.utility.pooled_rule` by its query :data:`drsim.utility.pooled_rule.UTILITY_QUERY`
and holds each test's alert at every tick until the next test's statistic is known; Listing
6.3's bottom query predicts non-compliance (t_nc) at the (m_utility + 1)-th alert in a row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from drsim.utility.group_and_utility_tiers import UtilityResult, latest_test
from drsim.utility.monitoring import NOT_LATCHED, POLICY, RUNS, MonitoringPlan
from drsim.utility.pooled_rule import pooled_statistic
from drsim.utility.session_feed import feed_by_time

__all__ = ["STATISTIC_KINDS", "leader_rows", "leader_statistics", "pooled_tier"]

#: the kinds of the leaders' rows that carry their statistic: A_j − E_j [kWh], σ_j² [kWh²]
STATISTIC_KINDS = ("excess", "variance")


def leader_rows(stat: pd.DataFrame) -> list[tuple[str, int, float]]:
    """Return what a leader sends the utility of its statistic: (kind, time, value) rows.

    Parameters
    ----------
    stat : pandas.DataFrame
        The group's statistic (:func:`drsim.utility.aggregate_tier.group_statistic`:
        time, load A_j, expected E_j, se σ_j, [kWh]).

    Returns
    -------
    list of (str, int, float)
        Per test time, an ``excess`` row, A_j − E_j [kWh], then per test time a
        ``variance`` row, σ_j² [kWh²].

    Examples
    --------
    >>> stat = pd.DataFrame({"time": [1130], "load": [12.0], "expected": [10.0], "se": [3.0]})
    >>> leader_rows(stat)
    [('excess', 1130, 2.0), ('variance', 1130, 9.0)]
    """
    values = (stat["load"] - stat["expected"], stat["se"] ** 2)
    return [(kind, int(t), float(v)) for kind, column in zip(STATISTIC_KINDS, values, strict=True)
            for t, v in zip(stat["time"], column, strict=True)]


def leader_statistics(rows: pd.DataFrame, n_groups: int, test_times: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Return the leaders' excess and variance per group and test time.

    Parameters
    ----------
    rows : pandas.DataFrame
        The leaders' output: columns group, kind, time [minutes since midnight] and load,
        whose rows of kind ``excess`` carry A_j − E_j [kWh] and of kind ``variance`` σ_j²
        [kWh²].
    n_groups : int
        The groups [groups].
    test_times : numpy.ndarray
        The test times [minutes since midnight].

    Returns
    -------
    excess, variance : numpy.ndarray
        (groups, tests) [kWh] and [kWh²]; 0 where a leader sent nothing.

    Examples
    --------
    >>> rows = pd.DataFrame({"group": [1, 1, 0], "kind": ["excess", "variance", "alert"],
    ...                      "time": [1135, 1135, 1135], "load": [2.0, 4.0, 9.0]})
    >>> e, v = leader_statistics(rows, 2, np.array([1130, 1135]))
    >>> e.tolist(), v.tolist()
    ([[0.0, 0.0], [0.0, 2.0]], [[0.0, 0.0], [0.0, 4.0]])
    """
    out = []
    for kind in STATISTIC_KINDS:
        mine = rows[rows["kind"] == kind]
        table = np.zeros((n_groups, len(test_times)))
        at = np.searchsorted(test_times, mine["time"].to_numpy(np.int64))
        table[mine["group"].to_numpy(np.int64), at] = mine["load"].to_numpy(np.float64)
        out.append(table)
    return out[0], out[1]


def pooled_tier(plan: MonitoringPlan, excess: np.ndarray, variance: np.ndarray
                ) -> UtilityResult:
    """Run the pooled CUSUM at the utility: its alerts and prediction t_nc (module doc).

    The statistic (:func:`drsim.utility.pooled_rule.pooled_statistic`) travels as
    ``utilityStatisticEvent`` (time, cusum C_j, load D_j), after a start event at t_start
    with C_0 = 0, to ``utility_cusum`` under skip-till-any-match: an alert at every test
    with S_j > h_u. Each holds at every tick until the next test time; Listing 6.3's
    bottom query predicts at the (m_utility + 1)-th consecutive alerting tick.

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring; its method's utility rule is a
        :class:`~drsim.utility.pooled_rule.PooledCusum`.
    excess, variance : numpy.ndarray
        (groups, tests) the leaders' A_j − E_j [kWh] and σ_j² [kWh²]
        (:func:`leader_statistics`).

    Returns
    -------
    drsim.utility.group_and_utility_tiers.UtilityResult
        Its alerts (time, load: the pooled excess D_j of the test they hold [kWh]), t_nc
        and work per tick.

    References
    ----------
    .. [1] E. S. Page, "Continuous Inspection Schemes", Biometrika 41(1/2), 100-115, 1954.
    .. [2] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2 (Listing 6.3).

    Examples
    --------
    Two groups each 2 kWh above a reference of standard error 1 kWh at every test: x =
    2√2 ≈ 2.83, S_j = 1.83, 3.66, 5.49 (k_u = 1) crosses h_u = 4 at the third test (19:00),
    and the prediction is the second alerting tick (m_utility = 1).

    >>> from dataclasses import replace
    >>> from drsim.utility.aggregate_method import Aggregate
    >>> from drsim.utility.pooled_rule import PooledCusum
    >>> method = Aggregate(utility=PooledCusum(k=1.0, h=4.0))
    >>> plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 2)
    >>> plan = replace(plan, method=method, queries=plan.queries + tuple(
    ...     method.queries().items()))
    >>> u = pooled_tier(plan, np.full((2, 4), 2.0), np.full((2, 4), 1.0))
    >>> int(u.alerts["time"].min()), u.t_nc
    (1140, 1141)
    """
    rule = plan.method.utility_rule()
    s = pooled_statistic(excess, variance, rule.k)
    times = plan.test_times
    stream = pd.DataFrame({"type": "utilityStatisticEvent",
                           "time": np.r_[plan.t_start, times].astype(np.int64),
                           "cusum": np.r_[0.0, s["cusum"]], "load": np.r_[0.0, s["excess"]]})
    session = plan.compile("utility_cusum").start("skip-till-any-match")
    found, processed, pms, _ = feed_by_time(session, stream, plan.ticks, as_frame=True)
    crossed = np.unique(found["time"].to_numpy(np.int64)) if len(found) else np.array([], int)
    known = latest_test(plan)
    alerting = np.isin(known, crossed)
    at = np.searchsorted(times, known[alerting])
    alerts = pd.DataFrame({"type": "utilityAlertEvent", "time": plan.ticks[alerting],
                           "load": s["excess"][at]})
    bottom = plan.compile("utility").start(POLICY, runs=RUNS)
    out, more_processed, more_pms, _ = feed_by_time(bottom, alerts, plan.ticks)
    predicted = [r["time"] for r in out]
    t_nc = int(min(predicted)) if predicted else NOT_LATCHED
    return UtilityResult(alerts.drop(columns="type"), t_nc, processed + more_processed,
                         pms + more_pms)
