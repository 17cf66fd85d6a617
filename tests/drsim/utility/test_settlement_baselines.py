"""Settlement-grade M&V baselines (drsim.utility.settlement_baselines,
drsim.utility.regression_baseline) and the additive day-of adjustment (drsim.utility.day_of),
checked against direct computations on the same simulated prior days."""

from __future__ import annotations

import numpy as np
import pytest
from small_scenarios import quickstart

from drsim.household.population import Population
from drsim.household.sim import ChunkSimulator, program_events
from drsim.scenario import scenario_from_dict
from drsim.units import DAY
from drsim.utility.baseline import estimate, estimate_exact, with_mv_error
from drsim.utility.baseline_model import model_curves
from drsim.utility.day_of import (
    adjustment_minutes,
    baseline_before_notice,
    day_of_adjusted,
    day_of_shift,
)
from drsim.utility.prior_day_runs import PRIOR_DAY_STRIDE, PriorDays, prior_days_of
from drsim.utility.regression_baseline import fit_time_of_day

HOUSEHOLDS = 40


def _scenario(**baseline):
    return scenario_from_dict(quickstart(600, **baseline), "settle.yaml")


def _prior_loads(pop, days: int, lo: int, hi: int) -> np.ndarray:
    """(days, households, minutes): prior day k simulated directly, k = 1..days [kW]."""
    return np.stack([ChunkSimulator(pop, day_offset=-k * PRIOR_DAY_STRIDE).run([]).load(lo, hi)
                     for k in range(1, days + 1)])


def test_ten_in_ten_is_the_mean_of_the_ten_prior_days():
    s = _scenario(method="x_of_y")
    dr = s.dr_program
    pop = Population(s, 0, HOUSEHOLDS)
    est = estimate_exact(pop, dr.start_minute, dr.end_minute)
    loads = _prior_loads(pop, 10, dr.start_minute, dr.end_minute)
    assert np.allclose(est.baseline_kw, loads.mean(axis=0), rtol=1e-12, atol=1e-12)
    prior = estimate_exact(Population(_scenario(method="prior_days"), 0, HOUSEHOLDS),
                           dr.start_minute, dr.end_minute)
    assert np.array_equal(est.baseline_kw, prior.baseline_kw)  # the same days, no DR
    assert not np.array_equal(est.expected_kw, prior.expected_kw)  # P̂ from the model


def test_high_five_of_ten_takes_each_households_highest_days():
    s = _scenario(method="x_of_y", x_of_y={"days": 10, "take": 5})
    dr = s.dr_program
    lo, hi = dr.start_minute - 60, dr.end_minute  # a window wider than the event hours
    pop = Population(s, 0, HOUSEHOLDS)
    est = estimate_exact(pop, lo, hi)
    loads = _prior_loads(pop, 10, lo, hi)
    event = np.rint(loads[:, :, 60:] * 1e6).sum(axis=2)  # (days, households) µkW·min
    best = np.argsort(-event.T, axis=1, kind="stable")[:, :5]  # (households, 5)
    direct = np.stack([loads[best[h], h].mean(axis=0) for h in range(HOUSEHOLDS)])
    assert np.allclose(est.baseline_kw, direct, rtol=1e-12, atol=1e-12)
    mean_of_all = loads.mean(axis=0)[:, 60:].sum(axis=1)
    high = est.baseline_kw[:, 60:].sum(axis=1)
    assert (high >= mean_of_all - 1e-9).all() and (high > mean_of_all + 1e-6).mean() > 0.5
    part = estimate_exact(Population(s, 10, 12), lo, hi)  # the same in any chunk
    assert np.array_equal(part.baseline_kw, est.baseline_kw[10:22])
    assert np.array_equal(part.expected_kw, est.expected_kw[10:22])


