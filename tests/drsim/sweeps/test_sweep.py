"""``drsim sweep``: sweep files, grid expansion, seeds, confidence intervals, resume, the CLI.

The adaptive run is replaced by a fake runner whose summary depends on the overrides, the
delay option and the seed, so every number in the table can be checked by hand.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import types
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from drsim.cli import app
from drsim.scenario import ScenarioError, load_scenario
from drsim.sweeps import (
    DEFAULT_METRICS,
    JOURNAL,
    SweepChangedError,
    SweepError,
    SweepOutputError,
    SweepRunError,
    check_scenario_path,
    expand_grid,
    get_metric,
    load_sweep,
    mean_ci,
    read_journal,
    replicate_seeds,
    run_sweep,
    sweep_from_dict,
    t_quantile,
)
from drsim.units import clock

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "drsim/data/scenarios"
QUICKSTART = SCENARIOS / "quickstart.yaml"
PNG = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- the fake runner
def noise(seed: int) -> float:
    """A per-seed number in [0, 1): the fake runner's "random" part."""
    return (seed % 997) / 997


def fake_summary(scenario, delay_detection: int) -> dict:
    beta = scenario.incentive.beta
    drop = scenario.groups[0].follow_through_drop
    drop = scenario.follow_through_drop if drop is None else drop
    adaptive = 80.0 + 2.0 * beta - 0.5 * delay_detection / 10 + noise(scenario.seed)
    minute = 19 * 60 + 11 + delay_detection
    return {
        "scenario_name": scenario.name,
        "reduction_mwh": {"expected": 83.28, "traditional": 48.0 - 10 * drop + noise(scenario.seed),
                          "adaptive": adaptive},
        "prediction": {"utility_noncompliance_time": clock(minute),
                       "groups_compliant": 2},
        "households": scenario.households,
        "seed": scenario.seed,
    }


class FakeRunner:
    """Records its calls; writes summary.json into a new run folder; may fail at call k."""

    def __init__(self, fail_at: int | None = None, exc: type[BaseException] = RuntimeError):
        self.calls: list[tuple] = []
        self.fail_at = fail_at
        self.exc = exc

    def __call__(self, scenario, out_dir, *, master=None, delay_detection=0):
        out_dir = Path(out_dir)
        assert not out_dir.exists(), "the run folder must be new"
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            out_dir.mkdir()  # a half-written run folder, as an interrupted run leaves
            raise self.exc("the cluster went away")
        self.calls.append((scenario.incentive.beta, delay_detection, scenario.seed, master))
        summary = fake_summary(scenario, delay_detection)
        out_dir.mkdir()
        (out_dir / "summary.json").write_text(json.dumps(  # as drsim writes a run folder
            {**summary, "files": ["summary.json"]}))
        return summary


def write_sweep(tmp_path: Path, data: dict, name: str = "sweep.yaml") -> Path:
    """A sweep file next to a copy of the quickstart scenario (relative path)."""
    scenario = tmp_path / "scenarios" / "base.yaml"
    scenario.parent.mkdir(exist_ok=True)
    scenario.write_text(QUICKSTART.read_text())
    path = tmp_path / "scenarios" / name
    path.write_text(yaml.safe_dump({"scenario": "base.yaml", **data}, sort_keys=False))
    return path


def problems_of(exc: ScenarioError) -> dict[str, tuple[str, str]]:
    return {field: (problem, accepted) for field, problem, accepted in exc.problems}


# --------------------------------------------------------------------------- grid
def test_expand_grid_is_the_product_first_axis_slowest():
    points = expand_grid({"a": [1, 2], "b": ["x", "y", "z"]})
    assert len(points) == 6
    assert points[:3] == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"}]
    assert points[-1] == {"a": 2, "b": "z"}
    assert expand_grid({}) == [{}]  # no axes: one point, the base scenario


def test_sweep_points_apply_overrides_and_axes(tmp_path):
    path = write_sweep(tmp_path, {
        "overrides": {"ev.penetration": 0.3, "households": 400, "groups[south].incentive_u": 1.2},
        "grid": {"incentive.beta": [1.4, 1.8], "groups[*].follow_through_drop": [0.2, 0.5],
                 "delay_detection": [0, 10, 20]},
        "seeds": 2,
    })
    sweep = load_sweep(path)
    assert sweep.name == "sweep"  # the file name
    assert sweep.axes == ["incentive.beta", "groups[*].follow_through_drop", "delay_detection"]
    assert len(sweep.points) == 2 * 2 * 3
    assert len(sweep.runs()) == 12 * 2
    assert sweep.metrics == DEFAULT_METRICS
    base = load_scenario(QUICKSTART)
    for point in sweep.points:
        s = point.scenario
        assert s.incentive.beta == point.values["incentive.beta"]
        assert [g.follow_through_drop for g in s.groups] == [
            point.values["groups[*].follow_through_drop"]] * 3
        assert point.delay_detection == point.values["delay_detection"]
        assert s.ev.penetration == 0.3
        assert s.households == 400 and sum(s.group_sizes()) == 400  # scaled groups
        assert [g.incentive_u for g in s.groups] == [None, 1.2, None]
        assert s.seed == base.seed
        assert s.source_path == (tmp_path / "scenarios" / "base.yaml").absolute()
    assert sweep.points[1].values == {"incentive.beta": 1.4, "groups[*].follow_through_drop": 0.2,
                                      "delay_detection": 10}
    # the base scenario is untouched
    assert load_scenario(tmp_path / "scenarios" / "base.yaml") == sweep.base


