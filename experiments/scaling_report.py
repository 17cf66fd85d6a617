"""Figure 6.13 and its table from a finished scaling sweep (dissertation §6.3.3).

Reads the sweep folder's ``runs.jsonl`` (``scenarios/sweeps/scaling.yaml``: 100,000 to 1.6
million households in groups of 10,000), averages the seeds of each size, and

* draws Figure 6.13 (``--figure``): communication and computation per household against the
  participants, one line per tier and the total;
* prints a Markdown table: households, groups, the costs per household (total and by tier),
  the group-to-utility messages in total and the wall time per stage;
* prints the check wall(largest) ≤ 1.25 × (largest / smallest) × wall(smallest) (for the
  sweep: wall(1.6M) ≤ 1.25 × 16 × wall(100k), wall = ``timings.total_seconds``) and the
  cost per household at the largest size relative to the smallest, which the dissertation
  finds "nearly constant";
* with ``--extrapolate H``, the measured cost of each stage per household (or per group)
  at the largest size, in core-seconds, and the wall time they give for H households on
  ``--workers`` N workers of ``--cores`` C cores each (:func:`extrapolate`, whose docstring
  states the assumptions; docs/cluster.md shows the table)::

    drsim sweep scenarios/sweeps/scaling.yaml --out results/scaling
    python scripts/scaling_report.py results/scaling --figure docs/figures/figure_6_13.png \
        --extrapolate 16000000 --workers 1 2 4 8 16 32 64 --cores 2
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from drsim.results.summary_model import Summary
from drsim.sweeps import JOURNAL, SWEEP_RECORD, read_journal

#: summary.json's cost tiers (docs/summary.md, "cost") and their labels in Figure 6.13.
COMMUNICATION = {"meter_readings": "meter readings", "remote_lambda_fetches": "λ fetches",
                 "user_events": "user events", "group_events": "group events"}
COMPUTATION = {"meter": "meter", "group": "group", "utility": "utility"}
COSTS = {"communication": COMMUNICATION, "computation": COMPUTATION}
UNITS = {"communication": "messages", "computation": "events processed"}
#: The stages of summary.json's timings, seconds (docs/summary.md, "timings").
STAGES = {"passes_seconds": "passes", "tiers_seconds": "tiers",
          "adaptive_pass_seconds": "adaptive pass", "total_seconds": "total"}
#: The stages :func:`extrapolate` scales, and what each grows with.
PER_HOUSEHOLD = {"passes_seconds": "passes + meter tier", "adaptive_pass_seconds": "adaptive pass"}
PER_GROUP = {"group_tier_seconds": "group tier"}
WALL = "total_seconds"
WALL_MARGIN = 1.25  # wall time may grow 25 % faster than the households


def summaries_by_size(folder: Path) -> dict[int, list[Summary]]:
    """The recorded summaries per number of households, smallest first; runs of points that
    are no longer in the sweep (its sweep.json) are left out."""
    record_file = folder / SWEEP_RECORD
    points = None
    if record_file.exists():
        points = [p["values"] for p in json.loads(record_file.read_text("utf-8"))["points"]]
    found: dict[int, list[Summary]] = {}
    for record in read_journal(folder / JOURNAL).values():
        if points is None or record["values"] in points:
            summary = Summary.model_validate(record["summary"])
            found.setdefault(summary.scenario.households, []).append(summary)
    return dict(sorted(found.items()))


def mean(values: list[float | None]) -> float:
    """The mean of the values that exist (NaN if none does)."""
    present = [float(v) for v in values if v is not None]
    return float(np.mean(present)) if present else math.nan


def row(households: int, summaries: list[Summary]) -> dict[str, Any]:
    """One size: households, groups, and the seeds' mean of every cost (in total and per
    household, ``<kind>.<tier>`` and ``per_household.<kind>.<tier>``) and stage time (NaN
    for a stage no run had)."""
    costs = [s.cost for s in summaries if s.cost is not None]
    result: dict[str, Any] = {"households": households, "seeds": len(summaries),
                              "groups": len(summaries[0].scenario.groups)}
    for kind, tiers in COSTS.items():
        for tier in [*tiers, "total"]:
            result[f"{kind}.{tier}"] = mean([getattr(getattr(c, kind), tier) for c in costs])
            result[f"per_household.{kind}.{tier}"] = mean(
                [c.per_household[kind][tier] for c in costs])
    for stage in [*STAGES, *PER_GROUP, "utility_tier_seconds", "backend_start_seconds"]:
        result[stage] = mean([getattr(s.timings, stage) for s in summaries])
    result["cores"] = mean([s.backend.parallelism for s in summaries])
    result["peak_task_memory_bytes"] = mean(
        [s.resources.peak_task_memory_bytes for s in summaries])
    return result


def rows(folder: Path) -> list[dict[str, Any]]:
    """One :func:`row` per size of the sweep in ``folder``, smallest first."""
    return [row(n, found) for n, found in summaries_by_size(folder).items()]


def size_label(households: int) -> str:
    """100000 → "100k", 1600000 → "1.6M" (Figure 6.13's axis)."""
    for unit, scale in (("M", 1_000_000), ("k", 1_000)):
        if households >= scale:
            return f"{households / scale:g}{unit}"
    return str(households)


def draw_figure(table: list[dict[str, Any]], path: Path) -> None:
    """Figure 6.13: communication (left) and computation (right) per household against the
    participants (log2 axis), one line per tier and the total."""
    sizes = [r["households"] for r in table]
    figure = Figure(figsize=(11, 4.2))
    FigureCanvasAgg(figure)
    for ax, (kind, tiers) in zip(figure.subplots(1, 2), COSTS.items(), strict=True):
        for tier, label in [*tiers.items(), ("total", "total")]:
            total = tier == "total"
            ax.plot(sizes, [r[f"per_household.{kind}.{tier}"] for r in table], marker="o",
                    label=label, linewidth=2.5 if total else 1.5,
                    color="black" if total else None)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", nonpositive="mask")  # a tier with no events has no point
        ax.set_xticks(sizes, [size_label(n) for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("DR participants (households)")
        ax.set_ylabel(f"{kind} per household ({UNITS[kind]})")
        ax.set_title(f"{kind.capitalize()} cost per household")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    figure.suptitle("Monitoring cost per household as the system grows (Figure 6.13, §6.3.3)")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=150)


def number(value: float, digits: str = ".4g") -> str:
    return "–" if not math.isfinite(value) else format(value, digits)


def markdown_table(table: list[dict[str, Any]]) -> str:
    """The table of Figure 6.13: costs per household (total and by tier), the
    group-to-utility messages in total and the wall time per stage (s)."""
    columns: list[tuple[str, str, str]] = [("households", "households", ",d"),
                                           ("groups", "groups", "d")]
    for kind, tiers in COSTS.items():
        columns.append((f"{kind}/household", f"per_household.{kind}.total", ".4g"))
        columns += [(f"· {label}", f"per_household.{kind}.{tier}", ".4g")
                    for tier, label in tiers.items()]
    columns.append(("group→utility messages", "communication.group_events", ",.0f"))
    columns += [(f"{label} [s]", stage, ".2f") for stage, label in STAGES.items()]
    lines = ["| " + " | ".join(title for title, _, _ in columns) + " |",
             "|" + "|".join("---:" for _ in columns) + "|"]
    for r in table:
        lines.append("| " + " | ".join(number(r[key], digits) for _, key, digits in columns)
                     + " |")
    return "\n".join(lines)


def wall_check(table: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether the wall time of the largest size is at most 1.25 × (size ratio) × that of the
    smallest (the sweep: wall(1.6M) ≤ 1.25 × 16 × wall(100k)), and the sentence saying so."""
    small, large = table[0], table[-1]
    ratio = large["households"] / small["households"]
    bound = WALL_MARGIN * ratio * small[WALL]
    holds = large[WALL] <= bound
    text = (f"wall({size_label(large['households'])}) = {large[WALL]:.2f} s "
            f"{'≤' if holds else '>'} {WALL_MARGIN:g} × {ratio:g} × "
            f"wall({size_label(small['households'])}) = {WALL_MARGIN:g} × {ratio:g} × "
            f"{small[WALL]:.2f} s = {bound:.2f} s: {'holds' if holds else 'does not hold'}")
    return holds, text


def cost_ratios(table: list[dict[str, Any]]) -> list[str]:
    """The cost per household at the largest size relative to the smallest (§6.3.3: "nearly
    constant"), one sentence per kind."""
    small, large = table[0], table[-1]
    lines = []
    for kind in COSTS:
        key = f"per_household.{kind}.total"
        ratio = large[key] / small[key] if small[key] else math.nan
        lines.append(f"{kind} per household at {size_label(large['households'])}: "
                     f"{large[key]:.4g}, {number(ratio, '.3f')} × that at "
                     f"{size_label(small['households'])} ({small[key]:.4g})")
    return lines


def extrapolate(measured: dict[str, Any], households: int, workers: list[int], cores: int
                ) -> str:
    """The wall time of a run of ``households`` on each number of ``workers`` with
    ``cores`` cores each, from the stage times of the ``measured`` size, as a Markdown
    table after the measured costs.

    Assumptions: the passes and the adaptive pass cost the same core-seconds per household
    at any size (chunks of the same size, independent of each other; the sweep's sizes
    check it), spread evenly over every core; the group tier costs the same per group
    (groups of the same size), spread over every core; the utility tier runs one task per
    monitored pass and grows with the groups; the backend's start-up is constant and what
    the driver does besides the stages (collecting per-group aggregates, planning) grows
    with the groups; the network and the shuffles of a cluster cost what they cost on the
    measured one; each task's memory stays what it was at the measured size (it is bounded
    by the chunk size)."""
    n, groups, cores_then = measured["households"], measured["groups"], measured["cores"]
    scale_groups = households / n  # groups of the same size
    per_household = {k: measured[k] * cores_then / n for k in PER_HOUSEHOLD}
    per_group = {k: measured[k] * cores_then / groups for k in PER_GROUP}
    stages = sum(measured[k] for k in (*PER_HOUSEHOLD, *PER_GROUP, "utility_tier_seconds"))
    start = measured["backend_start_seconds"]
    driver = max(measured[WALL] - stages - start, 0.0)
    lines = [f"measured at {size_label(n)} households, {groups} groups, {cores_then:g} cores "
             f"(peak task memory {measured['peak_task_memory_bytes'] / 2**30:.2f} GiB):"]
    lines += [f"- {label}: {1e6 * per_household[k]:.1f} core-µs per household"
              for k, label in PER_HOUSEHOLD.items()]
    lines += [f"- {label}: {per_group[k]:.3f} core-s per group" for k, label in PER_GROUP.items()]
    lines += [f"- utility tier {measured['utility_tier_seconds']:.2f} s, backend start "
              f"{start:.1f} s, driver besides the stages {driver:.1f} s", ""]
    header = ["workers", "cores", *PER_HOUSEHOLD.values(), *PER_GROUP.values(),
              "utility tier", "start + driver", "wall [s]"]
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    for w in workers:
        total_cores = w * cores
        row_values = [per_household[k] * households / total_cores for k in PER_HOUSEHOLD]
        row_values += [per_group[k] * groups * scale_groups / total_cores for k in PER_GROUP]
        row_values += [measured["utility_tier_seconds"] * scale_groups,
                       start + driver * scale_groups]
        lines.append("| " + " | ".join([str(w), str(total_cores)]
                                       + [f"{v:,.1f}" for v in row_values]
                                       + [f"{sum(row_values):,.0f}"]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep_dir", type=Path, metavar="SWEEP_DIR",
                        help="a finished sweep folder (drsim sweep --out)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="where to write Figure 6.13 (PNG), e.g. "
                             "docs/figures/figure_6_13.png")
    parser.add_argument("--extrapolate", type=int, default=None, metavar="HOUSEHOLDS",
                        help="print the wall time these many households would take, from "
                             "the largest size's stage costs")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    parser.add_argument("--cores", type=int, default=2, help="cores per worker")
    args = parser.parse_args(argv)
    table = rows(args.sweep_dir)
    if not table:
        print(f"{args.sweep_dir}: no finished runs (no {JOURNAL} records)", file=sys.stderr)
        return 1
    if args.figure is not None:
        draw_figure(table, args.figure)
    print(markdown_table(table))
    print()
    if len(table) > 1:
        print(wall_check(table)[1])
        print("\n".join(cost_ratios(table)))
    else:
        print("one size only: no scaling check")
    if args.extrapolate is not None:
        print()
        print(extrapolate(table[-1], args.extrapolate, args.workers, args.cores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
