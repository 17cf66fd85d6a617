"""The streamed run's speed (issue "the monitoring as a stream"; docs/streaming.md).

Runs ``drsim run --streaming`` of a scenario on Spark (local mode) at a speed (times real
time) and prints, from the run's summary, whether the stream kept up: each test interval's
latency from its release to the utility's decision of its ticks (percentiles), the
intervals whose alerts came after the next interval was due, the real-time factor reached,
and from Spark's progress reports each micro-batch's rows and duration.

    python scripts/bench_stream.py scenarios/quickstart.yaml --speed 120
    python scripts/bench_stream.py scenarios/paper_100k.yaml --speed 60
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from drsim import api
from spark.backend import SparkBackend


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario")
    parser.add_argument("--speed", type=float, required=True)
    parser.add_argument("--batches", action="store_true",
                        help="also print each micro-batch's times (Spark's progress)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="drsim-bench-stream-"))
    backend = SparkBackend()
    started = backend.stream
    streams = []

    def keep(*a, **k):
        streams.append(started(*a, **k))
        return streams[-1]

    backend.stream = keep
    try:
        result = api.run(args.scenario, folder / "run", backend=backend, streaming=True,
                         speed=args.speed)
        report = result.summary["streaming"]
        print(json.dumps(report, indent=1))
        batches = [p for p in streams[0].progress() if p["numInputRows"]]
        seconds = np.array([p["durationMs"]["triggerExecution"] / 1000 for p in batches])
        rows = np.array([p["numInputRows"] for p in batches])
        print(f"{len(batches)} micro-batches with rows: {int(np.median(rows)):,} rows and "
              f"{np.median(seconds):.2f} s (median), longest {seconds.max():.2f} s; a test "
              f"interval is {report['interval_seconds']:.2f} s at {args.speed:g}x")
        if args.batches:
            for p in batches:
                ops = [o.get("allUpdatesTimeMs") for o in p.get("stateOperators", [])]
                print(f"batch {p['batchId']}: {p['numInputRows']:,} rows, "
                      f"{p['durationMs']['triggerExecution']} ms (addBatch "
                      f"{p['durationMs'].get('addBatch')}, getBatch "
                      f"{p['durationMs'].get('getBatch')}); stages' updates {ops} ms")
        print(f"prediction {result.summary['prediction']['utility_noncompliance_time']}, "
              f"second event {result.summary['second_event']}")
    finally:
        backend.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
