"""The aggregate test against the control group (drsim.utility.control_reference): E_j and
σ_j by hand, a day factor every household shares leaves the statistic where it was, the
blocks' sums are the same in any split, and a run is the same for any chunking."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import drsim
from drsim.scenario import scenario_from_dict
from drsim.utility.aggregate_method import Aggregate, meter_sums
from drsim.utility.aggregate_reference import ReferenceReadings
from drsim.utility.aggregate_tier import group_statistic
from drsim.utility.control_reference import ControlGroupReference
from drsim.utility.known_cv_reference import KnownCv
from drsim.utility.method_registry import method_of
from drsim.utility.monitoring import MonitoringPlan
from tests.drsim.pipeline.test_pipeline import small

#: two test times, 18:50 and 18:55
PLAN = MonitoringPlan(1110, 1140, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 2)


def _sums(reference, expected, baseline, control, used=None, x=None, cx=None,
          blocks=((slice(None),) * 2,)):
    """The blocks' sums (meter_sums) of called households (``expected``, ``baseline``,
    ``used``, their energy before the notice ``x``) and control households (``control``,
    ``cx``), split into ``blocks`` of (called, control) slices; x 0.5 kWh when not
    given."""
    used = expected if used is None else used
    x = np.full(len(expected), 0.5) if x is None else x
    cx = np.full(len(control), 0.5) if cx is None else cx
    return pd.concat([meter_sums(np.arange(len(expected))[c], 1, PLAN.test_times, used[c],
                                 expected[c], reference,
                                 ReferenceReadings(baseline[c], control[k], x[c], cx[k])).events
                      for c, k in blocks], ignore_index=True)


def _totals(ref, sums):
    return {c: sums[c].to_numpy() for c in ("accLoad", *ref.columns)}


def test_e_and_sigma_against_a_hand_computation():
    """Group 1: three control households have used 1, 2, 3 kWh by the first test and 2,
    4, 6 by the second (means 2 and 4 kWh); six called households, whose method expects
    1.8 of 2 kWh and 3.2 of 4 kWh (R = 0.9, 0.8), used R × (1, 1, 2, 2, 3, 3) and
    R × (2, 2, 4, 4, 6, 6) kWh; all used the same before the notice (θ = 0)."""
    ref = ControlGroupReference(control=(5, 3), called=(50, 6), floor=0.01)
    control = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    baseline = np.tile([2.0, 4.0], (6, 1))
    expected = np.tile([1.8, 3.2], (6, 1))
    used = np.outer([1.0, 1.0, 2.0, 2.0, 3.0, 3.0], [0.9, 1.6])
    totals = _totals(ref, _sums(ref, expected, baseline, control, used))
    e, se = ref.expectation(1, totals)
    # B̂ = 6 × (2, 4) = (12, 24) kWh; E = (12 × 0.9, 24 × 0.8)
    assert e.tolist() == pytest.approx([10.8, 19.2])
    # pooled S² = (SS of the control + SS of the called / R²) / (3 + 6 − 3):
    # (2 + 4) / 6 and (8 + 16) / 6; σ = R × S × √(N × N_called / n) = R × S × √(9 × 6 / 3)
    assert se.tolist() == pytest.approx([0.9 * (6 / 6 * 18) ** 0.5, 0.8 * (24 / 6 * 18) ** 0.5])
    floored = ControlGroupReference(control=(5, 3), called=(50, 6), floor=0.5)
    assert floored.expectation(1, totals)[1].tolist() == pytest.approx([5.4, 9.6])
    # a group with two control households: the method's P̂ at the floor
    few = ControlGroupReference(control=(2,), called=(6,), floor=0.02)
    e1, se1 = few.expectation(0, totals)
    assert e1.tolist() == pytest.approx([10.8, 19.2])
    assert se1.tolist() == pytest.approx([0.216, 0.384])


def test_the_covariate_takes_the_control_samples_imbalance_out_of_its_mean():
    """No-DR loads twice each household's energy before the notice: the control
    households (x = 1, 2, 3) used less than the called ones (x = 2, 2, 3, 3, 4, 4) before
    the notice. θ = 2 and the adjusted mean, 4 + 2 × (3 − 2) = 6 kWh per household, is
    the called households' own: E is their load exactly, and no residual is left."""
    ref = ControlGroupReference(control=(3,), called=(6,), floor=0.01)
    x, cx = np.array([2.0, 2.0, 3.0, 3.0, 4.0, 4.0]), np.array([1.0, 2.0, 3.0])
    control = np.repeat(2 * cx[:, None], 2, axis=1)
    baseline = np.repeat(2 * x[:, None], 2, axis=1)
    used = 0.9 * baseline
    totals = _totals(ref, _sums(ref, used, baseline, control, used, x, cx))
    e, se = ref.expectation(0, totals)
    assert e.tolist() == pytest.approx([0.9 * 36.0] * 2)
    assert se.tolist() == pytest.approx((0.01 * e).tolist())  # the floor
    plain = ControlGroupReference(control=(3,), called=(6,), floor=0.01)
    flat = _totals(plain, _sums(plain, used, baseline, control, used))  # x alike: θ = 0
    assert plain.expectation(0, flat)[0].tolist() == pytest.approx([0.9 * 24.0] * 2)


