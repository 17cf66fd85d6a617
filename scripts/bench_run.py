#!/usr/bin/env python
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

    python scripts/bench_run.py [--scenarios scenarios/quickstart.yaml scenarios/paper_100k.yaml]
                                [--repeats 1] [--master local[*]] [--threshold-cost]
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

GOALS = {"quickstart": 60.0, "paper_100k": 180.0}
THRESHOLD_COST_GOAL = 1.5  # the paper run with the estimated threshold, against the reference
REFERENCE_GAMMA_USER = 0.34


def run_once(scenario: Path, master: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "drsim", "run", str(scenario), "--out", str(out),
                        "--master", master], check=True, stdout=subprocess.DEVNULL)
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


def print_stages(label: str, walls: list[float], summary: dict, master: str) -> None:
    wall = statistics.median(walls)
    print(f"== {label}: {summary['scenario']['households']:,} households, master {master}, "
          f"median of {len(walls)} run(s): {wall:.1f} s end to end")
    for stage, seconds in summary["timings"].items():
        if stage.endswith("_seconds"):  # chunk_seconds holds the chunks' min, mean, max
            print(f"  {stage:36s} {seconds:8.1f} s")
    print(f"  {'start-up and writing (outside total)':36s} "
          f"{wall - summary['timings']['total_seconds']:8.1f} s")
    print(f"  prediction {summary['prediction']['utility_noncompliance_time']}, adaptive "
          f"{summary['reduction_mwh']['adaptive']:.2f} MWh")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", nargs="+", type=Path,
                    default=[Path("scenarios/quickstart.yaml"), Path("scenarios/paper_100k.yaml")])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--threshold-cost", action="store_true",
                    help="also run each scenario with the model's M&V and a constant γ_user, "
                         "alternately, and print the ratio of the medians")
    args = ap.parse_args(argv)
    for scenario in args.scenarios:
        configs = {"as written": scenario}
        if args.threshold_cost:
            configs["reference (model M&V, constant γ_user)"] = reference_configuration(
                scenario)
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
