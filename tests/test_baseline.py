"""The utility's estimates B and P̂ (drsim.baseline)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import drsim
from drsim.baseline import estimate
from drsim.population import Population
from drsim.sim import ChunkSimulator, program_events

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def scenario():
    return drsim.load_scenario(ROOT / "scenarios" / "quickstart.yaml")


def _with_method(scenario, method: str, days: int = 4):
    baseline = scenario.baseline.model_copy(update={"method": method, "prior_days": days})
    return scenario.model_copy(update={"baseline": baseline})


@pytest.fixture(scope="module")
def truth(scenario):
    """Simulated evening energy (kWh) of 2,000 households without and with the program."""
    pop = Population(scenario, 0, 2000)
    sim = ChunkSimulator(pop)
    w = slice(scenario.dr_program.start_minute, scenario.dr_program.end_minute)
    return (
        sim.run([]).load()[:, w].sum() / 60,
        sim.run(program_events(scenario)).load()[:, w].sum() / 60,
    )


def _window_kwh(scenario, method: str, days: int = 10):
    s = _with_method(scenario, method, days)
    dr = s.dr_program
    est = estimate(Population(s, 0, 2000), dr.start_minute, dr.end_minute)
    return est.baseline_kw.sum() / 60, est.expected_kw.sum() / 60


def test_estimates_match_the_simulated_aggregate(scenario, truth):
    """Over 2,000 households the model's expectation agrees with the mean of simulated
    prior days (both estimate the same expectation) and with the simulated day itself
    (one random day: a wider band)."""
    model = _window_kwh(scenario, "model")
    prior = _window_kwh(scenario, "prior_days")
    for est, mean_of_days, day in zip(model, prior, truth, strict=True):
        assert est == pytest.approx(mean_of_days, rel=0.05)
        assert est == pytest.approx(day, rel=0.10)
    assert model[1] < 0.95 * model[0] and prior[1] < 0.95 * prior[0]


def test_estimates_do_not_use_the_evaluated_day(scenario):
    """P̂ of a household is not its own simulated DR-day load (no common random numbers)."""
    dr = scenario.dr_program
    w = slice(dr.start_minute, dr.end_minute)
    pop = Population(scenario, 0, 300)
    day = ChunkSimulator(pop).run(program_events(scenario)).load()[:, w]
    for method in ("model", "prior_days"):
        est = estimate(Population(_with_method(scenario, method), 0, 300), w.start, w.stop)
        corr = np.corrcoef(est.expected_kw.sum(axis=1), day.sum(axis=1))[0, 1]
        assert not np.allclose(est.expected_kw, day)
        assert corr < 0.9  # they share the household's appliances and EV, not its draws


def test_estimates_are_the_same_for_any_chunking(scenario):
    whole = estimate(Population(scenario, 10, 50)).expected_kw
    part = estimate(Population(scenario, 30, 20)).expected_kw
    assert np.array_equal(whole[20:40], part)


def test_follow_through_lowers_the_expected_response(scenario):
    """P̂ = (1 − θ)B + θF: a household with θ_o = 0 is expected at its baseline."""
    dr = scenario.dr_program
    pop = Population(scenario, 0, 500)
    est = estimate(pop, dr.start_minute, dr.end_minute)
    zero = pop.follow_through == 0
    assert zero.any() and (~zero).any()
    assert np.allclose(est.expected_kw[zero], est.baseline_kw[zero])
    assert (est.expected_kw[~zero].sum(axis=1) <= est.baseline_kw[~zero].sum(axis=1) + 1e-9).all()


def test_bad_window_is_an_error(scenario):
    with pytest.raises(ValueError, match="outside the day"):
        estimate(Population(scenario, 0, 5), 1000, 2000)
