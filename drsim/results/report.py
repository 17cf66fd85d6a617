"""``drsim report``: a result folder's figures as rich tables.

By default a result folder's headline is printed as ``drsim run`` (or ``drsim simulate``)
printed it (:func:`drsim.results.headline.headline`), its summary read through
summary.json's model (:class:`drsim.results.summary_model.Summary`). With ``--full`` (or
``--section``) its ``summary.json`` is printed section by section, as it is: the top-level
single values in one table, then each nested section (``reduction_mwh``, ``prediction``,
``incentive``, ``peaks``, ``cost`` first, ``scenario`` last) in its own table. Any nested
mapping works:

- a mapping of mappings with the same keys (e.g. ``{expected: {ev: .., wet: ..},
  traditional: {ev: .., wet: ..}}``) becomes one table, a row per outer key;
- a list of mappings (e.g. the scenario's groups) becomes a table, a row per item;
- anything else is listed as ``dotted.key  value`` rows.

A sweep folder is printed by :mod:`drsim.sweeps.report`.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from drsim.results.summary_model import Summary

__all__ = [
    "ReportError",
    "format_value",
    "load_summary",
    "read_json",
    "print_report",
    "summary_tables",
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


def read_json(path: Path) -> Any:
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
    summary = read_json(path)
    if not isinstance(summary, dict):
        raise ReportError(f"{path}: expected a JSON object of sections, got "
                          f"{type(summary).__name__}")
    files = summary.get("files")
    if not (isinstance(files, list) and SUMMARY in files):
        keys = list(summary)
        what = "an empty JSON object" if not keys else \
            f"a JSON object with the key{'s' if len(keys) > 1 else ''} " \
            f"{', '.join(keys[:4])}{', ...' if len(keys) > 4 else ''}"
        raise ReportError(f"{path}: not a summary drsim wrote ({what}, without the list "
                          f"'files' naming {SUMMARY}); accepted: the folder of a drsim "
                          "simulate, run or monitor, or a finished sweep folder")
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
# Printing
# --------------------------------------------------------------------------------------------


def _model(summary: dict[str, Any], folder: Path) -> Summary:
    """``summary`` read through summary.json's model; ReportError naming the first field
    that is not of this drsim version's summary."""
    try:
        return Summary.model_validate(summary)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the summary"
        raise ReportError(f"{folder / SUMMARY}: not a summary of this drsim version ({where}: "
                          f"{error['msg'].lower()}); drsim report {folder} --full prints "
                          "every field") from None


def print_report(run_dir: str | Path, console: Console | None = None,
                 sections: Sequence[str] | None = None, full: bool = False) -> None:
    """Print a run folder's headline (``full``: every field of its summary; ``sections``:
    every field of those sections)."""
    from drsim.results.headline import headline

    console = console or Console()
    folder = Path(run_dir)
    summary = load_summary(folder)
    model = None if full or sections else _model(summary, folder)
    name = summary.get("scenario_name")
    if name is None and isinstance(summary.get("scenario"), Mapping):
        name = summary["scenario"].get("name")
    heading = Text(f"{name}: " if name else "", style="bold")
    heading.append(str(folder))
    console.print(heading)
    if model is not None:
        for part in headline(model):
            console.print(part)
        console.print(Text(f"every field: drsim report {folder} --full", style="dim"))
        return
    for table in summary_tables(summary, sections):
        console.print(table)
