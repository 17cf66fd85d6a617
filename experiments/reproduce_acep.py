"""The shapes of the ACEP paper's experiments (Li and Ge, "History is a mirror to the
future: best-effort approximate complex event matching with insufficient resources",
VLDB 2016, §6, Figs. 5-18) with cep_core's approximate matching (cep_core.approx), on a
letter stream with skewed frequencies (Q1-Q4) and a PHEV-like stream built from drsim's
own EV sessions (Q5-Q8): ``experiments/acep_data.py``. Nothing is downloaded.

* **Figs. 5-8** (``throughput.csv``): ACEPMATCH (the match-node engine,
  ``cep_core.approx.matchnodes``) without a budget, events per second of wall-clock time
  for k = 0 (the paper's SASE^U), 1 and 2: Q1-Q4 at a larger (Fig. 5) and a smaller
  (Fig. 6) window, Q5-Q8 (Fig. 7), and the PHEV templates grown or shrunk (Fig. 8).
  Medians of ``repeats`` timed runs, all in this one process and interleaved; each
  row also has its throughput over k = 0's of the same query, and the modelled
  device's events per second (work units × unit cost).
* **Figs. 9-10** (``fraction.csv``): Q1 over letters and Q5 over the PHEV stream with k =
  2, on a modelled device with 1 µs per unit of work (``cep_core.approx.rc_acep``), at a
  range of inter-arrival times Δ: RC-ACEP (its history ℋ built by unbudgeted ACEPMATCH on
  another stream until its match maps are full) against ACEPMATCH with the timeout of
  §6 and the dissertation's hybrid load shedding (Hybrid, ``cep_core.shedding``, on the
  same device: a cost model fitted on the history stream, the latency bound one
  inter-arrival time, the average statistic). The fraction found is over the matches of
  unbudgeted ACEPMATCH; counted three ways (docs/decisions.md, "RC-ACEP: budget,
  history and proxies"): match points (events that complete a match: the windows with
  a match, the count the targets use), matches (trajectories: distinct bindings) and
  bundles (Definition 3). For hybrid shedding, matches detected within one
  inter-arrival time of their last event (``in_time``) beside all it finds.
* **Figs. 11-14** (``memory.csv``, ``fraction.csv``): ℋ exact against its sketch sized
  by Theorem 4 with c = 800 cells (as §6): modelled bytes against the pattern's size (Q1
  as an OR over 1-4 companies; Q7, Q5 and ORs of Q5-Q7), and the fraction found
  with each. Also the filtered sketch (ours: ``SKETCH_SLOTS`` Space-Saving slots for the
  most visited match vectors beside the 800 cells, ``cep_core.approx.filtered_sketch``),
  the trajectory store (ours: entries only for the match vectors that lead to a bundle,
  the others' visits counted exactly, ``cep_core.approx.trajectory_store``; built as the
  exact ℋ is) and the same with those visits in 800 count-min cells, and, to measure what
  a dearer lookup costs, the exact history with its lookups charged 1.5 times
  (docs/acep.md, "The sketch"). The run ends with the largest difference in match points
  between the trajectory store and the exact history over Q1, Q5 and every Δ.
* **Figs. 15-16**: RC-ACEP with proxy matches (Theorem 2) against without, the fraction
  found and the peak of live match nodes against the pattern's size.
* **Windows of 50,000 events** (full run only, ``windows_full.csv``): Q5 over a fleet of
  6,000 vehicles, the fractions against an unbudgeted proxy-match run's match points
  (``experiments/acep_windows.py``).
* **Figs. 17-18** (``adaptation.csv``, ``memory.csv``): ℋ built on day 0 of a letter
  stream whose trends drift day by day; RC-ACEP on day 1-4 with its own updates of ℋ
  ("no adaptation") and with the Q-learning agents of §5 beside it, at one Δ; the
  control "no change" runs on a copy of day 0; "history of the day", ℋ built on another
  stream of the test's day, is the most any adaptation could give. Memory of ℋ with and
  without the agents' Q table.

Run from the repository root::

    python scripts/reproduce_acep.py [--quick] [--out results/acep] [--figures docs/figures]

``--quick`` (under 5 minutes on 2 cores) writes ``results/acep/*.csv``; the full run
(longer streams, three stream seeds with medians, histories of 512 bundles as in §6)
``results/acep/*_full.csv``. Both print which of §6.2's statements hold.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import copy  # noqa: E402
import functools  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import cep_core  # noqa: E402
from cep_core.approx.filtered_sketch import FilteredSketch, filtered_shape  # noqa: E402
from cep_core.approx.history import Bundles, History  # noqa: E402
from cep_core.approx.matchnodes import MatchNodeEngine  # noqa: E402
from cep_core.approx.qlearning import QAgents  # noqa: E402
from cep_core.approx.rc_acep import (  # noqa: E402
    Budget,
    BudgetedMatcher,
    SelectionCost,
    build_history,
    match_key,
)
from cep_core.approx.sketch import SketchStore, sketch_shape  # noqa: E402
from cep_core.approx.trajectory_store import CellCounts, TrajectoryStore  # noqa: E402
from cep_core.plan import Plan  # noqa: E402
from cep_core.shedding import SheddingConfig, fit_cost_model, work_units  # noqa: E402
from cep_core.shedding.engine import SheddingEngine  # noqa: E402
from experiments import acep_data as data  # noqa: E402
from experiments import acep_windows  # noqa: E402
from experiments.results_csv import report, spawn_pool, write_rows  # noqa: E402
from experiments.timing import time_calls  # noqa: E402

K = 2  # §6.2: "unless otherwise specified, we use a default value of k = 2"
UNIT_COST = 1.0  # µs per unit of work on the modelled device
SKETCH_CELLS = 800  # §6.2: "we calculate the parameters based on Theorem 4 (fixing c = 800)"
SKETCH_SLOTS = 256  # the filtered sketch's Space-Saving slots (ours, docs/acep.md)
CELL_SHAPE = (4, 200)  # the trajectory store's count-min cells (c = 800 as §6; docs/acep.md)
LETTER_WINDOW = 50  # events (the paper: 100,000-3,000,000; a Python engine needs less)
PHEV_WINDOW = 500  # events (the paper: 50,000)

THROUGHPUT = ("figure", "dataset", "query", "window", "k", "pattern_size", "events",
              "seconds", "events_per_s", "ratio_to_k0", "work_units", "device_events_per_s",
              "matches")
FRACTION = ("figure", "dataset", "query", "seed", "delta_us", "method", "points",
            "matches", "bundles", "in_time_points", "in_time_matches", "truth_points",
            "truth_matches", "truth_bundles", "processed", "candidates", "overhead_units",
            "work_units", "skipped", "latency_avg")
MEMORY = ("figure", "dataset", "query", "pattern_size", "method", "bytes", "items",
          "note")
ADAPTATION = ("figure", "age_days", "stream", "method", "points", "matches",
              "truth_points", "agent_matches", "swaps", "delta_us", "seed")


@dataclass(frozen=True)
class Scale:
    """Sizes of a run (quick or full)."""

    name: str
    history: int  # letters available to build ℋ
    test: int  # letters of a test stream
    capacity: int  # bundles in a match map
    deltas: tuple[float, ...]  # inter-arrival times [µs], letters
    phev_deltas: tuple[float, ...]
    shed_deltas: tuple[float, ...]
    seeds: tuple[int, ...]
    vehicles: int
    timing_events: int
    repeats: int
    day_events: int
    day_capacity: int
    day_delta: float
    companies: tuple[int, ...]


QUICK = Scale("quick", history=60_000, test=8000, capacity=64,
              deltas=(50, 200, 1000, 3000, 10_000, 30_000),
              phev_deltas=(20, 50, 100, 300, 1000),
              shed_deltas=(100, 1000, 10_000), seeds=(0,), vehicles=40,
              timing_events=2000, repeats=3, day_events=12_000, day_capacity=16,
              day_delta=1000, companies=(1, 2, 4))
FULL = Scale("full", history=400_000, test=15_000, capacity=512,
             deltas=(30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000),
             phev_deltas=(10, 20, 50, 100, 300, 1000),
             shed_deltas=(100, 300, 1000, 3000, 10_000, 100_000),
             seeds=(0, 1, 2), vehicles=60, timing_events=4000, repeats=5,
             day_events=60_000, day_capacity=16, day_delta=1000, companies=(1, 2, 3, 4))


# --------------------------------------------------------------------------- streams
def letter_case(query: str, window: int = LETTER_WINDOW, companies: int = 1) -> str:
    return data.letter_query(query, window, companies)


def streams(dataset: str, seed: int, scale: Scale) -> tuple[list[dict], list[dict]]:
    """(history stream, test stream) of a dataset for one seed."""
    if dataset == "letters":
        return (data.letters(scale.history, seed=1000 + seed),
                data.letters(scale.test, seed=2000 + seed))
    params = data.PhevStream(vehicles=scale.vehicles)
    hist = []
    for d in range(1, 4):  # other days of the same fleet until ℋ fills (build stops early)
        part = data.phev_stream(params, seed=3000 + 10 * seed + d, day=d)
        off = len(hist)
        hist += [{**e, "time": e["time"] + off, "id": e["id"] + off} for e in part]
    return hist, data.phev_stream(params, seed=4000 + seed, day=0)


# --------------------------------------------------------------------------- counting
class Truth:
    """Unbudgeted ACEPMATCH over a test stream: its matches, match points, bundles."""

    def __init__(self, plan, events: list[dict], window: float):
        self.report = BudgetedMatcher(plan, K).run(events)
        self.found = self.report.found
        self.points = sorted(self.report.points())
        bundles = Bundles(window)
        self.bundle_of = {t: bundles.of(t, plan.key_of(events[t])) for t in self.points}
        self.bundles = bundles.count

    def fractions(self, found: dict) -> dict:
        hit = [m for m in found if m in self.found]
        pts = {self.found[m][0] for m in hit}
        return {"matches": len(hit) / max(1, len(self.found)),
                "points": len(pts) / max(1, len(self.points)),
                "bundles": len({self.bundle_of[t] for t in pts}) / max(1, self.bundles)}


def sketched(hist: History, filtered: bool = False) -> tuple[History, int]:
    """ℋ's primary folded into a sketch of 800 cells shaped by Theorem 4, or
    (``filtered``) into the filtered sketch: ``SKETCH_SLOTS`` Space-Saving slots for the
    most visited vectors beside 800 cells shaped for the rest
    (``cep_core.approx.filtered_sketch``); the history and its rows."""
    if filtered:
        d, w = filtered_shape(hist.primary.items(), SKETCH_SLOTS, SKETCH_CELLS)
        store = functools.partial(FilteredSketch, SKETCH_SLOTS, d, w, seed=7)
    else:
        d, w = sketch_shape(SKETCH_CELLS, hist.primary.alpha())
        store = functools.partial(SketchStore, d, w, seed=7)
    out = History(hist.vectors, hist.capacity, store=store)
    out.primary.add(hist.primary.items())
    out.primary_bundles, out.swaps = hist.primary_bundles, 1
    return out, d


SKETCHES = (("exact", None), ("sketch", False), ("filtered sketch", True))
TRAJECTORY = "trajectory store"  # the store whose gap the quick run's last line reports


def _cell_store() -> TrajectoryStore:
    """The trajectory store with ``CELL_SHAPE`` count-min cells for the visits before a
    vector's first bundle."""
    return TrajectoryStore(CellCounts(*CELL_SHAPE, seed=7))


