"""Figure 6.14 (§6.3.4): the optimised monitoring OP (hybrid load shedding in the tiers, the
M&V profiles fetched with EIRES) against BL, the plain monitoring, from one run of the paper
scenario (OP and BL side by side: summary.json's ``op_vs_bl``) and, when it has been run,
the sweep ``scenarios/sweeps/op_vs_bl.yaml`` (each technique alone)::

    drsim run scenarios/paper_100k_op.yaml --out results/paper_100k_op
    drsim sweep scenarios/sweeps/op_vs_bl.yaml --out results/op_vs_bl      # optional
    python scripts/figure_6_14.py [--run results/paper_100k_op] [--results results]
                                  [--figures docs/figures]

Draws the three panels, (a) communication, (b) computation, (c) the prediction and the
energy reduced, beside the dissertation's statements (``fig6_14.png``), and prints the
table of docs/optimised_monitoring.md with the issue's targets.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from drsim.results.summary_model import OpVsBl, Summary, read_summary
from drsim.sweeps import JOURNAL, read_journal
from drsim.units import clock, clock_minutes

#: Figure 6.14 and §6.3.4: OP costs about 70 % of BL's communication and computation; BL
#: predicts at 19:11, OP at 19:15; adaptive reductions 82.61 (BL) and 80.30 MWh (OP)
DISSERTATION = {"communication": 0.70, "computation": 0.70,
                "bl_prediction": clock_minutes("19:11"), "op_prediction": clock_minutes("19:15"),
                "bl_reduction": 82.61, "op_reduction": 80.30}
#: the issue's targets: (what, bound, how)
TARGETS = {"communication": (0.75, "≤"), "computation": (0.75, "≤"),
           "prediction_minutes_after_bl": (5, "≤"), "adaptive_share_of_bl": (0.95, "≥")}
#: the sweep's points by (shedding on, remote on)
LABELS = {(True, True): "OP", (True, False): "shedding only", (False, True): "EIRES only",
          (False, False): "BL"}


def section(summary: Summary) -> OpVsBl:
    """The run's ``op_vs_bl`` (SystemExit when the run has none)."""
    if summary.op_vs_bl is None:
        raise SystemExit("the run has no op_vs_bl section: run scenarios/paper_100k_op.yaml")
    return summary.op_vs_bl


def comparison(summary: Summary) -> list[tuple[str, str, str, str]]:
    """(quantity, drsim, dissertation, target) rows of OP against BL."""
    s = section(summary)
    assert summary.prediction is not None and summary.reduction_mwh is not None
    op_t = summary.prediction.utility_noncompliance_time
    d = DISSERTATION
    rows = [("communication, OP / BL", _share(s.communication), "about 0.7",
             _held(s.communication, "communication")),
            ("computation, OP / BL", _share(s.computation), "about 0.7",
             _held(s.computation, "computation")),
            ("prediction, OP against BL",
             f"{_clock(op_t)} against {_clock(s.bl_prediction)} "
             f"({_minutes(s.prediction_minutes_after_bl)})",
             f"{clock(d['op_prediction'])} against {clock(d['bl_prediction'])} (4 min later)",
             _held(s.prediction_minutes_after_bl, "prediction_minutes_after_bl")),
            ("adaptive reduction, OP / BL",
             f"{summary.reduction_mwh['adaptive']:.2f} against "
             f"{s.bl.reduction_mwh['adaptive']:.2f} MWh ({_share(s.adaptive_share_of_bl)})",
             f"{d['op_reduction']} against {d['bl_reduction']} MWh "
             f"({d['op_reduction'] / d['bl_reduction']:.3f})",
             _held(s.adaptive_share_of_bl, "adaptive_share_of_bl"))]
    for tier, device in s.tiers.items():
        shown = "not shed" if not device.shed else \
            f"{_share(device.latency_average_minutes)} / {_share(device.bound_minutes)} min"
        held = "" if not device.shed else ("yes" if device.latency_average_minutes is not None
                                           and device.bound_minutes is not None
                                           and device.latency_average_minutes
                                           <= device.bound_minutes else "no")
        rows.append((f"{tier} tier latency avg / bound", shown, "bound 0.5 of the average",
                     f"≤ bound: {held}" if held else ""))
    return rows


def _held(value: float | None, key: str) -> str:
    bound, how = TARGETS[key]
    ok = value is not None and (value <= bound if how == "≤" else value >= bound)
    return f"{how} {bound}: {'yes' if ok else 'no'}"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _clock(minute: int | None) -> str:
    return "none" if minute is None else clock(minute)


def _minutes(value: int | None) -> str:
    return "n/a" if value is None else f"{value:+d} min"


