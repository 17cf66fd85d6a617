"""The keyed vectorized engine: one run per partition key, state in numpy arrays.

It runs the same plan with the same semantics as the reference engine
(:mod:`cep_core.engine.reference`) for the class of queries whose partial matches per
key are bounded by one, and it is exact there (a differential test runs both engines on
random streams and random queries of the class and requires identical outputs).

**The class.** A pattern query is accepted when

* ``WHERE`` has ``SAME[k1, ..]`` (the partition key);
* the pattern is a flat ``SEQ`` of elements ``T v`` and Kleene elements ``T+ v[]`` (no
  ``OR``, ``NEG`` or ``SEQ(..)+``) and there is a ``RETURN``;
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
order. Counters match the reference engine's, except ``pm_dropped`` for windows: here a
run the window closed on is dropped when its key's next event arrives.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from cep_core.counters import Counters
from cep_core.engine.reference import ONE_PER_PARTITION, STRICT, Statistics
from cep_core.engine.vectorize import Unsupported, VectorCompiler, truth
from cep_core.errors import QueryError
from cep_core.lookup import TableLookup
from cep_core.plan import START, Plan

__all__ = ["KeyedEngine", "keyed_unsupported", "KEYED_POLICIES"]

KEYED_POLICIES = ("skip-till-next-match", STRICT)
_MISSING = object()
_BEGIN = 1 << 20  # starts emit after the continuations of the same event


def _tables(plan: Plan) -> dict[str, Any]:
    """The lookups of the plan that are parameter tables, by name (as given)."""
    out: dict[str, Any] = {}
    lookups = plan.lookups
    for name, route in lookups.routes.items():
        if isinstance(route, TableLookup) and name in route.sources:
            out[name] = route.sources[name]
    return out


class _Compiled:
    """The numpy form of a plan: per state its transitions with compiled predicates."""

    def __init__(self, plan: Plan):
        self.plan = plan
        vc = VectorCompiler(plan.variables, plan.params, _tables(plan), plan.time_unit)
        self.refs: set = set()
        self.preds: dict[int, tuple] = {}
        for p in plan.preds:
            if p.optional or p.mode == "universal":
                raise Unsupported(f"predicate {p.text} over every i of a Kleene variable")
            top = p.anchor_offset if p.mode == "incremental" else 0
            fn, refs = vc.compile(p.node, top)
            lo = max((-o for _, o in p.irefs), default=0)
            self.preds[p.index] = (p, fn, lo)
            self.refs |= refs
        self.returns: list[tuple[str, Any]] = []
        for (name, _), node in zip(plan.returns.fields, plan.returns.nodes, strict=True):
            fn, refs = vc.compile(node, 0)
            if any(r[0] == "attr" and r[2] in ("back0", "back1") and
                   plan.variables[r[1]].multi for r in refs):
                raise Unsupported("RETURN of v[i] (a list over all events)")
            self.returns.append((name, fn))
            self.refs |= refs
        for p in plan.preds:
            if p.mode == "incremental":
                for e in plan.edges:
                    if p in e.preds and plan.positions[e.dst].var != p.anchor_var:
                        raise Unsupported(f"predicate {p.text} placed away from its variable")


def keyed_unsupported(plan: Plan) -> str | None:
    """Why the keyed vectorized engine cannot run ``plan`` (None when it can)."""
    if not plan.partition:
        return "no SAME[..] partition key"
    if plan.negs:
        return "NEG"
    if any(s.kind == "group" for s in plan.scopes):
        return "SEQ(..)+"
    n = len(plan.positions)
    for e in plan.edges:
        linear = (e.kind == "begin" and e.src == START and e.dst == 0) or \
            (e.kind == "next" and e.dst == e.src + 1) or (e.kind == "take" and e.dst == e.src)
        if not linear:
            return "OR (the pattern is not a flat SEQ)"
    if sum(e.kind == "begin" for e in plan.edges) != 1 or not plan.positions[n - 1].accepting \
            or any(p.accepting for p in plan.positions[:-1]):
        return "OR (the pattern is not a flat SEQ)"
    if plan.returns is None:
        return "no RETURN (the bindings are output)"
    try:
        _Compiled(plan)
    except Unsupported as ex:
        return str(ex)
    return None


class _Batch:
    """The columns of one fed batch that the engine reads."""

    def __init__(self, events: Any, attrs: Iterable[str], first_id: int):
        frame = hasattr(events, "columns") and hasattr(events, "to_numpy")
        self.missing: dict[str, np.ndarray] = {}
        self.cols: dict[str, np.ndarray] = {}
        if frame:
            for c in ("type", "time"):
                if c not in events.columns:
                    raise QueryError(f"events need 'type' and 'time' columns (have "
                                     f"{sorted(map(str, events.columns))})")
            self.n = len(events)
            get = {a: events[a].to_numpy() for a in {"type", "time", *attrs}
                   if a in events.columns}
            for a in {"type", "time", *attrs}:
                if a in get:
                    self.cols[a] = get[a]
                elif a == "id":
                    self.cols[a] = np.arange(first_id, first_id + self.n)
                else:
                    self.cols[a] = np.full(self.n, None, dtype=object)
                    self.missing[a] = np.ones(self.n, dtype=bool)
        else:
            rows = events
            self.n = len(rows)
            for a in {"type", "time", *attrs}:
                vals = [e.get(a, _MISSING) for e in rows]
                miss = np.fromiter((v is _MISSING for v in vals), bool, self.n)
                if miss.any():
                    vals = [None if v is _MISSING else v for v in vals]
                    self.missing[a] = miss
                arr = np.empty(self.n, dtype=object) if miss.any() else None
                if arr is not None:
                    arr[:] = vals
                    self.cols[a] = arr
                else:
                    self.cols[a] = _array(vals)
        t = self.cols["time"]
        if self.n and t.dtype.kind not in "iuf":
            raise QueryError("the keyed vectorized engine needs numeric event times")
        if self.n > 1 and (np.diff(t) < 0).any():
            j = int(np.flatnonzero(np.diff(t) < 0)[0]) + 1
            raise QueryError(f"event {j}: time {t[j]} before the previous {t[j - 1]}; a "
                             "stream has non-decreasing timestamps")

    def column(self, attr: str, rows: np.ndarray) -> np.ndarray:
        miss = self.missing.get(attr)
        if miss is not None and miss[rows].any():
            raise QueryError(f"an event has no attribute '{attr}'")
        return self.cols[attr][rows]


def _array(values: list) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "biufUO" or arr.ndim != 1:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return arr


class _Env:
    """What a compiled expression reads for rows ``at`` of a wave that take the transition
    into ``var`` (``take``: a Kleene self-loop; ``newlen``: the Kleene length after it)."""

    __slots__ = ("eng", "batch", "rows", "keys", "var", "take", "newlen", "size")

    def __init__(self, eng, batch, rows, keys, var, take, newlen):
        self.eng, self.batch, self.rows, self.keys = eng, batch, rows, keys
        self.var, self.take, self.newlen, self.size = var, take, newlen, len(rows)

    def ref(self, key: tuple) -> tuple[Any, Any]:
        eng, keys = self.eng, self.keys
        if key[0] == "len":
            if key[1] == self.var:
                return self.newlen, None
            return eng.length[key[1]][keys], None
        _, v, slot, a, n = key
        if v != self.var:
            if slot == "nth":
                store = eng.store.get(("nth", v, a, n))
                if store is None:  # no run has reached v[n] yet
                    return np.zeros(self.size), np.ones(self.size, dtype=bool)
                return store[keys], eng.length[v][keys] < n
            store = "single" if slot == "single" else ("first" if slot == "first" else "last")
            return eng.store[(store, v, a, 0)][keys], None
        if slot in ("single", "back0", "last"):
            return self.batch.column(a, self.rows), None
        if slot == "back1":
            return eng.store[("last", v, a, 0)][keys], self.newlen < 2
        if slot == "first":
            if not self.take:
                return self.batch.column(a, self.rows), None
            return eng.store[("first", v, a, 0)][keys], None
        new = self.batch.column(a, self.rows)
        if not self.take:
            return new, np.full(self.size, n != 1)
        old = eng.length[v][keys]
        store = eng.store.get(("nth", v, a, n))
        if store is None:
            return new, self.newlen != n
        return np.where(old >= n, store[keys], new), self.newlen < n


class KeyedEngine:
    """Runs a plan of the keyed class (module doc) over batches of events."""

    name = "keyed-vectorized"

    def __init__(self, plan: Plan, policy: str):
        reason = keyed_unsupported(plan)
        if reason is not None:
            raise QueryError(f"the keyed vectorized engine does not run this query: {reason}")
        if policy not in KEYED_POLICIES:
            raise QueryError(f"the keyed vectorized engine runs {' and '.join(KEYED_POLICIES)}"
                             f", not {policy}")
        self.plan, self.policy, self.runs = plan, policy, ONE_PER_PARTITION
        self.counters = Counters()
        self.stats = Statistics(plan)
        self.keys: dict[Any, int] = {}
        self.state = np.full(0, -1, dtype=np.int32)
        self.first_t = np.zeros(0)
        kleene = [p.var for p in plan.positions if p.kleene]
        self.length = {v: np.zeros(0, dtype=np.int64) for v in kleene}
        self.store: dict[tuple, np.ndarray] = {}
        self._setup()
        self.events_fed = 0

    def _setup(self) -> None:
        plan = self.plan
        self.c = _Compiled(plan)
        self.types = {t: j for j, t in enumerate(sorted(plan.types))}
        stores: dict[tuple, None] = {}
        for r in self.c.refs:
            if r[0] != "attr":
                continue
            _, v, slot, a, n = r
            if slot == "single":
                stores[("single", v, a, 0)] = None
            elif slot == "nth":
                stores[("nth", v, a, n)] = None
                stores[("last", v, a, 0)] = None
            else:
                stores[("first", v, a, 0)] = None
                stores[("last", v, a, 0)] = None
        self.store_keys = list(stores)
        self.attrs = sorted({k[2] for k in stores} | {r[3] for r in self.c.refs
                                                       if r[0] == "attr"} | set(plan.partition))

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["c"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.c = _Compiled(self.plan)

    # ------------------------------------------------------------------ public
    def feed(self, events: Any) -> list[dict]:
        """Process a batch (a list of event dicts or a DataFrame); the outputs in stream
        order."""
        b = _Batch(events, self.attrs, self.events_fed)
        self.events_fed += b.n
        if b.n == 0:
            return []
        keep = np.ones(b.n, dtype=bool)
        if self.plan.stream_type is not None:
            keep &= b.cols["type"] == self.plan.stream_type
        self._count_events(b, keep)
        for a in self.plan.partition:
            if a in b.missing:
                keep &= ~b.missing[a]
        typ = _codes(b.cols["type"], self.types)
        if self.policy != STRICT:
            keep &= typ >= 0
        rows = np.flatnonzero(keep)
        if rows.size == 0:
            return []
        kid = self._key_ids(b, rows)
        self._grow(len(self.keys))
        out: list[tuple] = []
        order = np.argsort(kid, kind="stable")
        counts = np.bincount(kid, minlength=len(self.keys))
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        present = np.flatnonzero(counts)
        for r in range(int(counts.max())):
            present = present[counts[present] > r]
            sel = order[starts[present] + r]
            self._wave(b, rows[sel], kid[sel], typ[rows[sel]], out)
        out.sort(key=lambda x: (x[0], x[1]))
        return [rec for _, _, rec in out]

    def flush(self) -> list[dict]:
        return []

    def partial_matches(self) -> list[dict[str, Any]]:
        raise QueryError("the keyed vectorized engine keeps no event bindings; run the "
                         "reference engine for partial matches")

    def live_count(self) -> int:
        return int((self.state >= 0).sum())

    # ------------------------------------------------------------------ internals
    def _count_events(self, b: _Batch, keep: np.ndarray) -> None:
        n = int(keep.sum())
        self.counters.events += n
        if not n:
            return
        types, counts = np.unique(b.cols["type"][keep].astype(str), return_counts=True)
        for t, c in zip(types.tolist(), counts.tolist(), strict=True):
            self.stats.events_per_type[t] = self.stats.events_per_type.get(t, 0) + c
        times = b.cols["time"][keep]
        if self.stats.first_time is None:
            self.stats.first_time = times[0].item()
        self.stats.last_time = times[-1].item()

    def _key_ids(self, b: _Batch, rows: np.ndarray) -> np.ndarray:
        cols = [b.cols[a][rows] for a in self.plan.partition]
        if len(cols) == 1:
            codes, uniques = pd.factorize(cols[0])
            values = [(u,) for u in uniques.tolist()]
        else:
            codes, uniques = pd.MultiIndex.from_arrays(cols).factorize()
            values = [tuple(u) for u in uniques.tolist()]
        keys = self.keys
        ids = np.fromiter((keys.setdefault(v, len(keys)) for v in values), np.int64,
                          len(values))
        return ids[codes]

    def _grow(self, n: int) -> None:
        cap = len(self.state)
        if n <= cap:
            return
        new = max(n, 2 * cap, 1024)
        self.state = _resize(self.state, new, -1)
        self.first_t = _resize(self.first_t, new, 0)
        for v in self.length:
            self.length[v] = _resize(self.length[v], new, 0)
        for k in self.store:
            self.store[k] = _resize(self.store[k], new, 0)

    def _put(self, store_key: tuple, keys: np.ndarray, values: np.ndarray) -> None:
        arr = self.store.get(store_key)
        values = np.asarray(values)
        if arr is None:
            arr = np.zeros(len(self.state), dtype=values.dtype if values.dtype.kind in "biuf"
                           else object)
        elif arr.dtype != values.dtype and arr.dtype != object:
            try:
                dt = np.result_type(arr.dtype, values.dtype)
            except TypeError:
                dt = np.dtype(object)
            if dt.kind not in "biuf":
                dt = np.dtype(object)
            arr = arr.astype(dt)
        arr[keys] = values
        self.store[store_key] = arr

    def _check(self, preds, b, rows, keys, var, take, newlen) -> np.ndarray:
        """Positions (into ``rows``) that pass ``preds`` in order, counting evaluations."""
        at = np.arange(len(rows))
        stats, counters = self.stats, self.counters
        for p in preds:
            if not at.size:
                break
            pred, fn, lo = self.c.preds[p.index]
            counters.predicates += at.size
            stats.pred_evaluated[p.index] += at.size
            nl = newlen[at] if newlen is not None else None
            ok = np.ones(at.size, dtype=bool)
            test = np.arange(at.size)
            if pred.mode == "incremental":
                test = np.flatnonzero(nl - 1 - pred.anchor_offset >= lo)
            if test.size:
                sub = at[test]
                env = _Env(self, b, rows[sub], keys[sub], var, take,
                           nl[test] if nl is not None else None)
                vals, bad = fn(env)
                res = np.broadcast_to(truth(vals), (test.size,))
                if bad is not None:
                    res = res & ~np.broadcast_to(bad, (test.size,))
                ok[test] = res
            at = at[ok]
            stats.pred_passed[p.index] += at.size
        return at

    def _transition(self, edge, b, rows, keys, at, newlen_all):
        """``(passed, completed)`` positions for the rows ``at`` offered to ``edge``."""
        plan = self.plan
        dst = plan.positions[edge.dst]
        take = edge.kind == "take"
        var = dst.var
        newlen = None
        if dst.kleene:
            newlen = (newlen_all[at] + 1) if take else np.ones(at.size, dtype=np.int64)
        ok = self._check(edge.preds, b, rows[at], keys[at], var, take, newlen)
        passed = at[ok]
        if not dst.accepting or not passed.size:
            return passed, passed[:0], newlen[ok] if newlen is not None else None
        nl = newlen[ok] if newlen is not None else None
        acc = self._check(plan.accept_preds.get(edge.dst, ()), b, rows[passed],
                          keys[passed], var, take, nl)
        return passed, passed[acc], nl

    def _emit(self, edge, b, rows, keys, done, newlen, sub: int, out: list) -> None:
        """Output events for the rows ``done`` that completed a match through ``edge``."""
        if not done.size:
            return
        plan = self.plan
        dst = plan.positions[edge.dst]
        env = _Env(self, b, rows[done], keys[done], dst.var, edge.kind == "take", newlen)
        ret = plan.returns
        fields = []
        for name, fn in self.c.returns:
            vals, bad = fn(env)
            vals = np.broadcast_to(np.asarray(vals), (done.size,))
            lst = vals.tolist()
            if bad is not None:
                bad = np.broadcast_to(bad, (done.size,))
                lst = [None if x else v for v, x in zip(lst, bad.tolist(), strict=True)]
            fields.append((name, lst))
        times = b.cols["time"][rows[done]].tolist()
        names = [n for n, _ in fields]
        has_time = "time" in names
        for j, pos in enumerate(rows[done].tolist()):
            rec = {"type": ret.type}
            for name, lst in fields:
                rec[name] = lst[j]
            if not has_time:
                rec["time"] = times[j]
            out.append((pos, sub, rec))
        self.counters.outputs += done.size

    def _enter(self, edge, b, rows, keys, t) -> None:
        """Move the runs of ``keys`` along ``edge`` with the events ``rows``."""
        plan = self.plan
        dst = plan.positions[edge.dst]
        self.state[keys] = edge.dst
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
            if kind == "single" or kind == "last":
                self._put(sk, keys, b.column(a, rows))
            elif kind == "first" and edge.kind != "take":
                self._put(sk, keys, b.column(a, rows))
            elif kind == "nth":
                hit = lengths == n
                if hit.any():
                    self._put(sk, keys[hit], b.column(a, rows[hit]))

    def _wave(self, b: _Batch, rows, keys, typ, out: list) -> None:
        plan, counters = self.plan, self.counters
        t = b.cols["time"][rows]
        s = self.state[keys]
        if plan.window != math.inf:
            expired = (s >= 0) & (t - self.first_t[keys] > plan.window)
            if expired.any():
                counters.pm_dropped += int(expired.sum())
                self.state[keys[expired]] = -1
                s = np.where(expired, -1, s)
        for q in np.unique(s[s >= 0]).tolist():
            at = np.flatnonzero(s == q)
            edges = plan.out_edges[q]
            taken = np.full(at.size, -1)
            anypass = np.zeros(at.size, dtype=bool)
            entering = []
            qpos = plan.positions[q]
            for ei, edge in enumerate(edges):
                code = self.types[plan.positions[edge.dst].type]
                cand = np.flatnonzero(typ[at] == code)
                if not cand.size:
                    entering.append(None)
                    continue
                lens = self.length[qpos.var][keys] if qpos.kleene else None
                passed, done, nl = self._transition(edge, b, rows, keys, at[cand], lens)
                counters.pm_extended += passed.size
                self._emit(edge, b, rows, keys, done, _sel(passed, done, nl), ei, out)
                loc = np.searchsorted(at, passed)
                anypass[loc] = True
                if plan.extendable[edge.dst]:
                    free = loc[taken[loc] == -1]
                    taken[free] = ei
                entering.append(edge)
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
        begin = plan.out_edges[START][0]
        code = self.types[plan.positions[begin.dst].type]
        at = np.flatnonzero((typ == code) & (self.state[keys] < 0))
        if not at.size:
            return
        passed, done, nl = self._transition(begin, b, rows, keys, at, None)
        self._emit(begin, b, rows, keys, done, _sel(passed, done, nl), _BEGIN, out)
        if plan.extendable[begin.dst] and passed.size:
            counters.pm_created += passed.size
            self._enter(begin, b, rows[passed], keys[passed], t[passed])


def _sel(passed: np.ndarray, done: np.ndarray, newlen: np.ndarray | None):
    """The Kleene lengths of the ``done`` rows among the ``passed`` ones."""
    if newlen is None or not done.size:
        return None
    return newlen[np.searchsorted(passed, done)]


def _codes(types: np.ndarray, known: dict[str, int]) -> np.ndarray:
    """Each event type's number in ``known`` (-1 for other types)."""
    uniq, inv = np.unique(types.astype(str) if types.dtype != object else
                          np.asarray([str(x) for x in types]), return_inverse=True)
    table = np.array([known.get(u, -1) for u in uniq.tolist()], dtype=np.int64)
    return table[inv]


def _resize(arr: np.ndarray, n: int, fill: Any) -> np.ndarray:
    out = np.full(n, fill, dtype=arr.dtype)
    out[:len(arr)] = arr
    return out