def test_expected_response_scales_the_baseline_by_the_models_share():
    s = _scenario(method="x_of_y", x_of_y={"days": 4, "take": 2})
    dr = s.dr_program
    pop = Population(s, 0, HOUSEHOLDS)
    est = estimate_exact(pop, dr.start_minute, dr.end_minute)
    model_b, model_p = model_curves(pop, dr.start_minute, dr.end_minute)
    assert (model_b > 0).all()
    assert np.allclose(est.expected_kw, est.baseline_kw * model_p / model_b, rtol=1e-12)
    nothing = (model_p == model_b).all(axis=1)  # e.g. θ_o = 0
    assert nothing.any()
    assert np.array_equal(est.expected_kw[nothing], est.baseline_kw[nothing])
    assert est.expected_kw.sum() < 0.97 * est.baseline_kw.sum()


def test_prior_days_are_simulated_once_per_chunk(monkeypatch):
    s = _scenario(method="x_of_y", x_of_y={"days": 3, "take": 3},
                  day_of_adjustment={"window_minutes": 120})
    pop = Population(s, 0, 10)
    runs = []
    original = ChunkSimulator.run
    monkeypatch.setattr(ChunkSimulator, "run",
                        lambda self, *a, **k: runs.append(self.plan.day_offset) or
                        original(self, *a, **k))
    estimate(pop, s.dr_program.start_minute, s.dr_program.end_minute)
    baseline_before_notice(pop, ChunkSimulator(pop), None)
    estimate(pop, 1300, 1400)
    assert sorted(runs) == [-3000, -2000, -1000]


def test_regression_reproduces_identical_days():
    rng = np.random.default_rng(3)
    day = rng.gamma(2.0, 0.3, size=(5, 24))  # households × hourly bins [kW]
    same = np.stack([day] * 6)
    assert np.allclose(fit_time_of_day(same, np.zeros(6, dtype=int)), day, atol=1e-12)
    # days of two other types: the same profile, each shifted by its own level
    level = rng.normal(0.0, 0.2, size=(2, 5, 1))
    mixed = np.concatenate([same, np.stack([day + level[0], day + level[0], day + level[1]])])
    types = np.array([0] * 6 + [1, 1, 2])
    assert np.allclose(fit_time_of_day(mixed, types), day, atol=1e-12)
    # without the day-type terms the other days would move the fit
    assert not np.allclose(mixed.mean(axis=0), day, atol=1e-3)


def test_regression_on_identical_simulated_days_is_their_bin_means(monkeypatch):
    s = _scenario(method="regression", regression={"days": 4, "bin_minutes": 15})
    pop = Population(s, 5, HOUSEHOLDS)  # households no other test shares prior days with
    original = PriorDays.run
    monkeypatch.setattr(PriorDays, "run", lambda self, k, day_type=None:
                        original(self, 1, day_type))
    est = estimate_exact(pop, 1095, 1230)
    day = ChunkSimulator(pop, day_offset=-PRIOR_DAY_STRIDE).run([]).load(0, DAY)
    means = day.reshape(HOUSEHOLDS, -1, 15).mean(axis=2)
    assert np.allclose(est.baseline_kw, np.repeat(means, 15, axis=1)[:, 1095:1230],
                       rtol=1e-9, atol=1e-12)


def test_regression_with_other_day_types_is_the_same_in_any_chunk():
    s = _scenario(method="regression", regression={"days": 3, "other_day_type_days": 1})
    dr = s.dr_program
    whole = estimate_exact(Population(s, 0, 30), dr.start_minute, dr.end_minute)
    part = estimate_exact(Population(s, 10, 12), dr.start_minute, dr.end_minute)
    assert np.array_equal(whole.baseline_kw[10:22], part.baseline_kw)
    assert np.array_equal(whole.expected_kw[10:22], part.expected_kw)
    same_type = estimate_exact(Population(_scenario(
        method="regression", regression={"days": 3}), 0, 30), dr.start_minute, dr.end_minute)
    assert not np.allclose(whole.baseline_kw, same_type.baseline_kw)
    days = prior_days_of(Population(s, 0, 30))
    assert np.array_equal(days.run(1, "saturday").pop.owns, days.pop.owns)


