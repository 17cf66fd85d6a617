"""The interactive figures of the HTML report (plotly), built from a folder's data.

- :func:`demand_figure`: the system demand of every pass over the day (Figure 6.11 of the
  dissertation, §6.3.2) with the DR program, the second event and t_nc;
- :func:`reduction_figure`: the reduction realised so far in the program by each DR
  pass against the goal λ (Eq. 6.1; what the utility tracks to t_nc, §6.2.3);
- :func:`compliance_figure`: per group, the share of its households flagged (the user
  events of Listing 6.1) against its threshold γ[groupID, time] (Listing 6.2), a row per
  group, or a heatmap of the share over γ for many groups;
- :func:`sweep_figures`: a sweep's metrics, mean and 95 % confidence interval per point,
  against its first axis, a line per combination of the other axes.

Times are drawn on a date axis of one day (2000-01-01), so the axis and the hover read
HH:MM; the curves are sent as float32 (plotly encodes numeric arrays as base64), one
value per minute (the load curves' own resolution).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from drsim.units import DAY

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from drsim.report_html.run_view import Compliance, RunView
    from drsim.report_html.sweep_view import SweepView

__all__ = ["compliance_figure", "demand_figure", "reduction_figure", "sweep_figures", "when"]

PASS_COLOUR = {"baseline": "black", "expected": "#2ca02c", "traditional": "#d62728",
               "adaptive": "#1f77b4"}
PASS_DASH = {"traditional": "dash"}
MAX_GROUP_ROWS = 12  # more groups than this: a heatmap instead of a row per group
MINUTE_MS = 60_000  # [ms per min]: a date axis counts milliseconds


def when(minute: float) -> str:
    """Minute of the day [min] as a time on the report's date axis.

    >>> when(0), when(19 * 60 + 11), when(1440)
    ('2000-01-01 00:00', '2000-01-01 19:11', '2000-01-02 00:00')
    """
    day, rest = divmod(int(round(minute)), DAY)
    return f"2000-01-{1 + day:02d} {rest // 60:02d}:{rest % 60:02d}"


def _window(view: RunView) -> tuple[int, int]:
    """The demand figure's first view [min]: 16:00-23:00 (Figure 6.11), widened by whole
    hours to the program, DR2 and t_nc."""
    times = [*(view.program or ()), *(view.second_event or ()),
             *([] if view.t_nc is None else [view.t_nc])]
    lo, hi = 16 * 60, 23 * 60
    if times:
        lo, hi = min(lo, (min(times) - 30) // 60 * 60), max(hi, -(-(max(times) + 30) // 60) * 60)
    return max(lo, 0), min(hi, DAY)


def _marks(fig: go.Figure, view: RunView, rows: int = 1) -> None:
    """The DR program and DR2 as bands, t_nc as a line, on every row of ``fig``."""
    bands = []
    if view.program is not None:
        bands.append((*view.program, "rgba(255,127,14,0.15)", "DR program"))
    if view.second_event is not None:
        bands.append((*view.second_event[1:], "rgba(31,119,180,0.12)", "second event"))
    for row in range(1, rows + 1):
        for start, end, colour, label in bands:
            label_it = {"annotation_text": label, "annotation_position": "top left"} \
                if row == 1 else {}
            fig.add_vrect(x0=when(start), x1=when(end), fillcolor=colour, line_width=0,
                          layer="below", row=row, col=1, **label_it)
        if view.t_nc is not None:
            fig.add_shape(type="line", x0=when(view.t_nc), x1=when(view.t_nc), y0=0, y1=1,
                          yref="y domain" if row == 1 else f"y{row} domain",
                          xref="x" if row == 1 else f"x{row}",
                          line={"color": "black", "dash": "dash", "width": 1.5})


def demand_figure(view: RunView) -> go.Figure:
    """The system demand of each pass [MW], a value per minute, with the DR windows and
    t_nc (Figure 6.11, §6.3.2), zoomed on the evening (:func:`_window`)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, mw in view.system_mw.items():
        fig.add_trace(go.Scatter(
            x0=when(0), dx=MINUTE_MS, y=np.asarray(mw, dtype=np.float32), name=name,
            mode="lines", line={"color": PASS_COLOUR.get(name), "dash": PASS_DASH.get(name),
                                "width": 3 if name == "adaptive" else 1.8},
            hovertemplate="%{x|%H:%M}: %{y:.2f} MW"))
    _marks(fig, view)
    if view.t_nc is not None:
        fig.add_annotation(x=when(view.t_nc), y=0, yref="y domain", showarrow=False,
                           text=f"<b>t_nc {_hm(view.t_nc)}</b>", xanchor="left",
                           yanchor="bottom")
    lo, hi = _window(view)
    fig.update_layout(title="System demand of the passes (Figure 6.11)",
                      yaxis_title="system demand [MW]", hovermode="x unified",
                      legend={"orientation": "h", "y": -0.15}, height=520,
                      margin={"l": 60, "r": 20, "t": 60, "b": 40})
    fig.update_xaxes(type="date", range=[when(lo), when(hi)], tickformat="%H:%M")
    return fig


