"""The incentive module of the second DR event (drsim/utility/incentive.py; dissertation
Eq. 6.5-6.8)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from drsim.household.population import Population
from drsim.scenario import Incentive, ScenarioError, load_scenario, scenario_from_dict
from drsim.utility import lottery, participants
from drsim.utility.incentive import (
    IncentiveResult,
    new_follow_through,
    new_incentive,
    plan_second_event,
)
from drsim.utility.lottery import (
    Lottery,
    full_participation_dominates,
    largest_lottery,
    lottery_winners,
    lottery_within_budget,
    monitoring_cost,
    penalty,
    penalty_bound,
    saved_cost,
    strategy_payoffs,
)
from drsim.utility.participants import ParticipantSums, assign_mappings, household_mappings

SCENARIOS = Path(__file__).resolve().parents[3] / "drsim/data/scenarios"
U4 = [1.05, 1.10, 1.15, 1.20]

# Hand-computed example: θ̄_o = 0.5, θ̄_red = 0.3, β = 1.8, λ_o = 10
#   β·θ̄_o − θ̄_red = 0.9 − 0.3 = 0.6;  0.6 / (1 − θ̄_o) = 1.2
#   Eq. 6.7: λ_new = 10 + (u − 1)·10·1.2  →  u = 1.05: 10.6, 1.10: 11.2, 1.15: 11.8, 1.20: 12.4
#   Eq. 6.8: θ_new = θ_red + 1.2·(1 − θ_o)
MEAN_O, MEAN_RED, BETA, LAMBDA_O = 0.5, 0.3, 1.8, 10.0


# --- Eq. 6.7 --------------------------------------------------------------------------------


def test_eq_6_7_hand_computed() -> None:
    lam = new_incentive(U4, LAMBDA_O, MEAN_O, MEAN_RED, BETA)
    np.testing.assert_allclose(lam, [10.6, 11.2, 11.8, 12.4], rtol=1e-12)
    assert isinstance(new_incentive(1.2, LAMBDA_O, MEAN_O, MEAN_RED, BETA), float)
    assert new_incentive(1.2, LAMBDA_O, MEAN_O, MEAN_RED, BETA) == pytest.approx(12.4)


def test_eq_6_7_paper_values() -> None:
    # §6.3.2: θ̄_o = 0.45 (survey), θ̄_red = 0.6·θ̄_o, β = 1.8, λ_o = 1 (abstract unit):
    # 0.81 − 0.27 = 0.54; 0.54/0.55 = 0.981818...; λ_new = 1 + (u − 1)·0.981818...
    lam = new_incentive(U4, 1.0, 0.45, 0.27, 1.8)
    expected = [1 + (u - 1) * 0.54 / 0.55 for u in U4]
    np.testing.assert_allclose(lam, expected, rtol=1e-12)
    assert lam[-1] == pytest.approx(1.1963636363636)


def test_eq_6_7_without_deficit_or_with_u_1_keeps_lambda_o() -> None:
    assert new_incentive(1.0, LAMBDA_O, MEAN_O, MEAN_RED, BETA) == LAMBDA_O
    assert new_incentive(1.2, LAMBDA_O, 0.5, 0.5, 1.0) == LAMBDA_O  # β·θ̄_o = θ̄_red


# --- Eq. 6.8 and Figure 6.9 -----------------------------------------------------------------


def test_eq_6_8_hand_computed_inside_the_region() -> None:
    theta_o = np.array([0.5, 0.75, 0.4])
    theta_red = np.array([0.3, 0.45, 0.2])
    got = new_follow_through(theta_o, theta_red, MEAN_O, MEAN_RED, BETA)
    # 0.3 + 1.2·0.5, 0.45 + 1.2·0.25, 0.2 + 1.2·0.6
    np.testing.assert_allclose(got, [0.9, 0.75, 0.92], rtol=1e-12)


def test_eq_6_8_uses_household_theta_and_mean_theta() -> None:
    # the same household gains less when it was expected to respond more (1 − θ_o), and the
    # gain scales with the population deficit β·θ̄_o − θ̄_red, not the household's own
    low = new_follow_through([0.6], [0.1], MEAN_O, MEAN_RED, BETA, 0.0, 1.0)[0]
    high = new_follow_through([0.9], [0.1], MEAN_O, MEAN_RED, BETA, 0.0, 1.0)[0]
    assert low == pytest.approx(0.1 + 1.2 * 0.4) and high == pytest.approx(0.1 + 1.2 * 0.1)
    # θ̄_red = 0.6: β·θ̄_o − θ̄_red = 0.3, 0.3 / 0.5 = 0.6
    smaller_deficit = new_follow_through([0.6], [0.1], MEAN_O, 0.6, BETA, 0.0, 1.0)[0]
    assert smaller_deficit == pytest.approx(0.1 + 0.6 * 0.4)


def test_eq_6_8_mean_is_beta_theta_o_when_nothing_is_clamped() -> None:
    gen = np.random.default_rng(3)
    theta_o = gen.uniform(0.2, 0.6, 500)
    theta_red = theta_o * 0.6
    got = new_follow_through(theta_o, theta_red, theta_o.mean(), theta_red.mean(), 1.4,
                             0.0, 1.0)
    assert got.max() < 1.0  # no clamping in this example
    assert got.mean() == pytest.approx(1.4 * theta_o.mean(), rel=1e-12)


def test_eq_6_8_clamped_to_the_hatched_region_and_unit_interval() -> None:
    theta_o = np.array([0.0, 0.25, 1.0, 0.97, 0.1, 0.3])
    theta_red = np.array([0.0, 0.15, 0.6, 0.97, 0.04, 0.05])
    got = new_follow_through(theta_o, theta_red, MEAN_O, MEAN_RED, BETA, lower=0.05,
                             upper=0.95)
    assert got[0] == 0.0                      # did not respond at all: no gain
    assert got[1] == 0.95                     # 0.15 + 0.9 = 1.05, capped at the upper bound
    assert got[2] == pytest.approx(0.6)       # θ_o = 1: Eq. 6.8 gives no gain
    assert got[3] == 0.97                     # already above the upper bound: keeps θ_red
    assert got[4] == 0.04                     # below the lower bound: keeps θ_red
    assert got[5] == pytest.approx(0.05 + 1.2 * 0.7)  # at the lower bound: targeted
    uncapped = new_follow_through(theta_o, theta_red, MEAN_O, MEAN_RED, BETA, 0.0, 1.0)
    assert uncapped[1] == 1.0                 # clamped to [0, 1]
    assert ((got >= theta_red) & (got <= 1.0)).all()


# --- the four mappings ------------------------------------------------------------------------


def test_mapping_assignment_is_deterministic_and_independent_of_chunking() -> None:
    ids = np.arange(1000)
    whole = assign_mappings(7, ids, U4)
    for cuts in ([0, 137, 500, 1000], [0, 1, 2, 999, 1000], list(range(0, 1001, 100))):
        parts = [assign_mappings(7, ids[a:b], U4) for a, b in zip(cuts, cuts[1:], strict=False)]
        np.testing.assert_array_equal(np.concatenate(parts), whole)
    np.testing.assert_array_equal(assign_mappings(7, ids[::-1], U4), whole[::-1])
    np.testing.assert_array_equal(assign_mappings(7, ids, U4), whole)
    assert not np.array_equal(assign_mappings(8, ids, U4), whole)
    values, counts = np.unique(whole, return_counts=True)
    assert list(values) == U4 and counts.min() > 200  # about 250 each


def test_fixed_u_overrides_the_draw() -> None:
    ids = np.arange(10)
    fixed = np.array([np.nan] * 5 + [1.3] * 5)
    got = assign_mappings(1, ids, U4, fixed)
    np.testing.assert_array_equal(got[5:], 1.3)
    np.testing.assert_array_equal(got[:5], assign_mappings(1, ids[:5], U4))


def test_household_mappings_use_group_incentive_u() -> None:
    s = scenario_from_dict({"name": "t", "seed": 5, "households": 1000, "groups": [
        {"name": "a", "size": 400, "incentive_u": 1.15}, {"name": "b", "size": 600}]})
    ids = np.arange(1000)
    u = household_mappings(s, ids)
    assert (u[:400] == 1.15).all()
    assert set(np.unique(u[400:])) == set(U4)
    chunks = np.concatenate([household_mappings(s, ids[a:a + 250]) for a in range(0, 1000, 250)])
    np.testing.assert_array_equal(chunks, u)
    paper = load_scenario(SCENARIOS / "paper_100k.yaml")
    first_of_group = np.array([0, 10_000, 30_000, 35_000, 60_000])
    np.testing.assert_array_equal(household_mappings(paper, first_of_group),
                                  [1.05, 1.10, 1.15, 1.20, 1.10])


# --- participant sums -------------------------------------------------------------------------


def test_participant_sums_are_exact_and_independent_of_chunking() -> None:
    gen = np.random.default_rng(11)
    theta_o = gen.choice([0.0, 0.25, 0.5, 0.75, 1.0], 1000)
    theta_red = theta_o * gen.choice([0.5, 0.9], 1000)
    theta_new = gen.uniform(0, 1, 1000)
    u = assign_mappings(2, np.arange(1000), U4)
    whole = ParticipantSums.of(theta_o, theta_red, u, theta_new)
    for size in (1, 7, 100, 333):
        total = ParticipantSums()
        for a in range(0, 1000, size):
            s = slice(a, a + size)
            total = total + ParticipantSums.of(theta_o[s], theta_red[s], u[s], theta_new[s])
        assert total == whole
    assert whole.count == 1000
    assert whole.theta_o_mean == pytest.approx(theta_o.mean(), rel=1e-14)
    assert whole.theta_red_mean == pytest.approx(theta_red.mean(), rel=1e-14)
    assert whole.theta_new_mean == pytest.approx(theta_new.mean(), rel=1e-14)
    assert sum(whole.mapping_counts.values()) == 1000
    assert ParticipantSums.of(theta_o, theta_red, u).theta_new_mean is None


# --- Eq. 6.5: the lottery -------------------------------------------------------------------


def test_eq_6_5_largest_lottery_hand_computed() -> None:
    # monitoring 100 + κ·0.5 <= 350  →  κ <= 500  →  p_inc = 500/1000
    lot = largest_lottery(1000, 0.5, 100.0, 350.0)
    assert lot == Lottery(p_inc=0.5, kappa=500, feasible=True)
    assert lottery_within_budget(500, 0.5, 100.0, 350.0)
    assert not lottery_within_budget(501, 0.5, 100.0, 350.0)
    assert largest_lottery(1000, 0.5, 100.0, 1e9) == Lottery(1.0, 1000, True)  # p_inc <= 1
    assert largest_lottery(1000, 0.0, 100.0, 100.0) == Lottery(1.0, 1000, True)


@pytest.mark.parametrize("seed", range(20))
def test_eq_6_5_kappa_is_the_largest_within_budget(seed: int) -> None:
    gen = np.random.default_rng(seed)
    n = int(gen.integers(1, 10_000))
    extra, mon = float(gen.uniform(0.001, 2)), float(gen.uniform(0, 50))
    saved = float(gen.uniform(mon, mon + n * extra * 1.2))
    lot = largest_lottery(n, extra, mon, saved)
    assert lot.kappa == 0 or lottery_within_budget(lot.kappa, extra, mon, saved)
    assert lot.kappa == n or not lottery_within_budget(lot.kappa + 1, extra, mon, saved)
    assert lot.p_inc * n == pytest.approx(lot.kappa)


def test_eq_6_5_infeasible_lottery() -> None:
    # monitoring alone exceeds C_saved
    assert largest_lottery(1000, 0.5, 400.0, 350.0) == Lottery(0.0, 0, False)
    # budget left, but less than one paid participant
    assert largest_lottery(1000, 0.5, 349.8, 350.0) == Lottery(0.0, 0, False)
    s = _hand_sums()
    result = plan_second_event(Incentive(), LAMBDA_O, s, monitoring_cost=10.0, c_saved=5.0)
    assert not result.scheduled and result.p_inc == 0.0 and result.kappa == 0
    assert result.second_event_cost == 0.0 and result.lottery_cost == 0.0
    assert "infeasible" in result.note
    assert result.c_nc == pytest.approx(0.05 * LAMBDA_O)  # p_inc = 0: the margin alone


def test_monitoring_and_saved_cost() -> None:
    assert monitoring_cost(1_000_000, 2_000_000, cost_per_transmitted_event=1e-5,
                           cost_per_processed_event=1e-6) == pytest.approx(12.0)
    assert saved_cost(35_390.0, 0.25) == pytest.approx(8847.5)


def test_lottery_winners_only_compliant_and_independent_of_chunking() -> None:
    ids = np.arange(1000)
    compliant = (ids % 3) != 0
    whole = lottery_winners(4, ids, 0.4, compliant)
    parts = np.concatenate([lottery_winners(4, ids[a:a + 300], 0.4, compliant[a:a + 300])
                            for a in range(0, 1000, 300)])
    np.testing.assert_array_equal(parts, whole)
    assert not whole[~compliant].any()
    assert 0.33 < whole[compliant].mean() < 0.47
    assert lottery_winners(4, ids, 1.0, compliant).sum() == compliant.sum()
    assert not lottery_winners(4, ids, 0.0, compliant).any()


# --- Eq. 6.6 and Figure 6.8 -----------------------------------------------------------------


def test_eq_6_6_penalty_hand_computed() -> None:
    assert penalty_bound(0.9, [11.2, 12.4], 10.0) == pytest.approx(0.9 * 12.4 - 10.0)
    assert penalty(0.9, [11.2, 12.4], 10.0, 0.05) == pytest.approx(1.16 + 0.5)
    assert penalty(0.5, [11.2, 12.4], 10.0, 0.05) == pytest.approx(0.5)  # bound < 0


@pytest.mark.parametrize("p_inc", [0.0, 0.3, 0.81, 0.9, 1.0])
def test_dominant_strategy_holds_with_c_nc_and_fails_just_below(p_inc: float) -> None:
    lam_new = [10.6, 11.2, 11.8, 12.4]
    c_nc = penalty(p_inc, lam_new, LAMBDA_O, 0.05)
    assert full_participation_dominates(LAMBDA_O, lam_new, p_inc, c_nc)
    bound = penalty_bound(p_inc, lam_new, LAMBDA_O)
    below = bound - 1e-9 * max(1.0, abs(bound))
    assert not full_participation_dominates(LAMBDA_O, lam_new, p_inc, below)
    # waiting for the second event (Strategy-2, largest λ_new) then beats Strategy-1
    s1, s2, _ = strategy_payoffs(LAMBDA_O, lam_new, p_inc, below)
    assert s2.max() > s1


def test_dominant_strategy_at_the_bound_fails_eq_6_6_is_strict() -> None:
    # p_inc·λ_new − λ_o = 0.5·3 − 1 = 0.5 (exact in binary)
    assert penalty_bound(0.5, 3.0, 1.0) == 0.5
    assert not full_participation_dominates(1.0, 3.0, 0.5, 0.5)
    assert full_participation_dominates(1.0, 3.0, 0.5, 0.5 + 1e-12)


# --- the plan -------------------------------------------------------------------------------


def _hand_sums() -> ParticipantSums:
    # θ̄_o = 0.5, θ̄_red = 0.3; two households per mapping 1.1 and 1.2
    return ParticipantSums.of([0.25, 0.5, 0.75, 0.5], [0.15, 0.3, 0.45, 0.3],
                              [1.1, 1.1, 1.2, 1.2])


def test_plan_second_event_hand_computed() -> None:
    # λ_new: 1.1 → 11.2, 1.2 → 12.4; extra per winner = (2·1.2 + 2·2.4)/4 = 1.8
    # Eq. 6.5: 1 + κ·1.8 <= 5.5 → κ = 2, p_inc = 0.5; Eq. 6.6: 0.5·12.4 − 10 < 0 → C_nc = 0.5
    r = plan_second_event(Incentive(), LAMBDA_O, _hand_sums(), monitoring_cost=1.0, c_saved=5.5)
    assert r.scheduled and r.participants == 4
    assert r.lambda_new == pytest.approx({1.1: 11.2, 1.2: 12.4})
    assert (r.theta_o_mean, r.theta_red_mean) == pytest.approx((0.5, 0.3))
    assert r.extra_incentive_mean == pytest.approx(1.8)
    assert (r.p_inc, r.kappa) == (0.5, 2)
    assert r.lottery_cost == pytest.approx(3.6) and r.second_event_cost == pytest.approx(4.6)
    assert r.c_nc == pytest.approx(0.5) and r.penalty_bound == pytest.approx(-3.8)
    assert full_participation_dominates(r.lambda_o, list(r.lambda_new.values()), r.p_inc,
                                        r.c_nc)
    big = plan_second_event(Incentive(), LAMBDA_O, _hand_sums(), monitoring_cost=1.0,
                            c_saved=100.0)
    assert (big.p_inc, big.kappa) == (1.0, 4)
    assert big.c_nc == pytest.approx(12.4 - 10 + 0.5)


def test_plan_uses_the_follow_through_the_utility_observed() -> None:
    """θ̄_red given (the utility's estimate from the meter data) replaces the participants'
    simulated mean in Eq. 6.7; at or above β·θ̄_o there is no deficit and no event."""
    # λ_new = 10 + (u − 1)·10/0.5·(1.8·0.5 − 0.5): 1.1 → 10.8, 1.2 → 11.6
    r = plan_second_event(Incentive(), LAMBDA_O, _hand_sums(), monitoring_cost=1.0,
                          c_saved=5.5, theta_red_mean=0.5)
    assert r.scheduled
    assert (r.theta_red_mean, r.theta_red_mean_simulated) == pytest.approx((0.5, 0.3))
    assert r.lambda_new == pytest.approx({1.1: 10.8, 1.2: 11.6})
    assert r.extra_incentive_mean == pytest.approx(1.2)
    none = plan_second_event(Incentive(), LAMBDA_O, _hand_sums(), monitoring_cost=1.0,
                             c_saved=5.5, theta_red_mean=0.95)
    assert not none.scheduled and "no deficit" in none.note
    assert none.lambda_new == {1.1: LAMBDA_O, 1.2: LAMBDA_O}
    assert (none.p_inc, none.kappa, none.second_event_cost) == (0.0, 0, 0.0)
    with pytest.raises(ValueError, match="theta_red_mean"):
        plan_second_event(Incentive(), LAMBDA_O, _hand_sums(), monitoring_cost=1.0,
                          c_saved=5.5, theta_red_mean=1.5)


def test_plan_response_lookup_payout_and_summary() -> None:
    r = plan_second_event(Incentive(), LAMBDA_O, _hand_sums(), monitoring_cost=1.0, c_saved=5.5)
    assert r.theta_new_mean is None
    theta_o = np.array([0.25, 0.5, 0.75, 0.5])
    theta_red = np.array([0.15, 0.3, 0.45, 0.3])
    theta_new = r.new_follow_through(theta_o, theta_red)
    np.testing.assert_allclose(theta_new, [0.95, 0.9, 0.75, 0.9])
    u = np.array([1.1, 1.1, 1.2, 1.2])
    done = r.with_response(ParticipantSums.of(theta_o, theta_red, u, theta_new))
    assert done.theta_new_mean == pytest.approx(3.5 / 4)
    np.testing.assert_allclose(r.new_incentive_of(u), [11.2, 11.2, 12.4, 12.4])
    counts = r.winner_counts(u, np.array([True, False, True, True]))
    assert counts == {1.1: 1, 1.2: 2}
    assert r.realised_lottery_cost_of(counts) == pytest.approx(1.2 + 2 * 2.4)
    data = json.loads(json.dumps(done.as_dict()))
    assert data["lambda_new"] == pytest.approx({"1.1": 11.2, "1.2": 12.4})
    assert data["mapping_households"] == {"1.1": 2, "1.2": 2}
    for key in ("p_inc", "kappa", "c_nc", "second_event_cost", "theta_new_mean", "currency"):
        assert key in data
    assert data["currency"] == "unit"
    assert isinstance(done, IncentiveResult)


def test_paper_scenario_plan_small() -> None:
    """The paper scenario scaled to 2,000 households: the plan is consistent end to end."""
    s = load_scenario(SCENARIOS / "paper_100k.yaml").with_households(2000)
    total = ParticipantSums()
    chunks = []
    for first in range(0, 2000, 500):
        pop = Population(s, first, 500)
        theta_red = pop.follow_through * (1 - pop.follow_through_drop)
        u = household_mappings(s, pop.ids)
        chunks.append((pop.follow_through, theta_red, u))
        total = total + ParticipantSums.of(pop.follow_through, theta_red, u)
    assert total.theta_o_mean == pytest.approx(0.45, abs=0.03)
    assert total.theta_red_mean / total.theta_o_mean == pytest.approx(0.6, abs=0.05)
    mon = monitoring_cost(2000 * 120, 2000 * 240,
                          cost_per_transmitted_event=s.incentive.cost_per_transmitted_event,
                          cost_per_processed_event=s.incentive.cost_per_processed_event)
    c_saved = saved_cost(0.02 * 35_390, s.incentive.saved_cost_per_kwh)  # 2 % of the deficit
    r = plan_second_event(s.incentive, s.dr_program.incentive, total, monitoring_cost=mon,
                          c_saved=c_saved)
    assert sorted(r.lambda_new) == U4
    assert all(lam > s.dr_program.incentive for lam in r.lambda_new.values())
    assert 0.0 < r.p_inc < 1.0 and r.kappa == round(r.p_inc * 2000)
    assert lottery_within_budget(r.kappa, r.extra_incentive_mean, mon, c_saved)
    assert full_participation_dominates(r.lambda_o, list(r.lambda_new.values()), r.p_inc,
                                        r.c_nc)
    response = ParticipantSums()
    for theta_o, theta_red, u in chunks:
        response = response + ParticipantSums.of(theta_o, theta_red, u,
                                                 r.new_follow_through(theta_o, theta_red))
    done = r.with_response(response)
    assert done.theta_red_mean < done.theta_new_mean <= s.incentive.beta * done.theta_o_mean


# --- scenario fields ------------------------------------------------------------------------


def test_incentive_defaults_and_region_validation() -> None:
    base = {"name": "t", "seed": 1, "households": 10, "groups": [{"name": "a", "size": 10}]}
    i = scenario_from_dict(base).incentive
    assert (i.currency, i.penalty_margin) == ("unit", 0.05)
    assert (i.target_min_follow_through, i.target_max_follow_through) == (0.05, 0.95)
    assert i.cost_per_transmitted_event >= 0 and i.saved_cost_per_kwh >= 0
    with pytest.raises(ScenarioError, match="incentive.target_min_follow_through"):
        scenario_from_dict({**base, "incentive": {"target_min_follow_through": 0.9,
                                                  "target_max_follow_through": 0.5}})
    with pytest.raises(ScenarioError, match="incentive.penalty_margin"):
        scenario_from_dict({**base, "incentive": {"penalty_margin": 0}})


# --- bad inputs -----------------------------------------------------------------------------


@pytest.mark.parametrize(("call", "message"), [
    (lambda: new_incentive(0.9, 10, 0.5, 0.3, 1.8), "u: mapping factors u must be"),
    (lambda: new_incentive([1.1, math.nan], 10, 0.5, 0.3, 1.8), "u: mapping factors"),
    (lambda: new_incentive(1.1, 0, 0.5, 0.3, 1.8), "lambda_o: expected a number > 0"),
    (lambda: new_incentive(1.1, 10, 1.0, 0.3, 1.8), r"theta_o_mean: expected a number in \[0, 1\)"),
    (lambda: new_incentive(1.1, 10, 0.5, 1.3, 1.8), "theta_red_mean"),
    (lambda: new_incentive(1.1, 10, 0.5, 0.3, -1), "beta: expected a number > 0"),
    (lambda: new_incentive(1.1, 10, 0.3, 0.5, 1.2), "no second event is needed"),
    (lambda: new_incentive(1.1, "x", 0.5, 0.3, 1.8), "lambda_o: expected a number"),
    (lambda: new_follow_through([0.5, 1.2], [0.3, 0.3], 0.5, 0.3, 1.8), "theta_o: follow-through"),
    (lambda: new_follow_through([0.5], [math.nan], 0.5, 0.3, 1.8), "theta_red: follow-through"),
    (lambda: new_follow_through([0.5, 0.5], [0.3], 0.5, 0.3, 1.8), "same shape"),
    (lambda: new_follow_through([0.5], [0.3], 0.5, 0.3, 1.8, 0.6, 0.4), "lower .* below upper"),
    (lambda: assign_mappings(1, np.arange(3), []), "at least one mapping"),
    (lambda: assign_mappings(1, np.arange(3), [1.1, 0.5]), "u_mappings"),
    (lambda: assign_mappings(1, np.array([0.5, 1.0]), U4), "integer ids"),
    (lambda: assign_mappings(1, np.array([-1, 2]), U4), "ids must be >= 0"),
    (lambda: assign_mappings(1, np.arange(2), U4, [0.5, np.nan]), "fixed_u"),
    (lambda: largest_lottery(0, 0.5, 1, 10), "at least 1 participant"),
    (lambda: largest_lottery(10.5, 0.5, 1, 10), "participants: expected an integer"),
    (lambda: largest_lottery(10, -0.5, 1, 10), "extra_incentive"),
    (lambda: largest_lottery(10, 0.5, -1, 10), "monitoring"),
    (lambda: largest_lottery(10, 0.5, 1, math.inf), "c_saved: expected a finite number"),
    (lambda: lottery_winners(1, np.arange(3), 1.5, np.ones(3, bool)), r"p_inc: .*\[0, 1\]"),
    (lambda: lottery_winners(1, np.arange(3), 0.5, np.ones(3)), "compliant: expected a bool"),
    (lambda: penalty(0.5, [11.0], 10.0, 0.0), r"margin: expected a number in \(0, 1\]"),
    (lambda: penalty_bound(0.5, [], 10.0), "lambda_new"),
    (lambda: full_participation_dominates(1.0, 3.0, 0.5, math.nan), "c_nc"),
    (lambda: monitoring_cost(-1, 0, cost_per_transmitted_event=1, cost_per_processed_event=1),
     "transmitted_events"),
    (lambda: saved_cost(-3.0, 0.25), "kwh"),
    (lambda: ParticipantSums.of([0.5], [0.3, 0.2], [1.1]), "same shape"),
    (lambda: ParticipantSums().theta_o_mean, "no participants"),
    (lambda: plan_second_event(Incentive(), 1.0, ParticipantSums(), monitoring_cost=0,
                               c_saved=1), "no households"),
])
def test_bad_inputs_raise_clear_value_errors(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_plan_lookups_reject_unplanned_mappings() -> None:
    r = plan_second_event(Incentive(), LAMBDA_O, _hand_sums(), monitoring_cost=1.0, c_saved=5.5)
    with pytest.raises(ValueError, match="not a planned mapping"):
        r.new_incentive_of([1.1, 1.15])
    with pytest.raises(ValueError, match="same shape"):
        r.winner_counts([1.1], [True, False])
    with pytest.raises(ValueError, match="hold no θ_new"):
        r.with_response(_hand_sums())
    assert participants.MAPPING_STREAM != lottery.LOTTERY_STREAM
