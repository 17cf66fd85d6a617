"""The A-Seq engine behind :mod:`cep_core.aggregate.aseq` (semantics and formulas in
that module's docstring; paper: Qi et al., SIGMOD 2014).

Layout. A query set is compiled to prefix trees (PreTree, §4.1), one per START element;
node ``v`` of a tree is a prefix with its negations, ``C[v]`` its count (Lemma 2's
prefix counter), ``S[spec, v]`` / ``M[spec, v]`` the sum / max of an aggregated
attribute over its matches (§5). Events are hashed to partitions by the equivalence and
GROUP BY attributes (HPC, §3.4). Without a window a partition holds one vector updated
in a Python loop (DPC, §3.1); with one it holds a vector per live START (SEM, §3.2), all
updated together as numpy arrays (:meth:`SeqEngine._sem_chunk`).
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cep_core.aggregate import sparse_band
from cep_core.aggregate.chop_plan import Letters
from cep_core.aggregate.layout import NEG_INF, DpcState, EventBatch, PrefixTree, QueryPlan, SemState
from cep_core.aggregate.seqquery import SeqQuery
from cep_core.counters import Counters
from cep_core.errors import QueryError, QuerySemanticError
from cep_core.events import unique_names

__all__ = ["SeqEngine", "SeqResult"]

_CELL_BUDGET = 1 << 22          # band cells (offset x node x vector) per chunk
_MAX_CHUNK = 1 << 16            # events per chunk
_BIG = 1 << 62                  # counts at or above this switch to Python ints
_EXACT = 2.0 ** 53              # float64 holds every integer below it exactly


@dataclass
class SeqResult:
    """Columnar outputs of one query for one batch: ``index`` (positions of the trigger
    events in the batch), ``time``, ``group`` (the ``GROUP BY`` values per output, or
    None) and ``values`` (label -> array)."""

    index: np.ndarray
    time: np.ndarray
    group: list | None
    values: dict[str, np.ndarray]


# --------------------------------------------------------------------------- engine
class SeqEngine:
    """A-Seq over one or more queries with the same window and keys (shared state). Not
    an engine of the protocol (:class:`~cep_core.engine.protocol.Engine`) but the part
    of one: the prefix counters and the columnar outputs behind
    :class:`~cep_core.aggregate.SeqAggregator` and :class:`~cep_core.aggregate.PreTree`,
    which are the engines."""

    def __init__(self, queries: Sequence[SeqQuery], params: Mapping | None,
                 lookups: Mapping | None):
        if not queries:
            raise QuerySemanticError("no query")
        q0 = queries[0]
        for q in queries[1:]:
            if (q.within, q.same, q.group_by) != (q0.within, q0.same, q0.group_by):
                raise QuerySemanticError(f"{q.name}: queries evaluated together need the "
                                         f"same WITHIN, SAME and GROUP BY as {q0.name}")
        names = [q.name for q in queries]
        if len(set(names)) != len(names):
            raise QuerySemanticError(f"query names must differ: {names}")
        self.queries = list(queries)
        self.w = q0.within
        self.group_attrs = tuple(q0.group_by)
        self.key_attrs = tuple(dict.fromkeys(q0.group_by + q0.same))
        self.combine = not set(q0.same) <= set(q0.group_by)
        self.letters = Letters(params, lookups)  # the element tests, each numbered once
        self.ev, self.tests = self.letters.ev, self.letters.tests
        self.trees: list[PrefixTree] = []
        roots: dict[tuple, int] = {}
        self.plans = [self._add(q, roots) for q in queries]
        for tr in self.trees:
            tr.finish()
        self.type_code = {t: i for i, t in enumerate(sorted({t for t, _ in self.tests}))}
        self.counters = Counters()
        self.reset()

    def _add(self, q: SeqQuery, roots: dict[tuple, int]) -> QueryPlan:
        path: list[tuple] = []
        tree = PrefixTree()
        node = 0
        for m, (el, gap) in enumerate(zip(q.positives(), q.gaps(), strict=True), 1):
            ident = (self.letters.test(el), frozenset(self.letters.test(g) for g in gap))
            path.append(ident)
            if m == 1:
                if ident not in roots:
                    roots[ident] = len(self.trees)
                    self.trees.append(PrefixTree())
                tree = self.trees[roots[ident]]
            v = tree.index.get(tuple(path))
            if v is None:
                tree.parent.append(node)
                tree.depth.append(m)
                tree.acc_test.append(ident[0])
                tree.neg_tests.append(sorted(ident[1]))
                v = tree.index[tuple(path)] = tree.V
            node = v
        plan = QueryPlan(q, roots[path[0]], node, tree.emitter(node, "count"))
        outs = []
        for a in q.aggregates:
            if a.func == "COUNT":
                outs.append(("COUNT", plan.count))
                continue
            d = q.position_of(a.element)
            if a.func in ("SUM", "AVG"):
                e = tree.emitter(node, "sum", tree.spec(tree.sums, (d, a.attr)))
            else:
                sign = 1 if a.func == "MAX" else -1
                e = tree.emitter(node, "max", tree.spec(tree.maxes, (d, a.attr, sign)))
            outs.append((a.func, e))
        labels = unique_names(a.label() for a in q.aggregates)
        plan.outs = [(lab, f, e) for lab, (f, e) in zip(labels, outs, strict=True)]
        return plan

    def reset(self) -> None:
        self.state: dict[tuple[int, int], SemState | DpcState] = {}
        self.parts: dict[tuple, int] = {}
        self.part_key: list[tuple] = []
        self.part_group: list[int] = []
        self.groups: dict[tuple, int] = {}
        self.group_parts: list[list[int]] = []
        self.last_time = NEG_INF
        self.pruned_at = NEG_INF

    # ------------------------------------------------------------------ feeding
    def feed(self, events: Any) -> tuple[EventBatch, np.ndarray, list[SeqResult]]:
        b = EventBatch(events)
        n = b.n
        self.counters.events += n
        outs = [_empty(self) for _ in self.plans]
        times = b.times() if n else np.empty(0)
        if n == 0:
            return b, times, outs
        bad = np.flatnonzero(~(np.diff(times, prepend=self.last_time) >= 0))
        if bad.size:
            i = int(bad[0])
            prev = times[i - 1] if i else self.last_time
            raise QueryError(f"event {i}: time {times[i]} before the previous {prev}; a "
                             "stream has non-decreasing timestamps")
        codes = b.type_codes(self.type_code)
        rel = np.flatnonzero(codes >= 0)
        if rel.size:
            outs = self._feed_rel(b, times, codes, rel)
        self.last_time = float(times[-1])
        if self.w is not None and self.last_time - self.pruned_at > self.w:
            self._prune()
        return b, times, outs

    def _feed_rel(self, b: EventBatch, times: np.ndarray, codes: np.ndarray,
                  rel: np.ndarray) -> list[SeqResult]:
        rcodes, rtimes = codes[rel], times[rel]
        T = np.zeros((rel.size, len(self.tests)), dtype=bool)
        for j, (typ, pred) in enumerate(self.tests):
            m = rcodes == self.type_code[typ]
            if pred is not None and m.any():
                idx = np.flatnonzero(m)
                self.counters.predicates += idx.size
                for i in idx.tolist():
                    rec = b.record(int(rel[i]))
                    m[i] = self.ev.truth(pred, rec, rec)
            T[:, j] = m
        subs: list[tuple[int, Any]]                 # (partition, its events in rel)
        if self.key_attrs:                          # HPC: hash events to partitions
            cols = [b.column(a, rel) for a in self.key_attrs]
            pids = np.fromiter(map(self._pid, zip(*cols, strict=True)), np.int64, rel.size)
            order = np.argsort(pids, kind="stable")
            cuts = np.flatnonzero(np.diff(pids[order])) + 1
            subs = [(int(pids[x[0]]), x) for x in np.split(order, cuts)]
        else:
            subs = [(self._pid(()), slice(None))]
        vals = [self._values(b, tr, rel, rcodes) for tr in self.trees]
        rec: dict[tuple[int, int], list] | None = None
        if self.combine:
            rec = self._base({self.part_group[pid] for pid, _ in subs})
        per_q: list[list[tuple]] = [[] for _ in self.plans]
        for pid, sub in subs:
            for ti, tr in enumerate(self.trees):
                acc = T[sub][:, tr.acc_test]
                neg = None
                if tr.has_neg:
                    neg = np.zeros_like(acc)
                    for v, tests in enumerate(tr.neg_tests):
                        for j in tests:
                            neg[:, v] |= T[sub, j]
                vv = [x[sub] for x in vals[ti]]
                gidx = rel[sub]
                r = None if rec is None else rec.setdefault((ti, self.part_group[pid]), [])
                if self.w is None:
                    res = self._dpc(ti, tr, pid, acc, neg, vv, gidx, r)
                else:
                    res = self._sem(tr, pid, ti, rtimes[sub], acc, neg, vv, gidx, r)
                for qi, p in enumerate(self.plans):
                    if p.tree == ti:
                        per_q[qi].append((pid, np.flatnonzero(acc[:, p.leaf - 1]), gidx, res))
        return [self._collect(p, per_q[qi], times, rec) for qi, p in enumerate(self.plans)]

    def _pid(self, key: tuple) -> int:
        pid = self.parts.get(key)
        if pid is None:
            pid = self.parts[key] = len(self.part_group)
            self.part_key.append(key)
            g = key[:len(self.group_attrs)]
            gid = self.groups.get(g)
            if gid is None:
                gid = self.groups[g] = len(self.group_parts)
                self.group_parts.append([])
            self.part_group.append(gid)
            self.group_parts[gid].append(pid)
        return pid

    def _values(self, b: EventBatch, tr: PrefixTree, rel: np.ndarray, rcodes: np.ndarray) -> list:
        """Per value spec, the attribute of each event of a type at the spec's depth."""
        out = []
        for d, attr, *_ in tr.sums + tr.maxes:
            types = {self.tests[tr.acc_test[v]][0] for v in range(tr.V) if tr.depth[v] == d}
            m = np.isin(rcodes, [self.type_code[t] for t in types])
            x = np.zeros(rel.size)
            if m.any():
                try:
                    x[m] = np.asarray(b.column(attr, rel[m]), dtype=float)
                except (TypeError, ValueError) as ex:
                    raise QueryError(f"aggregate over {attr}: {ex}") from None
            out.append(x)
        return out

    # ------------------------------------------------------------------ DPC
    def _dpc(self, ti: int, tr: PrefixTree, pid: int, acc: np.ndarray, neg: np.ndarray | None,
             vals: list[np.ndarray], gidx: np.ndarray, rec: list | None) -> list[dict]:
        """DPC (§3.1, Fig. 3) in a Python loop with exact integers. Returns per emitter
        {local position: value} at the events accepted at its leaf (the partition's
        running value); with ``rec`` also records the increments (see :meth:`_totals`)."""
        st = self.state.get((ti, pid))
        if st is None:
            st = self.state[(ti, pid)] = DpcState(tr)
        C, S, M = st.C, st.S, st.M
        par, depth, V = tr.parent, tr.depth, tr.V
        nS, nM = len(tr.sums), len(tr.maxes)
        sdep = [d for d, _ in tr.sums]
        mdep = [d for d, _, _ in tr.maxes]
        msign = [s for _, _, s in tr.maxes]
        self.counters.pm_created += int(acc[:, 0].sum())
        rows = np.flatnonzero((acc | neg).any(axis=1) if neg is not None else acc.any(axis=1))
        acc_l = acc[rows].tolist()
        neg_l = neg[rows].tolist() if neg is not None else None
        vals_l = [v[rows].tolist() for v in vals]
        ems = tr.emitters
        out: list[dict[int, Any]] = [{} for _ in ems]
        incs: list[list] = [[] for _ in ems]
        for r, i in enumerate(rows.tolist()):
            arow = acc_l[r]
            upd = {}
            for v in range(V):                      # read every update from the old state
                if arow[v]:
                    p = par[v]
                    c = C[p]
                    su = [S[s][p] + (c * vals_l[s][r] if depth[v] == sdep[s] else 0.0)
                          for s in range(nS)]
                    mx = [(msign[s] * vals_l[nS + s][r] if depth[v] == mdep[s] else M[s][p])
                          if c > 0 else NEG_INF for s in range(nM)]
                    upd[v + 1] = (c, su, mx)
            if neg_l is not None:                   # recounting rule (Lemma 6)
                nrow = neg_l[r]
                for v in range(V):
                    if nrow[v]:
                        C[v + 1] = 0
                        for s in range(nS):
                            S[s][v + 1] = 0.0
                        for s in range(nM):
                            M[s][v + 1] = NEG_INF
            for v, (c, su, mx) in upd.items():
                C[v] += c
                for s in range(nS):
                    S[s][v] += su[s]
                for s in range(nM):
                    if mx[s] > M[s][v]:
                        M[s][v] = mx[s]
            self.counters.pm_extended += len(upd)
            for e, (leaf, kind, spec) in enumerate(ems):
                if leaf in upd:
                    if kind == "count":
                        val, inc = C[leaf], upd[leaf][0]
                    elif kind == "sum":
                        val, inc = S[spec][leaf], upd[leaf][1][spec]
                    else:
                        val = inc = M[spec][leaf]
                    out[e][i] = val
                    if rec is not None:
                        incs[e].append((int(gidx[i]), inc))
        if rec is not None:
            for e, lst in enumerate(incs):
                if lst:
                    g, d = zip(*lst, strict=True)
                    rec.append((e, np.asarray(g), _array(d), np.full(len(g), math.inf)))
        return out

    # ------------------------------------------------------------------ SEM
    def _sem(self, tr: PrefixTree, pid: int, ti: int, t: np.ndarray, acc: np.ndarray,
             neg: np.ndarray | None, vals: list[np.ndarray], gidx: np.ndarray,
             rec: list | None) -> list[np.ndarray]:
        """SEM (§3.2, Fig. 5) over one partition's events, in chunks that bound the band.
        Returns per emitter the window aggregate at each local position (meaningful at
        the positions accepted at the emitter's leaf)."""
        st = self.state.get((ti, pid))
        if st is None:
            st = self.state[(ti, pid)] = SemState(tr)
        L = t.size
        out = [np.full(L, NEG_INF) if k == "max" else
               np.zeros(L) if k == "sum" else np.zeros(L, dtype=st.C.dtype)
               for _, k, _ in tr.emitters]
        lo = 0
        while lo < L:
            hi = min(L, lo + _MAX_CHUNK)
            while hi - lo > 1:
                tc = t[lo:hi]
                s = np.flatnonzero(acc[lo:hi, 0])
                K = max(int(np.searchsorted(tc, st.exp, side="right").max(initial=0)),
                        int((np.searchsorted(tc, tc[s] + self.w, side="right") - s)
                            .max(initial=0)))
                if (st.exp.size + s.size) * K * tr.band_rows <= _CELL_BUDGET:
                    break
                hi = lo + (hi - lo) // 2
            self._sem_chunk(tr, st, t[lo:hi], acc[lo:hi],
                            None if neg is None else neg[lo:hi],
                            [v[lo:hi] for v in vals], gidx[lo:hi], lo, out, rec)
            lo = hi
        return out

    def _sem_chunk(self, tr: PrefixTree, st: SemState, t: np.ndarray, acc: np.ndarray,
                   neg: np.ndarray | None, vals: list[np.ndarray], gidx: np.ndarray,
                   off: int, out: list[np.ndarray], rec: list | None) -> None:
        """One chunk: every live vector and every START of the chunk is a column of a
        band ``(offset, node, vector)``; row ``k`` holds, per vector, the ``k``-th event
        of its window (old vectors from the chunk's first event, new ones from their
        START). The update of Lemma 1 / §3.3 / §5 then runs once per offset."""
        c = self.counters
        if st.exp.size:                              # Lemma 3: only STARTs expire
            dead = st.exp < t[0]
            if dead.any():
                c.pm_dropped += int(dead.sum())
                st.take(~dead)
        starts = np.flatnonzero(acc[:, 0])
        R0, Rn = st.exp.size, starts.size
        if R0 + Rn == 0:
            return
        c.pm_created += Rn
        exp = np.concatenate([st.exp, t[starts] + self.w])
        if rec is None and tr.sparse:                           # COUNT of a long chain
            IDX = sparse_band.band_index(t, starts, exp, R0)
            C, windows, updates = sparse_band.count_chunk(st.C, IDX, acc, R0)
            c.pm_extended += updates
            if windows.dtype == object and out[0].dtype != object:
                out[0] = out[0].astype(object)
            out[0][off:off + t.size] += windows
            keep = exp >= t[-1]
            c.pm_dropped += int(R0 + Rn - keep.sum())
            st.exp, st.C = exp[keep], C[:, keep]
            st.S, st.M = np.zeros((0, *st.C.shape)), np.zeros((0, *st.C.shape))
            return
        IDX, H, KP = self._band(t, acc, neg, starts, exp, R0)
        c.pm_extended += int(np.count_nonzero(H))
        C, S, M, W = self._band_vectors(tr, st, IDX, starts, vals)
        init = [self._leaf(C, S, M, e)[:R0].copy() for e in tr.emitters] if rec is not None \
            else None
        C, bands = self._exact_sweep(tr, H, KP, C, S, M, W)
        for e, (leaf, kind, _) in enumerate(tr.emitters):
            if rec is None:
                self._add_windows(kind, bands[e], IDX, t.size, out, e, off)
            else:
                trig = np.append(acc[:, leaf - 1], False)[IDX]
                rec.append((e, *self._increments(kind, bands[e], init[e], trig, IDX, gidx,
                                                 exp, Rn)))
        keep = exp >= t[-1]                                     # live at the chunk's end
        c.pm_dropped += int(R0 + Rn - keep.sum())
        st.exp, st.C, st.S, st.M = exp[keep], C[:, keep], S[:, :, keep], M[:, :, keep]

    @staticmethod
    def _band(t: np.ndarray, acc: np.ndarray, neg: np.ndarray | None, starts: np.ndarray,
              exp: np.ndarray, R0: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The band's cells for ``R0`` old vectors and the STARTs at ``starts`` (windows
        ending at ``exp``): ``IDX`` ``(K, R)``, each cell's event (``L``, a no-op event,
        past the window's end); ``H`` ``(V, K, R)``, whether the cell's event is accepted
        at each node (never at a START's own cell); ``KP``, whether it keeps each node's
        count under the recounting rule (Lemma 6), or None without negation."""
        L, V = acc.shape
        IDX = sparse_band.band_index(t, starts, exp, R0)
        blank = np.zeros((1, V), dtype=bool)
        H = np.take(np.concatenate([acc, blank]).T, IDX, axis=1)    # (V, K, R) accepts
        H[:, 0, R0:] = False                                    # a START's own cell
        KP = None
        if neg is not None:
            KP = ~np.take(np.concatenate([neg, blank]).T, IDX, axis=1)  # (V, K, R) keeps
            KP[:, 0, R0:] = True
        return IDX, H, KP

    @staticmethod
    def _band_vectors(tr: PrefixTree, st: SemState, IDX: np.ndarray, starts: np.ndarray,
                      vals: list[np.ndarray]) -> tuple:
        """The band's columns before its first offset, ``(C, S, M, W)``: the counts
        ``(V + 1, R)`` (Python ints where they could reach 2^62), sums and maxes (§5) of
        the old vectors and of the STARTs after their first event; ``W``, per aggregate,
        its attribute at each cell (signed for a max)."""
        K, R = IDX.shape
        R0, V = st.exp.size, tr.V
        C0 = st.C
        if C0.dtype != object:                                  # exact beyond int64
            dmax = max(tr.depth)
            if (int(C0.max(initial=0)) + 1) * math.comb(K + dmax, dmax) * R >= _BIG:
                C0 = C0.astype(object)
        C = np.zeros((V + 1, R), dtype=C0.dtype)
        C[:, :R0] = C0
        C[1, R0:] = 1
        nS, nM = len(tr.sums), len(tr.maxes)
        S = np.zeros((nS, V + 1, R))
        S[:, :, :R0] = st.S
        M = np.full((nM, V + 1, R), NEG_INF)
        M[:, :, :R0] = st.M
        W = []
        vals = [np.append(v, 0.0) for v in vals]
        for s, (d, _) in enumerate(tr.sums):
            W.append(np.take(vals[s], IDX))
            if d == 1:
                S[s, 1, R0:] = vals[s][starts]
        for s, (d, _, sign) in enumerate(tr.maxes):
            W.append(sign * np.take(vals[nS + s], IDX))
            if d == 1:
                M[s, 1, R0:] = sign * vals[nS + s][starts]
        return C, S, M, W

    def _exact_sweep(self, tr: PrefixTree, H: np.ndarray, KP: np.ndarray | None,
                     C: np.ndarray, S: np.ndarray, M: np.ndarray,
                     W: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """:meth:`_sweep` with exact counts, cheaply where it can be: ``(C, bands)``.
        ``C`` comes int64 when the chunk's worst case stays below 2^62, else object
        (Python ints, about 20 times slower; the worst case assumes every event extends
        every prefix, so long patterns over wide windows meet it although their counts
        stay small). Without negation counts only grow, so the final counts bound every
        count of the chunk: the object case first runs in float64 (exact below 2^53)
        and keeps that result, as int64, when every final count stays below 2^53 and
        the final leaf counts (a bound of every window sum) sum to less than 2^62; else
        it runs again in Python ints."""
        if C.dtype != object or KP is not None:
            return C, self._sweep(tr, H, KP, C, S, M, W)
        F = C.astype(float)
        S0, M0 = S.copy(), M.copy()
        bands = self._sweep(tr, H, KP, F, S, M, W)
        leaves = [leaf for leaf, _, _ in tr.emitters]
        if (float(F.max(initial=0.0)) < _EXACT
                and float(F[leaves].sum(axis=1).max(initial=0.0)) < _BIG):
            return F.astype(np.int64), [b.astype(np.int64) if k == "count" else b
                                        for b, (_, k, _) in zip(bands, tr.emitters,
                                                                strict=True)]
        S[...], M[...] = S0, M0
        return C, self._sweep(tr, H, KP, C, S, M, W)

    def _sweep(self, tr: PrefixTree, H: np.ndarray, KP: np.ndarray | None, C: np.ndarray,
               S: np.ndarray, M: np.ndarray, W: list[np.ndarray]) -> list[np.ndarray]:
        """The update of Lemma 1 / §3.3 / §5 at every offset of the band, in place on
        ``C``, ``S`` and ``M``; returns per emitter its leaf's value at every cell
        ``(K, R)``."""
        V, K, R = H.shape
        nS, nM = len(tr.sums), len(tr.maxes)
        par, chain, ems = tr.par, tr.chain, tr.emitters
        bands = [np.empty((K, R), dtype=(C.dtype if k == "count" else float))
                 for _, k, _ in ems]
        tC = np.empty((V - 1, R), dtype=C.dtype)
        if chain and not (nS or nM) and KP is None and len(ems) == 1:
            # COUNT of one chain query without negation: Lemma 1 alone, C[m] += C[m-1]
            band, Hn, Cu, Cl, leaf = bands[0], H[1:], C[2:], C[1:-1], ems[0][0]
            for k in range(K):
                np.multiply(Cl, Hn[:, k], out=tC)
                Cu += tC
                band[k] = C[leaf]
            return bands
        for k in range(K):
            Hk = H[:, k]
            Cp = C[:-1] if chain else C[par]                    # counts before the event
            np.multiply(Cp[1:], Hk[1:], out=tC)                 # the root only starts
            tS = []
            for s in range(nS):
                x = S[s, :-1] * 1.0 if chain else S[s][par]
                dn = tr.sum_nodes[s]
                x[dn] += Cp[dn] * W[s][k]
                x *= Hk
                tS.append(x)
            tM = []
            for s in range(nM):
                x = M[s, :-1].copy() if chain else M[s][par]
                x[tr.max_nodes[s]] = W[nS + s][k]
                tM.append(np.where(Hk & (Cp > 0), x, NEG_INF))
            if KP is not None:                                  # recounting rule (Lemma 6)
                Kk = KP[:, k]
                C[1:] *= Kk
                S[:, 1:] *= Kk
                M[:, 1:] = np.where(Kk, M[:, 1:], NEG_INF)
            C[2:] += tC
            for s in range(nS):
                S[s, 1:] += tS[s]
            for s in range(nM):
                np.maximum(M[s, 1:], tM[s], out=M[s, 1:])
            for e in range(len(ems)):
                bands[e][k] = self._leaf(C, S, M, ems[e])
        return bands

    @staticmethod
    def _add_windows(kind: str, band: np.ndarray, IDX: np.ndarray, L: int,
                     out: list[np.ndarray], e: int, off: int) -> None:
        """Lemma 4: the live vectors summed (or maxed) into emitter ``e``'s output at the
        chunk's ``L`` positions from ``off``; every cell adds to its event's slot, and only
        the leaf's triggers are read."""
        o = np.full(L + 1, NEG_INF) if kind == "max" else np.zeros(L + 1, dtype=band.dtype)
        (np.maximum if kind == "max" else np.add).at(o, IDX.ravel(), band.ravel())
        if kind == "max":
            np.maximum(out[e][off:off + L], o[:L], out=out[e][off:off + L])
        else:
            if o.dtype == object and out[e].dtype != object:
                out[e] = out[e].astype(object)
            out[e][off:off + L] += o[:L]

    @staticmethod
    def _increments(kind: str, band: np.ndarray, init: np.ndarray, trig: np.ndarray,
                    IDX: np.ndarray, gidx: np.ndarray, exp: np.ndarray, Rn: int) -> tuple:
        """The increments at the cells whose events ``trig`` at the emitter's leaf, for
        :meth:`_totals`: ``(groups, increments, window ends)``; a count or sum increases
        by its change since the offset before (``init``: the old vectors' values at the
        chunk's start), a max gives its value."""
        ks, rs = np.nonzero(trig)
        now = band[ks, rs]
        if kind != "max":
            blank0 = np.zeros(Rn, dtype=band.dtype)
            prev = np.vstack([np.concatenate([init, blank0])[None, :], band[:-1]])
            now = now - prev[ks, rs]
        return gidx[IDX[ks, rs]], now, exp[rs]

    @staticmethod
    def _leaf(C: np.ndarray, S: np.ndarray, M: np.ndarray, em: tuple) -> np.ndarray:
        leaf, kind, spec = em
        return C[leaf] if kind == "count" else S[spec, leaf] if kind == "sum" else M[spec, leaf]

    def _prune(self) -> None:
        """Drop the expired vectors of partitions that saw no event for a while."""
        for st in self.state.values():
            if isinstance(st, SemState) and st.exp.size:
                keep = st.exp >= self.last_time
                if not keep.all():
                    self.counters.pm_dropped += int((~keep).sum())
                    st.take(keep)
        self.pruned_at = self.last_time

    # ------------------------------------------------------------------ combine
    def _base(self, gids: set[int]) -> dict[tuple[int, int], list]:
        """SAME without GROUP BY, windowed: the values of the groups' vectors at the start
        of the batch, as increments before every event (see :meth:`_totals`)."""
        rec: dict[tuple[int, int], list] = {}
        for gid in gids:
            for ti, tr in enumerate(self.trees):
                r = rec.setdefault((ti, gid), [])
                for pid in self.group_parts[gid]:
                    st = self.state.get((ti, pid))
                    if isinstance(st, DpcState):
                        for e, (leaf, kind, spec) in enumerate(tr.emitters):
                            v = (st.C[leaf] if kind == "count" else st.S[spec][leaf]
                                 if kind == "sum" else st.M[spec][leaf])
                            r.append((e, np.full(1, -1), _array([v]), np.full(1, math.inf)))
                    elif st is not None and st.exp.size:
                        for e, em in enumerate(tr.emitters):
                            v = self._leaf(st.C, st.S, st.M, em)
                            r.append((e, np.full(v.size, -1), v, st.exp))
        return rec

    def _totals(self, rec: list, e: int, kind: str, j: np.ndarray,
                tj: np.ndarray) -> np.ndarray:
        """The group's window aggregate at triggers ``j`` (batch positions, ascending)
        from the increments ``(g, d, exp)`` of its vectors: the live vectors at ``j`` hold
        ``sum(d: g <= j) - sum(d: exp < tj)`` (a vector that expired before ``tj`` had all
        its increments before ``j``); MAX keeps a heap of ``(value, exp)``."""
        parts = [r for r in rec if r[0] == e]
        if not parts:
            return np.full(j.size, NEG_INF) if kind == "max" else np.zeros(j.size)
        g = np.concatenate([p[1] for p in parts])
        d = np.concatenate([p[2] for p in parts])
        x = np.concatenate([p[3] for p in parts])
        if d.dtype.kind == "i" and float(np.abs(d).sum(dtype=float)) >= _BIG:
            d = d.astype(object)                    # running sums beyond int64
        if kind == "max":
            o = np.argsort(g, kind="stable")
            g, d, x = g[o].tolist(), d[o].tolist(), x[o].tolist()
            heap: list[tuple[float, float]] = []
            res, i = [], 0
            for jj, tt in zip(j.tolist(), tj.tolist(), strict=True):
                while i < len(g) and g[i] <= jj:
                    heapq.heappush(heap, (-d[i], x[i]))
                    i += 1
                while heap and heap[0][1] < tt:
                    heapq.heappop(heap)
                res.append(-heap[0][0] if heap else NEG_INF)
            return np.asarray(res, dtype=float)
        o = np.argsort(g, kind="stable")
        cg = np.concatenate([np.zeros(1, dtype=d.dtype), np.cumsum(d[o])])
        o2 = np.argsort(x, kind="stable")
        cx = np.concatenate([np.zeros(1, dtype=d.dtype), np.cumsum(d[o2])])
        return (cg[np.searchsorted(g[o], j, side="right")]
                - cx[np.searchsorted(x[o2], tj, side="left")])

    # ------------------------------------------------------------------ output
    def _collect(self, p: QueryPlan, parts: list, times: np.ndarray,
                 rec: dict | None) -> SeqResult:
        tr = self.trees[p.tree]
        if not parts:
            return _empty(self)
        idx = np.concatenate([g[pos] for _, pos, g, _ in parts])
        o = np.argsort(idx, kind="stable")
        idx = idx[o]
        used = {e for _, _, e in p.outs} | {p.count}
        vals: dict[int, np.ndarray] = {}
        if rec is not None:                                     # combine (windowed)
            gids = np.concatenate([np.full(pos.size, self.part_group[pid])
                                   for pid, pos, _, _ in parts])[o]
            for e in used:
                kind = tr.emitters[e][1]
                v = np.empty(idx.size, dtype=object if kind == "count" else float)
                for gid in np.unique(gids).tolist():
                    m = gids == gid
                    v[m] = self._totals(rec.get((p.tree, gid), []), e, kind, idx[m],
                                        times[idx[m]])
                vals[e] = v
        else:
            for e in used:
                pieces = []
                for _, pos, _, res in parts:
                    if self.w is None:
                        pieces.append(np.array([res[e][i] for i in pos.tolist()],
                                               dtype=object))
                    else:
                        pieces.append(res[e][pos])
                vals[e] = np.concatenate(pieces)[o]
        cnt = vals[p.count]
        if cnt.dtype == object and all(type(x) is int and abs(x) < _BIG for x in cnt):
            cnt = cnt.astype(np.int64)
        has = cnt > 0
        values: dict[str, np.ndarray] = {}
        for label, func, e in p.outs:
            if func == "COUNT":
                values[label] = cnt
                continue
            v = vals[e].astype(float)
            if func == "AVG":
                v = v / np.where(has, cnt, 1)
            elif func == "MIN":
                v = -v
            out = v.astype(object)
            out[~has] = None
            values[label] = out
        group = None
        if self.group_attrs:
            keys = np.concatenate([np.full(pos.size, pid) for pid, pos, _, _ in parts])[o]
            ng = len(self.group_attrs)
            group = [self.part_key[k][:ng] for k in keys.tolist()]
        self.counters.outputs += int(idx.size)
        return SeqResult(idx, times[idx], group, values)


def _array(xs: Sequence) -> np.ndarray:
    """Python numbers as an array: int64 when they fit, else exact Python ints."""
    if all(type(x) is int for x in xs):
        if all(abs(x) < _BIG for x in xs):
            return np.asarray(xs, dtype=np.int64)
        return np.asarray(xs, dtype=object)
    return np.asarray(xs, dtype=float)


def _empty(eng: SeqEngine) -> SeqResult:
    return SeqResult(np.empty(0, np.intp), np.empty(0), [] if eng.group_attrs else None, {})


