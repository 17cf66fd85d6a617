"""drsim.utility.tier_shedding: the group leaders' and the utility's modelled devices and
their Hybrid filter on hand-made user events, the leaders' and the utility's rows, and a
small run through the pipeline with summary.json's per-tier figures."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest
from small_scenarios import quickstart

from drsim.pipeline import stages as pipeline
from drsim.pipeline.backend import SerialBackend
from drsim.pipeline.tasks import TIERS, UTILITY, group_leader, utility
from drsim.results.summary import build
from drsim.scenario import Shedding, scenario_from_dict
from drsim.utility.features import plain_twin
from drsim.utility.group_and_utility_tiers import group_tier, utility_stream, utility_tier
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan
from drsim.utility.threshold import Thresholds
from drsim.utility.tier_shedding import (
    TierShedding,
    kept_counts,
    needed_count,
    serve_inputs,
)

#: 18:30-20:30, tests every 5 minutes from 18:40 (22), m_group = m_utility = 1, 3 groups,
#: γ_group 0.4 (the utility alerts from 2 latched groups)
PLAN = MonitoringPlan(1110, 1230, 1120, 5, 1, 1, 1, 0.3, 0.4, 1, 15, 3)
SIZE = 20
GAMMA = {(g, int(t)): 0.3 for g in range(3) for t in PLAN.test_times}  # alert above 6


def flagged(seed: int, share: float = 0.35) -> pd.DataFrame:
    """A group's user events: each household flagged at each test with ``share``."""
    rng = np.random.default_rng(seed)
    hit = rng.random((len(PLAN.test_times), SIZE)) < share
    t, h = np.nonzero(hit)
    return pd.DataFrame({"time": PLAN.test_times[t], "houseID": h,
                         "accLoad": rng.uniform(1, 3, t.size)})


def shedding(**cfg) -> TierShedding:
    shares = tuple(tuple([0.35] * len(PLAN.test_times)) for _ in range(3))
    return TierShedding(Shedding(**cfg), shares)


def test_the_device_serves_in_order_and_carries_its_backlog():
    # tick 0: two inputs and one unit more (the engines' rest); tick 1 waits for it
    lat, busy = serve_inputs(np.array([0, 1, 5]), np.array([2, 1, 1]),
                             np.array([1, 0, 0]), 1.0)
    assert lat.tolist() == [1.0, 2.0, 3.0, 1.0] and busy == 5.0


def _served_tick_by_tick(ticks, counts, extra, unit_cost):
    """serve_inputs as a loop over the ticks on cep_core's device (what it replaced)."""
    from cep_core.shedding import DeviceFleet

    fleet = DeviceFleet(np.array([unit_cost]), size=1)
    out = []
    for t, n, e in zip(ticks.tolist(), counts.tolist(), extra.tolist(), strict=True):
        if n + e > 0:
            work = np.r_[np.ones(int(n)), [float(e)] if e > 0 else []]
            out.append(fleet.serve(np.zeros(work.size, dtype=np.int64), float(t), work)[:n])
    return (np.concatenate(out) if out else np.zeros(0)), float(fleet.busy[0])


@pytest.mark.parametrize("seed", range(6))
def test_serving_with_arrays_gives_the_devices_figures_to_the_last_bit(seed):
    """serve_inputs on random ticks (quiet ones, inputs without other work, work without
    inputs, backlogs carried or not) equals serving tick by tick on the device."""
    rng = np.random.default_rng(seed)
    ticks = np.sort(rng.choice(np.arange(1110, 1230), 40, replace=False))
    counts = rng.integers(0, 30, 40) * (rng.random(40) < 0.7)
    extra = rng.integers(0, 6, 40) * (rng.random(40) < 0.6)
    unit_cost = float(rng.uniform(0.001, 0.4))
    lat, busy = serve_inputs(ticks, counts, extra, unit_cost)
    expected, expected_busy = _served_tick_by_tick(ticks, counts, extra, unit_cost)
    assert lat.tobytes() == expected.tobytes() and busy == expected_busy
    assert serve_inputs(ticks, np.zeros(40, int), np.zeros(40), unit_cost)[1] == 0.0


