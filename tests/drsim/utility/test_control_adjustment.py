"""The control group's B̂ adjusted on the hour before the notice
(drsim.utility.control_adjustment)."""

from __future__ import annotations

import numpy as np
from small_scenarios import quickstart

from drsim.pipeline.passes import Chunk, simulate_chunk
from drsim.scenario import scenario_from_dict
from drsim.units import DAY
from drsim.utility.control_adjustment import adjusted_control_kw, covariate_curves


def _group(curves: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One chunk's covariate curves as one group's sums in natural units."""
    return {name: curve[None, :] / 1e6 for name, curve in curves.items()}


def test_the_adjustment_is_the_regression_estimator_by_hand():
    """Control households at 1, 2, 3, 6 kW after 1, 2, 3, 2 kWh before the notice:
    x̄ = 2, Σx² = 18, S_xx = 18 − 4·4 = 2; Σ C·x = 1 + 4 + 9
    + 12 = 26, S_xy = 26 − 12·2 = 2, θ = 1 kW/kWh; the called households' x̄ = 2.5 raises
    the control mean of 3 kW to 3.5 kW, the sum to 4 × 3.5 = 14 kW."""
    kw = np.array([[1.0], [2.0], [3.0], [6.0]])
    curves = covariate_curves(kw, np.array([1.0, 2.0, 3.0, 2.0]), np.array([2.0, 3.0]), 5, 6)
    control_kw = np.full((1, DAY), np.nan)
    control_kw[0, 5] = kw.sum()
    out = adjusted_control_kw(control_kw, _group(curves), np.array([4]), np.array([2]))
    assert out[0, 5] == 14.0
    assert np.isnan(out[0, 4])  # outside the window nothing is known


def test_too_few_control_households_or_no_spread_keep_the_plain_sum():
    kw = np.array([[1.0], [3.0]])
    curves = _group(covariate_curves(kw, np.array([1.0, 3.0]), np.array([5.0]), 0, 1))
    plain = np.array([[4.0] * DAY])
    np.testing.assert_array_equal(
        adjusted_control_kw(plain, curves, np.array([2]), np.array([1])), plain)
    flat = _group(covariate_curves(np.ones((3, 1)), np.ones(3), np.array([5.0]), 0, 1))
    plain = np.array([[3.0] * DAY])
    np.testing.assert_array_equal(
        adjusted_control_kw(plain, flat, np.array([3]), np.array([1])), plain)


def test_a_spans_adjusted_energy_is_the_regression_estimator_of_that_span():
    """Summed over any span of the program, the minute-by-minute adjustment equals
    Cochran's regression estimator of the span's energy from the control households'
    energies and covariates, computed directly; and it moves the plain mean toward the
    called households' (the test can fail: it compares with an independent fit)."""
    n = 600
    scenario = scenario_from_dict({**quickstart(n, control_group={"share": 0.3}),
                                   "groups": [{"name": "g", "size": n}]})
    result = simulate_chunk(scenario, Chunk(0, 0, n, 0), households=True)
    lo = scenario.dr_program.start_minute
    control, x_c, x_a = (result.control_window_kw, result.control_pre_notice_kwh,
                         result.pre_notice_kwh)
    assert len(x_c) > 100 and x_c.std() > 0
    curves = _group(covariate_curves(control, x_c, x_a, lo, lo + control.shape[1]))
    summed = np.full((1, DAY), np.nan)
    summed[0, lo:lo + control.shape[1]] = np.rint(control * 1e3).sum(axis=0) / 1e3
    adjusted = adjusted_control_kw(summed, curves, np.array([len(x_c)]), np.array([len(x_a)]))
    for span in (30, control.shape[1]):
        y = np.rint(control[:, :span] * 1e3).sum(axis=1) / 1e3 / 60.0  # [kWh]
        xw = np.rint(x_c * 1e3) / 1e3
        theta = np.cov(xw, y, ddof=0)[0, 1] / xw.var()
        direct = y.mean() + theta * (np.rint(x_a * 1e6).mean() / 1e6 - x_c.mean())
        mean = adjusted[0, lo:lo + span].sum() / 60.0 / len(x_c)
        np.testing.assert_allclose(mean, direct, rtol=1e-5)  # x rounded to whole µkWh and Wh
        assert abs(mean - y.mean()) > 1e-3 * y.mean()  # the adjustment does something