def test_group_selection_by_index_and_name_and_query_keys():
    base = load_scenario(QUICKSTART)
    sweep = sweep_from_dict({"grid": {"groups[0].follow_through_drop": [0.1],
                                      "groups[south].follow_through.scale": [1.5],
                                      "monitoring.queries.meter": ["PATTERN ..."]}},
                            base=base)
    s = sweep.points[0].scenario
    assert s.groups[0].follow_through_drop == 0.1
    assert s.groups[1].follow_through_drop == base.groups[1].follow_through_drop  # as based
    assert s.groups[1].follow_through.scale == 1.5
    assert s.groups[1].follow_through.distribution == "survey"  # the block's default
    assert s.groups[0].follow_through is None
    assert s.monitoring.queries == {"meter": "PATTERN ..."}


def test_the_packaged_detection_delay_sweep_reproduces_figure_6_12_setup():
    sweep = load_sweep(SCENARIOS / "sweeps" / "detection_delay.yaml")
    paper = load_scenario(SCENARIOS / "paper_100k.yaml")
    assert sweep.base == paper
    assert sweep.axes == ["delay_detection"]
    assert [p.delay_detection for p in sweep.points] == [0, 10, 20, 30, 40]
    assert all(p.scenario == paper for p in sweep.points)  # only the run option changes
    assert sweep.seeds == 1 and [r.seed for r in sweep.runs()] == [paper.seed] * 5
    assert "reduction_mwh.adaptive" in sweep.metrics


def test_the_packaged_what_if_sweeps():
    """M&V error (whole baseline blocks as one axis), a uniform drop on every group, and
    the threshold's z inside the expected-share mapping of gamma_user."""
    paper = load_scenario(SCENARIOS / "paper_100k.yaml")
    mv = load_sweep(SCENARIOS / "sweeps" / "mv_error.yaml")
    assert mv.seeds == 5
    settings = [(p.scenario.baseline.method, p.scenario.baseline.error) for p in mv.points]
    assert settings == [("same_day", 0.0), ("same_day", 0.005), ("same_day", 0.01),
                        ("same_day", 0.02), ("same_day", 0.05),
                        ("same_day", 0.1), ("same_day", 0.2), ("model", 0.0),
                        ("prior_days", 0.0)]
    assert all(p.scenario.monitoring == paper.monitoring for p in mv.points)
    drop = load_sweep(SCENARIOS / "sweeps" / "uniform_drop.yaml")
    assert [p.values["groups[*].follow_through_drop"] for p in drop.points] == \
        [round(0.05 * i, 2) for i in range(11)]
    for point in drop.points:
        drops = {point.scenario.effective_follow_through_drop(g) for g in range(5)}
        assert drops == {point.values["groups[*].follow_through_drop"]}
    z = load_sweep(SCENARIOS / "sweeps" / "threshold_z.yaml")
    assert [p.scenario.monitoring.gamma_user.z for p in z.points] == [1, 1.5, 2, 3, 4, 5]
    assert {p.scenario.monitoring.gamma_user.replicas for p in z.points} == {4}
    for sweep in (mv, drop, z):
        assert "prediction.expected_pass_groups_latched" in sweep.metrics


def test_group_size_lays_the_households_out_in_groups_of_that_size():
    paper = load_scenario(SCENARIOS / "paper_100k.yaml")
    # the base's 100,000 households do not divide by 30,000, but the sweep sets its own
    sweep = sweep_from_dict({"overrides": {"group_size": 30_000},
                             "grid": {"households": [90_000, 300_000],
                                      "groups[*].follow_through_drop": [0.2, 0.3]}},
                            base=paper)
    assert [len(p.scenario.groups) for p in sweep.points] == [3, 3, 10, 10]
    for point in sweep.points:
        s = point.scenario
        assert s.households == point.values["households"]
        assert set(s.group_sizes()) == {30_000}
        assert {g.follow_through_drop for g in s.groups} == \
            {point.values["groups[*].follow_through_drop"]}
        assert [g.incentive_u for g in s.groups] == \
            [paper.groups[i % 5].incentive_u for i in range(len(s.groups))]
    laid_out = paper.with_groups_of(300_000, 30_000)
    assert sweep.points[2].scenario == laid_out.model_copy(update={"groups": [
        g.model_copy(update={"follow_through_drop": 0.2}) for g in laid_out.groups]})
    assert sweep.describe()["overrides"] == {"group_size": 30_000}
    # without a households axis: the households override, else the base's households
    fixed = sweep_from_dict({"overrides": {"households": 4000, "group_size": 1000}}, base=paper)
    assert fixed.points[0].scenario == paper.with_groups_of(4000, 1000)
    own = sweep_from_dict({"overrides": {"group_size": 20_000},
                           "grid": {"incentive.beta": [1.4]}}, base=paper)
    assert own.points[0].scenario.group_sizes() == [20_000] * 5
    assert [g.name for g in own.points[0].scenario.groups][:2] == ["G001", "G002"]
    # without group_size, households scale the base's groups as before
    scaled = sweep_from_dict({"grid": {"households": [4000]}}, base=paper)
    assert scaled.points[0].scenario == paper.with_households(4000)


