"""Load shedding on the keyed engine for many modelled devices (cep_core.shedding.keyed,
fleet) and in the DR monitoring (drsim.utility.shedding, the OP configuration of §6.3.4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from small_scenarios import quickstart

import cep_core
from cep_core.errors import QueryError
from cep_core.shedding import DeviceFleet, KeyedShedder, fit_cost_model
from drsim.pipeline import stages as pipeline
from drsim.pipeline.backend import SerialBackend
from drsim.pipeline.stages import pass_costs
from drsim.scenario import ScenarioError, scenario_from_dict
from drsim.utility.features import plain_twin

RUN = "PATTERN SEQ(R a+[]) WHERE SAME[k] AND a[i].x > lim AND a[i].time + 1 = a[i+1].time " \
      "AND LENGTH(a+[]) > 2 WITHIN 50 RETURN U(a[last].time, a[last].k)"


def readings(keys: int, steps: int, seed: int) -> pd.DataFrame:
    """Each key a reading per time step; keys below half fail the test (x > 5) in long
    streaks, the others now and then."""
    rng = np.random.default_rng(seed)
    hot = np.arange(keys) < keys // 2
    x = np.where(hot[None, :], rng.integers(4, 12, (steps, keys)),
                 rng.integers(0, 7, (steps, keys)))
    return pd.DataFrame({"type": "R", "time": np.repeat(np.arange(steps), keys),
                         "k": np.tile(np.arange(keys), steps), "x": x.ravel()})


def by_step(frame: pd.DataFrame):
    return [g for _, g in frame.groupby("time", sort=True)]


def test_the_fleet_serves_each_device_fifo_in_order():
    fleet = DeviceFleet(np.array([0.5, 1.0]), size=2)
    lat = fleet.serve(np.array([1, 0, 1, 0]), 0.0, np.array([1, 2, 3, 4]))
    assert lat.tolist() == [1.0, 1.0, 4.0, 3.0]
    lat = fleet.serve(np.array([0]), 1.0, np.array([2]))  # waits for the backlog
    assert lat.tolist() == [3.0] and fleet.free_at.tolist() == [4.0, 4.0]
    assert fleet.statistic("avg").tolist() == [3.0, 2.5]  # windows of two


def test_without_a_bound_the_shedder_changes_nothing():
    q = cep_core.compile(RUN, params={"lim": 5})
    data = readings(40, 30, 1)
    plain = q.start("strict-contiguity", runs="one-per-partition")
    want = [plain.feed(g, as_frame=True) for g in by_step(data)]
    s = KeyedShedder(q.start("strict-contiguity", runs="one-per-partition"), "NS",
                     lambda k: k // 10, np.ones(4))
    got = [s.feed(g) for g in by_step(data)]
    assert all(a.equals(b) for a, b in zip(got, want, strict=True))
    report = s.report()
    assert report["events_shed"].sum() == report["runs_shed"].sum() == 0
    assert report["events"].tolist() == [300] * 4 and len(report["latencies"]) == 1200


def test_an_unshed_run_served_again_on_other_devices_is_that_run():
    q = cep_core.compile(RUN, params={"lim": 5})
    data = readings(40, 30, 1)

    def run(cost):
        s = KeyedShedder(q.start("strict-contiguity", runs="one-per-partition"), "NS",
                         lambda k: k // 10, cost)
        for g in by_step(data):
            s.feed(g)
        return s

    cost = np.array([0.01, 0.02, 0.5, 1.5])
    again, direct = run(np.ones(4)).report_at(cost), run(cost).report()
    for key in ("busy", "latency_sum", "latencies", "work", "events"):
        assert np.allclose(again[key], direct[key]), key
    assert not np.allclose(again["latencies"], run(np.ones(4)).report()["latencies"])


def test_a_run_that_shed_cannot_be_served_again(model):
    q = cep_core.compile(RUN, params={"lim": 5})
    s = KeyedShedder(q.start("strict-contiguity", runs="one-per-partition"), "HyI",
                     lambda k: k // 10, np.full(4, 0.5), bound=np.full(4, 0.01), model=model)
    for g in by_step(readings(40, 30, 1)):
        s.feed(g)
    assert s.report()["events_shed"].sum() > 0
    with pytest.raises(QueryError, match="report_at"):
        s.report_at(np.ones(4))


@pytest.fixture(scope="module")
def model():
    q = cep_core.compile(RUN, params={"lim": 5})
    return fit_cost_model(q, readings(40, 60, 7), policy="strict-contiguity",
                          runs="one-per-partition", classes=3, max_classes=3)


def test_input_shedding_drops_what_can_create_nothing_first(model):
    """A reading that fails ``a[i].x > lim`` alone creates nothing (the ψ of Eq. 4.9):
    under a tight bound HyI drops those first (and readings that would only start runs
    of a class that rarely completes) and keeps nearly every output; RI, dropping at
    random, loses many."""
    q = cep_core.compile(RUN, params={"lim": 5})
    data = readings(40, 40, 3)
    truth = pd.concat([q.start("strict-contiguity", runs="one-per-partition")
                       .feed(data, as_frame=True)])
    cost = np.full(4, 0.1)
    outs = {}
    for strategy in ("HyI", "RI"):
        s = KeyedShedder(q.start("strict-contiguity", runs="one-per-partition"), strategy,
                         lambda k: k // 10, cost, bound=np.full(4, 0.05), model=model,
                         min_samples=4, window=8)
        outs[strategy] = (pd.concat([s.feed(g) for g in by_step(data)]), s.report())
    hyi, hyi_report = outs["HyI"]
    ri, ri_report = outs["RI"]
    assert hyi_report["events_shed"].sum() > 0.4 * len(data)
    assert len(hyi) >= 0.95 * len(truth)
    assert ri_report["events_shed"].sum() > 0.05 * len(data)
    assert len(ri) < 0.9 * len(truth)


def test_shedding_is_the_same_whatever_else_is_in_the_batch(model):
    """Decisions are per device: the keys of devices 0-1 give the same outputs alone as
    beside devices 2-3."""
    q = cep_core.compile(RUN, params={"lim": 5})
    data = readings(40, 40, 4)

    def run(frame: pd.DataFrame) -> pd.DataFrame:
        s = KeyedShedder(q.start("strict-contiguity", runs="one-per-partition"), "Hybrid",
                         lambda k: k // 10, np.full(4, 0.1), bound=np.full(4, 0.05),
                         model=model, min_samples=4, window=8)
        return pd.concat([s.feed(g) for g in by_step(frame)])

    both = run(data)
    alone = run(data[data["k"] < 20])
    assert both[both["k"] < 20].reset_index(drop=True).equals(alone.reset_index(drop=True))


def test_a_keyed_shedder_checks_its_arguments(model):
    q = cep_core.compile(RUN, params={"lim": 5})
    s = q.start("strict-contiguity", runs="one-per-partition")
    with pytest.raises(QueryError, match="shedding.strategy"):
        KeyedShedder(s, "SS", lambda k: k, np.ones(1))
    with pytest.raises(QueryError, match="needs a cost model"):
        KeyedShedder(s, "HyS", lambda k: k, np.ones(1))
    shedder = KeyedShedder(s, "NS", lambda k: k * 0, np.ones(1))
    with pytest.raises(QueryError, match="one time"):
        shedder.feed(pd.DataFrame({"type": "R", "time": [1, 2], "k": [0, 0], "x": [9, 9]}))


# ------------------------------------------------------------------ the DR monitoring
@pytest.fixture(scope="module")
def op_run():
    scenario = scenario_from_dict(quickstart(shedding={}), "op.yaml")
    return scenario, pipeline.run(scenario, SerialBackend())


def test_the_unshed_monitoring_beside_op_is_the_run_without_shedding(op_run):
    scenario, op = op_run
    plain = scenario.model_copy(update={"monitoring": scenario.monitoring.model_copy(
        update={"shedding": None})})
    bl = pipeline.run(plain, SerialBackend(), chunk_size=200)
    trad = op.monitored.outcome[plain_twin("traditional")]
    assert trad.latch == bl.monitored.outcome["traditional"].latch
    assert trad.t_nc == bl.monitored.outcome["traditional"].t_nc
    assert pass_costs(scenario, op.monitored, plain_twin("traditional")) == bl.costs
    assert np.array_equal(op.monitored.meter_work[plain_twin("traditional")],
                          bl.monitored.meter_work["traditional"])


def test_op_sheds_readings_and_costs_less(op_run):
    scenario, op = op_run
    gw = op.monitored.features["shedding"].meter
    shed, unshed = gw["traditional"], gw[plain_twin("traditional")]
    assert shed.inputs == unshed.inputs and unshed.inputs_shed == 0
    assert shed.inputs_shed > 0 and shed.work < unshed.work
    unshed_costs = pass_costs(scenario, op.monitored, plain_twin("traditional"))
    assert op.costs["computation"]["total"] < unshed_costs["computation"]["total"]
    # a meter whose test reading is shed sends neither it nor its readings until the next
    # test (up to its group's stop)
    quiet = op.monitored.features["shedding"].quiet["traditional"]
    sent, unshed_sent = (c["communication"]["meter_readings"] for c in (op.costs, unshed_costs))
    assert 0 < quiet.sum() and sent < unshed_sent - shed.inputs_shed


def test_op_is_the_same_for_any_chunking_of_whole_gateways(op_run):
    scenario, op = op_run
    again = pipeline.run(scenario, SerialBackend(), chunk_size=300)  # → 300: 3 gateways
    assert again.monitored.features["shedding"] == op.monitored.features["shedding"]
    assert again.costs == op.costs and again.t_nc == op.t_nc


@pytest.mark.parametrize("field, value", [("strategy", "SS"), ("bound", 1.5),
                                          ("gateway_households", 0), ("statistic", "max"),
                                          ("utilisation", 1.0), ("nonsense", 1)])
def test_bad_shedding_configuration_gets_one_line_naming_the_field(field, value):
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(quickstart(shedding={field: value}), "bad.yaml")
    line = str(err.value).strip().splitlines()[0]
    assert "monitoring.shedding" in line and field in line


@pytest.mark.parametrize("first", [0, None])  # the chunk's ids a range, or not
@pytest.mark.parametrize("minutes", [120, 37])  # the program's readings, or a stream's so far
def test_quiet_readings_count_each_shed_meters_readings_that_arrived(first, minutes):
    """A shed test reading quiets its meter's readings until the next test: counted per
    test and offset after it, a reading lost on the way not counted, a minute past the
    readings known counted as sent; the same figures as counting reading by reading."""
    from drsim.utility.monitoring import MonitoringPlan
    from drsim.utility.quiet_meters import quiet_readings
    from drsim.utility.reading_slots import interim_offsets

    plan = MonitoringPlan(1110, 1230, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    rng = np.random.default_rng(3)
    ids = np.arange(40) + 500 if first is not None else np.sort(rng.choice(900, 40, False))
    shed = rng.random((40, len(plan.test_times))) < 0.3
    row, test = np.nonzero(shed)
    lost = rng.random((40, minutes)) < 0.2
    got = quiet_readings(plan, ids, ids[row], plan.test_times[test].astype(float), lost)
    offsets = interim_offsets(plan.delta, plan.reading)
    want = np.zeros_like(got)
    for r, j in zip(row.tolist(), test.tolist(), strict=True):
        for k, o in enumerate(offsets.tolist()):
            minute = int(plan.test_times[j]) + o - plan.t_start
            want[j, k] += minute >= minutes or not lost[r, minute]
    assert got.dtype == np.int64 and got.shape == (len(plan.test_times), len(offsets))
    assert 0 < got.sum() < len(row) * len(offsets)  # some readings lost on the way
    np.testing.assert_array_equal(got, want)


def test_a_streams_quiet_count_gives_the_count_of_its_tests_so_far_at_each_micro_batch():
    """Counted over a stream's micro-batches (the plan cut after the tests so far, the
    readings known so far), the quiet readings equal those counted at once at every
    micro-batch; the settled shed readings are kept, not counted again, and shed
    readings that do not continue those counted (a run started again) count anew."""
    import dataclasses

    from drsim.utility.monitoring import MonitoringPlan
    from drsim.utility.quiet_meters import QuietCount, quiet_readings

    plan = MonitoringPlan(1110, 1230, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    rng = np.random.default_rng(5)
    ids = np.sort(rng.choice(900, 30, False))
    row, test = np.nonzero((rng.random((30, len(plan.test_times))) < 0.3).T)[::-1]
    keys, times = ids[row], plan.test_times[test].astype(float)  # shed in time order
    lost = rng.random((30, 120)) < 0.2
    count, kept = QuietCount(), []
    for k in range(1, len(plan.test_times) + 1):
        cut = dataclasses.replace(plan, t_end=int(plan.test_times[k - 1]) + 1)
        upto = times < cut.t_end
        known = lost[:, :cut.t_end - plan.t_start]
        got = count.count(cut, ids, keys[upto], times[upto], known)
        np.testing.assert_array_equal(got, quiet_readings(cut, ids, keys[upto],
                                                          times[upto], known))
        kept.append(len(count.keys))
    whole = count.count(plan, ids, keys, times, lost)  # the program's end: all known
    np.testing.assert_array_equal(whole, quiet_readings(plan, ids, keys, times, lost))
    assert 0 < kept[-2] < kept[-1] < len(count.keys) == len(keys)
    assert all(n <= int((times < plan.test_times[j]).sum()) for j, n in enumerate(kept))
    again = count.count(plan, ids, keys[::-1], times[::-1], lost)  # not a continuation
    np.testing.assert_array_equal(again, quiet_readings(plan, ids, keys, times, lost))
