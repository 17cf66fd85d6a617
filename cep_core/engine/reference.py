"""The reference engine: per event, partial matches with bindings, every selection policy.

Semantics (dissertation §2.2.2, Definition 2.7, Example 2.7 and Table 2.4; where the
text is silent, the readings of docs/decisions.md, "The window bound is inclusive",
"Selection policies and Table 2.4", "Kleene closure under skip-till-next-match", "One run
per partition", "Negation between pattern elements" and "Lookups and remote data"):

* **Matches** preserve stream order and span at most the window: ``last.t − first.t ≤ τ``.
  A partial match (PM) that can no longer satisfy this is dropped.
* **Starts** (option ``runs``). ``"every-event"`` (default; Table 2.4): every event of a
  first element's type that satisfies that element's predicates starts a new PM, under
  every policy (one per first element it qualifies for). ``"one-per-partition"``: an
  event starts a PM only when its partition has no live PM after the event was offered
  to the partition's PMs (an event that ends or completes the partition's run may start
  the next one). Under skip-till-next-match and strict contiguity runs never split, so a
  partition holds at most one PM: one run per household, as the DR monitoring needs
  (docs/decisions.md, "Strict contiguity in the monitoring queries"). Over Table 2.4
  skip-till-next-match gives the same matches under both options.
* **skip-till-any-match** (greedy): every PM that an event can extend is split into the
  extended copy and the unchanged original; at a Kleene state each qualifying event both
  extends the run and leaves the unextended run alive, and a run may also proceed to the
  next element with the same event. A distinct binding is emitted once.
* **skip-till-next-match** (non-greedy): the PM is replaced by its extension; events that
  fail its predicates are skipped. **Rule for a Kleene state (and any state with several
  transitions for one event):** the run prefers the continuation that keeps it alive —
  the Kleene ``take`` (or ``SEQ(..)+`` ``back``) transition first, then the next elements
  in pattern order; every continuation that completes a match is emitted as well (a
  complete match is output, not kept, so emitting it costs no run). So
  ``SEQ(A+ a[], A b)`` over ``a1 a2 a3`` extends one run ``[a1], [a1 a2], [a1 a2 a3]``
  and emits ``(a=[a1], b=a2)``, ``(a=[a1 a2], b=a3)`` from it; a forward transition is
  taken alone only when the Kleene cannot take the event.
* **strict-contiguity**: skip-till-next-match where any event of the PM's partition (of
  the whole stream without ``SAME``) that the PM does not take ends it.
* **NEG** ``SEQ(.., x, NEG T n, y, ..)``: a transition from ``x``'s to ``y``'s state is
  blocked when an event of type ``T`` satisfying ``n``'s predicates came strictly between
  them in stream order (ties in time count by stream order; the events bound to ``x`` and
  ``y`` themselves never count). Between means after the *latest* event bound before the
  NEG: after a Kleene ``x+`` takes another event, earlier candidates no longer count. With
  ``SAME``, only events of the same partition count. Predicates of ``n`` that read ``y``
  are checked when ``y`` arrives; the others when the candidate arrives. Under
  skip-till-next-match a blocked ``y`` is skipped like any event failing a predicate.
* **Partitions** (``SAME[k]``): PMs live per key value; an event without the key
  attribute is counted and ignored.
* **Lookups** answer through :class:`cep_core.lookup.Lookup`; when one answers
  ``NOT_YET`` the PM (or the start) that needs it is set aside with the event and every
  later event of its partition, and catches up, in order, once the value is there; so
  results are those of an instant answer, emitted later. ``flush()`` settles the lookups.

Cost counters (:class:`cep_core.counters.Counters`): ``events`` processed (after the
input filter), ``pm_created`` (starts and the copies made by splitting), ``pm_extended``
(transitions taken, completions included), ``pm_dropped`` (PMs removed without being
extended: window, strict contiguity, a NEG that blocks every way on, the state filter),
``predicates`` evaluated, ``outputs`` emitted.

Extension points (docs/architecture.md; where hybrid load shedding, the dissertation's
§4.2.2, and remote data, its Ch. 5, plug in): ``input_filter(event) -> bool`` before each
event (False drops it: state unchanged, nothing emitted); ``state_filter(views) -> kept
views`` over the live PMs (:class:`PMView`: state, age, the attribute values their
predicates read) after each event or each fed batch; :class:`Statistics` (events per
type, predicate pass rates).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from cep_core.approx.insertions import Insertions
from cep_core.approx.placeholders import Placeholder, is_lost
from cep_core.engine.matching import (
    ANY,
    EVERY_EVENT,
    ONE_PER_PARTITION,
    OUTPUTS,
    PM,
    STRICT,
    CountMerging,
    PMView,
    check_options,
    check_predicates,
    match_ids,
    match_record,
    merge_counts,
    real_events,
)
from cep_core.engine.negation import EndNegation, kleene_exists
from cep_core.engine.reference_state import (
    ReferenceCall,
    ReferenceState,
    Waiting,
    state_field,
)
from cep_core.errors import QueryError
from cep_core.lookup import NotYet
from cep_core.plan import START, Plan

__all__ = ["ReferenceEngine"]


def _cost(edge: Any, e: dict) -> int:
    """The missing elements a transition adds: those it inserts before its state, and
    one when a placeholder takes the element (:mod:`cep_core.approx.placeholders`)."""
    return getattr(edge, "inserted", 0) + (type(e) is Placeholder)


class ReferenceEngine(CountMerging):
    """Runs one :class:`~cep_core.plan.Plan` over a stream, event by event (see module
    doc). ``output``: ``"events"`` (RETURN events, or the bindings when there is no
    RETURN) or ``"matches"`` ({var: event id, or list of ids for a Kleene variable}).
    The engine is the compiled plan; what it keeps of the stream is :attr:`stream_state`
    (a :class:`~cep_core.engine.reference_state.ReferenceState`, whose fields it reads as
    its own), and what processing one event needs is passed along in a
    :class:`~cep_core.engine.reference_state.ReferenceCall`."""

    name = "reference"
    counters, stats, live, waiting, now = (
        state_field(f) for f in ("counters", "stats", "live", "waiting", "now"))

    def __init__(self, plan: Plan, policy: str = ANY, output: str = "events",
                 input_filter: Callable[[dict], bool] | None = None,
                 state_filter: Callable[[list[PMView]], Iterable[PMView]] | None = None,
                 state_filter_every: str = "event", runs: str = EVERY_EVENT,
                 max_missing: int | None = None):
        check_options(policy, runs)
        if output not in OUTPUTS:
            raise QueryError(f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
        if state_filter_every not in ("event", "batch"):
            raise QueryError("state_filter_every must be 'event' or 'batch'")
        self.plan, self.policy, self.output, self.runs = plan, policy, output, runs
        self.input_filter, self.state_filter = input_filter, state_filter
        self.state_filter_every = state_filter_every
        #: what the engine keeps of the stream (its state, apart from the plan)
        self.stream_state = self.fresh_state()
        #: makes a PM: ``(state, bindings, first time, parent PM or None) -> PM``, or None
        #: when the PM is not to be created (early curbing, :mod:`cep_core.shedding`)
        self._new_pm: Callable[..., PM | None] = PM
        #: approximate matching (:mod:`cep_core.approx.insertions`): None without
        self.missing = None if max_missing is None else Insertions(plan, max_missing)
        if self.missing is not None:
            self._check = self._check_present
        #: insertions before the first and after the last event (not under strict
        #: contiguity, where an element is missing only between two events of the run)
        self._ends_insert = self.missing is not None and policy != STRICT
        #: one run per partition and error level (approximate matching, one run per
        #: partition): docs/decisions.md, "Approximate matching"
        self._levelled = self.missing is not None and self.missing.k > 0 \
            and runs == ONE_PER_PARTITION
        #: the types that may start a match
        self._starts = {*plan.out[START], *(self.missing.out.get(START, ())
                                            if self._ends_insert else ())}
        timed = output == "events" and plan.returns is not None and all(
            name != "time" for name, _ in plan.returns.fields)
        #: NEG before the first or after the last element (None without)
        self.ends = EndNegation(plan, self._check, timed) if (
            plan.lead_negs or plan.trail_negs) else None
        self._set_counting(output)

    def fresh_state(self) -> ReferenceState:
        """The state before any event."""
        return ReferenceState.fresh(self.plan)

    # ------------------------------------------------------------------ public
    def _process(self, e: dict, out: list, call: ReferenceCall | None = None) -> None:
        """Process ``e``, its outputs appended to ``out`` (``call``: the values of
        processing it, when the caller made them; a fresh :class:`ReferenceCall`
        otherwise)."""
        plan, st = self.plan, self.stream_state
        if self.input_filter is not None and not self.input_filter(e):
            st.stats.filtered += 1
            return
        typ, t = e["type"], e["time"]
        if plan.stream_type is not None and typ != plan.stream_type:
            return
        st.now = t
        st.counters.events += 1
        st.stats.event(typ, t)
        if t >= st.next_sweep:
            self._sweep(st, t)
        key = plan.key_of(e)
        if self.ends is not None:
            st.counters.outputs += self.ends.release_before(st.ends, t, out)
            if key is not None:
                queued = [w.queue[0]["time"] for w in st.waiting.get(key, ())]
                self.ends.observe(st.ends, e, key, min(queued, default=t))
        if call is None:
            call = ReferenceCall(out, key)
        else:
            call.key = key
        lost = self.missing is not None and is_lost(e)
        if lost:
            if self.policy != STRICT:
                return  # a placeholder is taken under strict contiguity only
            e = Placeholder(e)
        live, waiting = st.live, st.waiting
        if key is not None:
            waits = waiting.get(key)
            if waits:
                for w in waits:
                    w.queue.append(e)
            relevant = typ in plan.types or typ in plan.neg_types
            pms = live.get(key)
            if pms and (relevant or self.policy == STRICT):
                pms = self._advance(pms, e, call, relevant)
                if pms:
                    live[key] = pms
                else:
                    del live[key]
            if not lost and typ in self._starts and (self.runs == EVERY_EVENT or not (
                    key in waiting or self._run_at_level_0(key))):
                try:
                    born = self._begin(e, call)
                except NotYet:
                    self._wait(None, e, call)
                    born = []
                if born:
                    live.setdefault(key, []).extend(born)
            if self._levelled:
                self._settle_levels(call)
        if waiting:
            self._resolve(call)
        if self.state_filter is not None and self.state_filter_every == "event":
            self.apply_state_filter()

    @classmethod
    def refusal(cls, plan: Plan, options: Any) -> str | None:
        """Every option but ``output='sets'``, which only the graph engine gives."""
        if options.output != "sets":
            return None
        from cep_core.engine.graph import graph_unsupported

        return ("output='sets' (match sets enumerated on demand) needs the graph engine, "
                f"which does not apply: {graph_unsupported(plan) or f'it runs {ANY} only'}")

    def end_batch(self) -> None:
        """The state filter, when it applies once per batch."""
        if self.state_filter is not None and self.state_filter_every == "batch":
            self.apply_state_filter()

    def flush(self) -> list[dict]:
        """End of the stream so far: settle pending lookups and emit what they complete."""
        out: list[dict] = []
        st = self.stream_state
        if st.waiting:
            self.plan.lookups.settle()
            self._resolve(self._flush_call(out))
            if st.waiting:
                n = sum(len(w) for w in st.waiting.values())
                raise QueryError(f"{n} partial match(es) still wait for a lookup at the "
                                 "end of the stream (the lookup did not settle)")
        if self.ends is not None:
            st.counters.outputs += self.ends.flush(st.ends, out)
        if self._counting and len(out) > 1:
            merge_counts(self.plan, out, 0)
        return out

    def _flush_call(self, out: list) -> ReferenceCall:
        """The values of settling the pending lookups at a flush."""
        return ReferenceCall(out)

    def partial_matches(self) -> list[dict[str, Any]]:
        """The live PMs' bindings as event ids, partition by partition, in creation order."""
        return [match_ids(pm.bind) for pms in self.live.values() for pm in pms]

    def live_count(self) -> int:
        return sum(len(p) for p in self.live.values())

    def apply_state_filter(self, state_filter: Callable | None = None) -> None:
        """Keep only the live PMs that the state filter returns."""
        fn = state_filter or self.state_filter
        if fn is None or not self.live:
            return
        views = [PMView(pm, self.plan, self.now, key)
                 for key, pms in self.live.items() for pm in pms]
        keep = {id(v.pm) for v in fn(views)}
        for key in list(self.live):
            pms = [pm for pm in self.live[key] if id(pm) in keep]
            self.counters.pm_dropped += len(self.live[key]) - len(pms)
            if pms:
                self.live[key] = pms
            else:
                del self.live[key]

    # ------------------------------------------------------------------ internals
    def _run_at_level_0(self, key: Any) -> bool:
        """Whether ``key`` has a live run that a new one would duplicate: any, or with
        one run per error level (:attr:`_levelled`), one without errors."""
        pms = self.live.get(key)
        if not pms:
            return False
        return not self._levelled or any(pm.err == 0 for pm in pms)

    def _settle_levels(self, call: ReferenceCall) -> None:
        """One run per partition and error level: of the runs at one level, the one that
        started first stays; of the event's completions, those with the least error are
        emitted (docs/decisions.md, "Approximate matching")."""
        st, key = self.stream_state, call.key
        pms = st.live.get(key)
        if pms and len(pms) > 1:
            best: dict[int, PM] = {}
            for pm in pms:  # in creation order: the first of equal starts stays
                if pm.err not in best or pm.first_t < best[pm.err].first_t:
                    best[pm.err] = pm
            st.counters.pm_dropped += len(pms) - len(best)
            st.live[key] = sorted(best.values(), key=lambda pm: pm.err)
        held, st.held = st.held, []
        if held:
            least = min(rec["missing"] for _, rec in held)
            for bind, rec in held:
                if rec["missing"] == least:
                    self._output(bind, rec, call)

    def _sweep(self, st: ReferenceState, t: Any) -> None:
        """Drop PMs of every partition that the window has closed on."""
        tau = self.plan.window
        if tau == math.inf:
            st.next_sweep = math.inf
            return
        live = st.live
        for key in list(live):
            pms = live[key]
            alive = [pm for pm in pms if t - pm.first_t <= tau]
            if len(alive) != len(pms):
                st.counters.pm_dropped += len(pms) - len(alive)
                if alive:
                    live[key] = alive
                else:
                    del live[key]
        st.next_sweep = t + tau

    def _check(self, preds, b: dict) -> bool:
        st = self.stream_state
        return check_predicates(preds, b, st.counters, st.stats)

    def _check_present(self, preds, b: dict) -> bool:
        """:meth:`_check` of the predicates whose variables are all bound (approximate
        matching: an inserted element satisfies the predicates that read it)."""
        keys = b.keys()
        return check_predicates([p for p in preds if p.vars <= keys], b, self.counters,
                                self.stats)

    def _record(self, bind: dict, t: Any) -> dict:
        """The output of a complete match (may raise NotYet if RETURN reads a lookup); its
        bindings list real events only (RETURN reads placeholders, :func:`real_events`)."""
        if self.missing is not None and (self.output == "matches"
                                         or self.plan.returns is None):
            bind = real_events(bind)
        return match_record(self.plan, self.output, bind, t)

    def _emit(self, bind: dict, rec: dict, call: ReferenceCall) -> None:
        key = tuple(sorted((v, tuple(map(id, e)) if isinstance(e, tuple) else id(e))
                           for v, e in bind.items()))
        seen = call.seen
        if key in seen:
            if self.missing is not None:  # the same match again: keep its least error
                first = seen[key]
                first["missing"] = min(first["missing"], rec["missing"])
            return
        seen[key] = rec
        if self._levelled:  # settled with the other levels' completions
            self.stream_state.held.append((bind, rec))
            return
        self._output(bind, rec, call)

    def _output(self, bind: dict, rec: dict, call: ReferenceCall) -> None:
        st = self.stream_state
        if self.ends is not None and not self.ends.admit(st.ends, bind, rec, call.key):
            return  # violated by a leading NEG, or waiting for its window to close
        call.out.append(rec)
        st.counters.outputs += 1

    def _extend(self, bind: dict, state: int, e: dict) -> dict:
        dst = self.plan.positions[state]
        nb = dict(bind)
        nb[dst.var] = nb.get(dst.var, ()) + (e,) if dst.multi else e
        return nb

    def _completion(self, state: int, bind: dict, time, err: int = 0) -> Any:
        """The match record if ``bind`` reaching ``state`` completes a match (with
        ``err`` elements inserted so far, and any inserted after ``state``), else None."""
        plan = self.plan
        needs = plan.accept_needs.get(state)
        if needs and not all(v in bind for v in needs):
            return None  # an AND at the end with an element still unbound
        end, preds = state, plan.accept_preds.get(state, ())
        if self._ends_insert and not plan.positions[state].accepting:
            end_cost, end, skipped = self.missing.finish.get(state, (0, state, []))
            err += end_cost
            if err > self.missing.k:
                return None
            preds = [*skipped, *plan.accept_preds.get(end, ())]
        if plan.positions[end].accepting and self._check(preds, bind):
            rec = self._record(bind, time)
            if self.missing is not None:
                rec["missing"] = err
            return rec
        return None

    def _edges(self, state: int, typ: str, err: int) -> Iterable:
        """The transitions from ``state`` an event of type ``typ`` may take, with those
        that insert missing elements (up to the error left) after the plan's own."""
        edges = self.plan.out[state].get(typ, ())
        if self.missing is None or (state == START and not self._ends_insert):
            return edges
        inserting = self.missing.out.get(state, {}).get(typ, ())
        return [*edges, *(x for x in inserting if err + x.inserted <= self.missing.k)]

    def _begin(self, e: dict, call: ReferenceCall) -> list[PM]:
        plan = self.plan
        conts = []
        for edge in self._edges(START, e["type"], 0):
            nb = self._extend({}, edge.dst, e)
            if not self._check(edge.preds, nb):
                continue
            err = getattr(edge, "inserted", 0)
            conts.append((edge, nb, self._completion(edge.dst, nb, e["time"], err)))
        born = []
        for edge, nb, rec in conts:
            if rec is not None:
                self._emit(nb, rec, call)
            if plan.extendable[edge.dst]:
                pm = self._new_pm(edge.dst, nb, e["time"], None)
                if pm is not None:
                    pm.err = getattr(edge, "inserted", 0)
                    born.append(pm)
                    self.stream_state.counters.pm_created += 1
        return born

    def _neg_blocks(self, pm: PM, edge, nb: dict) -> bool:
        plan = self.plan
        for nid in edge.negs:
            if pm.blocked and nid in pm.blocked:
                return True
            cands = pm.cands.get(nid) if pm.cands else None
            if cands and plan.negs[nid].kleene:
                if kleene_exists(plan.negs[nid].var, cands, nb, plan.neg_preds.get(nid, ()),
                                 self._check):
                    return True
                continue
            if cands:
                late = edge.late.get(nid)
                if not late:
                    return True
                var = plan.negs[nid].var
                for ev in cands:
                    b2 = dict(nb)
                    b2[var] = ev
                    if self._check(late, b2):
                        return True
        return False

    def _step(self, pm: PM, e: dict) -> tuple[list, list[int]]:
        """The continuations of ``pm`` by ``e`` and the NEG elements ``e`` is a candidate
        for; no state is changed (so a NotYet leaves everything as it was)."""
        plan, typ = self.plan, e["type"]
        lost = type(e) is Placeholder  # taken as a missing element, never completing
        if lost and pm.err >= self.missing.k:
            return [], []  # no missing element left to fill it with
        conts = []
        for edge in self._edges(pm.state, typ, pm.err + lost):
            if (edge.fresh or edge.needs) and not edge.allows(pm.bind):
                continue
            nb = self._extend(pm.bind, edge.dst, e)
            if edge.negs and self._neg_blocks(pm, edge, nb):
                continue
            if not self._check(edge.preds, nb):
                continue
            if lost:
                conts.append((edge, nb, None))
                continue
            err = pm.err + _cost(edge, e)
            conts.append((edge, nb, self._completion(edge.dst, nb, e["time"], err)))
        watch = plan.neg_watch.get(pm.state)
        return conts, (self._neg_candidates(pm, e, watch) if watch else [])

    def _neg_candidates(self, pm: PM, e: dict, watch: dict) -> list[int]:
        """The NEG elements of ``pm``'s state that ``e`` is a candidate for (``watch``:
        the state's NEG elements by type)."""
        plan = self.plan
        negrec: list[int] = []
        for nid in watch.get(e["type"], ()):
            if pm.blocked and nid in pm.blocked:
                continue
            early = plan.neg_early.get((pm.state, nid))
            if early:
                nb = dict(pm.bind)
                nb[plan.negs[nid].var] = e
                if not self._check(early, nb):
                    continue
            negrec.append(nid)
        return negrec

    def _note_negs(self, pm: PM, negrec: list[int], e: dict) -> bool:
        """Record ``e`` as a NEG candidate of ``pm``; False when no way on is left."""
        plan = self.plan
        for nid in negrec:
            if plan.neg_flag[(pm.state, nid)]:
                if pm.blocked is None:
                    pm.blocked = set()
                pm.blocked.add(nid)
            else:
                if pm.cands is None:
                    pm.cands = {}
                pm.cands.setdefault(nid, []).append(e)
        if pm.blocked:
            return not all(any(n in pm.blocked for n in edge.negs)
                           for edge in plan.out_edges[pm.state])
        return True

    def _advance_one(self, pm: PM, e: dict, call: ReferenceCall, keep: list,
                     born: list) -> None:
        conts, negrec = self._step(pm, e)  # may raise NotYet
        plan, counters = self.plan, self.stream_state.counters
        counters.pm_extended += len(conts)
        for _, nb, rec in conts:
            if rec is not None:
                self._emit(nb, rec, call)
        if self.policy == ANY:
            if not negrec or self._note_negs(pm, negrec, e):
                keep.append(pm)
            else:
                counters.pm_dropped += 1
            for edge, nb, _ in conts:
                if plan.extendable[edge.dst]:
                    child = self._new_pm(edge.dst, nb, pm.first_t, pm)
                    if child is not None:
                        child.err = pm.err + _cost(edge, e)
                        born.append(child)
                        counters.pm_created += 1
            return
        for edge, nb, _ in conts:  # next-match / strict: the run's one continuation
            if plan.extendable[edge.dst]:
                child = self._new_pm(edge.dst, nb, pm.first_t, pm)
                if child is not None:
                    child.err = pm.err + _cost(edge, e)
                    keep.append(child)
                return
        if conts:
            return  # consumed by the match(es) it completed
        if self.policy == STRICT:
            counters.pm_dropped += 1
        elif not negrec or self._note_negs(pm, negrec, e):
            keep.append(pm)
        else:
            counters.pm_dropped += 1

    def _advance(self, pms: list[PM], e: dict, call: ReferenceCall,
                 relevant: bool) -> list[PM]:
        t, tau = e["time"], self.plan.window
        counters = self.stream_state.counters
        keep: list[PM] = []
        born: list[PM] = []
        # outside strict contiguity a PM with no transition and no NEG watch for this
        # type keeps as it is (what _advance_one would do, without its work)
        typ = e["type"]
        inserting = self.missing.out if self.missing is not None else {}
        idle = None if self.policy == STRICT else {
            q for q, by_type in self.plan.out.items()
            if typ not in by_type and typ not in self.plan.neg_watch.get(q, {})
            and typ not in inserting.get(q, {})}
        for pm in pms:
            if t - pm.first_t > tau:
                counters.pm_dropped += 1
                continue
            if not relevant:  # strict contiguity: an event the PM cannot take
                counters.pm_dropped += 1
                continue
            if idle is not None and pm.state in idle:
                keep.append(pm)
                continue
            try:
                self._advance_one(pm, e, call, keep, born)
            except NotYet:
                self._wait(pm, e, call)
        keep.extend(born)
        return keep

    # ------------------------------------------------------------------ pending lookups
    def _wait(self, pm: PM | None, e: dict, call: ReferenceCall) -> None:
        st = self.stream_state
        w = Waiting(pm, [e], call.key)
        st.waiting.setdefault(call.key, []).append(w)
        call.waitlog.append(w)
        st.stats.pending += 1

    def _replay(self, w: Waiting, call: ReferenceCall) -> list[PM]:
        """Catch a waiting PM up with its queued events (``call.key`` is its partition);
        raises NotYet (leaving ``w`` as it was) if the first event still cannot be
        processed."""
        plan, queue, waitlog = self.plan, w.queue, call.waitlog
        e0 = queue[0]
        call.seen = {}
        single = self.runs == ONE_PER_PARTITION
        if w.pm is None:
            pms = self._begin(e0, call)
        else:
            keep: list[PM] = []
            born: list[PM] = []
            if e0["time"] - w.pm.first_t > plan.window:
                self.stream_state.counters.pm_dropped += 1
            else:
                self._advance_one(w.pm, e0, call, keep, born)
            pms = keep + born
            if single and not pms and e0["type"] in self._starts:
                try:
                    pms = self._begin(e0, call)
                except NotYet:
                    w.pm = None  # the run is settled; what waits now is e0's start
                    raise
        for j in range(1, len(queue)):
            if not pms and not single:
                break
            ev = queue[j]
            mark = len(waitlog)
            call.seen = {}
            relevant = ev["type"] in plan.types or ev["type"] in plan.neg_types
            if pms and (relevant or self.policy == STRICT):
                pms = self._advance(pms, ev, call, relevant)
            if single and not pms and len(waitlog) == mark \
                    and ev["type"] in self._starts:
                try:  # one run per partition: the queued events' starts happen here
                    pms = self._begin(ev, call)
                except NotYet:
                    self._wait(None, ev, call)
            for w2 in waitlog[mark:]:
                w2.queue.extend(queue[j + 1:])
            if single and len(waitlog) > mark:
                break  # the rest of the queue went to the new waiting run
        return pms

    def _resolve(self, call: ReferenceCall) -> None:
        st = self.stream_state
        for key in list(st.waiting):
            call.key = key
            entries = st.waiting.pop(key)
            still = []
            for w in entries:
                try:
                    pms = self._replay(w, call)
                except NotYet:
                    still.append(w)
                    continue
                if pms:
                    st.live.setdefault(key, []).extend(pms)
            if still:
                st.waiting.setdefault(key, [])[:0] = still