def test_the_packaged_scaling_sweep_reproduces_figure_6_13_setup():
    sweep = load_sweep(SCENARIOS / "sweeps" / "scaling.yaml")
    paper = load_scenario(SCENARIOS / "paper_100k.yaml")
    scale = load_scenario(SCENARIOS / "scale_1.6M.yaml")
    assert sweep.base == paper and sweep.seeds == 1
    assert [p.values["households"] for p in sweep.points] == \
        [100_000, 200_000, 400_000, 800_000, 1_600_000]
    assert [len(p.scenario.groups) for p in sweep.points] == [10, 20, 40, 80, 160]
    assert all(set(p.scenario.group_sizes()) == {10_000} for p in sweep.points)
    largest = sweep.points[-1].scenario
    assert [(g.name, g.household_count) for g in largest.groups] == \
        [(g.name, g.household_count) for g in scale.groups]
    assert [largest.effective_follow_through_drop(i) for i in range(160)] == \
        [scale.effective_follow_through_drop(i) for i in range(160)]
    for metric in ("cost.per_household.communication.total",
                   "cost.per_household.computation.total", "cost.communication.group_events",
                   "timings.total_seconds"):
        assert metric in sweep.metrics


def test_group_size_problems_name_the_key_and_the_point(tmp_path):
    path = write_sweep(tmp_path, {"overrides": {"group_size": 1500},
                                  "grid": {"households": [3000, 4000, 4500],
                                           "groups[north].incentive_u": [1.1]}})
    with pytest.raises(SweepError) as info:
        load_sweep(path)
    found = problems_of(info.value)
    assert set(found) == {"grid.households", "grid.groups[north].incentive_u"}
    problem, accepted = found["grid.households"]
    assert problem == ("value 4000: 4000 households do not divide into groups of 1500 (1000 "
                       "left over) (at the point households=4000)")
    assert accepted.startswith("a multiple of the group size 1500 from 1500 to ")
    assert "picks groups of the base scenario" in found["grid.groups[north].incentive_u"][0]
    assert "groups[*]" in found["grid.groups[north].incentive_u"][1]

    bad = write_sweep(tmp_path, {"overrides": {"group_size": "big"},
                                 "grid": {"group_size": [100, 200]}}, "bad.yaml")
    found = problems_of(pytest.raises(SweepError, load_sweep, bad).value)
    assert found["overrides.group_size"] == (
        "expected a number of households per group, got 'big'",
        "an integer from 1 to 20000000 (households per group)")
    assert "cannot be an axis" in found["grid.group_size"][0]
    assert "in overrides" in found["grid.group_size"][1]

    base_left = write_sweep(tmp_path, {"overrides": {"group_size": 4000}}, "left.yaml")
    with pytest.raises(SweepError) as info:
        load_sweep(base_left)
    lines = str(info.value).splitlines()
    assert lines == [f"{base_left}: overrides.group_size: value 4000: the base scenario's 6000 "
                     "households do not divide into groups of 4000 (2000 left over); "
                     "accepted: a divisor of 6000 (the base scenario's households) "
                     "that makes at most 1000 groups, or households in overrides or grid"]
    typo = write_sweep(tmp_path, {"overrides": {"group_sise": 100}}, "typo.yaml")
    assert "did you mean 'group_size'?" in problems_of(
        pytest.raises(SweepError, load_sweep, typo).value)["overrides.group_sise"][0]


def test_a_key_inside_a_constant_gamma_user_makes_a_new_block():
    base = load_scenario(QUICKSTART)
    constant = base.model_copy(update={"monitoring": base.monitoring.model_copy(
        update={"gamma_user": 0.05})})
    ok = sweep_from_dict({"overrides": {"monitoring.gamma_user": {"method": "expected"}},
                          "grid": {"incentive.beta": [1.8]}}, base=constant)
    assert ok.points[0].scenario.monitoring.gamma_user.method == "expected"
    with pytest.raises(SweepError, match="monitoring.gamma_user.method"):
        sweep_from_dict({"grid": {"monitoring.gamma_user.z": [2]}}, base=constant)


# --------------------------------------------------------------------------- validation
def test_unknown_paths_get_a_did_you_mean(tmp_path):
    path = write_sweep(tmp_path, {
        "grid": {"beta": [1.5], "monitoring.gama_group": [0.3], "ev_penetration": [0.1],
                 "u": [1.1], "incentive.beta.x": [1]},
        "overrides": {"groups[nrth].incentive_u": 1.1, "groups.incentive_u": 1.1,
                      "groups[7].incentive_u": 1.1, "dr_program[0]": 1},
    })
    with pytest.raises(SweepError) as info:
        load_sweep(path)
    text = str(info.value)
    assert all(line.startswith(f"{path}: ") for line in text.splitlines())
    found = problems_of(info.value)
    assert "did you mean 'incentive.beta'?" in found["grid.beta"][0]
    assert "dr_program" in found["grid.beta"][1] and "delay_detection" in found["grid.beta"][1]
    assert "did you mean 'monitoring.gamma_group'?" in found["grid.monitoring.gama_group"][0]
    assert "gamma_group" in found["grid.monitoring.gama_group"][1]
    assert "did you mean 'ev.penetration'?" in found["grid.ev_penetration"][0]
    assert "groups[*].incentive_u" in found["grid.u"][0]
    assert "incentive.beta is a single value" in found["grid.incentive.beta.x"][0]
    assert "did you mean groups[north]?" in found["overrides.groups[nrth].incentive_u"][0]
    assert "north, south, east" in found["overrides.groups[nrth].incentive_u"][1]
    assert "groups[*]" in found["overrides.groups.incentive_u"][1]
    assert "out of range" in found["overrides.groups[7].incentive_u"][0]
    assert "not a list" in found["overrides.dr_program[0]"][0]


def test_check_scenario_path_accepts_the_what_if_parameters():
    base = load_scenario(SCENARIOS / "paper_100k.yaml")
    for path in ("incentive.beta", "groups[*].incentive_u", "groups[G1].incentive_u",
                 "incentive.u_mappings", "monitoring.gamma_group", "monitoring.m_user",
                 "monitoring.m_group", "monitoring.m_utility", "follow_through_drop",
                 "groups[2].follow_through_drop", "ev.penetration", "delay_detection",
                 "households", "seed"):
        assert check_scenario_path(path, base) is None, path


