"""Figures of the load-shedding reproduction (dissertation §4.4) from the CSV that
``scripts/reproduce_ch4.py`` writes::

    python scripts/ch4_figures.py results/ch4/recall.csv --out docs/figures

* ``ch4_bounds.png`` (Figures 4.5-4.6): recall, throughput and the shares of events and
  partial matches shed against the bound, for the average and the 95th-percentile
  latency;
* ``ch4_ratio.png`` (Figure 4.8): recall and throughput at fixed shedding ratios;
* ``ch4_sensitivity.png`` (Figures 4.9-4.17): selectivity variance, window size,
  pattern length, time slices, consumption, indexing, early curbing, negation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

ORDER = ["RI", "SI", "RS", "SS", "HyI", "HyS", "Hybrid", "NS"]
STYLE = {"RI": ("tab:gray", "v"), "SI": ("tab:brown", "^"), "RS": ("tab:olive", "s"),
         "SS": ("tab:purple", "D"), "HyI": ("tab:cyan", "x"), "HyS": ("tab:blue", "+"),
         "Hybrid": ("tab:red", "o"), "NS": ("black", ".")}


def _lines(ax, frame: pd.DataFrame, x: str, y: str, strategies=ORDER) -> None:
    for s in strategies:
        g = frame[frame["strategy"] == s].sort_values(x)
        if len(g):
            color, marker = STYLE[s]
            ax.plot(g[x], g[y], marker=marker, color=color, label=s,
                    lw=2.2 if s == "Hybrid" else 1.2)


def _bars(ax, frame: pd.DataFrame, y: str, by: str) -> None:
    frame = frame.assign(value=pd.to_numeric(frame["value"]))
    pivot = frame.pivot_table(index="value", columns="strategy", values=y).sort_index()
    pivot = pivot[[s for s in ORDER if s in pivot.columns]]
    pivot.plot.bar(ax=ax, color=[STYLE[s][0] for s in pivot.columns], width=0.8, rot=0,
                   legend=False)
    ax.set_xlabel(by)


def figure_bounds(d: pd.DataFrame) -> plt.Figure:
    fig, axes = plt.subplots(2, 4, figsize=(16, 7.5))
    for row, stat in enumerate(("avg", "p95")):
        g = d[d["experiment"] == f"q1_bound_{stat}"]
        name = "average" if stat == "avg" else "95th-percentile"
        for ax, (y, label) in zip(axes[row], (
                ("recall", "recall"), ("throughput", "throughput [events/s, device]"),
                ("events_shed", "share of events shed"),
                ("pms_shed", "share of partial matches shed")), strict=True):
            _lines(ax, g, "bound", y)
            ax.set_xlabel(f"bound [share of the unshed {name} latency]")
            ax.set_ylabel(label)
            ax.invert_xaxis()
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("Q1 over DS1 under a latency bound (cf. the dissertation's Figures 4.5 "
                 "and 4.6)")
    fig.tight_layout()
    return fig


def figure_ratio(d: pd.DataFrame) -> plt.Figure:
    g = d[d["experiment"] == "q1_ratio"].astype({"value": float})
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    for ax, kind, strategies in ((axes[0], "input", ["RI", "SI", "HyI"]),
                                 (axes[2], "state", ["RS", "SS", "HyS"])):
        _lines(ax, g, "value", "recall", strategies)
        ax.set_xlabel(f"share of {'events' if kind == 'input' else 'partial matches'} shed")
        ax.set_ylabel("recall")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    for ax, strategies in ((axes[1], ["RI", "SI", "HyI"]), (axes[3], ["RS", "SS", "HyS"])):
        _lines(ax, g, "value", "throughput", strategies)
        ax.set_xlabel("share shed")
        ax.set_ylabel("throughput [events/s, device]")
        ax.grid(alpha=0.3)
    fig.suptitle("Fixed shedding ratios, Q1 over DS1 (cf. Figure 4.8)")
    fig.tight_layout()
    return fig


def figure_sensitivity(d: pd.DataFrame) -> plt.Figure:
    fig, axes = plt.subplots(3, 4, figsize=(17, 11))
    panels = [
        ("q1_selectivity", "recall", "C.V ~ U(2, x): x (Fig. 4.9a)"),
        ("q1_selectivity", "throughput", "C.V ~ U(2, x): x (Fig. 4.9b)"),
        ("q1_window", "recall", "window [ms] (Fig. 4.10a)"),
        ("q1_window", "throughput", "window [ms] (Fig. 4.10b)"),
        ("q2_length", "recall", "Q2 pattern length (Fig. 4.11a)"),
        ("q2_length", "throughput", "Q2 pattern length (Fig. 4.11b)"),
    ]
    for ax, (exp, y, label) in zip(axes.flat, panels, strict=False):
        g = d[d["experiment"] == exp]
        _bars(ax, g, y, label)
        ax.set_ylabel(y)
    axes[0, 0].legend(fontsize=7, ncol=2)
    g = d[d["experiment"] == "q1_slices"]
    ax = axes[1, 2]
    base = g[g["parameter"].isna() | (g["parameter"] == "")]
    hy = g[g["parameter"] == "slices"].astype({"value": float}).sort_values("value")
    ax.plot(hy["value"], hy["recall"], "o-", color=STYLE["Hybrid"][0], label="Hybrid")
    for _, r in base.iterrows():
        ax.axhline(r["recall"], color=STYLE[r["strategy"]][0], ls=":", label=r["strategy"])
    ax.set_xlabel("time slices (Fig. 4.12)")
    ax.set_ylabel("recall")
    ax.legend(fontsize=7)
    g = d[d["experiment"] == "q3_consumption"]
    ax = axes[1, 3]
    for value, gg in g.groupby("value"):
        gg = gg.sort_values("bound")
        ax.plot(gg["bound"], gg["recall"], "o-", label=f"Ω = {value}")
    ax.set_xlabel("Q3 over DS2: bound [share of avg] (Fig. 4.14)")
    ax.set_ylabel("recall")
    ax.invert_xaxis()
    ax.legend(fontsize=8)
    g = d[d["experiment"] == "ablation_indexing"]
    ax = axes[2, 0]
    labels = [f"{r.strategy}\n{r.parameter.split()[0]}, "
              f"{'index' if str(r.value) == 'True' else 'no index'}" for r in g.itertuples()]
    ax.bar(range(len(g)), g["throughput"], color=[STYLE[s][0] for s in g["strategy"]])
    ax.set_xticks(range(len(g)), labels, fontsize=7, rotation=60)
    ax.set_ylabel("throughput (Fig. 4.15a)")
    ax = axes[2, 1]
    curb = d[d["experiment"] == "ablation_curbing"]
    for value, gg in curb.groupby("value"):
        gg = gg.sort_values("ratio")
        ax.plot(gg["ratio"], gg["throughput"], "o-", label=f"early curbing: {value}")
    ax.set_xlabel("HyS on Q4: share of partial matches shed (Fig. 4.15b)")
    ax.set_ylabel("throughput")
    ax.legend(fontsize=8)
    g = d[d["experiment"] == "q4_negation"].astype({"value": float})
    for ax, y in ((axes[2, 2], "recall"), (axes[2, 3], "precision")):
        _lines(ax, g, "value", y)
        ax.set_xlabel("share of B events (Q4, 10 % shed; Fig. 4.17)")
        ax.set_ylabel(y)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle("Sensitivity (cf. the dissertation's Figures 4.9-4.17); bars at a 50 % p95 "
                 "bound")
    fig.tight_layout()
    return fig


FIGURES = {"ch4_bounds.png": figure_bounds, "ch4_ratio.png": figure_ratio,
           "ch4_sensitivity.png": figure_sensitivity}


def draw(csv_path: Path, out: Path) -> list[Path]:
    d = pd.read_csv(csv_path)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, make in FIGURES.items():
        fig = make(d)
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(out / name)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/figures"))
    args = ap.parse_args(argv)
    for f in draw(args.csv, args.out):
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
