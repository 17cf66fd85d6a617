"""The history sketch with its heavy hitters kept apart: a sketch that keeps RC-ACEP's ranking.

Sources: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016, §3.2 (Algorithm 2, line 8: a
candidate's multiplicity ``z/c`` and its score ``|b|·z/c``) and §4 (the sketch, Algorithms
3-4, Theorem 4); Metwally, Agrawal and El Abbadi, ICDT 2005 (Space-Saving,
:mod:`cep_core.approx.heavy_hitters`); the filter in front of a count-min sketch as in
Roy, Khan and Alonso, "Augmented sketch", SIGMOD 2016, §3.

**Why.** A few match vectors (the seed's, the first states') take most of ℋ's visits. In
§4's sketch their counts share cells with every rare vector, so a rare, deep vector's
count comes out tens of times too large and its multiplicity ``z/c``, the signal RC-ACEP
ranks by, is lost (docs/acep.md).

**The store.** ``slots`` Space-Saving slots keep the most visited vectors by key, each
with its count and its own match map. The rest go to a count-min sketch of ``depth`` ×
``width`` cells (:class:`cep_core.approx.sketch.SketchStore`), each a count and a map:

* a visit of a vector in a slot adds to the slot's count; any other visit goes to the
  cells (the conservative update), and the vector takes the slot of the least count once
  its cells' estimate exceeds that count (Augmented sketch's exchange: it enters with
  that estimate and its cells' map; the vector it displaces leaves its count gathered
  since it entered and its map in its own cells);
* a bundle's bit goes to the vector's slot, or else to its cells;
* a lookup of a vector in a slot reads the slot alone (its count and map); of any other
  vector the cells (Algorithm 4), the count capped by the least slot count. The cells
  take Theorem 4's shape for the vectors outside the slots, at most two rows deep
  (:func:`filtered_shape`).

**Guarantees.** Counts and maps err upwards only: a lookup's count is at least the
vector's visits and its map holds every bundle the vector led to. A slot's count is
exact if its vector entered before any other vector's visit went to the cells (as in
:meth:`FilteredSketch.add`, which places the most visited vectors of an exact history);
otherwise it errs by at most what the cells erred by when it entered. A vector in the
cells errs as count-min does over the cells' visits alone: by at most ``e/width`` of
their sum with probability ``1 − e^{−depth}`` (Cormode and Muthukrishnan, 2005), and by
at most the least slot count whatever the hashes. Its map's false bits are Theorem 4's
with α the vectors in the cells per bundle (:func:`filtered_shape`). Same seed, same
visits: the same store (deterministic).

**Memory** is fixed: ``slots`` × (key, count, error, map) + ``depth·width`` × (count,
map), whatever the vectors seen (:meth:`FilteredSketch.memory_bytes`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from cep_core.approx.heavy_hitters import SpaceSaving
from cep_core.approx.history import bit_indices
from cep_core.approx.sketch import SketchStore, sketch_shape

__all__ = ["FilteredSketch", "filtered_shape"]


def filtered_shape(items: Iterable[tuple[int, int, int]], slots: int, cells: int,
                   max_depth: int = 2) -> tuple[int, int]:
    """(depth, width) of the cells for the (vector, count, map) triples of an exact
    history whose ``slots`` most visited vectors take the slots: Theorem 4's shape
    (:func:`cep_core.approx.sketch.sketch_shape`) with α the mean number, over the
    bundles, of the *other* vectors whose map holds the bundle's bit, its depth capped
    at ``max_depth`` rows (every row is a read that RC-ACEP pays for on each lookup
    outside the slots; few vectors outside them give a small α and Theorem 4 then asks
    for a hundred rows and more: docs/acep.md).

    >>> filtered_shape([(1, 9, 0b11), (2, 1, 0b11), (3, 1, 0b11)], slots=1, cells=8)
    (2, 4)
    >>> filtered_shape([(1, 9, 0b11), (2, 1, 0b11), (3, 1, 0b11)], 1, 8, max_depth=8)
    (3, 2)
    """
    ranked = sorted(items, key=lambda x: (-x[1], x[0]))
    per_bit: dict[int, int] = {}
    for _, _, bits in ranked[slots:]:
        for i in bit_indices(bits).tolist():
            per_bit[i] = per_bit.get(i, 0) + 1
    alpha = sum(per_bit.values()) / len(per_bit) if per_bit else 1.0
    depth = min(max_depth, sketch_shape(cells, alpha)[0])
    return depth, cells // depth


class FilteredSketch:
    """A store of ℋ (:class:`cep_core.approx.history.Store`): Space-Saving slots for the
    most visited match vectors beside the history sketch's cells (module doc)."""

    def __init__(self, slots: int, depth: int, width: int, seed: int = 0):
        self.heavy = SpaceSaving(slots)
        self.maps: list[int] = [0] * slots
        self.entered = np.zeros(slots, dtype=np.int64)  # a slot's count when it entered
        self.cells = SketchStore(depth, width, seed, conservative=True)
        self.rows_read = 0

    def visit(self, v: int, n: int = 1) -> None:
        """A visit of ``v`` (module doc: to its slot, else to the cells)."""
        heavy = self.heavy
        s = heavy.slot_of.get(v)
        if s is not None:
            heavy.add(v, n)
            return
        cells = self.cells
        cells.visit(v, n)
        if len(heavy) < heavy.slots or cells.estimate(v) > heavy.bound():
            self._enter(v)

    def _enter(self, v: int) -> None:
        """``v`` takes a free slot or the least one's, with its cells' count and map."""
        heavy, cells = self.heavy, self.cells
        est, bits = cells.lookup(v)
        cells.rows_read -= cells.depth
        full = len(heavy) == heavy.slots
        s = int(np.argmin(heavy.count)) if full else len(heavy)
        gathered, old_bits = int(heavy.count[s] - self.entered[s]), self.maps[s]
        _, old = heavy.place(v, est, est)
        if old is not None:
            if gathered:
                cells.visit(old, gathered)
            cells.mark(old, old_bits)
        self.maps[s], self.entered[s] = bits, est

    def mark(self, v: int, bits: int) -> None:
        """A bundle's bits for ``v``: in its slot, else in its cells."""
        s = self.heavy.slot_of.get(v)
        if s is None:
            self.cells.mark(v, bits)
        else:
            self.maps[s] |= bits

    def lookup(self, v: int) -> tuple[int, int]:
        """(count, map) of ``v``: its slot's, else its cells' (count capped)."""
        heavy = self.heavy
        s = heavy.slot_of.get(v)
        self.rows_read += 1
        if s is not None:
            return int(heavy.count[s]), self.maps[s]
        c, bits = self.cells.lookup(v)
        self.rows_read += self.cells.depth
        return (min(c, heavy.bound()) if len(heavy) == heavy.slots else c), bits

    def add(self, items: Iterable[tuple[int, int, int]]) -> None:
        """Fold an exact history's (vector, count, map) triples into an empty store: its
        most visited vectors in the slots, exactly; the rest in the cells."""
        ranked = sorted(items, key=lambda x: (-x[1], x[0]))
        heavy = self.heavy
        for v, c, bits in ranked[:heavy.slots]:
            s, _ = heavy.place(v, c, 0)
            heavy.total += c
            self.maps[s], self.entered[s] = bits, 0
        self.cells.add(ranked[heavy.slots:])

    def vectors(self) -> int:
        return self.heavy.slots + self.cells.vectors()

    def seal(self) -> None:
        """Nothing to drop: a lookup reads the slots and the cells."""

    def memory_bytes(self, nbits: int) -> int:
        """Modelled bytes: the slots (key, count, error, map) and the cells (count, map)."""
        maps = self.heavy.slots * ((nbits + 7) // 8)
        return self.heavy.memory_bytes() + maps + self.cells.memory_bytes(nbits)