def test_bad_values_name_the_sweep_key_the_value_and_the_accepted_range(tmp_path):
    path = write_sweep(tmp_path, {
        "grid": {"incentive.beta": [1.8, 3.5], "groups[*].incentive_u": [1.1, 2.5],
                 "delay_detection": [0, -10, 5.5]},
        "overrides": {"ev.penetration": "lots"},
    })
    with pytest.raises(SweepError) as info:
        load_sweep(path)
    found = problems_of(info.value)
    assert set(found) == {"grid.incentive.beta", "grid.groups[*].incentive_u",
                          "grid.delay_detection", "overrides.ev.penetration"}
    problem, accepted = found["grid.incentive.beta"]
    assert "3.5" in problem and accepted == "a number in [1, 3]"
    problem, accepted = found["grid.groups[*].incentive_u"]
    assert problem.startswith("value 2.5: ") and accepted == "a number in [1, 2] or null " \
        "(split the households among incentive.u_mappings)"
    assert "'lots'" in found["overrides.ev.penetration"][0]
    assert "0 to 1440" in found["grid.delay_detection"][1]
    lines = str(info.value).splitlines()
    assert len(lines) == len(set(lines)) == 5  # each problem once, not once per point
    assert any("-10" in line for line in lines) and any("5.5" in line for line in lines)


def test_values_that_clash_only_together_are_blamed_on_the_point(tmp_path):
    path = write_sweep(tmp_path, {"grid": {"dr_program.end": ["20:30", "19:00", "18:00"],
                                           "monitoring.t_wait_minutes": [20, 60]}})
    with pytest.raises(SweepError) as info:
        load_sweep(path)
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    # 18:00 is wrong by itself: reported once, without a point
    assert lines[0].endswith("grid.dr_program.end: value '18:00': end 18:00 is not after start "
                             "18:30; accepted: a clock time after start (18:30) on the same "
                             "day, up to 23:59")
    # t_wait 60 and end 19:00 are each fine, but not together
    assert lines[1].endswith(
        "grid.monitoring.t_wait_minutes: value 60: the first test (start + 60 minutes) is not "
        "before the end of the 30-minute DR program (at the point dr_program.end=19:00, "
        "monitoring.t_wait_minutes=60); accepted: an integer from 0 to 29")


def test_sweep_file_structure_errors(tmp_path):
    path = write_sweep(tmp_path, {"grid": {"incentive.beta": 1.5, "ev.penetration": []},
                                  "seeds": 0, "metrics": "reduction_mwh.adaptive",
                                  "sedes": 3, "overrides": []})
    with pytest.raises(SweepError) as info:
        load_sweep(path)
    found = problems_of(info.value)
    assert "did you mean 'seeds'?" in found["sedes"][0]
    assert found["seeds"][1] == "an integer from 1 to 1000 (runs per point)"
    assert "non-empty list" in found["metrics"][0]
    assert "non-empty list" in found["grid.incentive.beta"][0]
    assert "non-empty list" in found["grid.ev.penetration"][0]
    assert "expected a mapping" in found["overrides"][0]

    dup = write_sweep(tmp_path, {"grid": {"incentive.beta": [1.5, 1.5], "ev.penetration": [0.1]},
                                 "overrides": {"incentive": {"beta": 2.0},
                                               "ev.penetration": 0.2}}, "dup.yaml")
    found = problems_of(pytest.raises(SweepError, load_sweep, dup).value)
    assert "given twice" in found["grid.incentive.beta"][0]
    assert "contains incentive.beta" in found["overrides.incentive"][0]
    assert "also given in overrides" in found["grid.ev.penetration"][0]


def test_missing_files_and_bad_yaml(tmp_path):
    with pytest.raises(SweepError, match=r"nowhere\.yaml: \(file\): no such file"):
        load_sweep(tmp_path / "nowhere.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenario: [unclosed\n")
    with pytest.raises(SweepError, match=r"bad\.yaml: line 2, column 1: invalid YAML"):
        load_sweep(bad)
    lost = tmp_path / "lost.yaml"
    lost.write_text("scenario: ../missing.yaml\ngrid: {incentive.beta: [1.5]}\n")
    with pytest.raises(SweepError) as info:
        load_sweep(lost)
    problem, accepted = problems_of(info.value)["scenario"]
    assert "missing.yaml" in problem and "sweep file's folder" in problem
    no_base = tmp_path / "nobase.yaml"
    no_base.write_text("grid: {incentive.beta: [1.5]}\n")
    assert "required key missing" in problems_of(
        pytest.raises(SweepError, load_sweep, no_base).value)["scenario"][0]
    # a bad base scenario gives its own error, naming the scenario file
    (tmp_path / "b.yaml").write_text(QUICKSTART.read_text().replace("seed: 7", "seed: -1"))
    uses_bad = tmp_path / "uses_bad.yaml"
    uses_bad.write_text("scenario: b.yaml\n")
    with pytest.raises(ScenarioError, match=r"b\.yaml: seed: "):
        load_sweep(uses_bad)


# --------------------------------------------------------------------------- seeds
def test_replicate_seeds_are_distinct_deterministic_and_derived_from_the_scenario_seed():
    seeds = replicate_seeds(7, 20)
    assert seeds[0] == 7  # replicate 0 is the scenario itself
    assert len(set(seeds)) == 20
    assert all(0 <= s <= 2**63 - 1 for s in seeds)
    assert replicate_seeds(7, 20) == seeds
    assert replicate_seeds(7, 5) == seeds[:5]  # more seeds extend, never reshuffle
    other = replicate_seeds(8, 20)
    assert other[0] == 8 and not set(other) & set(seeds)


