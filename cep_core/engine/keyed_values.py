"""What the keyed engine's compiled expressions read (:mod:`cep_core.engine.keyed`): for the
rows of a wave that take one transition, the new event's attributes from the batch and the
run's earlier bindings from the engine's per-key stores (``v[1]``, ``v[i]`` with
``v[i+1]``, ``v[last]``, ``v[n]``, ``LENGTH(v+[])``), with which rows read a value a
placeholder lacks (approximate matching, :mod:`cep_core.approx.placeholders`)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["WaveValues"]


class WaveValues:
    """What a compiled expression reads for rows ``rows`` of a wave (or ``slice(None)``:
    the whole batch) that take the transition into ``var`` (``take``: a Kleene
    self-loop; ``newlen``: the Kleene length after it)."""

    __slots__ = ("eng", "batch", "rows", "keys", "var", "take", "newlen", "size", "deferred",
                 "lost")

    def __init__(self, eng, batch, rows, keys, var, take, newlen, deferred=None):
        self.eng, self.batch, self.rows, self.keys = eng, batch, rows, keys
        self.var, self.take, self.newlen = var, take, newlen
        self.size = batch.n if isinstance(rows, slice) else len(rows)
        self.deferred = deferred  # rows whose lookup key is missing (see TableIndex.get)
        #: rows that read a value a placeholder lacks (approximate matching; None without)
        self.lost = np.zeros(self.size, dtype=bool) if batch.lost is not None else None

    def ref(self, key: tuple) -> tuple[Any, Any]:
        got = self._ref(key)
        if self.lost is not None and key[0] == "attr":
            self.lost |= self._unknown(key)
        return got

    def _unknown(self, key: tuple) -> np.ndarray:
        """Rows where ``key`` reads an attribute of a placeholder that it lacks."""
        eng, b = self.eng, self.batch
        _, v, slot, a, n = key
        new = v == self.var and (slot in ("single", "back0", "last") or (
            slot == "first" and not self.take) or (slot == "nth" and not self.take))
        if new:
            return b.unknown(a, self.rows)
        kind = slot if slot in ("single", "first", "nth") else "last"
        flags = eng.store_lost.get((kind, v, a, n if kind == "nth" else 0))
        if flags is None or self.keys is None:
            return np.zeros(self.size, dtype=bool)
        got = flags[self.keys]
        if slot == "nth" and v == self.var:  # the new event where it is the n-th
            got = np.where(eng.length[v][self.keys] >= n, got, b.unknown(a, self.rows))
        return got

    def _ref(self, key: tuple) -> tuple[Any, Any]:
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
