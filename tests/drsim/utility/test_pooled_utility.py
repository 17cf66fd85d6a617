"""The pooled utility test of ``aggregate`` (drsim.utility.pooled_rule, pooled_tier): one
CUSUM of the groups' summed excess, standardised by the root of their summed variances."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import drsim
from drsim.utility.aggregate_method import Aggregate, cusum, meter_sums
from drsim.utility.aggregate_tier import group_statistic
from drsim.utility.group_and_utility_tiers import utility_tier
from drsim.utility.known_cv_reference import KnownCv
from drsim.utility.method_registry import method_of
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan
from drsim.utility.pooled_rule import PooledCusum, pooled_statistic
from drsim.utility.pooled_tier import leader_statistics, pooled_tier
from drsim.utility.utility_rules import run_utility
from tests.drsim.pipeline.test_pipeline import small


def _plan(k: float = 1.0, h: float = 4.0, m_utility: int = 3, groups: int = 3
          ) -> MonitoringPlan:
    """Table 6.2's program and tests (18:30-20:30, t_wait 20, δ 5) with the pooled rule."""
    method = Aggregate(k=1.0, h=4.0, reference=KnownCv(cv=0.1),
                       utility=PooledCusum(k=k, h=h))
    plan = MonitoringPlan(1110, 1230, 1130, 5, 3, 3, m_utility, 0.5, 0.4, 1, 15, groups)
    return replace(plan, method=method, queries=plan.queries + tuple(method.queries().items()))


def test_the_pooled_statistic_sums_excesses_and_variances():
    rng = np.random.default_rng(11)
    excess, variance = rng.normal(0, 3, (4, 20)), rng.uniform(1, 9, (4, 20))
    s = pooled_statistic(excess, variance, 0.5)
    x = excess.sum(axis=0) / np.sqrt(variance.sum(axis=0))
    assert np.allclose(s["x"], x)
    assert np.allclose(s["statistic"], cusum(x, 0.5))
    # three groups each 1.5 standard errors above: alone under k + h/n, pooled 1.5√3
    alone = pooled_statistic(np.full((1, 4), 1.5), np.ones((1, 4)), 1.0)["statistic"]
    pooled = pooled_statistic(np.full((3, 4), 1.5), np.ones((3, 4)), 1.0)["statistic"]
    assert alone.max() < 4.0 < pooled.max()


@pytest.mark.parametrize("m_utility", [1, 3])
def test_the_utility_predicts_when_the_summed_statistic_crosses_h_never_before(m_utility):
    """A deficit from the fourth test on, in three groups: no alert before the first test
    with S_j > h, the prediction m_utility ticks after it."""
    plan = _plan(m_utility=m_utility)
    k = len(plan.test_times)
    rng = np.random.default_rng(2)
    excess = rng.normal(0.0, 0.5, (3, k))
    excess[:, 3:] += 2.0
    variance = np.ones((3, k))
    stat = pooled_statistic(excess, variance, 1.0)["statistic"]
    crossed = plan.test_times[stat > 4.0]
    assert len(crossed) and (stat[:3] <= 4.0).all(), "the test needs a late crossing"
    u = pooled_tier(plan, excess, variance)
    assert int(u.alerts["time"].min()) == crossed[0]
    assert u.t_nc == crossed[0] + m_utility
    # and none where every group is as expected
    quiet = pooled_tier(plan, np.zeros((3, k)), variance)
    assert quiet.t_nc == NOT_LATCHED and not len(quiet.alerts)


