"""Versions of remote data elements: what a source publishes while a run goes on
(dissertation §6.3.4: "the baseline load profiles are continuously updated based on the
latest feedback from DR response monitoring"; served by EIRES, Ch. 5).

A :class:`Versions` is a publication schedule for the elements of one lookup name:
rows (element arguments, publish time, value), as arrays. Per element the rows, ordered
by publish time, are its versions 1, 2, ..; version 0 is the source's table value,
valid from -inf. The version *current* at time ``s`` is the one with the latest publish
time ``<= s``. How fetchers serve versions and react to their invalidations is
:mod:`cep_core.remote.batch`'s module doc.

Everything is vectorised over elements: the schedule is sorted once by (element hash,
publish time); the version current at ``s`` is one binary search in a combined
(element, time rank) code; the first invalidation that reaches a copy of version ``v``
is a per-element suffix minimum over the later versions, computed once per latency
model (:meth:`Versions.invalidation_table`).

>>> v = Versions("L", [np.array([1, 1, 2]), np.array([0, 0, 0])],
...              times=np.array([20.0, 10.0, 5.0]), values=np.array([0.3, 0.2, 0.9]))
>>> h = element_hash("L", [np.array([1, 1, 1, 3]), np.array([0, 0, 0, 0])])
>>> v.version_at(h, np.array([9.0, 10.0, 25.0, 25.0])).tolist()
[0, 1, 2, 0]
>>> v.value_row(h[:3], np.array([0, 1, 2])).tolist(), v.values[1]
([-1, 0, 1], np.float64(0.3))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from cep_core.errors import QueryError
from cep_core.remote.hashing import element_hash

__all__ = ["Versions"]


class Versions:
    """The publication schedule of lookup ``name`` (module doc).

    Parameters
    ----------
    name : str
        The lookup name the source serves (``λ``, ``γ``, ..).
    args : sequence of numpy.ndarray
        The element arguments, one array per argument, one entry per publication (the
        same columns, in the same order, as the fetcher's ``args``).
    times : numpy.ndarray
        When each version is published [time units of the stream], finite.
    values : numpy.ndarray
        Each version's value.

    Attributes
    ----------
    keys : numpy.ndarray of uint64
        The elements with versions (their :func:`element_hash`), sorted.
    start, count : numpy.ndarray of int64
        Per element, its first row and its number of versions.
    times, values : numpy.ndarray
        Per row (sorted by element, then publish time), the publish time and value; row
        ``start[e] + k - 1`` is version ``k`` of element ``e``.
    """

    def __init__(self, name: str, args: Sequence[np.ndarray], times: np.ndarray,
                 values: np.ndarray):
        times = np.asarray(times, dtype=np.float64)
        values = np.asarray(values)
        cols = [np.asarray(a) for a in args]
        if not cols or any(len(c) != len(times) for c in cols) or len(values) != len(times):
            raise QueryError(f"versions of {name}[..]: give argument columns, publish times "
                             "and values of one length each")
        if not np.isfinite(times).all():
            raise QueryError(f"versions of {name}[..]: publish times must be finite")
        self.name, self.dtypes = name, tuple(c.dtype for c in cols)
        h = element_hash(name, cols) if len(times) else np.zeros(0, dtype=np.uint64)
        order = np.lexsort((np.arange(len(times)), times, h))
        hs, self.times, self.values = h[order], times[order], values[order]
        self.keys, self.start, self.count = np.unique(hs, return_index=True,
                                                      return_counts=True)
        self._grid = np.unique(self.times)
        rank = np.searchsorted(self._grid, self.times) + 1
        element = np.repeat(np.arange(len(self.keys)), self.count)
        self._code = element * (len(self._grid) + 1) + rank  # sorted

    def __len__(self) -> int:
        """The number of versions published (rows)."""
        return len(self.times)

    def element(self, h: np.ndarray) -> np.ndarray:
        """The index of each element in :attr:`keys`, -1 for one without versions."""
        if not len(self.keys):
            return np.full(len(h), -1)
        i = np.minimum(np.searchsorted(self.keys, h), len(self.keys) - 1)
        return np.where(self.keys[i] == h, i, -1)

    def version_at(self, h: np.ndarray, s: np.ndarray | float) -> np.ndarray:
        """The version of each element ``h`` current at time ``s``: the number of its
        versions published at or before ``s`` (0: the table's)."""
        e = self.element(h)
        known = e >= 0
        s = np.broadcast_to(np.asarray(s, dtype=np.float64), h.shape)
        q = np.where(known, e, 0) * (len(self._grid) + 1) + \
            np.searchsorted(self._grid, s, side="right")
        if not len(self.keys):
            return np.zeros(len(h), dtype=np.int64)
        v = np.searchsorted(self._code, q, side="right") - self.start[np.where(known, e, 0)]
        return np.where(known, v, 0)

    def value_row(self, h: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The row of :attr:`values` holding version ``v`` of each element ``h`` (-1 for
        version 0, the table's)."""
        e = self.element(h)
        if not len(self.keys):
            return np.full(len(h), -1)
        ok = (e >= 0) & (v > 0)
        return np.where(ok, self.start[np.where(ok, e, 0)] + v - 1, -1)

    def invalidation_table(self, latency: Callable[[np.ndarray, np.ndarray], np.ndarray]
                           ) -> np.ndarray:
        """Per row, the earliest time an invalidation of that version or a later one
        reaches a device: ``min over k' >= k of (publish time(k') + latency(e, k'))``,
        ``latency(h, v)`` giving each element-version's latency [time units]."""
        if not len(self):
            return np.zeros(0)
        version = np.arange(len(self)) - np.repeat(self.start, self.count) + 1
        arrives = self.times + latency(np.repeat(self.keys, self.count), version)
        element = np.repeat(np.arange(len(self.keys)), self.count)
        reverse = pd.Series(arrives[::-1]).groupby(element[::-1]).cummin()
        return reverse.to_numpy()[::-1]

    def expiry(self, h: np.ndarray, v: np.ndarray, table: np.ndarray) -> np.ndarray:
        """When a copy of version ``v`` of each element ``h`` is first invalidated (the
        earliest arrival of an invalidation of a later version; inf when there is
        none), ``table`` from :meth:`invalidation_table`."""
        e = self.element(h)
        if not len(self.keys):
            return np.full(len(h), np.inf)
        safe = np.where(e >= 0, e, 0)
        ok = (e >= 0) & (v < self.count[safe])
        return np.where(ok, table[np.where(ok, self.start[safe] + v, 0)], np.inf)
