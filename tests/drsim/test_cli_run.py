"""The ``drsim run`` command: the run folder, the headline table, errors and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from drsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "drsim/data/scenarios" / "quickstart.yaml"
runner = CliRunner()


def run(*args) -> object:
    return runner.invoke(app, ["run", *map(str, args)])


def flatten(value: object, path: str = "") -> dict[str, object]:
    """A summary as ``{"a.b.c": leaf}`` (empty mappings are leaves)."""
    if not isinstance(value, dict) or not value:
        return {path: value}
    flat: dict[str, object] = {}
    for key, item in value.items():
        flat.update(flatten(item, f"{path}.{key}" if path else str(key)))
    return flat


def test_run_writes_the_folder_and_prints_the_table(spark, tmp_path):
    out = tmp_path / "qs"
    result = run(QUICKSTART, "--households", 300, "--chunk-size", 150, "--out", out)
    assert result.exit_code == 0, result.output
    assert "reduction, adaptive" in result.output
    assert "reference" not in result.output  # the quickstart declares no published results
    names = {p.name for p in out.iterdir()}
    assert {"summary.json", "load_curves.parquet", "system_demand.png",
            "compliance_timeline.png", "events_user_events.parquet",
            "thresholds.parquet"} <= names
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scenario"]["households"] == 300
    assert set(summary["reduction_mwh"]) == {"expected", "traditional", "adaptive"}
    curves = pq.read_table(out / "load_curves.parquet")
    assert set(curves.column("pass").to_pylist()) == {"baseline", "expected", "traditional",
                                                      "adaptive"}
    assert sorted(summary["files"]) == sorted(names)
    assert summary["scenario"]["file"] == "quickstart.yaml"
    assert summary["backend"]["name"] == "spark"
    assert summary["backend"]["master"] == "local[2]"
    assert summary["backend"]["chunks"] == 3  # groups of 100 in chunks of 150
    assert {"backend_start_seconds", "passes_seconds", "tiers_seconds",
            "total_seconds"} <= set(summary["timings"])
    assert summary["second_event_note"] or "adaptive_pass_seconds" in summary["timings"]
    peaks = summary["peaks"]
    assert set(peaks["rebound_mwh"]) == {"expected", "traditional", "adaptive"}
    assert all(peaks["rebound_mwh"][p] >= 0 and peaks["rebound_peak_mw"][p] > 0
               for p in peaks["rebound_mwh"])
    report = runner.invoke(app, ["report", str(out)])  # the headline drsim run printed
    assert report.exit_code == 0 and "reduction, adaptive, MWh (share)" in report.output
    rows = [line for line in result.output.splitlines() if line.startswith("│")]
    assert rows and all(row in report.output.splitlines() for row in rows)
    full = runner.invoke(app, ["report", str(out), "--full"])
    assert full.exit_code == 0 and "reduction_mwh" in full.output

    # --backend serial runs in this process, with Spark's figures (timings aside)
    serial = run(QUICKSTART, "--households", 300, "--chunk-size", 150, "--out",
                 tmp_path / "serial", "--backend", "serial")
    assert serial.exit_code == 0, serial.output
    one = json.loads((tmp_path / "serial" / "summary.json").read_text())
    assert one["backend"]["name"] == "serial"
    for key in ("reduction_mwh", "prediction", "peaks", "incentive", "cost", "second_event"):
        assert one[key] == summary[key], key

    # one summary schema: a run summary is the simulate summary plus the run sections,
    # with the same values for the passes both make
    sim_out = tmp_path / "sim"
    simulated = runner.invoke(app, ["simulate", str(QUICKSTART), "--households", "300",
                                    "--chunk-size", "150", "--out", str(sim_out)])
    assert simulated.exit_code == 0, simulated.output
    sim = flatten(json.loads((sim_out / "summary.json").read_text()))
    got = flatten(summary)
    assert set(sim) <= set(got), sorted(set(sim) - set(got))
    differ = {k for k in sim if sim[k] != got[k]
              and not k.startswith(("timings.", "files", "resources.", "backend.jobs"))
              and k != "backend.app_id"}
    assert not differ, sorted(differ)
    assert set(summary) - {k.split(".")[0] for k in sim} == {
        "prediction", "deficit_at_prediction", "second_event", "second_event_note",
        "incentive", "cost", "monitoring", "shedding", "remote", "appliance_queries"}


@pytest.mark.parametrize("args, code, words", [
    (["--delay-detection", "-1"], 2, ["delay-detection"]),
    (["--households", "0"], 2, ["households"]),
])
def test_bad_options_exit_2(tmp_path, args, code, words):
    result = run(QUICKSTART, "--out", tmp_path / "out", *args)
    assert result.exit_code == code
    assert all(w in result.output for w in words)
    assert not (tmp_path / "out").exists()


def test_bad_scenario_and_bad_query_text_stop_before_any_work(tmp_path):
    bad = tmp_path / "bad.yaml"
    text = QUICKSTART.read_text().replace(
        "  queries: {}", "  queries:\n    meter: 'SEQ (smartMeterEvent a+[]) WHERE b.x > 1'")
    bad.write_text(text)
    result = run(bad, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "monitoring.queries.meter" in result.output and "unknown variable" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()
    appliance = tmp_path / "appliance.yaml"
    appliance.write_text(QUICKSTART.read_text().replace(
        "  queries: {}", "  queries: {}\n  appliance_queries:\n    q:\n      query: "
        "'PATTERN SEQ(dr_start s, ev_pause p) WHERE s.x > p.y WITHIN 1h'"))
    result = run(appliance, "--out", tmp_path / "out3")
    assert result.exit_code == 2 and "monitoring.appliance_queries.q.query" in result.output
    assert "SAME[houseID]" in result.output and not (tmp_path / "out3").exists()
    typo = tmp_path / "typo.yaml"
    typo.write_text(QUICKSTART.read_text().replace("gamma_user:", "gama_user:"))
    result = run(typo, "--out", tmp_path / "out2")
    assert result.exit_code == 2 and "gama_user" in result.output


def test_a_declared_reference_is_shown_beside_the_run(spark, tmp_path):
    data = yaml.safe_load(QUICKSTART.read_text())
    data.update(households=300, chunk_size=100)
    for group in data["groups"]:
        group["size"] = 100
    data["reference"] = {"source": "a published study",
                         "reduction_mwh": {"expected": 2.0, "traditional": 1.0},
                         "utility_noncompliance_time": "19:30"}
    path = tmp_path / "with_reference.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = run(path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "reference" in result.output and "a published study" in result.output
    assert "2.00 (100.0 %)" in result.output and "1.00 (50.0 %)" in result.output
    assert "not given" in result.output  # the adaptive reduction was not declared
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["reference"]["utility_noncompliance_time"] == "19:30"


def test_serial_backend_options(tmp_path, monkeypatch):
    import drsim.api

    calls = []

    def fake_run(scenario, out, **options):
        calls.append((scenario.households, options["backend"]))
        raise RuntimeError("stopped after the options were checked")

    monkeypatch.setattr(drsim.api, "run", fake_run)
    many = run(QUICKSTART, "--out", tmp_path / "out", "--backend", "serial",
               "--households", "20001")
    assert "warning: --backend serial runs all 20,001 households in this one process" in \
        many.output.replace("\n", " ")
    few = run(QUICKSTART, "--out", tmp_path / "out", "--backend", "serial",
              "--households", "20000")
    assert "warning" not in few.output
    assert calls == [(20001, "serial"), (20000, "serial")]
    clash = run(QUICKSTART, "--out", tmp_path / "out", "--backend", "serial", "--master",
                "local[2]")
    assert clash.exit_code == 2 and "the serial backend runs in this process" in clash.output
    unknown = run(QUICKSTART, "--out", tmp_path / "out", "--backend", "dask")
    assert unknown.exit_code == 2 and "dask" in unknown.output
    assert len(calls) == 2


@pytest.mark.parametrize("command", [["run"], ["simulate"], ["sweep"], ["report"],
                                     ["cluster", "up"]])
def test_help_shows_boolean_flags_as_flags(command):
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output and "BOOLEAN" not in result.output
    flags = {"run": "--overwrite", "simulate": "--overwrite", "sweep": "--dry-run",
             "report": "--full", "cluster": "--help"}[command[0]]
    assert re.search(rf"^\s+{flags}\s+\w", result.output, re.M), result.output


def test_overwrite_keeps_a_users_folder_file_and_link(tmp_path):
    """``drsim run --overwrite`` at a user's folder, file or link: exit 2, one line naming
    the path and what is there, and everything as it was (no Spark is started)."""
    mine = tmp_path / "mydocs"
    (mine / "chapters").mkdir(parents=True)
    (mine / "thesis.txt").write_text("three years of work")
    precious = tmp_path / "precious.txt"
    precious.write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(mine, target_is_directory=True)
    for out, what in ((mine, "a folder with 2 entries (chapters/, thesis.txt)"),
                      (precious, "a file (4 bytes)"), (link, "a symbolic link to")):
        for overwrite in ([], ["--overwrite"]):
            result = run(QUICKSTART, "--out", out, "--backend", "serial", *overwrite)
            assert result.exit_code == 2, result.output
            text = result.output.replace("\n", " ")
            assert str(out) in text and what in text and "Traceback" not in text
    assert (mine / "thesis.txt").read_text() == "three years of work"
    assert (mine / "chapters").is_dir() and precious.read_text() == "keep"
    assert link.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == [
        "link", "mydocs", "precious.txt"]


def _with_queries(tmp_path: Path, queries: dict, appliance: dict | None = None) -> Path:
    from drsim.utility.monitoring import QUERIES

    data = yaml.safe_load(QUICKSTART.read_text())
    data["monitoring"]["queries"] = {
        name: QUERIES[name].replace(old, new) for name, (old, new) in queries.items()}
    if appliance:
        data["monitoring"]["appliance_queries"] = {"q": {"query": appliance}}
    path = tmp_path / "replaced.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


@pytest.mark.parametrize("queries, appliance, field, words", [
    ({"meter": ("a[i].accLoad >", "a[i].accLod >")}, None, "monitoring.queries.meter",
     "smartMeterEvent events carry no attribute 'accLod' (did you mean 'accLoad'?"),
    ({"group": ("a[last].sumAccLoad", "a[last].sumLoad")}, None, "monitoring.queries.group",
     "groupAlertEvent events carry no attribute 'sumLoad'"),
    ({"group_alert": ("FROM userNonComplianceEvent", "FROM userNonComplainceEvent")}, None,
     "monitoring.queries.group_alert", "event type 'userNonComplainceEvent' is not in"),
    ({"utility_alert": ("RETURN utilityAlertEvent(time, load)",
                        "RETURN utilityAlertEvent(time, load AS total)")}, None,
     "monitoring.queries.utility_alert", "its outputs carry no 'load' (RETURN gives time, "
                                         "total)"),
    ({}, "PATTERN SEQ(dr_start s, start_wet w) WHERE SAME[houseID] AND w.appliance = 1 "
         "WITHIN 3h", "monitoring.appliance_queries.q.query",
     "start_wet events carry no attribute 'appliance'"),
    ({}, "PATTERN SEQ(dr_start s, start_wett w) WHERE SAME[houseID] WITHIN 3h",
     "monitoring.appliance_queries.q.query",
     "event type 'start_wett' is not in this stream (did you mean 'start_wet'?"),
])
def test_a_query_reading_what_its_events_do_not_carry_stops_in_one_line_before_spark(
        tmp_path, queries, appliance, field, words):
    """The serial backend found a bad attribute at the first event (Spark: a trace of 449
    lines), and one in RETURN or a misspelt type not at all (a wrong answer): both are
    refused before Spark starts (this test starts none), in one line naming the scenario
    file and the field."""
    path = _with_queries(tmp_path, queries, appliance)
    result = run(path, "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1, result.output  # not even the empty line of a progress bar
    assert lines[0].startswith(f"{path}: {field}: line ") and words in lines[0], lines[0]
    assert not (tmp_path / "out").exists()


def _interrupt(monkeypatch, module, name: str, after: bool) -> None:
    """``module.name`` raising KeyboardInterrupt (as Ctrl-C) before it runs, or after."""
    real = getattr(module, name)

    def interrupted(*args, **kwargs):
        if after:
            real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(module, name, interrupted)


def test_an_interrupted_run_says_what_it_left_at_out(tmp_path, monkeypatch):
    """Ctrl-C once the folder is in place: it is complete, and the message says so (it
    said "no result folder was written"); before it: nothing was written, or what was
    there is as it was."""
    import drsim.api
    import drsim.pipeline.stages
    import drsim.results.output

    out = tmp_path / "out"
    args = (QUICKSTART, "--out", out, "--households", "300", "--backend", "serial")
    with monkeypatch.context() as patch:
        _interrupt(patch, drsim.pipeline.stages, "run", after=False)
        before = run(*args)
    assert before.exit_code == 130
    assert before.output.splitlines() == [f"interrupted: nothing was written to {out}"]
    assert not out.exists()
    with monkeypatch.context() as patch:
        _interrupt(patch, drsim.results.output, "write_run", after=True)
        after = run(*args)
    assert after.exit_code == 130
    assert after.output.splitlines()[-1] == (
        f"interrupted: the result folder {out} is complete (written before the interruption)")
    assert json.loads((out / "summary.json").read_text())["scenario"]["households"] == 300
    with monkeypatch.context() as patch:
        _interrupt(patch, drsim.pipeline.stages, "run", after=False)
        again = run(*args, "--overwrite")
    assert again.output.splitlines() == [
        f"interrupted: nothing was written; {out} holds the result folder it held before"]
    with monkeypatch.context() as patch:
        _interrupt(patch, drsim.api, "run_streaming", after=False)
        streamed = run(*args, "--streaming", "--overwrite")
    assert streamed.exit_code == 130
    assert streamed.output.splitlines() == [
        f"interrupted: {out} holds a stopped streamed run; the same command resumes it"]
