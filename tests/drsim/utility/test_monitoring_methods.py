"""The monitoring methods under baseline error (drsim.utility.monitoring_method and its
methods): counting is Listings 6.1-6.3 as before, tolerance bands Eq. 6.4, aggregate runs
a CUSUM at the group leader."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import drsim
from drsim import api
from drsim.pipeline.passes import plan_chunks, simulate_chunk
from drsim.pipeline.stages import check_run
from drsim.pipeline.stream_tiers import check_streamable
from drsim.scenario import load_scenario
from drsim.utility.aggregate_method import cusum, meter_sums
from drsim.utility.aggregate_tier import aggregate_tier, group_statistic
from drsim.utility.known_cv_reference import standard_error
from drsim.utility.method_registry import METHODS, method_of
from drsim.utility.monitoring import (
    NOT_LATCHED,
    QUERIES,
    MonitoringPlan,
    accumulated_kwh,
    check_queries,
    meter_tier,
)
from drsim.utility.monitoring_method import Counting
from drsim.utility.session_feed import MeterCarry
from drsim.utility.threshold import replica_flags
from drsim.utility.tolerance_method import Tolerance
from tests.drsim.pipeline.test_pipeline import small

ROOT = Path(__file__).resolve().parents[3]


def _scenario(**update):
    base = load_scenario(ROOT / "drsim/data/scenarios" / "quickstart.yaml")
    mon = update.pop("monitoring", {})
    baseline = update.pop("baseline", {})
    return base.model_copy(update={
        "monitoring": base.monitoring.model_validate({**base.monitoring.model_dump(), **mon}),
        "baseline": base.baseline.model_copy(update=baseline)})


def _noisy(seed: int, n: int = 300, k: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative loads and P̂ of ``n`` households, each off by a day-long factor."""
    rng = np.random.default_rng(seed)
    expected = np.cumsum(rng.uniform(0.05, 0.3, (n, k)), axis=1)
    used = expected * rng.lognormal(0.0, 0.15, (n, 1)) + rng.normal(0, 0.02, (n, k))
    return used, expected


