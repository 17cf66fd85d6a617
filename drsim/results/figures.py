"""The figures of a result folder (matplotlib, drawn off-screen).

``simulate``: the system demand of the passes with the utility's estimates
(``system_demand.png``) and the baseline demand by category (``breakdown.png``). ``run``:
Figure 6.11 of the dissertation (§6.3.2) with the second event and t_nc
(``system_demand.png``, :func:`plot_run_demand`), and the compliance timeline of the three
tiers (``compliance_timeline.png``, :func:`plot_compliance_timeline`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from drsim.pipeline.pass_names import pass_order
from drsim.units import DAY as MINUTES
from drsim.units import clock

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from drsim.pipeline.stages import Simulation
    from drsim.results.run_data import RunData

PASS_STYLE = {"baseline": ("black", "-"), "expected": ("tab:green", "-"),
              "traditional": ("tab:red", "--")}
RUN_PASS_STYLE = {  # colour, line style, width, z-order: the four curves of Figure 6.11
    # adaptive is drawn widest and lowest, so that where the passes coincide (before the
    # program, and adaptive with traditional before DR2) every line stays visible
    "baseline": ("black", "-", 1.5, 6),
    "expected": ("tab:green", "-", 1.8, 4),
    "traditional": ("tab:red", "--", 1.9, 5),
    "adaptive": ("tab:blue", "-", 3.2, 3),
}
DEMAND_WINDOW = (16 * 60, 23 * 60)  # Figure 6.11 shows 16:00-23:00
MAX_GROUP_ROWS = 12  # more groups than this: a heatmap instead of one subplot per group


def _saved(fig: Figure, path: str | Path | None, dpi: int) -> Figure:
    """The figure, written to ``path`` as PNG first when a path is given."""
    if path is not None:
        fig.savefig(path, dpi=dpi)
    return fig


def _clock_axis(ax, start: int = 0, end: int = MINUTES, step: int = 180,
                label: bool = True) -> None:
    """Clock-time x axis over ``[start, end]`` minutes, a tick every ``step`` minutes."""
    first = -(-start // step) * step
    ticks = np.arange(first, end + 1, step)
    ax.set_xticks(ticks, [clock(int(t) % MINUTES) if t < MINUTES else "24:00" for t in ticks])
    ax.set_xlim(start, end)
    if label:
        ax.set_xlabel("time of day")
    ax.grid(True, alpha=0.3)


def _shade_program(ax, result: Simulation) -> None:
    p = result.scenario.dr_program
    ax.axvspan(p.start_minute, p.end_minute, color="tab:orange", alpha=0.15,
               label=f"DR program {p.start}–{p.end}")


def plot_system_demand(result: Simulation, path: str | Path | None = None) -> Figure:
    """System demand of the simulated passes with the utility's estimates B̂ and P̂."""
    fig = _figure(10, 5)
    ax = fig.add_subplot()
    minutes = np.arange(MINUTES)
    _shade_program(ax, result)
    for name, curve in result.loads.system_kw.items():
        color, style = PASS_STYLE.get(name, (None, "-"))
        ax.plot(minutes, curve / 1000.0, color=color, linestyle=style, linewidth=1.2, label=name)
    for name, curve in result.loads.estimate_kw.items():
        if name in result.loads.system_kw:
            _plot_estimate(ax, minutes, name, curve, result.loads.system_kw[name])
    _clock_axis(ax)
    ax.set_ylabel("system demand (MW)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{result.scenario.name}: system demand, {result.households:,} households")
    ax.legend(loc="lower center", fontsize="small")  # the night and midday leave room there
    return _saved(fig, path, 150)