def test_runs_use_the_same_seeds_at_every_point(tmp_path):
    path = write_sweep(tmp_path, {"grid": {"incentive.beta": [1.4, 1.8, 2.2]}, "seeds": 4})
    sweep = load_sweep(path)
    runs = sweep.runs()
    by_point = {p.index: [r.seed for r in runs if r.point is p] for p in sweep.points}
    assert by_point[0] == by_point[1] == by_point[2] == replicate_seeds(7, 4)
    assert len({r.key for r in runs}) == 12 and len({r.name for r in runs}) == 12
    assert [r.scenario.seed for r in runs] == [r.seed for r in runs]
    # replicate-major order: every point with the first seed before any second seed
    assert [r.replicate for r in runs] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert sweep.with_seeds(2).runs() == [r for r in runs if r.replicate < 2]
    with pytest.raises(SweepError, match="seeds"):
        sweep.with_seeds(0)


# --------------------------------------------------------------------------- statistics
def test_mean_ci_against_hand_values():
    # t(0.975; 2) = 4.3027 (tables); s = 1; half-width = 4.3027 / sqrt(3) = 2.4841
    n, mean, low, high = mean_ci([1.0, 2.0, 3.0])
    assert (n, mean) == (3, 2.0)
    assert low == pytest.approx(2 - 2.484138, abs=1e-6)
    assert high == pytest.approx(2 + 2.484138, abs=1e-6)
    # t(0.975; 1) = 12.7062; s = sqrt(2); half-width = 12.7062 * sqrt(2) / sqrt(2)
    n, mean, low, high = mean_ci([10, 12])
    assert (n, mean) == (2, 11.0)
    assert (low, high) == (pytest.approx(11 - 12.706205), pytest.approx(11 + 12.706205))
    # t(0.975; 4) = 2.7764; values 80.1, 80.4, 79.8, 80.0, 80.2: s = 0.2236
    values = [80.1, 80.4, 79.8, 80.0, 80.2]
    s = math.sqrt(sum((v - 80.1) ** 2 for v in values) / 4)
    assert s == pytest.approx(0.223607, abs=1e-6)
    n, mean, low, high = mean_ci(values)
    assert mean == pytest.approx(80.1)
    assert high - mean == pytest.approx(2.776445 * 0.223607 / math.sqrt(5), abs=1e-6)
    assert t_quantile(0.975, 30) == pytest.approx(2.042272, abs=1e-6)
    # one value: a mean without an interval; none: nothing
    n, mean, low, high = mean_ci([5.0])
    assert (n, mean) == (1, 5.0) and math.isnan(low) and math.isnan(high)
    assert mean_ci([])[0] == 0 and math.isnan(mean_ci([])[1])
    # identical values: a zero-width interval
    assert mean_ci([4.0, 4.0, 4.0])[1:] == (4.0, 4.0, 4.0)


def test_get_metric_walks_dotted_paths():
    summary = {"a": {"b": {"c": 1.5}, "n": None}, "l": [10, 20]}
    assert get_metric(summary, "a.b.c") == 1.5
    assert get_metric(summary, "a.n") is None
    assert get_metric(summary, "l.1") == 20
    assert get_metric(summary, "a.x") is not None  # the "missing" marker, not a value


# --------------------------------------------------------------------------- running
def test_run_sweep_writes_a_table_with_means_and_cis(tmp_path):
    path = write_sweep(tmp_path, {"grid": {"incentive.beta": [1.4, 1.8],
                                           "delay_detection": [0, 10, 20]},
                                  "seeds": 3})
    sweep = load_sweep(path)
    runner = FakeRunner()
    out = tmp_path / "out"
    outcome = run_sweep(sweep, out, runner=runner, master="local[2]")
    assert (outcome.total, outcome.ran, outcome.reused) == (18, 18, 0)
    assert len(runner.calls) == 18 and {c[3] for c in runner.calls} == {"local[2]"}
    seeds = replicate_seeds(7, 3)

    table = pd.read_csv(out / "table.csv")
    assert len(table) == 6
    assert list(table.columns[:4]) == ["point", "incentive.beta", "delay_detection", "n"]
    assert (table["n"] == 3).all()
    for _, row in table.iterrows():
        beta, delay = row["incentive.beta"], row["delay_detection"]
        values = [80 + 2 * beta - 0.05 * delay + noise(s) for s in seeds]
        n, mean, low, high = mean_ci(values)
        assert row["reduction_mwh.adaptive.mean"] == pytest.approx(mean)
        assert row["reduction_mwh.adaptive.ci95_low"] == pytest.approx(low)
        assert row["reduction_mwh.adaptive.ci95_high"] == pytest.approx(high)
        assert row["reduction_mwh.adaptive.n"] == 3
        assert row["reduction_mwh.expected.mean"] == pytest.approx(83.28)
        # a clock metric: averaged in minutes since midnight, shown as HH:MM too
        assert row["prediction.utility_noncompliance_time.mean"] == 19 * 60 + 11 + delay
        assert row["prediction.utility_noncompliance_time.clock"] == f"19:{11 + delay}"
    assert pq.read_table(out / "table.parquet").to_pandas().equals(outcome.table)

    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(["runs", JOURNAL, "sweep.json", "table.csv", "table.parquet",
                            "reduction_mwh.expected.png", "reduction_mwh.traditional.png",
                            "reduction_mwh.adaptive.png",
                            "prediction.utility_noncompliance_time.png"])
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == PNG
    record = json.loads((out / "sweep.json").read_text())
    assert record["complete"] is True and record["axes"] == sweep.axes
    assert record["points"][0]["seeds"] == seeds
    assert len(list((out / "runs").iterdir())) == 18
    journal = [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()]
    assert len(journal) == 18 and {r["seed"] for r in journal} == set(seeds)


