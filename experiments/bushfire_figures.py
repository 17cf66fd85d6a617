"""The figures of the case studies of the dissertation's §5.6.4 from the rows of
``experiments/bushfire.py`` (Figure 5.16a, ``ch5_bushfire.png``) or
``experiments/cluster_regions.py`` (Figure 5.16b, ``ch5_cluster.png``), or their CSVs
(``--draw``): the match latency [ms] of each strategy as a bar from p25 to p75 with
whiskers to p5 and p95 and a dot at the median, log scale (latencies below 0.1 µs drawn at
that floor)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from experiments.ch5_figures import COLOR, ORDER  # noqa: E402

__all__ = ["draw"]

FLOOR = 1e-4  # ms
TITLE = ("Listing 5.2, generated bushfire data, greedy, cost-based cache\n"
         "(dissertation Figure 5.16a)")


def draw(rows: list[dict], folder: Path, name: str = "ch5_bushfire.png",
         title: str = TITLE) -> list[Path]:
    """Draw the figure of ``rows`` into ``folder`` as ``name`` (Figure 5.16a unless
    ``name`` and ``title`` say otherwise); the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    by = {r["strategy"]: r for r in rows}
    fig, ax = plt.subplots(figsize=(6, 4))
    names = [s for s in ORDER if s in by]
    for i, strategy in enumerate(names):
        p = {k: max(FLOOR, float(by[strategy][k])) for k in ("p5", "p25", "p50", "p75", "p95")}
        ax.plot([i, i], [p["p5"], p["p95"]], color=COLOR[strategy], lw=1)
        ax.bar(i, p["p75"] - p["p25"], bottom=p["p25"], color=COLOR[strategy], width=0.6,
               alpha=0.6)
        ax.plot(i, p["p50"], "o", color="black", ms=4)
    ax.set_xticks(range(len(names)), names)
    ax.set_yscale("log")
    ax.set_ylabel("match latency [ms]")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path = folder / name
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
