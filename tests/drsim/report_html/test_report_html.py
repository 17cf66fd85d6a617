"""``drsim report --html``: the page's content, the data read from the folders, where and
how the file is written, and the command's errors."""

from __future__ import annotations

import dataclasses
import html
import json
import re

import numpy as np
import pandas as pd
import pyarrow.dataset as ds
import pytest
import yaml
from plotly.offline import get_plotlyjs
from typer.testing import CliRunner

from drsim.cli import app
from drsim.report_html import writing
from drsim.report_html.figures import MAX_GROUP_ROWS, compliance_figure, cumulative_reduction
from drsim.report_html.page import GENERATOR, run_page, sweep_page
from drsim.report_html.run_view import read_run_folder
from drsim.report_html.sweep_view import read_sweep_view
from drsim.report_html.writing import default_output, write_html_report
from drsim.results.headline import run_table
from drsim.results.summary_model import Summary
from drsim.units import clock_minutes

cli = CliRunner()
MAX_BYTES = 5_000_000  # the report of the paper run: at most 5 MB


def figures_in(page: str) -> int:
    return page.count("Plotly.newPlot(")


def pre_text(page: str) -> str:
    return html.unescape(re.search(r'<pre class="scenario">(.*?)</pre>', page, re.S).group(1))


def test_the_run_page_holds_the_headline_with_the_figures_and_the_scenario(run_folder):
    summary = json.loads((run_folder / "summary.json").read_text())
    view = read_run_folder(run_folder)
    page = run_page(view)
    columns, rows = run_table(Summary.model_validate(summary))
    for cell in [*columns, *(c for row in rows for c in row)]:
        assert f">{html.escape(cell)}<" in page
    assert figures_in(page) == 3  # demand, reduction against the goal, compliance per group
    assert page.count(get_plotlyjs()[:500]) == 1  # plotly.js inlined once
    assert GENERATOR in page[:2000]
    assert yaml.safe_load(pre_text(page)) == summary["scenario"]["settings"]
    assert len(page.encode()) <= MAX_BYTES


def test_folder_text_is_escaped(run_folder):
    view = read_run_folder(run_folder)
    hostile = "</pre><script>alert('x')</script> & <b>"
    view = dataclasses.replace(view, title=hostile, scenario_yaml=hostile,
                               rows=[(hostile, "1", "2")] + view.rows[1:])
    page = run_page(view)
    assert "<script>alert" not in page and "<b>" not in page.split("</head>")[1]
    assert pre_text(page) == hostile


def test_the_demand_is_the_load_curves_summed_and_saves_the_summary_reductions(run_folder):
    summary = json.loads((run_folder / "summary.json").read_text())
    view = read_run_folder(run_folder)
    curves = pd.read_parquet(run_folder / "load_curves.parquet")
    assert list(view.system_mw) == list(dict.fromkeys(curves["pass"]))
    at_19 = curves[curves["minute"] == 19 * 60].groupby("pass")["kw"].sum() / 1000.0
    for name, mw in view.system_mw.items():
        assert mw.shape == (1440,) and mw[19 * 60] == pytest.approx(at_19[name])
    saved = cumulative_reduction(view)
    assert set(saved) == set(summary["reduction_mwh"])
    for name, mwh in saved.items():
        assert mwh[-1] == pytest.approx(summary["reduction_mwh"][name], rel=1e-9, abs=1e-12)


def test_the_shares_flagged_count_the_user_events_until_each_group_stops(run_folder):
    summary = json.loads((run_folder / "summary.json").read_text())
    data = read_run_folder(run_folder).compliance
    events = ds.dataset(run_folder / "events_user_events.parquet").to_table().to_pandas()
    sizes = summary["scenario"]["groups"]  # no control group in this scenario
    t_nc = clock_minutes(summary["prediction"]["utility_noncompliance_time"])
    trad = events[events["pass"] == "traditional"]
    counts = trad.groupby(["groupID", "time"]).size()
    for g, name in enumerate(data.group_names):
        share = data.flagged["traditional"][g]
        tested = np.isfinite(share)
        assert tested.any() and (data.test_times[tested] <= t_nc).all()
        expected = [counts.get((g, t), 0) / sizes[name] for t in data.test_times[tested]]
        assert share[tested] == pytest.approx(expected)
    assert data.gamma.shape == (len(data.group_names), len(data.test_times))
    assert np.allclose(data.gamma, summary["prediction"]["gamma_user"]["value"])


