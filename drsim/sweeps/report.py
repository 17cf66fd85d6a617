"""``drsim report`` on a sweep folder, and the table ``drsim sweep`` prints: a row per point,
mean ± half-width of the 95 % confidence interval (Student t) per metric over the seeds.
A run folder is printed by :mod:`drsim.results.report`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from drsim.results.report import SUMMARY, ReportError, format_value, read_json
from drsim.sweeps.runner import JOURNAL, SWEEP_RECORD, TABLE_CSV, TABLE_PARQUET, read_journal

__all__ = ["is_sweep_folder", "mean_pm", "metric_cell", "plain", "print_sweep_report",
           "read_sweep_folder", "sweep_table"]


def is_sweep_folder(folder: Path) -> bool:
    """A sweep's folder (its record, and no run's summary.json)."""
    return folder.is_dir() and not (folder / SUMMARY).exists() \
        and (folder / SWEEP_RECORD).is_file()


def print_sweep_report(folder: Path, console: Console | None = None,
                       sections: Sequence[str] | None = None) -> None:
    """Print a finished sweep folder's table."""
    if sections:
        raise ReportError(f"{folder}: --section applies to a run folder; this is a sweep "
                          "folder (report one of its runs/* folders for sections)")
    (console or Console()).print(Group(*_sweep_renderables(folder)))


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def mean_pm(mean: float, half: float) -> str:
    """``mean ± half`` with the half-width to two significant digits, the mean to match."""
    if not half > 0:
        return f"{format_value(mean)} ± 0"
    decimals = min(6, max(0, 1 - math.floor(math.log10(half))))
    return f"{mean:,.{decimals}f} ± {half:,.{decimals}f}"


def sweep_table(table: Any, axes: Sequence[str], metrics: Sequence[str],
                title: str = "sweep") -> Table:
    """A sweep table (pandas) as rich: a row per point, ``mean ± CI half-width`` per metric."""
    out = Table(title=Text(title, style="bold"), title_justify="left")
    out.add_column("point", justify="right", style="cyan")
    for axis in axes:
        out.add_column(_header(axis), justify="right", style="cyan", overflow="fold")
    out.add_column("n", justify="right")
    for metric in metrics:
        out.add_column(_header(metric), justify="right", overflow="fold")
    for _, row in table.iterrows():
        cells = [str(row["point"]), *(format_value(plain(row[a])) for a in axes),
                 format_value(plain(row["n"]))]
        for metric in metrics:
            cells.append(metric_cell(row, metric))
        out.add_row(*(Text(c) for c in cells))
    return out


def _header(path: str) -> Text:
    """A dotted path as a column header, broken after its dots when it is long."""
    return Text(path.replace(".", ".\n") if len(path) > 16 else path)


def plain(value: Any) -> Any:
    """A pandas/numpy cell as a plain Python value (NaN → None)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def metric_cell(row: Any, metric: str) -> str:
    """A sweep table row's cell of ``metric``: ``mean ± CI half-width`` (a clock metric's
    mean as HH:MM, its half-width in minutes), the runs it is over when fewer than the
    point's, or the text of a text metric."""
    if f"{metric}.mean" not in row.index:
        return str(row[metric]) if metric in row.index and plain(row[metric]) else "—"
    mean = _number(row[f"{metric}.mean"])
    if mean is None:
        return "—"
    low, high = _number(row[f"{metric}.ci95_low"]), _number(row[f"{metric}.ci95_high"])
    clock_column = f"{metric}.clock"
    is_clock = clock_column in row.index and bool(plain(row[clock_column]))
    text = str(row[clock_column]) if is_clock else format_value(mean)
    if low is not None and high is not None:
        half = (high - low) / 2
        if is_clock:
            text += f" ± {format_value(round(half, 1))} min"
        else:
            text = mean_pm(mean, half)
    n, runs = plain(row.get(f"{metric}.n")), plain(row.get("n"))
    if n is not None and runs is not None and n != runs:
        text += f" (n={n})"
    return text


def read_sweep_folder(folder: Path) -> tuple[dict[str, Any], Any]:
    """A finished sweep folder's record (sweep.json) and table (pandas); ReportError, one
    line naming the file, when it is not one drsim wrote or the sweep is not finished."""
    import pandas as pd

    record = read_json(folder / SWEEP_RECORD)
    if not isinstance(record, dict):
        raise ReportError(f"{folder / SWEEP_RECORD}: expected a JSON object, got "
                          f"{type(record).__name__}")
    lists = [key for key in ("axes", "metrics", "points") if not isinstance(record.get(key), list)]
    if lists:
        raise ReportError(f"{folder / SWEEP_RECORD}: not a sweep record drsim wrote (no list "
                          f"{', '.join(repr(k) for k in lists)}); accepted: the folder of a "
                          "drsim sweep")
    if (folder / TABLE_PARQUET).is_file():
        table = pd.read_parquet(folder / TABLE_PARQUET)
    elif (folder / TABLE_CSV).is_file():
        table = pd.read_csv(folder / TABLE_CSV)
    else:
        done = len(read_journal(folder / JOURNAL))
        total = sum(len(p.get("runs", [])) for p in record.get("points", []))
        raise ReportError(f"{folder}: the sweep is not finished ({done} of {total} runs "
                          "recorded, no table yet); run the same drsim sweep command again "
                          "to finish it")
    file = folder / (TABLE_PARQUET if (folder / TABLE_PARQUET).is_file() else TABLE_CSV)
    columns = ["point", "n", *record["axes"]]
    if missing := [c for c in columns if c not in table.columns]:
        raise ReportError(f"{file}: not a sweep table drsim wrote (no column "
                          f"{', '.join(repr(c) for c in missing)}); accepted: the folder of "
                          "a drsim sweep")
    return record, table


def _sweep_renderables(folder: Path) -> list[RenderableType]:
    record, table = read_sweep_folder(folder)
    name = record.get("name", folder.name)
    seeds = record.get("seeds", 1)
    title = f"{name}: {len(table)} points x {seeds} seed{'s' if seeds != 1 else ''}"
    note = Text("mean ± half-width of the 95 % confidence interval (Student t) over the seeds",
                style="dim")
    return [sweep_table(table, record.get("axes", []), record.get("metrics", []), title), note]
