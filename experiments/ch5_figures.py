"""Figures of the remote-data reproduction (dissertation §5.6.2) from the CSV that
``scripts/reproduce_ch5.py`` writes::

    python scripts/ch5_figures.py results/ch5/latency.csv --out docs/figures

``ch5_latency.png`` (Figures 5.8-5.11): per dataset, query and selection policy, the
match latency of each strategy as a bar from p25 to p75 with whiskers to p5 and p95 and
a dot at the median, log scale, for the cost-based cache (BL1 has none);
``ch5_throughput.png`` (Figure 5.12): throughput per strategy, both caches.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

ORDER = ["BL1", "BL2", "BL3", "PFetch", "LzEval", "Hybrid"]
COLOR = {"BL1": "tab:gray", "BL2": "tab:brown", "BL3": "tab:olive", "PFetch": "tab:cyan",
         "LzEval": "tab:blue", "Hybrid": "tab:red"}
CONFIGS = [(d, q, s) for d in ("DS3", "DS4") for q in ("Q5", "Q6")
           for s in ("non-greedy", "greedy")]
FLOOR = 0.1  # µs: latencies below are drawn at the floor of the log scale


def _config(frame: pd.DataFrame, d: str, q: str, s: str) -> pd.DataFrame:
    return frame[(frame["dataset"] == d) & (frame["query"] == q) & (frame["selection"] == s)]


def draw(csv_path: Path, out: Path) -> list[Path]:
    frame = pd.read_csv(csv_path)
    out.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(2, 4, figsize=(15, 7), sharey=True)
    for ax, (d, q, s) in zip(axes.flat, CONFIGS, strict=True):
        g = _config(frame, d, q, s)
        g = g[(g["cache"] == "cost") | (g["strategy"] == "BL1")]
        for i, name in enumerate(ORDER):
            r = g[g["strategy"] == name]
            if r.empty:
                continue
            r = r.iloc[0]
            p = {k: max(FLOOR, float(r[k])) for k in ("p5", "p25", "p50", "p75", "p95")}
            ax.plot([i, i], [p["p5"], p["p95"]], color=COLOR[name], lw=1)
            ax.bar(i, p["p75"] - p["p25"], bottom=p["p25"], color=COLOR[name], width=0.6,
                   alpha=0.6)
            ax.plot(i, p["p50"], "o", color="black", ms=4)
        ax.set_yscale("log")
        ax.set_xticks(range(len(ORDER)), ORDER, rotation=45, fontsize=8)
        ax.set_title(f"{q} over {d}, {s}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("match latency [µs]")
    fig.suptitle("Match latency per strategy (cost-based cache; bars p25-p75, whiskers "
                 "p5-p95, dot the median); dissertation Figures 5.8-5.11")
    fig.tight_layout()
    paths = [out / "ch5_latency.png"]
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(2, 4, figsize=(15, 6), sharey=True)
    for ax, (d, q, s) in zip(axes.flat, CONFIGS, strict=True):
        g = _config(frame, d, q, s)
        for j, cache in enumerate(("cost", "lru")):
            for i, name in enumerate(ORDER):
                r = g[(g["strategy"] == name) & ((g["cache"] == cache) |
                                                 (g["strategy"] == "BL1"))]
                if not r.empty:
                    ax.bar(i + (j - 0.5) * 0.38, float(r.iloc[0]["throughput"]), width=0.38,
                           color=COLOR[name], alpha=1.0 if cache == "cost" else 0.5,
                           label=cache if i == 0 else None)
        ax.set_yscale("log")
        ax.set_xticks(range(len(ORDER)), ORDER, rotation=45, fontsize=8)
        ax.set_title(f"{q} over {d}, {s}", fontsize=10)
    axes[0, 0].set_ylabel("throughput [events/s]")
    axes[1, 0].set_ylabel("throughput [events/s]")
    fig.suptitle("Throughput per strategy (solid: cost-based cache, light: LRU); "
                 "dissertation Figure 5.12")
    fig.tight_layout()
    paths.append(out / "ch5_throughput.png")
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/figures"))
    args = ap.parse_args(argv)
    for p in draw(args.csv, args.out):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