def test_events_that_can_create_nothing_go_first():
    ticks, needed = np.array([0]), np.array([3])  # the alert needs 3 of the 6
    # a small violation: only some of the 3 above the threshold are needed, all go
    # (they cost nothing), the alert stays
    assert kept_counts(ticks, np.array([6]), np.zeros(1), 1.0, 3.0, needed,
                       np.array([0.9])).tolist() == [3]
    # a larger one: the below cell is shed in the share still needed, the alert is lost
    assert kept_counts(ticks, np.array([6]), np.zeros(1), 1.0, 1.5, needed,
                       np.array([0.9])).tolist() == [2]
    # when the history says the alert cannot happen, the below cell goes whole
    assert kept_counts(ticks, np.array([6]), np.zeros(1), 1.0, 3.0, needed,
                       np.array([0.0])).tolist() == [0]
    assert needed_count(np.array([6.0, 6.5])).tolist() == [7, 7]


def test_an_unshed_tier_or_twin_gives_exactly_the_plain_tiers_outputs():
    events = flagged(0)
    plain = group_tier(PLAN, 0, SIZE, events, GAMMA)
    for shed, name in ((shedding(tiers=["meter"]), "traditional"),
                       (shedding(), plain_twin("traditional"))):
        ran = shed.group(PLAN, name, 0, SIZE, events, GAMMA)
        assert ran.keep.all() and ran.stats.inputs_shed == 0
        assert ran.result.alerts.equals(plain.alerts)
        assert ran.result.events.equals(plain.events) and ran.result.latch == plain.latch
        assert ran.stats.inputs == len(events) and ran.stats.bound_sum == 0
        assert ran.stats.work == int((plain.processed + plain.partial_matches).sum())
    # the filter keeping everything is no filter
    kept = group_tier(PLAN, 0, SIZE, events[np.ones(len(events), bool)], GAMMA)
    assert kept.alerts.equals(plain.alerts)
    latches, loads = {0: 1150, 1: 1170, 2: NOT_LATCHED}, {0: 1.0, 1: 2.0}
    u = utility_tier(PLAN, latches, loads)
    ran = shedding(tiers=["meter", "group"]).utility(PLAN, "traditional", latches, loads,
                                                     [1150, 1170, NOT_LATCHED])
    assert ran.result.t_nc == u.t_nc and ran.result.alerts.equals(u.alerts)
    assert ran.keep.all() and ran.keep.size == len(utility_stream(PLAN, latches, loads))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("statistic", ["avg", "p95"])
def test_a_shed_leader_meets_its_bound_and_alerts_later_never_earlier(seed, statistic):
    events = flagged(seed)
    shed = shedding(statistic=statistic)
    unshed = shed.group(PLAN, plain_twin("traditional"), 0, SIZE, events, GAMMA)
    op = shed.group(PLAN, "traditional", 0, SIZE, events, GAMMA)
    assert op.stats.inputs_shed == (~op.keep).sum() > 0
    assert op.stats.unshed_latency_sum == unshed.stats.latency_sum
    figures = op.stats.summary("user_events")
    if statistic == "avg":
        assert figures["latency_avg_minutes"] <= figures["bound_minutes"] + 1e-6
        assert figures["bound_minutes"] == pytest.approx(
            0.5 * figures["unshed_latency_avg_minutes"], abs=1e-6)
    # the alerts OP keeps are BL's: shedding only removes counts
    assert set(op.result.alerts["time"]) <= set(unshed.result.alerts["time"])
    assert op.result.latch == NOT_LATCHED or op.result.latch >= unshed.result.latch
    assert op.stats.work < unshed.stats.work