def _same(a, b) -> None:
    assert a.events.equals(b.events)
    for name in ("processed", "partial_matches", "outputs", "first_flag", "fetches"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_counting_is_the_default_and_runs_the_listings_as_printed():
    scenario = _scenario()
    plan = MonitoringPlan.of(scenario)
    assert scenario.monitoring.method == "counting" and plan.method == Counting()
    accepted = type(scenario.monitoring).model_fields["method"].annotation.__args__
    assert set(accepted) == set(METHODS)  # every accepted name has a method
    assert dict(plan.queries) == QUERIES and "z" not in plan.params()
    # a plan built without a method (as before the methods) tests value for value alike
    bare = MonitoringPlan(*[getattr(plan, f) for f in (
        "t_start", "t_end", "t_first_test", "delta", "m_user", "m_group", "m_utility",
        "gamma_user", "gamma_group", "reading", "settlement", "n_groups")])
    used, expected = _noisy(1, k=len(plan.test_times))
    ids = np.arange(len(used))
    _same(meter_tier(plan, ids, 0, used, expected), meter_tier(bare, ids, 0, used, expected))


@pytest.mark.parametrize("z, cv", [(0.0, 0.3), (1.64, 0.0), (0.0, 0.0)])
def test_tolerance_without_a_band_is_counting(z, cv):
    scenario = _scenario(monitoring={"method": "tolerance", "tolerance": {"z": z, "cv": cv}})
    plan = MonitoringPlan.of(scenario)
    assert plan.method == Tolerance(z=z, cv=cv)
    check_queries(plan)
    counting = replace(plan, method=Counting(), queries=tuple(QUERIES.items()))
    used, expected = _noisy(2, k=len(plan.test_times))
    ids = np.arange(len(used))
    band = meter_tier(plan, ids, 0, used, expected)
    assert band.outputs.sum() > 0
    _same(band, meter_tier(counting, ids, 0, used, expected))


def test_tolerance_reads_its_cv_from_the_m_and_v_error_unless_given():
    assert method_of(_scenario(baseline={"error": 0.2}, monitoring={
        "method": "tolerance"})) == Tolerance(z=1.64, cv=0.2)
    assert method_of(_scenario(baseline={"error": 0.2}, monitoring={
        "method": "tolerance", "tolerance": {"cv": 0.05, "z": 2.0}})) == \
        Tolerance(z=2.0, cv=0.05)


def test_the_band_is_a_predicate_over_sigma():
    """A household 10 % above its P̂ fails counting's test, not a band of 1.64 × 15 %; one
    30 % above fails both."""
    plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    texts = {**QUERIES, **Tolerance().queries()}
    band = replace(plan, method=Tolerance(z=1.64, cv=0.15), queries=tuple(texts.items()))
    expected = np.array([[1.0, 2.0, 3.0, 4.0]] * 2)
    used = expected * np.array([[1.1], [1.3]])
    ids = np.array([7, 8])
    assert meter_tier(plan, ids, 0, used, expected).first_flag.tolist() == [1135, 1135]
    assert meter_tier(band, ids, 0, used, expected).first_flag.tolist() == [NOT_LATCHED, 1135]


def test_a_stream_continues_the_band_test_by_test():
    """A stream's run kept between micro-batches (MeterCarry) reads the band σ of the new
    tests too: fed test by test it gives the run over the tests so far."""
    plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    texts = {**QUERIES, **Tolerance().queries()}
    band = replace(plan, method=Tolerance(z=1.64, cv=0.15), queries=tuple(texts.items()))
    expected = np.array([[1.0, 2.0, 3.0, 4.0]] * 2)
    used = expected * np.array([[1.0, 1.3, 1.1, 1.3], [1.3, 1.3, 1.3, 1.1]])
    ids, carry = np.array([7, 8]), MeterCarry(band)
    for k in range(1, 5):
        cut = replace(band, t_end=int(band.test_times[k - 1]) + 1)
        fresh = meter_tier(cut, ids, 0, used[:, :k], expected[:, :k])
        kept = meter_tier(cut, ids, 0, used[:, :k], expected[:, :k], carry=carry)
        pd.testing.assert_frame_equal(kept.events, fresh.events)
    assert carry.tests_fed == 4 and len(fresh.events) == 2


def test_tolerance_flags_fewer_households_on_the_expected_pass_under_m_and_v_error():
    """The expected pass of a small scenario with a 20 % M&V error known to the utility:
    every household the band flags counting flags too, no earlier, and the band flags
    fewer."""
    scenario = _scenario(baseline={"error": 0.2}, monitoring={"method": "tolerance"})
    plan = MonitoringPlan.of(scenario)
    counting = replace(plan, method=Counting(), queries=tuple(QUERIES.items()))
    chunk = plan_chunks(scenario)[0]
    result = simulate_chunk(scenario, chunk, households=True)
    times = plan.test_times
    used = accumulated_kwh(result.window_kw["expected"], plan.t_start, times)
    expected = accumulated_kwh(result.estimate_window_kw["expected"], plan.t_start, times)
    ids = result.population.ids
    mine = meter_tier(plan, ids, chunk.group, used, expected).first_flag
    theirs = meter_tier(counting, ids, chunk.group, used, expected).first_flag
    flagged, flagged_counting = mine != NOT_LATCHED, theirs != NOT_LATCHED
    assert not (flagged & ~flagged_counting).any()
    assert (mine[flagged] >= theirs[flagged]).all()
    assert flagged.sum() < flagged_counting.sum()
    assert flagged_counting.sum() >= 0.1 * len(ids)  # the error flags many by counting


# --------------------------------------------------------------------------- aggregate
def _aggregate_plan(**settings) -> MonitoringPlan:
    return MonitoringPlan.of(_scenario(monitoring={"method": "aggregate",
                                                   "aggregate": settings}))


def test_the_cusum_against_a_hand_computation():
    x = np.array([[0.5, 2.0, -1.0, 3.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0]])
    # S_j = max(0, S_{j-1} + x_j - k), k = 0.5, by hand
    assert cusum(x, 0.5).tolist() == [[0.0, 1.5, 0.0, 2.5, 2.0], [0.5, 1.0, 1.5, 2.0, 2.5]]
    # the aggregate's standard error: 10 % on households of 3 and 4 kWh; half shared
    se = standard_error(np.array([7.0]), np.array([25.0]), 0.1, 0.5, 0.0)
    assert se[0] == pytest.approx(0.1 * np.sqrt(0.5 * 25.0 + 0.5 * 49.0))
    assert standard_error(np.array([7.0]), np.array([25.0]), 0.0, 0.0, 0.01)[0] == \
        pytest.approx(0.07)


def test_the_group_statistic_is_standardised_and_the_same_in_any_blocks():
    plan = _aggregate_plan(k=1.0, h=4.0, cv=0.1, floor=0.001)
    k = len(plan.test_times)
    rng = np.random.default_rng(3)
    expected = np.cumsum(rng.uniform(0.05, 0.3, (50, k)), axis=1)
    used = expected * 1.05
    whole = meter_sums(np.arange(50), 0, plan.test_times, used, expected).events
    parts = pd.concat([meter_sums(np.arange(50)[b], 0, plan.test_times, used[b],
                                  expected[b]).events for b in (slice(0, 17), slice(17, 50))])
    one = group_statistic(plan, plan.method, whole)
    two = group_statistic(plan, plan.method, parts)
    assert one.equals(two)
    e, q = expected.sum(axis=0), (expected ** 2).sum(axis=0)
    x = 0.05 * e / (0.1 * np.sqrt(q))  # Σ(P - P̂) / σ with independent errors
    # (up to the sums' whole µkWh and Wh²)
    assert np.allclose(one["x"], x, rtol=1e-3)
    assert np.allclose(one["statistic"], cusum(x, 1.0), rtol=1e-3)


def test_aggregate_raises_the_group_event_for_a_deficit_and_not_at_the_expected():
    """Two groups of 200 households with a 10 % M&V error known: one uses exactly its P̂,
    one 30 % more than its P̂ from the fourth test on. Only the second raises the group
    event, at the test where the CUSUM first exceeds h."""
    plan = _aggregate_plan(cv=0.1)
    k = len(plan.test_times)
    rng = np.random.default_rng(5)
    expected = np.cumsum(rng.uniform(0.05, 0.3, (200, k)), axis=1)
    over = expected.copy()
    over[:, 3:] += 0.3 * (expected[:, 3:] - expected[:, 2:3])
    at_expected = aggregate_tier(plan, 0, meter_sums(np.arange(200), 0, plan.test_times,
                                                     expected, expected).events)
    deficit = aggregate_tier(plan, 1, meter_sums(np.arange(200), 1, plan.test_times,
                                                 over, expected).events)
    assert at_expected.latch == NOT_LATCHED and not len(at_expected.events)
    stat = group_statistic(plan, plan.method, meter_sums(
        np.arange(200), 1, plan.test_times, over, expected).events)
    crossed = plan.test_times[stat["statistic"].to_numpy() > plan.method.h]
    assert len(crossed) and deficit.latch == crossed[0] >= plan.test_times[3]
    assert deficit.events["time"].tolist() == crossed.tolist()


def test_aggregate_closes_the_loop_without_user_events():
    """A run of 400 households: the meters send sums, no user event; the expected pass
    raises no prediction and the traditional pass does, through the unchanged utility."""
    run = drsim.run(small(400, method="aggregate"), backend="serial")
    summary = run.summary
    assert summary["monitoring"]["method"] == "aggregate"
    assert summary["cost"]["communication"]["user_events"] == 0
    assert summary["prediction"]["expected_pass_noncompliance_time"] is None
    assert summary["prediction"]["utility_noncompliance_time"] is not None
    assert not len(run.user_events)


def test_aggregate_refuses_what_it_does_not_run_beside():
    s = small(200, method="aggregate", shedding={"gateway_households": 100})
    with pytest.raises(ValueError, match="monitoring.shedding"):
        check_run(s)
    with pytest.raises(ValueError, match="monitoring.method"):
        check_streamable(small(200, method="aggregate"))


def test_gamma_comes_from_replicas_tested_by_the_method():
    """The replicas that set γ run the plan's meter tier: with a 20 % M&V error the band
    flags fewer replica households than counting, and without a band as many."""
    scenario = _scenario(baseline={"error": 0.2}, monitoring={"method": "tolerance"})
    chunk = plan_chunks(scenario)[0]
    result = simulate_chunk(scenario, chunk, households=True)

    def flags(plan):
        return replica_flags(plan, result.population, result.simulator, chunk.group,
                             result.estimate_exact, 2)

    plan = MonitoringPlan.of(scenario)
    counting = replace(plan, method=Counting(), queries=tuple(QUERIES.items()))
    band, plain = flags(plan), flags(counting)
    assert plain.sum() > 0 and band.sum() < plain.sum() and (band <= plain).all()
    assert np.array_equal(flags(replace(plan, method=Tolerance(z=0.0, cv=0.2))), plain)


@pytest.mark.parametrize("method", ["tolerance", "aggregate"])
def test_drsim_monitor_on_a_runs_readings_gives_its_prediction(method, tmp_path):
    """The methods run on recorded readings as on the run: ``drsim monitor`` on a run's
    exported readings predicts when the run did, knows what it knew and costs the same."""
    s = small(400, method=method, gamma_user={"method": "expected", "z": 1.0, "replicas": 4})
    ran = api.run(s, tmp_path / "run", backend="serial", export_readings=True).summary
    again = api.monitor(tmp_path / "run" / "readings", s, tmp_path / "m",
                        backend="serial").summary
    assert ran["prediction"]["predicted"], "the test needs a prediction"
    for key in ("utility_noncompliance_time", "group_noncompliance_times"):
        assert again["prediction"][key] == ran["prediction"][key], key
    for key in ("deficit_at_prediction", "cost"):
        assert again[key] == ran[key], key
    assert again["monitoring"]["method"] == method


def test_aggregate_gives_the_same_numbers_for_any_chunking():
    """The readings' sums are whole µkWh and Wh², so the group statistic, the group
    events and the loop are the same for chunks of 100 and of 67 households."""
    s = small(400, method="aggregate", aggregate={"cv": 0.1})
    summaries = [drsim.run(s.model_copy(update={"chunk_size": size}),
                           backend="serial").summary for size in (100, 67)]
    assert summaries[0]["prediction"]["predicted"], "the test needs a prediction"
    for key in ("prediction", "deficit_at_prediction", "cost", "second_event",
                "reduction_share_of_expected"):
        assert summaries[0][key] == summaries[1][key], key
