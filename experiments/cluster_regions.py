"""Reproduce the cluster case study of the dissertation's §5.6.4 (Listing 5.3, Figure
5.16b) on generated task events (``experiments/cluster_regions_data.py``: Google-cluster
-like life cycles on 12,500 machines, the region of each machine as remote data) with
cep_core's remote-data engine.

As in the source: Listing 5.3, the regions fetched with a latency U(1, 10) ms, every
strategy (BL1, BL2, BL3, PFetch, LzEval, Hybrid), 12,500 machines. Set-up the text
leaves open, as for Figure 5.16a (``experiments/bushfire.py``): greedy selection
(skip-till-any-match), the cost-based cache holding 10 % of the machines' regions, the
device of the synthetic experiments (the unit cost ``experiments/reproduce_ch5.py`` pins
for greedy Q5, µs per cost unit); the stream's rate and the machines' regions are the
data module's. Both look-ups read the machine of the event being matched (``d``, then
``f``): their keys are known only when it arrives, so only the utility model can
prefetch, and a postponed look-up can wait for the task's next event (``e``, ``g``).

Run from the repository root::

    python scripts/cluster_regions.py [--quick] [--figures docs/figures]

``--quick`` (one trace of 300,000 events) writes ``results/ch5/cluster.csv``; the full
run (four traces of 1,000,000 events, different seeds) ``cluster_full.csv``: latency
percentiles [ms] per strategy, matches, fetches, time waited [ms]. Both print which of
§5.6.4's statements on Figure 5.16b hold.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import cep_core
from cep_core.remote import LatencyModel, RemoteConfig, RemoteSource
from experiments import cluster_regions_data, remote_case
from experiments.ch5_setups import LITERAL
from experiments.reproduce_ch5 import POLICY, STRATEGIES, pin_unit_cost
from experiments.results_csv import draw_csv, reproduction_parser

__all__ = ["COLUMNS", "SIZES", "run_one", "check", "draw", "main"]

COLUMNS = ("strategy", "p5", "p25", "p50", "p75", "p95", "matches", "events",
           "requests", "prefetches", "waited", "pm_created", "machines", "regions",
           "rate", "traces", "unit_cost", "seconds")
MS = 1_000.0  # milliseconds per second, the stream's time unit
LATENCY = LatencyModel("uniform", low=1 / MS, high=10 / MS)  # U(1, 10) ms [s]
SIZES = {"quick": (300_000, 1), "full": (1_000_000, 4)}  # events a trace, traces
CACHED = 0.1  # the share of the machines' regions the cache holds
#: §5.6.4 on Figure 5.16b: Hybrid's gains over BL1 and BL2 at p50 and p95
SOURCE_GAINS = {"p50": (73, 47), "p95": (13, 7)}
TITLE = ("Listing 5.3, generated cluster task events, 12,500 machines, greedy,\n"
         "cost-based cache, fetch U(1, 10) ms (dissertation Figure 5.16b)")


def _trace(n: int, seed: int, machines: int, regions: int, rate: float) -> tuple:
    """One trace's compiled query (its remote source the machines' regions) and events."""
    source = RemoteSource(cluster_regions_data.remote_table(machines, regions),
                          latency=LATENCY, seed=7 + seed)
    cq = cep_core.compile(cluster_regions_data.LISTING_5_3, time_unit="s",
                          remote={"REMOTE": source})
    return cq, cluster_regions_data.stream(n, machines, regions, rate, seed=seed)


def run_one(job: tuple) -> dict:
    """Run one (strategy, events a trace, traces, machines, regions, rate [events/s], unit
    cost [µs]); the CSV row, with the latencies of all traces pooled, in ms."""
    strategy, n, traces, machines, regions, rate, unit_cost = job
    t0 = time.perf_counter()
    config = RemoteConfig(strategy, unit_cost=unit_cost / 1e6, cache="cost",
                          capacity=max(1, int(CACHED * machines)))
    runs = (_trace(n, s, machines, regions, rate) for s in range(traces))
    row = remote_case.run_streams(runs, config, POLICY["greedy"], MS)
    return {"strategy": strategy, **row, "machines": machines, "regions": regions,
            "rate": rate, "traces": traces, "unit_cost": unit_cost,
            "seconds": time.perf_counter() - t0}


def check(rows: list[dict]) -> list[tuple[str, bool]]:
    """§5.6.4's statements on Figure 5.16b, at p50 and p95."""
    p = {r["strategy"]: r for r in rows}
    out = []
    for q in ("p50", "p95"):
        others = {s: float(r[q]) for s, r in p.items() if s != "Hybrid"}
        ours = float(p["Hybrid"][q])
        out.append((f"Hybrid the lowest at {q} ({ours:.3g} ms; "
                    + ", ".join(f"{s} {v:.3g}" for s, v in others.items()) + ")",
                    all(ours <= v for v in others.values())))
    for q, (bl1, bl2) in SOURCE_GAINS.items():
        g1, g2 = remote_case.gain(p, "BL1", q), remote_case.gain(p, "BL2", q)
        out.append((f"Hybrid's {q} {bl1}× below BL1's and {bl2}× below BL2's "
                    f"({g1:.1f}× and {g2:.1f}×)", g1 >= bl1 and g2 >= bl2))
    g1, g2 = remote_case.gain(p, "BL1", "p50"), remote_case.gain(p, "BL2", "p50")
    out.append((f"BL2 between BL1 and Hybrid at p50: the gain over BL1 the larger "
                f"({g1:.1f}× against {g2:.1f}×; the source 73× against 47×)",
                g1 > g2 > 1))
    return out


def draw(rows: list[dict], folder: Path) -> list[Path]:
    """Draw Figure 5.16b of ``rows`` into ``folder``; the paths written."""
    from experiments.bushfire_figures import draw as boxes

    return boxes(rows, folder, name="ch5_cluster.png", title=TITLE)


def main(argv: list[str] | None = None) -> int:
    ap = reproduction_parser(__doc__.split("\n\n")[0], Path("results/ch5"),
                             "one trace of 300,000 events instead of four of 1,000,000")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--events", type=int, default=None, help="events a trace")
    ap.add_argument("--machines", type=int, default=cluster_regions_data.MACHINES)
    ap.add_argument("--regions", type=int, default=cluster_regions_data.REGIONS)
    ap.add_argument("--rate", type=float, default=cluster_regions_data.RATE,
                    help="events/s")
    args = ap.parse_args(argv)
    if args.draw:
        return draw_csv(args.draw, args.figures, draw)
    n, traces = SIZES["quick" if args.quick else "full"]
    n = args.events or n
    unit_cost = pin_unit_cost(LITERAL, "Q5", "greedy", 5_000)
    todo = [(s, n, traces, args.machines, args.regions, args.rate, unit_cost)
            for s in STRATEGIES]
    print(f"Listing 5.3 on generated task events: {traces} trace(s) of {n:,} events, "
          f"{args.machines:,} machines in {args.regions} regions; remote latency "
          f"U(1, 10) ms; unit cost {unit_cost:.3g} µs; {len(todo)} runs", flush=True)
    path = Path(args.out) / ("cluster.csv" if args.quick else "cluster_full.csv")
    remote_case.run_case(run_one, todo, args.workers, path, COLUMNS, check, args.figures,
                         "experiments.cluster_regions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
