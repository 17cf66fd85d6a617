"""The history ℋ of past matching: match vectors, visit counts, match maps, bundles.

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016:

* §3.2, Definition 3: the *match point* of a match trajectory is the time of its last
  event; a *match bundle* is a maximal set of trajectories whose match points chain
  within ``w`` of each other. Match points arrive in stream order, so a new point
  starts a new bundle exactly when it is more than ``w`` after the previous one
  (:class:`Bundles`).
* §3.2, Definition 4: a *match vector* is (state, remaining_w, err, time_since_last);
  remaining_w and time_since_last are cut into ``buckets`` equal intervals of the window
  (:class:`MatchVectors`). Each vector has a visit count and a *match map*, one bit per
  match bundle, set when a trajectory through the vector ends in that bundle. Bitmaps
  are Python ints; vectors are packed into ints.
* §5: while ℋ is used, a second copy of counts and maps accumulates; when the new
  bundles fill the secondary map (``capacity`` bits), it replaces the primary
  (:class:`History`; the first fill, from unbudgeted ACEPMATCH, is the build of §6: "until
  there are 512 match bundles").

The store of counts and maps is exact (:class:`ExactStore`), a sketch
(:class:`cep_core.approx.sketch.SketchStore`, §4; the filtered one,
:mod:`cep_core.approx.filtered_sketch`) or the trajectory store
(:mod:`cep_core.approx.trajectory_store`); a store that becomes the primary is sealed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np

from cep_core.errors import QueryError
from cep_core.plan import START, Plan

__all__ = ["MatchVectors", "Bundles", "Store", "ExactStore", "History", "bit_indices",
           "VECTOR_BYTES", "COUNT_BYTES"]

VECTOR_BYTES = 16  # a match vector: four 4-byte ints (the modelled memory, module doc)
COUNT_BYTES = 8


class MatchVectors:
    """Match vectors of match nodes (Definition 4), packed into ints.

    >>> mv = MatchVectors(states=4, window=10, k=2, buckets=5)
    >>> mv.unpack(mv.of_values(state=2, remaining=7.5, err=1, since_last=0.5))
    (2, 3, 1, 0)
    """

    def __init__(self, states: int, window: float, k: int, buckets: int = 8):
        if not (window > 0 and math.isfinite(window)):
            raise QueryError("RC-ACEP needs a finite WITHIN window (its history cuts the "
                             "window into buckets)")
        self.states, self.window, self.k, self.buckets = states, window, k, buckets
        self._scale = buckets / window

    @classmethod
    def for_plan(cls, plan: Plan, k: int, buckets: int = 8) -> MatchVectors:
        return cls(len(plan.positions), plan.window, k, buckets)

    def of_values(self, state: int, remaining: float, err: int, since_last: float) -> int:
        b = self.buckets
        rw = min(b - 1, max(0, int(remaining * self._scale)))
        tsl = min(b - 1, max(0, int(since_last * self._scale)))
        return (((state + 1) * b + rw) * (self.k + 1) + err) * b + tsl

    def __call__(self, node: Any, t: Any) -> int:
        """The vector of a match node (or the seed: the start state, the whole window
        left, no error, nothing since) at time ``t``."""
        if node.state == START:
            return self.of_values(START, self.window, 0, 0)
        return self.of_values(node.state, self.window - (t - node.start), node.err,
                              t - node.last)

    def unpack(self, v: int) -> tuple[int, int, int, int]:
        """(state, remaining_w bucket, err, time_since_last bucket) of a packed vector."""
        b, kk = self.buckets, self.k + 1
        v, tsl = divmod(v, b)
        v, err = divmod(v, kk)
        s1, rw = divmod(v, b)
        return s1 - 1, rw, err, tsl

    @property
    def universe(self) -> int:
        """How many packed vectors there can be."""
        return (self.states + 1) * self.buckets * (self.k + 1) * self.buckets


class Bundles:
    """Match bundles (Definition 3) as match points arrive in stream order, per
    partition: with ``SAME[..]`` ACEPMATCH runs an instance per partitioned sub-stream
    (§3.1), so a bundle lies in one partition's sub-stream. Ids count across partitions.

    >>> b = Bundles(window=5)
    >>> [b.of(t) for t in (1, 4, 9, 20, 24)]
    [0, 0, 0, 1, 1]
    >>> [b.of(t, key) for t, key in ((25, "x"), (26, "y"), (27, "x"))]
    [2, 3, 2]
    """

    def __init__(self, window: float):
        self.window = window
        self.last: dict[Any, tuple[Any, int]] = {}  # partition -> (last point, its bundle)
        self.count = 0

    def of(self, t: Any, key: Any = ()) -> int:
        """The id of the bundle of a match point at ``t`` in partition ``key`` (points of
        one partition come in stream order; one a little earlier joins the last bundle)."""
        got = self.last.get(key)
        if got is None or t - got[0] > self.window:
            got = (t, self.count)
            self.count += 1
        else:
            got = (max(t, got[0]), got[1])
        self.last[key] = got
        return got[1]


def bit_indices(bits: int) -> np.ndarray:
    """The positions of the set bits of ``bits``.

    >>> bit_indices(0b10110).tolist()
    [1, 2, 4]
    """
    if not bits:
        return np.zeros(0, dtype=np.int64)
    raw = np.frombuffer(bits.to_bytes((bits.bit_length() + 7) // 8, "little"), np.uint8)
    return np.flatnonzero(np.unpackbits(raw, bitorder="little"))


class Store(Protocol):
    """Visit counts and match maps by match vector (exact or sketched); ``rows_read``
    counts the entries or cells its lookups have read (what RC-ACEP is charged for)."""

    rows_read: int

    def visit(self, v: int, n: int = 1) -> None: ...
    def mark(self, v: int, bits: int) -> None: ...
    def lookup(self, v: int) -> tuple[int, int]: ...
    def memory_bytes(self, nbits: int) -> int: ...
    def vectors(self) -> int: ...
    def seal(self) -> None: ...  # it has become the primary: only lookups follow (§5)


class ExactStore:
    """ℋ itself (Definition 4): per match vector its visit count and match map."""

    def __init__(self) -> None:
        self.count: dict[int, int] = {}
        self.bits: dict[int, int] = {}
        self.rows_read = 0  # entries read by lookups (one each)

    def visit(self, v: int, n: int = 1) -> None:
        self.count[v] = self.count.get(v, 0) + n

    def mark(self, v: int, bits: int) -> None:
        self.bits[v] = self.bits.get(v, 0) | bits

    def lookup(self, v: int) -> tuple[int, int]:
        self.rows_read += 1
        return self.count.get(v, 0), self.bits.get(v, 0)

    def seal(self) -> None:
        """Nothing to drop: every count is read (the primary keeps them all)."""

    def items(self) -> Iterable[tuple[int, int, int]]:
        """(vector, count, match map) of every vector seen."""
        for v in self.count.keys() | self.bits.keys():
            yield v, self.count.get(v, 0), self.bits.get(v, 0)

    def vectors(self) -> int:
        return len(self.count.keys() | self.bits.keys())

    def memory_bytes(self, nbits: int) -> int:
        """Modelled bytes: per vector its key, count and a match map of ``nbits``."""
        return self.vectors() * (VECTOR_BYTES + COUNT_BYTES + (nbits + 7) // 8)

    def alpha(self) -> float:
        """The mean number of match vectors whose map holds a bundle's bit (the α of
        Theorem 4, averaged over the bundles as §4 suggests); 1 without bundles."""
        per_bit: dict[int, int] = {}
        for bits in self.bits.values():
            for i in bit_indices(bits).tolist():
                per_bit[i] = per_bit.get(i, 0) + 1
        return sum(per_bit.values()) / len(per_bit) if per_bit else 1.0


class History:
    """ℋ with the double buffer of §5: lookups read the primary store; visits and new
    bundles go to the secondary, which replaces the primary when ``capacity`` new
    bundles have filled its maps (the first time: the build). ``store``: makes an empty
    store (exact by default)."""

    def __init__(self, vectors: MatchVectors, capacity: int = 512,
                 store: Callable[[], Any] = ExactStore):
        if capacity < 1:
            raise ValueError("a match map holds one bundle at least")
        self.vectors, self.capacity, self._new_store = vectors, capacity, store
        self.primary = store()
        self.secondary = store()
        self.bundles = Bundles(vectors.window)
        self.primary_bundles = 0  # bundles in the primary's maps
        self.secondary_bundles = 0
        self._bits: dict[int, int] = {}  # bundle id -> its bit in the secondary
        self.swaps = 0
        self.version = 0  # changes when the primary does (for caches of lookups)

    @property
    def built(self) -> bool:
        return self.swaps > 0

    def visit(self, v: int) -> None:
        """A match node was at vector ``v`` (its count in the secondary)."""
        self.secondary.visit(v)

    def match(self, vectors: list[int], t: Any, key: Any = ()) -> None:
        """A trajectory through ``vectors`` completed a match with match point ``t`` in
        partition ``key``: set its bundle's bit in each vector's secondary map."""
        bundle = self.bundles.of(t, key)
        bit_of = self._bits
        if bundle not in bit_of:
            if self.secondary_bundles == self.capacity:
                self.promote()
            bit_of[bundle] = self.secondary_bundles
            self.secondary_bundles += 1
        bit = 1 << bit_of[bundle]
        mark = self.secondary.mark
        for v in vectors:
            mark(v, bit)

    def promote(self) -> None:
        """The secondary becomes the primary (§5), sealed (only read from now on); a new
        secondary starts."""
        self.primary, self.secondary = self.secondary, self._new_store()
        self.primary.seal()
        self.primary_bundles, self.secondary_bundles = self.secondary_bundles, 0
        self._bits = {}
        self.swaps += 1
        self.version += 1

    def lookup(self, v: int) -> tuple[int, int]:
        """(visit count, match map) of ``v`` in the primary."""
        return self.primary.lookup(v)

    def memory_bytes(self) -> int:
        """Modelled bytes of both buffers (module doc of the store)."""
        return self.primary.memory_bytes(self.capacity) + \
            self.secondary.memory_bytes(self.capacity)
