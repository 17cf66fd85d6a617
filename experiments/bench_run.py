"""Wall time of the adaptive DR run end to end (``drsim run``), per stage.

Runs ``drsim run SCENARIO`` in a fresh process for each scenario (so Spark's start-up is
included, as a user sees it), then reads the stage times from the run's summary.json.
Goals on a 2-core machine: the quickstart in ≤ 2 minutes (the README: under a minute),
the paper scenario (100,000 households, all passes, all tiers) in ≤ 3 minutes. A wall
time is a single measurement on a shared machine; ``--repeats`` gives the median.

``--threshold-cost`` measures what the same-day M&V and the threshold from the expected
response cost: each scenario runs as written and as a reference configuration with the
model's M&V (``baseline.method: model``) and a constant γ_user (0.34, the paper
scenario's before the threshold was estimated), alternately in the same script run, and
the ratio of the medians is printed (goal for the paper scenario: ≤ 1.5).

``--reading-loss`` measures what lost readings and the approximate meter query cost: each
scenario runs as written and with 5 % of its readings lost independently
(``meters.reading_loss.rate: 0.05``) and ``monitoring.max_missing: 1`` (placeholders for
the lost test readings, approximate matching, the replicas' losses), alternately in the
same script run, and the ratio of the medians is printed (goal for the paper scenario:
≤ 1.3, issue 24).

``--op`` measures what the optimised monitoring costs (issue 39): the paper scenario run
with OP and BL together (``scenarios/paper_100k_op.yaml``: load shedding in the three
tiers, remote profiles, the plain twin's loop) against the plain run
(``scenarios/paper_100k.yaml``), alternately in the same script run, each in a fresh
process, and the ratio of the medians is printed (goal ≤ 1.5).

``--scale`` measures the 1.6-million-household run against the simulation of the same
scenario (``scenarios/scale_1.6M.yaml``), alternately in the same script run, each in a fresh
process: targets ``drsim run`` ≤ 2 × ``drsim simulate`` (medians), the group and utility
tiers ≤ ¼ of the run, the Python driver's peak memory < 1 GB (the driver collects only
per-group and per-minute aggregates); the driver JVM's peak memory is reported beside it.

    python scripts/bench_run.py [--scenarios scenarios/quickstart.yaml scenarios/paper_100k.yaml]
                                [--repeats 1] [--master local[*]] [--threshold-cost]
                                [--reading-loss]
    python scripts/bench_run.py --scale [--repeats 3]
    python scripts/bench_run.py --op [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from drsim.scenario.library import LIBRARY, resolve

GOALS = {"quickstart": 60.0, "paper_100k": 180.0}
THRESHOLD_COST_GOAL = 1.5  # the paper run with the estimated threshold, against the reference
REFERENCE_GAMMA_USER = 0.34
READING_LOSS_GOAL = 1.3  # the paper run with 5 % loss and k = 1, against the loss-free run
LOSSY = "5 % of readings lost, max_missing 1"


OP_SCENARIOS = (LIBRARY / "paper_100k_op.yaml", LIBRARY / "paper_100k.yaml")
OP_COST_GOAL = 1.5  # OP and BL together / the plain run

SCALE_SCENARIO = LIBRARY / "scale_1.6M.yaml"
SCALE_RATIO_GOAL = 2.0  # drsim run / drsim simulate
TIERS_SHARE_GOAL = 0.25  # group and utility tiers / drsim run
DRIVER_RSS_GOAL = 1 << 30  # bytes


def run_once(scenario: Path, master: str, command: str = "run") -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "drsim", command, str(scenario), "--out",
                        str(out), "--master", master], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        summary = json.loads((out / "summary.json").read_text())
    return wall, summary


def reference_configuration(scenario: Path) -> Path:
    """The scenario with the model's M&V and a constant γ_user, written beside the original
    (so that its relative paths still resolve) under a temporary name."""
    data = yaml.safe_load(scenario.read_text(encoding="utf-8"))
    data.setdefault("baseline", {})["method"] = "model"
    data.setdefault("monitoring", {})["gamma_user"] = REFERENCE_GAMMA_USER
    with tempfile.NamedTemporaryFile("w", dir=scenario.parent, prefix=f".{scenario.stem}.",
                                     suffix=".yaml", delete=False, encoding="utf-8") as f:
        yaml.safe_dump(data, f, sort_keys=False, allow_unicode=True)
    return Path(f.name)


def lossy_configuration(scenario: Path) -> Path:
    """The scenario with 5 % of its readings lost independently and the approximate meter
    query with k = 1, written beside the original under a temporary name."""
    data = yaml.safe_load(scenario.read_text(encoding="utf-8"))
    data["meters"] = {"reading_loss": {"rate": 0.05}}
    data.setdefault("monitoring", {})["max_missing"] = 1
    with tempfile.NamedTemporaryFile("w", dir=scenario.parent, prefix=f".{scenario.stem}.",
                                     suffix=".yaml", delete=False, encoding="utf-8") as f:
        yaml.safe_dump(data, f, sort_keys=False, allow_unicode=True)
    return Path(f.name)


def print_stages(label: str, walls: list[float], summary: dict, master: str) -> None:
    wall = statistics.median(walls)
    print(f"== {label}: {summary['scenario']['households']:,} households, master {master}, "
          f"median of {len(walls)} run(s): {wall:.1f} s end to end")
    for stage, seconds in summary["timings"].items():
        if stage.endswith("_seconds") and isinstance(seconds, int | float):  # not chunk_seconds
            print(f"  {stage:36s} {seconds:8.1f} s")
    print(f"  {'start-up and writing (outside total)':36s} "
          f"{wall - summary['timings']['total_seconds']:8.1f} s")
    print(f"  prediction {summary['prediction']['utility_noncompliance_time']}, adaptive "
          f"{summary['reduction_mwh']['adaptive']:.2f} MWh")


def scale(repeats: int, master: str) -> None:
    """``drsim run`` against ``drsim simulate`` on the 1.6M scenario (module docstring)."""
    walls: dict[str, list[float]] = {"simulate": [], "run": []}
    tiers: list[float] = []
    driver: list[int] = []
    jvm: list[int] = []
    for _ in range(repeats):
        for command in walls:  # alternately: the same machine load
            wall, summary = run_once(SCALE_SCENARIO, master, command)
            walls[command].append(wall)
            resources = summary["resources"]
            driver.append(resources["driver_peak_rss_bytes"])
            jvm.append(resources["jvm_peak_rss_bytes"] or 0)
            if command == "run":
                tiers.append(summary["timings"]["tiers_seconds"] / wall)
                print_stages(f"run {len(tiers)}", [wall], summary, master)
    run, sim = statistics.median(walls["run"]), statistics.median(walls["simulate"])
    ratio, share = run / sim, statistics.median(tiers)
    print(f"== {SCALE_SCENARIO.name}, master {master}, medians of {repeats}: drsim simulate "
          f"{sim:.1f} s, drsim run {run:.1f} s (each end to end, in a fresh process)")
    print(f"  run / simulate: {ratio:.2f} (goal ≤ {SCALE_RATIO_GOAL}: "
          f"{'met' if ratio <= SCALE_RATIO_GOAL else 'NOT met'})")
    print(f"  group + utility tiers / run: {share:.2f} (goal ≤ {TIERS_SHARE_GOAL}: "
          f"{'met' if share <= TIERS_SHARE_GOAL else 'NOT met'})")
    print(f"  peak memory of the Python driver: {max(driver) / 2**30:.2f} GiB (goal < 1 GiB: "
          f"{'met' if max(driver) < DRIVER_RSS_GOAL else 'NOT met'}); of the driver JVM: "
          f"{max(jvm) / 2**30:.2f} GiB (the largest over all runs)")


def op_cost(repeats: int, master: str) -> None:
    """OP and BL together against the plain run, alternately (module doc)."""
    walls: dict[Path, list[float]] = {path: [] for path in OP_SCENARIOS}
    summaries: dict[Path, dict] = {}
    for _ in range(repeats):
        for path in OP_SCENARIOS:
            wall, summaries[path] = run_once(path, master)
            walls[path].append(wall)
    for path in OP_SCENARIOS:
        print_stages(path.stem, walls[path], summaries[path], master)
    op, plain = (statistics.median(walls[path]) for path in OP_SCENARIOS)
    verdict = "met" if op / plain <= OP_COST_GOAL else "NOT met"
    print(f"  OP and BL / plain: {op / plain:.2f} (medians of {repeats}; goal ≤ "
          f"{OP_COST_GOAL}: {verdict})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", nargs="+", type=Path,
                    default=[LIBRARY / "quickstart.yaml", LIBRARY / "paper_100k.yaml"])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--threshold-cost", action="store_true",
                    help="also run each scenario with the model's M&V and a constant γ_user, "
                         "alternately, and print the ratio of the medians")
    ap.add_argument("--reading-loss", action="store_true",
                    help="also run each scenario with 5 %% of its readings lost and "
                         "max_missing 1, alternately, and print the ratio of the medians")
    ap.add_argument("--scale", action="store_true",
                    help="drsim run against drsim simulate on scenarios/scale_1.6M.yaml")
    ap.add_argument("--op", action="store_true",
                    help="scenarios/paper_100k_op.yaml (OP and BL) against paper_100k.yaml")
    args = ap.parse_args(argv)
    if args.scale:
        scale(args.repeats, args.master)
        return 0
    if args.op:
        op_cost(args.repeats, args.master)
        return 0
    for scenario in map(resolve, args.scenarios):  # a file, or a packaged scenario's name
        configs = {"as written": scenario}
        if args.threshold_cost:
            configs["reference (model M&V, constant γ_user)"] = reference_configuration(
                scenario)
        if args.reading_loss:
            configs[LOSSY] = lossy_configuration(scenario)
        walls: dict[str, list[float]] = {label: [] for label in configs}
        summaries: dict[str, dict] = {}
        try:
            for _ in range(args.repeats):
                for label, path in configs.items():  # alternately: the same machine load
                    wall, summaries[label] = run_once(path, args.master)
                    walls[label].append(wall)
        finally:
            for path in configs.values():
                if path != scenario:
                    path.unlink()
        name = summaries["as written"]["scenario"]["name"]
        for label in configs:
            print_stages(f"{name}, {label}", walls[label], summaries[label], args.master)
        wall = statistics.median(walls["as written"])
        goal = GOALS.get(name)
        if goal is not None:
            print(f"  goal ≤ {goal:.0f} s: {'met' if wall <= goal else 'NOT met'}")
        if args.threshold_cost:
            ratio = wall / statistics.median(walls["reference (model M&V, constant γ_user)"])
            verdict = "met" if ratio <= THRESHOLD_COST_GOAL else "NOT met"
            print(f"  same-day M&V and estimated threshold / reference: {ratio:.2f} "
                  f"(goal ≤ {THRESHOLD_COST_GOAL}: {verdict})")
        if args.reading_loss:
            ratio = statistics.median(walls[LOSSY]) / wall
            verdict = "met" if ratio <= READING_LOSS_GOAL else "NOT met"
            lossy = summaries[LOSSY]["monitoring"]
            print(f"  {LOSSY} / as written: {ratio:.2f} (goal ≤ {READING_LOSS_GOAL}: "
                  f"{verdict}); readings lost "
                  f"{lossy['lost_readings']['share_of_readings_lost']:.3f}, meters silent "
                  f"{lossy['meters_silent']['total']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
