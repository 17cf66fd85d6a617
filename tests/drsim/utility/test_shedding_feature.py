"""drsim.utility.shedding_feature on small hand-made inputs: the stage of cost models
before the passes, the twin passes, the meter tier run twice on a chunk's gateways, the
chunk rows and their merge, summary.json's ``shedding`` and the headline rows."""

from __future__ import annotations

import pickle
from dataclasses import replace
from functools import partial
from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest
from small_scenarios import quickstart

from drsim.scenario import RemoteData, Shedding, scenario_from_dict
from drsim.utility.features import FeatureChunk, FeatureRun, plain_twin
from drsim.utility.fetching import MeterFetch
from drsim.utility.monitoring import NOT_LATCHED, MeterResult, MonitoringPlan, accumulated_kwh
from drsim.utility.quiet_meters import quiet_readings, quiet_so_far
from drsim.utility.session_feed import MeterCarry
from drsim.utility.shedding import (
    LATENCY_BINS,
    DeviceStats,
    fit_meter_model,
    shed_meter_tier,
)
from drsim.utility.shedding_feature import (
    COLUMNS,
    MODELS,
    CostModels,
    LoadShedding,
    SheddingFigures,
    cost_models,
)
from drsim.utility.tier_shedding import TierShedding

#: 18:30-20:30, tests every 5 minutes from 18:40; 1 group (the shed_meter_tier example)
PLAN = MonitoringPlan(1110, 1230, 1120, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
CFG = Shedding(gateway_households=4, classes=2, slices=2)


def test_sized_before_the_gateways_decide_each_test_from_the_tests_before():
    """With their sizing from the whole window's run (a stream's), the gateways run over
    the tests so far (a fetcher of the whole program beside, prefetching as in batch)
    shed, decide and fetch at every test as over every test: no decision looks ahead."""
    rng = np.random.default_rng(1)
    day = NS(population=NS(ids=np.arange(8)),
             window_kw={"traditional": rng.uniform(0, 2, (8, 120))},
             estimate_window_kw={"expected": np.ones((8, 120))})
    model = fit_meter_model(NS(monitoring=NS(shedding=CFG)), PLAN, 0, day)
    used = accumulated_kwh(rng.uniform(0, 2, (8, 120)), 1110, PLAN.test_times)
    expected = accumulated_kwh(np.ones((8, 120)), 1110, PLAN.test_times)
    remote = RemoteData(strategy="Hybrid", gateway_households=4, cache_elements=6,
                        latency={"kind": "fixed", "seconds": 400.0})  # > δ: waits

    def inputs(plain: bool = False) -> dict:
        return {} if plain else {"fetch": MeterFetch(PLAN, remote, np.arange(8), 0, 7)}

    whole = shed_meter_tier(PLAN, CFG, model, np.arange(8), 0, 0, used, expected, inputs)
    op, sizing = whole[2], whole[5]
    assert whole[3].inputs_shed > 0 and (op.events["delay"] > 0).any()
    for k in (3, 14, len(PLAN.test_times)):
        cut = replace(PLAN, t_end=int(PLAN.test_times[k - 1]) + 1)
        part = shed_meter_tier(cut, CFG, model, np.arange(8), 0, 0, used[:, :k],
                               expected[:, :k], inputs, sizing=sizing)[2]
        mine = op.events[op.events["time"] < cut.t_end].reset_index(drop=True)
        pd.testing.assert_frame_equal(part.events, mine)
        for name in ("processed", "partial_matches", "outputs", "fetches"):
            assert (getattr(part, name) == getattr(op, name)[:k]).all(), name


def test_runs_continued_test_by_test_give_the_runs_over_the_tests_so_far():
    """A stream's runs kept between its micro-batches (a carry for BL and one for OP, the
    fetcher beside), fed only the new tests each time, give at every cut what the runs
    over the tests so far give: events, work, fetches, the devices' figures and the
    readings shed; a cut before what a carry fed (other inputs) starts it again."""
    rng = np.random.default_rng(2)
    day = NS(population=NS(ids=np.arange(8)),
             window_kw={"traditional": rng.uniform(0, 2, (8, 120))},
             estimate_window_kw={"expected": np.ones((8, 120))})
    model = fit_meter_model(NS(monitoring=NS(shedding=CFG)), PLAN, 0, day)
    used = accumulated_kwh(rng.uniform(0, 2, (8, 120)), 1110, PLAN.test_times)
    expected = accumulated_kwh(rng.uniform(0.8, 1.2, (8, 120)), 1110, PLAN.test_times)
    remote = RemoteData(strategy="Hybrid", gateway_households=4, cache_elements=6,
                        latency={"kind": "fixed", "seconds": 400.0})
    carries = {True: MeterCarry(PLAN), False: MeterCarry(PLAN)}
    lost = rng.random((8, 120)) < 0.2

    def inputs(plain: bool = False, carried: bool = False) -> dict:
        given = {} if plain else {"fetch": MeterFetch(PLAN, remote, np.arange(8), 0, 7)}
        return {**given, "carry": carries[plain]} if carried else given

    sizing = shed_meter_tier(PLAN, CFG, model, np.arange(8), 0, 0, used, expected,
                             inputs)[5]
    fed, feeder = 0, None
    for k in (1, 3, 4, 4, 14, 2, 9, len(PLAN.test_times)):
        cut = replace(PLAN, t_end=int(PLAN.test_times[k - 1]) + 1)
        runs = [shed_meter_tier(cut, CFG, model, np.arange(8), 0, 0, used[:, :k],
                                expected[:, :k], partial(inputs, carried=carried),
                                sizing=sizing) for carried in (False, True)]
        for fresh, carried in zip(*runs, strict=True):
            if isinstance(fresh, MeterResult):
                pd.testing.assert_frame_equal(carried.events, fresh.events)
                for name in ("processed", "partial_matches", "outputs", "fetches"):
                    assert (getattr(carried, name) == getattr(fresh, name)).all(), name
                assert carried.fetched == fresh.fetched
                assert (carried.first_flag == fresh.first_flag).all()
            elif isinstance(fresh, tuple):
                assert all(np.array_equal(a, b) for a, b in zip(fresh, carried, strict=True))
            else:
                assert carried == fresh
        # the quiet readings so far, counted with OP's carry: those counted at once
        known = lost[:, :cut.t_end - PLAN.t_start]
        np.testing.assert_array_equal(
            quiet_so_far(carries[False], cut, np.arange(8), *runs[1][4], known),
            quiet_readings(cut, np.arange(8), *runs[0][4], known))
        assert (carries[False].feeder is feeder) == (0 < fed <= k)  # continued, or anew
        fed, feeder = k, carries[False].feeder


def test_the_feature_is_read_from_the_scenario_and_monitors_recorded_readings():
    off = LoadShedding.of(scenario_from_dict(quickstart(1200)))
    on = LoadShedding.of(scenario_from_dict(quickstart(1200, shedding={})))
    assert not off.active and on.active and on.group_firsts == (0, 400, 800)
    assert on.readings_refusal is None  # drsim monitor runs it with a run's cost models
    assert off.summary(None, None) is None


def test_a_stage_fits_each_groups_cost_model_before_the_passes():
    scenario = scenario_from_dict(quickstart(1200, shedding={}))
    asked = []

    def simulate(day, first, count, group):
        asked.append((day.seed, first, count, group))
        return "history"

    (step,) = LoadShedding.of(scenario).preparations(scenario, PLAN, simulate)
    assert (step.label, step.count, step.schema) == ("cost models", 3, MODELS)
    # the models come back in group order whatever order the tasks finish in
    rows = pd.DataFrame({"group": [2, 0, 1], "model": [b"c", b"a", b"b"],
                         "shares": [[0.3], [0.1], [0.2]]})
    assert step.finish(rows) == cost_models(rows) == CostModels(
        (b"a", b"b", b"c"), ((0.1,), (0.2,), (0.3,)))
    assert asked == []  # nothing simulated until a task runs


def test_the_cost_model_task_measures_the_share_flagged_on_the_same_day():
    scenario = scenario_from_dict(quickstart(1200, shedding={}))
    plan = MonitoringPlan.of(scenario)
    rng = np.random.default_rng(1)
    n, minutes = 100, plan.t_end - plan.t_start
    history = NS(population=NS(ids=np.arange(n)),
                 window_kw={"traditional": rng.uniform(0, 3, (n, minutes))},
                 estimate_window_kw={"expected": np.ones((n, minutes))})
    asked = []
    (step,) = LoadShedding.of(scenario).preparations(
        scenario, plan, lambda *a: asked.append(a) or history)
    row = step.task(0)
    assert len(asked) == 1  # one simulated day for both
    shares = np.array(row["shares"][0])
    assert shares.shape == plan.test_times.shape and 0 < shares.max() <= 1
    # what the group leaders are given is what the stage made
    made = step.finish(pd.DataFrame(row))
    given = LoadShedding.of(scenario).group_inputs(plan, {"shedding": (made,)})["shed"]
    assert given == TierShedding(scenario.monitoring.shedding, made.shares)


def test_the_twins_follow_the_monitored_passes():
    got = LoadShedding(CFG, (0,)).passes(("expected", "traditional"))
    assert got == ("expected", "traditional", "expected_bl", "traditional_bl")


def _gateways(cfg, seed: int):
    """A chunk of 8 households on one gateway with the meter tier's cost model fitted on
    a random previous day, the feature, and the day's accumulated and expected energy."""
    rng = np.random.default_rng(seed)
    day = NS(population=NS(ids=np.arange(8)),
             window_kw={"traditional": rng.uniform(0, 2, (8, 120))},
             estimate_window_kw={"expected": np.ones((8, 120))})
    model = fit_meter_model(NS(monitoring=NS(shedding=cfg)), PLAN, 0, day)
    chunk = FeatureChunk(PLAN, 0, 0, np.arange(8),
                         prepared={"shedding": (CostModels((pickle.dumps(model),), ((),)),)})
    used = accumulated_kwh(rng.uniform(0, 2, (8, 120)), 1110, PLAN.test_times)
    expected = accumulated_kwh(np.ones((8, 120)), 1110, PLAN.test_times)
    return LoadShedding(cfg, (0,)), chunk, used, expected


def test_each_pass_runs_under_the_bound_then_unshed_on_the_gateways():
    feature, chunk, used, expected = _gateways(CFG, 0)
    plain_asked = []
    runs = feature.meter_runs(chunk, lambda *args: plain_asked.append(args))
    given = []
    op, bl = runs("traditional", used, expected,
                  lambda plain=False: given.append(plain) or {})
    assert plain_asked == [] and given == [True, False]  # BL plain, then OP; sizing: none
    assert (op.label, bl.label) == ("traditional", "traditional_bl")
    assert bl.extra.stats.inputs_shed == 0 and op.extra.stats.inputs_shed > 0
    assert op.extra.stats.work < bl.extra.stats.work
    # a shed test reading keeps its meter quiet for the δ − 1 minutes before the next test
    assert op.extra.quiet.sum() == 4 * op.extra.stats.inputs_shed > 0
    assert not bl.extra.quiet.any()
    rows = feature.chunk_rows(FeatureChunk(PLAN, 0, 0, np.arange(8), meter_runs=(op, bl)),
                              "traditional")
    assert rows["run"] == ["traditional", "traditional_bl"]
    frame = pd.DataFrame({"chunk": [0, 0, 1, 1], "group": 0, "pass": "traditional",
                          **{c: rows[c] * 2 for c in COLUMNS.names}})
    merged = feature.merge(frame)
    # the gateways' sizing, as a stream gets it, makes the same runs
    assert merged.sizes.meter == {(c, "traditional"): op.extra.sizing for c in (0, 1)}
    assert op.extra.sizing.bound is not None and bl.extra.sizing == op.extra.sizing
    sized = replace(chunk, prepared={"shedding": (*chunk.prepared["shedding"],
                                                  feature.day_sizes(merged))})
    again = feature.meter_runs(sized, None)("traditional", used, expected,
                                            lambda plain=False: {})
    assert [r.extra.stats for r in again] == [op.extra.stats, bl.extra.stats]
    assert again[0].result.events.equals(op.result.events)
    assert merged.meter["traditional"] == DeviceStats.merged([op.extra.stats.as_list()] * 2)
    assert merged.meter[plain_twin("traditional")].inputs == 2 * bl.extra.stats.inputs
    assert np.array_equal(merged.quiet["traditional"], 2 * op.extra.quiet.reshape(1, -1))
    assert feature.cost_inputs(merged, "traditional")["quiet"] is merged.quiet["traditional"]
    louder = replace(merged, quiet={**merged.quiet, "traditional": merged.quiet["traditional"] + 1})
    assert merged == feature.merge(frame) and merged != louder


@pytest.mark.parametrize("tiers", [["meter", "group", "utility"], ["group"]])
def test_without_twins_the_gateways_run_op_alone_with_the_day_runs_reference(tiers):
    """A streamed run's feature (OP alone, BL from the day run): sized on a day run's
    merge, the gateways run OP only, and its figures, the unshed reference included,
    are those OP had beside BL; the day run's twins join the stream's figures."""
    feature, chunk, used, expected = _gateways(CFG.model_copy(update={"tiers": tiers}), 1)
    op, bl = feature.meter_runs(chunk, None)("traditional", used, expected,
                                             lambda plain=False: {})
    rows = feature.chunk_rows(replace(chunk, meter_runs=(op, bl)), "traditional")
    merged = feature.merge(pd.DataFrame({"chunk": 0, "group": 0, "pass": "traditional",
                                         **rows}))
    assert merged.sizes.unshed == {(0, "traditional"): (bl.extra.stats.latency_sum,
                                                        bl.extra.stats.latency_count)}
    alone = feature.without_twins()
    assert alone.passes(("expected", "traditional")) == ("expected", "traditional")
    sized = replace(chunk, prepared={"shedding": (*chunk.prepared["shedding"],
                                                  feature.day_sizes(merged))})
    given = []
    (streamed,) = alone.meter_runs(sized, None)("traditional", used, expected,
                                                lambda plain=False: given.append(plain) or {})
    assert given == [False]  # no BL run
    assert streamed.label == "traditional" and streamed.extra.stats == op.extra.stats
    assert streamed.extra.stats.unshed_latency_count == bl.extra.stats.latency_count > 0
    assert streamed.result.events.equals(op.result.events)
    assert np.array_equal(streamed.extra.quiet, op.extra.quiet)
    mine = alone.merge(pd.DataFrame({"chunk": 0, "group": 0, "pass": "traditional",
                                     **alone.chunk_rows(replace(chunk, meter_runs=(streamed,)),
                                                        "traditional")}))
    assert set(mine.meter) == {"traditional"}
    assert alone.with_twins(mine, merged) == merged


def test_the_summary_puts_op_beside_bl_and_the_headline_reads_it():
    feature = LoadShedding(Shedding(), (0, 10))
    stats = DeviceStats(10, 2, 1, 30, 0, 0, 0, 0, 0, 0, 0,
                        np.zeros(len(LATENCY_BINS) - 1, np.int64))
    outcome = {"traditional": NS(t_nc=1125, predicted=True, latch=[1120, NOT_LATCHED]),
               "traditional_bl": NS(t_nc=NOT_LATCHED, predicted=False,
                                    latch=[NOT_LATCHED, NOT_LATCHED])}
    costs = {"traditional": {"communication": {"total": 5}, "computation": {"total": 8}},
             "traditional_bl": {"communication": {"total": 10}, "computation": {"total": 0}}}
    run = FeatureRun(PLAN, ("a", "b"), np.array([4, 4]), outcome, {}, costs.__getitem__)
    both = {"traditional": stats, "traditional_bl": stats}
    got = feature.summary(SheddingFigures(both, both, both), run)
    assert got["op"]["utility_noncompliance_time"] == "18:45"
    assert got["op"]["group_noncompliance_times"] == {"a": "18:40", "b": None}
    assert got["bl"]["utility_noncompliance_time"] is None
    assert got["op_share_of_bl"] == {"communication": 0.5, "computation": None}
    assert got["op"]["group_tier"]["user_events_shed"] == 2 and got["op"]["group_tier"]["shed"]
    assert got["bl"]["utility_tier"]["group_events"] == 10
    assert not got["bl"]["utility_tier"]["shed"] and got["config"] == Shedding().model_dump()
    rows = dict(LoadShedding.headline(got))
    assert rows == {"OP shed: readings / runs / user events / group events": "2 / 1 / 2 / 2"}
    assert LoadShedding.headline(None) == []
