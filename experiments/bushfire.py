"""Reproduce the bushfire case study of the dissertation's §5.6.4 (Listing 5.2, Figure
5.16a) on generated data (``experiments/bushfire_data.py``: the source's GOES-16 and
ground-sensor dataset is not public) with cep_core's remote-data engine.

As in the source: Listing 5.2 under greedy selection (skip-till-any-match) with the
cost-based cache, the ground stations' readings fetched with a latency U(10, 100) ms,
every strategy (BL1, BL2, BL3, PFetch, LzEval, Hybrid). Set-up the text leaves open:
the engine runs on the device of the synthetic experiments (the unit cost
``experiments/reproduce_ch5.py`` pins for greedy Q5, µs per cost unit), a cache of 10 %
of the stations' readings, one day of ``areas`` areas. The listing's look-ups read
``c``, the run's last event: their keys are known only when it arrives (only the utility
model can prefetch them), and they decide whether a match is emitted (a predicate is
never postponed past a match, so LzEval has nothing to postpone over). Keyed by ``a``
instead (the same station under ``SAME[OVERLAP(boundary)]``) they would be evaluated at
the run's first event, a start transition, where every strategy blocks.

Run from the repository root::

    python scripts/bushfire.py [--quick] [--figures docs/figures]

``--quick`` (300 areas, one day) writes ``results/ch5/bushfire.csv``; the full run
(1,000 areas, three days of different seeds) ``bushfire_full.csv``: latency
percentiles [ms] per strategy, matches, fetches, time waited. Both print
which of §5.6.4's statements hold.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import cep_core
from cep_core.remote import LatencyModel, RemoteConfig, RemoteSource
from experiments import bushfire_data, remote_case
from experiments.ch5_setups import LITERAL
from experiments.reproduce_ch5 import POLICY, STRATEGIES, pin_unit_cost
from experiments.results_csv import draw_csv, reproduction_parser

COLUMNS = ("strategy", "p5", "p25", "p50", "p75", "p95", "matches", "events",
           "requests", "prefetches", "waited", "pm_created", "areas", "days", "unit_cost",
           "seconds")
MS = 60_000.0  # milliseconds per minute, the stream's time unit
LATENCY = LatencyModel("uniform", low=10 / MS, high=100 / MS)  # U(10, 100) ms [min]
SIZES = {"quick": (300, 1), "full": (1_000, 3)}  # areas, days


def _day(areas: int, day: int) -> tuple:
    """One day's compiled query (its remote source the day's readings) and events."""
    table = bushfire_data.remote_table(areas, seed=day)
    source = RemoteSource(table, latency=LATENCY, seed=7 + day)
    cq = cep_core.compile(bushfire_data.LISTING_5_2, time_unit="min",
                          params=bushfire_data.params(), remote={"REMOTE": source})
    return cq, bushfire_data.stream(areas, seed=day)


def run_one(job: tuple) -> dict:
    """Run one (strategy, areas, days, unit cost [µs]); the CSV row, with the latencies
    of all days pooled, in ms."""
    strategy, areas, days, unit_cost = job
    t0 = time.perf_counter()
    config = RemoteConfig(strategy, unit_cost=unit_cost / 60e6, cache="cost",
                          capacity=max(1, 2 * areas // 10))  # 10 % of the readings
    row = remote_case.run_streams((_day(areas, day) for day in range(days)), config,
                                      POLICY["greedy"], MS)
    return {"strategy": strategy, **row, "areas": areas, "days": days,
            "unit_cost": unit_cost, "seconds": time.perf_counter() - t0}


def check(rows: list[dict]) -> list[tuple[str, bool]]:
    """§5.6.4's statements on the bushfire data, at p50 and p95."""
    p = {r["strategy"]: r for r in rows}

    def at(s: str, q: str = "p50") -> float:
        return float(p[s][q])

    def gain(base: str, q: str) -> float:
        return remote_case.gain(p, base, q)

    base = min(at(b) for b in ("BL1", "BL2", "BL3"))
    ours = {s: at(s) for s in ("PFetch", "LzEval", "Hybrid")}
    out = [("PFetch, LzEval and Hybrid below every baseline at p50 ("
            + ", ".join(f"{s} {v:.3g}" for s, v in ours.items())
            + f" against {base:.3g} ms)", all(v < base for v in ours.values())),
           (f"Hybrid the lowest at p50 ({at('Hybrid'):.3g} ms; "
            + ", ".join(f"{s} {at(s):.3g}" for s in p if s != "Hybrid") + ")",
            at("Hybrid") <= min(at(s) for s in p))]
    for q, bl1, bl2 in (("p50", 206, 20), ("p95", 18, 13)):
        out.append((f"Hybrid's {q} {bl1}× below BL1's and {bl2}× below BL2's "
                    f"({gain('BL1', q):.1f}× and {gain('BL2', q):.1f}×)",
                    gain("BL1", q) >= bl1 and gain("BL2", q) >= bl2))
    out.append((f"PFetch's median close to Hybrid's (within 10 %: {at('PFetch'):.3g} "
                f"against {at('Hybrid'):.3g} ms), its p95 above ({at('PFetch', 'p95'):.3g} "
                f"against {at('Hybrid', 'p95'):.3g})",
                at("PFetch") <= 1.1 * at("Hybrid")
                and at("PFetch", "p95") > at("Hybrid", "p95")))
    return out


def _figures(rows: list[dict], folder: Path) -> list[Path]:
    from experiments.bushfire_figures import draw

    return draw(rows, folder)


def main(argv: list[str] | None = None) -> int:
    ap = reproduction_parser(__doc__.split("\n\n")[0], Path("results/ch5"),
                             "300 areas over one day instead of 1,000 over three")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--areas", type=int, default=None, help="areas of the region")
    args = ap.parse_args(argv)
    if args.draw:
        return draw_csv(args.draw, args.figures, _figures)
    areas, days = SIZES["quick" if args.quick else "full"]
    areas = args.areas or areas
    unit_cost = pin_unit_cost(LITERAL, "Q5", "greedy", 5_000)
    todo = [(s, areas, days, unit_cost) for s in STRATEGIES]
    print(f"Listing 5.2 on generated data: {areas:,} areas, {days} day(s); remote latency "
          f"U(10, 100) ms; unit cost {unit_cost:.3g} µs; {len(todo)} runs", flush=True)
    path = Path(args.out) / ("bushfire.csv" if args.quick else "bushfire_full.csv")
    remote_case.run_case(run_one, todo, args.workers, path, COLUMNS, check, args.figures,
                         "experiments.bushfire_figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
