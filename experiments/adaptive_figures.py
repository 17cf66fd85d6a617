"""The figures of ``scripts/reproduce_adaptive.py`` (US 11,693,862 B2, "Experimental
Results", Figs. 6-8) from its rows (:mod:`experiments.reproduce_adaptive`).

* Fig. 6 per dataset: throughput against the distance d on the sequence set, a line per
  size, a panel per algorithm; d_avg and the meta-adaptive d as marks at the d they
  started from (d_avg, the mean over the sizes).
* Figs. 7-8 per dataset, pattern set and algorithm: throughput, speedup over the static
  plan, plan replacements and the share of time adapting, per method against the size.
"""

from __future__ import annotations

from pathlib import Path

ALGORITHMS = ("order", "tree")
PANELS = [("events_per_s", "events per second", True),
          ("speedup", "speedup over static", False),
          ("replacements", "plan replacements", False),
          ("share_adapting", "share of time in D and planning", False)]


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def fig6(rows: list[dict], folder: Path) -> list[Path]:
    """Fig. 6 per dataset of the d scan (module doc)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    written = []
    for name in dict.fromkeys(r["dataset"] for r in rows if r["figure"] == "6"):
        fig = Figure(figsize=(9, 3.6), layout="constrained")
        FigureCanvasAgg(fig)
        for j, kind in enumerate(ALGORITHMS):
            ax = fig.add_subplot(1, 2, j + 1)
            mine = [r for r in rows if r["figure"] == "6" and r["dataset"] == name
                    and r["algorithm"] == kind]
            for size in dict.fromkeys(int(r["size"]) for r in mine):
                at = [r for r in mine if int(r["size"]) == size]
                pts = [(_number(r["parameter"]), float(r["events_per_s"])) for r in at]
                line = ax.plot([p[0] for p in pts if p[0] is not None],
                               [p[1] for p in pts if p[0] is not None], marker="o",
                               label=f"size {size}")[0]
                for r in at:
                    if r["parameter"] in ("avg", "meta"):
                        ax.scatter([float(r["d_start"] or 0)], [float(r["events_per_s"])],
                                   marker="*" if r["parameter"] == "avg" else "^",
                                   color=line.get_color(), s=60, zorder=3)
            ax.set_xlabel("distance d (★ d_avg, ▲ meta-adaptive from d_avg)")
            ax.set_ylabel("events per second")
            ax.set_yscale("log")
            ax.set_xscale("symlog", linthresh=0.1)
            ax.set_xlim(left=0)
            ax.set_title(f"{name}, {kind}-based, sequences")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
        path = folder / f"adaptive_fig6_{name}.png"
        fig.savefig(path, dpi=110)
        written.append(path)
    return written


def fig78(rows: list[dict], folder: Path) -> list[Path]:
    """Figs. 7-8 per dataset, pattern set and algorithm (module doc)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    written = []
    combos = dict.fromkeys((r["dataset"], r["pattern_set"]) for r in rows
                           if r["figure"] == "7-8")
    for name, pset in combos:
        for kind in ALGORITHMS:
            mine = [r for r in rows if r["figure"] == "7-8" and r["dataset"] == name
                    and r["pattern_set"] == pset and r["algorithm"] == kind]
            fig = Figure(figsize=(11, 3.2), layout="constrained")
            FigureCanvasAgg(fig)
            for j, (col, label, log) in enumerate(PANELS):
                ax = fig.add_subplot(1, 4, j + 1)
                for method in dict.fromkeys(r["method"] for r in mine):
                    pts = [(int(r["size"]), float(r[col])) for r in mine
                           if r["method"] == method and r[col] != ""]
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                            label=method)
                ax.set_xlabel("pattern size")
                ax.set_ylabel(label)
                if log:
                    ax.set_yscale("log")
                ax.grid(True, alpha=0.3)
            ax.legend(fontsize="x-small")
            fig.suptitle(f"{name}, {pset}, {kind}-based plans (patent Figs. 7-8)")
            path = folder / f"adaptive_fig7_{name}_{pset}_{kind}.png"
            fig.savefig(path, dpi=110)
            written.append(path)
    return written


def figures(rows: list[dict], folder: Path) -> list[Path]:
    """Every figure of the rows into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    return fig6(rows, folder) + fig78(rows, folder)
