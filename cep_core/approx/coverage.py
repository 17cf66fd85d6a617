"""RC-ACEP's best-first order: online greedy maximum coverage with lazy refresh.

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016, §3.2, Algorithm 2, lines 4-20,
and Example 6.

Each candidate match node comes with the visit count ``c`` and match map ``b`` of its
match vector in the history; its multiplicity is ``m = z / c`` (line 8: the counts of
vectors visited more often are scaled down) and its first score ``|b|·m`` (line 9).
Candidates leave a max-heap in score order. ``max[i]`` is the largest multiplicity with
which bundle ``i`` is covered so far; a version table keeps, per version, the bitmap of
the entries of ``max`` updated since (lines 14-20). A popped candidate whose map meets
the updates since its version gets the exact increment ``Σ_{i∈b} max(m − max[i], 0)``
(line 16) and goes back; otherwise its score is exact and it is processed (line 19), and
``max``, the version and the table are updated (line 20). A score is always an upper
bound of the true increment (the A* argument of §3.2), so the order is the greedy one.
``max`` only grows, so a candidate refreshed to 0 keeps 0: it goes back without its map
and is not refreshed again (the order is the same, the refreshes fewer).

Ties (vectors never seen score 0) leave in the order the candidates were given.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from cep_core.approx.history import bit_indices

__all__ = ["CoverageQueue"]


class CoverageQueue:
    """Algorithm 2's priority queue and version table for one letter (module doc) over
    match maps of ``nbits`` bits. ``ops`` counts the heap operations and refreshes (the
    selection overhead a device is charged for)."""

    def __init__(self, nbits: int, z: float = 1.0):
        self.z = z
        self.max = np.zeros(max(1, nbits))
        self.since: list[int] = [0]  # since[v - 1]: bits of max updated since version v
        self.version = 1
        self._heap: list[tuple] = []
        self._seq = 0
        self.pushes = self.pops = self.refreshes = 0

    def __len__(self) -> int:
        return len(self._heap)

    def put(self, item: Any, count: int, bits: int, idx: np.ndarray | None = None) -> float:
        """Line 7-11: queue ``item`` with count ``c`` and match map ``b`` (``idx``: the
        positions of its bits, if known); its score."""
        m = self.z / count if count > 0 else 0.0
        score = bits.bit_count() * m if m else 0.0
        self._push(-score, item, m, bits, idx)
        return score

    def _push(self, neg: float, item: Any, m: float, bits: int, idx: Any,
              seq: int | None = None) -> None:
        if seq is None:
            seq, self._seq = self._seq, self._seq + 1
        heapq.heappush(self._heap, (neg, seq, self.version, item, m, bits, idx))
        self.pushes += 1

    def pop(self) -> tuple[Any, float] | None:
        """Lines 13-19: the next candidate to process and its score (None when empty);
        marks its coverage (line 20)."""
        heap = self._heap
        while heap:
            neg, seq, ver, item, m, bits, idx = heapq.heappop(heap)
            self.pops += 1
            if bits and self.since[ver - 1] & bits:
                if idx is None:
                    idx = _indices(bits)
                score = float(np.maximum(m - self.max[idx], 0.0).sum())
                self.refreshes += 1
                if score <= 0.0:  # max only grows: a score of 0 stays exact, never refreshed
                    bits, idx = 0, None
                self._push(-score, item, m, bits, idx, seq)
                continue
            if bits and m > 0:
                self._cover(m, bits, idx)
            return item, -neg
        return None

    def _cover(self, m: float, bits: int, idx: Any) -> None:
        if idx is None:
            idx = _indices(bits)
        mx = self.max
        grow = idx[mx[idx] < m]
        if not len(grow):
            return
        mx[grow] = m
        changed = 0
        for i in grow.tolist():
            changed |= 1 << i
        since = self.since
        for v in range(len(since)):
            since[v] |= changed
        since.append(0)
        self.version += 1


def _indices(bits: int) -> np.ndarray:
    return bit_indices(bits)
