"""The group leader of ``monitoring.method: aggregate``: the CUSUM of its group's sums.

The leader adds its blocks' readings' sums per test time
(:func:`drsim.utility.aggregate_method.meter_sums`), standardises the group's cumulative
load against its reference E_j by the reference's standard error σ_j (the method's
aggregate P̂ and its known error, or the control group's same-day load:
:mod:`drsim.utility.aggregate_reference`), and raises
``groupNonComplianceEvent`` where the one-sided CUSUM crosses h, by the query
:data:`drsim.utility.aggregate_method.GROUP_QUERY` (module doc of
:mod:`drsim.utility.aggregate_method`). Its group events latch the group as Listing 6.2's
do, so the utility (Listing 6.3) reads them unchanged; with ``utility: pooled`` the leader
also sends its excess and variance at each test (:func:`drsim.utility.pooled_tier.leader_rows`)
and the utility tests their sums (:mod:`drsim.utility.pooled_rule`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from drsim.utility.aggregate_method import Aggregate, cusum
from drsim.utility.aggregate_reference import MICRO
from drsim.utility.group_and_utility_tiers import GroupResult
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan, feed_by_time

__all__ = ["aggregate_tier", "blocks_frame", "group_statistic", "statistic_tier"]


def blocks_frame(columns: tuple[str, ...], times: Sequence, loads: Sequence, sums: Sequence
                 ) -> pd.DataFrame:
    """Return the blocks' sums as one frame, one row per block and test time.

    Parameters
    ----------
    columns : tuple of str
        The reference's columns (:attr:`AggregateReference.columns
        <drsim.utility.aggregate_reference.AggregateReference.columns>`).
    times, loads, sums : sequence of array-like
        Per block: its test times, Σ A at each [whole µkWh], and its sums of ``columns``
        one column after the other, each one value per test time.

    Returns
    -------
    pandas.DataFrame
        Columns time, accLoad and ``columns`` (:func:`group_statistic`'s ``sums``).

    Examples
    --------
    >>> blocks_frame(("expected",), [[1130, 1135]], [[4.0, 6.0]], [[3.0, 5.0]]).values.tolist()
    [[1130.0, 4.0, 3.0], [1135.0, 6.0, 5.0]]
    """
    times = [np.asarray(t, np.float64) for t in times]
    blocks = [np.asarray(x, np.float64).reshape(len(columns), len(t))
              for x, t in zip(sums, times, strict=True)]
    return pd.DataFrame({"time": np.concatenate(times),
                         "accLoad": np.concatenate([np.asarray(x, np.float64) for x in loads]),
                         **{c: np.concatenate([b[i] for b in blocks])
                            for i, c in enumerate(columns)}})


def group_statistic(plan: MonitoringPlan, method: Aggregate, sums: pd.DataFrame,
                    group: int = 0) -> pd.DataFrame:
    """Return the group's standardised excess x_j and CUSUM S_j at each test time.

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        Its test times are read.
    method : drsim.utility.aggregate_method.Aggregate
        k and the reference of E_j and σ_j
        (:class:`~drsim.utility.aggregate_reference.AggregateReference`).
    sums : pandas.DataFrame
        The blocks' sums (:func:`drsim.utility.aggregate_method.meter_sums`): columns
        time, accLoad [whole µkWh] and the reference's columns, one row per block and
        test time.
    group : int, default 0
        The group's index (the control group's reference reads its sizes).

    Returns
    -------
    pandas.DataFrame
        Per test time: time, load A_j and expected E_j [kWh], se σ_j [kWh], x [standard
        errors], cusum C_j = Σ (x − k) and statistic S_j [standard errors].

    Examples
    --------
    One block of a group 10 % above its P̂ of 100 kWh at two tests, 1 % floor:

    >>> from drsim.utility.monitoring import MonitoringPlan
    >>> plan = MonitoringPlan(1110, 1140, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> sums = pd.DataFrame({"time": [1130, 1135], "accLoad": [110e6, 220e6],
    ...                      "expected": [100e6, 200e6], "expected_sq": [1e8, 4e8]})
    >>> s = group_statistic(plan, Aggregate(k=1.5, h=5.0), sums)
    >>> s[["x", "statistic"]].round(6).values.tolist()
    [[10.0, 8.5], [10.0, 17.0]]
    """
    columns = ["accLoad", *method.reference.columns]
    total = sums.groupby("time")[columns].sum().reindex(plan.test_times, fill_value=0.0)
    a = total["accLoad"].to_numpy() / MICRO
    e, se = method.reference.expectation(group, {c: total[c].to_numpy() for c in columns})
    x = np.divide(a - e, se, out=np.zeros_like(a), where=se > 0)
    return pd.DataFrame({"time": plan.test_times, "load": a, "expected": e, "se": se, "x": x,
                         "cusum": np.cumsum(x - method.k), "statistic": cusum(x, method.k)})


def aggregate_tier(plan: MonitoringPlan, group: int, sums: pd.DataFrame) -> GroupResult:
    """Run the CUSUM of ``aggregate`` at the leader of ``group``.

    The statistic of :func:`group_statistic` travels as ``groupStatisticEvent`` (time,
    groupID, cusum C_j, sumAccLoad A_j), after a start event at t_start with C_0 = 0, to
    :data:`drsim.utility.aggregate_method.GROUP_QUERY` under skip-till-any-match: a group
    event at every test at which C_j has risen more than h above an earlier C_i, that is
    S_j > h (Page 1954). The first latches the group.

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring; its method is an :class:`~drsim.utility.aggregate_method.Aggregate`.
    group : int
        The group's id.
    sums : pandas.DataFrame
        The group's blocks' sums (:func:`group_statistic`).

    Returns
    -------
    drsim.utility.group_and_utility_tiers.GroupResult
        Its alerts (the tests with S_j > h), group events, latch and work per tick (the
        events processed: one per test time, the group's sums).

    References
    ----------
    .. [1] E. S. Page, "Continuous Inspection Schemes", Biometrika 41(1/2), 100-115, 1954.
    .. [2] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2 (Listing 6.2, the group
       event this raises instead).

    Examples
    --------
    >>> from dataclasses import replace
    >>> from drsim.utility.aggregate_method import GROUP_QUERY
    >>> plan = MonitoringPlan(1110, 1140, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> plan = replace(plan, method=Aggregate(), queries=(("group_cusum", GROUP_QUERY),))
    >>> sums = pd.DataFrame({"time": [1130, 1135], "accLoad": [110e6, 220e6],
    ...                      "expected": [100e6, 200e6], "expected_sq": [1e8, 4e8]})
    >>> g = aggregate_tier(plan, 0, sums)
    >>> g.events["time"].tolist(), g.latch
    ([1130, 1135], 1130)
    """
    return statistic_tier(plan, group, group_statistic(plan, plan.method, sums, group))


def statistic_tier(plan: MonitoringPlan, group: int, stat: pd.DataFrame) -> GroupResult:
    """Run the group query of :func:`aggregate_tier` over the group's statistic.

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring; its method is an :class:`~drsim.utility.aggregate_method.Aggregate`.
    group : int
        The group's id.
    stat : pandas.DataFrame
        Its statistic at each test time (:func:`group_statistic`).

    Returns
    -------
    drsim.utility.group_and_utility_tiers.GroupResult
        As :func:`aggregate_tier`'s.
    """
    stream = pd.DataFrame({"type": "groupStatisticEvent",
                           "time": np.r_[plan.t_start, stat["time"]].astype(np.int64),
                           "groupID": group, "cusum": np.r_[0.0, stat["cusum"]],
                           "sumAccLoad": np.r_[0.0, stat["load"]]})
    session = plan.compile("group_cusum").start("skip-till-any-match")
    found, processed, pms, _ = feed_by_time(session, stream, plan.ticks, as_frame=True)
    events = found.reindex(columns=["time", "groupID", "sumAccLoad"])
    events = events.drop_duplicates("time").sort_values("time", ignore_index=True)
    events = events.astype({"time": np.int64, "groupID": np.int64, "sumAccLoad": np.float64})
    latch = int(events["time"].min()) if len(events) else NOT_LATCHED
    return GroupResult(group, events.copy(), events, latch, processed, pms)
