"""Statistics of a sweep's runs: metrics read from the summaries, means with confidence intervals.

:func:`get_metric` reads a dotted path of a run's summary, :func:`mean_ci` gives the mean and
its Student-t confidence interval, and :func:`tabulate` turns the recorded runs into the sweep
table, one row per point (a clock metric, HH:MM, is averaged in minutes since midnight). A
metric that no run's summary has is reported as a :class:`~drsim.sweeps.spec.SweepError`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from drsim.sweeps.spec import CONFIDENCE, Sweep, SweepError
from drsim.units import clock, clock_minutes, is_clock

_MISSING = object()


def get_metric(summary: Any, metric: str) -> Any:
    """The value at a dotted path of a summary; ``_MISSING`` if a key is absent."""
    node = summary
    for part in metric.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and re.fullmatch(r"\d+", part) and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _leaf_paths(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, Mapping):
        found = []
        for key, value in node.items():
            found += _leaf_paths(value, f"{prefix}{key}.")
        return found
    return [prefix[:-1]] if prefix else []


def check_metric_paths(sweep: Sweep, summaries: list[dict[str, Any]]) -> None:
    if not summaries:
        return
    problems = []
    for i, metric in enumerate(sweep.metrics):
        if all(get_metric(s, metric) is _MISSING for s in summaries):
            available = _leaf_paths(summaries[0])
            close = difflib.get_close_matches(metric, available, n=1, cutoff=0.5)
            if not close:
                leaf = metric.rsplit(".", 1)[-1]
                close = [p for p in available if p.rsplit(".", 1)[-1] == leaf][:1]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append((f"metrics[{i}]", f"{metric!r} is not in the runs' summary{hint}",
                             "a dotted path into summary.json, e.g. "
                             + ", ".join(p for p in available[:4])))
    if problems:
        raise SweepError(sweep.source, problems)


def t_quantile(p: float, df: int) -> float:
    """Quantile ``p`` of Student's t with ``df`` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(p, df))


def mean_ci(values: Iterable[float], confidence: float = CONFIDENCE
            ) -> tuple[int, float, float, float]:
    """(n, mean, low, high): the mean and its two-sided Student-t confidence interval.

    With one value the interval is undefined (NaN); with none the mean is NaN too.
    """
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return 0, math.nan, math.nan, math.nan
    mean = math.fsum(xs) / n
    if n == 1:
        return 1, mean, math.nan, math.nan
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return n, mean, mean - half, mean + half


def is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, str)


def metric_kind(values: Iterable[Any]) -> str:
    """"number", "clock" (HH:MM texts) or "text", from the non-null values of a metric."""
    present = [v for v in values if v is not None and v is not _MISSING]
    if present and all(is_number(v) for v in present):
        return "number"
    if present and all(is_clock(v) for v in present):
        return "clock"
    return "number" if not present else "text"


def tabulate(sweep: Sweep, records: Mapping[str, Mapping[str, Any]]):
    """One row per point: axis values, runs n, and per metric mean, 95 % CI and count.

    Columns: ``point``, one per axis, ``n``, then for a numeric metric ``<m>.mean``,
    ``<m>.ci95_low``, ``<m>.ci95_high``, ``<m>.n`` (runs where it is not null); a clock metric
    (HH:MM) is averaged in minutes since midnight and also gets ``<m>.clock`` (the mean as
    HH:MM); any other metric gets ``<m>`` (its distinct values joined by " | ").
    """
    import pandas as pd

    by_point: dict[int, list[Mapping[str, Any]]] = {p.index: [] for p in sweep.points}
    for run in sweep.runs():
        if run.key in records:
            by_point[run.point.index].append(records[run.key]["summary"])
    kinds = {m: metric_kind(get_metric(s, m) for ss in by_point.values() for s in ss)
             for m in sweep.metrics}
    axis_cells = {axis: _axis_cells([p.values[axis] for p in sweep.points])
                  for axis in sweep.axes}
    rows = []
    for row_number, point in enumerate(sweep.points):
        summaries = by_point[point.index]
        row: dict[str, Any] = {"point": point.index}
        for axis in sweep.axes:
            row[axis] = axis_cells[axis][row_number]
        row["n"] = len(summaries)
        for metric in sweep.metrics:
            raw = [get_metric(s, metric) for s in summaries]
            present = [v for v in raw if v is not None and v is not _MISSING]
            kind = kinds[metric]
            if kind == "text":
                row[metric] = " | ".join(dict.fromkeys(
                    v if isinstance(v, str) else json.dumps(v, sort_keys=True) for v in present))
                continue
            numbers = ([clock_minutes(v) for v in present] if kind == "clock"
                       else [float(v) for v in present])
            n, mean, low, high = mean_ci(numbers)
            row[f"{metric}.mean"] = mean
            row[f"{metric}.ci95_low"] = low
            row[f"{metric}.ci95_high"] = high
            row[f"{metric}.n"] = n
            if kind == "clock":
                row[f"{metric}.clock"] = clock(mean) if n else None
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs["metric_kinds"] = kinds
    return table


def _axis_cells(values: list[Any]) -> list[Any]:
    """Axis values as table cells of one type (lists and mixed types as JSON text)."""
    if all(is_number(v) and not isinstance(v, bool) for v in values):
        return values
    if all(isinstance(v, str) for v in values) or all(isinstance(v, bool) for v in values):
        return values
    return [json.dumps(v) for v in values]