def plot_breakdown(result: Simulation, path: str | Path | None = None,
                   pass_name: str = "baseline") -> Figure:
    """One pass's demand stacked by appliance category."""
    import matplotlib

    categories = result.loads.category_kw[pass_name]
    names = sorted(categories, key=lambda c: -categories[c].sum())
    fig = _figure(10, 5)
    ax = fig.add_subplot()
    palette = matplotlib.colormaps["tab20"]
    ax.stackplot(np.arange(MINUTES), *[categories[c] / 1000.0 for c in names], labels=names,
                 colors=[palette(i % 20) for i in range(len(names))], linewidth=0)
    program = result.scenario.dr_program
    for minute in (program.start_minute, program.end_minute):
        ax.axvline(minute, color="black", linestyle=":", linewidth=1)
    _clock_axis(ax)
    ax.set_ylabel("demand (MW)")
    ax.set_title(f"{result.scenario.name}: {pass_name} demand by category, "
                 f"{result.households:,} households")
    ax.legend(loc="upper left", fontsize="small", ncols=2)
    return _saved(fig, path, 150)


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _number(value: Any) -> float | None:
    """A finite real number, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return None
    return float(value) if np.isfinite(value) else None


def _system_mw(data: RunData, name: str) -> np.ndarray:
    return np.asarray(data.group_kw[name], dtype=np.float64).sum(axis=0) / 1000.0


def _demand_window(data: RunData) -> tuple[int, int]:
    """16:00-23:00, widened by whole hours when the program or DR2 reaches outside it."""
    lo, hi = DEMAND_WINDOW
    times = [*data.program, *(data.second_event or ()),
             *([data.t_nc] if data.t_nc is not None else [])]
    lo = min(lo, (min(times) - 30) // 60 * 60)
    hi = max(hi, -(-(max(times) + 30) // 60) * 60)
    return max(lo, 0), min(hi, MINUTES)


def plot_run_demand(data: RunData, path: str | Path | None = None) -> Figure:
    """Figure 6.11: system demand of the four passes with the DR windows and t_nc."""
    fig = _figure(11, 6.5)
    ax = fig.add_subplot()
    lo, hi = _demand_window(data)
    minutes = np.arange(MINUTES)
    view = slice(lo, hi + 1)
    start, end = data.program
    ax.axvspan(start, end, color="tab:orange", alpha=0.13, linewidth=0,
               label=f"DR program {clock(start)}–{clock(end)}")
    if data.second_event is not None:
        announced, s2, e2 = data.second_event
        ax.axvspan(s2, e2, facecolor="none", hatch="///", edgecolor="tab:blue", alpha=0.5,
                   linewidth=0, label=f"second DR event {clock(s2)}–{clock(e2)}")
        if announced != data.t_nc:
            ax.axvline(announced, color="tab:blue", linestyle="-.", linewidth=1.2,
                       label=f"second event announced {clock(announced)}")
    for name in pass_order(data.group_kw):
        color, style, width, z = RUN_PASS_STYLE.get(name, (None, "-", 1.4, 3))
        label = name
        mwh = _number(data.reduction_mwh.get(name))
        if mwh is not None and name != "baseline":
            label = f"{name}: {mwh:.2f} MWh reduced"
        ax.plot(minutes[view], _system_mw(data, name)[view], color=color, linestyle=style,
                linewidth=width, label=label, zorder=z)
    if "baseline" in data.estimate_kw and "baseline" in data.group_kw:
        _plot_estimate(ax, minutes[view], "baseline", data.estimate_kw["baseline"],
                       1000.0 * _system_mw(data, "baseline"))
    marker = ax.get_xaxis_transform()  # x in minutes, y in axes fraction
    if data.t_nc is not None:
        what = "non-compliance predicted"
        if data.second_event is not None and data.second_event[0] == data.t_nc:
            what += ", second event announced"
        ax.axvline(data.t_nc, color="black", linestyle="--", linewidth=1.3, zorder=8,
                   label=f"t_nc {clock(data.t_nc)}: {what}")
        ax.text(data.t_nc, 0.98, f" t_nc {clock(data.t_nc)}", transform=marker, ha="left",
                va="top", fontsize=11, fontweight="bold",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})
    else:
        ax.text(0.99, 0.98, "no utility non-compliance prediction", transform=ax.transAxes,
                ha="right", va="top", fontsize=10)
    _clock_axis(ax, lo, hi, step=60)
    ax.set_ylabel("system demand (MW)")
    who = "" if data.households is None else f"{data.households:,} households, "
    ax.set_title(f"{data.name}: system demand ({who}{len(data.group_names)} groups)")
    fig.legend(loc="outside lower center", ncols=3, fontsize="small")
    return _saved(fig, path, 150)


ESTIMATE_STYLE = {"baseline": ("tab:purple", "B̂", "baseline"),  # colour, symbol, what
                  "expected": ("tab:olive", "P̂", "expected response")}


def _estimate_label(name: str, estimate: np.ndarray, simulated: np.ndarray) -> str:
    """The legend entry of the utility's estimate ``name`` (B̂ or P̂) [MW], with how far it
    is from the simulated pass [MW] over the minutes it is estimated: it is drawn on top
    of that pass and would hide in it unnoticed."""
    _, symbol, what = ESTIMATE_STYLE.get(name, (None, name, name))
    label = f"utility's estimate {symbol} of the {what}"
    known = np.isfinite(estimate)
    if not known.any():
        return label
    gap = estimate[known] - simulated[known]
    if np.abs(gap).max() <= 1e-3 * np.abs(simulated[known]).max():
        return f"{label} (equals the simulated one)"
    return f"{label} ({np.mean(gap):+.2f} MW on average against the simulated one)"


def _plot_estimate(ax, minutes: np.ndarray, name: str, estimate_kw: np.ndarray,
                   simulated_kw: np.ndarray) -> None:
    """The utility's estimate ``name`` [kW] dotted, on top of every pass, in MW."""
    estimate = np.asarray(estimate_kw, dtype=np.float64) / 1000.0
    simulated = np.asarray(simulated_kw, dtype=np.float64) / 1000.0
    ax.plot(minutes, estimate[minutes], color=ESTIMATE_STYLE.get(name, ("dimgray",))[0],
            linestyle=(0, (1, 1.5)), linewidth=2.4, zorder=9,
            label=_estimate_label(name, estimate, simulated))


