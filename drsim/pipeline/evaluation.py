"""What the three tiers did on a monitored pass: latches, prediction, costs, precision.

Plain functions over the tiers' rows (:data:`drsim.pipeline.tasks.TIERS`) and the meter tier's
per-household output. Costs are counted as the deployed system incurs them
(docs/decisions.md, "Communication and computation costs"): meters are read every
``reading`` minutes until their group latches (or the utility predicts non-compliance), then
every ``settlement`` minutes (a reading lost on the way is not sent); tests, user events,
λ fetches and the engines' work stop at a group's latch (the utility's at ``t_nc``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from drsim.pipeline.tasks import UTILITY
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan
from drsim.utility.pooled_tier import STATISTIC_KINDS
from drsim.utility.reading_slots import interim_offsets, slot_of


@dataclass
class TierOutcome:
    """One monitored pass: each group's latch minute (or NOT_LATCHED) and alerting ticks,
    and the utility's prediction ``t_nc`` (or NOT_LATCHED)."""

    latch: list[int]
    alert_ticks: list[np.ndarray]
    t_nc: int

    @property
    def predicted(self) -> bool:
        return self.t_nc != NOT_LATCHED


def tier_outcome(rows: pd.DataFrame, name: str, n_groups: int) -> TierOutcome:
    """Latches, alert ticks and t_nc of pass ``name`` from the tiers' rows."""
    mine = rows[rows["pass"] == name]
    latch: list[int] = []
    alert_ticks: list[np.ndarray] = []
    for g in range(n_groups):
        ev = mine[(mine["group"] == g) & (mine["kind"] == "event")]
        latch.append(int(ev["time"].min()) if len(ev) else NOT_LATCHED)
        alert_ticks.append(mine[(mine["group"] == g) & (mine["kind"] == "alert")]["time"]
                           .to_numpy(np.int64))
    t_nc_rows = mine[mine["kind"] == "t_nc"]["time"]
    t_nc = int(t_nc_rows.iloc[0]) if len(t_nc_rows) else NOT_LATCHED
    return TierOutcome(latch, alert_ticks, t_nc)


def stops(plan: MonitoringPlan, outcome: TierOutcome) -> np.ndarray:
    """Per group, the last minute its meters are tested at the monitoring rate: its latch
    (as the utility rule reads it, :meth:`UtilityRule.slowed_from
    <drsim.utility.utility_rule.UtilityRule.slowed_from>`), the utility's prediction, or
    the end of the program, whichever comes first."""
    out = []
    for at in plan.method.utility_rule().slowed_from(outcome.latch):
        stop = plan.t_end - 1 if at == NOT_LATCHED else at
        if outcome.predicted:
            stop = min(stop, outcome.t_nc)
        out.append(stop)
    return np.array(out, dtype=np.int64)


