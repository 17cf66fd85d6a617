"""The reference engine with remote data on the modelled device clock (dissertation
Ch. 5: EIRES).

A query whose look-ups are served by a :class:`cep_core.remote.source.RemoteSource`
runs on a :class:`cep_core.shedding.clock.DeviceClock`: event ``k`` arrives at its
timestamp and waits for the device; its work costs the engine's cost units times the
unit cost; a fetch of a missing element sent at device time ``t`` arrives at
``t + ℓ_remote(d)``; when the device must *block* for it, it stands still until then
(time waited, not busy). The blocking fetches an event needs are sent together when the
device picks the event up, so they cost their maximum, not their sum (Definition 2.10:
elements needed in one state are "transmitted in parallel"). The latency of a match is
its detection (the device finishing its last event) minus the arrival of that event,
plus ℓ_fetch of its earlier steps, which each partial match carries (Eq. 2.3-2.4).

**Options** (:class:`~cep_core.remote.config.RemoteConfig`) set the semantics the text
leaves open: with ``blocking="match"`` each partial match sends its blocking fetch when
it evaluates the look-up and the device stands still for it before the next one goes
on, so the waits of one event add up (an element fetched for one partial match serves
another only through the cache); ``bl1_capacity`` gives BL1 a cache of its own;
``payload`` lets a partial match keep what it has read (and pass it to its extensions);
``latency_from="start"`` measures a match's latency from the start of its last event's
processing instead of its arrival, ``latency_to="match"`` up to its accepting step
instead of the end of that event's processing; ``order="state"`` lets a partition's
partial matches take an event earlier states first; ``carry_waits=False`` leaves the
waits of a match's earlier steps out of its latency. None of them changes the matches.

Strategies (:data:`cep_core.remote.config.STRATEGIES`; §5.4, §5.6.1):

* ``BL1``: block on every miss, no cache (an element fetched while processing an event
  serves the other partial matches evaluating that event, then is forgotten).
* ``BL2``: block on a miss, with the cache (LRU or cost-based, :mod:`.cache`).
* ``BL3``: postpone every remote predicate to the final state; there, fetch all the
  elements the match needs at once and block for the last of them.
* ``PFetch``: prefetch (below), block on a miss (only for what is still in flight if the
  prefetch was late).
* ``LzEval``: on a miss, send the fetch and postpone the predicate while the partial
  match advances through ``succ(j)`` (:func:`cep_core.remote.utility.lazy_reach`); the
  predicate is evaluated as soon as the element arrives; a partial match that would
  leave ``succ(j)`` or complete a match blocks for it first.
* ``Hybrid``: PFetch and LzEval: prefetch, postpone what the prefetch did not bring in
  time, block outside ``succ(j)``.

**Postponing keeps the matches exact.** A postponed step is taken speculatively under a
*guard* (the postponed predicates over the step's bindings): the extended partial match
(PM) carries the guard as true; under skip-till-next-match and strict contiguity, where
the extension replaces the PM, the PM also stays, carrying the guard as false (the
branch in which the event was skipped). When the guard is evaluated, the branch that
contradicts it dies with all it derived, so the PM is back in its state before the
postponed step, having processed the later events as blocking evaluation would have.
The set of matches is therefore that of blocking evaluation under every policy; only
their latency and the work differ (the speculative branches are the extra partial
matches of §5.4.2). Postponing needs ``runs="every-event"`` (with one run per
partition the start of a run would depend on a speculative one); start transitions and
NEG predicates that read remote data always block.

**Prefetching** (§5.4.1, Alg. 1 and 3): for a known-key need (:mod:`.needs`) of
category ``m``, the lookahead category is the one closest to ``m`` whose prefetches
have missed fewer than ``miss_threshold`` times (the cache-hit matrix H, counts reset
``miss_reset`` time units after their last increment; the reading of the spec: H is
kept per pair of categories, not per element); when a PM of that category is created,
the element is prefetched — at once, or when the category is ``m`` itself at the age
``1/λ − ℓ_remote`` (estimated-arrival timing) when that is positive. Event-key needs
are anticipated from the utility model alone: at each slice end the elements of the
highest utility not cached are prefetched. An element is prefetched only when the
cache has room or its utility (``ω_fetch``) exceeds the lowest one cached (Eq. 5.5).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from functools import partial
from typing import Any

import numpy as np

from cep_core.engine.matching import ANY, EVERY_EVENT, NEXT, merge_counts
from cep_core.engine.options import MODELLED_MISSING
from cep_core.engine.reference import ReferenceEngine
from cep_core.engine.reference_state import state_field
from cep_core.errors import QueryError
from cep_core.plan import START
from cep_core.remote.cache import CACHES, T1, T2
from cep_core.remote.config import RemoteConfig
from cep_core.remote.guards import GPM, Guard, Postpone
from cep_core.remote.needs import remote_needs
from cep_core.remote.source import Element, RemoteSource
from cep_core.remote.state import BLOCK, POSTPONE, RESOLVE, RemoteCall, RemoteState
from cep_core.remote.utility import UtilityModel, lazy_reach
from cep_core.shedding.clock import DeviceClock, work_units

__all__ = ["RemoteEngine", "chain_after"]

_PREFETCH = {"PFetch", "Hybrid"}
_LAZY = {"LzEval", "Hybrid"}

#: ℓ_pm of Alg. 4 in cost units: an extra partial match is created and evaluates the
#: predicate of one more event before its guard is known
_PM_UNITS = 2.0


class RemoteEngine(ReferenceEngine):
    """Runs a plan whose remote look-ups are fetched on the modelled device (module doc);
    :meth:`report` gives latencies, fetches and time waited. The engine is the compiled
    query; what it keeps of the stream is :attr:`stream_state` (a
    :class:`~cep_core.remote.state.RemoteState`, whose fields it reads as its own), and
    the values of processing one event travel in a
    :class:`~cep_core.remote.state.RemoteCall`."""

    name = "reference+remote"
    reports = "remote"
    (clock, cache, fetch, match_latencies, utility, draws, uncached, deferred, arrivals, seq,
     misses, prefetched, trigger, reach, slice_end, floor, category) = (
        state_field(f) for f in (
            "clock", "cache", "fetch", "match_latencies", "utility", "draws", "uncached",
            "deferred", "arrivals", "seq", "misses", "prefetched", "trigger", "reach",
            "slice_end", "floor", "category"))

    @classmethod
    def refusal(cls, plan: Any, options: Any) -> str | None:
        if options.max_missing is not None:
            return MODELLED_MISSING
        if plan is None or options.filtered or options.shedding is not None:
            return ("remote data on the modelled device applies to pattern queries without "
                    "filters or shedding")
        return None

    def __init__(self, plan, policy: str = ANY, output: str = "events",
                 runs: str = EVERY_EVENT, config: RemoteConfig | None = None):
        cfg = self.config = config or RemoteConfig()
        self.sources = _remote_sources(plan)
        if not self.sources:
            raise QueryError("remote data needs a query with a look-up served by a "
                             "RemoteSource (compile(.., remote={name: RemoteSource(..)}))")
        super().__init__(plan, policy, output, runs=runs)
        self.bl3 = cfg.strategy == "BL3"
        self.lazy = cfg.strategy in _LAZY or self.bl3
        if self.lazy and runs != EVERY_EVENT:
            raise QueryError(f"remote strategy {cfg.strategy} postpones predicates and "
                             "needs runs='every-event'")
        self.prefetching = cfg.strategy in _PREFETCH
        self._source_of = {n: s for s in self.sources for n in s.names}
        self._draw_of = {s.names: j for j, s in enumerate(self.sources)}
        self.needs, self.event_key = remote_needs(plan, lambda n: n in self._source_of)
        self._needs_at: dict[int, list] = {}
        for need in self.needs:
            self._needs_at.setdefault(need.state, []).append(need)
        self._remote_dsts: dict[int, set[int]] = {}  # state -> where its remote edges go
        for src, edges in plan.out_edges.items():
            for edge in edges:
                if src != START and any(p.lookups for p in edge.preds):
                    self._remote_dsts.setdefault(src, set()).add(edge.dst)
        self.slice = plan.window / cfg.slices if plan.window < math.inf else math.inf
        self.miss_reset = cfg.miss_reset if cfg.miss_reset is not None else plan.window
        self._choose_triggers(0.0)
        self._set_reach()

    def fresh_state(self) -> RemoteState:
        """The state before any event: an empty cache, no statistics, each source's
        latency draws from its seed."""
        cfg, st = self.config, RemoteState.fresh(self.plan)
        st.clock = DeviceClock(cfg.unit_cost)
        st.cache = CACHES[cfg.cache](cfg.bl1_capacity if cfg.strategy == "BL1"
                                     else cfg.capacity)
        st.utility = UtilityModel(cfg.slices, {n: s.latency.mean for s in self.sources
                                               for n in s.names})
        st.draws = [s.latency.sampler(s.seed) for s in self.sources]
        return st

    # ------------------------------------------------------------------ the clock
    def device_now(self, call: RemoteCall) -> float:
        """The device's time while it processes the event of ``call``."""
        return call.start + call.stall + \
            (work_units(self.stream_state.counters) - call.u0) * self.config.unit_cost

    def _wait_until(self, call: RemoteCall, t: float) -> None:
        now = self.device_now(call)
        if t > now:
            call.stall += t - now
            self.stream_state.fetch.waited += t - now

    def process(self, e: dict, out: list) -> None:
        t, st = e["time"], self.stream_state
        call = RemoteCall(self, out, st.clock.start(t), work_units(st.counters))
        if t >= st.slice_end:
            self._close_slice(t, call)
        st.utility.event(e["type"], self.plan.key_of(e))
        if st.arrivals:
            self._arrived(call)
        if st.deferred:
            self._due_prefetches(call)
        n0 = len(out)
        for src in self.sources:  # answered through this engine while it processes
            src.call = call
        try:
            self._process(e, out, call)
        finally:
            for src in self.sources:
                src.call = None
        if self._counting and len(out) > n0 + 1:
            merge_counts(self.plan, out, n0)
        units = work_units(st.counters) - call.u0
        finish = st.clock.serve(call.start + call.stall, units)
        if len(out) > n0:  # Eq. 2.4: detection − arrival, plus earlier steps' ℓ_fetch
            pad = len(out) - n0 - len(call.fetch_lat)
            extra = call.fetch_lat + [0.0] * pad
            ends = (call.done_at + [finish] * pad if self.config.latency_to == "match"
                    else [finish] * len(extra))
            origin = t if self.config.latency_from == "arrival" else call.start
            st.match_latencies.extend(end - origin + w
                                      for end, w in zip(ends, extra, strict=True))

    def _flush_call(self, out: list) -> RemoteCall:
        """The values of settling pending look-ups at a flush, on the device from when
        it is free after the latest event."""
        st = self.stream_state
        return RemoteCall(self, out, st.clock.start(st.now), work_units(st.counters))

    # ------------------------------------------------------------------ look-ups
    def remote_get(self, call: RemoteCall, source: RemoteSource, d: Element) -> Any:
        """The value of ``d`` for the predicate being evaluated while the event of
        ``call`` is processed (module doc)."""
        if call.mode == RESOLVE:
            return source.value(*d)
        pm = call.pm if self.config.payload else None
        if pm is not None and d in pm.payload:
            return source.value(*d)
        value = self._read(call, source, d)
        if pm is not None:
            pm.payload = (*pm.payload, d)
        return value

    def _read(self, call: RemoteCall, source: RemoteSource, d: Element) -> Any:
        """:meth:`remote_get` through the cache: a hit, a postponed predicate or a
        blocking fetch."""
        st = self.stream_state
        st.utility.needed(st.category, d)
        now, per_event = self.device_now(call), self.config.blocking == "event"
        arrival = call.in_hand.get(d) if per_event else None
        if arrival is None:
            arrival = st.cache.arrival(d, source.ancestors(d))
        if arrival is None and st.uncached.get(d, -math.inf) > now:
            arrival = st.uncached[d]  # in flight, though the cache could not keep it
        if arrival is not None and arrival <= now:
            st.fetch.hits += 1
            st.cache.access(d, now)
            st.prefetched.pop(d, None)  # a prefetch in time: no miss for H
            return source.value(*d)
        self._note_miss(d, now)
        if call.mode == POSTPONE:
            if arrival is None and self.config.strategy != "BL3":
                self._request(call, source, d, now, T1)
            raise Postpone(d)
        st.fetch.misses += 1
        need = now
        if arrival is None:  # per event: sent with the event's other blocking fetches
            need = call.start if per_event else now
            arrival = self._request(call, source, d, need, T1)
        call.step_wait = max(call.step_wait, arrival - need)
        self._wait_until(call, arrival)
        st.cache.access(d, self.device_now(call))
        return source.value(*d)

    def _request(self, call: RemoteCall, source: RemoteSource, d: Element, now: float,
                 tier: int) -> float:
        st = self.stream_state
        ell = st.draws[self._draw_of[source.names]]()
        st.utility.observed(ell)
        size = source.size_of(d)
        st.fetch.requests += 1
        st.fetch.bytes += size
        arrival = now + ell
        call.in_hand[d] = arrival
        if not st.cache.admit(d, arrival, size, now, tier):
            st.uncached[d] = arrival
        return arrival

    def _arrival_of(self, call: RemoteCall, d: Element) -> float | None:
        """When ``d`` arrives (fetched for the event of ``call``, cached, or in flight),
        or None."""
        a, st = call.in_hand.get(d), self.stream_state
        if a is None:
            a = st.cache.arrival(d, self._source_of[d[0]].ancestors(d))
        return a if a is not None else st.uncached.get(d)

    def _ancestors(self, d: Element) -> list:
        return self._source_of[d[0]].ancestors(d)

    # ------------------------------------------------------------------ guards
    def _check_lazy(self, call: RemoteCall, preds, nb: dict, j: int):
        """``False`` if a predicate fails, ``None`` if all hold, else a :class:`Guard`
        over the postponed ones."""
        st = self.stream_state
        counters, stats = st.counters, st.stats
        postponed, elements = None, None
        may = self.lazy and bool(st.reach.get(j))
        for p in preds:
            counters.predicates += 1
            stats.pred_evaluated[p.index] += 1
            if may and p.lookups:
                call.mode = POSTPONE
                try:
                    ok = p.test(nb)
                except Postpone as x:
                    if postponed is None:
                        postponed, elements = [], {}
                    postponed.append(p.index)
                    elements[x.d] = None  # an ordered set: fetches sent in a fixed order
                    st.fetch.postponed += 1
                    continue
                finally:
                    call.mode = BLOCK
            else:
                ok = p.test(nb)
            if not ok:
                return False
            stats.pred_passed[p.index] += 1
        if postponed is None:
            return None
        ready = [self._arrival_of(call, d) for d in elements]
        ready_at = math.inf if any(r is None for r in ready) else max(ready)
        g = Guard(postponed, nb, elements, st.reach[j])
        if ready_at < math.inf:  # evaluated when its elements are there (BL3: not sent)
            st.seq += 1
            heapq.heappush(st.arrivals, (ready_at, st.seq, g))
        return g

    def _evaluate(self, call: RemoteCall, g: Guard) -> bool:
        call.mode = RESOLVE
        try:
            self.stream_state.counters.predicates += len(g.preds)
            preds = self.plan.preds
            g.value = all(preds[i].test(g.bind) for i in g.preds)
        finally:
            call.mode = BLOCK
        for lit in g.lits:
            if lit.holds != g.value:
                lit.kill()
        g.lits = []
        return g.value

    def _resolve_now(self, call: RemoteCall, g: Guard) -> bool:
        """Block until ``g``'s elements are there (fetching any not requested yet, all
        at once), then evaluate it."""
        if g.value is not None:
            return g.value
        now = last = self.device_now(call)
        for d in g.elements:
            a = self._arrival_of(call, d)
            if a is None:
                a = self._request(call, self._source_of[d[0]], d, now, T1)
            last = max(last, a)
        self.stream_state.fetch.misses += 1
        call.step_wait = max(call.step_wait, last - now)
        self._wait_until(call, last)
        return self._evaluate(call, g)

    def _arrived(self, call: RemoteCall) -> None:
        now = self.device_now(call)
        arrivals = self.stream_state.arrivals
        while arrivals and arrivals[0][0] <= now:
            g = heapq.heappop(arrivals)[2]
            if g.value is None:
                self._evaluate(call, g)

    # ------------------------------------------------------------------ steps
    def _advance(self, pms, e, call: RemoteCall, relevant):
        alive = []
        for pm in pms:
            if pm.dead:
                self.stream_state.counters.pm_dropped += 1
            else:
                alive.append(pm)
        if self.config.order == "state":  # earlier states first (RemoteConfig.order)
            alive.sort(key=_state_of)
        return super()._advance(alive, e, call, relevant) if alive else []

    def _begin(self, e: dict, call: RemoteCall) -> list[GPM]:
        """The reference engine's start of runs (no missing elements here), each new
        partial match made by :meth:`_make_pm` with ``call``."""
        plan, t = self.plan, e["time"]
        conts, call.pm = [], None
        for edge in plan.out[START].get(e["type"], ()):
            call.step_wait = 0.0
            nb = self._extend({}, edge.dst, e)
            if self._check(edge.preds, nb):
                conts.append((edge, nb, self._completion(edge.dst, nb, t), call.step_wait))
        born = []
        for edge, nb, rec, wait in conts:
            if rec is not None:
                self._emit(nb, rec, call)
            if plan.extendable[edge.dst]:
                pm = self._make_pm(edge.dst, nb, t, None, call)
                pm.waited = wait  # ℓ_fetch of this first step (Eq. 2.4)
                born.append(pm)
                self.stream_state.counters.pm_created += 1
        return born

    def _step(self, pm: GPM, e: dict, call: RemoteCall) -> tuple[list, list[int]]:
        plan, typ = self.plan, e["type"]
        self.stream_state.category, call.pm = pm.state, pm
        call.step_wait = 0.0
        conts = []
        for edge in plan.out[pm.state].get(typ, ()):
            if (edge.fresh or edge.needs) and not edge.allows(pm.bind):
                continue
            nb = self._extend(pm.bind, edge.dst, e)
            if edge.negs and self._neg_blocks(pm, edge, nb):
                continue
            guard = self._check_lazy(call, edge.preds, nb, pm.state)
            if guard is False:
                continue
            final = plan.positions[edge.dst].accepting
            if guard is not None and (final or edge.dst not in guard.reach):
                if not self._resolve_now(call, guard):
                    continue
                guard = None
            if pm.cond is not None and (final or not self.bl3):
                for g in pm.cond.open_guards():
                    if final or edge.dst not in g.reach:
                        self._resolve_now(call, g)
                if pm.dead:
                    return [], []
            conts.append((edge, nb, self._completion(edge.dst, nb, e["time"]), guard,
                          call.step_wait))
        watch = plan.neg_watch.get(pm.state)
        return conts, (self._neg_candidates(pm, e, watch) if watch else [])

    def _advance_one(self, pm: GPM, e: dict, call: RemoteCall, keep: list,
                     born: list) -> None:
        conts, negrec = self._step(pm, e, call)
        plan, counters = self.plan, self.stream_state.counters
        if pm.dead:
            counters.pm_dropped += 1
            return
        counters.pm_extended += len(conts)
        for _, nb, rec, _, _ in conts:
            if rec is not None:
                n = len(call.out)
                self._emit(nb, rec, call)
                if len(call.out) > n:
                    call.fetch_lat.append(pm.waited if self.config.carry_waits else 0.0)
                    call.done_at.append(self.device_now(call))
        if self.policy == ANY:
            if not negrec or self._note_negs(pm, negrec, e):
                keep.append(pm)
            else:
                counters.pm_dropped += 1
            for edge, nb, _, guard, wait in conts:
                if plan.extendable[edge.dst]:
                    child = self._make_pm(edge.dst, nb, pm.first_t, pm, call)
                    child.waited = pm.waited + wait
                    if guard is not None:
                        child.rest_on(guard, True)
                    born.append(child)
                    counters.pm_created += 1
            return
        skipped: list[Guard] = []  # next-match / strict: one continuation per branch
        for edge, nb, _, guard, wait in conts:
            if plan.extendable[edge.dst]:
                child = self._make_pm(edge.dst, nb, pm.first_t, pm, call)
                child.waited = pm.waited + wait
                for g in skipped:
                    child.rest_on(g, False)
                keep.append(child)
                if guard is None:
                    return
                child.rest_on(guard, True)
                skipped.append(guard)
        if any(c[3] is None for c in conts):
            return  # consumed by the match(es) it completed
        for g in skipped:  # the branch in which e was skipped
            pm.rest_on(g, False)
        if self.policy != NEXT:
            counters.pm_dropped += 1
        elif not negrec or self._note_negs(pm, negrec, e):
            keep.append(pm)
        else:
            counters.pm_dropped += 1

    def _make_pm(self, state: int, bind: dict, first_t: Any, parent,
                 call: RemoteCall) -> GPM:
        pm = GPM(state, bind, first_t)
        if parent is not None:
            pm.cond, pm.payload = parent.cond, parent.payload
        st = self.stream_state
        st.utility.created(state)
        for need in self._needs_at.get(state, ()):  # Alg. 2, line 2
            try:
                st.utility.urgent[(need.name, need.key(bind))] += 1
            except (KeyError, TypeError, IndexError):
                pass
        if self.prefetching and state in st.trigger:
            self._lookahead(pm, call)
        return pm

    # ------------------------------------------------------------------ prefetching
    def _choose_triggers(self, now: float) -> None:
        """The lookahead category of each known-key need at device time ``now``
        (Alg. 3)."""
        st = self.stream_state
        st.trigger = trigger = {}
        misses = st.misses
        for i, need in enumerate(self.needs):
            chosen = need.candidates[-1]
            for j in need.candidates:
                cell = misses.get((j, need.state))
                if cell is not None and now - cell[1] > self.miss_reset:
                    del misses[(j, need.state)]
                    cell = None
                if cell is None or cell[0] < self.config.miss_threshold:
                    chosen = j
                    break
            trigger.setdefault(chosen, []).append(i)

    def _lookahead(self, pm: GPM, call: RemoteCall) -> None:
        st = self.stream_state
        for i in st.trigger[pm.state]:
            need = self.needs[i]
            try:
                d = (need.name, need.key(pm.bind))
            except (KeyError, TypeError, IndexError):
                continue
            if pm.state == need.state:
                offset = self._offset(need.state, d)
                if offset > 0:
                    st.seq += 1
                    heapq.heappush(st.deferred, (self.device_now(call) + offset, st.seq,
                                                 d, (pm.state, need.state)))
                    continue
            self._prefetch(call, d, (pm.state, need.state))

    def _offset(self, m: int, d: Element) -> float:
        """Estimated-arrival timing: 1/λ − ℓ_remote(d) for the events extending ``m``."""
        rates = self.stream_state.utility.rates
        lam = sum(rates.get(t, 0.0) for t in self.plan.out.get(m, {}))
        return (1.0 / lam - self.stream_state.utility.latency(d)) if lam > 0 else 0.0

    def _due_prefetches(self, call: RemoteCall) -> None:
        now, deferred = self.device_now(call), self.stream_state.deferred
        while deferred and deferred[0][0] <= now:
            _, _, d, cell = heapq.heappop(deferred)
            self._prefetch(call, d, cell)

    def _prefetch(self, call: RemoteCall, d: Element, cell: tuple[int, int] | None
                  ) -> None:
        """Send a prefetch of ``d`` if it is worth the room (Eq. 5.5)."""
        src = self._source_of[d[0]]
        if self._arrival_of(call, d) is not None:
            return
        size, st = src.size_of(d), self.stream_state
        if st.cache.used + size > st.cache.capacity and \
                st.utility.utility(d, self.config.omega_fetch) <= st.floor:
            return
        st.fetch.prefetches += 1
        self._request(call, src, d, self.device_now(call), T2)
        if cell is not None:
            st.prefetched[d] = cell

    def _note_miss(self, d: Element, now: float) -> None:
        st = self.stream_state
        cell = st.prefetched.pop(d, None)
        if cell is not None:
            c = st.misses.setdefault(cell, [0, now])
            c[0] += 1
            c[1] = now

    # ------------------------------------------------------------------ slices
    def _close_slice(self, t: float, call: RemoteCall) -> None:
        st = self.stream_state
        if self.slice == math.inf:
            st.slice_end = math.inf
            return
        if st.slice_end > -math.inf:
            live = Counter()
            urgent = []
            for pms in st.live.values():
                for pm in pms:
                    live[pm.state] += 1
                    for need in self._needs_at.get(pm.state, ()):
                        try:
                            urgent.append((need.name, need.key(pm.bind)))
                        except (KeyError, TypeError, IndexError):
                            pass
            utility, omega = st.utility.utility, self.config.omega_fetch
            st.utility.close_slice(self.slice, live, urgent, self._ancestors)
            st.cache.set_utility(partial(utility, omega=self.config.omega_cache))
            st.floor = min((utility(d, omega) for d in st.cache.entries), default=0.0)
            st.uncached = {d: a for d, a in st.uncached.items() if a > t - self.plan.window}
            self._choose_triggers(call.start)
            self._set_reach()
            if self.prefetching and self.event_key:
                self._prefetch_by_utility(call)
        # the slice holding t (slices are aligned to the stream's first event)
        if st.slice_end == -math.inf:
            st.slice_end = t + self.slice
        else:
            st.slice_end += self.slice * max(1, math.ceil((t - st.slice_end)
                                                          / self.slice + 1e-12))

    def _prefetch_by_utility(self, call: RemoteCall) -> None:
        room = self.cache.capacity - self.cache.used
        for u, d in self.utility.ranked(self.config.omega_fetch):
            if u <= 0 or (room <= 0 and u <= self.floor):
                break
            if self._arrival_of(call, d) is None:
                self._prefetch(call, d, None)
                room -= self._source_of[d[0]].size_of(d)

    def _set_reach(self) -> None:
        """``succ(j)`` for every category that reads remote data (Alg. 4)."""
        plan, st = self.plan, self.stream_state
        accepting = {p.index for p in plan.positions if p.accepting}
        n = len(plan.positions)
        states = {need.state for need in self.needs} | self.event_key
        if self.config.strategy == "BL3":
            st.reach = {j: frozenset(range(j + 1, n)) - accepting for j in states}
            return
        if not self.lazy:
            return
        utility = st.utility
        ell = utility.ell_sum / utility.ell_n if utility.ell_n else \
            float(np.mean([s.latency.mean for s in self.sources]))
        ell_pm = self.config.unit_cost * _PM_UNITS
        live = {q: v / utility.partitions for q, v in utility.mean_live().items()}
        for j in states:
            reach: set[int] = set()
            for dst in self._remote_dsts.get(j, ()):
                chain = chain_after(plan, dst)
                if not utility.rates:  # no statistics yet: one state ahead
                    reach |= set(chain[:1]) - accepting
                    continue
                rates = [utility.rates.get(plan.positions[q].type, 0.0) for q in chain]
                reach |= lazy_reach(j, chain, rates, live, ell, ell_pm, accepting)
            st.reach[j] = frozenset(reach)

    # ------------------------------------------------------------------ results
    def report(self) -> dict[str, Any]:
        """Latencies of the matches (percentiles), fetches, time waited, utilisation."""
        lat = np.asarray(self.match_latencies, dtype=float)
        span = (self.stats.last_time - self.stats.first_time) \
            if self.stats.first_time is not None else 0.0
        pct = {f"p{q}": float(np.percentile(lat, q)) if len(lat) else 0.0
               for q in (5, 25, 50, 75, 95)}
        return {
            "strategy": self.config.strategy,
            "cache": "none" if self.config.strategy == "BL1" and not self.cache.capacity
            else self.config.cache,
            "capacity": self.cache.capacity,
            "matches": int(len(lat)),
            **pct,
            "latency_avg": float(lat.mean()) if len(lat) else 0.0,
            "busy": self.clock.busy,
            "utilisation": self.clock.utilisation(span) if span else 0.0,
            "finish": self.clock.last_finish,
            "fetch": self.fetch.as_dict(),
            "evictions": self.cache.evictions,
            "counters": self.counters.as_dict(),
        }


def _state_of(pm: GPM) -> int:
    return pm.state


def chain_after(plan, dst: int) -> list[int]:
    """``dst`` and the states after it along its first outgoing path (pattern order)."""
    chain, q = [dst], dst
    while True:
        nxt = [e.dst for e in plan.out_edges.get(q, ()) if e.dst not in chain]
        if not nxt:
            return chain
        q = min(nxt)
        chain.append(q)


def _remote_sources(plan) -> list[RemoteSource]:
    lk = plan.lookups
    found: list[RemoteSource] = []
    for cand in [*getattr(lk, "routes", {}).values(), getattr(lk, "fallback", None)]:
        if isinstance(cand, RemoteSource) and all(cand is not s for s in found):
            found.append(cand)
    return found
