"""Figures of the sensitivity analysis (dissertation §5.6.3) from the rows of
``experiments/ch5_sensitivity.py`` (or its CSV, ``--draw``):

* ``ch5_sensitivity_5_13.png`` (Figure 5.13a-c): the match latency against the noise in
  the utility estimates, the cache size and the remote latency, per strategy: the median
  as a line, p25-p75 as a band;
* ``ch5_sensitivity_5_14.png`` (Figure 5.14a-b): Hybrid's p5, p25, p50, p75 and p95
  against ω_fetch and ω_cache;
* ``ch5_sensitivity_5_15.png`` (Figure 5.15a-b): PFetch's and LzEval's percentiles against
  the categories fixed by hand, the learned choice as a dashed line.

Latencies below 0.1 µs are drawn at that floor of the log scale.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from experiments.ch5_figures import COLOR, FLOOR  # noqa: E402

__all__ = ["draw"]

PERCENTILES = ("p5", "p25", "p50", "p75", "p95")
TITLES = {"5.13a": "(a) noise in the utility estimates [share]",
          "5.13b": "(b) cache size [elements]", "5.13c": "(c) remote latency [µs]",
          "5.14a": "(a) ω_fetch (ω_cache 0.5)", "5.14b": "(b) ω_cache (ω_fetch 0.7)",
          "5.15a": "(a) PFetch: categories prefetched ahead",
          "5.15b": "(b) LzEval: succeeding categories postponed over"}


def _rows(rows: list[dict], figure: str, strategy: str) -> list[dict]:
    return [r for r in rows if r["figure"] == figure and r["strategy"] == strategy]


def _p(r: dict, p: str) -> float:
    return max(FLOOR, float(r[p]))


def _by_strategy(ax, rows: list[dict], figure: str) -> None:
    strategies = list(dict.fromkeys(r["strategy"] for r in rows if r["figure"] == figure))
    for s in strategies:
        g = _rows(rows, figure, s)
        x = range(len(g))
        ax.fill_between(x, [_p(r, "p25") for r in g], [_p(r, "p75") for r in g],
                        color=COLOR[s], alpha=0.15)
        ax.plot(x, [_p(r, "p50") for r in g], "o-", color=COLOR[s], label=s)
        ax.set_xticks(list(x), [str(r["value"]) for r in g], fontsize=8)


def _percentiles(ax, rows: list[dict], figure: str, strategy: str) -> None:
    g = [r for r in _rows(rows, figure, strategy) if r["value"] != "learned"]
    learned = [r for r in _rows(rows, figure, strategy) if r["value"] == "learned"]
    x = range(len(g))
    for i, p in enumerate(PERCENTILES):
        line = ax.plot(x, [_p(r, p) for r in g], "o-", label=p,
                       color=plt.cm.viridis(i / (len(PERCENTILES) - 1)))
        for r in learned:
            ax.axhline(_p(r, p), ls="--", lw=0.8, color=line[0].get_color())
    ax.set_xticks(list(x), [str(r["value"]) for r in g], fontsize=8)


def _figure(rows: list[dict], figures: list[str], suptitle: str, path: Path) -> Path | None:
    present = [f for f in figures if any(r["figure"] == f for r in rows)]
    if not present:
        return None
    fig, axes = plt.subplots(1, len(present), figsize=(5 * len(present), 4), squeeze=False)
    for ax, f in zip(axes[0], present, strict=True):
        if f.startswith("5.13"):
            _by_strategy(ax, rows, f)
        else:
            strategy = next(r["strategy"] for r in rows if r["figure"] == f)
            _percentiles(ax, rows, f, strategy)
        ax.set_yscale("log")
        ax.set_title(TITLES[f], fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("match latency [µs]")
    fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw(rows: list[dict], folder: Path) -> list[Path]:
    """Draw the figures of ``rows`` into ``folder``; the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    made = [
        _figure(rows, ["5.13a", "5.13b", "5.13c"], "Q5, greedy, cost-based cache: median "
                "(line) and p25-p75 (band); dissertation Figure 5.13",
                folder / "ch5_sensitivity_5_13.png"),
        _figure(rows, ["5.14a", "5.14b"], "Hybrid's percentiles against ω of Eq. 5.3; "
                "dissertation Figure 5.14", folder / "ch5_sensitivity_5_14.png"),
        _figure(rows, ["5.15a", "5.15b"], "Categories fixed by hand (dashed: learned "
                "online); dissertation Figure 5.15", folder / "ch5_sensitivity_5_15.png"),
    ]
    return [p for p in made if p is not None]