def test_the_meters_read_are_the_called_and_the_control_households():
    ref = ControlGroupReference(control=(3,), called=(6,))
    m = meter_sums(np.arange(6), 0, PLAN.test_times, np.ones((6, 2)), np.ones((6, 2)), ref,
                   ReferenceReadings(np.ones((6, 2)), np.ones((3, 2)), np.ones(6), np.ones(3)))
    assert m.processed.tolist() == [9, 9] and len(m.first_flag) == 6
    with pytest.raises(ValueError, match="control households"):
        meter_sums(np.arange(6), 0, PLAN.test_times, np.ones((6, 2)), np.ones((6, 2)), ref)


def _day(seed: int, called: int = 400, control: int = 100):
    """Cumulative loads at the two tests of called and control households drawn alike,
    the called ones' prior-day B̂ and P̂ = 0.9 B̂ [kWh]."""
    rng = np.random.default_rng(seed)
    step = rng.gamma(2.0, 0.25, (called + control, 2))
    load = np.cumsum(step, axis=1)
    prior = load[:called] * rng.lognormal(0.0, 0.3, (called, 1))
    return load[:called], load[called:], prior, 0.9 * prior


def test_a_day_factor_every_household_shares_moves_the_reference_with_the_load():
    """All households 12 % above their usual day, responding as expected: the control
    group's reference moves with them and x_j stays where it was; the prior-day P̂ does
    not move, and the known error's x_j rises by the factor."""
    called, control, prior, expected = _day(4)
    used = 0.9 * called  # the expected response of the evaluated day
    control_ref = ControlGroupReference(control=(0, 100), called=(0, 400))
    known = KnownCv(cv=0.1)
    stats = {}
    for factor in (1.0, 1.12):
        for name, ref in (("control", control_ref), ("known", known)):
            sums = _sums(ref, expected, prior, factor * control, factor * used)
            stats[name, factor] = group_statistic(PLAN, Aggregate(reference=ref), sums, 1)
    calm, moved = stats["control", 1.0], stats["control", 1.12]
    np.testing.assert_allclose(moved["expected"], 1.12 * calm["expected"], rtol=1e-5)
    np.testing.assert_allclose(moved["x"], calm["x"], atol=1e-3)
    assert (np.abs(calm["x"]) < 3).all()
    shift = stats["known", 1.12]["x"] - stats["known", 1.0]["x"]
    np.testing.assert_allclose(shift, 0.12 * used.sum(axis=0) / stats["known", 1.0]["se"],
                               rtol=1e-3)


def test_the_blocks_sums_give_the_same_statistic_in_any_split():
    called, control, prior, expected = _day(9)
    ref = ControlGroupReference(control=(0, 100), called=(0, 400))
    x, cx = (np.random.default_rng(2).gamma(2.0, 0.2, n) for n in (400, 100))
    whole = _sums(ref, expected, prior, control, called, x, cx)
    split = _sums(ref, expected, prior, control, called, x, cx, blocks=(
        (slice(0, 130), slice(0, 7)), (slice(130, 400), slice(7, 100))))
    one = group_statistic(PLAN, Aggregate(reference=ref), whole, 1)
    two = group_statistic(PLAN, Aggregate(reference=ref), split, 1)
    assert one.equals(two)


def _controlled(chunk_size: int):
    """400 households in three groups, a fifth of each a control group, ``aggregate``
    with a short decision interval (k 0.5, h 2) so that a group this small latches; the
    utility predicts on one group latched (γ_group 0.2)."""
    data = small(400, method="aggregate", gamma_group=0.2,
                 aggregate={"k": 0.5, "h": 2.0}).model_dump(mode="json",
                                                           exclude={"source_path"})
    data["baseline"]["control_group"] = {"share": 0.2}
    data["chunk_size"] = chunk_size
    return scenario_from_dict(data)


def test_a_run_against_the_control_group_is_the_same_for_any_chunking():
    """The control households' sums are whole µkWh and Wh²: the group statistic, the
    group events and the loop are the same for chunks of 100 and of 67 households."""
    assert isinstance(method_of(_controlled(100)).reference, ControlGroupReference)
    runs = [drsim.run(_controlled(size), backend="serial") for size in (100, 67)]
    summaries = [r.summary for r in runs]
    assert summaries[0]["prediction"]["predicted"], "the test needs a prediction"
    assert summaries[0]["monitoring"]["method_settings"]["reference"] == "control_group"
    for key in ("prediction", "deficit_at_prediction", "cost", "second_event",
                "reduction_share_of_expected"):
        assert summaries[0][key] == summaries[1][key], key
    rows = [r.run.monitored.tier_rows.drop(columns="device") for r in runs]
    assert rows[0].equals(rows[1])
