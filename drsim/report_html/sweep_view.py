"""What the HTML report shows of a finished sweep folder (:class:`SweepView`).

A sweep folder (``drsim sweep``, docs/sweeps.md) holds its record ``sweep.json`` (axes,
metrics, points, the base scenario) and its table (``table.parquet`` or ``table.csv``): a
row per point, per metric the mean over the seeds and the 95 % confidence interval
(Student t, :mod:`drsim.sweeps.stats`). The table cells are those ``drsim report`` prints
(:func:`drsim.sweeps.report.metric_cell`); the figures are built from the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from drsim.results.report import ReportError, format_value
from drsim.sweeps.report import read_sweep_folder
from drsim.sweeps.table_text import metric_cell, plain

__all__ = ["SweepView", "read_sweep_view"]


@dataclass(frozen=True)
class SweepView:
    """The data of a sweep folder's HTML report."""

    folder: Path
    name: str
    axes: list[str]
    metrics: list[str]
    seeds: int
    points: list[dict[str, Any]]  # per row of the table: the point's values by axis
    table: Any  # pandas.DataFrame: the sweep table (drsim.sweeps.stats.tabulate)
    columns: list[str]  # the shown table's columns
    rows: list[tuple[str, ...]]  # the shown table's rows, as text
    metric_kinds: dict[str, str]  # metric -> "number", "clock" or "text"
    scenario_yaml: str  # the sweep's grid, overrides and base scenario as YAML


def read_sweep_view(folder: str | Path) -> SweepView:
    """The report's data of the finished sweep folder ``folder`` (ReportError, one line
    naming the path, when it is not one)."""
    folder = Path(folder)
    record, table = read_sweep_folder(folder)
    axes, metrics = list(record["axes"]), list(record["metrics"])
    by_index = {p.get("point"): p.get("values", {}) for p in record["points"]
                if isinstance(p, dict)}
    points = [by_index.get(int(i), {}) for i in table["point"]]
    if any(not isinstance(p, dict) for p in points):
        raise ReportError(f"{folder}: the sweep record's points do not match its table")
    rows = [(str(row["point"]), *(format_value(plain(row[a])) for a in axes),
             format_value(plain(row["n"])), *(metric_cell(row, m) for m in metrics))
            for _, row in table.iterrows()]
    kinds = {m: "clock" if f"{m}.clock" in table.columns else
             "number" if f"{m}.mean" in table.columns else "text" for m in metrics}
    shown = {key: record[key] for key in ("grid", "overrides", "seeds", "scenario")
             if key in record}
    return SweepView(folder=folder, name=str(record.get("name", folder.name)), axes=axes,
                     metrics=metrics, seeds=int(record.get("seeds", 1)), points=points,
                     table=table, columns=["point", *axes, "n", *metrics], rows=rows,
                     metric_kinds=kinds,
                     scenario_yaml=yaml.safe_dump(shown, sort_keys=False, allow_unicode=True))

