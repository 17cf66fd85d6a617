"""The group and utility tiers of the monitoring (dissertation §6.2.2, Listings 6.2-6.3).

A group leader runs Listing 6.2 over its households' user events (the meter tier,
:func:`drsim.utility.monitoring.meter_tier`): an alert at a tick when more than γ of the
group is flagged, a group event after m_group alerts in a row, which latches the group; the
utility runs Listing 6.3 over the groups' events and predicts non-compliance (t_nc) after
m_utility alerts in a row. The readings of the printed listings drsim changes are listed in
:data:`drsim.utility.monitoring.CHANGES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from drsim.utility.leader_carry import TierRuns
from drsim.utility.monitoring import NOT_LATCHED, POLICY, RUNS, MonitoringPlan
from drsim.utility.session_feed import feed_by_time

__all__ = ["GroupResult", "UtilityResult", "group_tier", "latest_test", "utility_stream",
           "utility_tier"]


@dataclass
class GroupResult:
    """One group leader's alerts and group events, and its work per tick.

    Attributes
    ----------
    group : int
        The group's id.
    alerts : pandas.DataFrame
        The ``groupAlertEvent`` of each alerting tick: columns time [minutes since
        midnight], groupID, sumAccLoad [kWh].
    events : pandas.DataFrame
        The group events (``groupNonComplianceEvent``): columns time, groupID,
        sumAccLoad.
    latch : int
        The minute of the first group event, or NOT_LATCHED.
    processed, partial_matches : numpy.ndarray
        Per tick (aligned with ``plan.ticks``), the events processed and the partial
        matches created plus extended by both queries of Listing 6.2.
    """

    group: int
    alerts: pd.DataFrame  # time, groupID, sumAccLoad (one row per alerting tick)
    events: pd.DataFrame  # groupNonComplianceEvent: time, groupID, sumAccLoad
    latch: int  # first group event's minute, or NOT_LATCHED
    processed: np.ndarray
    partial_matches: np.ndarray


def latest_test(plan: MonitoringPlan, shift: np.ndarray | None = None) -> np.ndarray:
    """Return, for each tick, the latest test time known by then.

    Without ``shift`` that is the latest test at or before the tick; with it, the latest
    test T with T + shift ≤ tick.

    Parameters
    ----------
    plan : MonitoringPlan
        Its ``test_times`` and ``ticks`` are read.
    shift : numpy.ndarray, optional
        Per test time, the whole minutes until its data are in
        (:mod:`drsim.utility.fetching`) [minutes].

    Returns
    -------
    numpy.ndarray
        Per tick, a test time, or -1 before any [minutes since midnight].

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> plan = SimpleNamespace(test_times=np.array([10, 11, 12]), ticks=np.arange(10, 14))
    >>> latest_test(plan).tolist(), latest_test(plan, np.array([1, 1, 1])).tolist()
    ([10, 11, 12, 12], [-1, 10, 11, 12])
    """
    times = plan.test_times
    ready = times if shift is None else times + shift
    order = np.argsort(ready, kind="stable")
    latest = np.maximum.accumulate(times[order])
    at = np.searchsorted(ready[order], plan.ticks, side="right") - 1
    return np.where(at >= 0, latest[at.clip(0)], -1)


def group_tier(plan: MonitoringPlan, group: int, size: int, user_events: pd.DataFrame,
               gamma: dict[tuple[int, int], float],
               shift: np.ndarray | None = None, carry: TierRuns | None = None) -> GroupResult:
    """Run Listing 6.2 at the leader of ``group``.

    The top query counts the group's flagged households at each test time and alerts
    when

        alertNum > γ[groupID, time] × GroupSize[groupID]

    (Listing 6.2 with the threshold per group and test time, change 7 of the module doc);
    the alert of a test time holds at every tick until the next test's is known (change
    5). The bottom query turns m_group + 1 consecutive alerting ticks into a
    ``groupNonComplianceEvent`` at every tick while the run lasts; the first latches the
    group (docs/decisions.md, "Cadence, held status and latching").

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (ticks, m_group, the query texts).
    group : int
        The group's id.
    size : int
        ``GroupSize[groupID]`` [households].
    user_events : pandas.DataFrame
        The group's user events, columns time [minutes since midnight], houseID, accLoad
        [kWh] (:attr:`MeterResult.events`).
    gamma : dict of (int, int) to float
        The lookup ``γ[groupID, time]`` (:meth:`drsim.utility.threshold.Thresholds.table`)
        [1].
    shift : numpy.ndarray, optional
        Per test time, the whole minutes after it until its data are in
        (:func:`drsim.utility.fetching.alert_shift`; none: at once), from which its alert
        replaces the previous test's [minutes].
    carry : drsim.utility.leader_carry.TierRuns, optional
        A stream's run kept between micro-batches, final up to its ``upto``: the
        sessions are fed only the rows of final ticks they have not had, and the result
        holds the alerts and group events of those ticks (none: a run over every tick).

    Returns
    -------
    GroupResult
        The leader's alerts, group events, latch and work per tick.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2 (Listing 6.2).

    Examples
    --------
    A group of two households, one flagged from 18:55 on; it alerts above 0.4 × 2
    flagged households, so from the first flag on, and latches at the second
    consecutive alert (m_group = 1).

    >>> plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> flagged = pd.DataFrame({"time": [1135, 1140, 1145], "houseID": 7,
    ...                         "accLoad": [2.5, 3.5, 4.5]})
    >>> gamma = {(0, int(t)): 0.4 for t in plan.test_times}
    >>> g = group_tier(plan, 0, 2, flagged, gamma)
    >>> g.alerts["time"].tolist() == list(range(1135, 1150)), g.latch
    (True, 1136)
    """
    ticks = plan.ticks
    stream = pd.DataFrame({"type": "userNonComplianceEvent",
                           "time": user_events["time"].to_numpy(np.int64),
                           "houseID": user_events["houseID"].to_numpy(np.int64),
                           "groupID": group,
                           "accLoad": user_events["accLoad"].to_numpy(np.float64)})
    stream = stream.sort_values("time", kind="stable", ignore_index=True)
    def alert_session() -> Any:
        return plan.compile("group_alert", GroupSize={group: size}, γ=gamma).start()

    def group_session() -> Any:
        return plan.compile("group").start(POLICY, runs=RUNS)

    found, processed, pms, _ = feed_by_time(alert_session(), stream, ticks) \
        if carry is None else carry.alerts.run(alert_session, stream, ticks, carry.upto)
    at_tests = pd.DataFrame(found, columns=["type", "time", "groupID", "sumAccLoad"])
    # the alert of a test time holds until the next test time is known (docs/decisions.md,
    # "Cadence, held status and latching", "Remote profiles and when the tiers see them")
    known = latest_test(plan, shift)
    alerting = np.isin(known, at_tests["time"].to_numpy())
    if carry is not None:  # a stream's: the final ticks only
        alerting &= ticks <= carry.upto
    load = at_tests.set_index("time")["sumAccLoad"]
    alerts = pd.DataFrame({"type": "groupAlertEvent", "time": ticks[alerting],
                           "groupID": group,
                           "sumAccLoad": load.reindex(known[alerting]).to_numpy()})
    events, more_processed, more_pms, _ = \
        feed_by_time(group_session(), alerts, ticks, as_frame=True) if carry is None \
        else carry.group.run(group_session, alerts, ticks, carry.upto, as_frame=True)
    processed += more_processed
    pms += more_pms
    events = events.reindex(columns=["time", "groupID", "sumAccLoad"])
    latch = int(events["time"].min()) if len(events) else NOT_LATCHED
    return GroupResult(group, alerts.drop(columns="type"), events, latch, processed, pms)


@dataclass
class UtilityResult:
    """The utility's alerts, its prediction ``t_nc`` and its work per tick.

    Attributes
    ----------
    alerts : pandas.DataFrame
        The utility's alerts (``utilityAlertEvent``): columns time [minutes since
        midnight], load [kWh].
    t_nc : int
        The prediction of non-compliance, or NOT_LATCHED [minutes since midnight].
    processed, partial_matches : numpy.ndarray
        Per tick (aligned with ``plan.ticks``), the events processed and the partial
        matches created plus extended by both queries of Listing 6.3.
    """

    alerts: pd.DataFrame  # time, load
    t_nc: int
    processed: np.ndarray
    partial_matches: np.ndarray


def utility_stream(plan: MonitoringPlan, latches: dict[int, int],
                   latch_loads: dict[int, float]) -> pd.DataFrame:
    """Return the utility's input: one group event per tick and group latched by then.

    Change 6 of :mod:`drsim.utility.monitoring`: a latched group counts at every later
    tick.

    Parameters
    ----------
    plan : MonitoringPlan
        Its ``ticks`` are read.
    latches : dict of int to int
        Per group, its latch minute or NOT_LATCHED [minutes since midnight].
    latch_loads : dict of int to float
        Per group, the accumulated load its group event carried (0 when absent) [kWh].

    Returns
    -------
    pandas.DataFrame
        Columns type (``groupNonComplianceEvent``), time [minutes since midnight],
        groupID, sumAccLoad [kWh], by tick then group.

    Examples
    --------
    >>> plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 2)
    >>> s = utility_stream(plan, {0: 1148, 1: 1149}, {0: 2.5, 1: 1.0})
    >>> s[["time", "groupID"]].values.tolist()
    [[1148, 0], [1149, 0], [1149, 1]]
    """
    rows = [(t, g, latch_loads.get(g, 0.0)) for t in plan.ticks.tolist()
            for g, at in sorted(latches.items()) if at != NOT_LATCHED and at <= t]
    stream = pd.DataFrame(rows, columns=["time", "groupID", "sumAccLoad"])
    stream.insert(0, "type", "groupNonComplianceEvent")
    return stream


def utility_tier(plan: MonitoringPlan, latches: dict[int, int],
                 latch_loads: dict[int, float], keep: np.ndarray | None = None,
                 carry: TierRuns | None = None) -> UtilityResult:
    """Run Listing 6.3 over the latched groups: the utility's prediction t_nc.

    At every tick the utility reads one ``groupNonComplianceEvent`` per group latched by
    then (change 6 of the module doc); the top query alerts when

        alertNum > γ_group × GROUPNUM

    and the bottom query predicts non-compliance at the (m_utility + 1)-th consecutive
    alert. Its time is t_nc, which triggers the second DR event (§6.2.3).

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (ticks, γ_group, GROUPNUM, m_utility, the query texts).
    latches : dict of int to int
        Per group, its latch minute or NOT_LATCHED [minutes since midnight].
    latch_loads : dict of int to float
        Per group, the accumulated load its group event carried (0 when absent) [kWh].
    keep : numpy.ndarray, optional
        Per event of :func:`utility_stream`, whether the utility receives it (load
        shedding, :mod:`drsim.utility.tier_shedding`); none: every one.
    carry : drsim.utility.leader_carry.TierRuns, optional
        A stream's runs of the utility, kept between micro-batches and final up to
        ``carry.upto`` (:meth:`~drsim.utility.leader_carry.TierRuns.at_utility`): fed
        only the events up to it they have not had; the ticks after it are not its
        result.

    Returns
    -------
    UtilityResult
        The utility's alerts, t_nc and work per tick.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2 (Listing 6.3) and
       §6.2.3.

    Examples
    --------
    Two groups, one latched at 18:56: 1 > 0.4 × 2, so the utility alerts from 18:56 on
    and predicts at its second consecutive alert (m_utility = 1).

    >>> plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 2)
    >>> u = utility_tier(plan, {0: 1136, 1: NOT_LATCHED}, {0: 2.5})
    >>> u.alerts["time"].tolist()[:2], u.t_nc
    ([1136, 1137], 1137)
    """
    ticks = plan.ticks
    stream = utility_stream(plan, latches, latch_loads)
    if keep is not None:
        stream = stream[np.asarray(keep, dtype=bool)].reset_index(drop=True)
    def alert_session() -> Any:
        return plan.compile("utility_alert").start()

    def utility_session() -> Any:
        return plan.compile("utility").start(POLICY, runs=RUNS)

    found, processed, pms, _ = feed_by_time(alert_session(), stream, ticks) \
        if carry is None else carry.alerts.run(alert_session, stream, ticks, carry.upto)
    alerts = pd.DataFrame(found, columns=["type", "time", "load"])
    alerts["type"] = "utilityAlertEvent"  # what Listing 6.3 bottom reads, whatever RETURN says
    out, more_processed, more_pms, _ = feed_by_time(utility_session(), alerts, ticks) \
        if carry is None else carry.group.run(utility_session, alerts, ticks, carry.upto)
    processed += more_processed
    pms += more_pms
    found = [r["time"] for r in out]
    t_nc = int(min(found)) if found else NOT_LATCHED
    return UtilityResult(alerts.drop(columns="type"), t_nc, processed, pms)

