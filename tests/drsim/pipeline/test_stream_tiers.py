"""drsim.pipeline.stream_tiers on tiny hand-made streams: four households in two groups of
one gateway each, 20 minutes of readings fed in micro-batches through the meter, group and
utility steps, key by key as the serial backend runs them. A minute is final once a later
one arrived, a test is decided in the micro-batch that makes its minute final, late,
duplicate and bad rows are counted and left out, and what the three steps emit equals the
batch tiers (drsim.pipeline.tasks) on the same readings."""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from drsim.pipeline.passes import Chunk
from drsim.pipeline.stream_clock import intervals, write_intervals
from drsim.pipeline.stream_features import monitored_from
from drsim.pipeline.stream_tiers import (
    IN,
    StreamContext,
    check_streamable,
    group_step,
    meter_step,
    user_event_rows,
    utility_step,
)
from drsim.pipeline.tasks import (
    event_row,
    group_leader,
    outcome_counts,
    user_events,
    utility,
)
from drsim.scenario import scenario_from_dict
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan, accumulated_kwh, meter_tier
from drsim.utility.threshold import Thresholds

#: 18:30-18:50, tests at 18:35, 18:40, 18:45, m_user 1, m_group 1, m_utility 0,
#: γ_user 0.4, γ_group 0.4
PLAN = MonitoringPlan(1110, 1130, 1115, 5, 1, 1, 0, 0.4, 0.4, 1, 15, 2)
MINUTES = np.arange(1110, 1130)
#: households 0-1 in group 0 (gateway 0), 2-3 in group 1 (gateway 1): P [kW], and each
#: household's realised non-compliance; B̂ 2 kW and P̂ 1 kW for all
KW = np.array([3.0, 0.5, 3.0, 0.0])
NONCOMPLIANT = [True, False, True, False]
MICRO = 10**6


def four_households(**settings):
    return scenario_from_dict({"name": "t", "seed": 5, "households": 4,
                               "groups": [{"name": "a", "size": 2}, {"name": "b", "size": 2}],
                               **settings})


@pytest.fixture(scope="module")
def context() -> StreamContext:
    scenario = four_households()
    assert scenario.dr_program.start_minute == PLAN.t_start
    return StreamContext(scenario, PLAN, (Chunk(0, 0, 2, 0), Chunk(1, 2, 2, 1)),
                         Thresholds.of(PLAN, np.array([2, 2])), ("traditional",))


def readings(minutes, households=(0, 1, 2, 3), **changes) -> pd.DataFrame:
    """Rows of IN: every household at every minute given, ``changes`` overriding columns."""
    h, t = (a.ravel() for a in np.meshgrid(households, minutes, indexing="ij"))
    frame = pd.DataFrame({"pass": "traditional", "gateway": h // 2, "household": h,
                          "group": h // 2, "time": t, "kw": KW[h % 4],
                          "energy_kwh": None, "baseline_kw": 2.0, "expected_kw": 1.0,
                          "noncompliant": [NONCOMPLIANT[i % 4] for i in h]})
    for column, value in changes.items():
        frame[column] = value
    return frame[IN.names].sort_values(["time", "household"], ignore_index=True)