def cumulative_reduction(view: RunView) -> dict[str, np.ndarray]:
    """DR pass -> the energy it has saved against the baseline pass since the program's
    start [MWh], at the end of each program minute: Σ (baseline − pass) [MW] × 1/60 [h]
    (the reductions of summary.json, §6.3.2, are its last values).

    Empty without the baseline pass or the program."""
    if view.program is None or "baseline" not in view.system_mw:
        return {}
    start, end = view.program
    base = view.system_mw["baseline"][start:end]
    return {name: np.cumsum(base - mw[start:end]) / 60.0
            for name, mw in view.system_mw.items() if name != "baseline"}


def reduction_figure(view: RunView) -> go.Figure | None:
    """The reduction each DR pass has realised so far in the program [MWh] against the
    goal λ (Eq. 6.1), with DR2 and t_nc (§6.2.3); None without the data."""
    import plotly.graph_objects as go

    saved = cumulative_reduction(view)
    if not saved or view.program is None:
        return None
    start, end = view.program
    fig = go.Figure()
    for name, mwh in saved.items():
        fig.add_trace(go.Scatter(
            x0=when(start + 1), dx=MINUTE_MS, y=np.asarray(mwh, dtype=np.float32), name=name,
            mode="lines", line={"color": PASS_COLOUR.get(name), "dash": PASS_DASH.get(name),
                                "width": 3 if name == "adaptive" else 1.8},
            hovertemplate="%{x|%H:%M}: %{y:.3f} MWh"))
    if view.reduction_goal_mwh is not None:
        fig.add_hline(y=view.reduction_goal_mwh, line={"color": "dimgray", "dash": "dot"},
                      annotation_text=f"goal λ {view.reduction_goal_mwh:.2f} MWh",
                      annotation_position="bottom right")
    _marks(fig, view)
    fig.update_xaxes(type="date", range=[when(start), when(end)], tickformat="%H:%M")
    fig.update_layout(title="Reduction realised so far in the program (Eq. 6.1, §6.2.3)",
                      yaxis_title="energy saved since the program's start [MWh]",
                      hovermode="x unified", legend={"orientation": "h", "y": -0.15},
                      height=440, margin={"l": 60, "r": 20, "t": 60, "b": 40})
    return fig


def _hm(minute: int) -> str:
    return when(minute)[-5:]


def compliance_figure(view: RunView) -> go.Figure | None:
    """Per group, the share of its called households flagged at each test [1] against
    its threshold γ (Listing 6.2), traditional and expected pass, the latch and t_nc; a
    heatmap of share / γ for more than :data:`MAX_GROUP_ROWS` groups. None without the
    data (:attr:`RunView.compliance`)."""
    data = view.compliance
    if data is None or not len(data.test_times):
        return None
    if len(data.group_names) > MAX_GROUP_ROWS:
        return _compliance_heatmap(view, data)
    from plotly.subplots import make_subplots

    n = len(data.group_names)
    fig = make_subplots(rows=n, cols=1, shared_xaxes=True, vertical_spacing=0.25 / n,
                        subplot_titles=[_status(data, g) for g in range(n)])
    x = [when(t) for t in data.test_times]
    styles = {"traditional": ("#d62728", 2.2, "lines+markers"),
              "expected": ("rgba(44,160,44,0.7)", 1.2, "lines")}
    for g in range(n):
        for name, (colour, width, mode) in styles.items():
            if name in data.flagged:
                fig.add_trace(_step_curve(x, data.flagged[name][g], f"{name}: share flagged",
                                         colour, width, mode, shown=g == 0), row=g + 1, col=1)
        fig.add_trace(_step_curve(x, data.gamma[g], "threshold γ", "dimgray", 1.2, "lines",
                                 shown=g == 0, dash="dash"), row=g + 1, col=1)
        fig.update_yaxes(title_text="share", row=g + 1, col=1, rangemode="tozero")
    _marks(fig, view, rows=n)
    fig.update_xaxes(type="date", tickformat="%H:%M")
    fig.update_layout(title="Households flagged per group against γ (Listings 6.1-6.2)",
                      height=160 + 170 * n, hovermode="x unified",
                      legend={"orientation": "h", "y": -0.4 / n},
                      margin={"l": 60, "r": 20, "t": 90, "b": 40})
    return fig