def test_the_sweep_page_shows_the_table_and_a_figure_per_metric(sweep_folder):
    view = read_sweep_view(sweep_folder)
    page = sweep_page(view)
    assert view.axes == ["delay_detection"] and len(view.rows) == 3
    assert "3 points x 2 seeds" in page
    for row in view.rows:
        for cell in row:
            assert f">{html.escape(cell)}<" in page
    assert any("±" in cell for row in view.rows for cell in row)
    assert figures_in(page) == len(view.metrics) == 4  # 3 reductions and a clock metric
    assert page.count('"error_y"') >= 4  # the intervals
    assert page.count(get_plotlyjs()[:500]) == 1


def test_the_file_goes_beside_the_folder_and_replaces_only_a_report_of_drsim(run_folder,
                                                                            tmp_path):
    assert default_output(run_folder) == run_folder.with_name(run_folder.name + ".html")
    out = tmp_path / "report.html"
    assert write_html_report(run_folder, out) == out
    assert GENERATOR in out.read_text()[:2000]
    with pytest.raises(writing.ReportError, match="--overwrite replaces it"):
        write_html_report(run_folder, out)
    out.write_text(out.read_text().replace("Headline", "old"))
    write_html_report(run_folder, out, overwrite=True)
    assert "Headline" in out.read_text()
    mine = tmp_path / "mine.html"
    mine.write_text("<html>my notes</html>")
    for overwrite in (False, True):
        with pytest.raises(writing.ReportError, match="not a report drsim wrote"):
            write_html_report(run_folder, mine, overwrite=overwrite)
    assert mine.read_text() == "<html>my notes</html>"
    with pytest.raises(writing.ReportError, match="inside the reported folder"):
        write_html_report(run_folder, run_folder / "report.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.html", "report.html"]


def test_cli_writes_the_report_and_says_where(sweep_folder, tmp_path):
    out = tmp_path / "sweep.html"
    result = cli.invoke(app, ["report", str(sweep_folder), "--html", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"report: {out}" in result.stdout.replace("\n", "")
    assert figures_in(out.read_text()) == 4


@pytest.mark.parametrize("args, message", [
    (["--html"], "no such folder"),
    (["--html", "--full"], "--full and --section apply to the printed one"),
    (["--out", "x.html"], "--out and --overwrite apply to --html"),
])
def test_cli_errors_are_one_line_with_exit_2(tmp_path, run_folder, args, message):
    folder = tmp_path / "missing" if args == ["--html"] else run_folder
    result = cli.invoke(app, ["report", str(folder), *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output
    if args == ["--html"]:
        assert str(folder) in lines[0]


def test_cli_without_plotly_says_how_to_install_it(run_folder, tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "plotly" else find_spec(name, *a))
    out = tmp_path / "r.html"
    result = cli.invoke(app, ["report", str(run_folder), "--html", "-o", str(out)])
    assert result.exit_code == 2
    assert result.output.strip() == writing.MISSING_PLOTLY
    assert not out.exists()


def test_a_folder_of_another_kind_is_refused_in_one_line(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"a": 1}))
    result = cli.invoke(app, ["report", str(folder), "--html"])
    assert result.exit_code == 2 and "not a summary drsim wrote" in result.output
    assert not default_output(folder).exists()


def test_many_groups_are_a_heatmap_of_the_share_over_gamma(run_folder):
    view = read_run_folder(run_folder)
    data = view.compliance
    n = MAX_GROUP_ROWS + 1
    many = dataclasses.replace(
        data, group_names=[f"G{i}" for i in range(n)],
        gamma=np.resize(data.gamma, (n, data.gamma.shape[1])),
        flagged={k: np.resize(v, (n, v.shape[1])) for k, v in data.flagged.items()},
        latch={k: [None] * n for k in data.latch})
    fig = compliance_figure(dataclasses.replace(view, compliance=many))
    (heatmap,) = fig.data
    assert heatmap.type == "heatmap" and len(heatmap.y) == n
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = many.flagged["traditional"] / many.gamma
    assert np.allclose(np.asarray(heatmap.z, dtype=float), ratio, equal_nan=True)
    few = compliance_figure(view)
    assert {t.name for t in few.data} >= {"traditional: share flagged", "threshold γ"}
