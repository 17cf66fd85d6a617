"""Figures of the ACEP reproduction (scripts/reproduce_acep.py) from its CSVs: the
analogues of Figs. 5-18 of Li and Ge, VLDB 2016, §6, as PNGs ``acep_fig*.png``.

    python scripts/acep_figures.py results/acep [--suffix _full] [--out docs/figures]

Fractions are medians over the stream seeds of the run; the x axes of inter-arrival
times are logarithmic.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"rc-acep": ("C0", "-", "o"), "timeout": ("C1", "-", "s"),
         "hybrid shedding": ("C2", "-", "^"), "rc-acep sketch": ("C3", "--", "v"),
         "rc-acep filtered sketch": ("C4", ":", "d"),
         "rc-acep trajectory store": ("C9", "--", "X"),
         "rc-acep trajectory store, cells": ("C9", ":", "x"),
         "rc-acep, lookups x1.5": ("C8", ":", "*"), "rc-acep proxy": ("C5", "--", "P"),
         "timeout proxy": ("C6", ":", "x"), "rc-acep, selection x4": ("C7", ":", "o")}


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _median(rows: list[dict], fig: int, method: str, value: str = "points"
            ) -> tuple[list[float], list[float]]:
    by: dict[float, list[float]] = {}
    for r in rows:
        if int(r["figure"]) == fig and r["method"] == method and r[value] != "":
            by.setdefault(float(r["delta_us"]), []).append(float(r[value]))
    xs = sorted(by)
    return xs, [statistics.median(by[x]) for x in xs]


def _fraction_panel(ax, rows, figs: tuple[int, ...], methods, title: str) -> None:
    for fig in figs:
        for m in methods:
            xs, ys = _median(rows, fig, m)
            if not xs:
                continue
            c, ls, mk = STYLE.get(m, ("k", "-", "."))
            ax.plot(xs, ys, color=c, ls=ls, marker=mk, ms=4, label=m)
            if m == "hybrid shedding":
                xs, ys = _median(rows, fig, m, "in_time_points")
                ax.plot(xs, ys, color=c, ls="-.", marker=mk, ms=4, mfc="none",
                        label="hybrid shedding, within Δ")
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("inter-arrival time Δ [µs]")
    ax.set_ylabel("fraction of match points found")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)


def _save(fig, path: Path) -> Path:
    """Lay out ``fig``, write it to ``path`` and close it."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _throughput_bars(ax, thr: list[dict], fig: int, title: str) -> None:
    """Figs. 5-7: the events per second of each query at k = 0, 1, 2."""
    rs = [r for r in thr if int(r["figure"]) == fig]
    qs = list(dict.fromkeys(r["query"] for r in rs))
    for j, k in enumerate(("0", "1", "2")):
        ys = [next(float(r["events_per_s"]) for r in rs if r["query"] == q and r["k"] == k)
              for q in qs]
        ax.bar([i + (j - 1) * 0.27 for i in range(len(qs))], ys, width=0.27,
               label=f"k = {k}" + (" (SASE^U)" if k == "0" else ""))
    ax.set_xticks(range(len(qs)), qs)
    ax.set_yscale("log")
    ax.set_ylabel("events / s (wall clock)")
    w = rs[0]["window"] if rs else ""
    ax.set_title(f"{title} (W = {w} events)", fontsize=9)
    ax.legend(fontsize=7)


def _pattern_size_panel(ax, thr: list[dict]) -> None:
    """Fig. 8: the events per second of each PHEV template by pattern size, k = 0 and 2."""
    rs = [r for r in thr if int(r["figure"]) == 8]
    for q in dict.fromkeys(r["query"] for r in rs):
        for k, ls in (("0", "-"), ("2", "--")):
            pts = sorted((int(r["pattern_size"]), float(r["events_per_s"])) for r in rs
                         if r["query"] == q and r["k"] == k)
            ax.plot(*zip(*pts, strict=True), ls=ls, marker="o", ms=3, label=f"{q}, k={k}")
    ax.set_yscale("log")
    ax.set_xlabel("pattern size (states)")
    ax.set_title("Fig. 8: PHEV, pattern size", fontsize=9)
    ax.legend(fontsize=6, ncol=2)


def _throughput_figure(thr: list[dict], out: Path) -> Path:
    """Figs. 5-8: ACEPMATCH's throughput."""
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, f, title in zip(axes[:3], (5, 6, 7), ("Fig. 5: letters, larger window",
                                                  "Fig. 6: letters, smaller window",
                                                  "Fig. 7: PHEV"), strict=True):
        _throughput_bars(ax, thr, f, title)
    _pattern_size_panel(axes[3], thr)
    return _save(fig, out / "acep_fig5_8_throughput.png")


