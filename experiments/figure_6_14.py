"""Figure 6.14 (§6.3.4): the optimised monitoring OP (hybrid load shedding at 50 % and
EIRES Hybrid fetches) against the baseline BL (no shedding, blocking fetches BL1), from the
sweeps ``scenarios/sweeps/op_vs_bl.yaml`` (tests every 5 minutes) and, when it has been
run, ``op_vs_bl_every_minute.yaml`` (every reading a test, as Listing 6.1 prints)::

    drsim sweep scenarios/sweeps/op_vs_bl.yaml --out results/op_vs_bl
    drsim sweep scenarios/sweeps/op_vs_bl_every_minute.yaml --out results/op_vs_bl_every_minute
    python scripts/figure_6_14.py [--results results] [--figures docs/figures]

Writes ``fig6_14.png`` and prints the table of docs/optimised_monitoring.md (each point's costs,
fetches, prediction and reductions; OP over BL beside the dissertation's) and the issue's targets.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from drsim.results.summary_model import Summary
from drsim.sweeps import JOURNAL, read_journal
from drsim.units import clock, clock_minutes

#: Figure 6.14 and §6.3.4: OP costs about 70 % of BL's; BL predicts at 19:11, OP at 19:15
#: (minutes since midnight); adaptive reductions 82.61 (BL) and 80.30 MWh (OP)
DISSERTATION = {"cost_share": 0.70, "bl_prediction": clock_minutes("19:11"),
                "op_prediction": clock_minutes("19:15"), "bl_reduction": 82.61,
                "op_reduction": 80.30}
SWEEPS = (("op_vs_bl", "tests every 5 min"), ("op_vs_bl_every_minute", "every reading a test"))
LABELS = {(True, "Hybrid"): "OP", (True, "BL1"): "shedding only",
          (False, "Hybrid"): "EIRES only", (False, "BL1"): "BL"}


def configurations(folder: Path) -> dict[str, Summary]:
    """The summary of each configuration of a finished sweep, by its label."""
    out = {}
    for record in read_journal(folder / JOURNAL).values():
        values = record["values"]
        key = (values["monitoring.shedding"] is not None, values["monitoring.remote.strategy"])
        out[LABELS[key]] = Summary.model_validate(record["summary"])
    return out


def figures(s: Summary) -> dict[str, Any]:
    """The figures of one run that the table and the plot show (the prediction in minutes
    since midnight, None without one)."""
    assert s.cost is not None and s.prediction is not None and s.reduction_mwh is not None
    remote = s.features["remote"]
    assert isinstance(remote, dict) and isinstance(remote["meter_tier"], dict)
    meter = remote["meter_tier"]
    return {"communication": s.cost.communication.total,
            "computation": s.cost.computation.total,
            "fetches": s.cost.communication.remote_lambda_fetches,
            "bytes": meter["bytes"], "waited": meter["waited_seconds"],
            "delay": meter["data_delay_avg_seconds"],
            "prediction": s.prediction.utility_noncompliance_time,
            "adaptive": s.reduction_mwh["adaptive"],
            "traditional": s.reduction_mwh["traditional"]}


def table(name: str, runs: dict[str, Summary]) -> list[str]:
    lines = [f"{name}:", "",
             "| configuration | communication | computation | λ fetches (counted) | "
             "bytes fetched | gateways waited [s] | avg delay [s] | prediction | "
             "adaptive MWh |", "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for label in ("BL", "shedding only", "EIRES only", "OP"):
        if label in runs:
            f = figures(runs[label])
            lines.append(f"| {label} | {f['communication']:,} | {f['computation']:,} | "
                         f"{f['fetches']:,} | {f['bytes']:,} | {f['waited']:,.0f} | "
                         f"{f['delay']:.2f} | {_clock(f['prediction'])} | "
                         f"{f['adaptive']:.2f} |")
    return lines


def _clock(minute: int | None) -> str | None:
    """"HH:MM" of a prediction, None without one."""
    return None if minute is None else clock(minute)


def targets(runs: dict[str, Summary]) -> list[str]:
    op, bl = figures(runs["OP"]), figures(runs["BL"])
    late = op["prediction"] - bl["prediction"] \
        if op["prediction"] is not None and bl["prediction"] is not None else None
    checks = [
        ("communication OP/BL ≤ 0.75", op["communication"] / bl["communication"], 0.75, "≤"),
        ("computation OP/BL ≤ 0.75", op["computation"] / bl["computation"], 0.75, "≤"),
        ("bytes fetched OP/BL ≤ 1", op["bytes"] / bl["bytes"], 1.0, "≤"),
        ("prediction OP − BL ≤ 5 min", late, 5, "≤"),
        ("adaptive reduction OP/BL ≥ 0.95", op["adaptive"] / bl["adaptive"], 0.95, "≥"),
    ]
    out = []
    for text, value, bound, how in checks:
        held = value is not None and (value <= bound if how == "≤" else value >= bound)
        shown = "n/a" if value is None else f"{value:.3f}"
        out.append(f"- {text}: {shown} ({'holds' if held else 'does not hold'})")
    return out


def plot(found: dict[str, dict[str, Summary]], path: Path) -> None:
    fig = Figure(figsize=(11, 3.6))
    FigureCanvasAgg(fig)
    ax_cost, ax_time, ax_red = fig.subplots(1, 3)
    names = [n for n, _ in SWEEPS if n in found]
    width = 0.8 / (len(names) + 1)
    kinds = ("communication", "computation", "bytes")
    for i, name in enumerate(names):
        op, bl = figures(found[name]["OP"]), figures(found[name]["BL"])
        shares = [op[k] / bl[k] for k in kinds]
        bars = ax_cost.bar([k + i * width for k in range(3)], shares, width,
                           label=f"drsim, {dict(SWEEPS)[name]}")
        ax_cost.bar_label(bars, fmt="%.2f", fontsize=7)
    bars = ax_cost.bar([k + len(names) * width for k in range(2)],
                       [DISSERTATION["cost_share"]] * 2, width, color="0.6",
                       label="dissertation (about)")
    ax_cost.bar_label(bars, fmt="%.2f", fontsize=7)
    ax_cost.axhline(1.0, color="k", lw=0.6)
    ax_cost.set_xticks([k + width * len(names) / 2 for k in range(3)], kinds)
    ax_cost.set_ylabel("OP / BL")
    ax_cost.set_title("(a) cost of OP relative to BL", fontsize=9)
    ax_cost.legend(fontsize=7)
    rows = [(dict(SWEEPS)[n], figures(found[n]["BL"]), figures(found[n]["OP"])) for n in names]
    labels = [f"drsim,\n{r[0]}" for r in rows] + ["dissertation"]
    bl_t = [r[1]["prediction"] for r in rows] + [DISSERTATION["bl_prediction"]]
    op_t = [r[2]["prediction"] for r in rows] + [DISSERTATION["op_prediction"]]
    for k, (b, o) in enumerate(zip(bl_t, op_t, strict=True)):
        ax_time.plot([k, k], [b, o], color="0.7", lw=1)
    ax_time.scatter(range(len(labels)), bl_t, marker="s", label="BL")
    ax_time.scatter(range(len(labels)), op_t, marker="o", label="OP")
    ax_time.set_xticks(range(len(labels)), labels, fontsize=7)
    ax_time.yaxis.set_major_formatter(lambda v, _: clock(int(v)))
    ax_time.set_title("(b) non-compliance predicted", fontsize=9)
    ax_time.legend(fontsize=7)
    shares_bl = [1.0] * (len(rows) + 1)
    shares_op = [r[2]["adaptive"] / r[1]["adaptive"] for r in rows] + \
        [DISSERTATION["op_reduction"] / DISSERTATION["bl_reduction"]]
    x = range(len(labels))
    ax_red.bar([k - 0.2 for k in x], shares_bl, 0.4, label="BL")
    bars = ax_red.bar([k + 0.2 for k in x], shares_op, 0.4, label="OP")
    ax_red.bar_label(bars, fmt="%.3f", fontsize=7)
    ax_red.set_ylim(0.9, 1.03)
    ax_red.set_xticks(list(x), labels, fontsize=7)
    ax_red.set_ylabel("adaptive reduction / BL's")
    ax_red.set_title("(c) energy reduction of adaptive DR", fontsize=9)
    ax_red.legend(fontsize=7, loc="lower right")
    fig.suptitle("Figure 6.14: OP (hybrid shedding + EIRES Hybrid) against BL (no shedding, "
                 "BL1), 100,000 households", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--figures", type=Path, default=Path("docs/figures"))
    args = parser.parse_args()
    found = {}
    for name, _ in SWEEPS:
        folder = args.results / name
        if not (folder / JOURNAL).is_file():
            print(f"({folder} not found: skipped)")
            continue
        found[name] = configurations(folder)
        print("\n".join(table(name, found[name]) + [""] + targets(found[name]) + [""]))
    if "op_vs_bl" not in found:
        raise SystemExit("run scenarios/sweeps/op_vs_bl.yaml first")
    args.figures.mkdir(parents=True, exist_ok=True)
    plot(found, args.figures / "fig6_14.png")
    print(json.dumps({"figure": str(args.figures / "fig6_14.png")}))


if __name__ == "__main__":
    main()
