#!/usr/bin/env python
"""Wall time of the adaptive DR run end to end (``drsim run``), per stage.

Runs ``drsim run SCENARIO`` in a fresh process for each scenario (so Spark's start-up is
included, as a user sees it), then reads the stage times from the run's summary.json.
Goals on a 2-core machine: the quickstart in ≤ 2 minutes, the paper scenario (100,000
households, all passes, all tiers) in ≤ 3 minutes. A wall time is a single measurement
on a shared machine; ``--repeats`` gives the median.

    python scripts/bench_run.py [--scenarios scenarios/quickstart.yaml scenarios/paper_100k.yaml]
                                [--repeats 1] [--master local[*]]
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

GOALS = {"quickstart": 120.0, "paper_100k": 180.0}


def run_once(scenario: str, master: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "drsim", "run", scenario, "--out", str(out),
                        "--master", master], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        summary = json.loads((out / "summary.json").read_text())
    return wall, summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", nargs="+",
                    default=["scenarios/quickstart.yaml", "scenarios/paper_100k.yaml"])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--master", default="local[*]")
    args = ap.parse_args(argv)
    for scenario in args.scenarios:
        walls, summary = [], {}
        for _ in range(args.repeats):
            wall, summary = run_once(scenario, args.master)
            walls.append(wall)
        wall = statistics.median(walls)
        name = summary["scenario"]["name"]
        print(f"== {name}: {summary['scenario']['households']:,} households, master "
              f"{args.master}, median of {len(walls)} run(s): {wall:.1f} s end to end")
        for stage, seconds in summary["timings"].items():
            print(f"  {stage:36s} {seconds:8.1f} s")
        print(f"  {'start-up and writing (outside total)':36s} "
              f"{wall - summary['timings']['total_seconds']:8.1f} s")
        goal = GOALS.get(name)
        if goal is not None:
            print(f"  goal ≤ {goal:.0f} s: {'met' if wall <= goal else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