def _runs(ticks: np.ndarray, marked: np.ndarray) -> list[tuple[float, float]]:
    """Spans [first - ½, last + ½] of the runs of consecutive ``ticks`` that are ``marked``."""
    ticks = np.asarray(ticks)
    on = np.isin(ticks, np.asarray(marked))
    if not on.any():
        return []
    edges = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(np.int8), [0]])))
    return [(ticks[a] - 0.5, ticks[b - 1] + 0.5) for a, b in zip(edges[::2], edges[1::2],
                                                                   strict=True)]


def _timeline_window(data: RunData) -> tuple[int, int, int]:
    """x range of the compliance timeline (the program, a little margin) and tick step."""
    start, end = data.program
    times = np.asarray(data.test_times)
    lo = min(start, int(times.min())) if times.size else start
    hi = max(end, int(times.max())) if times.size else end
    span = hi - lo
    step = 15 if span <= 180 else 30 if span <= 360 else 60
    return lo - 2, hi + 2, step


def plot_compliance_timeline(data: RunData, path: str | Path | None = None) -> Figure:
    """Household non-compliance per group over the program (traditional pass): one row per
    group (up to :data:`MAX_GROUP_ROWS`), else a heatmap of group × test time."""
    if len(data.group_names) > MAX_GROUP_ROWS:
        return _compliance_heatmap(data, path)
    return _compliance_rows(data, path)


def _latch(data: RunData, name: str, g: int) -> int | None:
    latches = data.group_latch.get(name)
    return None if latches is None or latches[g] is None else int(latches[g])


def _stop(data: RunData, name: str, g: int) -> int | None:
    stop = data.monitoring_stop.get(name)
    return None if stop is None else int(stop[g])


