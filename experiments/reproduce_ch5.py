"""Reproduce the remote-data experiments of the dissertation's Ch. 5 (§5.6.2) with
cep_core's reference engine on the modelled device clock (cep_core.remote).

Every configuration of (dataset DS3/DS4) × (query Q5/Q6 of Listing 5.1) × (selection:
greedy = skip-till-any-match, non-greedy = skip-till-next-match) × (cache: LRU,
cost-based) runs the strategies PFetch, LzEval, Hybrid and the baselines BL1 (no cache),
BL2 and BL3 over the same seeded stream (``experiments/ch5_data.py``), and reports the
percentiles p5/p25/p50/p75/p95 of the match latency (Eq. 2.4: detection − arrival of
the last event, plus the time earlier steps waited for remote data) and the
throughput (events per second of device time: busy plus waiting); beside them the
matches, fetches, bytes, time waited, partial matches created and the run's wall-clock
seconds.

Set-up (the text leaves these open; each is written to the results): remote latency
~ U(10, 100) µs (§5.6.2), cache capacity 10 % of the key range; events evenly spaced at
``event_rate`` (DS3 and DS4: 10,000 events/s); the per-unit cost of each
(query, selection) makes the run with a local table (no remote latency) busy for 5 %
of the stream's time span (``unit_cost``, µs per cost unit: an engine much faster than
its remote data, as §5.1 has it). The latency ratios scale with both.

These are the ``literal`` set-up's choices (:mod:`experiments.ch5_setups`, the
default); ``--setup paper`` runs the source's set-up as far as it is stated plus what the
authors' released implementation does where the text is silent (blocking per partial
match, BL1's one-element cache, latency from the start of processing to the match's
accepting step, one unit cost making Hybrid's Q5/DS3 non-greedy median 10 µs, 10,000
keys, a cache of 2,000, windows of 4,000-5,000 events, Q5's remote key bound to ``a``,
with the listing's Q5 beside it in the full form, under non-greedy selection the
first event of the type that reads remote data deciding, an event's partial matches
taken earlier states first, a match's latency its last event's only, non-greedy Q5 in
the released scripts' pattern, and fetches as long as the released code's sleeps last);
``--ablation`` measures each
of those changes alone and left out (:mod:`experiments.ch5_gains`).

Run from the repository root::

    python scripts/reproduce_ch5.py [--setup literal|paper] [--quick] [--ablation]
        [--ablation-query Q6|Q5] [--out results/ch5] [--figures docs/figures]

``--quick`` (under 5 minutes on 2 cores) writes ``results/ch5/latency.csv``; the full
run writes ``latency_full.csv`` (longer streams). Both print which of §5.6.2's
statements hold; ``--figures`` draws them from the CSV just written. With ``--setup
paper`` they write ``latency_paper.csv`` (``latency_paper_full.csv``) with the device's
utilisation, and print per configuration the median latency of each strategy, Hybrid's
gains over each baseline at p50 and p95 and the utilisation, ending with the line
``paper setup: Hybrid below every baseline at p50 in N of 16; gain over the best
baseline at p50: max Gx, median Mx``. ``--ablation`` writes ``ablation.csv``
(``--ablation-query Q5``: ``ablation_Q5.csv``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import Executor
from functools import partial
from pathlib import Path

import cep_core
from cep_core.remote import RemoteConfig, RemoteSource
from cep_core.shedding import unit_cost_for, work_units
from experiments import ch5_data, ch5_gains
from experiments.ch5_setups import CONFIG_KEYS, SETUPS, Setup, record
from experiments.results_csv import map_logged, report, spawn_pool, write_rows

COLUMNS = ("dataset", "query", "selection", "cache", "strategy", "p5", "p25", "p50", "p75",
           "p95", "throughput", "unit_cost", "event_rate", "matches", "requests", "bytes",
           "waited", "pm_created", "seconds")
#: the paper set-up's rows: the literal columns and the device's utilisation
PAPER_COLUMNS = (*COLUMNS, "utilisation")
POLICY = {"greedy": "skip-till-any-match", "non-greedy": "skip-till-next-match"}
STRATEGIES = ("BL1", "BL2", "BL3", "PFetch", "LzEval", "Hybrid")
UTILISATION = 0.05
#: the calibration's secant steps after its two probes, and how close to its target
#: Hybrid's median must come to stop early
SECANT_STEPS = 4
CALIBRATION_TOLERANCE = 0.05


def _pair(query: str, selection: str) -> tuple[str, str]:
    """The (query, selection) whose data a query runs on (Q5L: Q5's)."""
    return ("Q5" if query == "Q5L" else query), selection


def _compile(setup: Setup, query: str, selection: str):
    window = setup.windows[_pair(query, selection)] / setup.rate
    table = ch5_data.remote_table(setup.values) if setup.key_args == 1 else record
    source = RemoteSource(table, latency=setup.latency, seed=7)
    return cep_core.compile(setup.queries(selection)[query].format(window=window),
                            remote={"REMOTE": source}), source


def _stream(setup: Setup, dataset: str, query: str, selection: str, n: int) -> list[dict]:
    return ch5_data.stream(dataset, n, setup.rate, seed={"DS3": 3, "DS4": 4}[dataset],
                           keys=setup.values, ids=setup.ids[_pair(query, selection)])


def pin_unit_cost(setup: Setup, query: str, selection: str, n: int) -> float:
    """The unit cost that keeps a run with a local table busy ``UTILISATION`` of the
    time (DS3)."""
    cq, _ = _compile(setup, query, selection)
    events = _stream(setup, "DS3", query, selection, n)
    session = cq.start(POLICY[selection], engine="reference")
    session.feed(events)
    span = events[-1]["time"] - events[0]["time"]
    return unit_cost_for(work_units(session.counters), span, UTILISATION)


def run_one(job: tuple) -> dict:
    """One run: ``(setup, dataset, query, selection, cache, strategy, events, unit
    cost)``; its row."""
    setup, dataset, query, selection, cache, strategy, n, unit_cost = job
    t0 = time.perf_counter()
    cq, source = _compile(setup, query, selection)
    events = _stream(setup, dataset, query, selection, n)
    cfg = RemoteConfig(strategy, unit_cost=unit_cost, cache=cache,
                       capacity=setup.capacity, **setup.options)
    session = cq.start(POLICY[selection], output="matches", remote=cfg)
    session.feed(events)
    session.flush()
    rep = session.remote_report()
    device_time = rep["busy"] + rep["fetch"]["waited"]
    return {"dataset": dataset, "query": query, "selection": selection,
            "cache": rep["cache"], "strategy": strategy,
            **{p: rep[p] for p in ("p5", "p25", "p50", "p75", "p95")},
            "throughput": n / (device_time * 1e-6) if device_time else 0.0,
            "unit_cost": unit_cost, "event_rate": setup.rate * 1e6,
            "matches": rep["matches"], "requests": rep["fetch"]["requests"],
            "bytes": rep["fetch"]["bytes"], "waited": rep["fetch"]["waited"],
            "pm_created": rep["counters"]["pm_created"],
            "seconds": time.perf_counter() - t0, "utilisation": rep["utilisation"]}


def configurations(setup: Setup, quick: bool) -> list[tuple[str, str, str, str]]:
    """Every (dataset, query, selection, cache) of §5.6.2 (and, in the full form, Q5L's
    if the set-up has it)."""
    queries = [q for q in ("Q5", "Q5L", "Q6") if q in setup.queries()
               and not (quick and q == "Q5L")]
    return [(d, q, s, c) for q in queries for s in ("non-greedy", "greedy")
            for d in ("DS3", "DS4") for c in ("cost", "lru")]


def jobs(setup: Setup, configs: list[tuple], sizes: dict, costs: dict) -> list[tuple]:
    """The runs of ``configs``: every strategy; BL1, which has no cache policy, once per
    (dataset, query, selection), with the first cache."""
    out, bl1 = [], set()
    for dataset, query, selection, cache in configs:
        for strategy in STRATEGIES:
            if strategy == "BL1":
                if (dataset, query, selection) in bl1:
                    continue
                bl1.add((dataset, query, selection))
            out.append((setup, dataset, query, selection, cache, strategy,
                        sizes[_pair(query, selection)], costs[_pair(query, selection)]))
    return out


def calibrate(setup: Setup, n: int, pool: Executor) -> float:
    """The one unit cost [µs per cost unit] that makes Hybrid's median latency of Q5
    over DS3 (non-greedy, cost-based cache) ``setup.cost[1]`` µs: two runs over ``n``
    events, the median taken as linear in the unit cost between them, then up to
    :data:`SECANT_STEPS` secant steps from the last two runs until the median is within
    :data:`CALIBRATION_TOLERANCE` of the target (the median is not linear in the unit
    cost), or until a step does not move it the right way; the unit cost of the step
    closest to the target (the two probes aside)."""
    target, probes = setup.cost[1], (0.02, 0.08)

    def job(u: float) -> tuple:
        return setup, "DS3", "Q5", "non-greedy", "cost", "Hybrid", n, u

    runs = [(u, r["p50"]) for u, r in zip(probes, pool.map(run_one, map(job, probes)),
                                           strict=True)]

    def secant() -> float | None:
        (u0, p0), (u1, p1) = runs[-2:]
        if u1 == u0 or not (p1 - p0) / (u1 - u0) > 0:
            return None
        return max(1e-6, u0 + (target - p0) * (u1 - u0) / (p1 - p0))

    u = secant()
    if u is None or not runs[0][1] > 0:
        raise RuntimeError(f"{setup.name}: Hybrid's median does not grow with the unit "
                           f"cost ({runs[0][1]:.3g} and {runs[1][1]:.3g} µs): too few "
                           "matches to calibrate")
    for _ in range(SECANT_STEPS):
        runs.append((u, run_one(job(u))["p50"]))
        if abs(runs[-1][1] - target) <= CALIBRATION_TOLERANCE * target:
            break
        u = secant()
        if u is None:  # the median did not move, or moved against the unit cost
            break
    return min(runs[2:], key=lambda r: abs(r[1] - target))[0]


def run_setup(setup: Setup, quick: bool, pool: Executor, configs: list[tuple] | None = None,
              events: int | None = None, log: bool = True) -> list[dict]:
    """The rows of ``configs`` (default: all, :func:`configurations`) under ``setup``,
    the quick or the full form."""
    t0 = time.perf_counter()
    configs = configurations(setup, quick) if configs is None else configs
    pairs = sorted({_pair(q, s) for _, q, s, _ in configs})
    sizes = {k: events or setup.events[k][0 if quick else 1] for k in CONFIG_KEYS}
    if setup.cost[0] == "utilisation":
        costs = dict(zip(pairs, pool.map(pin_unit_cost, [setup] * len(pairs),
                                         [q for q, _ in pairs], [s for _, s in pairs],
                                         [sizes[k] for k in pairs]), strict=True))
    else:
        n = setup.events[("Q5", "non-greedy")][0 if quick else 1]  # not --events
        costs = dict.fromkeys(pairs, calibrate(setup, n, pool))
    todo = jobs(setup, configs, sizes, costs)
    if log:
        print(f"{setup.name}: {setup.rate * 1e6:,.0f} events/s; per (query, selection) "
              "events and unit cost: " + ", ".join(
                  f"{q} {s} {sizes[(q, s)]:,} events {c:.3g} µs" for (q, s), c in
                  costs.items()) + f"; {len(todo)} runs", flush=True)
    return map_logged(pool, run_one, todo, t0, log=log)


def check(rows: list[dict]) -> list[tuple[str, bool]]:
    """§5.6.2's statements at p50, per configuration (BL1 is compared in both cache
    configurations)."""
    out = []
    groups: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        for cache in (("cost", "lru") if r["strategy"] == "BL1" else (r["cache"],)):
            groups.setdefault((r["dataset"], r["query"], r["selection"], cache),
                              {})[r["strategy"]] = r
    for key, g in sorted(groups.items()):
        p = {s: g[s]["p50"] for s in g}
        name = "/".join(key)
        out.append((f"{name}: Hybrid ≤ PFetch and ≤ LzEval at p50 (Hybrid {p['Hybrid']:.1f}, "
                    f"PFetch {p['PFetch']:.1f}, LzEval {p['LzEval']:.1f} µs)",
                    p["Hybrid"] <= p["PFetch"] and p["Hybrid"] <= p["LzEval"]))
        base = min(p["BL1"], p["BL2"], p["BL3"])
        for s in ("PFetch", "LzEval", "Hybrid"):
            out.append((f"{name}: {s} below BL1, BL2 and BL3 at p50 ({p[s]:.1f} against "
                        f"{p['BL1']:.1f}, {p['BL2']:.1f}, {p['BL3']:.1f} µs)", p[s] < base))
        bl3_best = p["BL3"] < min(p["BL1"], p["BL2"])
        expect = key[1] == "Q5"
        out.append((f"{name}: BL3 {'beats' if expect else 'does not beat'} BL1 and BL2 "
                    f"({p['BL3']:.1f} against {p['BL1']:.1f}, {p['BL2']:.1f} µs)",
                    bl3_best == expect))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--setup", choices=tuple(SETUPS), default="literal",
                    help="the text read literally (default) or the paper's set-up")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--ablation", action="store_true",
                    help="each change of the paper set-up alone and left out (quick form)")
    ap.add_argument("--ablation-query", choices=("Q6", "Q5"), default="Q6",
                    help="the query of the ablation's configuration (DS3, non-greedy, "
                    "cost-based cache; Q5 writes ablation_Q5.csv)")
    ap.add_argument("--out", default="results/ch5")
    ap.add_argument("--figures", default=None, help="folder for the figures (optional)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--events", type=int, default=None, help="events per stream")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out = Path(args.out)
    with spawn_pool(args.workers) as pool:
        if args.ablation:
            q = args.ablation_query
            path = out / ("ablation.csv" if q == "Q6" else f"ablation_{q}.csv")
            ch5_gains.ablation(partial(run_setup, quick=True, pool=pool, log=False,
                                       events=args.events), path,
                               [("DS3", q, "non-greedy", "cost")])
            print(f"wrote {path} in {time.perf_counter() - t0:.0f} s")
            return 0
        rows = run_setup(SETUPS[args.setup], args.quick, pool, events=args.events)
    if args.setup == "paper":
        path = out / ("latency_paper.csv" if args.quick else "latency_paper_full.csv")
        write_rows(rows, path, PAPER_COLUMNS)
        print(f"wrote {path} ({len(rows)} runs) in {time.perf_counter() - t0:.0f} s")
        ch5_gains.print_paper(rows)
        return 0
    path = out / ("latency.csv" if args.quick else "latency_full.csv")
    write_rows([{k: r[k] for k in COLUMNS} for r in rows], path, COLUMNS)
    report(check(rows), args.figures, "experiments.ch5_figures", path)
    print(f"wrote {path} ({len(rows)} runs) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
