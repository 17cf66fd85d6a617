"""The M&V accuracy measures (drsim.utility.mv_accuracy) against hand computations."""

from __future__ import annotations

import numpy as np
import pytest

from drsim.utility.mv_accuracy import cv_rmse, normalised_mean_bias, settlement_error


def test_cv_rmse_by_hand():
    """Errors −1, 0, 1, 4 kW on a true 2 kW: RMSE √(18/4) over the mean 2 (p = 0: over n)."""
    assert cv_rmse([1.0, 2.0, 3.0, 6.0], [2.0] * 4) == pytest.approx(np.sqrt(4.5) / 2.0)


def test_normalised_mean_bias_by_hand_and_its_sign():
    """Σ(ŷ − y) / Σ y: an estimate above the truth has a positive bias."""
    assert normalised_mean_bias([1.0, 2.0, 3.0, 6.0], [2.0] * 4) == pytest.approx(4.0 / 8.0)
    assert normalised_mean_bias([1.0, 1.0], [2.0, 2.0]) == pytest.approx(-0.5)


def test_rows_are_measured_alone():
    """Each row of a 2-D input is its own household: the same values as one at a time."""
    rng = np.random.default_rng(1)
    truth = rng.uniform(0.1, 3.0, (4, 30))
    est = truth * rng.uniform(0.5, 1.5, (4, 30))
    for measure in (cv_rmse, normalised_mean_bias):
        together = measure(est, truth)
        assert together.shape == (4,)
        for k in range(4):
            assert together[k] == pytest.approx(float(measure(est[k], truth[k])), rel=1e-12)


def test_an_estimate_against_itself_has_no_error():
    truth = np.random.default_rng(2).uniform(0.0, 3.0, (5, 120))
    assert np.array_equal(cv_rmse(truth, truth), np.zeros(5))
    assert np.array_equal(normalised_mean_bias(truth, truth), np.zeros(5))
    settled = settlement_error(truth, truth, 0.5 * truth)
    assert np.array_equal(settled.error_kwh, np.zeros(5))
    assert np.array_equal(settled.relative, np.zeros(5))


@pytest.mark.parametrize("e", [-0.2, 0.05, 0.3])
def test_a_multiplicative_error_has_that_bias(e):
    """ŷ = (1 + e)·y: NMB = e, and CV(RMSE) = |e|·√(mean y²)/mean y."""
    truth = np.random.default_rng(3).uniform(0.2, 4.0, (3, 60))
    est = (1.0 + e) * truth
    assert normalised_mean_bias(est, truth) == pytest.approx(np.full(3, e), rel=1e-9)
    expected_cv = abs(e) * np.sqrt((truth ** 2).mean(axis=1)) / truth.mean(axis=1)
    assert cv_rmse(est, truth) == pytest.approx(expected_cv, rel=1e-9)


def test_settlement_error_by_hand():
    """Two half-hours: B̂ 4, 4 kW; B 3, 5 kW; P 2, 1 kW. Paid (2 + 3)/2 = 2.5 kWh, true
    (1 + 4)/2 = 2.5 kWh; with B̂ 5, 5: paid 3.5, error 1 kWh, relative 0.4."""
    same = settlement_error([4.0, 4.0], [3.0, 5.0], [2.0, 1.0], minutes_per_value=30)
    assert (float(same.paid_kwh), float(same.true_kwh), float(same.error_kwh)) == \
        pytest.approx((2.5, 2.5, 0.0))
    high = settlement_error([5.0, 5.0], [3.0, 5.0], [2.0, 1.0], minutes_per_value=30)
    assert float(high.paid_kwh) == pytest.approx(3.5)
    assert float(high.error_kwh) == pytest.approx(1.0)
    assert float(high.relative) == pytest.approx(0.4)


def test_undefined_shares_are_nan_not_infinite():
    """No true load, or no true reduction: the share is NaN; the kWh are still given."""
    assert np.isnan(cv_rmse([1.0, 1.0], [0.0, 0.0]))
    assert np.isnan(normalised_mean_bias([1.0, 1.0], [0.0, 0.0]))
    settled = settlement_error([[3.0, 3.0], [3.0, 3.0]], [[2.0, 2.0], [2.0, 2.0]],
                               [[2.0, 2.0], [3.0, 3.0]], minutes_per_value=60)
    assert settled.error_kwh.tolist() == [2.0, 2.0]
    assert np.isnan(settled.relative).all()  # true reductions 0 and −2 kWh


@pytest.mark.parametrize("measure", [cv_rmse, normalised_mean_bias])
def test_bad_shapes_are_refused(measure):
    with pytest.raises(ValueError, match="differ in shape"):
        measure(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="at least one value"):
        measure(np.ones((2, 0)), np.ones((2, 0)))
    with pytest.raises(ValueError, match="differ in shape"):
        settlement_error(np.ones(3), np.ones(3), np.ones(4))
