"""``drsim report``: summary.json sections as tables, and clear errors for bad folders."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from drsim.cli import app
from drsim.results.report import (
    ReportError,
    format_value,
    load_summary,
    print_report,
    summary_tables,
)
from drsim.sweeps.report import mean_pm, sweep_table

SAMPLE = {  # the layout of a run's summary.json (drsim.results.summary), figures of a 100k run
    "scenario": {"name": "paper_100k", "file": "paper_100k.yaml", "households": 100000,
                 "ev_households": 30000, "groups": {"G1": 10000, "G2": 20000},
                 "settings": {
                     "name": "paper_100k", "seed": 2021,
                     "groups": [{"name": "G1", "range": [1, 10000], "incentive_u": 1.05},
                                {"name": "G2", "range": [10001, 30000], "incentive_u": 1.1}],
                     "incentive": {"u_mappings": [1.05, 1.1, 1.15, 1.2], "beta": 1.8}}},
    "seeds": {"scenario": 2021},
    "reduction_goal": "expected",
    "reduction_goal_mwh": 83.28,
    "reduction_mwh": {"expected": 83.28, "traditional": 47.89, "adaptive": 82.61},
    "reduction_breakdown_mwh": {"expected": {"ev": 10.0, "wet": 5.5},
                                "traditional": {"ev": 6.0, "wet": 3.25}},
    "groups": {"G1": {"households": 10000, "reduction_mwh": {"expected": 8.5,
                                                             "traditional": 4.25}},
               "G2": {"households": 20000, "reduction_mwh": {"expected": 17.0,
                                                             "traditional": 9.75}}},
    "energy": {"kwh_per_household_day": 12.56, "evening_peak_kw_per_household": 2.51,
               "evening_peak_time": "19:02"},
    "peaks": {"daily_peak_mw": {"baseline": 251.2345, "traditional": 231.0,
                                "adaptive": 229.81},
              "rebound_peak_mw": {"traditional": 240.5, "adaptive": 238.25},
              "rebound_peak_time": {"traditional": "20:31", "adaptive": "20:33"},
              "rebound_mwh": {"traditional": 4.5, "adaptive": 3.75}},
    "prediction": {"utility_noncompliance_time": "19:11", "groups_compliant": 2,
                   "group_noncompliance_times": {"G1": "19:08", "G2": None},
                   "second_event": {"start": "19:21", "end": "20:30"}},
    "incentive": {"lambda_o": 1.0, "lambda_new": 1.2395, "theta_o_mean": 0.45,
                  "p_inc": 0.5, "kappa": 50000, "penalty_c_nc": None},
    "cost": {"communication_events": 12345678, "computation_events": 2345678,
             "by_tier": {"meter": {"events": 100, "partial_matches": 7},
                         "group": {"events": 20, "partial_matches": 3}}},
    "backend": {"name": "spark", "master": "local[2]", "partitions": 8, "tasks": 8},
    "timings": {"passes_seconds": 12.5, "total_seconds": 20.25,
                "chunk_seconds": {"min": 0.5, "mean": 0.75, "max": 1.25}},
    "files": ["summary.json", "load_curves.parquet"],
}


def render(tables, width: int = 120) -> str:
    console = Console(width=width, record=True, color_system=None)
    for table in tables:
        console.print(table)
    return console.export_text()


def as_sample(summary: dict) -> dict:
    """A real run's ``summary`` with SAMPLE's name, reductions and peaks."""
    out = json.loads(json.dumps(summary))
    out["scenario"]["name"] = SAMPLE["scenario"]["name"]
    out["reduction_mwh"] = dict(SAMPLE["reduction_mwh"])
    out["peaks"]["daily_peak_mw"]["adaptive"] = 229.81
    return out


def write_run(tmp_path: Path, summary=SAMPLE) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def test_format_value():
    assert format_value(None) == "—"
    assert format_value(True) == "true"
    assert format_value(100000) == "100,000"
    assert format_value(2021) == "2021"  # a seed or a year, not a count
    assert format_value(7904249929207116729) == "7904249929207116729"
    assert format_value(82.61) == "82.61"
    assert format_value(1.2395) == "1.2395"
    assert format_value(251234.5) == "251,234.50"
    assert format_value(12345678.9) == "12,345,679"
    assert format_value(float("nan")) == "nan"
    assert format_value([1.05, 1.1]) == "[1.05, 1.1]"
    assert format_value("19:11") == "19:11"
    assert format_value([{"a": 1}]) == '[{"a": 1}]'
    assert mean_pm(82.6134, 0.6712) == "82.61 ± 0.67"
    assert mean_pm(48.2413, 1.06) == "48.2 ± 1.1"
    assert mean_pm(1234.5, 25.0) == "1,234 ± 25"  # round-half-even on the mean
    assert mean_pm(5.0, 0.0) == "5 ± 0"


def test_sections_in_order_with_one_table_each():
    tables = summary_tables(SAMPLE)
    titles = [str(t.title) for t in tables]
    assert titles[:6] == ["summary", "reduction_mwh", "prediction", "incentive", "peaks",
                          "cost"]
    assert titles.index("cost") < titles.index("reduction_breakdown_mwh") < titles.index(
        "scenario")
    assert titles.index("cost") < titles.index("backend") < titles.index("scenario")
    # the scenario comes last, the groups of its settings as rows
    assert titles[-2:] == ["scenario", "scenario.settings.groups"]


def test_report_text_shows_every_figure():
    text = render(summary_tables(SAMPLE))
    # single values, and the scenario's
    assert "reduction_goal_mwh" in text and "83.28" in text
    assert any("households" in line and "100,000" in line for line in text.splitlines())
    assert any("evening_peak_time" in line and "19:02" in line for line in text.splitlines())
    # the reductions
    for name, value in (("expected", "83.28"), ("traditional", "47.89"), ("adaptive", "82.61")):
        assert any(name in line and value in line for line in text.splitlines()), name
    # nested keys are dotted; nulls shown as —
    assert any("second_event.start" in line and "19:21" in line for line in text.splitlines())
    assert any("group_noncompliance_times.G1" in line and "19:08" in line
               for line in text.splitlines())
    assert any("penalty_c_nc" in line and "—" in line for line in text.splitlines())
    assert "kappa" in text and "50,000" in text
    # a mapping of like mappings is a matrix: a row per group (or pass), a column per key
    groups = render([t for t in summary_tables(SAMPLE) if str(t.title) == "groups"])
    header = next(line for line in groups.splitlines() if "households" in line)
    assert "reduction_mwh.expected" in header and "reduction_mwh.traditional" in header
    assert any(line.split("│")[1].strip() == "G2" and "20,000" in line and "9.75" in line
               for line in groups.splitlines() if "│" in line)
    breakdown = render([t for t in summary_tables(SAMPLE)
                        if str(t.title) == "reduction_breakdown_mwh"])
    assert any(line.split("│")[1].strip() == "traditional" and "3.25" in line
               for line in breakdown.splitlines() if "│" in line)
    # peaks: a measure per pass (not the same passes in each), as dotted keys
    peaks = render([t for t in summary_tables(SAMPLE) if str(t.title) == "peaks"])
    assert any("daily_peak_mw.adaptive" in line and "229.81" in line
               for line in peaks.splitlines())
    assert any("rebound_peak_time.adaptive" in line and "20:33" in line
               for line in peaks.splitlines())
    by_tier = render([t for t in summary_tables(SAMPLE) if str(t.title) == "cost.by_tier"])
    assert "partial_matches" in by_tier and "meter" in by_tier
    # lists of mappings are tables with a row per item
    groups = render([t for t in summary_tables(SAMPLE)
                     if str(t.title) == "scenario.settings.groups"])
    assert "incentive_u" in groups and "G2" in groups and "[10001, 30000]" in groups
    assert "[summary.json, load_curves.parquet]" in text


def test_any_nested_mapping_works():
    odd = {"a": {"b": {"c": {"d": 1}}, "e": [1, 2]}, "x": [{"k": 1}, {"k": 2, "m": "y"}],
           "mixed": [1, {"k": 2}], "empty": {}, "markup": {"[bold]not markup[/]": "[red]x"}}
    text = render(summary_tables(odd))
    assert "b.c.d" in text and "[1, 2]" in text
    assert "[bold]not markup[/]" in text and "[red]x" in text  # printed literally
    assert "k" in text and "m" in text


def test_sections_filter_and_unknown_section():
    tables = summary_tables(SAMPLE, sections=["reduction_mwh"])
    assert [str(t.title) for t in tables] == ["reduction_mwh"]
    with pytest.raises(ReportError, match=r"no section 'reducton_mwh' \(did you mean "
                                          r"'reduction_mwh'\?\); accepted: summary, "):
        summary_tables(SAMPLE, sections=["reducton_mwh"])


def test_missing_and_bad_folders(tmp_path):
    with pytest.raises(ReportError, match=r"nowhere: no such folder"):
        load_summary(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ReportError, match=r"empty: no summary\.json in this folder"):
        load_summary(empty)
    (empty / "summary.json").write_text("{not json")
    with pytest.raises(ReportError, match=r"summary\.json: invalid JSON at line 1, column 2"):
        load_summary(empty)
    (empty / "summary.json").write_text("[1, 2]")
    with pytest.raises(ReportError, match="expected a JSON object"):
        load_summary(empty)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(ReportError, match="not a folder"):
        load_summary(a_file)


def test_print_report_heading(tmp_path, run_summary):
    run = write_run(tmp_path, as_sample(run_summary))
    console = Console(width=100, record=True, color_system=None)
    print_report(run, console)
    text = console.export_text()
    assert text.splitlines()[0] == f"paper_100k: {run}"
    assert "82.61" in text


def test_the_headline_of_a_summary_of_another_version_says_so_in_one_line(tmp_path):
    run = write_run(tmp_path)  # SAMPLE: the layout of an earlier version
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 2, result.output
    line = " ".join(result.output.split())
    assert line.startswith(f"{run / 'summary.json'}: not a summary of this drsim version (")
    assert "field required" in line and line.endswith(f"drsim report {run} --full prints "
                                                      "every field")
    full = runner.invoke(app, ["report", str(run), "--full"])  # every field, as it is
    assert full.exit_code == 0 and "communication_events" in full.stdout


def test_sweep_table_shows_mean_and_ci():
    table = pd.DataFrame({
        "point": [0, 1], "delay_detection": [0, 10], "n": [3, 3],
        "reduction_mwh.adaptive.mean": [82.6134, 81.5], "reduction_mwh.adaptive.ci95_low":
        [81.9422, math.nan], "reduction_mwh.adaptive.ci95_high": [83.2846, math.nan],
        "reduction_mwh.adaptive.n": [3, 1],
        "t.mean": [1151.0, 1161.0], "t.ci95_low": [1150.0, 1161.0],
        "t.ci95_high": [1152.0, 1161.0], "t.n": [3, 3], "t.clock": ["19:11", "19:21"],
        "method": ["model", "model"]})
    text = render([sweep_table(table, ["delay_detection"], ["reduction_mwh.adaptive", "t",
                                                            "method"])])
    assert "82.61 ± 0.67" in text
    assert "81.5 (n=1)" in text  # one value: no interval, and fewer values than runs
    assert "19:11 ± 1 min" in text and "19:21 ± 0 min" in text
    assert "model" in text


runner = CliRunner()


def test_cli_report_prints_the_headline_by_default_and_every_field_with_full(
        tmp_path, run_summary):
    reference = {"source": "the dissertation, §6.3.2",
                 "reduction_mwh": {"expected": 83.28, "traditional": 47.89, "adaptive": 82.61},
                 "utility_noncompliance_time": "19:11", "groups_compliant_at_prediction": 2}
    summary = {**as_sample(run_summary), "reference": reference,
               "reduction_mwh": {"expected": 21.354417, "traditional": 12.582193,
                                 "adaptive": 21.881209}}
    run = write_run(tmp_path, summary)
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    # drsim run's headline: rounded, each reduction with its share, the reference beside
    assert "21.88 (102.5 %)" in text and "82.61 (99.2 %)" in text and "12.58 (58.9 %)" in text
    # the table's header (found by its text: the run's long path may wrap the lines above)
    header = [line for line in text.splitlines() if "this run" in line]
    assert len(header) == 1 and "reference" in header[0]
    assert "the dissertation, §6.3.2" in text
    assert "19:11" in text
    assert "21.881209" not in text and "reduction_mwh" not in text
    assert len(text.splitlines()) < 25
    full = runner.invoke(app, ["report", str(run), "--full"])
    assert full.exit_code == 0, full.output
    assert "reduction_mwh" in full.stdout and "21.8812" in full.stdout
    assert "lambda_new" in full.stdout

    only = runner.invoke(app, ["report", str(run), "--section", "incentive", "-s", "peaks"])
    assert only.exit_code == 0, only.output
    assert "lambda_new" in only.stdout and "229.81" in only.stdout
    assert "rebound_mwh" in only.stdout
    assert "reduction_mwh" not in only.stdout


def test_cli_report_errors(tmp_path):
    missing = runner.invoke(app, ["report", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2
    assert "nowhere: no such folder" in missing.output and "Traceback" not in missing.output
    empty = tmp_path / "empty"
    empty.mkdir()
    no_summary = runner.invoke(app, ["report", str(empty)])
    assert no_summary.exit_code == 2 and "no summary.json" in no_summary.output
    bad_section = runner.invoke(app, ["report", str(write_run(tmp_path)), "-s", "pekas"])
    assert bad_section.exit_code == 2 and "did you mean 'peaks'" in bad_section.output


def test_cli_report_on_an_unfinished_sweep(tmp_path):
    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "sweep.json").write_text(json.dumps(
        {"name": "s", "axes": [], "metrics": [], "points": [{"runs": ["a", "b"]}]}))
    (folder / "runs.jsonl").write_text(json.dumps({"key": "k", "summary": {}}) + "\n")
    result = runner.invoke(app, ["report", str(folder)])
    assert result.exit_code == 2
    assert "not finished (1 of 2 runs recorded" in result.output.replace("\n", " ")


@pytest.mark.parametrize("make, words", [
    (lambda d: (d / "summary.json").write_text("{}"),
     "summary.json: not a summary drsim wrote (an empty JSON object, without the list "
     "'files' naming summary.json)"),
    (lambda d: (d / "summary.json").write_text('{"a": 1}'),
     "summary.json: not a summary drsim wrote (a JSON object with the key a, without"),
    (lambda d: (d / "summary.json").write_text("[1, 2]"),
     "summary.json: expected a JSON object of sections, got list"),
    (lambda d: None, ": no summary.json in this folder"),
    (lambda d: (d / "sweep.json").write_text('{"name": "x"}'),
     "sweep.json: not a sweep record drsim wrote (no list 'axes', 'metrics', 'points')"),
    (lambda d: (d / "sweep.json").write_text('["a"]'),
     "sweep.json: expected a JSON object, got list"),
    (lambda d: [(d / "sweep.json").write_text(json.dumps(
        {"axes": ["beta"], "metrics": ["m"], "points": []})),
        (d / "table.csv").write_text("a,b\n1,2\n")],
     "table.csv: not a sweep table drsim wrote (no column 'point', 'n', 'beta')"),
])
def test_cli_report_refuses_a_folder_drsim_did_not_write_in_one_line(tmp_path, make, words):
    folder = tmp_path / "folder"
    folder.mkdir()
    make(folder)
    result = runner.invoke(app, ["report", str(folder)])
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(str(folder)), result.output
    assert words in lines[0], lines[0]
