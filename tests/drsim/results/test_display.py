"""What a notebook shows of a result: ``_repr_html_`` of a run, a simulation and a sweep."""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd

from drsim.results.display import headline_html, html_table
from drsim.results.headline import run_table
from drsim.results.result import RunResult, SimulationResult
from drsim.results.summary_model import Summary
from drsim.sweeps.runner import SweepOutcome


class _Cells(HTMLParser):
    """The text of an HTML table's cells, row by row, and every tag opened."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tags: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def cells(text: str) -> _Cells:
    parser = _Cells()
    parser.feed(text)
    return parser


def test_a_runs_html_is_its_headline_table(run_summary):
    shown = RunResult(run_summary, run=None)._repr_html_()  # the summary alone is shown
    columns, rows = run_table(Summary.model_validate(run_summary))
    assert cells(shown).rows == [columns, *map(list, rows)]
    prediction = run_summary["prediction"]["utility_noncompliance_time"]
    assert prediction is not None  # the fixture's low γ predicts
    assert dict(map(tuple, cells(shown).rows))["utility non-compliance predicted"] == prediction
    expected = run_summary["reduction_mwh"]["expected"]
    traditional = run_summary["reduction_mwh"]["traditional"]
    share = f"({100 * traditional / expected:.1f} %)"
    assert share in dict(map(tuple, cells(shown).rows))["reduction, traditional, MWh (share)"]
    assert "reference" not in columns  # the small scenario declares none


def test_the_reference_column_and_escaped_text(run_summary):
    reference = {"source": "<b>Zhao</b> & co., §6.3.2",
                 "reduction_mwh": {"expected": 83.28, "traditional": 47.89, "adaptive": 82.61},
                 "utility_noncompliance_time": "19:11", "groups_compliant_at_prediction": 2}
    summary = {**run_summary, "reference": reference}
    summary["scenario"] = {**summary["scenario"], "name": "a<b>&c"}
    shown = headline_html(summary)
    parsed = cells(shown)
    assert parsed.rows[0] == ["quantity", "this run", "reference"]
    table = {row[0]: row[1:] for row in parsed.rows[1:]}
    assert table["reduction, traditional, MWh (share)"][1] == "47.89 (57.5 %)"
    assert table["utility non-compliance predicted"][1] == "19:11"
    assert "&lt;b&gt;Zhao&lt;/b&gt; &amp; co." in shown and "a&lt;b&gt;&amp;c" in shown
    assert "b" not in parsed.tags  # no tag of the text's own


def test_a_simulations_html_has_no_prediction(simulate_summary):
    shown = SimulationResult(simulate_summary, simulation=None)._repr_html_()
    rows = cells(shown).rows
    assert rows[0] == ["quantity", "this simulation"]
    assert "utility non-compliance predicted" not in shown and "simulation" in shown


def test_html_table_aligns_and_escapes():
    parsed = cells(html_table(["a", "b"], [("x<y", "1"), ("z", "&")], "t", ["n > 1"]))
    assert parsed.rows == [["a", "b"], ["x<y", "1"], ["z", "&"]]
    assert parsed.tags.count("p") == 1


def _sweep_table(points: int) -> pd.DataFrame:
    return pd.DataFrame({
        "point": range(points), "delay_detection": [10 * i for i in range(points)],
        "n": [2] * points,
        "reduction_mwh.adaptive.mean": [1.0 + i for i in range(points)],
        "reduction_mwh.adaptive.ci95_low": [0.5 + i for i in range(points)],
        "reduction_mwh.adaptive.ci95_high": [1.5 + i for i in range(points)],
        "reduction_mwh.adaptive.n": [2] * points,
        "t.mean": [1151.0] * points, "t.ci95_low": [math.nan] * points,
        "t.ci95_high": [math.nan] * points, "t.n": [1] * points, "t.clock": ["19:11"] * points})


def test_a_sweeps_html_is_the_head_of_its_table():
    outcome = SweepOutcome(Path("out"), _sweep_table(3), total=6, ran=6, reused=0, files=[],
                           name="delay<", axes=("delay_detection",),
                           metrics=("reduction_mwh.adaptive", "t"), seeds=2)
    shown = outcome._repr_html_()
    rows = cells(shown).rows
    assert rows[0] == ["point", "delay_detection", "n", "reduction_mwh.adaptive", "t"]
    assert rows[2] == ["1", "10", "2", "2.00 ± 0.50", "19:11 (n=1)"]
    assert "delay&lt;: 3 points x 2 seeds" in shown and "confidence interval" in shown
    assert "more" not in shown and "the first" not in shown
    long = SweepOutcome(Path("out"), _sweep_table(25), 25, 25, 0, [], "long",
                        ("delay_detection",), ("t",), 1)._repr_html_()
    assert len(cells(long).rows) == 1 + 20
    assert re.search(r"the first 20 of 25 points", long)