def stage(step, keys: list[str], states: dict, rows: pd.DataFrame) -> pd.DataFrame:
    """One stage over one micro-batch, key by key in key order (the serial backend)."""
    parts = []
    for key, part in rows.groupby(keys, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        states[key], out = step(key, states.get(key), part.reset_index(drop=True))
        parts.append(out)
    return pd.concat(parts, ignore_index=True)


class Stream:
    """The three steps with their states, fed micro-batch by micro-batch; ``emitted``:
    each step's rows of the last micro-batch."""

    def __init__(self, context: StreamContext):
        self.steps = [(partial(meter_step, context), ["gateway"]),
                      (partial(group_step, context), ["pass", "group"]),
                      (partial(utility_step, context), ["pass"])]
        self.states: list[dict] = [{}, {}, {}]
        self.emitted: list[pd.DataFrame] = []

    def feed(self, rows: pd.DataFrame, upto: int = 3) -> pd.DataFrame:
        self.emitted = []
        for (step, keys), states in zip(self.steps[:upto], self.states, strict=False):
            rows = stage(step, keys, states, rows)
            self.emitted.append(rows)
        return rows

    def ticked(self) -> list[int]:
        """The groups' ticks of the last micro-batch, by group."""
        return kind(self.emitted[1], "ticked").sort_values("group")["time"].tolist()


def kind(rows: pd.DataFrame, name: str, **where) -> pd.DataFrame:
    mine = rows["kind"] == name
    for column, value in where.items():
        mine &= rows[column] == value
    return rows[mine]


# --------------------------------------------------------------------------- the batch tiers
@pytest.fixture(scope="module")
def batch(context) -> dict:
    """The batch tiers on the same readings: Listing 6.1 per gateway, 6.2 per group, 6.3."""
    lam = accumulated_kwh(np.ones((2, len(MINUTES))), PLAN.t_start, PLAN.test_times)
    meters, leaders = [], []
    for chunk in context.chunks:
        kw = np.repeat(KW[chunk.first:chunk.first + 2, None], len(MINUTES), axis=1)
        acc = accumulated_kwh(kw, PLAN.t_start, PLAN.test_times)
        m = meter_tier(PLAN, np.arange(chunk.first, chunk.first + 2), chunk.group, acc, lam)
        meters.append(m)
        leaders.append(group_leader(PLAN, context.sizes, context.thresholds,
                                    pd.DataFrame([event_row(chunk, "traditional", m)])))
    tiers = pd.concat(leaders, ignore_index=True)
    return {"meters": meters, "groups": tiers, "utility": utility(PLAN, tiers),
            "events": user_events(pd.DataFrame([event_row(c, "traditional", m) for c, m
                                                in zip(context.chunks, meters,
                                                       strict=True)]))}


def test_the_batch_tiers_flag_latch_and_predict_as_worked_out_by_hand(batch):
    # households 0 and 2 use 3 kW against P̂ 1 kW: flagged at every test, so user events
    # from the second (m_user 1), 18:40 and 18:45, carrying 10 and 15 minutes of 3 kW
    events = batch["events"]
    assert events[["time", "houseID", "groupID", "accLoad"]].values.tolist() == [
        [1120, 0, 0, 0.5], [1120, 2, 1, 0.5], [1125, 0, 0, 0.75], [1125, 2, 1, 0.75]]
    # 1 of 2 > 0.4 × 2 from 18:40: the second alert in a row latches each group at 18:41;
    # 2 of 2 groups > 0.4 × 2 at 18:41, m_utility 0: t_nc 18:41
    groups = batch["groups"]
    assert kind(groups, "event").groupby("group")["time"].min().tolist() == [1121, 1121]
    assert kind(batch["utility"], "t_nc")["time"].tolist() == [1121]


# --------------------------------------------------------------------------- the meter step
def test_a_minute_is_final_once_a_later_one_arrived(context):
    stream = Stream(context)
    first = stream.feed(readings(np.arange(1110, 1116), households=(0, 1)), upto=1)
    # 18:30-18:35 arrived: 18:30-18:34 final, 18:35 kept; the test at 18:35 not decided
    assert kind(first, "load")["time"].tolist() == list(range(1110, 1115))
    assert not len(kind(first, "meter")) and not len(kind(first, "tested"))
    second = stream.feed(readings([1116], households=(0, 1)), upto=1)
    assert kind(second, "load")["time"].tolist() == [1115]
    assert kind(second, "tested")["time"].tolist() == [1115]
    assert kind(second, "meter")["time"].tolist() == [1115]
    # loads per final minute: Σ P, Σ B̂, Σ P̂ of the gateway's households [µkW]
    loads = pd.concat([kind(first, "load"), kind(second, "load")])
    assert loads["counts"].map(list).tolist() == [[3.5 * MICRO, 4 * MICRO, 2 * MICRO]] * 6


def test_a_test_is_decided_in_the_micro_batch_that_brings_its_interval(context):
    stream = Stream(context)
    decided = []
    for lo in range(1110, 1130, 5):  # intervals 18:30-18:34, 18:35-18:39, ...
        out = stream.feed(readings(np.arange(lo, lo + 5)), upto=1)
        decided.append(sorted(set(kind(out, "tested")["time"])))
    # 18:35's interval decides 18:35; the program's last minute decides 18:45 at once
    assert decided == [[], [1115], [1120], [1125]]
    assert not len(kind(out, "late")) and not len(kind(out, "bad"))


def test_the_meter_step_gives_the_batch_meter_tier(context, batch):
    stream = Stream(context)
    out = pd.concat([stream.feed(readings(m), upto=1)
                     for m in (np.arange(1110, 1117), np.arange(1117, 1122),
                               np.arange(1122, 1130))], ignore_index=True)
    for chunk, m in zip(context.chunks, batch["meters"], strict=True):
        meter = kind(out, "meter", gateway=chunk.index).sort_values("time")
        work = np.stack([m.processed, m.partial_matches, m.outputs,
                         chunk.count - m.processed, m.fetches])
        assert meter["time"].tolist() == PLAN.test_times.tolist()
        assert np.stack(meter["counts"].map(list)).T.tolist() == work.tolist()
        outcome = kind(out, "outcome", gateway=chunk.index)
        mine = np.array(NONCOMPLIANT[chunk.first:chunk.first + chunk.count])
        assert outcome["counts"].map(list).tolist() == [
            outcome_counts(PLAN.test_times, m.first_flag, mine).ravel().tolist()]
        # by hand: the 3 kW household flagged first at 18:40 and non-compliant, the
        # other never flagged and compliant
        assert outcome["counts"].map(list).tolist() == [[0, 0, 0, 1, 0, 0, 1, 0]]
        loads = kind(out, "load", gateway=chunk.index)
        assert loads["time"].tolist() == MINUTES.tolist()  # each minute once
    streamed = user_events(user_event_rows(out))
    pd.testing.assert_frame_equal(streamed, batch["events"])


def test_late_and_duplicate_rows_are_counted_and_left_out(context):
    stream = Stream(context)
    stream.feed(readings(np.arange(1110, 1122), households=(0, 1)), upto=1)  # final to 18:40
    late = readings([1118], households=(0,), kw=50.0)
    again = readings([1122, 1122, 1123], households=(1,))
    out = stream.feed(pd.concat([late, again], ignore_index=True), upto=1)
    got = kind(out, "late")
    assert got["value"].tolist() == [1.0] and got["time"].tolist() == [1123]
    dup = kind(out, "bad")
    assert dup["note"].tolist() == ["household, time: duplicate reading"]
    assert dup["value"].tolist() == [1.0]  # household 1 twice at 18:42
    # 18:41 (kept from the first batch) and 18:42 are final now (18:43 arrived): at 18:42
    # household 0's reading is missing and its 3 kW of 18:41 carried over; the late
    # 50 kW is not used
    loads = kind(out, "load")
    assert loads["time"].tolist() == [1121, 1122]
    assert [c[0] for c in loads["counts"]] == [3.5 * MICRO, 3.5 * MICRO]


def test_bad_rows_are_counted_by_problem_and_passed_on(context):
    stream = Stream(context)
    rows = readings([1110, 1111], households=(0, 1))
    rows.loc[0, "kw"] = -1.0  # household 0 at 18:30
    rows.loc[3, "group"] = 1  # household 1 at 18:31: not its group
    outside = readings([1110], households=(2,)).assign(household=9, gateway=-1)
    out = stream.feed(pd.concat([rows, outside], ignore_index=True))
    bad = kind(out, "bad").sort_values("note")
    assert dict(zip(bad["note"], bad["value"], strict=True)) == {
        "group: not the household's group": 1.0, "household: not a household of the scenario":
        1.0, "kw: negative or not finite": 1.0}
    # the good rows at 18:30 (household 1) final: only the gateway's 0.5 kW counted
    loads = kind(out, "load")
    assert loads["time"].tolist() == [1110]
    assert loads["counts"].map(list).tolist() == [[0.5 * MICRO, 2 * MICRO, 1 * MICRO]]


def comparable(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of OUT in one order, lists as tuples."""
    out = rows.assign(counts=[None if c is None else tuple(c) for c in rows["counts"]])
    return out.sort_values(["kind", "gateway", "time", "house"], ignore_index=True)


def test_a_households_interval_in_one_row_is_the_rows_of_its_minutes(context, tmp_path):
    # a simulated run's files (drsim.pipeline.stream_clock): one row per household and
    # interval, P and P̂ in a column per minute, no B̂ (NaN in the rows per minute here)
    for chunk in context.chunks:
        mine = slice(chunk.first, chunk.first + chunk.count)
        write_intervals(tmp_path, "passes", chunk.index, chunk.first, chunk.group, PLAN,
                        {"traditional": np.repeat(KW[mine, None], len(MINUTES), axis=1)},
                        np.ones((chunk.count, len(MINUTES))),
                        {"traditional": np.array(NONCOMPLIANT[mine])})
    packed, plain = Stream(dataclasses.replace(context, packed=True)), Stream(context)
    edges = intervals(PLAN)
    for j in range(len(edges) - 1):
        files = sorted((tmp_path / f"{j:04d}").glob("*.parquet"))
        rows = pa.concat_tables([pq.read_table(f) for f in files]).to_pandas()
        assert len(rows) == 4  # one row per household
        rows.insert(0, "gateway", rows["household"] // 2)
        got = packed.feed(rows)
        want = plain.feed(readings(np.arange(edges[j], edges[j + 1]), baseline_kw=np.nan))
        pd.testing.assert_frame_equal(comparable(got), comparable(want))
    assert len(kind(got, "outcome")) == 2  # the last interval decided the last test


# --------------------------------------------------------------------------- group and utility
def test_the_three_steps_in_micro_batches_give_the_batch_tiers(context, batch):
    stream = Stream(context)
    outs, ticked, decided = [], [], []
    for minutes in (np.arange(1110, 1117), np.arange(1117, 1122), np.arange(1122, 1130)):
        out = stream.feed(readings(minutes))
        outs.append(out)
        ticked.append(stream.ticked())
        decided.append(kind(out, "decided")["time"].tolist())
    # a group ticks to the minute before its next test once its gateway decided the
    # test; the utility decides once both groups ticked
    assert ticked == [[1119, 1119], [1124, 1124], [1129, 1129]]
    assert decided == [[1119], [1124], [1129]]
    # t_nc (18:41) is sent in the batch that decided it
    assert [kind(o, "t_nc")["time"].tolist() for o in outs] == [[], [1121], []]
    out = pd.concat(outs, ignore_index=True)
    columns = ["group", "kind", "time", "value", "counts"]
    expected = pd.concat([batch["groups"], batch["utility"]], ignore_index=True)
    expected = expected[expected["kind"].isin(("alert", "event", "work", "t_nc"))]
    expected = pd.DataFrame({"group": expected["group"].astype(np.int64),
                             "kind": expected["kind"], "time": expected["time"],
                             "value": expected["load"],
                             "counts": [(p, m) if k != "t_nc" else None for p, m, k in zip(
                                 expected["processed"], expected["partial_matches"],
                                 expected["kind"], strict=True)]})
    streamed = out[out["kind"].isin(("alert", "event", "work", "t_nc"))]
    streamed = pd.DataFrame({"group": streamed["group"].astype(np.int64),
                             "kind": streamed["kind"], "time": streamed["time"],
                             "value": streamed["value"].fillna(0.0),
                             "counts": [None if c is None else tuple(c)
                                        for c in streamed["counts"]]})

    def ordered(frame):
        return frame.sort_values(columns[:3], ignore_index=True)[columns].astype(
            {"kind": object, "time": np.int64})

    pd.testing.assert_frame_equal(ordered(streamed), ordered(expected))


def test_a_group_waits_for_every_gateway_and_the_utility_for_every_group(context):
    stream = Stream(context)
    out = stream.feed(readings(np.arange(1110, 1122), households=(0, 1)))
    # gateway 0 decided 18:35 and 18:40: group 0 ticks to 18:44; group 1 has no test yet,
    # so the utility decides nothing
    assert stream.ticked() == [1124]
    assert not len(kind(out, "decided")) and not len(kind(out, "t_nc"))
    out = stream.feed(readings(np.arange(1110, 1117), households=(2, 3)))
    assert stream.ticked() == [1119]
    assert kind(out, "decided")["time"].tolist() == [1119]
    out = stream.feed(readings(np.arange(1117, 1130), households=(2, 3)))
    # group 1 at the end of the program; the utility as far as group 0 (18:44): t_nc
    # 18:41 falls there
    assert kind(out, "decided")["time"].tolist() == [1124]
    assert kind(out, "t_nc")["time"].tolist() == [1121]


def test_without_a_latch_the_utility_sends_no_prediction_at_the_end(context):
    stream = Stream(context)
    out = stream.feed(readings(MINUTES, kw=0.5))  # everyone below P̂: nobody flagged
    assert not len(kind(out, "user")) and not len(kind(out, "event"))
    assert kind(out, "t_nc")["time"].tolist() == [NOT_LATCHED]
    assert kind(out, "decided")["time"].tolist() == [PLAN.t_end - 1]


def test_the_streams_rows_reshape_to_the_batch_runs_counts_per_group(context, batch):
    stream = Stream(context)
    out = pd.concat([stream.feed(readings(m)) for m in (np.arange(1110, 1121),
                                                         np.arange(1121, 1130))],
                    ignore_index=True)
    got = monitored_from(context, out.rename(columns={"pass": "pass_"}), ("traditional",))
    # a meter row per gateway and test, an outcome row per gateway: summed per group as
    # the batch run's chunks' rows (drsim.pipeline.tasks.meter_row) are
    for chunk, m in zip(context.chunks, batch["meters"], strict=True):
        mine = np.array(NONCOMPLIANT[chunk.first:chunk.first + chunk.count])
        assert got.meter_work["traditional"][chunk.group].tolist() == np.stack(
            [m.processed, m.partial_matches, m.outputs, chunk.count - m.processed,
             m.fetches]).tolist()
        assert got.outcomes["traditional"][chunk.group].tolist() == \
            outcome_counts(PLAN.test_times, m.first_flag, mine).tolist()
    trad = got.outcome["traditional"]
    assert trad.latch == [1121, 1121] and trad.t_nc == 1121


def test_what_the_stream_does_not_monitor_is_refused(context):
    check_streamable(context.scenario)  # plain readings: streamed
    check_streamable(four_households(meters={"reading_loss": {"rate": 0.1}}))  # streamed
    check_streamable(four_households(monitoring={"shedding": {"gateway_households": 2},
                                                 "remote": {"gateway_households": 2}}))
    queries = {"paused": {"query": "PATTERN SEQ(dr_start s, ev_pause p) WHERE SAME[houseID] "
                                   "WITHIN 3h"}}
    with pytest.raises(ValueError, match="monitoring.appliance_queries: the streaming") \
            as refused:
        check_streamable(four_households(monitoring={"appliance_queries": queries}))
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("max_missing", [0, 1])
def test_a_reading_that_did_not_arrive_is_lost_to_the_meter_step(context, max_missing):
    """A household-minute with no row, or a row without a load, is a lost reading:
    Listing 6.1 has it as the batch meter tier has a lost test reading (a placeholder with
    max_missing 1, left out with 0), its load carried from the household's previous
    minute, and the lost readings counted."""
    plan = dataclasses.replace(PLAN, max_missing=max_missing)
    lossy = dataclasses.replace(context, plan=plan)
    rows = readings(MINUTES)
    gone = (rows["household"] == 0) & (rows["time"] == 1120)  # no row: a test reading
    rows = rows[~gone].reset_index(drop=True)
    rows.loc[(rows["household"] == 2) & (rows["time"].isin([1124, 1125])), "kw"] = np.nan
    stream = Stream(lossy)
    out = pd.concat([stream.feed(rows[rows["time"] < 1118], upto=1),
                     stream.feed(rows[rows["time"] >= 1118], upto=1)], ignore_index=True)
    assert kind(out, "lost")["value"].sum() == 3
    lam = accumulated_kwh(np.ones((2, len(MINUTES))), plan.t_start, plan.test_times)
    for chunk in context.chunks:
        kw = np.repeat(KW[chunk.first:chunk.first + 2, None], len(MINUTES), axis=1)
        lost = np.zeros((2, len(plan.test_times)), dtype=bool)
        lost[0, 1] = chunk.first == 0  # household 0 at 18:40, household 2 at 18:45
        lost[0, 2] = chunk.first == 2
        m = meter_tier(plan, np.arange(chunk.first, chunk.first + 2), chunk.group,
                       accumulated_kwh(kw, plan.t_start, plan.test_times), lam, lost=lost)
        dropped = lost.sum(axis=0) if max_missing == 0 else 0
        work = np.stack([m.processed, m.partial_matches, m.outputs,
                         chunk.count - m.processed - dropped, m.fetches])
        meter = kind(out, "meter", gateway=chunk.index).sort_values("time")
        assert np.stack(meter["counts"].map(list)).T.tolist() == work.tolist()
        events = kind(out, "user", gateway=chunk.index).sort_values(["time", "house"])
        assert events["house"].tolist() == m.events["houseID"].tolist()
        assert events["missing"].tolist() == m.events["missing"].tolist()
    # the 3 kW household 0 is flagged at 18:45 only through the placeholder at 18:40
    assert (kind(out, "user", house=0)["missing"] == 1).any() == (max_missing == 1)
    loads = kind(out, "load", gateway=1).sort_values("time")
    assert [c[0] for c in loads["counts"]] == [3 * MICRO] * len(MINUTES)  # carried
