"""The history sketch: a count-min sketch whose cells also hold a match map.

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016, §4:

* ``d`` rows of ``l`` cells, each a count and a bitmap (one bit per match bundle);
  ``d`` hash functions from a pairwise independent family, ``h(x) = ((a·x + b) mod p)
  mod l`` with the Mersenne prime ``p = 2^61 − 1`` (Cormode's count-min sketch);
* Algorithm 3 (BUILDSKETCH): a visit of match vector ``v`` adds one to
  ``count[i, h_i(v)]`` in every row; a full match sets its bundle's bit in the cells of
  every vector on its trajectory (:meth:`SketchStore.visit`, :meth:`SketchStore.mark`);
* Algorithm 4 (LOOKUPSKETCH): the count is the minimum over the rows, the match map the
  bitwise AND (:meth:`SketchStore.lookup`). Both can only err upwards (§4), and a false
  bit implies an over-count (Theorem 3);
* Theorem 4: for ``c = d·l`` cells, the chance that a bundle's bit is falsely set is
  least for ``l = α / ln 2`` and ``d = (c / α)·ln 2``, where α is the number of match
  vectors on the way to the bundle (their mean over the bundles) — :func:`sketch_shape`.

With ``conservative`` (the conservative update of Estan and Varghese, "New directions in
traffic measurement and accounting", SIGCOMM 2002, §3.3; not in the paper) a visit
raises each of ``v``'s cells only to ``v``'s new least count (the least over its cells
plus ``n``): a lookup still never under-counts, and over-counts less.

Folding an exact history into a sketch (:meth:`SketchStore.add`) gives the cells that
Algorithm 3 gives over the same run: counts add and maps OR, cell by cell.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from cep_core.approx.history import COUNT_BYTES

__all__ = ["SketchStore", "sketch_shape", "MERSENNE_61"]

MERSENNE_61 = (1 << 61) - 1


def sketch_shape(cells: int, alpha: float) -> tuple[int, int]:
    """(d, l) for ``cells`` = d·l cells (Theorem 4): ``l = α/ln 2`` and
    ``d = (c/α)·ln 2``, rounded to whole rows (at least one) with ``l = c // d``.

    >>> sketch_shape(800, 20.0)
    (28, 28)
    >>> sketch_shape(800, 2000.0)
    (1, 800)
    """
    if cells < 1 or not alpha > 0:
        raise ValueError("a sketch needs one cell at least and α > 0")
    d = max(1, min(cells, round(cells / alpha * math.log(2))))
    return d, cells // d


class SketchStore:
    """A history sketch of ``depth`` × ``width`` cells (module doc); ``seed`` draws the
    hash functions. Stores behind :class:`cep_core.approx.history.History` made with
    the same seed hash alike (the secondary copy of §5 matches the primary).
    ``conservative``: visits by the conservative update (module doc)."""

    def __init__(self, depth: int, width: int, seed: int = 0, conservative: bool = False):
        if depth < 1 or width < 1:
            raise ValueError("a sketch has one row and one column at least")
        self.depth, self.width, self.conservative = depth, width, conservative
        self.rows_read = 0  # cells read by lookups (a lookup reads one per row)
        rng = np.random.default_rng(seed)
        self._a = [int(x) for x in rng.integers(1, MERSENNE_61, size=depth)]
        self._b = [int(x) for x in rng.integers(0, MERSENNE_61, size=depth)]
        self.count = np.zeros((depth, width), dtype=np.int64)
        self._rows = np.arange(depth)
        self.bits: list[list[int]] = [[0] * width for _ in range(depth)]
        self._memo: dict[int, tuple[int, ...]] = {}

    def cells(self, v: int) -> tuple[int, ...]:
        """``h_1(v) .. h_d(v)``: the column of ``v`` in each row."""
        got = self._memo.get(v)
        if got is None:
            w = self.width
            got = self._memo[v] = tuple(((a * v + b) % MERSENNE_61) % w
                                        for a, b in zip(self._a, self._b, strict=True))
        return got

    def visit(self, v: int, n: int = 1) -> None:
        """Algorithm 3, lines 2-4 (or the conservative update, class doc)."""
        cols = self.cells(v)
        if self.conservative:
            at = self.count[self._rows, cols]
            self.count[self._rows, cols] = np.maximum(at, at.min() + n)
            return
        for i, j in enumerate(cols):
            self.count[i, j] += n

    def estimate(self, v: int) -> int:
        """The least count over ``v``'s cells (Algorithm 4, line 2)."""
        return int(self.count[self._rows, self.cells(v)].min())

    def mark(self, v: int, bits: int) -> None:
        """Algorithm 3, lines 7-9: the bundle bits ``bits`` in every cell of ``v``."""
        rows = self.bits
        for i, j in enumerate(self.cells(v)):
            rows[i][j] |= bits

    def add(self, items: Iterable[tuple[int, int, int]]) -> None:
        """Fold (vector, count, match map) triples in (an exact history's
        :meth:`~cep_core.approx.history.ExactStore.items`)."""
        for v, c, bits in items:
            if c:
                self.visit(v, c)
            if bits:
                self.mark(v, bits)

    def lookup(self, v: int) -> tuple[int, int]:
        """Algorithm 4: the least count and the AND of the maps over the rows."""
        cols = self.cells(v)
        c = int(self.count[self._rows, cols].min())
        self.rows_read += self.depth
        rows = self.bits
        bm = rows[0][cols[0]]
        for i in range(1, self.depth):
            bm &= rows[i][cols[i]]
        return c, bm

    def vectors(self) -> int:
        return self.depth * self.width

    def seal(self) -> None:
        """Nothing to drop: a lookup reads every row."""

    def memory_bytes(self, nbits: int) -> int:
        """Modelled bytes: per cell a count and a match map of ``nbits``."""
        return self.depth * self.width * (COUNT_BYTES + (nbits + 7) // 8)