TRAJECTORY_STORES = ((TRAJECTORY, TrajectoryStore), (f"{TRAJECTORY}, cells", _cell_store))


def _histories(hist: History, plan: Plan | None = None, stream: list[dict] | None = None
               ) -> list[tuple[str, History, int]]:
    """ℋ exact, sketched (Theorem 4), filtered and in the trajectory stores (exact
    counts; count-min cells for the counts before a vector's first bundle): (name,
    history, rows a lookup reads at most). The trajectory stores are built by
    unbudgeted ACEPMATCH over ``stream`` as the exact ℋ was, or else (no ``plan``)
    folded from the exact ℋ's primary and sealed (its memory: the same entries)."""
    out = [("exact", hist, 1)]
    for name, filtered in SKETCHES[1:]:
        h, d = sketched(hist, filtered)
        out.append((name, h, d))
    for name, store in TRAJECTORY_STORES:
        if plan is not None:
            h, _ = build_history(plan, K, stream, capacity=hist.capacity, store=store)
        else:
            h = History(hist.vectors, hist.capacity, store=store)
            h.primary.add(hist.primary.items())
            h.primary.seal()
            h.primary_bundles, h.swaps = hist.primary_bundles, 1
        out.append((name, h, 1))
    return out


# --------------------------------------------------------------------------- Figs. 9-16
def _shed(query, plan, events: list[dict], model, delta: float) -> tuple[dict, dict, float]:
    """Hybrid load shedding on the device (Δ = one stream time unit): its matches, those
    detected within one inter-arrival time, its average latency [Δ]."""
    cfg = SheddingConfig("Hybrid", unit_cost=UNIT_COST / delta, bound=1.0, model=model)
    eng = SheddingEngine(plan, "skip-till-any-match", "matches", "every-event", cfg,
                         max_missing=K)
    found, in_time = {}, {}
    out: list[dict] = []
    for e in events:
        n0 = len(out)
        eng.process(e, out)
        late = eng.clock.last_finish - e["time"]
        for rec in out[n0:]:
            m = match_key(rec)
            found[m] = (e["time"], rec["missing"])
            if late <= 1.0:
                in_time[m] = found[m]
    return found, in_time, eng.report()["latency_avg"]