def _steps(times: np.ndarray, values: np.ndarray, stop: int | None
           ) -> tuple[np.ndarray, np.ndarray]:
    """A step curve's points up to ``stop`` [min]: the tests until then (``values`` is NaN
    after it, :func:`_tested`) and the last value held until ``stop``."""
    if stop is None:
        return times, values
    kept = times <= stop
    x, y = times[kept], values[kept]
    if not len(x):
        return x, y
    return np.append(x, stop), np.append(y, y[-1])


def _tested(data: RunData, name: str) -> np.ndarray | None:
    """The shares flagged of pass ``name`` (groups, tests), NaN after each group's meters
    stopped being tested (:attr:`RunData.monitoring_stop`: its latch or t_nc)."""
    frac = data.flagged_fraction.get(name)
    if frac is None:
        return None
    frac = np.array(frac, dtype=np.float64)
    stop = data.monitoring_stop.get(name)
    if stop is not None:
        frac[np.asarray(data.test_times)[None, :] > np.asarray(stop)[:, None]] = np.nan
    return frac


def _compliance_rows(data: RunData, path: str | Path | None) -> Figure:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    names = list(data.group_names)
    n = len(names)
    times = np.asarray(data.test_times)
    lo, hi, step = _timeline_window(data)
    fig = _figure(11, 1.0 + 1.35 * n)
    axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
    traditional = _tested(data, "traditional")
    expected = _tested(data, "expected")
    alerts = data.group_alert_ticks.get("traditional")
    stop = data.monitoring_stop.get("traditional")
    gamma = np.asarray(data.thresholds.gamma, dtype=np.float64)
    shares = [f for f in (traditional, expected) if f is not None and np.size(f)]
    peak = max([float(np.nanmax(f, initial=0.0)) for f in shares]
               + [float(np.max(gamma, initial=0.0))])
    top = min(1.05, max(1.25 * peak, 0.01))  # zoom on the shares and the threshold
    for g, ax in enumerate(axes):
        marked = [] if alerts is None else np.asarray(alerts[g])
        if stop is not None:
            marked = marked[marked <= stop[g]]
        for a, b in _runs(data.ticks, marked):
            ax.axvspan(a, b, color="tab:red", alpha=0.15, linewidth=0)
        ax.plot(times, gamma[g], color="dimgray", linestyle="--", linewidth=1,
                drawstyle="steps-post")
        if expected is not None:
            ax.plot(*_steps(times, expected[g], _stop(data, "expected", g)), color="tab:green",
                    alpha=0.6, linewidth=1, drawstyle="steps-post",
                    zorder=4)  # on top: visible where they coincide
        if traditional is not None:
            x, y = _steps(times, traditional[g], _stop(data, "traditional", g))
            ax.plot(x, y, color="tab:red", linewidth=1.8, drawstyle="steps-post", marker="o",
                    markersize=3, markevery=list(range(len(x) - 1)))
        latch = _latch(data, "traditional", g)
        status = "never latched"
        if latch is not None:
            ax.axvline(latch, color="darkred", linewidth=2.2)
            status = f"latched {clock(latch)}"
        false_alarm = _latch(data, "expected", g)
        if false_alarm is not None:
            ax.axvline(false_alarm, color="tab:green", linewidth=1.2, linestyle=":")
            status += f"; expected pass latched {clock(false_alarm)}"
        if data.t_nc is not None:
            ax.axvline(data.t_nc, color="black", linestyle="--", linewidth=1.2)
        ax.text(0.005, 0.93, f"{names[g]}: {status}", transform=ax.transAxes, ha="left",
                va="top", fontsize=9, fontweight="bold",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})
        ax.set_ylim(0, top)
        ax.set_ylabel("share of\nhouseholds\nflagged", fontsize=8)
        _clock_axis(ax, lo, hi, step=step, label=g == n - 1)
    handles = [
        Line2D([], [], color="tab:red", linewidth=1.8, marker="o", markersize=3,
               label="traditional: share of households flagged, until tests stop"),
        Line2D([], [], color="tab:green", alpha=0.6, label="expected pass (false alarms)"),
        Line2D([], [], color="dimgray", linestyle="--", label=_threshold_label(data)),
        Patch(color="tab:red", alpha=0.15, label="group alert"),
        Line2D([], [], color="darkred", linewidth=2.2, label="group latched (non-compliant)"),
    ]
    if data.t_nc is not None:
        handles.append(Line2D([], [], color="black", linestyle="--",
                              label=f"utility prediction t_nc {clock(data.t_nc)}"))
    fig.suptitle(f"{data.name}: household non-compliance per group, traditional pass")
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize="small")
    return _saved(fig, path, 120)


