"""γ[groupID, time] from the expected response (drsim.utility.threshold): the formulas, and the
utility's estimate of the share flagged against the share the expected pass realises."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from drsim.pipeline.passes import pass_schedules, plan_chunks, simulate_chunk
from drsim.scenario import load_scenario
from drsim.utility.baseline import estimate_exact
from drsim.utility.monitoring import MonitoringPlan, accumulated_kwh, meter_tier
from drsim.utility.threshold import Thresholds, expected_share, replica_flags, threshold
from drsim.utility.threshold_policy import ConstantRatio, ExpectedShareThreshold

ROOT = Path(__file__).resolve().parents[3]


def test_share_is_laplaces_rule_and_the_threshold_adds_z_standard_errors():
    flagged = np.array([[0, 40], [120, 0]])
    sizes = np.array([100, 1000])
    share = expected_share(flagged, 4, sizes)
    assert share.tolist() == [[1 / 402, 41 / 402], [121 / 4002, 1 / 4002]]
    gamma = threshold(share, sizes, 3.0, 4)
    se = np.sqrt(share * (1 - share) * 1.25 / sizes[:, None])
    assert np.allclose(gamma, share + 3 * se)
    assert (gamma > share).all()  # a share never seen still has a standard error
    assert np.array_equal(threshold(share, sizes, 0.0, 4), share)
    assert threshold(np.array([[0.9]]), np.array([2]), 10.0, 1).item() == 1.0


def test_thresholds_of_a_plan_constant_or_estimated():
    scenario = load_scenario(ROOT / "drsim/data/scenarios" / "quickstart.yaml")
    plan = MonitoringPlan.of(scenario)
    sizes = np.array([2000, 2000, 2000])
    k = len(plan.test_times)
    estimated = Thresholds.of(plan, sizes, np.full((3, k), 80))
    assert estimated.policy == ExpectedShareThreshold(z=3.0, replicas=4)
    assert np.allclose(estimated.share, 81 / 8002)
    assert estimated.table(2) == {(2, int(t)): pytest.approx(estimated.gamma[2, 0])
                                  for t in plan.test_times}
    with pytest.raises(ValueError, match="replicas"):
        Thresholds.of(plan, sizes)
    constant = MonitoringPlan.of(scenario.model_copy(update={
        "monitoring": scenario.monitoring.model_copy(update={"gamma_user": 0.04})}))
    fixed = Thresholds.of(constant, sizes)
    assert fixed.share is None and fixed.policy == ConstantRatio(0.04)
    assert (fixed.gamma == 0.04).all() and fixed.gamma.shape == (3, k)


@pytest.mark.parametrize("method", ["same_day", "model"])
def test_the_estimate_agrees_with_the_share_the_expected_pass_realises(method):
    """Replicas of the decisions (same_day: the same day; model: other days) estimate the
    share of households the meter query flags under the expected response; the expected
    pass realises one more sample of it. At every test time the two differ by at most 4
    standard errors of their difference."""
    base = load_scenario(ROOT / "drsim/data/scenarios" / "quickstart.yaml")
    scenario = base.model_copy(update={"baseline": base.baseline.model_copy(
        update={"method": method})})
    plan = MonitoringPlan.of(scenario)
    replicas = 4
    flagged = np.zeros(len(plan.test_times))
    realised = np.zeros(len(plan.test_times))
    households = 0
    for chunk in plan_chunks(scenario)[:4]:
        result = simulate_chunk(scenario, chunk, households=True,
                                schedules={"baseline": [],
                                           "expected": pass_schedules(scenario, 0)["expected"]})
        pop, lo = result.population, plan.t_start
        exact = estimate_exact(pop, lo, plan.t_end, result.simulator,
                               result.window_kw["baseline"])
        flagged += replica_flags(plan, pop, result.simulator, chunk.group, exact, replicas)
        m = meter_tier(plan, pop.ids, chunk.group,
                       accumulated_kwh(result.window_kw["expected"], lo, plan.test_times),
                       accumulated_kwh(exact.expected_kw, lo, plan.test_times))
        realised += m.outputs
        households += chunk.count
    share = expected_share(flagged[None, :], replicas, np.array([households]))[0]
    se = np.sqrt(share * (1 - share) * (1 + 1 / replicas) / households)
    z = (realised / households - share) / se
    assert flagged.sum() > 0 and realised.sum() > 0
    assert np.abs(z).max() <= 4.0, z