def _fraction_figure(frac: list[dict], out: Path) -> Path:
    """Figs. 9-10: RC-ACEP against the timeout and hybrid load shedding."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    methods = ("rc-acep", "timeout", "hybrid shedding", "rc-acep, selection x4")
    _fraction_panel(axes[0], frac, (9,), methods, "Fig. 9: Q1 over letters, k = 2")
    _fraction_panel(axes[1], frac, (10,), methods, "Fig. 10: Q5 over PHEV, k = 2")
    return _save(fig, out / "acep_fig9_10_fraction.png")


SKETCH_METHODS = ("rc-acep", "rc-acep sketch", "rc-acep filtered sketch",
                  "rc-acep trajectory store", "rc-acep trajectory store, cells",
                  "rc-acep, lookups x1.5")


def _sketch_figure(frac: list[dict], mem: list[dict], out: Path) -> Path:
    """Figs. 11-14: the history's memory with and without the sketch, and what the
    sketch costs in matches found."""
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    for ax, f, title in ((axes[0], 11, "Fig. 11: ℋ memory, letters (Q1 × companies)"),
                         (axes[2], 13, "Fig. 13: ℋ memory, PHEV (Q7, Q5, unions)")):
        for m in ("exact", "sketch", "filtered sketch", "trajectory store",
                  "trajectory store, cells"):
            pts = sorted({(int(r["pattern_size"]), float(r["bytes"]) / 1024) for r in mem
                          if int(r["figure"]) == f and r["method"] == m})
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", ms=4, label=m)
        ax.set_xlabel("pattern size (states)")
        ax.set_ylabel("KiB (modelled, both buffers)")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    base9 = [r for r in frac if int(r["figure"]) in (9, 12)]
    _fraction_panel(axes[1], base9, (9, 12), SKETCH_METHODS,
                    "Fig. 12: Q1, with and without the sketch")
    base10 = [r for r in frac if int(r["figure"]) in (10, 14)]
    _fraction_panel(axes[3], base10, (10, 14), SKETCH_METHODS,
                    "Fig. 14: Q5, with and without the sketch")
    return _save(fig, out / "acep_fig11_14_sketch.png")


def _proxy_figure(frac: list[dict], mem: list[dict], out: Path) -> Path:
    """Figs. 15-16: proxy matches, in matches found and in memory."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    _fraction_panel(axes[0], [r for r in frac if int(r["figure"]) in (9, 15)], (9, 15),
                    ("rc-acep", "rc-acep proxy", "timeout", "timeout proxy"),
                    "Fig. 15: Q1, with and without proxy matches")
    ax = axes[1]
    for m in ("no proxy", "proxy"):
        pts = sorted((int(r["pattern_size"]), int(r["items"])) for r in mem
                     if int(r["figure"]) == 16 and r["method"] == m)
        if pts:
            ax.plot(*zip(*pts, strict=True), marker="o", label=m)
    ax.set_yscale("log")
    ax.set_xlabel("pattern size (states)")
    ax.set_ylabel("peak live match nodes")
    ax.set_title("Fig. 16: memory with proxy matches (Q1 × companies)", fontsize=9)
    ax.legend(fontsize=7)
    return _save(fig, out / "acep_fig15_16_proxy.png")


def _adaptation_figure(ada: list[dict], mem: list[dict], out: Path) -> Path:
    """Figs. 17-18: Q-learning against no adaptation as the history ages, and its
    memory."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    for stream, ls in (("change", "-"), ("no change", "--")):
        for m, c in (("Q-learning", "C0"), ("no adaptation", "C1"),
                     ("history of the day", "C2")):
            pts = sorted((int(r["age_days"]), float(r["points"])) for r in ada
                         if r["stream"] == stream and r["method"] == m)
            if pts:
                ax.plot(*zip(*pts, strict=True), color=c, ls=ls, marker="o",
                        label=f"{m}, {stream}")
    ax.set_xlabel("age of the history [days]")
    ax.set_ylabel("fraction of match points found")
    d = ada[0]["delta_us"] if ada else ""
    ax.set_title(f"Fig. 17: adaptation (Q1, Δ = {d} µs)", fontsize=9)
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7)
    ax = axes[1]
    for m, c in (("Q-learning", "C0"), ("no adaptation", "C1")):
        pts = sorted((int(r["pattern_size"]), float(r["bytes"]) / 1024) for r in mem
                     if int(r["figure"]) == 18 and r["method"] == m)
        if pts:
            ax.plot(*zip(*pts, strict=True), color=c, marker="o", label=m)
    ax.set_xlabel("pattern size (states)")
    ax.set_ylabel("KiB (modelled)")
    ax.set_title("Fig. 18: memory with Q-learning", fontsize=9)
    ax.legend(fontsize=7)
    return _save(fig, out / "acep_fig17_18_adaptation.png")


def draw(folder: Path, suffix: str, out: Path) -> list[Path]:
    """The five figures of the CSVs ``folder/*{suffix}.csv``, written to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    thr = _rows(folder / f"throughput{suffix}.csv")
    frac = _rows(folder / f"fraction{suffix}.csv")
    mem = _rows(folder / f"memory{suffix}.csv")
    ada = _rows(folder / f"adaptation{suffix}.csv")
    return [_throughput_figure(thr, out), _fraction_figure(frac, out),
            _sketch_figure(frac, mem, out), _proxy_figure(frac, mem, out),
            _adaptation_figure(ada, mem, out)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--suffix", default="")
    ap.add_argument("--out", type=Path, default=Path("docs/figures"))
    args = ap.parse_args(argv)
    for p in draw(args.folder, args.suffix, args.out):
        print(f"figure {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