def _threshold_label(data: RunData) -> str:
    policy = data.thresholds.policy
    if policy is not None:
        return policy.label
    values = np.unique(data.thresholds.gamma)
    return f"γ_user = {float(values[0]):g}" if len(values) == 1 else "γ_user"


def _compliance_heatmap(data: RunData, path: str | Path | None) -> Figure:
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    names = list(data.group_names)
    n = len(names)
    times = np.asarray(data.test_times, dtype=np.float64)
    lo, hi, step = _timeline_window(data)
    fig = _figure(11, min(4.0 + 0.05 * n, 14.0))
    ax = fig.add_subplot()
    cmap = colormaps["RdYlGn_r"].with_extremes(bad="lightgray")
    frac = _tested(data, "traditional")
    if frac is not None and times.size:
        # the share flagged as a multiple of the group's threshold: above 1 the group alerts
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.asarray(frac, dtype=np.float64) / np.asarray(data.thresholds.gamma)
        top = max(2.0, float(np.nanmax(ratio, initial=0.0)))
        norm = TwoSlopeNorm(vmin=0.0, vcenter=1.0, vmax=top)
        if times.size > 1:
            mids = (times[1:] + times[:-1]) / 2
            edges = np.concatenate([[times[0] - (mids[0] - times[0])], mids,
                                    [times[-1] + (times[-1] - mids[-1])]])
        else:
            edges = np.array([times[0] - 2.5, times[0] + 2.5])
        mesh = ax.pcolormesh(edges, np.arange(n + 1) - 0.5, np.ma.masked_invalid(ratio),
                             cmap=cmap, norm=norm, shading="flat")
        bar = fig.colorbar(mesh, ax=ax, pad=0.01, fraction=0.05)
        bar.set_label("share of the group's households flagged, / its threshold γ")
        bar.ax.axhline(1.0, color="black", linewidth=2)
    latched = [(g, _latch(data, "traditional", g)) for g in range(n)]
    latched = [(g, t) for g, t in latched if t is not None]
    if latched:
        ax.scatter([t for _, t in latched], [g for g, _ in latched], marker="|", s=60,
                   color="black", linewidths=2,
                   label=f"group latched ({len(latched)} of {n})", zorder=3)
    if data.t_nc is not None:
        ax.axvline(data.t_nc, color="black", linestyle="--", linewidth=1.5,
                   label=f"utility prediction t_nc {clock(data.t_nc)}")
    ax.set_ylim(n - 0.5, -0.5)
    every = max(1, -(-n // 40))
    ax.set_yticks(np.arange(0, n, every), names[::every], fontsize=7)
    ax.set_ylabel("group")
    _clock_axis(ax, lo, hi, step=step)
    ax.grid(False)
    ax.set_title(f"{data.name}: household non-compliance, {n} groups, traditional pass")
    handles = ax.get_legend_handles_labels()[0]
    if frac is not None and np.isnan(np.asarray(frac, dtype=np.float64)).any():
        from matplotlib.patches import Patch

        handles.append(Patch(color="lightgray", label="no test (group latched or t_nc)"))
    if handles:
        ax.legend(handles=handles, loc="upper left", fontsize="small", framealpha=0.9)
    return _saved(fig, path, 120)