def test_the_leaders_statistics_are_the_same_in_any_blocks():
    """Each leader's excess and variance come from its blocks' whole µkWh and Wh² sums: two
    splits of the households into blocks give the same statistic, value for value."""
    plan = _plan()
    k = len(plan.test_times)
    rng = np.random.default_rng(8)
    excess, variance = np.zeros((3, k)), np.zeros((3, k))
    again = excess.copy(), variance.copy()
    for g in range(3):
        expected = np.cumsum(rng.uniform(0.05, 0.3, (60, k)), axis=1)
        used = expected * rng.lognormal(0.03 * g, 0.1, (60, 1))
        for split, (e, v) in (((slice(0, 60),), (excess, variance)),
                              ((slice(0, 23), slice(23, 41), slice(41, 60)), again)):
            sums = pd.concat([meter_sums(np.arange(60)[b], g, plan.test_times, used[b],
                                         expected[b], plan.method.reference).events
                              for b in split])
            stat = group_statistic(plan, plan.method, sums, g)
            e[g], v[g] = stat["load"] - stat["expected"], stat["se"] ** 2
    assert np.array_equal(excess, again[0]) and np.array_equal(variance, again[1])
    a, b = pooled_tier(plan, excess, variance), pooled_tier(plan, *again)
    assert a.t_nc == b.t_nc and a.alerts.equals(b.alerts)


def test_the_leaders_rows_are_read_per_group_and_test():
    rows = pd.DataFrame({"group": [0, 2, 2, 0], "kind": ["excess", "excess", "variance", "alert"],
                         "time": [1130, 1140, 1140, 1130], "load": [1.0, 2.0, 3.0, 9.0]})
    excess, variance = leader_statistics(rows, 3, np.array([1130, 1135, 1140]))
    assert excess.tolist() == [[1.0, 0, 0], [0, 0, 0], [0, 0, 2.0]]
    assert variance.tolist() == [[0, 0, 0], [0, 0, 0], [0, 0, 3.0]]


def test_the_groups_rule_is_listing_6_3():
    plan = replace(_plan(), method=Aggregate())
    latches, loads = {0: 1136, 1: NOT_LATCHED, 2: 1150}, {0: 2.0, 2: 3.0}
    a, b = run_utility(plan, latches, loads, pd.DataFrame()), utility_tier(plan, latches, loads)
    assert a.t_nc == b.t_nc != NOT_LATCHED and a.alerts.equals(b.alerts)


def test_the_pooled_rule_reads_the_groups_k_and_h_unless_given():
    s = small(200, method="aggregate", aggregate={"k": 1.2, "h": 3.5, "utility": "pooled"})
    assert method_of(s).utility_rule() == PooledCusum(k=1.2, h=3.5)
    s = small(200, method="aggregate", aggregate={"k": 1.2, "utility": "pooled",
                                                   "utility_k": 2.0})
    assert method_of(s).utility_rule() == PooledCusum(k=2.0, h=5.0)
    assert method_of(small(200, method="aggregate")).utility_rule().name == "groups"


def test_the_pooled_loop_is_the_same_for_any_chunking():
    """A run of 400 households with the pooled utility: the expected pass raises no
    prediction, the traditional pass does, the same for chunks of 100 and of 67; a group
    latched before t_nc does not slow its meters: the deficit reads every group up to
    t_nc."""
    s = small(400, method="aggregate", aggregate={"cv": 0.1, "utility": "pooled"})
    summaries = [drsim.run(s.model_copy(update={"chunk_size": size}),
                           backend="serial").summary for size in (100, 67)]
    first = summaries[0]
    assert first["prediction"]["predicted"], "the test needs a prediction"
    assert first["prediction"]["expected_pass_noncompliance_time"] is None
    assert first["monitoring"]["method_settings"]["utility"] == "pooled"
    t_nc = first["prediction"]["utility_noncompliance_time"]
    latched = [t for t in first["prediction"]["group_noncompliance_times"].values() if t]
    assert min(latched) < t_nc, "the test needs a group latched before the prediction"
    assert set(first["deficit_at_prediction"]["readings_until"]) == {t_nc}
    for key in ("prediction", "deficit_at_prediction", "cost", "second_event",
                "reduction_share_of_expected"):
        assert summaries[0][key] == summaries[1][key], key