def test_a_shed_utility_meets_its_bound_and_predicts_later_never_earlier():
    # 8 groups latching from 18:45 on: the utility alerts above 3.2 of them
    plan = MonitoringPlan(1110, 1230, 1120, 5, 1, 1, 1, 0.3, 0.4, 1, 15, 8)
    latches = {g: 1125 + 2 * g for g in range(8)}
    loads = {g: 1.0 for g in range(8)}
    shed = TierShedding(Shedding(), ((),) * 8)
    unshed = shed.utility(plan, plain_twin("traditional"), latches, loads, list(latches.values()))
    op = shed.utility(plan, "traditional", latches, loads, list(latches.values()))
    figures = op.stats.summary("group_events")
    assert 0 < op.stats.inputs_shed < op.stats.inputs
    assert figures["latency_avg_minutes"] <= figures["bound_minutes"] + 1e-6
    assert unshed.result.t_nc != NOT_LATCHED
    assert op.result.t_nc == NOT_LATCHED or op.result.t_nc >= unshed.result.t_nc
    assert set(op.result.alerts["time"]) <= set(unshed.result.alerts["time"])


def test_the_leaders_and_the_utilitys_rows_count_what_their_filters_drop():
    sizes = (SIZE, SIZE, SIZE)
    th = Thresholds.of(PLAN, np.array(sizes))
    rows = []
    for g in range(3):
        ev = flagged(g, 0.5)
        rows.append(pd.DataFrame({"chunk": g, "group": g, "pass": "traditional",
                                  "time": [ev["time"].to_numpy()],
                                  "houseID": [ev["houseID"].to_numpy()],
                                  "accLoad": [ev["accLoad"].to_numpy()],
                                  "delay": [np.zeros(len(ev))],
                                  "missing": [np.zeros(len(ev), np.int64)]}))
    shed = shedding()
    leaders = pd.concat([group_leader(PLAN, sizes, th, r, shed=shed) for r in rows],
                        ignore_index=True)
    assert list(leaders.columns) == TIERS.names
    devices = leaders[leaders["kind"] == "device"]
    assert len(devices) == 3
    for g, figures in zip(devices["group"], devices["device"], strict=True):
        mine = leaders[leaders["group"] == g]
        dropped = mine.loc[mine["kind"] == "user_events_shed", "processed"].sum()
        assert dropped == figures[1] > 0  # inputs_shed
        work = mine[mine["kind"] == "work"]
        assert (work["processed"] + work["partial_matches"]).sum() == figures[3]
    out = utility(PLAN, leaders, shed=shed)
    (device,) = out.loc[out["kind"] == "device", "device"]
    assert out.loc[out["kind"] == "device", "group"].item() == UTILITY
    assert (out["kind"] == "group_event_shed").sum() == device[1]


def same_until(a: pd.DataFrame, b: pd.DataFrame, tick: int) -> None:
    """The rows of ``a`` and ``b`` up to ``tick`` are the same."""
    pd.testing.assert_frame_equal(a[a["time"] <= tick].reset_index(drop=True),
                                  b[b["time"] <= tick].reset_index(drop=True),
                                  check_dtype=False, check_index_type=False)