def test_a_runner_that_only_writes_summary_json(tmp_path):
    sweep = sweep_from_dict({"grid": {"incentive.beta": [1.4]}, "seeds": 2},
                            base=load_scenario(QUICKSTART))
    fake = FakeRunner()

    def quiet(scenario, out_dir, **options):
        fake(scenario, out_dir, **options)  # writes summary.json
        return None

    outcome = run_sweep(sweep, tmp_path / "out", runner=quiet)
    assert outcome.table["n"].tolist() == [2]


def test_resume_after_an_interruption_runs_only_the_rest(tmp_path):
    path = write_sweep(tmp_path, {"grid": {"incentive.beta": [1.4, 1.8, 2.2],
                                           "delay_detection": [0, 20]}, "seeds": 2})
    sweep = load_sweep(path)
    out = tmp_path / "out"
    first = FakeRunner(fail_at=5)
    with pytest.raises(SweepRunError) as info:
        run_sweep(sweep, out, runner=first)
    assert (info.value.done, info.value.total) == (5, 12)
    assert "the cluster went away" in str(info.value)
    assert len((out / JOURNAL).read_text().splitlines()) == 5
    assert not (out / "table.csv").exists()  # an unfinished sweep has no table

    second = FakeRunner()
    outcome = run_sweep(sweep, out, runner=second)
    assert (outcome.ran, outcome.reused) == (7, 5)
    runs = sweep.runs()
    done_first = {(r.scenario.incentive.beta, r.point.delay_detection, r.seed) for r in runs[:5]}
    ran_second = {c[:3] for c in second.calls}
    assert len(ran_second) == 7 and not ran_second & done_first
    assert ran_second | done_first == {(r.scenario.incentive.beta, r.point.delay_detection,
                                        r.seed) for r in runs}
    assert (outcome.table["n"] == 2).all()
    assert len((out / JOURNAL).read_text().splitlines()) == 12

    # the same table as a sweep that was never interrupted
    clean = run_sweep(sweep, tmp_path / "clean", runner=FakeRunner())
    pd.testing.assert_frame_equal(outcome.table, clean.table)
    # a third run has nothing left to do
    third = FakeRunner()
    again = run_sweep(sweep, out, runner=third)
    assert third.calls == [] and again.reused == 12
    # more seeds later: only the new seeds run
    fourth = FakeRunner()
    more = run_sweep(sweep.with_seeds(3), out, runner=fourth)
    assert len(fourth.calls) == 6 and (more.table["n"] == 3).all()


def test_keyboard_interrupt_keeps_the_finished_runs(tmp_path):
    sweep = sweep_from_dict({"grid": {"incentive.beta": [1.4, 1.8, 2.2]}},
                            base=load_scenario(QUICKSTART))
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, tmp_path / "out", runner=FakeRunner(fail_at=2, exc=KeyboardInterrupt))
    # a line torn by the interruption is skipped, and the next record starts a new line
    with (tmp_path / "out" / JOURNAL).open("a") as f:
        f.write('{"key": "abc", "summ')
    rest = FakeRunner()
    outcome = run_sweep(sweep, tmp_path / "out", runner=rest)
    assert len(rest.calls) == 1 and outcome.table["n"].tolist() == [1, 1, 1]


def test_output_folder_rules(tmp_path):
    """A sweep resumes in its own folder, starts in an empty one, replaces (--overwrite)
    only a sweep folder that holds nothing but what drsim wrote; anything else is refused
    and left as it was."""
    sweep = sweep_from_dict({"grid": {"incentive.beta": [1.4, 1.8]}},
                            base=load_scenario(QUICKSTART))
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a sweep")
    for overwrite in (False, True):
        with pytest.raises(SweepOutputError, match=r"a folder with 1 entry \(notes.txt\)"):
            run_sweep(sweep, other, runner=FakeRunner(), overwrite=overwrite)
        assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
    a_file = tmp_path / "file.txt"
    a_file.write_text("mine")
    with pytest.raises(SweepOutputError, match="is a file"):
        run_sweep(sweep, a_file, runner=FakeRunner(), overwrite=True)
    assert a_file.read_text() == "mine"

    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_sweep(sweep, empty, runner=FakeRunner()).ran == 2
    plots = sorted(p.name for p in empty.glob("*.png"))
    assert plots  # the metrics' plots
    # resumed as it is (nothing to run); a file of the user's in it stays
    (empty / "mine.png").write_text("the user's figure")
    assert run_sweep(sweep, empty, runner=FakeRunner()).ran == 0
    # ... and --overwrite refuses the folder while it holds that file
    with pytest.raises(SweepOutputError, match="mine.png"):
        run_sweep(sweep, empty, runner=FakeRunner(), overwrite=True)
    assert (empty / "mine.png").exists() and len(read_journal(empty / JOURNAL)) == 2
    # a resume that has runs to do drops the earlier table and plots, never the user's
    assert run_sweep(sweep.with_seeds(2), empty, runner=FakeRunner()).ran == 2
    assert (empty / "mine.png").read_text() == "the user's figure"
    (empty / "mine.png").unlink()
    # a sweep folder of drsim's own is replaced: every run again
    assert run_sweep(sweep, empty, runner=FakeRunner(), overwrite=True).ran == 2
    assert len(read_journal(empty / JOURNAL)) == 2
    # a run folder is not a sweep folder
    run = tmp_path / "run"
    FakeRunner()(sweep.base, run)
    with pytest.raises(SweepOutputError, match="no runs.jsonl or sweep.json"):
        run_sweep(sweep, run, runner=FakeRunner(), overwrite=True)


