"""The tables and figures of docs/sweeps.md: the paper scenario's sweeps (means and 95 %
CIs over seeds).

Reads the finished sweep folders (their ``runs.jsonl``) and writes one figure per sweep to
``docs/figures/`` and its table, in Markdown, to standard output::

    drsim sweep scenarios/sweeps/detection_delay.yaml --out results/detection_delay --seeds 5
    drsim sweep scenarios/sweeps/mv_error.yaml --out results/mv_error
    drsim sweep scenarios/sweeps/threshold_z.yaml --out results/threshold_z
    drsim sweep scenarios/sweeps/uniform_drop.yaml --out results/uniform_drop
    drsim sweep scenarios/sweeps/reading_loss.yaml --out results/reading_loss
    drsim sweep scenarios/sweeps/reading_loss_targets.yaml --out results/reading_loss_targets
    python scripts/what_if_figures.py [--results results] [--figures docs/figures]
                                      [--only NAME ...]

A sweep folder that is missing is skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from drsim import units
from drsim.results.summary_model import Summary
from drsim.sweeps import JOURNAL, SWEEP_RECORD, mean_ci, read_journal

FIRST_TEST = 18 * 60 + 50  # the paper scenario's first household test (t_start + t_wait)
CAUGHT = 4  # a drop is caught when at least 4 of 5 seeds predict


def points(folder: Path, axis: str) -> list[tuple[Any, list[Summary]]]:
    """(axis value, the seeds' summaries) per value of the sweep's grid (its sweep.json),
    in the grid's order; runs recorded for values no longer in the grid are left out."""
    grid = json.loads((folder / SWEEP_RECORD).read_text(encoding="utf-8"))["grid"][axis]
    keys = [json.dumps(v, sort_keys=True) for v in grid]
    by_value: dict[str, list[Summary]] = {k: [] for k in keys}
    for record in read_journal(folder / JOURNAL).values():
        key = json.dumps(record["values"][axis], sort_keys=True)
        if key in by_value:
            by_value[key].append(Summary.model_validate(record["summary"]))
    return [(value, by_value[key]) for value, key in zip(grid, keys, strict=True)]


def clock(value: float) -> str:
    """"HH:MM" of minutes since midnight, "–" for NaN."""
    return "–" if not math.isfinite(value) else units.clock(value)


def clock_range(summaries: list[Summary]) -> str:
    """"19:39 (19:26-19:51)": the mean t_nc of the seeds that predict, and its range."""
    times = [t for t in (t_nc(s) for s in summaries) if t is not None]
    if not times:
        return "–"
    return f"{clock(float(np.mean(times)))} ({clock(min(times))}-{clock(max(times))})"


def stat(summaries: list[Summary], get: Callable[[Summary], float | None]
         ) -> tuple[float, float]:
    """(mean, 95 % CI half-width) over the seeds where the value exists."""
    values = [v for v in (get(s) for s in summaries) if v is not None and math.isfinite(v)]
    n, mean, low, high = mean_ci(values)
    return mean, (high - low) / 2 if n > 1 else math.nan


def spread(summaries: list[Summary], get: Callable[[Summary], float | None]
           ) -> tuple[float, float, float]:
    """(mean, mean − min, max − mean) over the seeds where the value exists: error bars
    that show the range of a handful of seeds (a t-interval of counts can leave the
    possible values)."""
    values = [v for v in (get(s) for s in summaries) if v is not None and math.isfinite(v)]
    if not values:
        return math.nan, math.nan, math.nan
    mean = float(np.mean(values))
    return mean, mean - min(values), max(values) - mean


def _range_bars(ax, x, values: list[tuple[float, float, float]], **style) -> None:
    ax.errorbar(x, [m for m, _, _ in values],
                yerr=[[lo for _, lo, _ in values], [hi for _, _, hi in values]],
                marker="o", capsize=4, **style)


def fmt(value: tuple[float, float], digits: int = 2, unit: str = "") -> str:
    mean, half = value
    if not math.isfinite(mean):
        return "–"
    ci = f" ± {half:.{digits}f}" if math.isfinite(half) else ""
    return f"{mean:.{digits}f}{ci}{unit}"


def _prediction(s: Summary) -> Any:
    """A run's prediction (every summary of these sweeps has one)."""
    assert s.prediction is not None
    return s.prediction


def predicted(s: Summary) -> float:
    return float(_prediction(s).predicted)


def t_nc(s: Summary) -> int | None:
    """The utility's prediction t_nc, minutes since midnight; None without one."""
    return _prediction(s).utility_noncompliance_time


def false_alarms(s: Summary) -> float:
    return float(_prediction(s).expected_pass_groups_latched)


def adaptive_share(s: Summary) -> float | None:
    assert s.reduction_share_of_expected is not None
    return s.reduction_share_of_expected["adaptive"]


def reduction(s: Summary, name: str) -> float:
    """The pass's reduction [MWh]."""
    assert s.reduction_mwh is not None
    return s.reduction_mwh[name]


def _text(minute: int | None) -> str:
    """"HH:MM" of a prediction, "None" without one."""
    return "None" if minute is None else units.clock(minute)


def _save(fig: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    print(f"\n![{path.stem}]({path.as_posix()})")


def _figure(ncols: int, width: float = 11.0, height: float = 3.8) -> tuple[Figure, list]:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, list(np.atleast_1d(fig.subplots(1, ncols)))


def detection_delay(folder: Path, figures: Path) -> None:
    rows = points(folder, "delay_detection")
    print("\n| detection delay (min) | " + " | ".join(str(v) for v, _ in rows) + " |")
    print("|---|" + "---|" * len(rows))
    adaptive = [stat(s, lambda x: reduction(x, "adaptive")) for _, s in rows]
    share = [stat(s, adaptive_share) for _, s in rows]
    print("| adaptive reduction (MWh) | " + " | ".join(fmt(a) for a in adaptive) + " |")
    print("| share of expected | " + " | ".join(fmt((100 * m, 100 * h), 1, " %")
                                               for m, h in share) + " |")
    seeds = rows[0][1]
    times = sorted({t_nc(s) for s in seeds}, key=lambda t: math.nan if t is None else t)
    expected_pass = sum(_prediction(s).expected_pass_noncompliance_time is not None
                        for _, ss in rows for s in ss)
    print(f"\n{len(seeds)} seeds: t_nc {', '.join(_text(t) for t in times)}; predictions on "
          f"the expected pass: {expected_pass} of {sum(len(ss) for _, ss in rows)} runs")
    fig, (ax,) = _figure(1, 7, 4.2)
    x = [v for v, _ in rows]
    for label, get, color in (
            ("adaptive", lambda s: reduction(s, "adaptive"), "tab:blue"),
            ("traditional", lambda s: reduction(s, "traditional"), "tab:red"),
            ("expected", lambda s: reduction(s, "expected"), "tab:green")):
        values = [stat(s, get) for _, s in rows]
        ax.errorbar(x, [m for m, _ in values], yerr=[np.nan_to_num(h) for _, h in values],
                    marker="o", capsize=4, color=color, label=label)
    ax.set_xlabel("second event delayed after the prediction (minutes)")
    ax.set_ylabel("reduction 18:30-20:30 (MWh)")
    ax.set_title(f"paper_100k: Figure 6.12, mean ± 95 % CI of {len(seeds)} seeds",
                 fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend()
    _save(fig, figures / "detection_delay_adaptive.png")


def mv_error(folder: Path, figures: Path) -> None:
    rows = points(folder, "baseline")

    def label(value: dict) -> str:
        method = value.get("method", "same_day")
        return f"error {value.get('error', 0.0):g}" if method == "same_day" else method

    print("\n| M&V | predicted (seeds) | t_nc, mean (range) | adaptive / expected | false alarms "
          "(groups latched on the expected pass) | precision / recall (whole program) |")
    print("|---|---|---|---|---|---|")
    for value, s in rows:
        prec = stat(s, lambda x: _prediction(x).household_precision_whole_program)
        rec = stat(s, lambda x: _prediction(x).household_recall_whole_program)
        share = stat(s, adaptive_share)
        print(f"| {label(value)} | {sum(predicted(x) for x in s):.0f} of {len(s)} | "
              f"{clock_range(s)} | {fmt((100 * share[0], 100 * share[1]), 1, ' %')} | "
              f"{fmt(stat(s, false_alarms), 1)} | {fmt(prec, 3)} / {fmt(rec, 3)} |")
    fig, axes = _figure(3, 12, 3.8)
    x = np.arange(len(rows))
    names = [label(v) for v, _ in rows]
    panels = (("t_nc (minutes after the first test)",
               lambda s: None if t_nc(s) is None else t_nc(s) - FIRST_TEST),
              ("adaptive reduction / expected (%)",
               lambda s: None if adaptive_share(s) is None else 100 * adaptive_share(s)),
              ("groups latched on the expected pass", false_alarms))
    for ax, (title, get) in zip(axes, panels, strict=True):
        _range_bars(ax, x, [spread(s, get) for _, s in rows], linestyle="none")
        ax.set_xticks(x, names, rotation=30, ha="right")
        ax.set_title(title, fontsize="medium")
        ax.grid(True, alpha=0.3)
    fig.suptitle("paper_100k: M&V error and method (mean and range over the seeds; t_nc "
                 "over the seeds that predict)", fontsize="medium")
    _save(fig, figures / "mv_error.png")


def uniform_drop(folder: Path, figures: Path) -> None:
    rows = points(folder, "groups[*].follow_through_drop")
    print("\n| drop of every group | seeds that predict | t_nc, mean (range) | "
          "traditional / expected | adaptive / expected |")
    print("|---|---|---|---|---|")
    for value, s in rows:
        shares = [stat(s, lambda x, p=p: x.reduction_share_of_expected[p])
                  for p in ("traditional", "adaptive")]
        print(f"| {value:g} | {sum(predicted(x) for x in s):.0f} of {len(s)} | "
              f"{clock_range(s)} | "
              + " | ".join(fmt((100 * m, 100 * h), 1, " %") for m, h in shares) + " |")
    caught = [v for v, s in rows if sum(predicted(x) for x in s) >= CAUGHT]
    print(f"\ncaught (≥ {CAUGHT} of 5 seeds predict): drops "
          f"{', '.join(f'{v:g}' for v in caught) or 'none'}")
    fig, (ax1, ax2) = _figure(2, 11, 3.8)
    x = [v for v, _ in rows]
    ax1.plot(x, [np.mean([predicted(s) for s in ss]) for _, ss in rows], marker="o")
    ax1.axhline(CAUGHT / 5, color="dimgray", linestyle="--", label="caught: 4 of 5 seeds")
    ax1.set_ylabel("share of seeds with a prediction")
    ax1.legend(loc="lower right")
    _range_bars(ax2, x, [spread(s, lambda v: None if t_nc(v) is None
                                else t_nc(v) - FIRST_TEST) for _, s in rows])
    ax2.set_ylabel("t_nc, minutes after the first test")
    for ax in (ax1, ax2):
        ax.set_xlabel("follow-through drop of every group")
        ax.grid(True, alpha=0.3)
    fig.suptitle("paper_100k, one drop for every group (t_nc: mean and range over the "
                 "seeds that predict)", fontsize="medium")
    _save(fig, figures / "uniform_drop.png")


def threshold_z(folder: Path, figures: Path) -> None:
    rows = points(folder, "monitoring.gamma_user.z")
    print("\n| z | detection delay t_nc − 18:50 (min) | groups latched on the expected pass "
          "| utility predictions on the expected pass | adaptive / expected |")
    print("|---|---|---|---|---|")
    for value, s in rows:
        delay = stat(s, lambda x: _prediction(x).detection_delay_minutes)
        share = stat(s, adaptive_share)
        false_predictions = sum(_prediction(x).expected_pass_noncompliance_time is not None
                                for x in s)
        print(f"| {value:g} | {fmt(delay, 1)} | {fmt(stat(s, false_alarms), 1)} | "
              f"{false_predictions} of {len(s)} | "
              f"{fmt((100 * share[0], 100 * share[1]), 1, ' %')} |")
    fig, (ax,) = _figure(1, 6.5, 4.2)
    for value, s in rows:
        delay = spread(s, lambda x: _prediction(x).detection_delay_minutes)
        alarms = spread(s, false_alarms)
        ax.errorbar([delay[0]], [alarms[0]], xerr=[[delay[1]], [delay[2]]],
                    yerr=[[alarms[1]], [alarms[2]]], marker="o", capsize=4,
                    label=f"z = {value:g}")
    ax.set_xlabel("detection delay: t_nc − first test (minutes)")
    ax.set_ylabel("groups latched on the expected pass")
    ax.set_title("paper_100k: false alarms against detection delay\n(mean and range over "
                 "the seeds)", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend()
    _save(fig, figures / "threshold_z.png")


def by_values(folder: Path, axes: tuple[str, ...]) -> list[tuple[tuple, list[Summary]]]:
    """(the axes' values, the seeds' summaries in replicate order) per grid point, in the
    grid's order (the first axis slowest); runs of values no longer in the grid are left
    out."""
    grid = json.loads((folder / SWEEP_RECORD).read_text(encoding="utf-8"))["grid"]
    combos: list[tuple] = [()]
    for axis in axes:
        combos = [(*c, v) for c in combos for v in grid[axis]]

    def key(values: tuple) -> str:
        return json.dumps(list(values), sort_keys=True)

    found: dict[str, list[tuple[int, Summary]]] = {key(c): [] for c in combos}
    for record in read_journal(folder / JOURNAL).values():
        k = key(tuple(record["values"][axis] for axis in axes))
        if k in found:
            found[k].append((record["replicate"], Summary.model_validate(record["summary"])))
    return [(c, [s for _, s in sorted(found[key(c)], key=lambda x: x[0])]) for c in combos]


LOSS_AXES = ("meters.reading_loss", "monitoring.max_missing")


def loss_label(value: dict | None) -> str:
    """"5 %", "5 %, bursts of 5"."""
    if not value or not value.get("rate"):
        return "0 %"
    burst = value.get("burst_length", 1)
    return f"{100 * value['rate']:g} %" + (f", bursts of {burst:g}" if burst > 1 else "")


def silent(s: Summary) -> float:
    """Households silent at some test (the lost-readings feature's count), 0 without."""
    assert s.monitoring is not None
    meters = s.monitoring.meters_silent
    return float(meters.get("total", 0) if isinstance(meters, dict) else 0)


def reading_loss(folder: Path, figures: Path) -> None:
    rows = by_values(folder, LOSS_AXES)
    done = sum(len(s) for _, s in rows)
    print(f"\n{done} runs recorded")
    print("\n| readings lost | k | seeds | t_nc, mean (range) | adaptive / expected | "
          "precision / recall (until monitoring stopped) | precision / recall (whole "
          "program) | groups latched on the expected pass (predictions) | meters silent |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (loss, k), s in rows:
        if not s:
            print(f"| {loss_label(loss)} | {k} | 0 | – | – | – | – | – | – |")
            continue
        p = [stat(s, lambda x, f=f: getattr(_prediction(x), f)) for f in (
            "household_precision", "household_recall", "household_precision_whole_program",
            "household_recall_whole_program")]
        share = stat(s, adaptive_share)
        false_predictions = sum(_prediction(x).expected_pass_noncompliance_time
                                is not None for x in s)
        print(f"| {loss_label(loss)} | {k} | {len(s)} | {clock_range(s)} | "
              f"{fmt((100 * share[0], 100 * share[1]), 1, ' %')} | "
              f"{fmt(p[0], 3)} / {fmt(p[1], 3)} | {fmt(p[2], 3)} / {fmt(p[3], 3)} | "
              f"{fmt(stat(s, false_alarms), 1)} ({false_predictions}) | "
              f"{fmt(stat(s, silent), 1)} |")
    fig, axes = _figure(3, 13, 4.0)
    losses = list(dict.fromkeys(json.dumps(v, sort_keys=True) for (v, _), _ in rows))
    ks = list(dict.fromkeys(k for (_, k), _ in rows))
    x = np.arange(len(losses))
    panels = (("t_nc, minutes after the first test",
               lambda s: None if t_nc(s) is None else t_nc(s) - FIRST_TEST),
              ("adaptive reduction / expected (%)",
               lambda s: None if adaptive_share(s) is None else 100 * adaptive_share(s)),
              ("household recall until monitoring stopped",
               lambda s: _prediction(s).household_recall))
    for ax, (title, get) in zip(axes, panels, strict=True):
        for j, k in enumerate(ks):
            values = [spread(s, get) for (v, kk), s in rows if kk == k]
            _range_bars(ax, x + (j - 1) * 0.12, values, linestyle="none", label=f"k = {k}")
        ax.set_xticks(x, [loss_label(json.loads(v)) for v in losses], rotation=20,
                      ha="right")
        ax.set_title(title, fontsize="medium")
        ax.grid(True, alpha=0.3)
    axes[0].legend()
    fig.suptitle("paper_100k with lost meter readings: exact (k = 0) and approximate "
                 "(k = 1, 2) meter query (mean and range over the seeds)", fontsize="medium")
    _save(fig, figures / "reading_loss.png")


def reading_loss_targets(folder: Path, figures: Path) -> None:
    """Per seed: t_nc without loss, with 5 % loss at k = 1 (target: within 2 minutes),
    the adaptive share (≥ 97 %) and the expected pass (no prediction); k = 0's slip."""
    found = {json.dumps(list(c), sort_keys=True): s for c, s in by_values(folder, LOSS_AXES)}

    def at(rate: float, k: int) -> list[Summary]:
        return found.get(json.dumps([{"rate": rate}, k], sort_keys=True), [])

    free, k1, k0 = at(0.0, 0), at(0.05, 1), at(0.05, 0)
    print("\n| seed | t_nc, no loss | t_nc, 5 %, k = 1 | difference (min) | adaptive / "
          "expected: no loss, 5 % k = 1 | expected pass, k = 1: prediction (groups "
          "latched) | t_nc, 5 %, k = 0 | slip with k = 0 (min) | adaptive / expected, "
          "k = 0 | targets met |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r, (a, b, c) in enumerate(zip(free, k1, k0, strict=False)):
        ta, tb, tc = t_nc(a), t_nc(b), t_nc(c)
        diff = None if ta is None or tb is None else tb - ta
        slip = None if ta is None or tc is None else tc - ta
        share = adaptive_share(b)
        expected = _prediction(b).expected_pass_noncompliance_time
        met = diff is not None and abs(diff) <= 2 and share is not None and share >= 0.97 \
            and expected is None
        def pct(x: float | None) -> str:
            return "–" if x is None else f"{100 * x:.1f} %"

        print(f"| {r + 1} | {clock(ta or math.nan)} | {clock(tb or math.nan)} | "
              f"{'–' if diff is None else f'{diff:+.0f}'} | "
              f"{pct(adaptive_share(a))}, {pct(share)} | "
              f"{'none' if expected is None else clock(expected)} ({false_alarms(b):.0f}) | "
              f"{clock(tc or math.nan)} | "
              f"{'–' if slip is None else f'{slip:+.0f}'} | {pct(adaptive_share(c))} | "
              f"{'yes' if met else 'no'} |")
    same = all(x.reduction_mwh == y.reduction_mwh and x.prediction == y.prediction
               for x, y in zip(free, at(0.0, 1), strict=False))
    print(f"\nwithout loss k = 0 and k = 1 give the same runs: {same}")


SWEEPS = {"detection_delay": detection_delay, "mv_error": mv_error,
          "threshold_z": threshold_z, "uniform_drop": uniform_drop,
          "reading_loss": reading_loss, "reading_loss_targets": reading_loss_targets}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=Path("results"))
    ap.add_argument("--figures", type=Path, default=Path("docs/figures"))
    ap.add_argument("--only", nargs="+", choices=sorted(SWEEPS), default=list(SWEEPS),
                    help="the sweeps to report (default: all)")
    args = ap.parse_args(argv)
    for name in args.only:
        draw = SWEEPS[name]
        folder = args.results / name
        print(f"\n## {name}")
        if not (folder / JOURNAL).is_file():
            print(f"(no finished sweep in {folder}: skipped)")
            continue
        draw(folder, args.figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
