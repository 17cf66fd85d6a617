"""NEG on the keyed vectorized engine (:mod:`cep_core.engine.keyed`): between two elements
and at a pattern's ends, with the reference engine's semantics.

The NEG of the dissertation's language (§2.2.1, Q4 of Listing 4.2) as the reference
engine runs it (:mod:`cep_core.engine.reference`, NEG; :mod:`cep_core.engine.negation`),
in the readings of docs/decisions.md, "Negation between pattern elements" and "Negation
at a pattern's ends and on Kleene elements". A key has at most one run, so what a NEG
keeps is per key, in arrays:

* **between** ``x`` and ``y``: an event of the NEG's type that passes its predicates
  reading ``x`` and earlier (*early*) is offered while the run waits at ``x``. Under
  skip-till-next-match, if the run takes no transition with it, it blocks ``x -> y``
  (a flag per key) or, when a predicate of the NEG reads ``y`` (*late*), becomes a
  candidate (a row of a store, valid while the run stays where it is), and a ``y`` is
  skipped when some candidate passes the late predicates with it. A blocked run at a
  single ``x`` has no way on and is dropped, so an event of the key may start the next
  run; at a Kleene ``x`` it waits for ``x`` to take another event, which clears the
  flag and the candidates. Under strict contiguity an event the run does not take ends
  it, so a NEG between elements never blocks (its early predicates are still counted).
* **leading** ``SEQ(NEG T n, ..)``: per NEG the key's recent events of ``T``; a match
  completing at ``t`` is violated by one with ``t − WITHIN ≤ n.t < first.t`` that passes
  the NEG's predicates with the match's bindings.
* **trailing** ``SEQ(.., NEG T n)``: a completed match waits with its ``RETURN`` fields
  and the values its NEG predicates read; an event of ``T`` of its key with ``last.t <
  n.t ≤ first.t + WITHIN`` that passes them kills it; otherwise it is output at the first
  event of the stream after ``first.t + WITHIN`` (before that event's own outputs),
  its ``time`` being ``first.t + WITHIN``, or at :meth:`KeyedNegation.flush`.

Candidates are tested against runs or matches as pairs, all at once, and each pair's
predicates are counted only where the reference engine evaluates them (up to the first
pair that hits, in stream order). NEG on a Kleene element runs on the reference engine.

``eng`` is the running :class:`~cep_core.engine.keyed.KeyedEngine` (not imported here:
the engine imports this module); what the NEG elements keep of the stream is its
state's (:class:`NegState`), ``call`` the values of one call of its ``feed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cep_core.engine.keyed_batch import Batch, Outputs
from cep_core.engine.matching import STRICT
from cep_core.engine.vectorize import fields, passes

__all__ = ["KeyedNegation", "NegState"]


def _join(old: np.ndarray | None, new: np.ndarray) -> np.ndarray:
    """``old`` then ``new``; as objects when their types differ (each value keeps its
    own, as the reference engine's outputs do)."""
    if old is None or not old.size:
        return new
    if old.dtype == new.dtype:
        return np.concatenate([old, new])
    out = np.empty(old.size + new.size, dtype=object)
    out[:old.size], out[old.size:] = old, new
    return out


class _Store:
    """Rows kept per partition key id, in the order they were added, with named columns:
    NEG candidates, a key's recent events, matches waiting for their window to close."""

    def __init__(self):
        self.key = np.zeros(0, dtype=np.int64)
        self.cols: dict[Any, np.ndarray] = {}
        self._order: np.ndarray | None = None
        self._ordered: dict[str | None, np.ndarray] = {}

    def add(self, keys: np.ndarray, cols: dict[Any, Any]) -> None:
        if not keys.size:
            return
        self.key = np.concatenate([self.key, keys])
        for name, values in cols.items():
            values = np.broadcast_to(np.asarray(values), keys.shape)
            self.cols[name] = _join(self.cols.get(name), np.array(values))
        self._order = None

    def keep(self, mask: np.ndarray) -> None:
        if mask.all():
            return
        self.key = self.key[mask]
        self.cols = {name: col[mask] for name, col in self.cols.items()}
        self._order = None

    def pairs(self, keys: np.ndarray, within: tuple | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
        """``(row, entry)``: for each of ``keys`` (by position) the rows of its key, grouped
        by position and in the order they were added. ``within``: ``(column, low, high,
        side)``, only rows with ``low <= column < high`` (side ``"left"``) or ``low <
        column <= high`` (``"right"``), per position; the column must grow within a key."""
        if self._order is None:
            self._order = np.argsort(self.key, kind="stable")
            self._ordered = {}  # columns in that order, as needed
        order = self._order
        ordered = self._sorted(None)
        lo = np.searchsorted(ordered, keys, "left")
        hi = np.searchsorted(ordered, keys, "right")
        if within is not None:
            name, low, high, side = within
            values = self._sorted(name)
            lo, hi = _bisect(values, lo, hi, low, side), _bisect(values, lo, hi, high, side)
        counts = hi - lo
        row = np.repeat(np.arange(keys.size), counts)
        start = np.cumsum(counts) - counts
        return row, order[lo[row] + np.arange(row.size) - start[row]]

    def _sorted(self, name: str | None) -> np.ndarray:
        """The key ids (``name`` None) or a column in the order of :meth:`pairs`."""
        got = self._ordered.get(name)
        if got is None:
            col = self.key if name is None else self.cols[name]
            got = self._ordered[name] = col[self._order]
        return got


def _bisect(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, x: np.ndarray,
            side: str) -> np.ndarray:
    """Per position, the first index of ``values[lo:hi]`` (ascending) whose value is not
    below ``x`` (side ``"left"``) or is above it (``"right"``); ``hi`` if none."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        at = np.flatnonzero(lo < hi)
        if not at.size:
            return lo
        mid = (lo[at] + hi[at]) // 2
        below = values[mid] < x[at] if side == "left" else values[mid] <= x[at]
        lo[at] = np.where(below, mid + 1, lo[at])
        hi[at] = np.where(below, hi[at], mid)


class _Pairs:
    """What a compiled NEG predicate reads for pairs (a run or match, a candidate event):
    every reference's values, gathered beforehand (see :func:`_gather`)."""

    __slots__ = ("values", "size", "deferred")

    def __init__(self, values: dict, size: int, deferred: np.ndarray | None = None):
        self.values, self.size, self.deferred = values, size, deferred

    def ref(self, key: tuple) -> tuple[Any, Any]:
        return self.values[key]

    def subset(self, at: np.ndarray, deferred: np.ndarray | None = None) -> _Pairs:
        return _Pairs({k: (v[at], None if bad is None else bad[at])
                       for k, (v, bad) in self.values.items()}, at.size, deferred)


def _gather(bound: dict, row: np.ndarray, neg: str, cand: dict[str, np.ndarray],
            refs: set) -> _Pairs:
    """The pairs ``(row[j], candidate j)``: ``bound`` holds the run's or match's values per
    reference (indexed by ``row``), ``cand`` the candidates' attributes (of ``neg``)."""
    values = {}
    for r in refs:
        if _on(r, neg):
            values[r] = (cand[r[3]], None)
        else:
            v, bad = bound[r]
            values[r] = (v[row], None if bad is None else bad[row])
    return _Pairs(values, row.size)


def _bound_values(env: Any, refs: set, neg: str, n: int) -> dict:
    """The values of the references of ``refs`` outside ``neg`` for the ``n`` rows of
    ``env`` (a run's or a completing match's bindings)."""
    out = {}
    for r in refs:
        if _on(r, neg):
            continue
        v, bad = env.ref(r)
        out[r] = (np.broadcast_to(np.asarray(v), (n,)),
                  None if bad is None else np.broadcast_to(bad, (n,)))
    return out


def _evaluate(eng: Any, preds: list[int], pairs: _Pairs) -> tuple:
    """``(ok, steps)``: whether each pair passes every predicate of ``preds`` (indices), each
    evaluated on the pairs that passed the ones before; ``steps`` for :func:`_count`. A
    lookup key missing from its table is noted, not raised (:func:`_count` raises it
    where the reference engine reads it)."""
    ok = np.ones(pairs.size, dtype=bool)
    steps = []
    for i in preds:
        at = np.flatnonzero(ok)
        sub = pairs.subset(at, np.zeros(at.size, dtype=bool))
        res = passes(eng.c.preds[i][1](sub), at.size)
        steps.append((i, at, res, sub.deferred))
        ok[at] = res
    return ok, steps


def _count(eng: Any, steps: list, pairs: _Pairs, reached: np.ndarray) -> None:
    """Count the evaluations of ``steps`` on the pairs ``reached`` (those the reference
    engine evaluates), raising a missing lookup key among them as it does."""
    counters, stats = eng.counters, eng.stats
    for i, at, res, missing in steps:
        seen = reached[at]
        if (missing & seen).any():
            eng.c.preds[i][1](pairs.subset(at[np.flatnonzero(missing & seen)[:1]]))
        evaluated = int(seen.sum())
        counters.predicates += evaluated
        stats.pred_evaluated[i] += evaluated
        stats.pred_passed[i] += int((res & seen).sum())


def _first(row: np.ndarray, ok: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(hit, reached)``: the rows (of ``n``) with a pair that passes, and the pairs up to
    each row's first that passes (pairs grouped by row, in stream order)."""
    pos = np.arange(row.size)
    first = np.full(n, row.size)
    np.minimum.at(first, row[ok], pos[ok])
    return first < row.size, pos <= first[row]


def _first_hits(eng: Any, preds: list[int], pairs: _Pairs, row: np.ndarray,
                n: int) -> np.ndarray:
    """The rows (of ``n``) with a pair that passes every predicate of ``preds``, counted
    as the reference engine evaluates them: a pair's predicates in order up to the first
    that fails, a row's pairs in order up to the first that passes them all."""
    ok, steps = _evaluate(eng, preds, pairs)
    hit, reached = _first(row, ok, n)
    _count(eng, steps, pairs, reached)
    return hit


@dataclass
class NegState:
    """What the NEG elements keep of the stream (module doc), part of the keyed engine's
    state: per NEG between elements without late predicates a flag per key
    (``blocked``), with late predicates the candidates (``cands``), each key's run's
    generation (``gen``: it changes when the run moves), a leading NEG's recent events
    per key (``history``) and the matches waiting for a trailing NEG (``pending``)."""

    blocked: dict[int, np.ndarray]
    cands: dict[int, _Store]
    gen: np.ndarray
    history: dict[int, _Store]
    pending: _Store

    def grow(self, n: int) -> None:
        for nid, flag in self.blocked.items():
            self.blocked[nid] = np.concatenate([flag, np.zeros(n - flag.size, dtype=bool)])
        self.gen = np.concatenate([self.gen, np.zeros(n - self.gen.size, dtype=np.int64)])

    def reset(self, keys: np.ndarray) -> None:
        """The runs of ``keys`` moved: what their NEG elements noted no longer counts."""
        for flag in self.blocked.values():
            flag[keys] = False
        self.gen[keys] += 1


class KeyedNegation:
    """The NEG elements of one keyed engine's plan (module doc); what they keep is a
    :class:`NegState` (:meth:`fresh_state`)."""

    def __init__(self, eng: Any):
        plan, types = eng.plan, eng.types
        self.strict = eng.policy == STRICT
        self.window = plan.window
        self.kleene = [p.kleene for p in plan.positions]
        self.var = {n.index: n.var for n in plan.negs}
        self.type_of = {n.index: types[n.type] for n in plan.negs}
        #: per state, the NEG elements its run waits on: (type code, NEG id)
        self.watched = {q: [(types[t], nid) for t, nids in by_type.items() for nid in nids]
                        for q, by_type in plan.neg_watch.items()}
        #: NEG elements between elements without late predicates: a flag per key
        self.flagged = [nid for (_, nid), flag in plan.neg_flag.items() if flag]
        #: with late predicates (indices): candidates per key
        self.late = {nid: [p.index for p in preds] for e in plan.edges
                     for nid, preds in e.late.items()}
        self.lead = plan.lead_negs.get(0, ())
        self.trail = plan.trail_negs.get(len(plan.positions) - 1, ())
        self.ends = {nid: [p.index for p in plan.neg_preds.get(nid, ())]
                     for nid in (*self.lead, *self.trail)}
        refs = eng.c.refs_of
        self.refs = {nid: set().union(*(refs[i] for i in preds))
                     for nid, preds in {**self.late, **self.ends}.items()}
        self.trail_refs = sorted({r for nid in self.trail for r in self.refs[nid]
                                  if not _on(r, self.var[nid])})

    def fresh_state(self) -> NegState:
        """What the NEG elements keep before any event."""
        return NegState({nid: np.zeros(0, dtype=bool) for nid in self.flagged},
                        {nid: _Store() for nid in self.late}, np.zeros(0, dtype=np.int64),
                        {nid: _Store() for nid in self.lead}, _Store())

    def _attrs(self, nid: int) -> list[str]:
        """The attributes of NEG ``nid``'s events that its predicates read."""
        return sorted({r[3] for r in self.refs.get(nid, ()) if _on(r, self.var[nid])})

    # ------------------------------------------------------------------ a batch
    def begin_batch(self, eng: Any, b: Batch, rows: np.ndarray, kid: np.ndarray,
                    typ: np.ndarray, offset: int) -> tuple:
        """Before the waves (``rows`` of keys ``kid``, types ``typ``; ``offset``: the
        stream position of the batch): its events of leading NEG types join their keys'
        history (an event counts for a match only before the match's first event). What
        the call keeps of the batch for :meth:`admit` and :meth:`end_batch`."""
        t = b.cols["time"][rows]
        for nid, store in eng.stream_state.neg.history.items():
            if store.key.size:
                store.keep(store.cols["time"] >= t[0] - self.window)
            at = np.flatnonzero(typ == self.type_of[nid])
            store.add(kid[at], {"time": t[at].astype(float), **{a: b.column(a, rows[at])
                                                  for a in self._attrs(nid)}})
        return rows, kid, typ, offset

    def blocks(self, eng: Any, edge, env: Any) -> np.ndarray:
        """Whether the run of each row of ``env`` (events offered to ``edge``, with their
        bindings) is blocked by the NEG elements that guard it."""
        keys, st = env.keys, eng.stream_state.neg
        out = np.zeros(keys.size, dtype=bool)
        for nid in edge.negs:
            flag = st.blocked.get(nid)
            if flag is not None:
                out |= flag[keys]
                continue
            store = st.cands[nid]
            if store.key.size:
                store.keep(store.cols["#gen"] == st.gen[store.key])  # of runs since moved
            at = np.flatnonzero(~out)
            row, ent = store.pairs(keys[at])
            if row.size:
                bound = _bound_values(env, self.refs[nid], self.var[nid], keys.size)
                cand = {a: col[ent] for a, col in store.cols.items()}
                pairs = _gather(bound, at[row], self.var[nid], cand, self.refs[nid])
                out[at[_first_hits(eng, self.late[nid], pairs, row, at.size)]] = True
        return out

    def watch(self, eng: Any, call: Any, q: int, b: Batch, rows: np.ndarray,
              keys: np.ndarray, typ: np.ndarray, idle: np.ndarray) -> np.ndarray:
        """The events ``rows`` offered to the NEG elements that the runs of ``keys`` wait on
        at state ``q``; those of runs that took no transition (``idle``) are noted. The
        positions of the runs this leaves without a way on (to be dropped)."""
        dropped = np.zeros(rows.size, dtype=bool)
        st = eng.stream_state.neg
        for code, nid in self.watched.get(q, ()):
            at = np.flatnonzero(typ == code)
            flag = st.blocked.get(nid)
            if flag is not None:
                at = at[~flag[keys[at]]]
            early = eng.plan.neg_early.get((q, nid))
            if early and at.size:
                at = at[eng._check(call, early, b, rows[at], keys[at], self.var[nid], False,
                                   None)]
            if self.strict:
                continue  # a run that takes no transition ends anyway
            at = at[idle[at]]
            if flag is not None:
                flag[keys[at]] = True
                dropped[at] = not self.kleene[q]
            else:
                st.cands[nid].add(keys[at], {"#gen": st.gen[keys[at]], **{
                    a: b.column(a, rows[at]) for a in self._attrs(nid)}})
        return np.flatnonzero(dropped)

    def admit(self, eng: Any, call: Any, env: Any, first_t: np.ndarray, sub: int
              ) -> np.ndarray:
        """Matches completing with the events of ``env`` (their bindings; ``first_t``: the
        times of their first events): which to output now. Those a leading NEG violates
        are not; those with a trailing NEG wait here."""
        rows, keys, n = env.rows, env.keys, env.size
        t = env.batch.cols["time"][rows]
        keep, st = np.ones(n, dtype=bool), eng.stream_state.neg
        for nid in self.lead:
            store, at = st.history[nid], np.flatnonzero(keep)
            if not store.key.size or not at.size:
                continue
            row, ent = store.pairs(keys[at], ("time", t[at] - self.window, first_t[at],
                                              "left"))
            if row.size:
                bound = _bound_values(env, self.refs[nid], self.var[nid], n)
                cand = {a: col[ent] for a, col in store.cols.items()}
                pairs = _gather(bound, at[row], self.var[nid], cand, self.refs[nid])
                keep[at[_first_hits(eng, self.ends[nid], pairs, row, at.size)]] = False
        if not self.trail or not keep.any():
            return keep
        at = np.flatnonzero(keep)
        first = first_t[at].astype(t.dtype) if t.dtype.kind in "iu" else first_t[at]
        deadline = first + self.window
        cols: dict[Any, Any] = {"last": t[at].astype(float), "deadline": deadline.astype(float),
                                "seq": call.neg_batch[3] + rows[at], "sub": sub,
                                "time": deadline if math.isfinite(self.window) else t[at]}
        for j, (vals, bad) in enumerate(fields([fn for _, fn in eng.c.returns], env, n)):
            cols[("field", j)] = vals[at]
            cols[("bad", j)] = np.zeros(at.size, bool) if bad is None else bad[at]
        bound = _bound_values(env, set(self.trail_refs), "", n)
        for j, r in enumerate(self.trail_refs):
            vals, bad = bound[r]
            cols[("ref", j)] = vals[at]
            cols[("refbad", j)] = np.zeros(at.size, bool) if bad is None else bad[at]
        st.pending.add(keys[at], cols)
        return np.zeros(n, dtype=bool)

    def end_batch(self, eng: Any, batch: tuple, b: Batch, seen: np.ndarray,
                  out: Outputs) -> None:
        """After the waves (``batch``: what :meth:`begin_batch` kept, empty when no event
        was kept): the batch's events of trailing NEG types kill the waiting matches they
        violate; those whose window closed before an event of the batch (``seen``: every
        event the engine processed) are output there."""
        pending = eng.stream_state.neg.pending
        if not pending.key.size:
            return
        if batch:
            self._kill(eng, b, *batch[:3])
        at = np.searchsorted(b.cols["time"][seen], pending.cols["deadline"], "right")
        due = np.flatnonzero(at < seen.size)
        if due.size:
            self._output(eng, due, seen[at[due]], out)

    def flush(self, eng: Any, out: Outputs) -> None:
        """The end of the stream: every waiting match, in the order of their deadlines."""
        n = eng.stream_state.neg.pending.key.size
        if n:
            self._output(eng, np.arange(n), np.zeros(n, dtype=np.int64), out)

    def _kill(self, eng: Any, b: Batch, rows: np.ndarray, kid: np.ndarray,
              typ: np.ndarray) -> None:
        pending = eng.stream_state.neg.pending
        at = np.flatnonzero(np.isin(typ, [self.type_of[nid] for nid in self.trail]))
        if not at.size:
            return
        events = _Store()
        events.add(kid[at], {"pos": rows[at], "typ": typ[at], "time": b.cols["time"][rows[at]]})
        p, ent = events.pairs(pending.key, ("time", pending.cols["last"],
                                            pending.cols["deadline"], "right"))
        pos = events.cols["pos"][ent]
        if not p.size:
            return
        bound = {r: (pending.cols[("ref", j)], pending.cols[("refbad", j)])
                 for j, r in enumerate(self.trail_refs)}
        hit = np.zeros(p.size, dtype=bool)
        tested = []
        for nid in self.trail:  # an event is tested against each NEG of its type in turn
            at = np.flatnonzero(~hit & (events.cols["typ"][ent] == self.type_of[nid]))
            cand = {a: b.column(a, pos[at]) for a in self._attrs(nid)}
            pairs = _gather(bound, p[at], self.var[nid], cand, self.refs[nid])
            ok, steps = _evaluate(eng, self.ends[nid], pairs)
            hit[at] = ok
            tested.append((at, steps, pairs))
        dead, reached = _first(p, hit, pending.key.size)
        for at, steps, pairs in tested:
            _count(eng, steps, pairs, reached[at])
        pending.keep(~dead)

    def _output(self, eng: Any, due: np.ndarray, pos: np.ndarray,
                out: Outputs) -> None:
        """Output the waiting matches ``due`` at batch positions ``pos``: before the
        outputs of the event there, in the order of their deadlines, then of completion."""
        pending = eng.stream_state.neg.pending
        cols = pending.cols
        order = np.lexsort((cols["sub"][due], cols["seq"][due], cols["deadline"][due]))
        due, pos = due[order], pos[order]
        vals = []
        for j in range(len(eng.c.returns)):
            bad = cols[("bad", j)][due]
            vals.append((cols[("field", j)][due], bad if bad.any() else None))
        out.add(pos, np.arange(due.size) - due.size, vals, cols["time"][due])
        eng.counters.outputs += due.size
        gone = np.zeros(pending.key.size, dtype=bool)
        gone[due] = True
        pending.keep(~gone)


def _on(ref: tuple, var: str) -> bool:
    """Whether the reference key ``ref`` reads variable ``var``."""
    return ref[0] == "attr" and ref[1] == var
