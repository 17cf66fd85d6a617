"""The ``drsim simulate`` command: result folder, error messages and exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from drsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "drsim/data/scenarios" / "quickstart.yaml"
pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support pandas:FutureWarning")

runner = CliRunner()


def simulate(*args: str):
    return runner.invoke(app, ["simulate", *map(str, args)])


def test_simulate_writes_summary_curves_and_figures(spark, tmp_path):
    out = tmp_path / "qs"
    result = simulate(QUICKSTART, "--out", out, "--households", 200, "--chunk-size", 50)
    assert result.exit_code == 0, result.output
    assert "quickstart, 200 households: simulation" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qs"]  # no temporary leftovers
    assert sorted(p.name for p in out.iterdir()) == [
        "breakdown.png", "load_curves.parquet", "summary.json", "system_demand.png"]

    summary = json.loads((out / "summary.json").read_text())
    scenario, energy, peaks = summary["scenario"], summary["energy"], summary["peaks"]
    assert scenario["households"] == 200
    assert 0 < scenario["ev_households"] < 200
    assert 2 < energy["kwh_per_household_day"] < 50
    assert 0.1 < energy["evening_peak_kw_per_household"] < 10
    assert re.fullmatch(r"(1[6-9]|2[01]):[0-5]\d", energy["evening_peak_time"])  # 16-22 h
    assert set(energy["daily_mwh"]) == {"baseline", "expected", "traditional"}
    assert energy["daily_mwh"]["baseline"] == pytest.approx(
        energy["kwh_per_household_day"] * 200 / 1000)
    for name in ("expected", "traditional"):
        assert isinstance(summary["reduction_mwh"][name], float)
        breakdown = summary["reduction_breakdown_mwh"][name]
        assert sorted(breakdown) == ["cold", "ev", "rest", "wet"]
        assert sum(breakdown.values()) == pytest.approx(summary["reduction_mwh"][name])
        # rebound: the 180 minutes after the program end, energy above the baseline
        assert peaks["rebound_peak_mw"][name] > 0
        assert peaks["rebound_peak_mw"][name] <= peaks["daily_peak_mw"][name]
        assert "20:30" <= peaks["rebound_peak_time"][name] < "23:30"
        assert isinstance(peaks["rebound_mwh"][name], float)
        assert peaks["rebound_mwh"][name] >= 0
    assert set(peaks["daily_peak_mw"]) == {"baseline", "expected", "traditional"}
    est = summary["baseline"]
    assert est["method"] == "same_day" and est["error"] == 0.0
    assert est["expected_mwh"] < est["baseline_mwh"]
    assert est["expected_reduction_mwh"] == pytest.approx(est["baseline_mwh"] - est["expected_mwh"])
    # same_day without M&V error: B is the simulated no-DR day itself
    assert est["baseline_mwh"] == pytest.approx(est["simulated_baseline_mwh"], rel=1e-9)
    assert summary["reduction_goal_mwh"] == pytest.approx(est["expected_reduction_mwh"])
    assert sorted(summary["groups"]) == ["east", "north", "south"]
    assert sum(g["households"] for g in summary["groups"].values()) == 200
    assert scenario["name"] == "quickstart"
    assert scenario["file"] == "quickstart.yaml"
    settings = scenario["settings"]  # the whole scenario, as run
    assert settings["households"] == 200
    assert (settings["dr_program"]["start"], settings["dr_program"]["end"]) == (
        "18:30", "20:30")
    assert summary["seeds"]["scenario"] == settings["seed"]
    assert set(summary["code_version"]) == {"drsim", "git"}
    backend = summary["backend"]
    assert backend["name"] == "spark"
    assert backend["master"] == "local[2]" and backend["parallelism"] == 2
    assert backend["app_id"]
    assert backend["chunks"] == backend["partitions"] == backend["tasks"] == 6
    assert backend["chunk_size"] == 50
    assert [job["label"] for job in backend["jobs"]] == ["passes"]
    resources = summary["resources"]
    assert resources["peak_task_memory_bytes"] > 0
    assert 0 < resources["driver_peak_rss_bytes"] < resources["jvm_peak_rss_bytes"]
    timings = summary["timings"]
    assert timings["passes_seconds"] > 0
    assert timings["total_seconds"] >= timings["passes_seconds"]
    chunk = timings["chunk_seconds"]
    assert 0 <= chunk["min"] <= chunk["mean"] <= chunk["max"]
    assert sorted(summary["files"]) == sorted(p.name for p in out.iterdir())

    table = pq.read_table(out / "load_curves.parquet")
    assert table.schema.names == ["pass", "group", "minute", "kw"]
    assert [f.type for f in table.schema] == [pa.string(), pa.string(), pa.int16(),
                                              pa.float64()]
    assert table.num_rows == 3 * 3 * 1440
    assert set(table.column("pass").to_pylist()) == {"baseline", "expected", "traditional"}
    baseline = table.filter(pa.compute.equal(table.column("pass"), "baseline"))
    daily_kwh = sum(baseline.column("kw").to_pylist()) / 60
    assert daily_kwh / 200 == pytest.approx(energy["kwh_per_household_day"])
    # the rebound from the curves: the 180 minutes after the program end (20:30), the
    # energy above the baseline counted only where positive
    system = table.to_pandas().groupby(["pass", "minute"])["kw"].sum().unstack("minute")
    after = system.loc[:, 20 * 60 + 30:20 * 60 + 30 + 179]
    for name in ("expected", "traditional"):
        above = (after.loc[name] - after.loc["baseline"]).clip(lower=0)
        assert peaks["rebound_mwh"][name] == pytest.approx(above.sum() / 60 / 1000)
        assert peaks["rebound_peak_mw"][name] == pytest.approx(after.loc[name].max() / 1000)

    for png in ("system_demand.png", "breakdown.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # an existing folder is refused without --overwrite, and left as it was
    before = (out / "summary.json").read_bytes()
    refused = simulate(QUICKSTART, "--out", out, "--households", 200, "--chunk-size", 50)
    assert refused.exit_code == 2
    assert "already exists" in refused.output and "Traceback" not in refused.output
    assert (out / "summary.json").read_bytes() == before

    # ... and replaced with it, unless it holds a file drsim did not write
    (out / "notes.txt").write_text("the user's notes")
    kept = simulate(QUICKSTART, "--out", out, "--households", 200, "--overwrite")
    assert kept.exit_code == 2 and "notes.txt" in kept.output, kept.output
    assert (out / "notes.txt").exists() and (out / "summary.json").read_bytes() == before
    (out / "notes.txt").unlink()
    again = simulate(QUICKSTART, "--out", out, "--households", 200, "--chunk-size", 80,
                     "--overwrite")
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qs"]
    # the same numbers for another chunk size (only timings and job statistics differ)
    summary2 = json.loads((out / "summary.json").read_text())
    for key in ("reduction_mwh", "reduction_breakdown_mwh", "peaks", "groups", "energy",
                "baseline"):
        assert summary2[key] == summary[key], key
    assert summary2["backend"]["chunks"] == 3  # groups of 67, 67 and 66 in chunks of 80


def test_bad_scenario_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nseed: 1\nhouseholds: 100\nchunk_size: 50\n"
                   "groups:\n  - name: a\n    size: 60\n  - name: b\n    size: 30\n"
                   "colour: blue\n")
    result = simulate(bad, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "bad.yaml" in result.output
    assert "colour" in result.output
    assert "add up to 90" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_missing_scenario_file_exits_2(tmp_path):
    result = simulate(tmp_path / "nowhere.yaml", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "nowhere.yaml" in result.output and "no such file" in result.output
    assert "Traceback" not in result.output


def test_existing_output_folder_exits_2(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = simulate(QUICKSTART, "--out", out)
    assert result.exit_code == 2
    assert "already exists" in result.output and "--overwrite" in result.output
    assert "Traceback" not in result.output
    assert list(out.iterdir()) == []


def test_python_m_drsim_help():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run([sys.executable, "-m", "drsim", "simulate", "--help"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--out" in done.stdout and "--households" in done.stdout