def _step_curve(x: list[str], y: np.ndarray, name: str, colour: str, width: float, mode: str,
               shown: bool, dash: str | None = None) -> Any:
    """One step curve of the compliance figure (the value holds until the next test)."""
    import plotly.graph_objects as go

    return go.Scatter(x=x, y=np.asarray(y, dtype=np.float32), name=name, mode=mode,
                      legendgroup=name, showlegend=shown, line_shape="hv",
                      line={"color": colour, "width": width, "dash": dash},
                      marker={"size": 4}, hovertemplate="%{y:.3f}")


def _status(data: Compliance, g: int) -> str:
    latch = data.latch.get("traditional", [None] * (g + 1))[g]
    return f"{data.group_names[g]}: " + ("never latched" if latch is None
                                           else f"latched {_hm(latch)}")


def _compliance_heatmap(view: RunView, data: Compliance) -> go.Figure:
    """The traditional pass's share flagged over γ, group × test time (above 1: an alert)."""
    import plotly.graph_objects as go

    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = data.flagged["traditional"] / data.gamma
    fig = go.Figure(go.Heatmap(
        x=[when(t) for t in data.test_times], y=data.group_names,
        z=np.asarray(ratio, dtype=np.float32), zmin=0, zmid=1, colorscale="RdYlGn_r",
        colorbar={"title": "share / γ"}, hovertemplate="%{y} %{x|%H:%M}: %{z:.2f}"))
    _marks(fig, view)
    fig.update_xaxes(type="date", tickformat="%H:%M")
    fig.update_layout(title="Households flagged per group over γ, traditional pass",
                      height=min(300 + 12 * len(data.group_names), 1400))
    return fig


def sweep_figures(view: SweepView) -> list[go.Figure]:
    """A figure per numeric or clock metric of the sweep: mean ± the 95 % CI per point
    against the first axis, a line per combination of the other axes. None without axes."""
    import plotly.graph_objects as go

    if not view.axes:
        return []
    first, others = view.axes[0], view.axes[1:]
    xs = [p.get(first) for p in view.points]
    numeric = all(isinstance(x, int | float) and not isinstance(x, bool) for x in xs)
    figures = []
    for metric in view.metrics:
        if view.metric_kinds.get(metric) == "text":
            continue
        mean = view.table[f"{metric}.mean"].to_numpy(dtype=float)
        if not np.isfinite(mean).any():
            continue
        low = view.table[f"{metric}.ci95_low"].to_numpy(dtype=float)
        high = view.table[f"{metric}.ci95_high"].to_numpy(dtype=float)
        fig = go.Figure()
        for label, rows in _lines(view, others).items():
            order = sorted(rows, key=lambda r: xs[r] if numeric else 0)
            fig.add_trace(go.Scatter(
                x=[xs[r] if numeric else str(xs[r]) for r in order], y=mean[order],
                error_y={"type": "data", "symmetric": False,
                         "array": np.nan_to_num(high[order] - mean[order]),
                         "arrayminus": np.nan_to_num(mean[order] - low[order])},
                mode="lines+markers", name=label or metric, showlegend=bool(others)))
        clock = view.metric_kinds.get(metric) == "clock"
        fig.update_layout(title=f"{view.name}: {metric}", xaxis_title=first,
                          yaxis_title=metric + (" (HH:MM)" if clock else ""),
                          height=420, margin={"l": 60, "r": 20, "t": 60, "b": 40})
        if clock:
            _clock_ticks(fig, np.concatenate([low, high, mean]))
        figures.append(fig)
    return figures


def _lines(view: SweepView, others: list[str]) -> dict[str, list[int]]:
    """Label -> the rows of the points that share the values of the other axes."""
    lines: dict[str, list[int]] = {}
    for row, point in enumerate(view.points):
        lines.setdefault(", ".join(f"{a}={point.get(a)}" for a in others), []).append(row)
    return lines


def _clock_ticks(fig: go.Figure, values: np.ndarray) -> None:
    """Label a y axis in minutes since midnight [min] as HH:MM."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return
    lo, hi = float(finite.min()), float(finite.max())
    step = next((s for s in (1, 2, 5, 10, 15, 30, 60, 120) if (hi - lo) / s <= 8), 240)
    ticks = np.arange(np.floor(lo / step) * step, hi + step, step)
    fig.update_yaxes(tickvals=ticks.tolist(), ticktext=[_hm(int(t)) for t in ticks])
