"""The ``drsim baselines`` command: its table, its folder, what it refuses (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from drsim.cli import app
from drsim.pipeline.baseline_accuracy import LEVELS, baseline_methods
from drsim.results.baseline_table import FIGURE, TABLE_CSV

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "drsim/data/scenarios" / "quickstart.yaml"
runner = CliRunner()


def baselines(*args) -> object:
    return runner.invoke(app, ["baselines", *map(str, args)])


def test_baselines_prints_and_writes_the_table(tmp_path):
    out = tmp_path / "acc"
    result = baselines(QUICKSTART, "--households", 5, "--out", out)
    assert result.exit_code == 0, result.output
    for method in baseline_methods():
        assert method in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == sorted(summary["files"])
    assert summary["households_per_group"] == 5 and summary["households"] == 15
    table = pd.read_csv(out / TABLE_CSV)
    assert len(table) == len(baseline_methods()) * len(LEVELS)
    assert (out / FIGURE).stat().st_size > 0


def test_baselines_replaces_only_its_own_folder(tmp_path):
    out = tmp_path / "acc"
    assert baselines(QUICKSTART, "--households", 2, "--out", out).exit_code == 0
    again = baselines(QUICKSTART, "--households", 2, "--out", out)
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert baselines(QUICKSTART, "--households", 3, "--out", out, "--overwrite").exit_code == 0
    assert json.loads((out / "summary.json").read_text())["households_per_group"] == 3
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    refused = baselines(QUICKSTART, "--households", 2, "--out", foreign, "--overwrite")
    assert refused.exit_code == 2 and "refused" in refused.output
    assert "Traceback" not in refused.output
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


def test_a_bad_scenario_is_one_line_naming_file_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(QUICKSTART.read_text().replace("seed: 7", "seed: seven"))
    result = baselines(bad, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "bad.yaml" in result.output and "seed" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_drsim_report_prints_the_table_of_a_baselines_folder(tmp_path):
    out = tmp_path / "acc"
    written = baselines(QUICKSTART, "--households", 2, "--out", out)
    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    table_of = [line for line in written.output.splitlines() if "household" in line]
    assert table_of and table_of == \
        [line for line in report.output.splitlines() if "household" in line]
