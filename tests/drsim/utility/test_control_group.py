"""The control group (baseline.control_group): who is in it, that it is not called, and the
group-level baseline its households estimate (drsim.household.control,
drsim.utility.control_group)."""

from __future__ import annotations

import numpy as np
import pytest
from small_scenarios import quickstart

import drsim
from drsim.household.control import control_ids, is_control
from drsim.household.population import Population
from drsim.household.sim import ChunkSimulator
from drsim.pipeline.passes import Chunk, plan_chunks, simulate_chunk
from drsim.scenario import scenario_from_dict
from drsim.utility.control_adjustment import adjusted_control_kw
from drsim.utility.control_group import group_estimates, standard_error

HOUSEHOLDS = 600
SHARE = 0.2
#: what differs between runs of equal numbers: the machine's facts and times
_MACHINE = ("backend", "timings", "resources")


def _scenario(households: int = HOUSEHOLDS, **baseline):
    return scenario_from_dict(quickstart(households, **baseline))


def _run(scenario, **options):
    return drsim.run(scenario, backend="serial", **options)


@pytest.fixture(scope="module")
def plain():
    return _run(_scenario())


@pytest.fixture(scope="module")
def controlled():
    return _run(_scenario(control_group={"share": SHARE}))


def test_a_share_of_zero_changes_nothing(plain):
    zero = _run(_scenario(control_group={"share": 0.0}))
    for key, value in plain.summary.items():
        if key in _MACHINE:
            continue
        if key == "scenario":
            value = {k: v for k, v in value.items() if k not in ("hash", "settings")}
            assert {k: v for k, v in zero.summary[key].items()
                    if k not in ("hash", "settings")} == value
        elif key == "baseline":
            assert {**zero.summary[key], "control_group": None} == value
        else:
            assert zero.summary[key] == value, key
    a, b = plain.run.simulation.loads, zero.run.simulation.loads
    assert b.control_group_kw is None and b.method_estimate_group_kw is None
    for name, kw in a.group_kw.items():
        np.testing.assert_array_equal(b.group_kw[name], kw)
    for name, kw in a.estimate_group_kw.items():
        np.testing.assert_array_equal(b.estimate_group_kw[name], kw)


def test_control_households_are_a_fixed_random_share_of_each_group():
    scenario = _scenario(control_group={"share": SHARE})
    for g, (lo, hi) in enumerate(scenario.group_ranges()):
        ids = control_ids(scenario, g)
        assert len(ids) == round(SHARE * (hi - lo)) == scenario.control_group_sizes()[g]
        assert ids.min() >= lo and ids.max() < hi
        assert np.unique(ids).size == ids.size
        gaps = np.diff(ids)
        assert gaps.min() != gaps.max()  # not a regular pattern of ids
    other = scenario_from_dict({**quickstart(HOUSEHOLDS, control_group={"share": SHARE}),
                                "seed": 8})
    assert not np.array_equal(control_ids(other, 0), control_ids(scenario, 0))


def test_a_group_keeps_at_least_one_called_household():
    scenario = scenario_from_dict({**quickstart(6, control_group={"share": 0.9}),
                                   "groups": [{"name": "a", "size": 2},
                                              {"name": "b", "size": 4}]})
    assert scenario.control_group_sizes() == [1, 3]
    assert scenario.called_group_sizes() == [1, 1]


def test_who_is_in_the_control_group_does_not_depend_on_chunking():
    scenario = _scenario(control_group={"share": SHARE})
    whole = is_control(scenario, np.arange(HOUSEHOLDS))
    for size in (7, 64, 1000):
        parts = [Population(scenario, c.first, c.count).control().ids
                 for c in plan_chunks(scenario, size)]
        np.testing.assert_array_equal(np.concatenate(parts), np.flatnonzero(whole))
        called = [Population(scenario, c.first, c.count).called().ids
                  for c in plan_chunks(scenario, size)]
        np.testing.assert_array_equal(np.concatenate(called), np.flatnonzero(~whole))


