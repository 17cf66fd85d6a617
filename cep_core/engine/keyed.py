"""The keyed vectorized engine: one run per partition key, state in numpy arrays.

It runs the same plan with the same semantics as the reference engine
(:mod:`cep_core.engine.reference`) for the class of queries whose partial matches per
key are bounded by one, and it is exact there (a differential test runs both engines on
random streams and random queries of the class and requires identical outputs).

**The class.** A pattern query is accepted when

* ``WHERE`` has ``SAME[k1, ..]`` (the partition key);
* the pattern is a flat ``SEQ`` of elements ``T v`` and Kleene elements ``T+ v[]``, with
  ``NEG T n`` between two of them, before the first or after the last (no ``OR``,
  ``AND``, ``SEQ(..)+`` or ``NEG T+ n[]``), and there is a ``RETURN``;
* every predicate and ``RETURN`` argument compiles to numpy
  (:mod:`cep_core.engine.vectorize`): arithmetic ``+ - * /``, comparisons, ``AND OR
  NOT``, ``IN {constants}``, ``abs min max floor ceil round``, ``v.attr``, ``v[i]``
  with ``v[i+1]`` (at most one event apart), ``v[1]``, ``v[last]``, ``v[n]``,
  ``LENGTH(v+[])``, parameters, and lookups into parameter tables; no aggregates and no
  predicate over every ``i`` of a finished Kleene variable;
* it runs under skip-till-next-match or strict contiguity with
  ``runs="one-per-partition"``, so each key has at most one live partial match, and
  without input or state filters.

Events must carry every attribute the query reads (a missing one is an error, as in
the reference engine when it reads it), times are numbers, and integers stay within
int64.

**Execution.** A fed batch is split into waves: wave ``r`` holds the ``r``-th event of
every key in the batch, so within a wave every key occurs once and the wave is
processed with array operations: the window check, then, per automaton state, every
transition's predicates in plan order on the rows that passed the previous ones (lookups
last, on fewer rows), the completions, the run's one continuation (the Kleene ``take``
first, as in the reference engine's rule), and the starts of keys that have no run.
Per key, events are processed in stream order; outputs are sorted back into stream
order. ``NEG`` elements keep per key a flag or candidates while the run waits before
them, the recent events of a leading ``NEG``'s type, and the matches waiting for a
trailing ``NEG``'s window to close, which are output at the first event after it or by
``flush()`` (:mod:`cep_core.engine.keyed_negation`). A query of one Kleene element
under strict contiguity (Listing 6.1) takes a whole batch at once instead, by scans
over the events sorted by key (:mod:`cep_core.engine.segment_scan`), when the batch
allows it. Counters match the reference engine's, except ``pm_dropped`` for windows:
here a run the window closed on is dropped when its key's next event arrives.

**Approximate matching** (``max_missing=k``, Li and Ge, VLDB 2016; docs/decisions.md,
"Approximate matching"), for a pattern of one element without NEG and without ``AND`` or
``OR`` inside a predicate (:func:`keyed_missing_problem`): under strict contiguity each
key holds one run per error level 0..k, at the state position ``key·(k+1) + level``. A
placeholder (an event with a true ``lost``, :mod:`cep_core.approx.placeholders`) moves
every run of its key one level up (the run at level k cannot take it and ends) and is
offered to them, never completing or starting a match; a predicate that reads an
attribute the placeholder lacks holds (the stored values keep a flag for it). A real
event is offered to level 0 and to the levels where a run lives, starts a run at level 0
when there is none, and of its completions those of the least level are output, each
with ``missing`` = its level. Under skip-till-next-match placeholders are skipped.
"""

from __future__ import annotations

import math
from operator import attrgetter
from typing import Any

import numpy as np
import pandas as pd

