"""A store of ℋ that keeps only what RC-ACEP's ranking reads: the vectors on match trajectories.

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016, §3.2 (Definition 4: a match
vector's visit count and match map; Algorithm 2, lines 8-9: a candidate's multiplicity
``z/c`` and its first score ``|b|·z/c``), §4 (the sketch, Algorithms 3-4) and §5 (ℋ's two
buffers: lookups read the primary only, visits and new bundles go to the secondary); for
the cells, Cormode and Muthukrishnan, "An improved data stream summary: the count-min
sketch and its applications", J. Algorithms 55(1), 2005, §3 (point queries), with the
conservative update of Estan and Varghese, SIGCOMM 2002, §3.3.

**Why.** Algorithm 2 scores a candidate ``|b|·z/c``: a vector whose match map ``b`` is
empty scores 0 whatever its count, and adds nothing to the coverage (lines 14-20). So a
lookup needs a vector's count only if its map is not empty, and most vectors (on Q1 over
letters, 1,332 of 2,062) never lead to a bundle. §4's sketch and the filtered sketch
(:mod:`cep_core.approx.filtered_sketch`) keep those counts in the cells the others read
and pay twice: a rare vector's count and map share cells with theirs (the ranking is
lost), and a lookup outside the slots reads every row (RC-ACEP is charged per row;
docs/acep.md).

**The store.**

* a *trajectory entry* per vector whose map is not empty: its key, count and map, in a
  hash table as the exact history's;
* the visits of every other vector in a *pre-entry counter*: exact counts by key
  (:class:`ExactCounts`, no maps), or count-min cells without maps (:class:`CellCounts`);
* a visit of a vector with an entry adds to the entry's count, of any other to the
  counter;
* a bundle's bit for a vector without an entry creates one: its count what the counter
  gives for the vector's visits so far, its map the bit;
* a lookup reads the table alone, one entry (as the exact history's): ``(count, map)``
  of an entry, else ``(0, 0)``, which scores 0 as ``(c, 0)`` does;
* :meth:`TrajectoryStore.seal`: when the store becomes the primary (§5: it is only read
  from then on) the counter goes; only the entries stay.

**Guarantees.** Maps are exact (a bit only ever goes to the vector's entry). With
:class:`ExactCounts` the counts are exact too, so RC-ACEP ranks every candidate as with
the exact history and is charged the same per lookup: it finds the same matches. With
:class:`CellCounts` a count never under-counts: an entry's count is its visits since it
entered plus the cells' estimate of those before, which errs upwards only, by at most
``e/width`` of the cells' visits with probability ``1 − e^{−depth}`` (count-min's point
query; the conservative update errs no more). Folding an exact history in
(:meth:`TrajectoryStore.add`) gives every entry its exact count. Same seed, same updates:
the same store.

**Memory** (modelled as the exact history's: a key 16 bytes, a count 8, a map
``⌈capacity/8⌉``): the primary, sealed, ``n_traj·(24 + ⌈capacity/8⌉)`` bytes, with
``n_traj`` the vectors on the trajectories of its ``capacity`` bundles, at most
``α·capacity`` (Theorem 4's α: the mean number of vectors that lead to a bundle) and at
most the exact history's vectors; the secondary, its entries and its counter: 24 bytes
per other vector seen (:class:`ExactCounts`, at most the exact history's size) or
``8·depth·width`` (:class:`CellCounts`, fixed). Theorem 4's fixed ``c`` cells do not
bound it (:meth:`TrajectoryStore.memory_bytes`).

>>> s = TrajectoryStore()
>>> for v in (3, 3, 5, 3):
...     s.visit(v)
>>> s.lookup(3), s.lookup(5)  # no map yet: scores 0 either way
((0, 0), (0, 0))
>>> s.mark(3, 0b10)
>>> s.visit(3)
>>> s.lookup(3), s.rows_read
((4, 2), 3)
>>> s.memory_bytes(64), s.seal(), s.memory_bytes(64)  # 3 with a map, 5 counted only
(56, None, 32)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from cep_core.approx.history import COUNT_BYTES, VECTOR_BYTES
from cep_core.approx.sketch import SketchStore

__all__ = ["TrajectoryStore", "PreEntryCounter", "ExactCounts", "CellCounts"]


class PreEntryCounter(Protocol):
    """The visits of vectors without a trajectory entry (module doc)."""

    def visit(self, v: int, n: int = 1) -> None: ...
    def take(self, v: int) -> int: ...
    def memory_bytes(self) -> int: ...


class ExactCounts:
    """Exact visit counts by key, without maps; :meth:`take` hands a count over.

    >>> c = ExactCounts()
    >>> c.visit(4, 2); c.take(4), c.take(4), c.memory_bytes()
    (2, 0, 0)
    """

    def __init__(self) -> None:
        self.count: dict[int, int] = {}

    def visit(self, v: int, n: int = 1) -> None:
        self.count[v] = self.count.get(v, 0) + n

    def take(self, v: int) -> int:
        """``v``'s count, which leaves the counter (its entry counts from now on)."""
        return self.count.pop(v, 0)

    def memory_bytes(self) -> int:
        """Modelled bytes: per vector its key and count."""
        return len(self.count) * (VECTOR_BYTES + COUNT_BYTES)


