"""drsim.utility.readings_feature on small hand-made inputs: the lost-readings feature's
mask, its inputs to the meter tier, the costs and the deficit, its chunk rows and their
merge, its summary keys and headline row, and the helpers it moved from the pipeline;
every expected value is counted by hand in the comments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from drsim.scenario import ReadingLoss, scenario_from_dict
from drsim.utility.features import FeatureChunk, FeatureRun, feature_schema
from drsim.utility.monitoring import NOT_LATCHED, MeterResult, MonitoringPlan
from drsim.utility.readings_feature import (
    LossCounts,
    LostReadings,
    loss_report,
    seen_reduction,
)

#: 18:30-18:50, tests at 18:35, 18:40, 18:45 (δ 5), m_user 1, a reading every minute;
#: max_missing 1, one group
PLAN = MonitoringPlan(1110, 1130, 1115, 5, 1, 1, 0, 0.4, 0.4, 1, 15, 1, max_missing=1)


def meter_result(first_silent, silent_spells, events=()) -> MeterResult:
    """A MeterResult by hand (only what the feature reads counts): ``events`` as (time,
    missing)."""
    frame = pd.DataFrame([{"time": t, "houseID": 0, "groupID": 0, "accLoad": 0.0,
                           "delay": 0.0, "missing": x} for t, x in events],
                         columns=["time", "houseID", "groupID", "accLoad", "delay", "missing"])
    zeros = np.zeros(3, np.int64)
    return MeterResult(frame.astype({"time": np.int64, "missing": np.int64}), zeros, zeros,
                       zeros, np.full(len(first_silent), NOT_LATCHED), zeros,
                       lost=zeros, silent_spells=np.asarray(silent_spells),
                       first_silent=np.asarray(first_silent))


HALF = ReadingLoss(rate=0.5)


def feature(loss=HALF, recorded=False) -> LostReadings:
    return LostReadings(loss, 7, (2,), recorded)


def test_the_feature_is_read_from_the_scenario_and_on_with_a_loss_model():
    base = {"name": "t", "seed": 5, "households": 4,
            "groups": [{"name": "a", "size": 3}, {"name": "b", "size": 1}]}
    off = LostReadings.of(scenario_from_dict(base))
    on = LostReadings.of(scenario_from_dict({**base, "meters": {"reading_loss":
                                                                {"rate": 0.1}}}))
    assert not off.active and on.active and on.loss.rate == 0.1
    assert on.sizes == (3, 1) and on.seed == 5 and on.section == "monitoring"
    # drsim monitor: readings that lack some turn it on, without a loss model
    assert off.with_readings(3).active and not off.with_readings(0).active


def test_the_mask_is_drawn_per_slot_and_given_to_the_meter_tier_at_the_tests():
    chunk = FeatureChunk(PLAN, 0, 0, np.arange(50))
    lost = feature().readings_lost(chunk)
    assert lost.shape == (50, 20) and 0 < lost.mean() < 1  # a reading every minute
    inputs = feature().meter_inputs(chunk)
    # the test readings: minutes 1115, 1120, 1125 are program minutes 5, 10, 15
    assert inputs["lost"].tolist() == lost[:, [5, 10, 15]].tolist()
    # a loss model that loses nothing: no mask, nothing given to the meter tier
    assert feature(ReadingLoss(rate=0.0)).readings_lost(chunk) is None
    assert feature(ReadingLoss(rate=0.0)).meter_inputs(chunk) == {}
    assert feature(None).meter_inputs(chunk) == {}


def test_drsim_monitor_takes_the_mask_from_the_readings_that_arrived():
    arrived = np.ones((2, 20), dtype=bool)
    arrived[1, 10] = False  # household 1's reading at 18:40 did not arrive
    chunk = FeatureChunk(PLAN, 0, 0, np.arange(2), arrived=arrived)
    got = feature(None, recorded=True).meter_inputs(chunk)["lost"]
    assert got.tolist() == [[False, False, False], [False, True, False]]
    # every reading arrived and no loss model: nothing to mask
    assert feature(None).meter_inputs(chunk) == {}


def test_chunk_rows_merge_into_the_traditional_pass_counts_per_group():
    arrived = np.ones((2, 20), dtype=bool)
    arrived[0, [5, 10]] = False  # household 0 loses its 18:35 and 18:40 readings
    arrived[1, 3] = False
    window = {"load": np.ones((2, 20)), "baseline": np.full((2, 20), 2.0),
              "expected": np.ones((2, 20))}
    lost = feature(None, recorded=True)
    m = meter_result([1120, NOT_LATCHED], [0, 1, 0], events=[(1125, 1)])
    chunk = FeatureChunk(PLAN, 0, 0, np.arange(2), meter=m, window=window,
                         arrived=arrived)
    rows = [{"chunk": 0, "group": 0, "pass": name, **{c: v[0] for c, v in
                                                      lost.chunk_rows(chunk, name).items()}}
            for name in ("expected", "traditional")]
    assert rows[0]["seen"] is None  # only the traditional pass's deficit is read
    frame = pa.Table.from_pylist(rows + [{**rows[1], "chunk": 1}],
                                 schema=feature_schema(lost)).to_pandas()
    got = lost.merge(frame)
    # two chunks of the same households: every count twice
    assert got.lost[0].tolist() == [2 * int(x) for x in (~arrived).sum(axis=0)]
    # household 0 first silent at 18:40 (test 1), household 1 never (the last row)
    assert got.first_silent.tolist() == [[0, 2, 0, 2]]
    assert got.silent_spells.tolist() == [[0, 2, 0]]
    assert got.seen.shape == (1, 3, 20)
    # the user event at 18:45 with one missing slot, twice
    assert got.by_missing[0].tolist() == [[0, 0], [0, 0], [0, 2]]
    assert lost.merge(frame[frame["pass"] == "expected"]) is None


def test_the_merge_feeds_the_costs_and_the_deficit():
    merged = LossCounts(np.ones((1, 20)), np.zeros((1, 4)), np.array([[0, 1, 0]]),
                        np.zeros((1, 3, 20)), np.zeros((1, 3, 2)))
    inputs = feature().cost_inputs(merged, "traditional")
    assert inputs["lost"] is merged.lost and inputs["silent_spells"] is merged.silent_spells
    assert feature().deficit_inputs(merged) == {"seen": merged.seen}
    assert feature().cost_inputs(None, "traditional") == {} and feature().deficit_inputs(None) == {}


def run_view(stop=1125, user_events=4) -> FeatureRun:
    stops = {"traditional": np.array([stop]), "expected": np.array([1129])}
    return FeatureRun(PLAN, ("a",), np.array([2]), {}, stops,
                      lambda name: {"communication": {"user_events": user_events}})


def test_the_summary_keys_join_monitoring_off_empty_and_with_losses():
    off = feature(None).summary(None, run_view())
    assert off == {"max_missing": 1, "reading_loss": None, "meters_silent": None,
                   "lost_readings": None}
    # a loss model that lost nothing: zeros, and every user event exact
    empty = feature(ReadingLoss(rate=0.0)).summary(None, run_view())
    assert empty["lost_readings"]["readings_lost"] == 0
    assert empty["lost_readings"]["user_events_by_missing"] == {"0": 4}
    assert empty["meters_silent"] == {"per_group": {"a": 0}, "total": 0}
    lost = np.zeros((1, 20), np.int64)
    lost[0, [5, 18]] = 1  # 18:35 (by the stop at 18:45) and 18:48 (after it)
    merged = LossCounts(lost, np.array([[0, 1, 0, 1]]), np.array([[0, 1, 0]]),
                        np.zeros((1, 3, 20)), np.array([[[1, 0], [0, 2], [5, 5]]]))
    got = feature().summary(merged, run_view())
    # by the stop at 18:45, read every minute (16 minutes), then at 19:00: settlement
    # after the program's end, none; 2 households: 32 readings, one lost
    assert got["lost_readings"]["readings_lost"] == 1
    assert got["lost_readings"]["share_of_readings_lost"] == pytest.approx(1 / 32)
    assert got["meters_silent"]["total"] == 1
    # user events by missing slots at the three tests (all up to the stop): 6 and 7
    assert got["lost_readings"]["user_events_by_missing"] == {"0": 6, "1": 7}
    assert got["lost_readings"]["expected_pass"]["readings_lost"] == 2


def test_the_headline_row_reads_the_monitoring_section():
    section = {"max_missing": 1, "meters_silent": {"total": 3},
               "lost_readings": {"share_of_readings_lost": 0.05}}
    assert LostReadings.headline(section) == [
        ("readings lost / meters silent (max_missing 1)", "5.0 % / 3")]
    assert LostReadings.headline({"lost_readings": None}) == []


#: the costs' plan of tests/drsim/pipeline/test_evaluation.py: 18:30-19:10, tests at
#: 18:35 .. 19:05 (7, δ 5), readings every 5 minutes, then every 10 after a latch; and
#: its lost readings per group and reading slot (18:30, 18:35, ..., 19:05)
COST_PLAN = MonitoringPlan(1110, 1150, 1115, 5, 1, 1, 0, 0.4, 0.4, 5, 10, 2)
COST_LOST = np.array([[0, 0, 1, 1, 2, 0, 0, 0],
                      [0, 0, 0, 1, 5, 1, 0, 0]])


def test_the_seen_reduction_counts_only_the_households_whose_reading_arrives():
    plan = MonitoringPlan(1110, 1114, 1111, 1, 1, 1, 0, 0.4, 0.4, 2, 15, 1)  # 2 slots
    lost = np.array([[False, True], [False, False]])  # household 0 loses 1112-1113
    baseline = np.array([[3.0, 3.0, 3.0, 3.0], [2.0, 2.0, 2.0, 2.0]])
    load = np.array([[1.0, 2.0, 3.0, 0.0], [2.0, 1.0, 1.0, 1.0]])
    expected = np.array([[2.0] * 4, [1.0] * 4])
    got = seen_reduction(plan, lost, baseline, load, expected)
    # B̂ − P per minute: household 0: 2, 1, 0, 3; household 1: 0, 1, 1, 1 [kW], so up to
    # (before) each minute: household 0: 0, 2, 3, 3; household 1: 0, 0, 1, 2 [kW·min]
    assert got[0].tolist() == [2, 2, 1, 1]
    assert (got[1] / 1e6).tolist() == [0, 2, 1, 2]
    # B̂ − P̂: 1 and 1 per minute: up to each minute 0, 1, 2, 3 for each household
    assert (got[2] / 1e6).tolist() == [0, 2, 2, 3]


def test_the_loss_report_counts_what_each_group_lost_until_its_stop():
    first_silent = np.array([[0, 1, 0, 0, 2, 0, 0, 5],  # 7 tests, then never
                             [1, 0, 0, 0, 0, 0, 1, 0]])
    got = loss_report(COST_PLAN, np.array([2, 3]), COST_LOST, first_silent,
                      np.array([1120, 1125]), ["a", "b"])
    # readings scheduled: 2 × 5 + 3 × 6 (as in the costs); lost of them: 1 + 2 and 1 + 1;
    # test readings (slot 1 at 18:35, 2 at 18:40, 3 at 18:45) lost by the stop: group 0
    # slots 1-2: 1; group 1 slots 1-3: 1
    assert got["readings_lost"] == 5
    assert got["share_of_readings_lost"] == pytest.approx(5 / 28)
    assert got["test_readings_lost"] == 2
    # silent by the stop: group 0 at 18:35, 18:40: 1; group 1 at 18:35 .. 18:45: 1
    assert got["meters_silent"] == {"per_group": {"a": 1, "b": 1}, "total": 2}
    assert got["meters_silent_whole_program"] == {"per_group": {"a": 3, "b": 2}, "total": 5}