def test_the_run_does_not_depend_on_chunking(controlled):
    small = _run(_scenario(control_group={"share": SHARE}), chunk_size=64)
    for key, value in controlled.summary.items():
        if key not in _MACHINE:
            assert small.summary[key] == value, key


def test_control_households_get_no_dr_and_called_ones_are_the_same_households():
    """A chunk's called households load as they do among all households, pass by pass, and
    its control households' load is their load without DR."""
    scenario = _scenario(control_group={"share": SHARE})
    everyone = _scenario()  # the same households, all called
    chunk = Chunk(0, 200, 200, 1)
    result = simulate_chunk(scenario, chunk, households=True)
    full = simulate_chunk(everyone, chunk, households=True)
    control = is_control(scenario, np.arange(chunk.first, chunk.first + chunk.count))
    assert result.households == chunk.count - control.sum() == result.population.size
    assert result.control_households == control.sum() > 0
    for name, kw in full.window_kw.items():
        np.testing.assert_array_equal(result.window_kw[name], kw[~control])
    no_dr = ChunkSimulator(Population(everyone, chunk.first, chunk.count)).run([])
    expected = no_dr.load_micro_kw()[control].sum(axis=0)
    np.testing.assert_array_equal(result.control_load, expected)
    dr = full.window_kw["traditional"][control]  # had they been called
    assert not np.array_equal(dr, full.window_kw["baseline"][control])


def test_control_households_are_not_monitored_nor_participants(plain, controlled):
    called = HOUSEHOLDS - round(SHARE * HOUSEHOLDS)
    summary = controlled.summary
    assert summary["baseline"]["control_households"] == HOUSEHOLDS - called
    assert plain.summary["baseline"]["control_households"] == 0
    assert summary["prediction"]["household_confusion"]["households"] == called
    participants = controlled.run.simulation.participants
    assert participants.count == sum(n for _, n in participants.u_counts) == called
    assert summary["scenario"]["households"] == called
    assert sum(g["households"] for g in summary["groups"].values()) == called


def test_the_control_groups_baseline_replaces_the_methods_sum(controlled):
    """What the goal, the deficit and the expected reduction read is the control group's
    estimate, adjusted on the hour before the notice; the method's sum is kept beside
    it."""
    scenario = controlled.run.simulation.scenario
    loads = controlled.run.simulation.loads
    lo, hi = scenario.dr_program.start_minute, scenario.dr_program.end_minute
    control = np.array(scenario.control_group_sizes())
    called = np.array(scenario.called_group_sizes())
    assert loads.control_covariates is not None
    adjusted = adjusted_control_kw(loads.control_group_kw, loads.control_covariates,
                                   control, called)
    assert not np.allclose(adjusted[:, lo:hi], loads.control_group_kw[:, lo:hi])
    est = group_estimates(adjusted, control, called,
                          loads.method_estimate_group_kw["baseline"],
                          loads.method_estimate_group_kw["expected"])
    np.testing.assert_array_equal(loads.estimate_group_kw["baseline"], est.baseline_kw)
    baseline = controlled.summary["baseline"]
    assert baseline["baseline_mwh"] == pytest.approx(est.baseline_kw[:, lo:hi].sum() / 6e4)
    assert baseline["method_baseline_mwh"] == pytest.approx(
        baseline["simulated_baseline_mwh"])  # same_day without error: the truth
    assert baseline["baseline_mwh"] != baseline["method_baseline_mwh"]
    assert np.isnan(loads.estimate_group_kw["baseline"][:, :lo]).all()


