"""The sweep file's top level as a pydantic model (:class:`SweepFile`), explained as a
scenario is, and the problems of its keys reported with those of its points."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from drsim.scenario import load_scenario
from drsim.scenario.explain import explain_errors
from drsim.sweeps import DEFAULT_METRICS, SweepError, SweepFile, load_sweep, sweep_from_dict
from drsim.sweeps.file import read_sweep_file

ROOT = Path(__file__).resolve().parents[3]
SWEEPS = ROOT / "drsim/data/scenarios" / "sweeps"
QUICKSTART = ROOT / "drsim/data/scenarios" / "quickstart.yaml"


@pytest.mark.parametrize("path", sorted(SWEEPS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_packaged_sweep_file_is_a_sweep_file(path):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    file = SweepFile.model_validate(data, context={"base_dir": path.parent})
    assert file.scenario == data["scenario"]
    assert file.grid == data.get("grid", {}) and file.seeds == data.get("seeds", 1)


def test_defaults_and_null_sections():
    file = SweepFile.model_validate({"scenario": "quickstart.yaml", "overrides": None,
                                     "grid": None}, context={"base_dir": QUICKSTART.parent})
    assert (file.name, file.overrides, file.grid, file.seeds) == (None, {}, {}, 1)
    assert file.metrics == list(DEFAULT_METRICS)


def test_problems_are_explained_as_a_scenarios_are():
    with pytest.raises(ValidationError) as info:
        SweepFile.model_validate({"sede": 2, "grid": {"incentive.beta": 1.5}, "seeds": True})
    assert explain_errors(info.value, SweepFile) == [
        ("scenario", "required key missing",
         "the path of the base scenario YAML file, relative to the sweep file"),
        ("grid.incentive.beta", "expected a non-empty list of values, got float 1.5",
         "a list of values, e.g. [1.4, 1.8, 2.2]"),
        ("seeds", "expected a number of seeds, got True",
         "an integer from 1 to 1000 (runs per point)"),
        ("sede", "unknown key 'sede' (did you mean 'seeds'?)",
         "the keys name, scenario, overrides, grid, seeds, metrics"),
    ]


def test_a_metric_is_resolved_against_the_summarys_fields():
    with pytest.raises(ValidationError) as info:
        SweepFile.model_validate({"scenario": "quickstart.yaml", "metrics": [
            "prediction.utility_noncompliance_tme", "reduction_mwh.adaptive",
            "remote.meter_tier.requests", "energy.evening_peak_time.hours", "predictoin"]},
            context={"base_dir": QUICKSTART.parent})
    problems = {field: problem for field, problem, _ in explain_errors(info.value, SweepFile)}
    assert problems == {  # a mapping's key (a pass) and a feature's own section pass
        "metrics[0]": "'prediction.utility_noncompliance_tme': prediction has no field "
                      "'utility_noncompliance_tme' (did you mean "
                      "'prediction.utility_noncompliance_time'?)",
        "metrics[3]": "'energy.evening_peak_time.hours': energy.evening_peak_time has no "
                      "field 'hours'",
        "metrics[4]": "'predictoin': summary.json has no field 'predictoin' (did you mean "
                      "'prediction'?)"}


def test_a_key_with_a_problem_is_left_out_and_the_rest_kept(tmp_path):
    (tmp_path / "base.yaml").write_text(QUICKSTART.read_text())
    file, problems = read_sweep_file(
        {"scenario": "base.yaml", "seeds": 0, 7: 1,
         "grid": {"incentive.beta": [1.5], "ev.penetration": []}}, tmp_path)
    assert [field for field, _, _ in problems] == ["grid.ev.penetration", "seeds", "7"]
    assert (file.scenario, file.grid, file.seeds) == ("base.yaml", {"incentive.beta": [1.5]}, 1)


def test_top_level_key_and_point_problems_are_reported_together(tmp_path):
    (tmp_path / "base.yaml").write_text(QUICKSTART.read_text())
    path = tmp_path / "sweep.yaml"
    path.write_text("scenario: base.yaml\nseeds: 0\n"
                    "grid: {beta: [1.5], incentive.beta: [1.8, 9], 2: [1]}\n")
    with pytest.raises(SweepError) as info:
        load_sweep(path)
    lines = str(info.value).splitlines()
    assert all(line.startswith(f"{path}: ") for line in lines)
    assert [line.split(": ")[1] for line in lines] == [
        "seeds", "grid.beta", "grid.2", "grid.incentive.beta"]
    assert "did you mean 'incentive.beta'?" in lines[1]
    assert "value 9" in lines[3] and lines[3].endswith("accepted: a number in [1, 3]")


def test_with_a_base_scenario_given_the_scenario_key_may_be_left_out():
    base = load_scenario(QUICKSTART)
    sweep = sweep_from_dict({"grid": {"incentive.beta": [1.4, 1.8]}}, base=base)
    assert sweep.scenario_file == "" and len(sweep.points) == 2
    with pytest.raises(SweepError, match=r"<dict>: scenario: expected a file path, got int 5"):
        sweep_from_dict({"scenario": 5}, base=base)


def test_a_scenario_path_of_an_unknown_users_home_is_not_found(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text("scenario: ~no_such_user_of_drsim/base.yaml\n")
    with pytest.raises(SweepError, match=r"scenario: file not found: '~no_such_user_of_drsim/"):
        load_sweep(path)