def fractions(task: tuple) -> tuple[list[dict], list[dict]]:
    """Figs. 9-10 (and 12, 14, 15) for one dataset, seed and part (``match``: the
    match-node methods; ``shed``: hybrid shedding)."""
    dataset, seed, part, scale = task
    query = "Q1" if dataset == "letters" else "Q5"
    text = letter_case(query) if dataset == "letters" else data.phev_query(query, PHEV_WINDOW)
    compiled = cep_core.compile(text)
    plan = compiled.plan
    hstream, test = streams(dataset, seed, scale)
    hist, used = build_history(plan, K, hstream, capacity=scale.capacity)
    truth = Truth(plan, test, plan.window)
    fig = {"letters": 9, "phev": 10}[dataset]
    base = {"dataset": dataset, "query": query, "seed": seed,
            "truth_points": len(truth.points), "truth_matches": len(truth.found),
            "truth_bundles": truth.bundles}
    rows, mem = [], []

    def row(figure, delta, method, rep=None, fr=None, **extra):
        fr = fr or truth.fractions(rep.found)
        r = {**base, "figure": figure, "delta_us": delta, "method": method, **fr, **extra}
        if rep is not None:
            r.update(processed=rep.processed, candidates=rep.candidates,
                     overhead_units=rep.overhead, work_units=rep.work, skipped=rep.skipped)
        rows.append(r)

    if part == "shed":
        model = fit_cost_model(compiled, hstream[:min(len(hstream), 3000)], max_missing=K)
        for delta in scale.shed_deltas:
            found, in_time, lat = _shed(compiled, plan, test, model, delta)
            fr = truth.fractions(found)
            it = truth.fractions(in_time)
            row(fig, delta, "hybrid shedding", fr=fr, in_time_points=it["points"],
                in_time_matches=it["matches"], latency_avg=lat)
        return rows, mem
    hists = _histories(hist, plan, hstream)
    mem += [{"figure": 11 if dataset == "letters" else 13, "dataset": dataset,
             "query": query, "pattern_size": len(plan.positions), "method": m,
             "bytes": h.memory_bytes(), "items": h.primary.vectors(),
             "note": f"d={d}, alpha={hist.primary.alpha():.1f}, {used} events built"}
            for m, h, d in hists]
    for delta in (scale.deltas if dataset == "letters" else scale.phev_deltas):
        b = Budget(delta, UNIT_COST)
        row(fig, delta, "timeout", BudgetedMatcher(plan, K, "timeout", b).run(test))
        row(fig, delta, "rc-acep", BudgetedMatcher(plan, K, "rc-acep", b,
                                                   history=copy.deepcopy(hist)).run(test))
        fig_s = 12 if dataset == "letters" else 14
        for name, h, _ in hists[1:]:
            row(fig_s, delta, f"rc-acep {name}",
                BudgetedMatcher(plan, K, "rc-acep", b, history=copy.deepcopy(h)).run(test))
        row(fig_s, delta, "rc-acep, lookups x1.5",  # the exact ℋ at a sketch's dearer lookups
            BudgetedMatcher(plan, K, "rc-acep", b, history=copy.deepcopy(hist),
                            cost=SelectionCost(lookup=0.75)).run(test))
        if dataset == "letters":
            row(fig, delta, "rc-acep, selection x4",
                BudgetedMatcher(plan, K, "rc-acep", b, history=copy.deepcopy(hist),
                                cost=SelectionCost(2.0, 1.0, 1.0)).run(test))
            row(15, delta, "rc-acep proxy",
                BudgetedMatcher(plan, K, "rc-acep", b, history=copy.deepcopy(hist),
                                proxy=True).run(test))
            row(15, delta, "timeout proxy",
                BudgetedMatcher(plan, K, "timeout", b, proxy=True).run(test))
    return rows, mem


