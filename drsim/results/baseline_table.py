"""The baseline accuracy table as ``drsim baselines`` prints and writes it
(docs/mv_accuracy.md; the table itself: :mod:`drsim.pipeline.baseline_accuracy`).

The folder holds ``baseline_accuracy.csv`` (every column), ``baseline_accuracy.png`` (the
errors by method at household and group level) and a ``summary.json`` that names the
sample and lists the files, so that drsim replaces the folder only when it wrote it
(:mod:`drsim.results.folders`); it is written complete or not at all
(:func:`drsim.results.folders.staged`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
from rich import box
from rich.table import Table
from rich.text import Text

from drsim.pipeline.baseline_accuracy import LEVELS, AccuracyTable
from drsim.results.folders import SUMMARY, staged
from drsim.units import clock, clock_minutes

__all__ = ["FIGURE", "TABLE_CSV", "accuracy_rich_table", "read_accuracy_folder",
           "write_accuracy_folder"]

TABLE_CSV = "baseline_accuracy.csv"
FIGURE = "baseline_accuracy.png"
KIND = "baseline_accuracy"  # summary.json's "kind": not a run's summary
CAPTION = ("in %: CV = CV(RMSE), NMB = normalised mean bias (estimate - truth), median over "
           "households or groups; settl. = settlement error, paid over true reduction - 1, "
           "of the whole sample (all) and |p90| per unit; every column: the CSV")

#: the printed columns: (column of the table, header), shares in %
SHOWN = (
    ("baseline_cv_rmse_median", "B̂ CV\nmed"),
    ("baseline_cv_rmse_p90", "B̂ CV\np90"),
    ("baseline_nmb_median", "B̂ NMB\nmed"),
    ("expected_cv_rmse_median", "P̂ CV\nmed"),
    ("expected_nmb_median", "P̂ NMB\nmed"),
    ("settlement_relative", "settl.\nall"),
    ("settlement_relative_abs_p90", "settl.\n|p90|"),
)


def _percent(value: float) -> str:
    return f"{100 * value:.1f}" if math.isfinite(value) else "–"


def _title(result: AccuracyTable) -> str:
    lo, hi = result.window
    return (f"{result.scenario} (seed {result.seed}): M&V error against the same-day "
            f"counterfactual, {clock(lo)}-{clock(hi)}, first {result.households_per_group:,} "
            f"households of each group ({result.households:,}); metered: the "
            f"{result.metered} pass")


def accuracy_rich_table(result: AccuracyTable) -> Table:
    """The table as ``drsim baselines`` prints it: a row per method and level, the errors
    in % (:data:`CAPTION`); every column is in the CSV."""
    out = Table(title=Text(_title(result), style="bold"), title_justify="left",
                box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, caption=CAPTION,
                caption_justify="left")
    out.add_column("method", style="cyan", no_wrap=True)
    out.add_column("level", style="cyan", no_wrap=True)
    for _, header in SHOWN:
        out.add_column(header, justify="right", no_wrap=True)
    for row in result.table.itertuples(index=False):
        out.add_row(row.method, row.level,
                    *(_percent(getattr(row, column)) for column, _ in SHOWN))
    return out


def _figure(width: float, height: float):
    """A matplotlib figure drawn off-screen."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def plot_accuracy(result: AccuracyTable, path: Path) -> None:
    """Bars of the errors by method at household and group level: CV(RMSE) of B̂ (median,
    the 90th percentile as a whisker), NMB of B̂ (median) and the settlement error (median
    per unit; a cross: the whole sample's, the same at both levels)."""
    table = result.table
    methods = list(dict.fromkeys(table["method"]))
    panels = (("baseline_cv_rmse_median", "baseline_cv_rmse_p90", "CV(RMSE) of B̂"),
              ("baseline_nmb_median", None, "NMB of B̂ (median)"),
              ("settlement_relative_median", None, "settlement error (median; x: sample)"))
    fig = _figure(4.0 * len(panels), 3.4)
    axes = fig.subplots(1, len(panels))
    width = 0.8 / len(LEVELS)
    for ax, (column, upper, title) in zip(axes, panels, strict=True):
        for k, level in enumerate(LEVELS):
            rows = table[table["level"] == level].set_index("method").reindex(methods)
            x = [i + (k - (len(LEVELS) - 1) / 2) * width for i in range(len(methods))]
            values = 100 * rows[column].to_numpy(dtype=float)
            whisker = None if upper is None else \
                [[0.0] * len(methods), 100 * rows[upper].to_numpy(dtype=float) - values]
            ax.bar(x, values, width, yerr=whisker, capsize=3, label=level)
        ax.axhline(0.0, color="black", linewidth=0.6)
        if column == "settlement_relative_median":
            sample = table[table["level"] == LEVELS[0]].set_index("method").reindex(methods)
            ax.scatter(range(len(methods)), 100 * sample["settlement_relative"], marker="x",
                       color="black", zorder=3)
        ax.set_xticks(range(len(methods)), methods, rotation=20)
        ax.set_title(title, fontsize="medium")
        ax.set_ylabel("%")
    axes[0].legend(fontsize="small")
    fig.suptitle(f"{result.scenario}: first {result.households_per_group:,} households of "
                 f"each group", fontsize="medium")
    fig.savefig(path, dpi=120)


def write_accuracy_folder(result: AccuracyTable, out: str | Path, overwrite: bool = False,
                          command: str | None = None) -> list[str]:
    """Write the table's folder at ``out`` (module doc) and return its files' names; what
    drsim did not write is refused before anything is written
    (:class:`drsim.results.folders.OutputError`)."""
    files = [TABLE_CSV, FIGURE, SUMMARY]
    with staged(out, overwrite) as folder:
        result.table.to_csv(folder / TABLE_CSV, index=False)
        plot_accuracy(result, folder / FIGURE)
        summary = {"kind": KIND, "scenario": result.scenario, "seed": result.seed,
                   "households_per_group": result.households_per_group,
                   "households": result.households,
                   "window": [clock(m) for m in result.window], "metered": result.metered,
                   "methods": list(dict.fromkeys(result.table["method"])),
                   "command": command, "files": files}
        (folder / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return files


def read_accuracy_folder(folder: str | Path) -> AccuracyTable | None:
    """The table of a folder :func:`write_accuracy_folder` wrote (``drsim report`` prints
    it), or None when ``folder`` is not one."""
    folder = Path(folder)
    try:
        summary = json.loads((folder / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(summary, dict) or summary.get("kind") != KIND:
        return None
    lo, hi = (clock_minutes(t) for t in summary["window"])
    return AccuracyTable(pd.read_csv(folder / TABLE_CSV), summary["scenario"], summary["seed"],
                         summary["households_per_group"], summary["households"], (lo, hi),
                         summary["metered"])
