"""``drsim report`` on a sweep folder, and the table ``drsim sweep`` prints (and a notebook
shows, as HTML: :mod:`drsim.sweeps.table_text`): a row per point, mean ± half-width of the
95 % confidence interval (Student t) per metric over the seeds. A run folder is printed by
:mod:`drsim.results.report`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from drsim.results.report import SUMMARY, ReportError, read_json
from drsim.sweeps.runner import JOURNAL, SWEEP_RECORD, TABLE_CSV, TABLE_PARQUET, read_journal
from drsim.sweeps.table_text import CI_NOTE, mean_pm, sweep_rows, sweep_title

__all__ = ["is_sweep_folder", "mean_pm", "print_sweep_report", "read_sweep_folder",
           "sweep_table"]


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
    for cells in sweep_rows(table, axes, metrics):
        out.add_row(*(Text(c) for c in cells))
    return out


def _header(path: str) -> Text:
    """A dotted path as a column header, broken after its dots when it is long."""
    return Text(path.replace(".", ".\n") if len(path) > 16 else path)


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
    title = sweep_title(record.get("name", folder.name), len(table), record.get("seeds", 1))
    note = Text(CI_NOTE, style="dim")
    return [sweep_table(table, record.get("axes", []), record.get("metrics", []), title), note]
