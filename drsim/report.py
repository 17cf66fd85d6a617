"""``drsim report``: a result folder's figures as rich tables.

By default a result folder's headline is printed as ``drsim run`` (or ``drsim simulate``)
printed it (:func:`drsim.headline.headline`). With ``--full`` (or ``--section``) its
``summary.json`` is printed section by section: the top-level single values in
one table, then each nested section (``reduction_mwh``, ``prediction``, ``incentive``,
``peaks``, ``cost`` first, ``scenario`` last) in its own table. Any nested mapping works:

- a mapping of mappings with the same keys (e.g. ``{expected: {ev: .., wet: ..},
  traditional: {ev: .., wet: ..}}``) becomes one table, a row per outer key;
- a list of mappings (e.g. the scenario's groups) becomes a table, a row per item;
- anything else is listed as ``dotted.key  value`` rows.

A finished sweep folder (``sweep.json`` and ``table.parquet``/``table.csv``) is printed as its
table: a row per point, mean ± half-width of the 95 % confidence interval per metric.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

__all__ = [
    "ReportError",
    "format_value",
    "load_summary",
    "print_report",
    "summary_tables",
    "sweep_table",
]

SUMMARY = "summary.json"
FIRST_SECTIONS = ("reduction_mwh", "prediction", "incentive", "peaks", "cost")
LAST_SECTIONS = ("scenario",)
MAX_MATRIX_COLUMNS = 12


class ReportError(ValueError):
    """A folder that cannot be reported (missing, not a result folder, unreadable)."""


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: "
                          f"{exc.msg}") from None


def load_summary(run_dir: str | Path) -> dict[str, Any]:
    """The summary.json of a run folder; ReportError naming what is missing."""
    folder = Path(run_dir)
    if not folder.exists():
        raise ReportError(f"{folder}: no such folder; accepted: a run folder holding "
                          f"{SUMMARY} (or a finished sweep folder)")
    if not folder.is_dir():
        raise ReportError(f"{folder}: not a folder; accepted: a run folder holding {SUMMARY}")
    path = folder / SUMMARY
    if not path.is_file():
        raise ReportError(f"{folder}: no {SUMMARY} in this folder; accepted: a folder written "
                          "by drsim simulate, drsim run or one run of a sweep (runs/*), or a "
                          "finished sweep folder")
    summary = _read_json(path)
    if not isinstance(summary, dict):
        raise ReportError(f"{path}: expected a JSON object of sections, got "
                          f"{type(summary).__name__}")
    return summary


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------


def format_value(value: Any) -> str:
    """One cell: about six significant digits, thousands separators, "—" for null."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):  # counts get separators; ids, years and seeds do not
        return f"{value:,}" if 10_000 <= abs(value) < 10**15 else str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if abs(value) >= 1e6:
            return f"{value:,.0f}"
        if abs(value) >= 1000:
            return f"{value:,.2f}"
        return f"{value:.6g}"
    if isinstance(value, str):
        return value
    if _is_scalar_list(value):  # e.g. a consumer range [10001, 30000]: no separators
        return "[" + ", ".join(str(v) if isinstance(v, int) and not isinstance(v, bool)
                               else format_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _is_scalar_list(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(_is_scalar(v) for v in value)


def _is_leaf(value: Any) -> bool:
    return _is_scalar(value) or _is_scalar_list(value)


def _flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any] | None:
    """Dotted keys → leaf values; None if the mapping holds lists of mappings."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(value, Mapping):
            inner = _flatten(value, f"{prefix}{key}.")
            if inner is None:
                return None
            flat.update(inner)
        elif _is_leaf(value):
            flat[f"{prefix}{key}"] = value
        else:
            return None
    return flat


def _as_matrix(mapping: Mapping[str, Any]) -> tuple[list[str], dict[str, dict]] | None:
    """(columns, rows) if ``mapping`` is ≥ 2 mappings with the same (flattened) keys."""
    if len(mapping) < 2 or not all(isinstance(v, Mapping) and v for v in mapping.values()):
        return None
    rows = {}
    for key, value in mapping.items():
        flat = _flatten(value)
        if flat is None:
            return None
        rows[str(key)] = flat
    columns = list(next(iter(rows.values())))
    if len(columns) > MAX_MATRIX_COLUMNS or any(list(r) != columns for r in rows.values()):
        return None
    return columns, rows


def _key_value_table(title: str, rows: Iterable[tuple[str, Any]]) -> Table:
    table = Table(title=Text(title, style="bold"), title_justify="left", show_header=False,
                  min_width=40)
    table.add_column("key", style="cyan")
    table.add_column("value", justify="right")
    for key, value in rows:
        table.add_row(Text(key), Text(format_value(value)))
    return table


def _matrix_table(title: str, corner: str, columns: Sequence[str],
                  rows: Mapping[str, Mapping[str, Any]]) -> Table:
    table = Table(title=Text(title, style="bold"), title_justify="left")
    table.add_column(Text(corner), style="cyan")
    for column in columns:
        table.add_column(Text(column), justify="right")
    for key, row in rows.items():
        table.add_row(Text(key), *(Text(format_value(row.get(c))) for c in columns))
    return table


def _records_table(title: str, items: Sequence[Mapping[str, Any]]) -> Table:
    columns: list[str] = []
    flat_items = []
    for item in items:
        flat = _flatten(item) or {k: v for k, v in item.items()}
        flat_items.append(flat)
        columns += [c for c in flat if c not in columns]
    table = Table(title=Text(title, style="bold"), title_justify="left")
    table.add_column("#", style="cyan", justify="right")
    for column in columns:
        table.add_column(Text(column), justify="right")
    for i, flat in enumerate(flat_items):
        table.add_row(str(i), *(Text(format_value(flat[c]) if c in flat else "")
                                for c in columns))
    return table


def _section(title: str, value: Any) -> list[Table]:
    """The tables of one nested section."""
    if isinstance(value, list):
        if value and all(isinstance(v, Mapping) for v in value):
            return [_records_table(title, value)]
        return [_key_value_table(title, ((f"[{i}]", v) for i, v in enumerate(value)))]
    matrix = _as_matrix(value)
    if matrix is not None:
        return [_matrix_table(title, "", *matrix)]
    rows: list[tuple[str, Any]] = []
    extra: list[Table] = []

    def walk(mapping: Mapping[str, Any], prefix: str) -> None:
        for key, item in mapping.items():
            path = f"{prefix}{key}"
            if _is_leaf(item):
                rows.append((path, item))
            elif isinstance(item, Mapping):
                inner = _as_matrix(item)
                if inner is not None:
                    extra.append(_matrix_table(f"{title}.{path}", "", *inner))
                else:
                    walk(item, path + ".")
            elif isinstance(item, list) and item and all(isinstance(v, Mapping) for v in item):
                extra.append(_records_table(f"{title}.{path}", item))
            else:
                rows.append((path, item))

    walk(value, "")
    return ([_key_value_table(title, rows)] if rows else []) + extra


def _order(keys: Iterable[str]) -> list[str]:
    keys = list(keys)
    first = [k for k in FIRST_SECTIONS if k in keys]
    last = [k for k in LAST_SECTIONS if k in keys]
    return first + [k for k in keys if k not in first and k not in last] + last


def summary_tables(summary: Mapping[str, Any],
                   sections: Sequence[str] | None = None) -> list[Table]:
    """Rich tables of a summary: its single values, then one or more per nested section.

    ``sections`` keeps only those top-level keys ("summary" = the single values).
    """
    nested = [k for k in summary if not _is_leaf(summary[k])]
    if sections:
        known = ["summary", *nested]
        unknown = [s for s in sections if s not in known]
        if unknown:
            lines = []
            for name in unknown:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                lines.append(f"no section {name!r}{hint}; accepted: " + ", ".join(known))
            raise ReportError("\n".join(lines))
    wanted = set(sections) if sections else None
    tables = []
    leaves = [(k, v) for k, v in summary.items() if _is_leaf(v)]
    if leaves and (wanted is None or "summary" in wanted):
        tables.append(_key_value_table("summary", leaves))
    for key in _order(nested):
        if wanted is None or key in wanted:
            tables.extend(_section(key, summary[key]))
    return tables


# --------------------------------------------------------------------------------------------
# Sweep tables
# --------------------------------------------------------------------------------------------


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
        cells = [str(row["point"]), *(format_value(_plain(row[a])) for a in axes),
                 format_value(_plain(row["n"]))]
        for metric in metrics:
            cells.append(_metric_cell(row, metric))
        out.add_row(*(Text(c) for c in cells))
    return out


def _header(path: str) -> Text:
    """A dotted path as a column header, broken after its dots when it is long."""
    return Text(path.replace(".", ".\n") if len(path) > 16 else path)


def _plain(value: Any) -> Any:
    """A pandas/numpy cell as a plain Python value (NaN → None)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _metric_cell(row: Any, metric: str) -> str:
    if f"{metric}.mean" not in row.index:
        return str(row[metric]) if metric in row.index and _plain(row[metric]) else "—"
    mean = _number(row[f"{metric}.mean"])
    if mean is None:
        return "—"
    low, high = _number(row[f"{metric}.ci95_low"]), _number(row[f"{metric}.ci95_high"])
    clock_column = f"{metric}.clock"
    is_clock = clock_column in row.index and bool(_plain(row[clock_column]))
    text = str(row[clock_column]) if is_clock else format_value(mean)
    if low is not None and high is not None:
        half = (high - low) / 2
        if is_clock:
            text += f" ± {format_value(round(half, 1))} min"
        else:
            text = mean_pm(mean, half)
    n, runs = _plain(row.get(f"{metric}.n")), _plain(row.get("n"))
    if n is not None and runs is not None and n != runs:
        text += f" (n={n})"
    return text


def _sweep_renderables(folder: Path) -> list[RenderableType]:
    import pandas as pd

    from drsim.sweeps import JOURNAL, SWEEP_RECORD, TABLE_CSV, TABLE_PARQUET, read_journal

    record = _read_json(folder / SWEEP_RECORD)
    if not isinstance(record, dict):
        raise ReportError(f"{folder / SWEEP_RECORD}: expected a JSON object")
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
    name = record.get("name", folder.name)
    seeds = record.get("seeds", 1)
    title = f"{name}: {len(table)} points x {seeds} seed{'s' if seeds != 1 else ''}"
    note = Text("mean ± half-width of the 95 % confidence interval (Student t) over the seeds",
                style="dim")
    return [sweep_table(table, record.get("axes", []), record.get("metrics", []), title), note]


# --------------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------------


def print_report(run_dir: str | Path, console: Console | None = None,
                 sections: Sequence[str] | None = None, full: bool = False) -> None:
    """Print a run folder's headline (``full``: every field of its summary; ``sections``:
    every field of those sections), or a finished sweep folder's table."""
    from drsim.headline import headline
    from drsim.sweeps import SWEEP_RECORD

    console = console or Console()
    folder = Path(run_dir)
    if folder.is_dir() and not (folder / SUMMARY).exists() and (folder / SWEEP_RECORD).is_file():
        if sections:
            raise ReportError(f"{folder}: --section applies to a run folder; this is a sweep "
                              "folder (report one of its runs/* folders for sections)")
        console.print(Group(*_sweep_renderables(folder)))
        return
    summary = load_summary(folder)
    name = summary.get("scenario_name")
    if name is None and isinstance(summary.get("scenario"), Mapping):
        name = summary["scenario"].get("name")
    heading = Text(f"{name}: " if name else "", style="bold")
    heading.append(str(folder))
    console.print(heading)
    if not full and not sections:
        for part in headline(summary):
            console.print(part)
        console.print(Text(f"every field: drsim report {folder} --full", style="dim"))
        return
    for table in summary_tables(summary, sections):
        console.print(table)