def test_day_of_shift_is_the_capped_mean_difference():
    rng = np.random.default_rng(5)
    base = rng.uniform(0.2, 2.0, size=(50, 30))
    readings = base * rng.uniform(0.5, 1.5, size=(50, 1)) + rng.normal(0, 0.05, (50, 30))
    shift = day_of_shift(readings, base, 0.2)
    difference = (readings - base).mean(axis=1)
    bound = 0.2 * base.mean(axis=1)
    assert np.allclose(shift, np.minimum(np.maximum(difference, -bound), bound), atol=1e-12)
    capped = np.abs(difference) > bound
    assert capped.any() and (~capped).any()
    assert np.allclose(np.abs(shift[capped]), bound[capped])
    assert np.array_equal(day_of_shift(base, base, 0.2), np.zeros(50))


@pytest.mark.parametrize("method", ["x_of_y", "same_day"])
def test_additive_adjustment_shifts_the_estimates_by_the_capped_difference(method):
    s = _scenario(method=method, error=0.1,
                  day_of_adjustment={"kind": "additive", "cap": 0.3})
    dr = s.dr_program
    pop = Population(s, 0, HOUSEHOLDS)
    sim = ChunkSimulator(pop)
    lo, notice = adjustment_minutes(s)
    before_kw = sim.run([]).load(lo, notice)
    readings = sim.run(program_events(s)).load(lo, notice)
    exact = estimate_exact(pop, dr.start_minute, dr.end_minute, sim)
    before = baseline_before_notice(pop, sim, before_kw)
    published = day_of_adjusted(exact, pop, readings, before)
    erred, erred_before = with_mv_error(exact, pop), with_mv_error(before, pop)
    shift = day_of_shift(readings, erred_before.baseline_kw, 0.3)
    assert np.allclose(published.baseline_kw, np.maximum(erred.baseline_kw + shift[:, None], 0))
    assert np.allclose(published.expected_kw, np.maximum(erred.expected_kw + shift[:, None], 0))
    assert (shift != 0).any()


def test_the_new_settings_at_their_defaults_change_nothing():
    from drsim.pipeline.passes import Chunk, simulate_chunk
    chunk = Chunk(0, 1, 60, 0)
    plain = _scenario(error=0.1, day_of_adjustment={"cap": 0.2})
    spelled = _scenario(error=0.1, x_of_y={"days": 10, "take": 10, "rank": "high"},
                        regression={"bin_minutes": 60, "days": 10, "other_day_type_days": 0},
                        day_of_adjustment={"cap": 0.2, "kind": "multiplicative"})
    additive = _scenario(error=0.1, day_of_adjustment={"cap": 0.2, "kind": "additive"})
    runs = [simulate_chunk(s, chunk, households=True) for s in (plain, spelled, additive)]
    for kind in ("baseline", "expected"):
        assert np.array_equal(runs[0].estimate_window_kw[kind], runs[1].estimate_window_kw[kind])
        assert not np.allclose(runs[0].estimate_window_kw[kind], runs[2].estimate_window_kw[kind])


def test_methods_of_the_same_chunk_share_its_prior_days(monkeypatch):
    runs = []
    original = ChunkSimulator.run
    monkeypatch.setattr(ChunkSimulator, "run",
                        lambda self, *a, **k: runs.append(self.plan.day_offset) or
                        original(self, *a, **k))
    for baseline in ({"method": "x_of_y", "x_of_y": {"days": 2, "take": 1}},
                     {"method": "x_of_y", "x_of_y": {"days": 2, "take": 2}},
                     {"method": "regression", "regression": {"days": 2}}):
        estimate_exact(Population(_scenario(**baseline), 50, 7), 1110, 1230)
    assert sorted(runs) == [-2000, -1000]