def sweep_table(folder: Path) -> list[str]:
    """The table of the sweep's four points (each technique alone), or none."""
    if not (folder / JOURNAL).is_file():
        return []
    runs = {}
    for record in read_journal(folder / JOURNAL).values():
        v = record["values"]
        key = (v["monitoring.shedding"] is not None, v["monitoring.remote"] is not None)
        runs[LABELS[key]] = Summary.model_validate(record["summary"])
    lines = ["| configuration | communication | computation | prediction | adaptive MWh |",
             "|---|---:|---:|---|---:|"]
    for label in ("BL", "shedding only", "EIRES only", "OP"):
        s = runs.get(label)
        if s is None or s.cost is None or s.prediction is None or s.reduction_mwh is None:
            continue
        lines.append(f"| {label} | {s.cost.communication.total:,} | "
                     f"{s.cost.computation.total:,} | "
                     f"{_clock(s.prediction.utility_noncompliance_time)} | "
                     f"{s.reduction_mwh['adaptive']:.2f} |")
    return lines


def _bars(ax: Any, labels: list[str], shares: list[float | None], reference: float,
          title: str) -> None:
    values = [0.0 if v is None else v for v in shares]
    bars = ax.bar(range(len(labels)), values, 0.6, label="drsim")
    ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.axhline(1.0, color="k", lw=0.6)
    ax.axhline(reference, color="0.4", lw=1, ls="--", label="dissertation, total (about)")
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_ylim(0, 1.2)
    ax.set_ylabel("OP / BL")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left")


def plot(summary: Summary, path: Path) -> None:
    """Draw the three panels of Figure 6.14 for ``summary`` (its OP and BL)."""
    s = section(summary)
    assert summary.cost is not None and summary.prediction is not None
    assert summary.reduction_mwh is not None
    op_cost, bl_cost = summary.cost.model_dump(), s.bl.cost
    fig = Figure(figsize=(13, 3.6))
    FigureCanvasAgg(fig)
    ax_comm, ax_comp, ax_time, ax_red = fig.subplots(1, 4, width_ratios=[1.4, 1, 0.8, 0.8])
    for ax, kind, title in ((ax_comm, "communication", "(a) communication"),
                            (ax_comp, "computation", "(b) computation")):
        keys = [k for k in op_cost[kind] if bl_cost[kind].get(k)]
        _bars(ax, [k.replace("_", "\n") for k in keys],
              [op_cost[kind][k] / bl_cost[kind][k] for k in keys], DISSERTATION[kind], title)
    d = DISSERTATION
    labels = ["drsim", "dissertation"]
    bl_t = [s.bl_prediction, d["bl_prediction"]]
    op_t = [summary.prediction.utility_noncompliance_time, d["op_prediction"]]
    ax_time.scatter(range(2), bl_t, marker="s", label="BL")
    ax_time.scatter(range(2), op_t, marker="o", label="OP")
    ax_time.set_xticks(range(2), labels, fontsize=7)
    ax_time.set_xlim(-0.5, 1.5)
    ax_time.yaxis.set_major_formatter(lambda v, _: clock(int(v)))
    ax_time.set_title("(c) non-compliance predicted", fontsize=9)
    ax_time.legend(fontsize=7)
    shares = [s.adaptive_share_of_bl or 0.0, d["op_reduction"] / d["bl_reduction"]]
    ax_red.bar([-0.2, 0.8], [1.0, 1.0], 0.4, label="BL")
    bars = ax_red.bar([0.2, 1.2], shares, 0.4, label="OP")
    ax_red.bar_label(bars, fmt="%.3f", fontsize=7)
    ax_red.set_ylim(0.9, 1.03)
    ax_red.set_xticks([0, 1], labels, fontsize=7)
    ax_red.set_ylabel("adaptive reduction / BL's")
    ax_red.set_title("(c) energy reduced, adaptive DR", fontsize=9)
    ax_red.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"Figure 6.14: OP against BL, {summary.scenario.households:,} households "
                 "(drsim: one run, OP and BL side by side)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=Path("results/paper_100k_op"))
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--figures", type=Path, default=Path("docs/figures"))
    args = parser.parse_args()
    summary = read_summary(args.run)
    lines = ["| quantity | drsim | dissertation | target |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {t} |" for a, b, c, t in comparison(summary)]
    print("\n".join(lines))
    table = sweep_table(args.results / "op_vs_bl")
    print("\n".join(["", "each technique alone (scenarios/sweeps/op_vs_bl.yaml):", *table]
                    if table else ["", "(the sweep op_vs_bl was not found: skipped)"]))
    args.figures.mkdir(parents=True, exist_ok=True)
    plot(summary, args.figures / "fig6_14.png")
    print(json.dumps({"figure": str(args.figures / "fig6_14.png")}))


if __name__ == "__main__":
    main()