def test_the_group_baseline_is_within_its_standard_error_of_the_truth():
    """B̂ = N_called × the control households' mean energy over the program estimates the
    called households' no-DR energy within 4 standard errors (with the control
    households' own spread); scaling by all N enrolled households instead would miss by
    far more."""
    n = 1000
    scenario = scenario_from_dict({**quickstart(n, control_group={"share": 0.3}),
                                   "groups": [{"name": "g", "size": n}]})
    lo, hi = scenario.dr_program.start_minute, scenario.dr_program.end_minute
    no_dr = ChunkSimulator(Population(scenario, 0, n)).run([]).load(lo, hi)
    control = is_control(scenario, np.arange(n))
    called = int((~control).sum())
    est = group_estimates(no_dr[control].sum(axis=0)[None, :], np.array([control.sum()]),
                          np.array([called]), no_dr[~control].sum(axis=0)[None, :],
                          no_dr[~control].sum(axis=0)[None, :])
    energy = no_dr.sum(axis=1) / 60.0  # [kWh] per household
    estimated, truth = est.baseline_kw.sum() / 60.0, energy[~control].sum()
    se = standard_error(energy[control].std(ddof=1), int(control.sum()), n)
    assert abs(estimated - truth) < 4 * se
    assert abs(estimated * n / called - truth) > 4 * se  # the bound can fail
    assert se < 0.1 * truth  # the bound says something
    np.testing.assert_allclose(est.household_baseline_kw * called, est.baseline_kw)


def test_standard_error_falls_as_one_over_the_root_of_the_control_households():
    ratio = standard_error(1.0, 100, 100_000) / standard_error(1.0, 400, 100_000)
    assert ratio == pytest.approx(2.0, rel=2e-3)
    assert standard_error(1.0, 50, 50) == 0.0  # no called household: nothing to miss
    with pytest.raises(ValueError, match="control households 0"):
        standard_error(1.0, 0, 10)


def test_a_control_group_beside_a_monitoring_feature_is_refused():
    scenario = scenario_from_dict(quickstart(HOUSEHOLDS, shedding={},
                                             control_group={"share": SHARE}))
    with pytest.raises(ValueError, match="baseline.control_group: monitoring.shedding"):
        _run(scenario)


def test_a_control_group_runs_beside_any_method_and_its_baseline_is_the_methods_own():
    """The control group's B̂ is measured, whatever the method; P̂ follows the method's
    ratio, and the method's own sums are kept beside it."""
    runs = {method: _run(_scenario(300, method=method, prior_days=2,
                                   control_group={"share": SHARE})).summary["baseline"]
            for method in ("same_day", "model", "prior_days")}
    assert len({b["baseline_mwh"] for b in runs.values()}) == 1
    assert len({b["method_baseline_mwh"] for b in runs.values()}) == 3
    assert len({b["expected_mwh"] for b in runs.values()}) == 3
    for b in runs.values():
        assert 0 < b["expected_reduction_mwh"] < b["baseline_mwh"]


@pytest.mark.parametrize("method", ["x_of_y", "regression"])
def test_a_called_households_prior_day_baseline_is_its_own_beside_a_control_group(method):
    """Prior-day methods and the common day factor on the called households of a range:
    each called household's B̂ and P̂ are those it has in the whole range without a
    control group (a household's estimate reads its own prior days only)."""
    settings = {"method": method, "x_of_y": {"days": 3, "take": 2},
                "regression": {"days": 3, "other_day_type_days": 1}}
    whole = scenario_from_dict({**quickstart(HOUSEHOLDS, **settings),
                                "day_variation": {"cv": 0.25}})
    split = scenario_from_dict({**quickstart(HOUSEHOLDS, control_group={"share": SHARE},
                                             **settings), "day_variation": {"cv": 0.25}})
    chunk = Chunk(0, 0, 40, 0)
    called = simulate_chunk(split, chunk, households=True)
    alone = simulate_chunk(whole, chunk, households=True)
    keep = ~is_control(split, np.arange(40))
    assert 0 < keep.sum() < 40
    for name in ("baseline", "expected"):
        np.testing.assert_allclose(called.estimate_window_kw[name],
                                   alone.estimate_window_kw[name][keep], rtol=1e-12)
