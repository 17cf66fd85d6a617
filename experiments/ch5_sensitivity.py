"""Reproduce the sensitivity analysis of the dissertation's Ch. 5 (§5.6.3, Figures
5.13-5.15) with cep_core's remote-data engine on the modelled device clock.

As in the source, every sweep runs Q5 (Listing 5.1) with the cost-based cache under
greedy selection (skip-till-any-match); one parameter moves at a time, the others stay
at the set-up of ``experiments/reproduce_ch5.py`` (remote latency U(10, 100) µs, a cache
of 10 % of the key range, ω_fetch 0.7 and ω_cache 0.5, 10,000 events/s, the unit cost
that keeps a run with a local table busy 5 % of the time):

* Figure 5.13a, ``noise``: the share of the utility model's estimates replaced by wrong
  ones, 0-90 % (``experiments/ch5_tuned.py`` says how);
* Figure 5.13b, ``capacity``: the cache, 5 to 80 elements of the 100 keys;
* Figure 5.13c, ``latency``: the remote latency U(1, 10), U(10, 100), U(100, 1,000) and
  U(1,000, 10,000) µs;
* Figure 5.14a-b, ``omega_fetch`` and ``omega_cache``: ω of Eq. 5.3, Hybrid, on Q5 with
  its look-up keyed by ``a`` as the authors' released code has it (``d.v1=REMOTE[a.v1]``,
  the same matches): in the listing's form no partial match knows the element it will
  read, no element has an urgent utility (Eq. 5.1), U(d) = (1 − ω)·FÛ(d), and every
  decision that ranks elements by U is the same for every ω;
* Figure 5.15a, ``lookahead``: PFetch's lookahead category fixed by hand, 0-6 categories
  before the need, against Alg. 3's choice (``learned``), on Q5 with its remote
  predicate moved to the end (``a.v1=d.v1 AND h.v2=REMOTE[a.v2]``, the same matches:
  seven preceding categories);
* Figure 5.15b, ``lazy_states``: LzEval's ``succ(j)`` fixed to the 1-6 states after the
  remote predicate, against Alg. 4's choice (``learned``), on Q5 with its remote
  predicate moved to the start (``a.v1 = REMOTE[b.v1]``); a seventh would be the accepting
  state, where a predicate is never postponed.

Dataset: DS4 (Table 5.1, Zipf values; the text does not name one): over DS3, greedy Q5
completes 14 matches in 5,000 events, too few for percentiles. Every row holds the
match latency's p5-p95 [µs], matches, fetches, prefetches, time waited [µs], partial
matches created, the device's utilisation and the run's seconds.

Run from the repository root::

    python scripts/ch5_sensitivity.py [--quick] [--only 5.13a] [--figures docs/figures]

``--quick`` (5,000 events a run) writes ``results/ch5/sensitivity.csv``, the full run
(10,000) ``sensitivity_full.csv``; both print which of §5.6.3's statements hold.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import cep_core
from cep_core.remote import LatencyModel, RemoteConfig, RemoteSource
from experiments import ch5_data
from experiments.ch5_sensitivity_checks import check
from experiments.ch5_setups import LITERAL
from experiments.ch5_tuned import Tuning, tuned_session
from experiments.reproduce_ch5 import POLICY, pin_unit_cost
from experiments.results_csv import (
    draw_csv,
    map_logged,
    report,
    reproduction_parser,
    spawn_pool,
    write_rows,
)

COLUMNS = ("figure", "parameter", "value", "strategy", "p5", "p25", "p50", "p75", "p95",
           "matches", "requests", "prefetches", "hits", "misses", "waited", "pm_created",
           "utilisation", "unit_cost", "events", "seconds")
DATASET, SELECTION = "DS4", "greedy"
WINDOW = ch5_data.WINDOWS[("Q5", SELECTION)]  # events
EVENTS = (5_000, 10_000)  # per run: quick, full
OURS = ("PFetch", "LzEval", "Hybrid")
LEARNED = "learned"

#: Q5 (Listing 5.1) and its variants (module doc); each but ``Q5-start`` has the same
#: matches as Q5, the remote table answering ``x`` for key ``x``
QUERIES = {
    "Q5": ch5_data.QUERIES["Q5"],
    "Q5-a": ("PATTERN SEQ(A a, B b, C c, D d, B e, C f, A g, D h) "
             "WHERE SAME[ID] AND d.v1=REMOTE[a.v1] AND a.v2=h.v2 WITHIN {window}"),
    "Q5-end": ("PATTERN SEQ(A a, B b, C c, D d, B e, C f, A g, D h) "
               "WHERE SAME[ID] AND a.v1=d.v1 AND h.v2=REMOTE[a.v2] WITHIN {window}"),
    "Q5-start": ("PATTERN SEQ(A a, B b, C c, D d, B e, C f, A g, D h) "
                 "WHERE SAME[ID] AND a.v1=REMOTE[b.v1] AND a.v2=h.v2 WITHIN {window}"),
}

#: figure -> (parameter, values, strategies, query)
SWEEPS = {
    "5.13a": ("noise", (0.0, 0.1, 0.3, 0.5, 0.7, 0.9), OURS, "Q5"),
    "5.13b": ("capacity", (5, 10, 20, 40, 80), ("BL2", *OURS), "Q5"),
    "5.13c": ("latency", ((1, 10), (10, 100), (100, 1_000), (1_000, 10_000)),
              ("BL2", *OURS), "Q5"),
    "5.14a": ("omega_fetch", (0.1, 0.3, 0.5, 0.7, 0.9), ("Hybrid",), "Q5-a"),
    "5.14b": ("omega_cache", (0.1, 0.3, 0.5, 0.7, 0.9), ("Hybrid",), "Q5-a"),
    "5.15a": ("lookahead", (LEARNED, 0, 1, 2, 3, 4, 5, 6), ("PFetch",), "Q5-end"),
    "5.15b": ("lazy_states", (LEARNED, 1, 2, 3, 4, 5, 6), ("LzEval",), "Q5-start"),
}

#: the set-up every sweep starts from (module doc)
DEFAULTS = {"noise": 0.0, "capacity": ch5_data.KEYS // 10, "latency": (10, 100),
            "omega_fetch": 0.7, "omega_cache": 0.5, "lookahead": LEARNED,
            "lazy_states": LEARNED}


def jobs(figures: list[str], n: int, unit_cost: float) -> list[dict]:
    """One job per figure, value and strategy: the defaults with the figure's parameter
    set."""
    out = []
    for fig in figures:
        parameter, values, strategies, query = SWEEPS[fig]
        for value in values:
            for strategy in strategies:
                out.append({"figure": fig, "parameter": parameter, "value": value,
                            "strategy": strategy, "query": query, "events": n,
                            "unit_cost": unit_cost,
                            "settings": {**DEFAULTS, parameter: value}})
    return out


def _value_text(value) -> str:
    return f"{value[0]}-{value[1]}" if isinstance(value, tuple) else str(value)


def run_job(job: dict) -> dict:
    """Run one job (:func:`jobs`) and return its CSV row."""
    t0 = time.perf_counter()
    s = job["settings"]
    low, high = s["latency"]
    source = RemoteSource(ch5_data.remote_table(), seed=7,
                          latency=LatencyModel("uniform", low=float(low), high=float(high)))
    cq = cep_core.compile(QUERIES[job["query"]].format(window=WINDOW / LITERAL.rate),
                          remote={"REMOTE": source})
    config = RemoteConfig(job["strategy"], unit_cost=job["unit_cost"], cache="cost",
                          capacity=s["capacity"], omega_fetch=s["omega_fetch"],
                          omega_cache=s["omega_cache"])
    fixed = {k: (None if s[k] == LEARNED else int(s[k]))
             for k in ("lookahead", "lazy_states")}
    tuning = Tuning(noise=s["noise"], seed=11, **fixed,
                    domain=tuple(("REMOTE", (x,)) for x in ch5_data.remote_table()))
    session = tuned_session(cq, POLICY[SELECTION], config, tuning)
    events = ch5_data.stream(DATASET, job["events"], LITERAL.rate, seed=4)
    session.feed(events)
    session.flush()
    rep = session.remote_report()
    fetch = rep["fetch"]
    return {"figure": job["figure"], "parameter": job["parameter"],
            "value": _value_text(job["value"]), "strategy": job["strategy"],
            **{p: rep[p] for p in ("p5", "p25", "p50", "p75", "p95")},
            "matches": rep["matches"], "requests": fetch["requests"],
            "prefetches": fetch["prefetches"], "hits": fetch["hits"],
            "misses": fetch["misses"], "waited": fetch["waited"],
            "pm_created": rep["counters"]["pm_created"], "utilisation": rep["utilisation"],
            "unit_cost": job["unit_cost"], "events": job["events"],
            "seconds": time.perf_counter() - t0}


def _figures(rows: list[dict], folder: Path) -> list[Path]:
    from experiments.ch5_sensitivity_figures import draw

    return draw(rows, folder)


def main(argv: list[str] | None = None) -> int:
    ap = reproduction_parser(__doc__.split("\n\n")[0], Path("results/ch5"),
                             f"{EVENTS[0]:,} events a run instead of {EVENTS[1]:,}")
    ap.add_argument("--only", nargs="+", choices=sorted(SWEEPS), default=sorted(SWEEPS),
                    help="the figures to run (default: all)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--events", type=int, default=None, help="events per run")
    args = ap.parse_args(argv)
    if args.draw:
        return draw_csv(args.draw, args.figures, _figures)
    t0 = time.perf_counter()
    n = args.events or EVENTS[0 if args.quick else 1]
    unit_cost = pin_unit_cost(LITERAL, "Q5", SELECTION, n)
    todo = jobs(args.only, n, unit_cost)
    print(f"Q5 over {DATASET}, {SELECTION}, cost-based cache; {n:,} events a run, unit "
          f"cost {unit_cost:.3g} µs; {len(todo)} runs", flush=True)
    with spawn_pool(args.workers) as pool:
        rows = map_logged(pool, run_job, todo, t0)
    path = Path(args.out) / ("sensitivity.csv" if args.quick else "sensitivity_full.csv")
    write_rows(rows, path, COLUMNS)
    report(check(rows), args.figures, "experiments.ch5_sensitivity_figures", rows)
    print(f"wrote {path} ({len(rows)} runs) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