def as_drsim(runner: FakeRunner):
    """``runner`` whose summaries carry the scenario's hash and settings, as drsim's do."""
    def run(scenario, out_dir, **options):
        summary = runner(scenario, out_dir, **options)
        return {**summary, "scenario": {"hash": "0" * 64,
                                        "settings": scenario.model_dump(mode="json")}}

    return run


def test_a_changed_sweep_file_is_refused_on_resume(tmp_path, fake_api):
    """A sweep stopped, its base scenario edited, the same command again: the journal's runs
    are other runs than the sweep makes now, so it is refused in one line naming the run
    and the field, nothing touched (exit 2 on the command line, before any run); an
    extended grid still resumes; --overwrite starts afresh."""
    grid = {"grid": {"incentive.beta": [1.4, 1.8]}, "seeds": 2}
    path = write_sweep(tmp_path, grid)
    out = tmp_path / "out"
    with pytest.raises(SweepRunError):
        run_sweep(load_sweep(path), out, runner=as_drsim(FakeRunner(fail_at=3)))
    before = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    base = tmp_path / "scenarios" / "base.yaml"
    data = yaml.safe_load(base.read_text())
    data["groups"][0]["follow_through_drop"] = 0.7
    base.write_text(yaml.safe_dump(data, sort_keys=False))
    changed = FakeRunner()
    with pytest.raises(SweepChangedError, match=r"records run runs/p000-r00-\w+ "
                       r"\(incentive.beta=1.4; replicate 0\) made otherwise than sweep.yaml "
                       r"makes it now \(groups\[0\]\.follow_through_drop 0\.1 then, 0\.7 now\)"):
        run_sweep(load_sweep(path), out, runner=changed)
    fake_api.runner = changed
    result = cli.invoke(app, ["sweep", str(path), "--out", str(out)])
    assert result.exit_code == 2 and "follow_through_drop 0.1 then, 0.7 now" in result.output
    assert len(result.output.strip().splitlines()) == 1 and changed.calls == []
    assert {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*")
            if p.is_file()} == before

    write_sweep(tmp_path, {"grid": {"incentive.beta": [1.4, 1.8, 2.2]}, "seeds": 2})
    extended = FakeRunner()  # the base as it was, one more point: the rest runs
    assert run_sweep(load_sweep(path), out, runner=as_drsim(extended)).reused == 3
    assert len(extended.calls) == 3
    base.write_text(yaml.safe_dump(data, sort_keys=False))
    afresh = run_sweep(load_sweep(path), out, runner=FakeRunner(), overwrite=True)
    assert (afresh.ran, afresh.reused) == (6, 0)


def test_a_metric_missing_from_the_summary_is_reported_and_nothing_reruns(tmp_path):
    base = load_scenario(QUICKSTART)
    bad = sweep_from_dict({"grid": {"incentive.beta": [1.4, 1.8]},
                           "metrics": ["reduction_mwh.adaptve"]}, source="s.yaml", base=base)
    first = FakeRunner()
    with pytest.raises(SweepError) as info:
        run_sweep(bad, tmp_path / "out", runner=first)
    assert len(first.calls) == 1  # stopped after the first run
    problem, _ = problems_of(info.value)["metrics[0]"]
    assert "did you mean 'reduction_mwh.adaptive'?" in problem
    good = sweep_from_dict({"grid": {"incentive.beta": [1.4, 1.8]},
                            "metrics": ["reduction_mwh.adaptive"]}, source="s.yaml", base=base)
    second = FakeRunner()
    outcome = run_sweep(good, tmp_path / "out", runner=second)
    assert len(second.calls) == 1 and outcome.reused == 1


def test_null_and_text_metrics(tmp_path):
    base = load_scenario(QUICKSTART)
    sweep = sweep_from_dict({"grid": {"incentive.beta": [1.4, 1.8]}, "seeds": 3,
                             "metrics": ["prediction.utility_noncompliance_time",
                                         "baseline.method"]},
                            base=base)

    def runner(scenario, out_dir, **_):
        predicted = scenario.seed != 7 or scenario.incentive.beta > 1.5
        return {"prediction": {"utility_noncompliance_time": "19:11" if predicted else None},
                "baseline": {"method": "model"}}

    table = run_sweep(sweep, tmp_path / "out", runner=runner).table
    column = "prediction.utility_noncompliance_time"
    assert table[f"{column}.n"].tolist() == [2, 3]  # nulls are left out of the mean
    assert table[f"{column}.clock"].tolist() == ["19:11", "19:11"]
    assert table["baseline.method"].tolist() == ["model", "model"]


def test_the_runner_is_given_and_the_sweep_never_imports_the_pipeline(tmp_path, monkeypatch):
    sweep = sweep_from_dict({"grid": {"incentive.beta": [1.4]}}, base=load_scenario(QUICKSTART))
    with pytest.raises(TypeError, match="runner"):
        run_sweep(sweep, tmp_path / "none")  # no default: the caller composes the run
    assert not (tmp_path / "none").exists()  # found out before any work
    imported = subprocess.run(
        [sys.executable, "-c",
         "import sys, drsim.sweeps; print('drsim.pipeline.stages' in sys.modules)"],
        capture_output=True, text=True, check=True, cwd=ROOT)
    assert imported.stdout.strip() == "False"
    monkeypatch.setitem(sys.modules, "drsim.pipeline.stages", None)  # not importable while it runs
    fake = FakeRunner()
    run_sweep(sweep, tmp_path / "out", runner=fake)
    assert len(fake.calls) == 1


