"""The policies of monitoring.gamma_user (drsim.utility.threshold_policy): which one a setting
picks, their thresholds on small inputs worked out by hand, and how each describes itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from drsim.scenario import ExpectedShare, Scenario
from drsim.utility.monitoring import MonitoringPlan
from drsim.utility.threshold_policy import ConstantRatio, ExpectedShareThreshold, threshold_policy


def test_the_setting_picks_the_policy():
    constant = threshold_policy(0.05)
    assert constant == ConstantRatio(0.05)
    assert not constant.needs_replicas and constant.replicas == 0
    assert constant.readings_refusal is None
    expected = threshold_policy(ExpectedShare(method="expected", z=2.5, replicas=6))
    assert expected == ExpectedShareThreshold(z=2.5, replicas=6)
    assert expected.needs_replicas and expected.replicas == 6
    assert "readings do not show" in expected.readings_refusal


def test_a_constant_ratio_is_the_same_everywhere_and_estimates_no_share():
    gamma, share = ConstantRatio(0.05).thresholds(np.array([2, 3]), 4)
    assert gamma.tolist() == [[0.05] * 4, [0.05] * 4] and share is None
    assert ConstantRatio(0.3).thresholds(np.array([2]), 0)[0].shape == (1, 0)


def test_the_expected_share_adds_z_standard_errors_to_laplaces_rule():
    # R = 1, N = 8: p̂ = (0 + 1)/10 = 0.1 and (8 + 1)/10 = 0.9; se = sqrt(p̂(1 − p̂)·2/8) = 0.15
    gamma, share = ExpectedShareThreshold(z=1.0, replicas=1).thresholds(
        np.array([8]), 2, np.array([[0, 8]]))
    assert share == pytest.approx(np.array([[0.1, 0.9]]))
    assert gamma == pytest.approx(np.array([[0.25, 1.0]]))  # 0.9 + 0.15 is capped at 1
    # R = 4, N = 2: n = 8 household replicas, p̂ = (3 + 1)/10; se = sqrt(0.24·1.25/2)
    gamma, _ = ExpectedShareThreshold(z=0.5, replicas=4).thresholds(
        np.array([2]), 1, np.array([[3]]))
    assert gamma.item() == pytest.approx(0.4 + 0.5 * np.sqrt(0.24 * 1.25 / 2))
    with pytest.raises(ValueError, match="replicas' counts"):
        ExpectedShareThreshold(z=3.0, replicas=4).thresholds(np.array([8]), 2)


def test_each_policy_describes_itself_for_the_summary():
    assert ConstantRatio(0.05).describe() == {"method": "constant", "value": 0.05}
    settings = ExpectedShare(method="expected", z=2.0, replicas=8)
    described = threshold_policy(settings).describe()
    assert described == {"method": "expected", "z": 2.0, "replicas": 8}
    # what summary.json held before the policies: the settings as JSON, keys in that order
    assert json.dumps(described) == json.dumps(settings.model_dump(mode="json"))


def test_only_a_constant_binds_gamma_user_in_the_printed_listing():
    assert ConstantRatio(0.05).query_params() == {"γ_user": 0.05}
    assert ExpectedShareThreshold(z=3.0, replicas=4).query_params() == {}
    scenario = Scenario(name="t", seed=1, households=3, groups=[{"name": "g", "size": 3}])
    assert "γ_user" not in MonitoringPlan.of(scenario).params()
    constant = scenario.model_copy(update={
        "monitoring": scenario.monitoring.model_copy(update={"gamma_user": 0.2})})
    assert MonitoringPlan.of(constant).params()["γ_user"] == 0.2


def test_the_figures_label_says_how_gamma_was_set():
    assert ConstantRatio(0.05).label == "γ_user = 0.05"
    assert ExpectedShareThreshold(z=3.0, replicas=4).label == \
        "γ[group, time]: expected share + 3 standard errors"
