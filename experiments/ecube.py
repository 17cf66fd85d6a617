"""The ECube baseline of the A-Seq paper's Fig. 15 (Qi et al., SIGMOD 2014, §6.3).

As the A-Seq paper describes it (§6.3, "Shared A-Seq v/s ECube Sharing", citing Liu et
al., *E-Cube*, SIGMOD 2011): ECube shares "the computation of common substrings in
sequence construction followed by independent counting". Sequence construction is the
stack-based evaluation of §2.2 (Fig. 1, Eq. 3): one stack per event type, each event
pushed onto its type's stack, and at a trigger a depth-first search back through the
stacks builds every match ending there; aggregation is applied to the constructed
matches afterwards. ECube's sharing: the matches of a substring several queries hold
are constructed once (at each event of the substring's last type, into a stack of
substring matches) and every query's search reads them instead of searching the
substring's stacks again; each query then keeps and counts its own matches.

:class:`ECube` does that for COUNT with A-Seq's output semantics (at each trigger, the
matches ending at or before it whose first event lies in its window,
``first.time >= trigger.time - window``; stream order breaks time ties), so its counts
equal :class:`cep_core.aggregate.SeqAggregator`'s. The stacks are the events' indices
per type (a bisection finds the events before a bound, as SASE's pointers do); a
query's complete matches wait in a heap by their first time until they leave the window.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ECube"]


class ECube:
    """Stack-based construction shared over common substrings, then counting (module
    docstring). ``plans``: query name -> its pieces (event types), as for
    :class:`cep_core.aggregate.ChopConnect`; a piece that two queries (or two places)
    hold is constructed once."""

    def __init__(self, plans: Mapping[str, Sequence[Sequence[str]]], window: float):
        self.window = float(window)
        self.plans = {name: [tuple(p) for p in pieces] for name, pieces in plans.items()}
        uses: dict[tuple[str, ...], int] = {}
        for pieces in self.plans.values():
            for p in pieces:
                uses[p] = uses.get(p, 0) + 1
        self.shared = {p for p, n in uses.items() if n > 1 and len(p) > 1}
        self.built_at: dict[str, list[tuple[str, ...]]] = {}
        for p in self.shared:
            self.built_at.setdefault(p[-1], []).append(p)
        self.triggers: dict[str, list[str]] = {}
        for name, pieces in self.plans.items():
            self.triggers.setdefault(pieces[-1][-1], []).append(name)
        self.constructed = 0                # matches built (substring and complete)

    def run(self, events: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
        """Per query, its count at each of its triggers."""
        times = [float(e["time"]) for e in events]
        stacks: dict[str, list[int]] = {}
        built: dict[tuple[str, ...], list[tuple[int, int, float]]] = {p: [] for p in
                                                                       self.shared}
        kept: dict[str, list[float]] = {name: [] for name in self.plans}
        out: dict[str, list[int]] = {name: [] for name in self.plans}
        for i, e in enumerate(events):
            typ, lo = e["type"], times[i] - self.window
            stacks.setdefault(typ, []).append(i)
            for p in self.built_at.get(typ, ()):  # shared construction, once per substring
                for first in self._search(p, i, lo, stacks, times, built):
                    built[p].append((first, i, times[first]))
                    self.constructed += 1
            for name in self.triggers.get(typ, ()):
                heap = kept[name]
                for first in self._search_query(self.plans[name], i, lo, stacks, times,
                                                built):
                    heapq.heappush(heap, times[first])
                    self.constructed += 1
                while heap and heap[0] < lo:                    # left the window
                    heapq.heappop(heap)
                out[name].append(len(heap))
        return out

    def _search_query(self, pieces: list[tuple[str, ...]], last: int, lo: float,
                      stacks: dict, times: list[float], built: dict) -> list[int]:
        """The first events of the query's matches that end at ``last``: the last piece
        ends there, each piece before ends before the next one's first event."""
        ends = [last]
        for k in range(len(pieces) - 1, -1, -1):
            firsts: list[int] = []
            for end in ends:
                if k == len(pieces) - 1:
                    firsts += self._piece(pieces[k], end, lo, stacks, times, built)
                else:
                    firsts += self._piece_before(pieces[k], end, lo, stacks, times, built)
            ends = firsts
        return ends

    def _piece(self, piece: tuple[str, ...], end: int, lo: float, stacks: dict,
               times: list[float], built: dict) -> list[int]:
        """First events of the piece's matches ending exactly at ``end``."""
        if piece in built:
            rows = built[piece]
            j = bisect_left(rows, end, key=lambda r: r[1])
            out = []
            while j < len(rows) and rows[j][1] == end:
                if rows[j][2] >= lo:
                    out.append(rows[j][0])
                j += 1
            return out
        return self._search(piece, end, lo, stacks, times, built)

    def _piece_before(self, piece: tuple[str, ...], before: int, lo: float, stacks: dict,
                      times: list[float], built: dict) -> list[int]:
        """First events of the piece's matches ending before event ``before``."""
        if piece in built:                                      # the shared matches
            rows = built[piece]
            hi = bisect_left(rows, before, key=lambda r: r[1])
            return [f for f, _, t in rows[:hi] if t >= lo]
        stack = stacks.get(piece[-1], [])
        out: list[int] = []
        for end in stack[bisect_left(stack, True, key=lambda x: times[x] >= lo):
                         bisect_left(stack, before)]:
            out += self._search(piece, end, lo, stacks, times, built)
        return out

    @staticmethod
    def _search(piece: tuple[str, ...], end: int, lo: float, stacks: dict,
                times: list[float], built: dict) -> list[int]:
        """Depth-first search back through the stacks (§2.2): the first events of the
        piece's matches that end at ``end`` and start at or after time ``lo``."""
        out: list[int] = []
        todo = [(len(piece) - 1, end)]
        while todo:
            m, at = todo.pop()
            if m == 0:
                out.append(at)
                continue
            stack = stacks.get(piece[m - 1], [])
            first = bisect_left(stack, True, key=lambda x: times[x] >= lo)
            for prev in stack[first:bisect_left(stack, at)]:
                todo.append((m - 1, prev))
        return out
