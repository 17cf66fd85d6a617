"""Figures of a sweep: one PNG per numeric metric, mean ± confidence interval per point.

:func:`plot_metrics` draws each numeric (or clock) metric of the sweep table against the first
axis, one line per combination of the other axes, and writes the PNGs into the output folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from drsim.results.folders import sweep_plot_name
from drsim.sweeps.spec import CONFIDENCE, Sweep, value_label
from drsim.sweeps.stats import is_number
from drsim.units import clock


def plot_metrics(sweep: Sweep, table, out: Path) -> list[str]:
    """One PNG per numeric (or clock) metric: mean ± 95 % CI against the first axis.

    Points that differ in the other axes are separate lines. No plots without axes.
    """
    if not sweep.axes:
        return []
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    x_axis, others = sweep.axes[0], sweep.axes[1:]
    xs = [p.values[x_axis] for p in sweep.points]
    numeric_x = all(is_number(x) and not isinstance(x, bool) for x in xs)
    labels = list(dict.fromkeys(value_label(x) for x in xs))
    kinds = table.attrs.get("metric_kinds", {})
    written = []
    for metric in sweep.metrics:
        column = f"{metric}.mean"
        if column not in table or not np.isfinite(table[column].to_numpy(dtype=float)).any():
            continue
        fig = Figure(figsize=(7, 4.5), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        lines: dict[tuple[str, ...], list[int]] = {}
        for row, point in enumerate(sweep.points):
            lines.setdefault(tuple(f"{a}={value_label(point.values[a], 20)}" for a in others),
                             []).append(row)
        for line, rows in lines.items():
            x = np.array([xs[r] if numeric_x else labels.index(value_label(xs[r])) for r in rows],
                         dtype=float)
            order = np.argsort(x, kind="stable")
            sub = table.iloc[[rows[i] for i in order]]
            mean = sub[column].to_numpy(dtype=float)
            low = sub[f"{metric}.ci95_low"].to_numpy(dtype=float)
            high = sub[f"{metric}.ci95_high"].to_numpy(dtype=float)
            yerr = np.vstack([np.nan_to_num(mean - low), np.nan_to_num(high - mean)])
            ax.errorbar(x[order], mean, yerr=yerr, marker="o", capsize=4,
                        label=", ".join(line) or None)
        if not numeric_x:
            ax.set_xticks(range(len(labels)), labels)
        unit = " (minutes)" if x_axis == "delay_detection" else ""
        ax.set_xlabel(x_axis + unit)
        ax.set_ylabel(metric)
        if kinds.get(metric) == "clock":
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: clock(v)))
        ci = (f"mean ± {CONFIDENCE:.0%} CI of {sweep.seeds} seeds" if sweep.seeds > 1
              else "one seed")
        ax.set_title(f"{sweep.name}: {metric}\n({ci})", fontsize="medium")
        ax.grid(True, alpha=0.3)
        if others:
            ax.legend(fontsize="small")
        name = sweep_plot_name(metric)
        tmp = out / f".{name}.tmp.png"
        fig.savefig(tmp, dpi=120)
        os.replace(tmp, out / name)
        written.append(name)
    return written
