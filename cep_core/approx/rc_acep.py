"""RC-ACEP: approximate matching under a per-letter time budget on a modelled device.

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016: §2, Definition 2 (RC-ACEP: keep
up with the stream and return as many matches as possible), §3.2, Algorithm 2, and §6
("the processing of an incoming letter stops when the next incoming letter arrives").

**The budget** (docs/decisions.md, "RC-ACEP: budget, history and proxies"). Letter ``i``
arrives at ``i·Δ`` (Δ: the inter-arrival time) on a device that spends ``unit_cost``
per unit of work (:class:`cep_core.shedding.clock.DeviceClock`; the units are the
reference engine's, :func:`cep_core.shedding.clock.work_units`, one per event, node
created, transition and predicate). The device starts a letter when it arrives or when
it is done with the previous one, whichever is later, and stops between two candidates
once the next letter has arrived; a candidate it has begun it finishes, and the time it
runs over is lost to the next letter. A letter that arrives after the one following it
is not processed at all. Nodes that are not extended stay where they are
(skip-till-any-match): a lost extension never invents a match.

**Orders.** ``"timeout"`` is ACEPMATCH with the timeout of §6: candidates in Algorithm
1's order (the seed, then by automaton state, oldest first). ``"rc-acep"`` looks up
each candidate's match vector in the history ℋ and processes them best first
(:class:`cep_core.approx.coverage.CoverageQueue`); its selection work is charged on the
same clock at the costs of :class:`SelectionCost`. With ``learn`` it also writes its
own visits and matches to ℋ's secondary buffer (§5; they replace the primary when
full), and Q-learning agents (:mod:`cep_core.approx.qlearning`) may explore beside it.
``budget=None`` is ACEPMATCH itself.

:func:`build_history` runs unbudgeted ACEPMATCH over a historical stream until ℋ's
match maps are full (§6: "until there are 512 match bundles").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from cep_core.approx.coverage import CoverageQueue
from cep_core.approx.history import History, MatchVectors, bit_indices
from cep_core.approx.matchnodes import MatchNodeEngine
from cep_core.counters import Counters
from cep_core.engine.matching import ANY
from cep_core.engine.protocol import EngineBase
from cep_core.errors import QueryError
from cep_core.plan import Plan
from cep_core.shedding.clock import DeviceClock, work_units

__all__ = ["SelectionCost", "Budget", "RunReport", "BudgetedMatcher", "build_history",
           "ORDERS", "match_key"]

ORDERS = ("timeout", "rc-acep")


@dataclass(frozen=True)
class SelectionCost:
    """Units of work RC-ACEP's own operations cost on the device: a history ``lookup``
    (per entry or sketch cell it reads: its store's ``rows_read``), a ``heap`` push or
    pop (refreshes included), and an ``update`` of ℋ (a visit counted, or a bundle bit
    set in one vector's map). A unit is what creating one match node costs."""

    lookup: float = 0.5
    heap: float = 0.25
    update: float = 0.25


@dataclass(frozen=True)
class Budget:
    """Letters arrive every ``delta`` time units on a device that spends ``unit_cost``
    per unit of work (both in one unit, e.g. µs)."""

    delta: float
    unit_cost: float = 1.0

    def __post_init__(self) -> None:
        if not (self.delta > 0 and self.unit_cost > 0):
            raise ValueError("a budget needs a positive inter-arrival time and unit cost")


@dataclass
class RunReport:
    """What a run found and spent: ``found`` {match: (match point, least error)}, work
    units of matching and of selection, candidates offered and processed, letters the
    device never reached, busy time and the peak of live match nodes."""

    found: dict = field(default_factory=dict)
    work: int = 0
    overhead: float = 0.0
    candidates: int = 0
    processed: int = 0
    letters: int = 0
    skipped: int = 0
    busy: float = 0.0
    peak_nodes: int = 0
    agent_matches: int = 0

    def points(self) -> set:
        return {t for t, _ in self.found.values()}


def match_key(rec: dict) -> frozenset:
    """A match (an output of ``matches()``) without its error, as a frozenset."""
    return frozenset((v, tuple(x) if isinstance(x, list) else x) for v, x in rec.items()
                     if v != "missing")


class BudgetedMatcher(EngineBase):
    """One query on the modelled device (module doc), an
    :class:`~cep_core.engine.protocol.Engine` whose ``feed`` processes each letter of a
    batch within its budget and whose ``report()`` is its :class:`RunReport` as a dict.
    ``history``: ℋ, needed by ``order="rc-acep"``; ``agents``: Q-learning agents
    (``learn`` on); ``proxy``: proxy matches (Theorem 2)."""

    name = "rc-acep"
    policy = ANY
    reports = "rc-acep"

    def __init__(self, plan: Plan, k: int, order: str = "timeout",
                 budget: Budget | None = None, history: History | None = None,
                 proxy: bool = False, cost: SelectionCost = SelectionCost(),
                 learn: bool = True, agents: Any = None):
        if order not in ORDERS:
            raise QueryError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
        if order == "rc-acep" and history is None:
            raise QueryError("RC-ACEP needs a history (build_history)")
        self.plan, self.k, self.order, self.budget = plan, k, order, budget
        self.history, self.cost, self.agents = history, cost, agents
        self.learn = learn and history is not None
        self.vectors = history.vectors if history is not None else None
        self.engine = MatchNodeEngine(plan, k, proxy=proxy,
                                      on_match=self._on_match if self.learn else None)
        self.clock = DeviceClock(budget.unit_cost if budget else 1.0)
        #: what the run found and spent so far
        self.run_report = RunReport()
        self._overhead = 0.0
        self._idx: dict[int, np.ndarray] = {}
        self._idx_version = -1
        self._i = 0

    # ------------------------------------------------------------------ hooks
    def _on_match(self, vectors: list, t: Any, key: Any) -> None:
        self.history.match(vectors, t, key)
        self._overhead += self.cost.update * len(vectors)

    def charge(self, units: float) -> None:
        """Book selection or learning work (units) on the device."""
        self._overhead += units

    # ------------------------------------------------------------------ running
    @property
    def counters(self) -> Counters:
        """The counters of the match-node engine that does the matching."""
        return self.engine.counters

    def statistics(self) -> dict[str, Any]:
        return self.engine.statistics()

    def feed_batch(self, events: Iterable[dict]) -> list[dict]:
        """The matches of the next letters, each processed within its budget."""
        out: list[dict] = []
        for e in events:
            out += self.process(e)
        return out

    def run(self, events: Iterable[dict]) -> RunReport:
        for e in events:
            self.process(e)
        return self._closed()

    def report(self) -> dict[str, Any]:
        """The :class:`RunReport` so far, as a dict."""
        return asdict(self._closed())

    def _closed(self) -> RunReport:
        """The run report with the peak of live nodes, the work and the busy time now."""
        rep = self.run_report
        rep.peak_nodes = self.engine.peak_nodes
        rep.work = work_units(self.engine.counters)
        rep.busy = self.clock.busy
        return rep

    def process(self, e: dict) -> list[dict]:
        """Process one letter (the next one of the stream) within its budget."""
        i, self._i = self._i, self._i + 1
        rep = self.run_report
        rep.letters += 1
        b = self.budget
        if b is None:
            arrival, deadline, start = 0.0, math.inf, 0.0
        else:
            arrival, deadline = i * b.delta, (i + 1) * b.delta
            start = self.clock.start(arrival)
            if start >= deadline:
                rep.skipped += 1
                return []
        eng = self.engine
        u0, self._overhead = work_units(eng.counters), 0.0
        key = eng.begin_event(e)
        out: list[dict] = []
        if key is None:
            self._finish(start, u0)
            return out
        unit = b.unit_cost if b is not None else 0.0

        def time_left() -> bool:
            used = work_units(eng.counters) - u0 + self._overhead
            return start + used * unit < deadline

        if self.agents is not None:
            self.agents.step(e, key, self)
        t = e["time"]
        cands = eng.candidates(e, key)
        rep.candidates += len(cands)
        vectors = self.vectors
        if self.order == "timeout":
            for cand in cands:
                if not time_left():
                    break
                vec = vectors(cand, t) if self.learn else None
                eng.extend(cand, e, key, out, vec)
                rep.processed += 1
                if self.learn:
                    self.history.visit(vec)
                    self._overhead += self.cost.update
        else:
            self._best_first(cands, e, key, out, time_left)
        eng.end_event()
        for rec in out:
            m = match_key(rec)
            got = rep.found.get(m)
            if got is None or rec["missing"] < got[1]:
                rep.found[m] = (t, rec["missing"])
        self._finish(start, u0)
        return out

    def _best_first(self, cands: list, e: dict, key: Any, out: list, time_left) -> None:
        """Algorithm 2, lines 5-20, stopped when the next letter arrives."""
        hist, cost, t = self.history, self.cost, e["time"]
        vectors = self.vectors
        if hist.version != self._idx_version:
            self._idx, self._idx_version = {}, hist.version
        idx_cache = self._idx
        queue = CoverageQueue(hist.capacity)
        store = hist.primary
        for cand in cands:
            if not time_left():
                return
            vec = vectors(cand, t)
            read = store.rows_read
            c, bits = store.lookup(vec)
            idx = None
            if bits:
                idx = idx_cache.get(vec)
                if idx is None:
                    idx = idx_cache[vec] = bit_indices(bits)
            queue.put((cand, vec), c, bits, idx)
            self._overhead += cost.lookup * (store.rows_read - read) + cost.heap
        eng, rep = self.engine, self.run_report
        while len(queue) and time_left():
            pops = queue.pops + queue.pushes
            got = queue.pop()
            self._overhead += cost.heap * (queue.pops + queue.pushes - pops)
            if got is None:
                break
            (cand, vec), _ = got
            eng.extend(cand, e, key, out, vec)
            rep.processed += 1
            if self.learn:
                hist.visit(vec)
                self._overhead += cost.update

    def _finish(self, start: float, u0: int) -> None:
        units = work_units(self.engine.counters) - u0 + self._overhead
        self.run_report.overhead += self._overhead
        if self.budget is not None:
            self.clock.serve(start, units)


def build_history(plan: Plan, k: int, events: Iterable[dict], capacity: int = 512,
                  buckets: int = 8, store: Any = None) -> tuple[History, int]:
    """ℋ from unbudgeted ACEPMATCH over ``events`` until its match maps hold
    ``capacity`` bundles (or the events end); the history and the events used. Every
    candidate's visit and every trajectory's bundle go in (Definition 4)."""
    vectors = MatchVectors.for_plan(plan, k, buckets)
    hist = History(vectors, capacity, store) if store is not None else History(vectors,
                                                                             capacity)
    eng = MatchNodeEngine(plan, k, on_match=hist.match)
    n = 0
    out: list[dict] = []
    for e in events:
        n += 1
        key = eng.begin_event(e)
        if key is not None:
            t = e["time"]
            for cand in eng.candidates(e, key):
                vec = vectors(cand, t)
                hist.visit(vec)
                eng.extend(cand, e, key, out, vec)
            eng.end_event()
        out.clear()
        if hist.built:
            break
    if not hist.built:
        hist.promote()
    return hist, n
