"""drsim.pipeline.tasks on small hand-made inputs: what a chunk task sends (loads, the meter
tier's counts, the participants' sums, user events) and how the driver merges it, each
expected value worked out by hand or by a simpler computation here."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from drsim.pipeline.loads import sum_loads
from drsim.pipeline.passes import Chunk
from drsim.pipeline.stages import _per_group, replica_counts
from drsim.pipeline.tasks import (
    CHUNKS,
    CONTROL,
    ESTIMATE,
    EVENTS,
    METER,
    TIERS,
    TOTAL,
    USER_EVENT_ROWS,
    UTILITY,
    WORK_ROWS,
    _noncompliant,
    chunk_batch,
    enrolled,
    event_row,
    group_leader,
    loads_batch,
    meter_row,
    outcome_counts,
    participant_sums,
    user_events,
    utility,
)
from drsim.scenario import scenario_from_dict
from drsim.units import DAY
from drsim.utility.control_adjustment import COVARIATES, covariate_curves
from drsim.utility.monitoring import NOT_LATCHED, MeterResult, MonitoringPlan
from drsim.utility.participants import ParticipantSums
from drsim.utility.threshold import Thresholds

ONE = 1 << 60  # θ sums are fixed-point in units of 2^-60
#: 18:30-18:50, tests at 18:35, 18:40, 18:45 (δ 5), m_user 1, m_group 1, m_utility 0,
#: γ_user 0.4, γ_group 0.4, readings every minute, 2 groups
PLAN = MonitoringPlan(1110, 1130, 1115, 5, 1, 1, 0, 0.4, 0.4, 1, 15, 2)


def scenario():
    """Five households, 1-2 in group a (u 1.1), 3-4 in b (u 1.2); the program 18:30-20:30."""
    return scenario_from_dict({
        "name": "t", "seed": 5, "households": 5,
        "groups": [{"name": "a", "size": 3, "incentive_u": 1.1},
                   {"name": "b", "size": 2, "incentive_u": 1.2}]})


# --------------------------------------------------------------------------- outcomes
def test_outcome_counts_sort_households_by_first_flag_and_realised_compliance():
    times = np.array([1115, 1120, 1125])
    first = np.array([1120, NOT_LATCHED, 1115, 1120, NOT_LATCHED, 1125])
    noncompliant = np.array([True, True, False, False, False, True])
    # rows: first flag at 1115, 1120, 1125, never; columns: compliant, non-compliant
    assert outcome_counts(times, first, noncompliant).tolist() == \
        [[1, 0], [1, 1], [0, 1], [1, 1]]


def test_a_household_is_noncompliant_when_its_reduction_falls_below_its_goal():
    # goal Σ (B̂ − P̂) / 60 = 60 × (2 − 1) / 60 = 1 kWh for each; reductions 1.5, 1, 0.5
    result = SimpleNamespace(
        estimate_window_kw={"baseline": np.full((3, 60), 2.0),
                            "expected": np.full((3, 60), 1.0)},
        window_kw={"baseline": np.full((3, 60), 3.0),
                   "traditional": np.array([[1.5] * 60, [2.0] * 60, [2.5] * 60])})
    assert _noncompliant(result, "traditional").tolist() == [False, False, True]


# --------------------------------------------------------------------------- meter rows
def meter_result(processed, partial_matches, outputs, first_flag, events=(), **extra):
    """A MeterResult by hand: ``events`` as (time, house, accLoad, missing); one λ fetched
    per reading processed."""
    frame = pd.DataFrame([{"time": t, "houseID": h, "groupID": 0, "accLoad": a,
                           "delay": 0.0, "missing": x} for t, h, a, x in events],
                         columns=["time", "houseID", "groupID", "accLoad", "delay", "missing"])
    return MeterResult(frame.astype({"time": np.int64, "houseID": np.int64,
                                     "missing": np.int64}),
                       np.asarray(processed), np.asarray(partial_matches),
                       np.asarray(outputs), np.asarray(first_flag), np.asarray(processed),
                       **extra)


def collected(rows: list[dict]) -> pd.DataFrame:
    """Rows of METER as the driver collects them (through Arrow)."""
    return pa.RecordBatch.from_pylist(rows, schema=METER).to_pandas()


def test_the_meter_rows_of_the_chunks_reshape_to_the_driver_counts_per_group():
    # chunks 0 and 1 of group 0 (3 and 2 households), chunk 2 of group 1 (2 households)
    chunks = [Chunk(0, 0, 3, 0), Chunk(1, 3, 2, 0), Chunk(2, 5, 2, 1)]
    results = [meter_result([3, 2, 3], [1, 2, 3], [0, 1, 2], [1120, NOT_LATCHED, 1115]),
               meter_result([2, 2, 1], [4, 5, 6], [0, 0, 1], [1125, NOT_LATCHED]),
               meter_result([2, 2, 2], [7, 8, 9], [1, 1, 1], [1115, 1120])]
    noncompliant = [np.array([True, False, False]), np.array([True, True]),
                    np.array([False, True])]
    meter = collected([meter_row(PLAN, c, "traditional", m, n)
                       for c, m, n in zip(chunks, results, noncompliant, strict=True)])
    k = len(PLAN.test_times)
    work = _per_group(meter, "work", ("traditional",), 2, (WORK_ROWS, k))["traditional"]
    assert work.shape == (2, WORK_ROWS, k)
    # group 0: processed, partial matches, user events, shed (households − processed),
    # λ fetches (one per reading processed), each summed over chunks 0 and 1
    assert work[0].tolist() == [[5, 4, 4], [5, 7, 9], [0, 1, 3], [0, 1, 1], [5, 4, 4]]
    assert work[1].tolist() == [[2, 2, 2], [7, 8, 9], [1, 1, 1], [0, 0, 0], [2, 2, 2]]
    outcomes = _per_group(meter, "outcomes", ("traditional",), 2, (k + 1, 2))["traditional"]
    # group 0: 1120 non-compliant, never compliant, 1115 compliant; 1125 and never,
    # both non-compliant
    assert outcomes[0].tolist() == [[1, 0], [0, 1], [0, 1], [1, 1]]
    assert outcomes[1].tolist() == [[1, 0], [0, 1], [0, 0], [0, 0]]
    assert outcomes.sum() == 7  # every household once


def test_lost_readings_are_placeholders_not_shed_with_max_missing():
    # 2 households of group 0, 3 tests; max_missing 1: a lost reading is processed
    plan = MonitoringPlan(1110, 1130, 1115, 5, 1, 1, 0, 0.4, 0.4, 1, 15, 1, max_missing=1)
    m = meter_result([1, 1, 2], [0, 0, 1], [0, 0, 1], [1125, NOT_LATCHED],
                     events=[(1125, 0, 0.5, 1)], lost=np.array([1, 1, 0]),
                     silent_spells=np.array([0, 1, 0]),
                     first_silent=np.array([1120, NOT_LATCHED]))
    meter = collected([meter_row(plan, Chunk(0, 0, 2, 0), "traditional", m,
                                 np.array([True, False]))])
    work = _per_group(meter, "work", ("traditional",), 1, (WORK_ROWS, 3))["traditional"]
    assert work[0, 3].tolist() == [1, 1, 0]  # 2 − processed − 0 dropped
    assert not {"lost", "silent", "seen", "missing"} & set(METER.names)


def test_shed_readings_are_those_neither_processed_nor_lost_without_placeholders():
    m = meter_result([1, 2, 0], [0, 0, 0], [0, 0, 0], [NOT_LATCHED] * 3,
                     lost=np.array([1, 0, 2]), silent_spells=np.zeros(3, np.int64),
                     first_silent=np.full(3, NOT_LATCHED))
    row = meter_row(PLAN, Chunk(0, 0, 3, 0), "traditional", m, np.zeros(3, bool))
    # 3 households: 3 − processed − lost (max_missing 0: a lost reading is dropped)
    assert list(row["work"][9:12]) == [1, 1, 1]


def test_replica_flags_are_summed_per_group_over_the_chunks_that_carry_them():
    rows = [{"chunk": 0, "group": 0, "pass": "expected", "replica_flags": [1, 2, 3]},
            {"chunk": 1, "group": 0, "pass": "expected", "replica_flags": [4, 0, 1]},
            {"chunk": 0, "group": 0, "pass": "traditional"},
            {"chunk": 2, "group": 2, "pass": "expected", "replica_flags": [0, 5, 0]}]
    meter = collected([{**dict.fromkeys(METER.names), **r} for r in rows])
    assert replica_counts(meter, 3).tolist() == [[5, 2, 4], [0, 0, 0], [0, 5, 0]]
    assert replica_counts(meter[meter["pass"] == "traditional"], 3) is None


# --------------------------------------------------------------------------- participants
def test_enrolled_sums_a_chunks_households_exactly():
    pop = SimpleNamespace(ids=np.array([1, 2, 3]), follow_through=np.array([0.5, 0.25, 1.0]),
                          observed_follow_through=np.array([0.25, 0.125, 0.5]))
    sums = enrolled(scenario(), pop)
    # households 1, 2 in group a (u 1.1), 3 in group b (u 1.2); dyadic θ: exact in 2^-60
    assert sums == ParticipantSums(3, (ONE * 7) // 4, (ONE * 7) // 8, ((1.1, 2), (1.2, 1)))


def test_the_chunk_rows_merge_into_the_sum_of_the_chunks_sums():
    parts = [ParticipantSums.of([0.5, 0.75], [0.25, 0.5], [1.1, 1.2]),
             ParticipantSums.of([1.0], [0.5], [1.2]),
             ParticipantSums.of([0.25, 0.25, 0.5], [0.0, 0.125, 0.25], [1.05, 1.1, 1.1])]
    rows = [chunk_batch(SimpleNamespace(chunk=Chunk(i, 0, s.count, 0), households=s.count,
                                        ev_households=0), 0.0, s)
            for i, s in enumerate(parts)]
    merged = participant_sums(pa.Table.from_batches(rows, schema=CHUNKS).to_pandas())
    assert merged.count == 6
    assert merged.theta_o_sum == ONE * 13 // 4  # 0.5 + 0.75 + 1 + 0.25 + 0.25 + 0.5
    assert merged.theta_red_sum == ONE * 13 // 8
    assert merged.u_counts == ((1.05, 1), (1.1, 3), (1.2, 2))
    assert merged.theta_new_sum is None


def test_the_adaptive_chunk_rows_carry_theta_new_winners_and_the_compliant():
    sums = [ParticipantSums.of([0.5], [0.25], [1.1], [0.75]),
            ParticipantSums.of([0.5, 0.5], [0.25, 0.25], [1.1, 1.2], [1.0, 0.5])]
    rows = [chunk_batch(SimpleNamespace(chunk=Chunk(i, 0, s.count, 0), households=s.count,
                                        ev_households=1), 0.0, s, {1.1: i + 1}, 1)
            for i, s in enumerate(sums)]
    frame = pa.Table.from_batches(rows, schema=CHUNKS).to_pandas()
    assert participant_sums(frame).theta_new_sum == ONE * 9 // 4
    assert frame["winners"].map(list).tolist() == [[1], [2, 0]]  # per u of the chunk
    assert frame["theta_new_sum"].tolist() == [Decimal(ONE * 3 // 4), Decimal(ONE * 6 // 4)]


# --------------------------------------------------------------------------- loads
def test_chunk_loads_are_flattened_and_summed_back_per_group_exactly():
    s = scenario()
    lo, hi = s.dr_program.start_minute, s.dr_program.end_minute
    rng = np.random.default_rng(3)

    def chunk(index, group):  # whole µkW, as a chunk renders them
        curves = {p: rng.integers(0, 10**7, DAY).astype(np.float64)
                  for p in ("baseline", "traditional")}
        cats = {p: {"ev": curves[p] // 3, "hvac": curves[p] - curves[p] // 3}
                for p in curves}
        estimates = {"baseline": rng.integers(0, 10**7, hi - lo).astype(np.float64),
                     "expected": rng.integers(0, 10**7, hi - lo).astype(np.float64)}
        return SimpleNamespace(chunk=Chunk(index, 0, 1, group), load=curves,
                               by_category=cats, estimates=estimates, control_load=None,
                               pre_notice_kwh=None)

    results = [chunk(0, 0), chunk(1, 1), chunk(2, 0)]
    batches = [loads_batch(s, r) for r in results]
    assert batches[0].num_rows == 2 * 3 + 2  # per pass its total and 2 categories; B̂, P̂
    assert list(zip(batches[0].column("pass").to_pylist(),
                    batches[0].column("series").to_pylist(), strict=True)) == [
        ("baseline", TOTAL), ("baseline", "ev"), ("baseline", "hvac"),
        ("traditional", TOTAL), ("traditional", "ev"), ("traditional", "hvac"),
        (ESTIMATE, "baseline"), (ESTIMATE, "expected")]
    loads = sum_loads(pa.Table.from_batches(batches[::-1]), 2, ("baseline", "traditional"))
    for name in ("baseline", "traditional"):
        assert np.array_equal(loads.group_kw[name][0],
                              (results[0].load[name] + results[2].load[name]) / 1e6)
        assert np.array_equal(loads.group_kw[name][1], results[1].load[name] / 1e6)
        assert np.array_equal(loads.category_kw[name]["ev"],
                              sum(r.by_category[name]["ev"] for r in results) / 1e6)
    b = loads.estimate_group_kw["baseline"]
    assert np.isnan(b[:, :lo]).all() and np.isnan(b[:, hi:]).all()
    assert np.array_equal(b[1, lo:hi], results[1].estimates["baseline"] / 1e6)
    assert loads.control_group_kw is None


def test_the_control_households_load_travels_as_its_own_pass_summed_per_group():
    s = scenario()
    rng = np.random.default_rng(4)
    control = [rng.integers(0, 10**7, DAY).astype(np.float64) for _ in range(3)]
    results = [SimpleNamespace(chunk=Chunk(i, 0, 1, g), load={}, by_category={},
                               estimates={}, control_load=c, pre_notice_kwh=None)
               for i, (g, c) in enumerate(zip((0, 1, 0), control, strict=True))]
    batches = [loads_batch(s, r) for r in results]
    assert batches[0].column("pass").to_pylist() == [CONTROL]
    loads = sum_loads(pa.Table.from_batches(batches), 2, ())
    assert np.array_equal(loads.control_group_kw[0], (control[0] + control[2]) / 1e6)
    assert np.array_equal(loads.control_group_kw[1], control[1] / 1e6)


def test_the_control_covariates_travel_beside_the_control_load_summed_per_group():
    """With a control group and the households' loads, each chunk sends its covariate
    sums (drsim.utility.control_adjustment), also a chunk without control households;
    they arrive summed per group, exactly."""
    s = scenario_from_dict({**scenario().model_dump(mode="json"),
                            "baseline": {"control_group": {"share": 0.4}}})
    lo, hi = s.dr_program.start_minute, s.dr_program.end_minute
    rng = np.random.default_rng(5)

    def chunk(index, group, control):
        return SimpleNamespace(
            chunk=Chunk(index, 0, 1, group), load={}, by_category={}, estimates={},
            control_load=None if control == 0 else np.zeros(DAY),
            control_window_kw=None if control == 0 else rng.random((control, hi - lo)),
            control_pre_notice_kwh=None if control == 0 else rng.random(control),
            pre_notice_kwh=rng.random(2))

    results = [chunk(0, 0, 2), chunk(1, 1, 0), chunk(2, 0, 3)]
    loads = sum_loads(pa.Table.from_batches([loads_batch(s, r) for r in results]), 2, ())
    assert set(loads.control_covariates) == set(COVARIATES)
    for g, members in ((0, (0, 2)), (1, (1,))):
        for name in COVARIATES:
            sent = [covariate_curves(results[i].control_window_kw,
                                     results[i].control_pre_notice_kwh,
                                     results[i].pre_notice_kwh, lo, hi)[name]
                    for i in members]
            np.testing.assert_array_equal(loads.control_covariates[name][g],
                                          np.sum(sent, axis=0) / 1e6)
    assert loads.control_covariates["covariate_called"][1, lo] > 0  # no control, still sent


# --------------------------------------------------------------------------- user events
def events_rows(rows: list[dict]) -> pd.DataFrame:
    return pa.Table.from_pylist(rows, schema=EVENTS).to_pandas()


def test_user_events_unpack_the_chunks_rows_in_pass_time_house_order():
    rows = events_rows([
        {"chunk": 1, "group": 1, "pass": "traditional", "time": [1120, 1115],
         "houseID": [7, 8], "accLoad": [0.5, 0.25], "delay": [0.0, 1.0], "missing": [0, 1]},
        {"chunk": 0, "group": 0, "pass": "traditional", "time": [1120], "houseID": [2],
         "accLoad": [0.75], "delay": [0.0], "missing": [0]},
        {"chunk": 0, "group": 0, "pass": "expected", "time": [], "houseID": [],
         "accLoad": [], "delay": [], "missing": []},
        {"chunk": 0, "group": 0, "pass": "expected", "time": [1125], "houseID": [0],
         "accLoad": [1.0], "delay": [0.0], "missing": [0]}])
    got = user_events(rows)
    assert got.to_dict("list") == {
        "pass": ["expected", "traditional", "traditional", "traditional"],
        "time": [1125, 1115, 1120, 1120], "houseID": [0, 8, 2, 7], "groupID": [0, 1, 0, 1],
        "accLoad": [1.0, 0.25, 0.75, 0.5], "delay": [0.0, 1.0, 0.0, 0.0],
        "missing": [0, 1, 0, 0]}
    assert got.dtypes.astype(str).tolist()[1:] == ["int64", "int64", "int64", "float64",
                                                   "float64", "int64"]
    assert pa.Table.from_pandas(got, USER_EVENT_ROWS).num_rows == 4  # the folder's table
    assert len(user_events(rows.iloc[2:3])) == 0


def test_an_event_row_packs_the_meter_results_events():
    m = meter_result([2, 2, 2], [0, 0, 0], [0, 1, 1], [1120, NOT_LATCHED],
                     events=[(1120, 3, 0.5, 0), (1125, 3, 0.75, 0)])
    got = user_events(events_rows([event_row(Chunk(4, 3, 2, 1), "traditional", m)]))
    assert got[["time", "houseID", "groupID", "accLoad"]].values.tolist() == \
        [[1120, 3, 1, 0.5], [1125, 3, 1, 0.75]]


# --------------------------------------------------------------------------- the tiers
def house_events(group: int, house: int) -> pd.DataFrame:
    """A household of ``group`` flagged at 18:40 and 18:45 (m_user 1 after tests at 18:35
    and 18:40 on 3 kW for 10 and 15 minutes: 0.5 and 0.75 kWh)."""
    return events_rows([{"chunk": group, "group": group, "pass": "traditional",
                         "time": [1120, 1125], "houseID": [house, house],
                         "accLoad": [0.5, 0.75], "delay": [0.0, 0.0], "missing": [0, 0]}])


def test_a_group_leader_alerts_latches_and_the_utility_predicts():
    th = Thresholds.of(PLAN, np.array([2, 2]))
    leaders = [group_leader(PLAN, (2, 2), th, house_events(g, 2 * g)) for g in (0, 1)]
    g0 = leaders[0]
    # 1 of 2 households > 0.4 × 2: an alert from 18:40, held to the program's end;
    # the second alert in a row (m_group 1) at 18:41 latches the group
    alerts = g0[g0["kind"] == "alert"]
    assert alerts["time"].tolist() == list(range(1120, 1130))
    assert alerts["load"].tolist() == [0.5] * 5 + [0.75] * 5
    assert g0.loc[g0["kind"] == "event", "time"].min() == 1121
    assert set(g0["pass"]) == {"traditional"} and set(g0["group"]) == {0}
    u = utility(PLAN, pd.concat(leaders, ignore_index=True))
    # both groups latched at 18:41: 2 > 0.4 × 2; m_utility 0: predicted at the first alert
    assert u.loc[u["kind"] == "t_nc", "time"].tolist() == [1121]
    assert u.loc[u["kind"] == "alert", "load"].iloc[0] == 1.0  # the latch events' loads
    assert set(u["group"]) == {UTILITY}
    # one group latched: 1 > 0.8, predicted as well; none: no prediction
    one = utility(PLAN, leaders[0])
    assert one.loc[one["kind"] == "t_nc", "time"].tolist() == [1121]
    none = utility(PLAN, leaders[0][leaders[0]["kind"] != "event"])
    assert none.loc[none["kind"] == "t_nc", "time"].tolist() == [NOT_LATCHED]


def test_the_group_leaders_alert_delays_hold_its_alerts_back():
    th = Thresholds.of(PLAN, np.array([2, 2]))
    asked = []

    def delays(events: pd.DataFrame, group: int) -> np.ndarray:
        asked.append((group, events["time"].tolist()))
        return np.array([0, 2, 0])  # the 18:40 alert known two minutes late

    out = group_leader(PLAN, (2, 2), th, house_events(0, 0), alert_delays=delays)
    assert asked == [(0, [1120, 1125])]
    # without delays the alerts hold from 18:40 (test_a_group_leader_alerts_...): now
    # from 18:42, and the latch (the second alert in a row) at 18:43
    alerts = out[out["kind"] == "alert"]
    assert alerts["time"].min() == 1122
    assert out.loc[out["kind"] == "event", "time"].min() == 1123


def test_a_group_without_user_events_sends_nothing():
    th = Thresholds.of(PLAN, np.array([2, 2]))
    rows = events_rows([{"chunk": 0, "group": 0, "pass": "traditional", "time": [],
                         "houseID": [], "accLoad": [], "delay": [], "missing": []}])
    out = group_leader(PLAN, (2, 2), th, rows)
    assert len(out) == 0 and out.columns.tolist() == TIERS.names


@pytest.mark.parametrize(("threshold", "alerts"), [(0.49, True), (0.5, False)])
def test_the_group_alerts_only_above_its_threshold(threshold, alerts):
    plan = MonitoringPlan(1110, 1130, 1115, 5, 1, 1, 0, threshold, 0.4, 1, 15, 2)
    th = Thresholds.of(plan, np.array([2, 2]))
    out = group_leader(plan, (2, 2), th, house_events(0, 0))
    # 1 flagged of 2: above 0.49 × 2 = 0.98, not above 0.5 × 2 = 1
    assert (out["kind"] == "alert").any() == alerts
