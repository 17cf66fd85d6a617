"""A-Seq's Chop-Connect: COUNT queries that share sub-patterns anywhere in their patterns.

Source: Qi, Cao, Ray, Rundensteiner, "Complex Event Analytics: Online Aggregation of
Stream Sequence Patterns", SIGMOD 2014, §4.2 (Lemma 7, Fig. 10 and 11). Where PreTree
(§4.1, :class:`cep_core.aggregate.PreTree`) shares the prefixes of several queries,
Chop-Connect (CC) *chops* each query ``SEQ(E1..En)`` into substrings, computes every
distinct substring once for all the queries that contain it, and *connects* the counts:

* a substring ``S`` keeps one prefix-counter vector per event of its first type (its
  START), live while that event is inside the window (``start.t ≥ now − WITHIN``);
  an event accepted at position ``m`` adds each vector's count of ``m − 1`` to its count
  of ``m`` (positions in descending order, so an event never pairs with itself);
* **snapshot** (Lemma 7): when an event starts a vector of a query's substring
  ``sub_j`` (``j ≥ 2``; its type is the *connect event type*, CNET), the counts of the
  query's prefix ``sub_1 .. sub_{j-1}`` formed before it are attached to that vector, one
  per START event of the whole query (the *tag*, which expires first), so that expiry is
  exact: ``count(p, e_i)_{t_j} = count(sub_1)_{t_i} · count(sub_2, e_i)_{t_j}``;
* **multi-connect** (Fig. 11): for ``j > 2`` the snapshot of a tag is the sum, over the
  live vectors ``y`` of ``sub_{j-1}``, of ``y``'s snapshot of that tag times ``y``'s
  complete count;
* at every event of the query's last type (TRIG) the query emits the number of matches
  that end at or before it with their first event inside its window: the sum over the
  live vectors ``x`` of the last substring of ``x``'s complete count times the sum of
  ``x``'s snapshot over the tags still live (kept as running sums, so this costs one
  step per vector).

The counts equal those of each query alone (:class:`cep_core.aggregate.SeqAggregator`,
the same window semantics: docs/decisions.md, "The window bound is inclusive"); tested in
``tests/test_chop_connect.py``. Counts are exact: a substring's counters are int64 and
turn into Python integers (object arrays) before they could overflow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cep_core.counters import Counters
from cep_core.errors import QueryError

__all__ = ["ChopConnect", "chop"]

_SAFE = 2 ** 61  # above this, a substring's counters become Python integers


def chop(pattern: Sequence[str], shared: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """``pattern`` (event types) cut into substrings at every occurrence of a ``shared``
    sub-pattern (the first that fits, left to right), the rest in between kept whole:
    ``chop("ABCDEFG", ["DE", "FG"]) == [("A", "B", "C"), ("D", "E"), ("F", "G")]``."""
    pattern = tuple(pattern)
    pieces: list[tuple[str, ...]] = []
    rest: list[str] = []
    i = 0
    while i < len(pattern):
        hit = next((tuple(s) for s in shared if s and tuple(pattern[i:i + len(s)]) ==
                    tuple(s)), None)
        if hit is None:
            rest.append(pattern[i])
            i += 1
            continue
        if rest:
            pieces.append(tuple(rest))
            rest = []
        pieces.append(hit)
        i += len(hit)
    if rest:
        pieces.append(tuple(rest))
    return pieces


class _Substring:
    """The prefix-counter vectors of one substring (rows: one per START, oldest first)."""

    def __init__(self, types: tuple[str, ...]):
        self.types = types
        self.at: dict[str, list[int]] = {}  # type -> its positions >= 1, descending
        for m in range(len(types) - 1, 0, -1):
            self.at.setdefault(types[m], []).append(m)
        self.cnt = np.zeros((16, len(types)), dtype=np.int64)
        self.start = np.zeros(16)
        self.head = 0  # rows before it have expired
        self.n = 0  # rows in use
        self.base = 0  # serial of row 0 (rows are renumbered when compacted)
        self.bound = 1  # no counter exceeds it (doubled by each update, checked when large)

    def serial(self, row: int) -> int:
        return self.base + row

    def expire(self, t: Any, window: float) -> None:
        while self.head < self.n and t - self.start[self.head] > window:
            self.head += 1
        if self.head > 1024 and self.head * 2 > self.n:  # compact
            keep = slice(self.head, self.n)
            self.cnt[: self.n - self.head] = self.cnt[keep]
            self.start[: self.n - self.head] = self.start[keep]
            self.base += self.head
            self.n -= self.head
            self.head = 0

    def update(self, typ: str) -> int:
        """Add the event to the live vectors; the number of counter updates."""
        positions = self.at.get(typ)
        if not positions or self.head == self.n:
            return 0
        rows = self.cnt[self.head:self.n]
        for m in positions:  # descending: an event never extends itself
            rows[:, m] += rows[:, m - 1]
        self.bound *= 2  # an update at most doubles a counter
        if self.bound > _SAFE and rows.dtype != object:
            self.bound = int(rows.max())  # the bound is loose: look
            if self.bound > _SAFE:
                self.cnt = self.cnt.astype(object)  # before a doubling could overflow
        return len(positions) * (self.n - self.head)

    def add(self, t: Any) -> int:
        """A new vector for a START at ``t``; its serial."""
        if self.n == len(self.start):
            self.cnt = np.concatenate([self.cnt, np.zeros_like(self.cnt)])
            self.start = np.concatenate([self.start, np.zeros_like(self.start)])
        self.cnt[self.n] = 0
        self.cnt[self.n, 0] = 1
        self.start[self.n] = t
        self.n += 1
        return self.serial(self.n - 1)

    def complete(self) -> np.ndarray:
        """The complete counts of the live vectors."""
        return self.cnt[self.head:self.n, -1]


class _Snapshots:
    """One query's snapshots on one of its substrings, as a matrix: a row per vector of
    the substring (by serial), a column per tag (a START of the query's first substring,
    by serial); a tag that started after a vector's snapshot is 0 there (a match cannot
    start after its connect). Rows and columns before the live ones are dropped now and
    then."""

    def __init__(self):
        self.m = np.zeros((16, 16), dtype=np.int64)
        self.row0 = self.col0 = 0  # serials of row 0 and column 0
        self.rows = self.cols = 0  # in use
        self.bound = 0  # no entry exceeds it

    def _fit(self, rows: int, cols: int) -> None:
        r, c = self.m.shape
        if rows > r or cols > c:
            grown = np.zeros((max(rows, 2 * r), max(cols, 2 * c)), dtype=self.m.dtype)
            grown[:self.rows, :self.cols] = self.m[:self.rows, :self.cols]
            self.m = grown

    def attach(self, serial: int, first_tag: int, counts: np.ndarray, bound: int) -> None:
        """The snapshot ``counts`` (no entry above ``bound``) of the vector ``serial``,
        its first entry for tag ``first_tag``."""
        if self.rows == 0 and self.cols == 0:
            self.row0, self.col0 = serial, first_tag
        row, col = serial - self.row0, first_tag - self.col0
        if col < 0:
            counts, col = counts[-col:], 0
        self._fit(row + 1, col + len(counts))
        self.bound = max(self.bound, bound)
        if (counts.dtype == object or self.bound > _SAFE) and self.m.dtype != object:
            self.m = self.m.astype(object)
        self.m[row, :] = 0
        self.m[row, col:col + len(counts)] = counts
        self.rows = row + 1
        self.cols = max(self.cols, col + len(counts))

    def weighted(self, lo_row: int, weights: np.ndarray, weight_bound: int, lo_tag: int,
                 n_tags: int) -> np.ndarray:
        """``Σ_rows weight · snapshot`` over the rows from serial ``lo_row`` (one weight
        each, none above ``weight_bound``) and the tags ``lo_tag ..`` (``n_tags`` of them),
        exact."""
        r0, c0 = lo_row - self.row0, lo_tag - self.col0
        if not len(weights) or c0 >= self.cols or n_tags <= 0:
            return np.zeros(max(n_tags, 0), dtype=np.int64)
        block = self.m[r0:r0 + len(weights), max(c0, 0):self.cols]
        w = weights
        if block.dtype != object and w.dtype != object and \
                weight_bound * self.bound * len(w) <= _SAFE:
            part = w @ block  # int64 cannot overflow here
        else:
            part = w.astype(object) @ block.astype(object)
        out = np.zeros(n_tags, dtype=part.dtype)
        start = max(c0, 0) - c0
        out[start:start + len(part)] = part[:n_tags - start]
        return out

    def forget_before(self, row: int, tag: int) -> None:
        """Drop the rows before serial ``row`` and the columns before serial ``tag``,
        when they are half of the matrix."""
        dr, dc = row - self.row0, tag - self.col0
        if dr > 64 and 2 * dr > self.rows or dc > 64 and 2 * dc > self.cols:
            dr, dc = max(dr, 0), max(dc, 0)
            self.m = self.m[dr:, dc:].copy()
            self.row0, self.col0 = self.row0 + dr, self.col0 + dc
            self.rows, self.cols = max(self.rows - dr, 0), max(self.cols - dc, 0)


class ChopConnect:
    """COUNT over several sequence queries at once, each given as its chopped substrings
    (``plans``: name -> substrings, each a sequence of event types; equal substrings are
    one), all with the same window (module docstring). A plan of one substring is a plain
    A-Seq query (SEM); giving every query whole is the unshared baseline."""

    def __init__(self, plans: Mapping[str, Sequence[Sequence[str]]], window: float):
        if not plans:
            raise QueryError("ChopConnect needs at least one query")
        if not window >= 0:
            raise QueryError(f"the window must be a number >= 0, not {window!r}")
        self.window = float(window)
        self.subs: dict[tuple[str, ...], _Substring] = {}
        self.plans: dict[str, list[_Substring]] = {}
        for name, pieces in plans.items():
            chain = []
            for piece in pieces:
                types = tuple(piece)
                if not types:
                    raise QueryError(f"query {name!r}: an empty substring")
                chain.append(self.subs.setdefault(types, _Substring(types)))
            if not chain:
                raise QueryError(f"query {name!r}: no substring")
            self.plans[name] = chain
        self.snaps = {name: [_Snapshots() for _ in chain] for name, chain in
                      self.plans.items()}
        self.counters = Counters()
        self.now: Any = None
        # what an event of each type touches
        self.updated: dict[str, list[_Substring]] = {}  # a position >= 1 of the type
        self.started: dict[str, list[_Substring]] = {}  # the type first
        for sub in self.subs.values():
            for typ in sub.at:
                self.updated.setdefault(typ, []).append(sub)
            self.started.setdefault(sub.types[0], []).append(sub)
        self.connects: dict[str, list[tuple[str, int]]] = {}  # CNET: (query, substring)
        self.triggers: dict[str, list[str]] = {}
        for name, chain in self.plans.items():
            for j in range(1, len(chain)):
                self.connects.setdefault(chain[j].types[0], []).append((name, j))
            self.triggers.setdefault(chain[-1].types[-1], []).append(name)

    @property
    def substrings(self) -> list[tuple[str, ...]]:
        """The distinct substrings, each computed once."""
        return list(self.subs)

    def run(self, events: Sequence[Mapping[str, Any]]) -> dict[str, list[dict]]:
        """Per query, ``{time, trigger_id, count}`` at each of its TRIG events."""
        out: dict[str, list[dict]] = {name: [] for name in self.plans}
        for n, e in enumerate(events):
            self._process(e, n, out)
        return out

    def _process(self, e: Mapping[str, Any], n: int, out: dict[str, list[dict]]) -> None:
        typ, t = e["type"], e["time"]
        self.counters.events += 1
        self.now = t
        # snapshots of the connects this event starts, from the counts before it
        taken = [(name, j, *self._snapshot(name, j)) for name, j in self.connects.get(typ, ())]
        for sub in self.updated.get(typ, ()):
            self._expire(sub)
            self.counters.pm_extended += sub.update(typ)
        new = {}
        for sub in self.started.get(typ, ()):
            self._expire(sub)
            new[sub.types] = sub.add(t)
            self.counters.pm_created += 1
        for name, j, first_tag, counts, bound in taken:
            self.snaps[name][j].attach(new[self.plans[name][j].types], first_tag, counts,
                                       bound)
        for name in self.triggers.get(typ, ()):
            out[name].append({"time": t, "trigger_id": e.get("id", n),
                              "count": self._total(name)})
            self.counters.outputs += 1

    def _expire(self, sub: _Substring) -> None:
        """Drop the substring's vectors whose START left the window (before reading it)."""
        before = sub.head
        sub.expire(self.now, self.window)
        self.counters.pm_dropped += sub.head - before

    def _snapshot(self, name: str, j: int) -> tuple[int, np.ndarray, int]:
        """The query's counts of ``sub_1 .. sub_j-1`` per live tag: (first tag, counts, a
        bound of the counts)."""
        chain = self.plans[name]
        first = chain[0]
        self._expire(first)
        lo_tag = first.serial(first.head)
        if j == 1:
            return lo_tag, first.complete().copy(), first.bound
        prev, snaps = chain[j - 1], self.snaps[name][j - 1]
        self._expire(prev)
        live = prev.n - prev.head
        counts = snaps.weighted(prev.serial(prev.head), prev.complete(), prev.bound, lo_tag,
                                first.n - first.head)
        snaps.forget_before(prev.serial(prev.head), lo_tag)
        return lo_tag, counts, prev.bound * snaps.bound * max(live, 1)

    def _total(self, name: str) -> int:
        chain = self.plans[name]
        last = chain[-1]
        self._expire(last)
        complete = last.complete()
        if len(chain) == 1:
            return int(complete.sum(dtype=object))
        first, snaps = chain[0], self.snaps[name][-1]
        self._expire(first)
        lo_tag = first.serial(first.head)
        per_tag = snaps.weighted(last.serial(last.head), complete, last.bound, lo_tag,
                                 first.n - first.head)
        snaps.forget_before(last.serial(last.head), lo_tag)
        return int(per_tag.sum())