def costs(plan: MonitoringPlan, sizes: np.ndarray, meter_work: np.ndarray, rows: pd.DataFrame,
          name: str, outcome: TierOutcome, lost: np.ndarray | None = None,
          silent_spells: np.ndarray | None = None, quiet: np.ndarray | None = None
          ) -> dict[str, Any]:
    """Communication and computation per tier, as deployed (module docstring).
    ``meter_work`` is (groups, 5, tests): events processed, partial matches, user events,
    readings shed (not reported: neither sent nor evaluated, drsim.utility.shedding) and remote
    data requested (drsim.utility.fetching). User events a group leader sheds and group events
    the utility sheds (rows ``user_events_shed``, ``group_event_shed``,
    drsim.utility.tier_shedding) are not sent; the tiers' work rows count only what they
    evaluated. With lost readings (drsim.utility.readings): ``lost``
    (groups, reading slots of the program), the readings lost, which are not sent; and
    ``silent_spells`` (groups, tests), the meter tier's reports of silent meters to the
    group leaders, which are. With load shedding (drsim.utility.quiet_meters.quiet_readings):
    ``quiet`` (groups, tests × interim offsets), the readings a meter whose test reading
    was shed did not send before its next test; those up to the group's stop are not
    sent."""
    stop = stops(plan, outcome)
    mine = rows[rows["pass"] == name]
    readings = 0
    for g, last in enumerate(stop.tolist()):
        fast = range(plan.t_start, last + 1, plan.reading)
        slow = range(last + plan.settlement, plan.t_end, plan.settlement)
        readings += int(sizes[g]) * (len(fast) + len(slow))
        if lost is not None:
            at = slot_of(np.array([*fast, *slow], dtype=np.int64), plan.t_start, plan.reading)
            readings -= int(lost[g, at].sum())
    counted = plan.test_times[None, :] <= stop[:, None]  # (groups, tests)
    processed, pms, outputs, shed, fetches = (meter_work[:, j, :] for j in range(5))
    readings -= int((shed * counted).sum())
    if quiet is not None:
        readings -= _quiet_until_stop(plan, quiet, stop)
    group_computation = group_events = user_events_shed = 0
    for g, last in enumerate(stop.tolist()):
        mine_g = mine[(mine["group"] == g) & (mine["time"] <= last)]
        work = mine_g[mine_g["kind"] == "work"]
        group_computation += int((work["processed"] + work["partial_matches"]).sum())
        # a leader's statistic at a test time, when the utility reads it, is one event sent
        group_events += int(mine_g["kind"].isin(("event", STATISTIC_KINDS[0])).sum())
        # a leader's filter is pushed to its gateways, the utility's to the leaders: what
        # they drop is not sent (drsim.utility.tier_shedding)
        user_events_shed += int(mine_g.loc[mine_g["kind"] == "user_events_shed",
                                           "processed"].sum())
        sent = mine_g.loc[mine_g["kind"] == "event", "time"]
        dropped = mine_g.loc[mine_g["kind"] == "group_event_shed", "time"]
        group_events -= int(dropped.isin(sent).sum())
    until = outcome.t_nc if outcome.predicted else plan.t_end
    uw = mine[(mine["group"] == UTILITY) & (mine["kind"] == "work") & (mine["time"] <= until)]
    communication = {"meter_readings": readings,
                     "remote_lambda_fetches": int((fetches * counted).sum()),
                     "user_events": int((outputs * counted).sum()) - user_events_shed,
                     "silent_meter_events": 0 if silent_spells is None
                     else int((silent_spells * counted).sum()),
                     "group_events": group_events}
    computation = {"meter": int(((processed + pms) * counted).sum()),
                   "group": group_computation,
                   "utility": int((uw["processed"] + uw["partial_matches"]).sum())}
    return {"communication": {**communication, "total": sum(communication.values())},
            "computation": {**computation, "total": sum(computation.values())}}


def _quiet_until_stop(plan: MonitoringPlan, quiet: np.ndarray, stop: np.ndarray) -> int:
    """The quiet readings (groups, tests × interim offsets) at minutes up to each group's
    stop, when meters still report at the monitoring rate."""
    offsets = interim_offsets(plan.delta, plan.reading)
    minute = plan.test_times[:, None] + offsets[None, :]  # (tests, offsets)
    quiet = np.asarray(quiet, dtype=np.int64)  # (a stream's of the tests so far: padded)
    quiet = np.pad(quiet, ((0, 0), (0, minute.size - quiet.shape[1])))
    per = quiet.reshape(len(stop), *minute.shape)
    return int((per * (minute[None] <= stop[:, None, None])).sum())


def precision_recall(outcomes: np.ndarray, test_times: np.ndarray, stop: np.ndarray
                     ) -> tuple[float | None, float | None, dict[str, int]]:
    """Household predictions (flagged by the meter tier by each group's ``stop`` minute)
    against realised Eq. 6.2 non-compliance (a reduction below the household's goal).

    ``outcomes`` is (groups, tests + 1, 2): households by the test of their first flag
    (the last row: never flagged) and by realised non-compliance
    (:func:`drsim.pipeline.tasks.outcome_counts` summed over each group's chunks)."""
    outcomes = np.asarray(outcomes, dtype=np.int64)
    k = len(test_times)
    predicted = np.zeros(outcomes.shape[:2], dtype=bool)  # (groups, tests + 1)
    predicted[:, :k] = np.asarray(test_times)[None, :] <= np.asarray(stop)[:, None]
    flagged = outcomes[predicted].sum(axis=0)  # (2,): compliant, non-compliant
    unflagged = outcomes[~predicted].sum(axis=0)
    tp, fp, fn = int(flagged[1]), int(flagged[0]), int(unflagged[1])
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    return precision, recall, {"true_positives": tp, "false_positives": fp,
                               "false_negatives": fn, "households": int(outcomes.sum()),
                               "noncompliant_households": int(outcomes[..., 1].sum())}


def flagged_fraction(meter_work: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """(groups, tests): the share of each group's households with a user event at each
    test time, from the meter tier's work ((groups, 3, tests); the third row counts the
    user events, one per flagged household and test)."""
    return np.asarray(meter_work)[:, 2, :] / np.asarray(sizes)[:, None]
