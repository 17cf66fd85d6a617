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

    @property
    def live(self) -> slice:
        return slice(self.head, self.n)

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
        if rows.dtype != object and max(rows[:, m].max() for m in positions) > _SAFE:
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
    """One query's snapshots on one substring: per vector serial, the counts per tag
    (a range of serials of the query's first substring) and their running sums from the
    right (the sum over the tags from a given one on)."""

    def __init__(self):
        self.first: dict[int, int] = {}  # vector serial -> serial of its first tag
        self.counts: dict[int, np.ndarray] = {}
        self.suffix: dict[int, np.ndarray] = {}

    def attach(self, serial: int, first_tag: int, counts: np.ndarray) -> None:
        self.first[serial], self.counts[serial] = first_tag, counts
        self.suffix[serial] = np.cumsum(counts[::-1])[::-1] if len(counts) else counts

    def live_sum(self, serial: int, lo_tag: int) -> Any:
        """The snapshot's sum over the tags from ``lo_tag`` on."""
        off = lo_tag - self.first[serial]
        suffix = self.suffix[serial]
        if off <= 0:
            return suffix[0] if len(suffix) else 0
        return suffix[off] if off < len(suffix) else 0

    def forget_before(self, serial: int) -> None:
        for s in [s for s in self.first if s < serial]:
            del self.first[s], self.counts[s], self.suffix[s]


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
        w = self.window
        for sub in self.subs.values():
            before = sub.head
            sub.expire(t, w)
            self.counters.pm_dropped += sub.head - before
        # snapshots of the connects this event starts, from the counts before it
        taken = []
        for name, chain in self.plans.items():
            for j in range(1, len(chain)):
                if chain[j].types[0] == typ:
                    taken.append((name, j, *self._snapshot(name, j)))
        for sub in self.subs.values():
            self.counters.pm_extended += sub.update(typ)
        new = {}
        for types, sub in self.subs.items():
            if types[0] == typ:
                new[types] = sub.add(t)
                self.counters.pm_created += 1
        for name, j, first_tag, counts in taken:
            self.snaps[name][j].attach(new[self.plans[name][j].types], first_tag, counts)
        for name, chain in self.plans.items():
            if chain[-1].types[-1] == typ:
                out[name].append({"time": t, "trigger_id": e.get("id", n),
                                  "count": self._total(name)})
                self.counters.outputs += 1

    def _snapshot(self, name: str, j: int) -> tuple[int, np.ndarray]:
        """The query's counts of ``sub_1 .. sub_j-1`` per live tag (first tag, counts)."""
        chain = self.plans[name]
        first = chain[0]
        lo_tag = first.serial(first.head)
        if j == 1:
            return lo_tag, first.complete().astype(object)
        prev, snaps = chain[j - 1], self.snaps[name][j - 1]
        acc = np.zeros(first.n - first.head, dtype=object)  # exact: products grow fast
        complete = prev.complete()
        for k, row in enumerate(range(prev.head, prev.n)):
            c = int(complete[k])
            if not c:
                continue
            serial = prev.serial(row)
            counts = snaps.counts[serial]
            off = snaps.first[serial] - lo_tag  # its tags from lo_tag on
            if off < 0:
                counts, off = counts[-off:], 0
            acc[off:off + len(counts)] += counts.astype(object) * c
        snaps.forget_before(prev.serial(prev.head))
        return lo_tag, acc

    def _total(self, name: str) -> Any:
        chain = self.plans[name]
        last = chain[-1]
        complete = last.complete()
        if len(chain) == 1:
            return int(complete.sum(dtype=object))
        first, snaps = chain[0], self.snaps[name][-1]
        snaps.forget_before(last.serial(last.head))
        lo_tag = first.serial(first.head)
        total = 0
        for k, row in enumerate(range(last.head, last.n)):
            c = complete[k]
            if c:
                total += int(c) * int(snaps.live_sum(last.serial(row), lo_tag))
        return total