def test_sized_before_a_leader_and_the_utility_decide_each_tick_from_the_ticks_before():
    """With their devices' sizing from the whole day's run (a stream's), a leader on its
    user events so far and the utility on its group events so far keep, alert and latch
    at every tick up to the last input's as on the whole day's: no decision looks ahead."""
    events = flagged(3, 0.5)
    shed = shedding()
    day = shed.group(PLAN, "traditional", 0, SIZE, events, GAMMA)
    sized = TierShedding(shed.cfg, shed.shares, {("traditional", 0): day.sizing})
    assert day.sizing.bound is not None and not day.keep.all()
    for test in PLAN.test_times[2::4]:
        so_far = events[events["time"] <= test]
        part = sized.group(PLAN, "traditional", 0, SIZE, so_far, GAMMA)
        assert (part.keep == day.keep[: len(so_far)]).all()
        upto = test + PLAN.delta - 1  # the ticks the stream's group stage emits
        same_until(part.result.alerts, day.result.alerts, upto)
    plan = MonitoringPlan(1110, 1230, 1120, 5, 1, 1, 1, 0.3, 0.4, 1, 15, 8)
    latches = {g: 1125 + 12 * g for g in range(8)}  # the last latches at 20:09
    loads = {g: 1.0 + g for g in range(8)}
    forecast = list(latches.values())
    day = shed.utility(plan, "traditional", latches, loads, forecast)
    sized = TierShedding(shed.cfg, shed.shares, {("traditional", UTILITY): day.sizing})
    every = utility_stream(plan, latches, loads)["time"].to_numpy()
    shed_by = []
    for tick in (1160, 1185, 1200):
        shed_by.append((~day.keep[every <= tick]).sum())
        known = {g: t for g, t in latches.items() if t <= tick}
        part = sized.utility(plan, "traditional", known, loads, forecast)
        arrived = utility_stream(plan, known, loads)["time"].to_numpy()
        assert (part.keep[arrived <= tick] == day.keep[every <= tick]).all()
        same_until(part.result.alerts, day.result.alerts, tick)
    assert shed_by[-1] > 0


# ------------------------------------------------------------------ through the pipeline
@pytest.fixture(scope="module")
def op_run():
    scenario = scenario_from_dict(quickstart(shedding={}), "op.yaml")
    return scenario, pipeline.run(scenario, SerialBackend())


def test_summary_json_reports_each_tiers_devices_within_their_bounds(op_run):
    scenario, run = op_run
    summary = build(run.timed(0.0, time.perf_counter()).simulation, run)
    section = json.loads(json.dumps(summary))["shedding"]
    op, bl = section["op"], section["bl"]
    for key, unit in (("group_tier", "user_events"), ("utility_tier", "group_events")):
        assert op[key]["shed"] and not bl[key]["shed"]
        assert op[key][unit] == bl[key][unit] and bl[key][f"{unit}_shed"] == 0
        assert bl[key]["bound_minutes"] is None and bl[key]["utilisation"] == \
            pytest.approx(0.9)
        if op[key]["latency_avg_minutes"] is not None:
            assert op[key]["latency_avg_minutes"] <= op[key]["bound_minutes"] + 1e-6
            assert op[key]["bound_minutes"] <= op[key]["unshed_latency_avg_minutes"]
    assert op["group_tier"]["user_events_shed"] > 0
    assert op["meter_tier"]["shed"] and op["meter_tier"]["readings_shed"] > 0
    # what the leaders shed is not sent: OP's user events are BL's less the shed ones of
    # the tests counted (both passes latch at the same minutes here)
    assert op["group_noncompliance_times"] == bl["group_noncompliance_times"]
    assert run.costs["communication"]["user_events"] < pipeline.pass_costs(
        scenario, run.monitored, plain_twin("traditional"))["communication"]["user_events"]


def test_tiers_not_listed_run_unshed_and_any_chunking_gives_the_same(op_run):
    scenario, run = op_run
    again = pipeline.run(scenario, SerialBackend(), chunk_size=300)
    assert again.monitored.features["shedding"] == run.monitored.features["shedding"]
    assert again.costs == run.costs and again.t_nc == run.t_nc
    group_only = scenario.model_copy(update={"monitoring": scenario.monitoring.model_copy(
        update={"shedding": scenario.monitoring.shedding.model_copy(
            update={"tiers": ["group"]})})})
    other = pipeline.run(group_only, SerialBackend())
    figures = other.monitored.features["shedding"]
    assert figures.meter["traditional"].inputs_shed == 0
    assert figures.utility["traditional"].inputs_shed == 0
    assert figures.group["traditional"].inputs_shed > 0
    # the twin is the same either way
    name = plain_twin("traditional")
    assert other.monitored.outcome[name].latch == run.monitored.outcome[name].latch
    assert other.monitored.outcome[name].t_nc == run.monitored.outcome[name].t_nc
    assert other.monitored.features["shedding"].group[name] == figures.group[name] == \
        run.monitored.features["shedding"].group[name]