from cep_core.counters import WorkBy
from cep_core.engine.keyed_batch import Batch, Outputs, equal_runs, value_codes, waves
from cep_core.engine.keyed_negation import KeyedNegation
from cep_core.engine.keyed_plan import (
    KEYED_POLICIES,
    KEYED_SCOPE,
    keyed_missing_problem,
    keyed_plan,
    keyed_refusal,
    keyed_unsupported,
)
from cep_core.engine.keyed_state import KeyedCall, KeyedState
from cep_core.engine.keyed_values import WaveValues
from cep_core.engine.matching import ONE_PER_PARTITION, STRICT
from cep_core.engine.protocol import EngineBase
from cep_core.engine.segment_scan import scan_batch, scan_supported
from cep_core.engine.vectorize import fields, passes
from cep_core.errors import QueryError
from cep_core.plan import START, Plan

__all__ = ["KeyedEngine", "KEYED_POLICIES"]

_BEGIN = 1 << 20  # starts emit after the continuations of the same event


def _of_state(name: str) -> property:
    """The engine's view of a field of its :class:`KeyedState`."""
    return property(attrgetter(f"stream_state.{name}"),
                    doc=f"The ``{name}`` of :attr:`KeyedEngine.stream_state`.")


class KeyedEngine(EngineBase):
    """Runs a plan of the keyed class (module doc) over batches of events. The engine is
    the compiled plan; what it keeps of the stream is :attr:`stream_state` (a
    :class:`~cep_core.engine.keyed_state.KeyedState`, whose fields it reads as its own),
    and what one call of :meth:`feed` needs is passed along in a
    :class:`~cep_core.engine.keyed_state.KeyedCall`."""

    name = "keyed-vectorized"
    refusal, scope = staticmethod(keyed_refusal), KEYED_SCOPE  # options it runs
    state, first_t, length, store, store_lost, keyindex, counters, stats, events_fed = (
        _of_state(f) for f in ("state", "first_t", "length", "store", "store_lost",
                               "keyindex", "counters", "stats", "events_fed"))

    def __init__(self, plan: Plan, policy: str, max_missing: int | None = None):
        reason = keyed_unsupported(plan)
        if reason is None and max_missing:
            reason = keyed_missing_problem(plan)
        if reason is not None:
            raise QueryError(f"the keyed vectorized engine does not run this query: {reason}")
        if policy not in KEYED_POLICIES:
            raise QueryError(f"the keyed vectorized engine runs {' and '.join(KEYED_POLICIES)}"
                             f", not {policy}")
        self.plan, self.policy, self.runs = plan, policy, ONE_PER_PARTITION
        #: approximate matching (module doc): the placeholders a match may hold, and the
        #: runs per partition key (one per error level under strict contiguity)
        self.k = max_missing or 0
        self.levels = self.k + 1 if policy == STRICT else 1
        self.work: WorkBy | None = None  # the last batch's work by a column (feed's work_by)
        self._setup()
        #: the NEG elements (:mod:`cep_core.engine.keyed_negation`), None without
        self.neg = KeyedNegation(self) if plan.negs else None
        #: what the engine keeps of the stream (its state, apart from the plan)
        self.stream_state = KeyedState.fresh(
            plan, self.neg.fresh_state() if self.neg is not None else None)

    def _setup(self) -> None:
        plan = self.plan
        self.c = keyed_plan(plan)
        self.scan = not self.k and scan_supported(self)
        self.types = {t: j for j, t in enumerate(sorted(plan.types | plan.neg_types))}
        stores: dict[tuple, None] = {}
        for r in self.c.refs:
            if r[0] != "attr":
                continue
            _, v, slot, a, n = r
            if slot == "back0" or plan.variables[v].neg:
                continue  # the new event itself (see WaveValues.ref), or a NEG element's
            kind = "last" if slot == "back1" else slot
            stores[(kind, v, a, n if kind == "nth" else 0)] = None
        self.store_keys = list(stores)
        self.attrs = sorted({k[2] for k in stores} | {r[3] for r in self.c.refs
                                                       if r[0] == "attr"} | set(plan.partition))

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["c"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.c = keyed_plan(self.plan)

    # ------------------------------------------------------------------ public
    def reads_frame(self, events: Any) -> bool:
        return hasattr(events, "columns")

    def statistics(self) -> dict[str, Any]:
        return self.stats.as_dict()

    def feed(self, events: Any, frame: bool = False, keep: np.ndarray | None = None,
             work_by: str | None = None, first_id: int | None = None
             ) -> list[dict] | pd.DataFrame:
        """Process a batch (a list of event dicts or a DataFrame); the outputs in stream
        order, as dicts or (``frame=True``) as a DataFrame with one column per field.
        ``keep``: the input filter as a mask over the batch (load shedding, §4.2.2): an
        event it drops is not processed and changes no state (Eq. 4.2), not even a
        strictly contiguous run's. ``work_by``: a column of the events; the batch's work
        per value of it is then left in :attr:`work` (:class:`~cep_core.counters.WorkBy`;
        what a trailing NEG releases at the end of the batch counts at its last event).
        ``first_id``: the stream position of the batch's first event (else the count)."""
        st = self.stream_state
        if first_id is not None:
            st.events_fed = first_id
        b = Batch(events, self.attrs, st.events_fed, placeholders=bool(self.k))
        st.events_fed += b.n
        out = self._outputs()
        self.work = None
        by = None if work_by is None else value_codes(events, work_by, b.n)
        tally = None if by is None else np.zeros((len(WorkBy.FIELDS), len(by[1])),
                                                 dtype=np.int64)
        if b.n == 0:
            if by is not None:
                self.work = WorkBy.of(work_by, by[1], tally)
            return out.result(frame)
        names, typ_all = b.type_names, b.type_codes
        if keep is None:
            keep = np.ones(b.n, dtype=bool)
        else:
            keep = np.array(keep, dtype=bool)
            if keep.shape != (b.n,):
                raise QueryError(f"keep must be one flag per event of the batch ({b.n}), "
                                 f"not of shape {keep.shape}")
            st.stats.filtered += int(b.n - keep.sum())
        if self.plan.stream_type is not None:
            keep &= np.asarray([x == self.plan.stream_type for x in names])[typ_all]
        self._count_events(b, keep, names, typ_all)
        if by is not None:
            tally[0] += np.bincount(by[0][keep], minlength=len(by[1]))
        seen = np.flatnonzero(keep)  # the events processed (a trailing NEG's clock)
        for a in self.plan.partition:
            if a in b.missing:
                keep &= ~b.missing[a]
        typ = np.array([self.types.get(x, -1) for x in names], dtype=np.int64)[typ_all]
        if self.policy != STRICT:
            keep &= typ >= 0
        if self.k and self.levels == 1:
            keep &= ~b.lost  # a placeholder is taken under strict contiguity only
        rows = np.flatnonzero(keep)
        call = KeyedCall(typ, None if by is None else by[0], tally)
        if rows.size:
            kid = st.keyindex.ids([b.cols[a][rows] for a in self.plan.partition])
            st.grow(st.keyindex.size * self.levels)
            if self.neg is not None:
                call.neg_batch = self.neg.begin_batch(self, b, rows, kid, typ[rows],
                                                      st.events_fed - b.n)
            if not (self.scan and scan_batch(self, call, b, rows, kid, typ[rows], out)):
                steps = b.steps if rows.size == b.n else np.diff(b.cols["time"][rows])
                if by is None:
                    self._waves(call, b, rows, kid, steps, out)
                for lo, hi in () if by is None else equal_runs(by[0][rows]):
                    before = self._work_done()
                    self._waves(call, b, rows[lo:hi], kid[lo:hi], steps[lo:hi - 1], out)
                    tally[1:, by[0][rows[lo]]] += self._work_done() - before
        if self.neg is not None:
            before = self._work_done()
            self.neg.end_batch(self, call.neg_batch, b, seen, out)
            if by is not None and seen.size:
                tally[1:, by[0][seen[-1]]] += self._work_done() - before
        if by is not None:
            self.work = WorkBy.of(work_by, by[1], tally)
        return out.result(frame)

    def _waves(self, call: KeyedCall, b: Batch, rows: np.ndarray, kid: np.ndarray,
               steps: np.ndarray, out: Outputs) -> None:
        """Process the events at ``rows`` (keys ``kid``, time ``steps`` between them) wave
        by wave (:func:`~cep_core.engine.keyed_batch.waves`)."""
        typ = call.typ
        for sel in waves(kid, steps):
            if self.levels == 1:
                self._wave(call, b, rows[sel], kid[sel], typ[rows[sel]], out)
            else:
                self._levelled_wave(call, b, rows[sel], kid[sel], typ[rows[sel]], out)

    def _work_done(self) -> np.ndarray:
        """(pm_created, pm_extended, outputs) so far, for :class:`WorkBy` tallies."""
        c = self.counters
        return np.array([c.pm_created, c.pm_extended, c.outputs], dtype=np.int64)

    def _outputs(self) -> Outputs:
        names = [n for n, _ in self.c.returns] + ["missing"] * bool(self.k)
        return Outputs(self.plan.returns.type, names)

    def flush(self) -> list[dict]:
        """The end of the stream: the matches still waiting for a trailing NEG's window."""
        out = self._outputs()
        if self.neg is not None:
            self.neg.flush(self, out)
        return out.result(False)

    def settled(self) -> bool:
        """Whether :meth:`flush` has nothing to do: no trailing NEG whose window a match
        may still wait for."""
        return self.neg is None

    def reload_tables(self, *names: str) -> None:
        """Re-read lookup tables (DataFrames) whose values changed in place, their rows
        and columns the same (:meth:`cep_core.query.Session.reload_tables`)."""
        for name in names:
            route = self.plan.lookups.routes.get(name)
            if route is None:
                raise QueryError(f"{name}[..] is not a lookup of this query")
            route.changed(name)
            index = self.c.indexes.get(name)
            if index is not None:
                index.reload()

    def partial_matches(self) -> list[dict[str, Any]]:
        raise QueryError("the keyed vectorized engine keeps no event bindings; run the "
                         "reference engine for partial matches")

    def live_count(self) -> int:
        return int((self.state >= 0).sum())

    def track(self, *labels: str) -> None:
        """Keep the latest value of each ``"var.attr"`` for :meth:`live_runs` (from the
        next event on), also where the query itself does not read it again."""
        for label in labels:
            var, attr = label.split(".", 1)
            if attr in self.plan.partition or var not in self.plan.variables:
                continue
            key = ("last", var, attr, 0)
            if key not in self.store_keys and ("single", var, attr, 0) not in self.store_keys:
                self.store_keys.append(key)
                self.attrs = sorted({*self.attrs, attr})

    def live_runs(self, *attrs: str) -> dict[str, np.ndarray]:
        """The live runs as columns (for a state filter, §4.2.2): the partition key's
        attributes, ``state`` (0-based automaton state), ``first_time``, the length of
        each Kleene variable (``length_<var>``) and, per ``attrs`` entry ``"var.attr"``,
        the attribute of the variable's latest event."""
        live = np.flatnonzero(self.state >= 0)
        out = dict(zip(self.plan.partition, self.keyindex.values(live), strict=True))
        out["state"] = self.state[live].astype(np.int64)
        out["first_time"] = self.first_t[live]
        for v, n in self.length.items():
            out[f"length_{v}"] = n[live]
        for label in attrs:
            var, attr = label.split(".", 1)
            col = self.store.get(("last", var, attr, 0), self.store.get(
                ("single", var, attr, 0)))
            if col is None:
                raise QueryError(f"live_runs(): {label} is not kept by this query's plan")
            out[label] = col[live]
        return out

    def event_tests(self, events: Any, indices: list[int]) -> np.ndarray:
        """(events, predicates) whether each event of a batch passes each predicate of
        ``indices`` that reads only the new event (an event of another type, or whose
        lookup key is missing, does not pass): the input side of load shedding."""
        b = Batch(events, self.attrs, 0)
        out = np.zeros((b.n, len(indices)), dtype=bool)
        if not b.n:
            return out
        call = KeyedCall(np.array([self.types.get(x, -1) for x in b.type_names],
                                  dtype=np.int64)[b.type_codes])
        for j, index in enumerate(indices):
            if index not in self.c.local:
                raise QueryError(f"predicate {self.plan.preds[index].text} does not read "
                                 "the new event alone")
            holds, missing = self._local_values(call, index, b)
            out[:, j] = holds if missing is None else holds & ~missing
        return out

    def drop_runs(self, *keys: np.ndarray) -> int:
        """The state filter (§4.2.2): drop the live runs of these partition keys (one
        array per partition attribute); the number dropped."""
        ids = self.keyindex.find([np.asarray(k) for k in keys])
        ids = ids[ids >= 0]
        ids = ids[self.state[ids] >= 0]
        self.state[ids] = -1
        self.counters.pm_dropped += ids.size
        return int(ids.size)

    # ------------------------------------------------------------------ internals
    def _count_events(self, b: Batch, keep: np.ndarray, names: list[str],
                      codes: np.ndarray) -> None:
        n = int(keep.sum())
        self.counters.events += n
        if not n:
            return
        every = n == b.n
        counts = np.bincount(codes if every else codes[keep], minlength=len(names))
        for t, c in zip(names, counts.tolist(), strict=True):
            if c:
                self.stats.events_per_type[t] = self.stats.events_per_type.get(t, 0) + c
        times = b.cols["time"] if every else b.cols["time"][keep]
        if self.stats.first_time is None:
            self.stats.first_time = times[0].item()
        self.stats.last_time = times[-1].item()

    def _store(self, store_key: tuple, keys: np.ndarray, b: Batch, rows: np.ndarray
               ) -> None:
        """Keep attribute ``store_key[2]`` of the events ``rows`` for the runs ``keys``
        (and, with placeholders, whether the value is one a placeholder lacked)."""
        a, st = store_key[2], self.stream_state
        st.put(store_key, keys, b.column(a, rows))
        if b.lost is not None:
            flags = st.store_lost.get(store_key)
            if flags is None:
                flags = st.store_lost[store_key] = np.zeros(len(st.state), dtype=bool)
            flags[keys] = b.unknown(a, rows)

    def _check(self, call, preds, b, rows, keys, var, take, newlen) -> np.ndarray:
        """Positions (into ``rows``) that pass ``preds`` in order, counting evaluations."""
        at = np.arange(len(rows))
        stats, counters = self.stats, self.counters
        for p in preds:
            if not at.size:
                break
            pred, fn, lo = self.c.preds[p.index]
            counters.predicates += at.size
            stats.pred_evaluated[p.index] += at.size
            if p.index in self.c.local and pred.mode != "incremental" or lo == 0 and \
                    pred.anchor_offset == 0 and p.index in self.c.local:
                holds, missing = self._local_values(call, p.index, b)
                sub = rows[at]
                if missing is None or not missing[sub].any():
                    at = at[holds[sub]]
                    stats.pred_passed[p.index] += at.size
                    continue
            nl = newlen[at] if newlen is not None else None
            ok = np.ones(at.size, dtype=bool)
            test = np.arange(at.size)
            if pred.mode == "incremental":
                test = np.flatnonzero(nl - 1 - pred.anchor_offset >= lo)
            if test.size:
                sub = at[test]
                local = self._local_values(call, p.index, b) if p.index in self.c.local \
                    else None
                if local is not None and (local[1] is None or not local[1][rows[sub]].any()):
                    ok[test] = local[0][rows[sub]]
                else:  # (a missing lookup key among these rows raises here)
                    deferred = np.zeros(test.size, bool) if b.lost is not None else None
                    env = WaveValues(self, b, rows[sub], keys[sub], var, take,
                               nl[test] if nl is not None else None, deferred)
                    ok[test] = passes(fn(env), test.size)
                    if env.lost is not None:
                        ok[test] |= env.lost  # a placeholder's unknown value holds
                        if (deferred & ~env.lost).any():  # raise the missing entry's error
                            bad = sub[deferred & ~env.lost]
                            fn(WaveValues(self, b, rows[bad], keys[bad], var, take, None
                                    if nl is None else nl[test][deferred & ~env.lost]))
            at = at[ok]
            stats.pred_passed[p.index] += at.size
        return at

    def _local_values(self, call: KeyedCall, index: int, b: Batch) -> tuple:
        """``(holds, missing)`` of a predicate that reads only the new event, over all
        events of the batch (computed on first use); ``missing`` marks events whose
        lookup key is not in its table (None if there are none)."""
        got = call.pre.get(index)
        if got is None:
            typ, var = self.c.local[index]
            of_type = call.typ == self.types[typ]
            rows = slice(None) if of_type.all() else np.flatnonzero(of_type)
            size = b.n if isinstance(rows, slice) else rows.size
            deferred = np.zeros(size, dtype=bool)
            env = WaveValues(self, b, rows, None, var, False, None, deferred)
            holds = np.zeros(b.n, dtype=bool)
            holds[rows] = passes(self.c.preds[index][1](env), size)
            if env.lost is not None:
                holds[rows] |= env.lost  # a placeholder's unknown value holds
                deferred &= ~env.lost
            missing = None
            if deferred.any():
                missing = np.zeros(b.n, dtype=bool)
                missing[rows] = deferred
            got = call.pre[index] = (holds, missing)
        return got

    def _transition(self, call, edge, b, rows, keys, lens, accept: bool = True):
        """The events ``rows`` of runs ``keys`` (Kleene lengths ``lens`` at the source, or
        None) offered to ``edge``: ``(passed, completed, newlen)`` — the positions that
        take it, those among them that complete a match (positions into ``passed``; none
        without ``accept``: placeholders), and the Kleene length after it for the passed
        ones (or None)."""
        plan = self.plan
        dst = plan.positions[edge.dst]
        take = edge.kind == "take"
        newlen = None
        if dst.kleene:
            newlen = lens + 1 if take else np.ones(rows.size, dtype=np.int64)
        ok = self._check(call, edge.preds, b, rows, keys, dst.var, take, newlen)
        nl = newlen[ok] if newlen is not None else None
        if not dst.accepting or not ok.size or not accept:
            return ok, ok[:0], nl
        acc = self._check(call, plan.accept_preds.get(edge.dst, ()), b, rows[ok], keys[ok],
                          dst.var, take, nl)
        return ok, acc, nl

    def _emit(self, call, edge, b, rows, keys, newlen, sub: int, out: Outputs) -> None:
        """Output events for the events ``rows`` whose runs ``keys`` completed a match
        through ``edge``: those that the NEG elements at the pattern's ends let out now."""
        n = rows.size
        if not n:
            return
        dst = self.plan.positions[edge.dst]
        env = WaveValues(self, b, rows, keys, dst.var, edge.kind == "take", newlen)
        if self.neg is not None and (self.neg.lead or self.neg.trail):
            first_t = b.cols["time"][rows] if edge.kind == "begin" else self.first_t[keys]
            now = self.neg.admit(self, call, env, first_t, sub)
            if not now.all():
                rows, keys = rows[now], keys[now]
                newlen = newlen[now] if newlen is not None else None
                env = WaveValues(self, b, rows, keys, dst.var, edge.kind == "take", newlen)
                n = rows.size
                if not n:
                    return
        if not self.k:
            out.add(rows, sub, fields([fn for _, fn in self.c.returns], env, n),
                    b.cols["time"][rows])
            self.counters.outputs += n
            return
        got = []
        for _, fn in self.c.returns:  # a value a placeholder lacks is None
            env.lost[:] = False
            ((vals, bad),) = fields([fn], env, n)
            if env.lost.any():
                bad = env.lost.copy() if bad is None else bad | env.lost
            got.append((vals, bad))
        level = keys % self.levels
        got.append((level, None))
        if call.held is not None:
            call.held.append((rows, sub, got, b.cols["time"][rows], level))
            return
        out.add(rows, sub, got, b.cols["time"][rows])
        self.counters.outputs += n

    def _enter(self, edge, b, rows, keys, t) -> None:
        """Move the runs of ``keys`` along ``edge`` with the events ``rows``."""
        plan, st = self.plan, self.stream_state
        dst = plan.positions[edge.dst]
        st.state[keys] = edge.dst
        if st.neg is not None:
            st.neg.reset(keys)
        if edge.kind == "begin":
            self.first_t[keys] = t
            for v in self.length:
                self.length[v][keys] = 0
        v = dst.var
        if dst.kleene:
            if edge.kind == "take":
                self.length[v][keys] += 1
            else:
                self.length[v][keys] = 1
            lengths = self.length[v][keys]
        for sk in self.store_keys:
            kind, sv, a, n = sk
            if sv != v:
                continue
            if kind == "single" or kind == "last" or (kind == "first" and edge.kind != "take"):
                self._store(sk, keys, b, rows)
            elif kind == "nth":
                hit = lengths == n
                if hit.any():
                    self._store(sk, keys[hit], b, rows[hit])

    def _levelled_wave(self, call: KeyedCall, b: Batch, rows, kid, typ, out: Outputs
                       ) -> None:
        """One wave with one run per key and error level (approximate matching under
        strict contiguity, module doc): a placeholder moves every run of its key one level
        up (a run at the top level cannot take it) and is offered to them, never
        completing or starting a match; a real event is offered to every level, starts a
        run at level 0 when it has none, and of its completions those of the least error
        are output."""
        levels = self.levels
        lost = b.lost[rows]
        if lost.any():
            base = kid[lost] * levels
            self.counters.pm_dropped += int((self.state[base + levels - 1] >= 0).sum())
            for lev in range(levels - 1, 0, -1):
                self.stream_state.move_runs(base + lev - 1, base + lev)
            self.state[base] = -1
            up = levels - 1
            self._wave(call, b, np.repeat(rows[lost], up),
                       (base[:, None] + np.arange(1, levels)).ravel(),
                       np.repeat(typ[lost], up), out, placeholder=True)
        real = ~lost
        if real.any():
            # every level 0 (a run may start there), the higher levels where a run lives
            vkeys = ((kid[real] * levels)[:, None] + np.arange(levels)).ravel()
            at = np.flatnonzero((vkeys % levels == 0) | (self.state[vkeys] >= 0))
            call.held = held = []
            try:
                self._wave(call, b, np.repeat(rows[real], levels)[at], vkeys[at],
                           np.repeat(typ[real], levels)[at], out)
            finally:
                call.held = None
            self._settle(b, held, out)

    def _settle(self, b: Batch, held: list[tuple], out: Outputs) -> None:
        """Of a levelled wave's outputs, those of the least error at each event."""
        if not held:
            return
        least = np.full(b.n, self.levels, dtype=np.int64)
        for rows, _, _, _, level in held:
            np.minimum.at(least, rows, level)
        for rows, sub, got, times, level in held:
            keep = level == least[rows]
            if not keep.all():
                rows, times = rows[keep], times[keep]
                sub = sub[keep] if isinstance(sub, np.ndarray) else sub
                got = [(vals[keep], None if bad is None else bad[keep]) for vals, bad in got]
            if rows.size:
                out.add(rows, sub, got, times)
                self.counters.outputs += rows.size

    def _wave(self, call: KeyedCall, b: Batch, rows, keys, typ, out: Outputs,
              placeholder: bool = False) -> None:
        """One event per key (``placeholder``: placeholders, which runs take as missing
        elements and which neither complete nor start a match)."""
        plan, counters = self.plan, self.counters
        t = b.cols["time"][rows]
        s = self.state[keys]
        if plan.window != math.inf:
            expired = (s >= 0) & (t - self.first_t[keys] > plan.window)
            if expired.any():
                counters.pm_dropped += int(expired.sum())
                self.state[keys[expired]] = -1
                s = np.where(expired, -1, s)
        live = s[s >= 0]
        for q in np.flatnonzero(np.bincount(live)).tolist() if live.size else ():
            at = np.flatnonzero(s == q)
            edges = plan.out_edges[q]
            taken = np.full(at.size, -1)
            anypass = np.zeros(at.size, dtype=bool)
            entering = []
            qpos = plan.positions[q]
            grows, gkeys, gtyp = rows[at], keys[at], typ[at]
            glens = self.length[qpos.var][gkeys] if qpos.kleene else None
            for ei, edge in enumerate(edges):
                dst = plan.positions[edge.dst]
                cand = np.flatnonzero(gtyp == self.types[dst.type])
                if cand.size and edge.negs:
                    ones = np.ones(cand.size, dtype=np.int64) if dst.kleene else None
                    env = WaveValues(self, b, grows[cand], gkeys[cand], dst.var, False, ones)
                    cand = cand[~self.neg.blocks(self, edge, env)]
                if not cand.size:
                    entering.append(None)
                    continue
                if cand.size == at.size:
                    cand = slice(None)
                ok, acc, nl = self._transition(call, edge, b, grows[cand], gkeys[cand],
                                               glens[cand] if glens is not None else None,
                                               accept=not placeholder)
                loc = np.arange(at.size)[cand][ok]
                counters.pm_extended += loc.size
                done = loc[acc]
                self._emit(call, edge, b, grows[done], gkeys[done], nl[acc] if nl is not None
                           else None, ei, out)
                anypass[loc] = True
                if plan.extendable[edge.dst]:
                    free = loc[taken[loc] == -1]
                    taken[free] = ei
                entering.append(edge)
            if self.neg is not None:
                gone = at[self.neg.watch(self, call, q, b, grows, gkeys, gtyp, ~anypass)]
                counters.pm_dropped += gone.size
                self.state[keys[gone]] = -1
            for ei, edge in enumerate(entering):
                if edge is None:
                    continue
                go = at[taken == ei]
                if go.size:
                    self._enter(edge, b, rows[go], keys[go], t[go])
            ended = at[anypass & (taken == -1)]
            self.state[keys[ended]] = -1
            if self.policy == STRICT:
                gone = at[~anypass]
                counters.pm_dropped += gone.size
                self.state[keys[gone]] = -1
        if placeholder:
            return
        begin = plan.out_edges[START][0]
        code = self.types[plan.positions[begin.dst].type]
        free = (typ == code) & (self.state[keys] < 0)
        if self.levels > 1:
            free &= keys % self.levels == 0  # a new run has no errors
        at = np.flatnonzero(free)
        if not at.size:
            return
        ok, acc, nl = self._transition(call, begin, b, rows[at], keys[at], None)
        passed = at[ok]
        done = passed[acc]
        self._emit(call, begin, b, rows[done], keys[done], nl[acc] if nl is not None
                   else None, _BEGIN, out)
        if plan.extendable[begin.dst] and passed.size:
            counters.pm_created += passed.size
            self._enter(begin, b, rows[passed], keys[passed], t[passed])