# --------------------------------------------------------------------------- Figs. 5-8
def throughput(scale: Scale) -> list[dict]:
    """Figs. 5-8: wall-clock throughput of unbudgeted ACEPMATCH (module doc)."""
    letters = data.letters(scale.timing_events, seed=5000)
    phev = data.phev_stream(data.PhevStream(vehicles=scale.vehicles), seed=5001)
    phev = phev[len(phev) // 2:len(phev) // 2 + 2 * scale.timing_events]  # the DR day
    cases = []
    for fig, window in ((5, 80), (6, LETTER_WINDOW // 2)):
        for q in ("Q1", "Q2", "Q3", "Q4"):
            cases.append((fig, "letters", q, window, None, letter_case(q, window), letters))
    for q in ("Q5", "Q6", "Q7", "Q8"):
        cases.append((7, "phev", q, PHEV_WINDOW, None, data.phev_query(q, PHEV_WINDOW), phev))
    for q, sizes in (("Q5", (10, 14, 18, 22)), ("Q6", (6, 10, 14)), ("Q7", (3, 5, 7)),
                     ("Q8", (3, 4, 5, 6))):
        for size in sizes:
            cases.append((8, "phev", q, PHEV_WINDOW, size,
                          data.phev_query(q, PHEV_WINDOW, size), phev))
    plans = {c[5]: cep_core.compile(c[5]).plan for c in cases}
    times: dict[tuple, list[float]] = {}
    info: dict[tuple, tuple[int, int]] = {}
    inner: dict[tuple, int] = {}  # passes per timed call: a call lasts 50 ms at least
    for _ in range(scale.repeats):  # interleaved, so that noise spreads over every case
        for fig, _ds, q, w, size, text, events in cases:
            for k in (0, 1, 2):
                key = (fig, q, w, size, k)

                def once(plan=plans[text], k=k, events=events, key=key):
                    for _ in range(inner.get(key, 1)):
                        eng = MatchNodeEngine(plan, k)
                        out = eng.run(events)
                    return work_units(eng.counters), len(out)
                if key not in inner:
                    t, _ = time_calls(once, 1)
                    inner[key] = max(1, int(0.05 / max(t[0], 1e-6)) + 1)
                t, res = time_calls(once, 1)
                times.setdefault(key, []).append(t[0] / inner[key])
                info[key] = res
    rows = []
    for fig, ds, q, w, size, text, events in cases:
        k0 = statistics.median(times[(fig, q, w, size, 0)])
        for k in (0, 1, 2):
            sec = statistics.median(times[(fig, q, w, size, k)])
            units, matches = info[(fig, q, w, size, k)]
            rows.append({"figure": fig, "dataset": ds, "query": q, "window": w, "k": k,
                         "pattern_size": len(plans[text].positions), "events": len(events),
                         "seconds": sec, "events_per_s": len(events) / sec,
                         "ratio_to_k0": k0 / sec, "work_units": units,
                         "device_events_per_s": len(events) / (units * UNIT_COST * 1e-6),
                         "matches": matches})
    return rows


# --------------------------------------------------------------------------- Figs. 11, 13, 16, 18
def memory(scale: Scale) -> list[dict]:
    """ℋ exact and sketched, proxies and Q-learning, against the pattern's size."""
    rows = []
    hstream = data.letters(scale.history // 2, seed=6000)
    test = data.letters(scale.test // 2, seed=6001)
    for c in scale.companies:
        plan = cep_core.compile(letter_case("Q1", companies=c)).plan
        size = len(plan.positions)
        hist, used = build_history(plan, K, hstream, capacity=scale.capacity)
        for m, h, d in _histories(hist):
            rows.append({"figure": 11, "dataset": "letters", "query": f"Q1 x{c}",
                         "pattern_size": size, "method": m, "bytes": h.memory_bytes(),
                         "items": h.primary.vectors(), "note": f"d={d}, {used} events built"})
        for proxy in (False, True):
            rep = BudgetedMatcher(plan, K, proxy=proxy).run(test)
            rows.append({"figure": 16, "dataset": "letters", "query": f"Q1 x{c}",
                         "pattern_size": size, "method": "proxy" if proxy else "no proxy",
                         "bytes": rep.peak_nodes * NODE_BYTES, "items": rep.peak_nodes,
                         "note": "peak live match nodes, unbudgeted"})
        for agents in (None, QAgents(plan, K)):
            h = copy.deepcopy(hist)
            BudgetedMatcher(plan, K, "rc-acep", Budget(scale.day_delta, UNIT_COST),
                            history=h, agents=agents).run(test)
            q_bytes = 0 if agents is None else len(agents.Q) * Q_ENTRY_BYTES
            rows.append({"figure": 18, "dataset": "letters", "query": f"Q1 x{c}",
                         "pattern_size": size,
                         "method": "Q-learning" if agents else "no adaptation",
                         "bytes": h.memory_bytes() + q_bytes,
                         "items": 0 if agents is None else len(agents.Q),
                         "note": "history (both buffers) + Q table"})
    hstream_p, _ = streams("phev", 0, scale)
    for name in ("Q7", "Q5", "Q5|Q7", "Q5|Q7|Q6"):
        plan = cep_core.compile(data.phev_query(name, PHEV_WINDOW)).plan
        hist, used = build_history(plan, K, hstream_p, capacity=scale.capacity)
        for m, h, d in _histories(hist):
            rows.append({"figure": 13, "dataset": "phev", "query": name,
                         "pattern_size": len(plan.positions), "method": m,
                         "bytes": h.memory_bytes(), "items": h.primary.vectors(),
                         "note": f"d={d}, {used} events built"})
    return rows


NODE_BYTES = 7 * 8  # a match node (state, loc, err, start_win, prev_*): seven 8-byte fields
Q_ENTRY_BYTES = 16 + 8 + 8  # a Q-table entry: (state, action) key, value, count


# --------------------------------------------------------------------------- Fig. 17
def adaptation(task: tuple) -> list[dict]:
    """Fig. 17: ℋ of day 0, RC-ACEP on day ``age`` with and without Q-learning; and,
    as the most adaptation could give, RC-ACEP with a history built on another stream of
    day ``age`` itself ("history of the day")."""
    age, scale = task
    plan = cep_core.compile(letter_case("Q1")).plan
    day0 = data.letters(scale.day_events, seed=7000, day=0)
    hist, _ = build_history(plan, K, day0, capacity=scale.day_capacity)
    own, _ = build_history(plan, K, data.letters(scale.day_events, seed=7100 + age, day=age),
                           capacity=scale.day_capacity)
    rows = []
    for stream in ("change", "no change"):
        test = data.letters(scale.day_events, seed=7000 + age, day=age) \
            if stream == "change" else day0
        truth = Truth(plan, test, plan.window)
        methods = ("no adaptation", "Q-learning") + \
            (("history of the day",) if stream == "change" else ())
        for method in methods:
            h = copy.deepcopy(own if method == "history of the day" else hist)
            agents = QAgents(plan, K) if method == "Q-learning" else None
            rep = BudgetedMatcher(plan, K, "rc-acep", Budget(scale.day_delta, UNIT_COST),
                                  history=h, agents=agents).run(test)
            fr = truth.fractions(rep.found)
            rows.append({"figure": 17, "age_days": age, "stream": stream, "method": method,
                         "points": fr["points"], "matches": fr["matches"],
                         "truth_points": len(truth.points),
                         "agent_matches": rep.agent_matches, "swaps": h.swaps - 1,
                         "delta_us": scale.day_delta, "seed": 7000})
    return rows


# --------------------------------------------------------------------------- statements
def _median_rows(rows: list[dict], keys: tuple[str, ...], value: str) -> dict:
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(float(r[value]))
    return {k: statistics.median(v) for k, v in groups.items()}


def _throughput_statements(thr: list[dict]) -> list[tuple[str, bool]]:
    """Figs. 5-8: ACEPMATCH's throughput by k, window, query and pattern size."""
    out = []
    tp = {(r["figure"], r["query"], r["pattern_size"], r["k"]): r["events_per_s"] for r in thr}
    for fig in (5, 6, 7):
        qs = sorted({q for f, q, _, _ in tp if f == fig})
        dec = all(tp[(fig, q, s, 0)] > tp[(fig, q, s, 1)] > tp[(fig, q, s, 2)]
                  for f, q, s, _ in tp if f == fig and _ == 0)
        out.append((f"Fig. {fig}: throughput falls as k grows, for {', '.join(qs)}", dec))
    for k in (0, 1, 2):
        big = [tp[(5, q, s, k)] for f, q, s, kk in tp if f == 5 and kk == k]
        small = [tp[(6, q, s, k)] for f, q, s, kk in tp if f == 6 and kk == k]
        out.append((f"Figs. 5-6, k = {k}: the smaller window gives more throughput for "
                    f"every query", all(b < s for b, s in zip(big, small, strict=True))))
    q1 = {k: tp[(5, "Q1", s, k)] for f, q, s, k in tp if f == 5 and q == "Q1"}
    others = {k: max(tp[(5, q, s, k)] for f, q, s, kk in tp if f == 5 and kk == k
                     and q in ("Q2", "Q3")) for k in (0, 1, 2)}
    out.append(("Fig. 5: Q1 (32 letters) is slower than Q2 and Q3 at every k",
                all(q1[k] < others[k] for k in (0, 1, 2))))
    f8 = {}
    for f, q, s, k in tp:
        if f == 8:
            f8.setdefault((q, k), []).append((s, tp[(f, q, s, k)]))
    falls = [sorted(v)[0][1] > sorted(v)[-1][1] for v in f8.values()]
    mono = [all(a[1] >= b[1] for a, b in zip(sorted(v), sorted(v)[1:], strict=False))
            for v in f8.values()]
    out.append((f"Fig. 8: throughput falls as the pattern grows (the largest size slower "
                f"than the smallest on {sum(falls)} of {len(falls)} template and k curves; "
                f"monotone on {sum(mono)})", all(falls)))
    return out


def _fraction_statements(frac: list[dict], med: dict) -> list[tuple[str, bool]]:
    """Figs. 9-10: RC-ACEP against the timeout and hybrid load shedding (``med``: the
    median fraction of match points by figure, method and Δ)."""
    out = []
    for fig in (9, 10):
        deltas = sorted({d for f, m, d in med if f == fig and m == "timeout"})
        over = [d for d in deltas if med[(fig, "timeout", d)] < 1.0]
        better = [d for d in over if med[(fig, "rc-acep", d)] > med[(fig, "timeout", d)]]
        if over:
            d0 = over[0]
            rc, to = med[(fig, "rc-acep", d0)], med[(fig, "timeout", d0)]
            ratio = rc / to if to else float("inf")
            out.append((f"Fig. {fig}: RC-ACEP finds a larger fraction (match points) than "
                        f"the timeout at every overloaded Δ ({len(better)} of {len(over)})",
                        len(better) == len(over)))
            out.append((f"Fig. {fig}: at the most overloaded Δ = {d0:g} µs RC-ACEP finds "
                        f"{rc:.3f} against {to:.3f} (≥ 1.5×: {ratio:.3g}×)", ratio >= 1.5))
        it = _median_rows([r for r in frac if r["method"] == "hybrid shedding"],
                          ("figure", "delta_us"), "in_time_points")
        both = [d for f, d in it if f == fig and (fig, "rc-acep", d) in med]
        if both:
            ok = all(med[(fig, "rc-acep", d)] >= it[(fig, d)] for d in both
                     if it[(fig, d)] < 1.0)
            text = ", ".join(f"Δ {d:g}: {med[(fig, 'rc-acep', d)]:.2f} against "
                             f"{it[(fig, d)]:.2f} ({med[(fig, 'hybrid shedding', d)]:.2f} "
                             "at any latency)" for d in sorted(both))
            out.append((f"Fig. {fig}: RC-ACEP finds at least as much as hybrid shedding "
                        f"detects within one inter-arrival time wherever shedding falls "
                        f"short ({text})", ok))
    return out


def _sketch_and_proxy_statements(med: dict) -> list[tuple[str, bool]]:
    """Figs. 12, 14 and 15: the fraction found with the sketch and with proxy matches,
    against the exact history's (``med`` as in :func:`_fraction_statements`)."""
    out = []
    for fig in (12, 14):
        for method, what in (("rc-acep sketch", "with the sketch (Theorem 4, c = 800) the "
                              "fraction stays within 0.05 of the exact history's"),
                             ("rc-acep filtered sketch", f"with the filtered sketch "
                              f"({SKETCH_SLOTS} slots beside 800 cells) within 0.05"),
                             (f"rc-acep {TRAJECTORY}", "with the trajectory store (entries "
                              "for the vectors that lead to a bundle) within 0.05"),
                             (f"rc-acep {TRAJECTORY}, cells", "with the trajectory store, "
                              "its earlier counts in 800 count-min cells, within 0.05"),
                             ("rc-acep, lookups x1.5", "with the exact history, its "
                              "lookups charged 1.5 times, within 0.05")):
            worst = sketch_gap(med, method, (fig,))
            out.append((f"Fig. {fig}: {what} (largest gap {worst:.3f})", worst <= 0.05))
    px = [(d, med[(15, "rc-acep proxy", d)], med[(9, "rc-acep", d)])
          for f, m, d in med if f == 15 and m == "rc-acep proxy"]
    out.append(("Fig. 15: with proxy matches RC-ACEP finds at least as large a fraction "
                "at every Δ", all(a >= b for _, a, b in px)))
    return out


def sketch_gap(med: dict, method: str = f"rc-acep {TRAJECTORY}",
               figures: tuple[int, ...] = (12, 14)) -> float:
    """The largest difference in the fraction of match points between RC-ACEP with
    ``method``'s history and with the exact one, over ``figures`` (12: Q1, 14: Q5) and
    every Δ (``med`` as in :func:`_fraction_statements`)."""
    gaps = [abs(med[(f, m, d)] - med[(9 if f == 12 else 10, "rc-acep", d)])
            for f, m, d in med if f in figures and m == method]
    return max(gaps, default=0.0)


def _memory_statements(mem: list[dict]) -> list[tuple[str, bool]]:
    """Figs. 11, 13, 16 and 18: the memory of the sketch, of proxy matches and of
    Q-learning."""
    out = []
    mm = {(r["figure"], r["pattern_size"], r["method"]): float(r["bytes"]) for r in mem}
    for fig, method in ((f, m) for f in (11, 13) for m in ("sketch", TRAJECTORY,
                                                            f"{TRAJECTORY}, cells")):
        sizes = sorted({s for f, s, m in mm if f == fig})
        ok = all(mm[(fig, s, method)] < mm[(fig, s, "exact")] for s in sizes)
        ratios = ", ".join(f"{mm[(fig, s, 'exact')] / mm[(fig, s, method)]:.1f}×"
                           for s in sizes)
        out.append((f"Fig. {fig}: the {method} takes less memory than the exact history "
                    f"at every size ({ratios})", ok))
    sizes = sorted({s for f, s, m in mm if f == 16})
    if sizes:
        big = sizes[-1]
        r = mm[(16, big, "no proxy")] / max(1.0, mm[(16, big, "proxy")])
        out.append((f"Fig. 16: proxy matches cut memory at least 2× on the longest pattern "
                    f"({big} states: {r:.0f}×)", r >= 2))
    sizes = sorted({s for f, s, m in mm if f == 18})
    if sizes:
        worst = max(mm[(18, s, "Q-learning")] / mm[(18, s, "no adaptation")] for s in sizes)
        out.append((f"Fig. 18: Q-learning adds little memory (at most {worst - 1:.1%})",
                    worst <= 1.25))
    return out


def _adaptation_statements(ada: list[dict]) -> list[tuple[str, bool]]:
    """Fig. 17: Q-learning against no adaptation as the history ages."""
    ad = {(r["age_days"], r["stream"], r["method"]): r["points"] for r in ada}
    ages = sorted({a for a, _, _ in ad})
    if not ages:
        return []
    gain = [ad[(a, "change", "Q-learning")] - ad[(a, "change", "no adaptation")]
            for a in ages]
    nc = [ad[(a, "no change", "Q-learning")] - ad[(a, "no change", "no adaptation")]
          for a in ages]
    drop = [ad[(a, "change", "no adaptation")] for a in ages]
    own = [ad.get((a, "change", "history of the day"), math.nan) for a in ages]
    ql = [ad[(a, "change", "Q-learning")] for a in ages]
    return [(f"Fig. 17: with stream changes Q-learning finds more than no "
             f"adaptation at every age (gains {', '.join(f'{g:+.3f}' for g in gain)})",
             all(g > 0 for g in gain)),
            (f"Fig. 17: without changes Q-learning finds about as much (within "
             f"0.02; {', '.join(f'{g:+.3f}' for g in nc)})",
             all(abs(g) <= 0.02 for g in nc)),
            (f"Fig. 17: without adaptation the fraction drops as the history ages "
             f"({', '.join(f'{x:.3f}' for x in drop)})", drop[-1] < drop[0]),
            (f"Fig. 17: Q-learning stays within 0.05 of a history of the day itself (the "
             f"most adaptation could give: {', '.join(f'{x:.3f}' for x in own)}; Q-learning "
             f"{', '.join(f'{x:.3f}' for x in ql)})",
             all(o - q <= 0.05 for o, q in zip(own, ql, strict=True)))]


def check(thr: list[dict], frac: list[dict], mem: list[dict], ada: list[dict]
          ) -> list[tuple[str, bool]]:
    """§6.2's statements, each with whether it holds (the table of docs/acep.md)."""
    med = _median_rows(frac, ("figure", "method", "delta_us"), "points")
    return (_throughput_statements(thr) + _fraction_statements(frac, med)
            + _sketch_and_proxy_statements(med) + _memory_statements(mem)
            + _adaptation_statements(ada))


# --------------------------------------------------------------------------- main
def _run(job: tuple):
    kind, arg = job
    t0 = time.perf_counter()
    if kind == "fractions":
        res = fractions(arg)
    elif kind == "throughput":
        res = throughput(arg)
    elif kind == "memory":
        res = memory(arg)
    elif kind == "windows":
        res = acep_windows.fractions(arg)
    else:
        res = adaptation(arg)
    return kind, res, time.perf_counter() - t0, job


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="results/acep")
    ap.add_argument("--figures", default=None, help="folder for the figures (optional)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args(argv)
    scale = QUICK if args.quick else FULL
    t0 = time.perf_counter()
    jobs = [] if args.quick else [("windows", task) for task in acep_windows.tasks()]
    jobs += [("fractions", (ds, seed, part, scale)) for seed in scale.seeds
             for ds in ("letters", "phev") for part in ("match", "shed")]
    jobs += [("adaptation", (age, scale)) for age in (1, 2, 3, 4)]
    jobs += [("memory", scale), ("throughput", scale)]
    thr, frac, mem, ada, win = [], [], [], [], []
    with spawn_pool(args.workers) as pool:
        for kind, res, sec, job in pool.map(_run, jobs):
            arg = (job[1][:3] if kind == "fractions" else
                   job[1][1:] if kind == "windows" else job[1])
            print(f"  {kind} {arg}: {sec:.0f} s "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
            if kind == "fractions":
                frac += res[0]
                mem += res[1]
            elif kind == "throughput":
                thr += res
            elif kind == "memory":
                mem += res
            elif kind == "windows":
                win += res
            else:
                ada += res
    suffix = "" if args.quick else "_full"
    out = Path(args.out)
    write_rows(thr, out / f"throughput{suffix}.csv", THROUGHPUT)
    write_rows(frac, out / f"fraction{suffix}.csv", FRACTION)
    write_rows(mem, out / f"memory{suffix}.csv", MEMORY)
    write_rows(ada, out / f"adaptation{suffix}.csv", ADAPTATION)
    if win:
        write_rows(win, out / f"windows{suffix}.csv", acep_windows.WINDOWS)
    report(check(thr, frac, mem, ada) + acep_windows.statements(win), args.figures,
           "experiments.acep_figures", out, suffix)
    print(f"wrote {out}/*{suffix}.csv in {time.perf_counter() - t0:.0f} s")
    med = _median_rows(frac, ("figure", "method", "delta_us"), "points")
    print(f"sketch against exact history: largest difference in match points "
          f"{sketch_gap(med):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