class CellCounts:
    """Count-min cells of ``depth`` × ``width`` counts without maps, by the conservative
    update (:class:`cep_core.approx.sketch.SketchStore`); :meth:`take` is the point
    query (the least count over ``v``'s cells: never less than ``v``'s visits)."""

    def __init__(self, depth: int, width: int, seed: int = 0):
        self.cells = SketchStore(depth, width, seed, conservative=True)

    def visit(self, v: int, n: int = 1) -> None:
        self.cells.visit(v, n)

    def take(self, v: int) -> int:
        return self.cells.estimate(v)

    def memory_bytes(self) -> int:
        """Modelled bytes: a count per cell."""
        return self.cells.vectors() * COUNT_BYTES


class TrajectoryStore:
    """A store of ℋ (:class:`cep_core.approx.history.Store`): trajectory entries for the
    vectors with a match map, ``counter`` (:class:`ExactCounts` by default) for the
    visits of the others (module doc)."""

    def __init__(self, counter: PreEntryCounter | None = None):
        self.counter: PreEntryCounter | None = counter if counter is not None \
            else ExactCounts()
        self.count: dict[int, int] = {}
        self.bits: dict[int, int] = {}
        self.rows_read = 0  # table entries read by lookups (one each)

    def visit(self, v: int, n: int = 1) -> None:
        """``n`` visits of ``v``: to its entry, else to the counter."""
        if v in self.count:
            self.count[v] += n
        else:
            self._counter().visit(v, n)

    def mark(self, v: int, bits: int) -> None:
        """Bundle bits for ``v``: in its entry, made with the counter's count if new."""
        if not bits:
            return
        if v not in self.count:
            self.count[v] = self._counter().take(v)
            self.bits[v] = 0
        self.bits[v] |= bits

    def _counter(self) -> PreEntryCounter:
        if self.counter is None:
            raise ValueError("a sealed store is only read (it is ℋ's primary)")
        return self.counter

    def lookup(self, v: int) -> tuple[int, int]:
        """(count, map) of ``v``'s entry, ``(0, 0)`` without one; one entry read."""
        self.rows_read += 1
        if v in self.bits:
            return self.count[v], self.bits[v]
        return 0, 0

    def seal(self) -> None:
        """The store has become ℋ's primary: drop the counter (module doc)."""
        self.counter = None

    def add(self, items: Iterable[tuple[int, int, int]]) -> None:
        """Fold an exact history's (vector, count, map) triples in: an entry with the
        exact count for every vector with a map, the others' counts to the counter."""
        for v, c, bits in items:
            if bits:
                self.count[v] = self.count.get(v, 0) + c
                self.bits[v] = self.bits.get(v, 0) | bits
            elif c:
                self.visit(v, c)

    def vectors(self) -> int:
        """Trajectory entries (the counter's vectors have none)."""
        return len(self.bits)

    def memory_bytes(self, nbits: int) -> int:
        """Modelled bytes: per entry a key, a count and a map of ``nbits``; the
        counter's."""
        entry = VECTOR_BYTES + COUNT_BYTES + (nbits + 7) // 8
        counter = self.counter.memory_bytes() if self.counter is not None else 0
        return len(self.bits) * entry + counter
