"""A sweep's table as text: its rows (mean ± half-width of the 95 % confidence interval,
Student t, per metric over the seeds), its title, and its head as the HTML a notebook shows
(:mod:`drsim.results.display`). The terminal's rich table (:mod:`drsim.sweeps.report`)
and the notebook's show the same cells.

>>> mean_pm(82.6134, 0.6712)
'82.61 ± 0.67'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from drsim.results.display import html_table
from drsim.results.report import format_value

__all__ = ["CI_NOTE", "mean_pm", "metric_cell", "plain", "sweep_rows", "sweep_title",
           "sweep_html"]

CI_NOTE = "mean ± half-width of the 95 % confidence interval (Student t) over the seeds"


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


def sweep_rows(table: Any, axes: Sequence[str], metrics: Sequence[str]
               ) -> list[list[str]]:
    """A sweep table's (pandas) rows as text: point, the axes' values, the runs n, then
    ``mean ± CI half-width`` per metric."""
    rows = []
    for _, row in table.iterrows():
        cells = [str(row["point"]), *(format_value(plain(row[a])) for a in axes),
                 format_value(plain(row["n"]))]
        rows.append(cells + [metric_cell(row, metric) for metric in metrics])
    return rows


def sweep_title(name: str, points: int, seeds: int) -> str:
    """``name: P points x S seeds``, the title of a sweep's table."""
    return f"{name}: {points} points x {seeds} seed{'s' if seeds != 1 else ''}"


def sweep_html(table: Any, axes: Sequence[str], metrics: Sequence[str], title: str = "sweep",
               head: int = 20) -> str:
    """The head of a sweep table (its first ``head`` points) as HTML, as a notebook shows a
    sweep's outcome (:mod:`drsim.results.display`), with the note on the intervals and how
    many points are left out."""
    rows = sweep_rows(table.head(head), axes, metrics)
    notes = [CI_NOTE] + ([f"the first {head} of {len(table)} points; the whole table: "
                          "outcome.table"] if len(table) > head else [])
    return html_table(["point", *axes, "n", *metrics], rows, title, notes)


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