# --------------------------------------------------------------------------- the CLI
cli = CliRunner()


@pytest.fixture
def fake_api(monkeypatch):
    """The CLI's runs go through :mod:`drsim.api`: its backend and run are replaced by fakes.

    The backend remembers its master; ``fake_api.runner`` (a FakeRunner) makes each run.
    """
    import drsim.api

    fake = types.SimpleNamespace(runner=FakeRunner())

    def open_backend(backend="spark", master=None):
        return types.SimpleNamespace(master=master, close=lambda: None)

    def run(scenario, out=None, *, backend, delay_detection=0, **_):
        summary = fake.runner(scenario, out, master=backend.master,
                              delay_detection=delay_detection)
        return types.SimpleNamespace(summary=summary)

    monkeypatch.setattr(drsim.api, "open_backend", open_backend)
    monkeypatch.setattr(drsim.api, "run", run)
    return fake


def test_cli_sweep_runs_and_resumes(tmp_path, fake_api):
    path = write_sweep(tmp_path, {"grid": {"delay_detection": [0, 10, 20]}})
    out = tmp_path / "out"
    fake_api.runner = FakeRunner(fail_at=1)
    result = cli.invoke(app, ["sweep", str(path), "--out", str(out), "--seeds", "2"])
    assert result.exit_code == 1
    assert "the cluster went away" in result.output
    assert "1 of 6 runs are finished" in result.output and "resume" in result.output

    fake_api.runner = rest = FakeRunner()
    result = cli.invoke(app, ["sweep", str(path), "--out", str(out), "--seeds", "2",
                              "--master", "local[2]"])
    assert result.exit_code == 0, result.output
    assert len(rest.calls) == 5 and {c[3] for c in rest.calls} == {"local[2]"}
    assert "resumed: 1 of 6 runs were already done" in result.output
    assert "sweep: 3 points x 2 seeds" in result.stdout
    assert "19:31" in result.stdout  # the prediction time at delay 20
    assert "table.csv" in result.stdout
    assert (out / "reduction_mwh.adaptive.png").read_bytes()[:8] == PNG

    # the finished sweep folder can be reported
    shown = cli.invoke(app, ["report", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "3 points x 2 seeds" in shown.stdout and "19:21" in shown.stdout


def test_cli_bad_sweep_exits_2_before_any_work(tmp_path, fake_api):
    path = write_sweep(tmp_path, {"grid": {"beta": [1.5], "incentive.beta": [9]}})
    out = tmp_path / "out"
    result = cli.invoke(app, ["sweep", str(path), "--out", str(out)])
    assert result.exit_code == 2
    assert "sweep.yaml: grid.beta: unknown key 'beta' (did you mean 'incentive.beta'?)" in (
        result.output.replace("\n", ""))
    assert "accepted: a number in [1, 3]" in result.output.replace("\n", "")
    assert "Traceback" not in result.output
    assert not out.exists() and fake_api.runner.calls == []


def test_cli_dry_run_lists_points_and_runs_nothing(tmp_path, fake_api):
    result = cli.invoke(app, ["sweep", str(SCENARIOS / "sweeps" / "detection_delay.yaml"),
                              "--out", str(tmp_path / "out"), "--dry-run", "--seeds", "3"])
    assert result.exit_code == 0, result.output
    assert "5 points x 3 seeds = 15 runs" in result.stdout
    assert "2021" in result.stdout
    assert not (tmp_path / "out").exists() and fake_api.runner.calls == []


def test_cli_unusable_output_folder_says_so(tmp_path, fake_api):
    path = write_sweep(tmp_path, {"grid": {"delay_detection": [0, 10]}})
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a sweep")
    for overwrite in ([], ["--overwrite"]):
        result = cli.invoke(app, ["sweep", str(path), "--out", str(other), *overwrite])
        assert result.exit_code == 2
        text = result.output.replace("\n", " ")
        assert "a folder with 1 entry (notes.txt)" in text and "Traceback" not in text
        assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
    assert fake_api.runner.calls == []


def test_the_format_example_in_the_module_docstring_is_valid():
    import drsim.sweeps

    doc = drsim.sweeps.__doc__
    example = doc[doc.index("::") + 2: doc.index("Paths are checked")]
    data = yaml.load(example, Loader=yaml.SafeLoader)
    sweep = sweep_from_dict(data, base=load_scenario(SCENARIOS / "paper_100k.yaml"))
    assert sweep.name == "incentive_beta" and sweep.seeds == 5
    assert len(sweep.points) == 3 * 2 * 2 and len(sweep.runs()) == 60
    assert all(p.scenario.households == 20000 for p in sweep.points)


def test_the_group_size_example_in_the_module_docstring_is_valid():
    import drsim.sweeps

    doc = drsim.sweeps.__doc__
    start = doc.index("instead of scaling the base's groups::") + len(
        "instead of scaling the base's groups::")
    example = yaml.load(doc[start: doc.index("Every households value")], Loader=yaml.SafeLoader)
    sweep = sweep_from_dict(example, base=load_scenario(SCENARIOS / "paper_100k.yaml"))
    assert [len(p.scenario.groups) for p in sweep.points] == [10, 20, 40]  # as its comment says
