"""The packaged scenarios (drsim.scenario.library) and drsim scenarios / run by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from drsim.cli import app
from drsim.scenario import ScenarioError, load_scenario
from drsim.scenario.library import LIBRARY, base_of, copy, names, packaged, resolve
from drsim.sweeps import load_sweep

cli = CliRunner()


def test_every_packaged_file_is_named_and_loads():
    files = sorted(p.relative_to(LIBRARY).with_suffix("").as_posix()
                   for p in LIBRARY.rglob("*.yaml"))
    assert names() == files and len(names("scenario")) + len(names("sweep")) == len(files)
    assert {"quickstart", "paper_100k", "sweeps/threshold_z"} <= set(files)
    for name in names("scenario"):
        assert load_scenario(name).source_path == LIBRARY / f"{name}.yaml"
    sweep = load_sweep("sweeps/threshold_z")
    assert sweep.base.source_path == (LIBRARY / "paper_100k.yaml").resolve()


@pytest.mark.parametrize("spelling", ["quickstart", "quickstart.yaml",
                                      "scenarios/quickstart.yaml"])
def test_a_packaged_scenario_is_found_by_any_spelling(spelling, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no scenarios/ here
    assert resolve(spelling) == LIBRARY / "quickstart.yaml"


def test_a_path_that_exists_wins_over_the_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = yaml.safe_load((LIBRARY / "quickstart.yaml").read_text())
    data["name"] = "mine"
    (tmp_path / "quickstart").write_text(yaml.safe_dump(data))
    assert resolve("quickstart") == Path("quickstart")
    assert load_scenario("quickstart").name == "mine"
    (tmp_path / "quickstart").unlink()
    (tmp_path / "quickstart").mkdir()  # a folder is never a scenario: the name holds
    assert resolve("quickstart") == LIBRARY / "quickstart.yaml"
    (tmp_path / "folder").mkdir()
    with pytest.raises(ScenarioError, match="folder: \\(file\\): is a folder"):
        load_scenario("folder")


def test_an_unknown_name_lists_the_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert packaged("quickstrat") is None and resolve("quickstrat") == Path("quickstrat")
    with pytest.raises(ScenarioError) as error:
        load_scenario("quickstrat")
    message = str(error.value)
    assert message.count("\n") == 0 and message.startswith("quickstrat: (file): no such file")
    assert all(name in message for name in names("scenario"))
    assert "sweeps/" not in message


def test_copy_writes_a_sweep_beside_its_base_and_refuses_to_overwrite(tmp_path):
    assert base_of("quickstart") is None and base_of("sweeps/threshold_z") == "paper_100k"
    written = copy("sweeps/threshold_z", tmp_path / "mine")
    assert written == [tmp_path / "mine" / "sweeps" / "threshold_z.yaml",
                       tmp_path / "mine" / "paper_100k.yaml"]
    assert load_sweep(written[0]).base.source_path == written[1].resolve()
    written[0].unlink()  # the base scenario alone is in the way: nothing is written
    written[1].write_text("# mine\n")
    with pytest.raises(FileExistsError, match="paper_100k.yaml: already exists"):
        copy("sweeps/threshold_z", tmp_path / "mine")
    assert written[1].read_text() == "# mine\n" and not written[0].exists()
    with pytest.raises(ValueError, match="nope: no packaged scenario"):
        copy("nope", tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_drsim_scenarios_list_and_copy(tmp_path):
    shown = cli.invoke(app, ["scenarios", "list"])
    assert shown.exit_code == 0, shown.output
    listed = [line.split()[0] for line in shown.stdout.splitlines() if line.startswith("  ")]
    assert listed == names("scenario") + names("sweep")
    done = cli.invoke(app, ["scenarios", "copy", "quickstart", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "quickstart.yaml").read_text() == (LIBRARY / "quickstart.yaml").read_text()
    again = cli.invoke(app, ["scenarios", "copy", "quickstart", str(tmp_path)])
    assert again.exit_code == 2 and "already exists" in again.output


def test_drsim_run_by_name_from_an_empty_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = cli.invoke(app, ["run", "quickstart", "--households", "300", "--backend", "serial",
                            "--out", "out"])
    assert done.exit_code == 0, done.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["scenario"]["file"] == "quickstart.yaml"
    unknown = cli.invoke(app, ["run", "quickstrat", "--backend", "serial"])
    assert unknown.exit_code == 2
    assert unknown.output.strip().startswith("quickstrat: (file): no such file")
    assert len(unknown.output.strip().splitlines()) == 1


def test_drsim_version_is_the_package_version():
    from drsim.results.summary import code_version

    shown = cli.invoke(app, ["--version"])
    assert shown.exit_code == 0 and shown.stdout.strip() == f"drsim {code_version()['drsim']}"
    assert code_version()["drsim"] is not None
