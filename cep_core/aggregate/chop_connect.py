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
  exact: ``count(p, e_i)_{t_j} = count(sub_1)_{t_i} · count(sub_2, e_i)_{t_j}``.
  Vectors that start while those counts stand still take the same snapshot: the
  snapshots are kept as versions, a new one only when ``sub_{j-1}`` gained a vector or
  completed matches since the last;
* **multi-connect** (Fig. 11): for ``j > 2`` the snapshot of a tag is the sum, over the
  live vectors ``y`` of ``sub_{j-1}``, of ``y``'s snapshot of that tag times ``y``'s
  complete count (one product: the complete counts summed per version, times the
  versions);
* a piece that no other query shares (after the query's first) is not a substring with
  snapshots but the query's own counters per tag: its START adds the prefix counts per
  tag to its first position (:class:`_OwnPiece`);
* at every event of the query's last type (TRIG) the query emits the number of matches
  that end at or before it with their first event inside its window: the last piece's
  complete counts summed over the tags still live (for a shared last substring, each
  vector's complete count times its snapshot's sum over those tags).

Chop-Connect saves the updates of a shared substring's counters for all but one query
and pays for each connect a snapshot (or, for an own piece, a multi-connect) per query:
it gains when the shared sub-pattern's events outnumber the connect events (§4.2, "Cost
Analysis"); ``scripts/reproduce_aseq.py`` measures both kinds of stream.

The counts equal those of each query alone (:class:`cep_core.aggregate.SeqAggregator`,
the same window semantics: docs/decisions.md, "The window bound is inclusive"); tested in
``tests/cep_core/test_chop_connect.py``. Counts are exact: counters are int64 and snapshots
float64 below 2**53, and both turn into Python integers (object arrays) before they
could lose a unit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from cep_core.aggregate.chop_plan import (
    NEG_INF,
    CountMax,
    Letters,
    Piece,
    chop,
    compile_pieces,
    weight,
    weight_of,
)
from cep_core.aggregate.chop_planner import SharingPlan, plan_sharing
from cep_core.aggregate.seqquery import Element, SeqAgg, parse_aggregate
from cep_core.counters import Counters
from cep_core.engine.protocol import EngineBase
from cep_core.errors import QueryError

__all__ = ["ChopConnect", "chop"]

_SAFE = 2 ** 61  # above this, a substring's counters become Python integers
_EXACT = 2.0 ** 53  # below this, float64 holds every integer exactly


def _later_positions(piece: Piece) -> dict[int, list[int]]:
    """Each test's positions after the first in the piece, the last first (the order in
    which an event passing it updates a row's counters)."""
    at: dict[int, list[int]] = {}
    for m in range(len(piece.tests) - 1, 0, -1):
        at.setdefault(piece.tests[m], []).append(m)
    return at


def _resets(piece: Piece) -> dict[int, list[int]]:
    """Each negated test's columns: the prefix it resets (Lemma 6; the last column: the
    piece's trailing gap, before the next piece)."""
    out: dict[int, list[int]] = {}
    for m, gap in enumerate(piece.gaps):
        for j in gap:
            out.setdefault(j, []).append(m)
    return out


def _step(rows: np.ndarray, piece: Piece, positions: Sequence[int], resets: Sequence[int],
          e: Mapping[str, Any]) -> None:
    """Lemma 1 at ``positions`` (descending) and the recounting rule at ``resets``, in
    place, every update read from the counts before the event; a weighted position
    multiplies by the event's attribute (SUM)."""
    w = piece.weights
    if not resets:
        for m in positions:  # descending: an event never extends itself
            rows[:, m] += rows[:, m - 1] if w[m] is None else rows[:, m - 1] * weight(e, w[m])
        return
    inc = [(m, rows[:, m - 1] * (1 if w[m] is None else weight(e, w[m]))) for m in positions]
    rows[:, list(resets)] = 0
    for m, x in inc:
        rows[:, m] += x


def _scalar(x: Any) -> Any:
    """A weighted total as a float, or a (count, max) pair as it is."""
    return x if isinstance(x, CountMax) else float(x)


class _Substring:
    """The prefix-counter vectors of one substring (rows: one per START, oldest first):
    exact integers, float64 sums (a position weighted by SUM) or (count, max) pairs."""

    def __init__(self, piece: Piece):
        self.piece = piece
        self.types = piece.tests
        self.at = _later_positions(piece)
        self.resets = _resets(piece)
        self.exact = not piece.weighted
        self.cnt = np.zeros((16, len(piece.tests)), dtype=piece.dtype)
        self.start = np.zeros(16)
        self.head = 0  # rows before it have expired
        self.n = 0  # rows in use
        self.base = 0  # serial of row 0 (rows are renumbered when compacted)
        self.bound = 1  # no counter exceeds it (doubled by each update, checked when large)
        self.changes = 0  # counts up whenever the complete counts may have changed

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

    def update(self, positions: Sequence[int], resets: Sequence[int],
               e: Mapping[str, Any]) -> int:
        """Add the event to the live vectors; the number of counter updates."""
        if self.head == self.n:
            return 0
        rows = self.cnt[self.head:self.n]
        last = len(self.types) - 1
        if (positions and positions[0] == last) or last in resets:
            self.changes += 1
        _step(rows, self.piece, positions, resets, e)
        self.bound *= 2  # an update at most doubles a counter
        if self.exact and self.bound > _SAFE and rows.dtype != object:
            self.bound = int(rows.max())  # the bound is loose: look
            if self.bound > _SAFE:
                self.cnt = self.cnt.astype(object)  # before a doubling could overflow
        return len(positions) * (self.n - self.head)

    def add(self, t: Any, e: Mapping[str, Any]) -> int:
        """A new vector for a START at ``t``; its serial."""
        if self.n == len(self.start):
            self.cnt = np.concatenate([self.cnt, np.zeros_like(self.cnt)])
            self.start = np.concatenate([self.start, np.zeros_like(self.start)])
        w = self.piece.weights[0]
        self.cnt[self.n] = 0
        self.cnt[self.n, 0] = 1 if w is None else weight(e, w)
        self.start[self.n] = t
        self.n += 1
        self.changes += 1
        return self.serial(self.n - 1)

    def complete(self) -> np.ndarray:
        """The complete counts of the live vectors."""
        return self.cnt[self.head:self.n, -1]


class _Snapshots:
    """One query's snapshots on one of its substrings. A snapshot is a vector over the
    tags (the STARTs of the query's first substring, by serial); vectors of the
    substring that started while the query's prefix count stood still share one, so
    the snapshots are kept as *versions* (a matrix: a row per version, a column per
    tag; a tag that started after a version is 0 there, as a match cannot start after
    its connect) and, per vector of the substring (by serial), the version it took.
    Entries are float64 while every count is below 2**53 (integers there are exact,
    and the products run in BLAS), Python integers beyond. Rows and columns before the
    live ones are dropped now and then. For a weighted query (SUM) the entries are
    sums, float64 throughout (``exact`` False)."""

    def __init__(self, exact: bool = True):
        self.exact = exact
        self.versions = np.zeros((16, 16))
        self.ver0 = self.col0 = 0  # serials of version row 0 and of column 0
        self.n_versions = self.cols = 0  # in use
        self.taken = np.zeros(16, dtype=np.int64)  # per vector: the version serial
        self.row0 = self.rows = 0  # serial of the first vector kept; vectors kept

    def add_version(self, first_tag: int, counts: np.ndarray) -> int:
        """A new snapshot, ``counts`` from tag ``first_tag`` on; its version serial."""
        if self.n_versions == 0 and self.cols == 0:
            self.col0 = first_tag
        col = first_tag - self.col0
        if col < 0:
            counts, col = counts[-col:], 0
        r, c = self.versions.shape
        need_r, need_c = self.n_versions + 1, col + len(counts)
        if need_r > r or need_c > c:
            grown = np.zeros((2 * r if need_r > r else r, max(need_c, 2 * c) if need_c > c
                              else c), dtype=self.versions.dtype)
            grown[:self.n_versions, :self.cols] = self.versions[:self.n_versions, :self.cols]
            self.versions = grown
        if self.versions.dtype != object and len(counts) and (counts.dtype == object or (
                self.exact and counts.max() >= _EXACT)):
            self.versions = self.versions.astype(object)
        row = self.versions[self.n_versions]
        row[:] = 0
        row[col:col + len(counts)] = counts
        self.n_versions += 1
        self.cols = max(self.cols, need_c)
        return self.ver0 + self.n_versions - 1

    def attach(self, serial: int, version: int) -> None:
        """The vector ``serial`` (the next one of its substring) takes ``version``."""
        if self.rows == 0:
            self.row0 = serial
        row = serial - self.row0
        if row >= len(self.taken):
            self.taken = np.concatenate([self.taken, np.zeros_like(self.taken)])
        self.taken[row] = version
        self.rows = row + 1

    def weighted(self, lo_row: int, weights: np.ndarray, lo_tag: int) -> tuple[int, np.ndarray]:
        """``Σ_vectors weight · snapshot`` over the vectors from serial ``lo_row`` (one
        non-negative integer weight each) and the tags from ``lo_tag`` on, exact (int64,
        or Python integers beyond): (its first tag, the counts; tags after them are 0)."""
        return max(lo_tag, self.col0), self._product(lo_row, weights, lo_tag, summed=False)

    def total(self, lo_row: int, weights: np.ndarray, lo_tag: int) -> int | float:
        """``Σ_vectors weight · Σ_tags snapshot`` over the vectors from serial
        ``lo_row`` and the tags from ``lo_tag`` on, exact."""
        x = self._product(lo_row, weights, lo_tag, summed=True).sum()
        return int(x) if self.exact else _scalar(x)

    def _product(self, lo_row: int, weights: np.ndarray, lo_tag: int,
                 summed: bool) -> np.ndarray:
        """:meth:`weighted`'s counts (or, ``summed``, an array whose sum is the total)."""
        c0 = max(lo_tag - self.col0, 0)
        if not len(weights) or c0 >= self.cols:
            return np.zeros(0, dtype=np.int64)
        r0 = lo_row - self.row0
        took = self.taken[r0:r0 + len(weights)] - self.ver0
        first = took[0]  # versions grow with the vectors' serials
        block = self.versions[first:took[-1] + 1, c0:self.cols]
        if block.dtype != object and weights.dtype != object:
            part = np.bincount(took - first, weights=weights) @ block
            if not self.exact:
                return part
            # non-negative terms: every partial sum is at most the result, so a result
            # below 2**53 was computed exactly
            if summed:
                whole = part.sum()
                if whole < _EXACT:
                    return np.array([int(whole)], dtype=np.int64)
            elif part.max() < _EXACT:
                return part.astype(np.int64)
        per_version = np.zeros(len(block), dtype=object)
        np.add.at(per_version, took - first, weights.astype(object))
        return per_version @ block.astype(object)

    def forget_before(self, row: int, tag: int) -> None:
        """Drop the vectors before serial ``row``, the versions only they took and the
        columns before serial ``tag``, when they are half of what is kept."""
        dr = row - self.row0
        if 64 < dr < self.rows and 2 * dr > self.rows:
            self.taken = self.taken[dr:].copy()
            self.row0, self.rows = row, self.rows - dr
        dv = (int(self.taken[0]) if self.rows else self.ver0 + self.n_versions) - self.ver0
        dc = tag - self.col0
        if dv > 64 and 2 * dv > self.n_versions or dc > 64 and 2 * dc > self.cols:
            dv, dc = max(dv, 0), max(dc, 0)
            self.versions = self.versions[dv:, dc:].copy()
            self.ver0, self.col0 = self.ver0 + dv, self.col0 + dc
            self.n_versions, self.cols = self.n_versions - dv, max(self.cols - dc, 0)


class _OwnPiece:
    """A piece ``sub_j`` (``j ≥ 2``) that no other query shares, counted per tag: a row
    per tag (by serial, rows appear as tags do), a column per position. Its START adds,
    per tag, the prefix count ``sub_1 .. sub_j-1`` formed before it to column 0; its
    other events update the columns as a substring's vectors are updated. This is the
    connect of Lemma 7 without a snapshot to keep: the piece is the query's alone."""

    def __init__(self, piece: Piece, dtype: Any):
        self.piece = piece
        self.types = piece.tests
        self.at = _later_positions(piece)
        self.resets = _resets(piece)
        self.exact = dtype is np.int64
        self.cnt = np.zeros((16, len(piece.tests)), dtype=dtype)
        self.base = 0  # serial of the tag of row 0
        self.bound = 0  # no counter exceeds it
        self.changes = 0  # counts up whenever the complete counts may have changed

    def rows(self, lo_tag: int, hi_tag: int) -> np.ndarray:
        """The rows of the tags ``lo_tag .. hi_tag - 1`` (the live ones)."""
        if lo_tag - self.base > 1024 and 2 * (lo_tag - self.base) > len(self.cnt):
            self.cnt = self.cnt[lo_tag - self.base:].copy()  # forget expired tags
            self.base = lo_tag
        if hi_tag - self.base > len(self.cnt):
            grown = np.zeros((max(hi_tag - self.base, 2 * len(self.cnt)), len(self.types)),
                             dtype=self.cnt.dtype)
            grown[:len(self.cnt)] = self.cnt
            self.cnt = grown
        return self.cnt[lo_tag - self.base:hi_tag - self.base]

    def update(self, positions: Sequence[int], resets: Sequence[int], rows: np.ndarray,
               e: Mapping[str, Any]) -> None:
        last = len(self.types) - 1
        if (positions and positions[0] == last) or last in resets:
            self.changes += 1
        _step(rows, self.piece, positions, resets, e)
        self.bound *= 2
        self._widen(rows)

    def enter(self, rows: np.ndarray, counts: np.ndarray, e: Mapping[str, Any]) -> None:
        """Column 0 of the tags from the first of ``rows`` on gains ``counts`` (times
        the event's value when the position is weighted)."""
        if not len(counts):
            return
        w = self.piece.weights[0]
        rows[:len(counts), 0] += counts if w is None else counts * weight(e, w)
        if self.exact:
            self.bound += int(counts.max())
        if len(self.types) == 1:
            self.changes += 1
        self._widen(rows)

    def _widen(self, rows: np.ndarray) -> None:
        if self.exact and self.bound > _SAFE and self.cnt.dtype != object:
            self.bound = int(rows.max(initial=0))  # the bound is loose: look
            if self.bound > _SAFE:
                self.cnt = self.cnt.astype(object)  # before a doubling could overflow


class ChopConnect(EngineBase):
    """COUNT, SUM, AVG, MIN and MAX over several sequence queries at once, each given as its
    chopped substrings (``plans``: name -> substrings, each a sequence of event types
    or :class:`~cep_core.aggregate.Element` with local predicates and negations; equal
    substrings are one), all with the same window (module docstring); ``aggregates``:
    name -> its aggregates (default COUNT; ``SUM(2.v)``, ``MAX(b.v)``, as
    :func:`~cep_core.aggregate.seq_query` reads them), ``params`` and ``lookups`` for the
    predicates. A plan of one substring is a plain A-Seq query (SEM); giving every
    query whole is the unshared baseline. An :class:`~cep_core.engine.protocol.Engine`:
    ``feed`` gives the outputs of all the queries in stream order, each naming its
    ``query``; ``run`` gives them per query."""

    name = "chop-connect"

    def __init__(self, plans: Mapping[str, Sequence[Sequence[str | Element]]],
                 window: float, aggregates: Mapping[str, Sequence[str | SeqAgg]] | None = None,
                 params: Mapping | None = None, lookups: Mapping | None = None):
        if not plans:
            raise QueryError("ChopConnect needs at least one query")
        if not window >= 0:
            raise QueryError(f"the window must be a number >= 0, not {window!r}")
        self.window = float(window)
        self.letters = Letters(params, lookups)
        chains = self._compile(plans, aggregates or {})
        uses: dict[Piece, int] = {}
        for chain in chains.values():
            for piece in chain:
                uses[piece] = uses.get(piece, 0) + 1
        # a query's first piece, and every piece another query (or place) shares, is a
        # substring computed once; any other piece is the query's own, counted per tag
        self.subs: dict[Piece, _Substring] = {}
        self.plans: dict[str, list[_Substring | _OwnPiece]] = {}
        self.snaps: dict[str, list[_Snapshots]] = {}
        for key, chain in chains.items():
            dtype = next((p.dtype for p in chain if p.weighted), np.int64)
            self.plans[key] = [self.subs.setdefault(p, _Substring(p))
                               if j == 0 or uses[p] > 1 else _OwnPiece(p, dtype)
                               for j, p in enumerate(chain)]
            self.snaps[key] = [_Snapshots(dtype is np.int64) for _ in chain]
        # (query, j) -> (the changes of piece j-1 it was taken at, the version)
        self.latest: dict[tuple[str, int], tuple[int, int]] = {}
        self.counters = Counters()
        self.now: Any = None
        self._acts: dict[frozenset[int], tuple] = {}
        self.plan: SharingPlan | None = None   # the plan chosen by cost (planned)

    @classmethod
    def planned(cls, patterns: Mapping[str, Sequence[str | Element]], window: float,
                rates: Mapping[str, float], **kwargs: Any) -> ChopConnect:
        """Chop-Connect over ``patterns`` (name -> elements, unchopped) with the sharing
        plan of least estimated cost (:func:`cep_core.aggregate.chop_planner.plan_sharing`;
        ``rates``: type -> events per time unit, e.g. ``rates_of`` a sample of the
        stream); the plan is kept as ``.plan``. ``kwargs``: as for the constructor."""
        plan = plan_sharing(patterns, rates, window)
        cc = cls(plan.plans, window, **kwargs)
        cc.plan = plan
        return cc

    def _compile(self, plans: Mapping, aggregates: Mapping) -> dict[str, list[Piece]]:
        """Each query's pieces, and one weighted copy per SUM (AVG), MAX or MIN
        (chop_plan's docstring), keyed ``name`` and ``name|FUNCposition.attr``;
        ``self.outputs``: per query, (label, function, key) of each aggregate."""
        chains: dict[str, list[Piece]] = {}
        self.outputs: dict[str, list[tuple[str, str, str]]] = {}
        self.last_test: dict[str, int] = {}
        for name, chopped in plans.items():
            chopped = [tuple(piece) for piece in chopped]
            if not chopped:
                raise QueryError(f"query {name!r}: no substring")
            if not all(chopped):
                raise QueryError(f"query {name!r}: an empty substring")
            chains[name] = compile_pieces(name, chopped, self.letters)
            self.last_test[name] = chains[name][-1].tests[-1]
            aggs = [a if isinstance(a, SeqAgg) else parse_aggregate(a)
                    for a in aggregates.get(name, ("COUNT",))]
            labels = [a.label() for a in aggs]
            if len(set(labels)) != len(labels):
                raise QueryError(f"query {name!r}: aggregates need distinct names: {labels}")
            self.outputs[name] = []
            for a, label in zip(aggs, labels, strict=True):
                if a.func == "COUNT":
                    self.outputs[name].append((label, "COUNT", name))
                    continue
                weighed = weight_of(name, a, chopped)
                key = f"{name}|{weighed[1]}{weighed[0]}.{weighed[2]}"
                chains[key] = compile_pieces(name, chopped, self.letters, weighed)
                self.outputs[name].append((label, a.func, key))
        return chains

    @property
    def substrings(self) -> list[tuple[str, ...]]:
        """The event types of the distinct substrings computed once (each query's own
        pieces after its first are counted per tag instead)."""
        return [tuple(self.letters.tests[j][0] for j in p.tests) for p in self.subs]

    def run(self, events: Sequence[Mapping[str, Any]]) -> dict[str, list[dict]]:
        """Per query, ``{time, trigger_id, count, ..}`` at each of its TRIG events."""
        found: list[dict] = []
        for n, e in enumerate(events):
            self._process(e, n, found)
        out: dict[str, list[dict]] = {name: [] for name in self.outputs}
        for rec in found:
            out[rec.pop("query")].append(rec)
        return out

    def feed_batch(self, events: Iterable[Mapping[str, Any]]) -> list[dict]:
        """The outputs of the next events in stream order, ``{query, time, trigger_id,
        count, ..}`` at each TRIG event of each query (the ``trigger_id`` of an event
        without an ``id`` is its position in the stream)."""
        out: list[dict] = []
        for e in events:
            self._process(e, self.counters.events, out)
        return out

    def _actions(self, tests: frozenset[int]) -> tuple:
        """What an event passing ``tests`` touches (cached per set of tests): the
        connects it starts, the substrings and own pieces it updates or resets (with
        the positions, descending, and the reset columns), the substrings it starts,
        the queries it triggers."""
        acts = self._acts.get(tests)
        if acts is None:
            def hits(piece: _Substring | _OwnPiece) -> tuple[list[int], list[int]]:
                pos = sorted({m for j in tests for m in piece.at.get(j, ())}, reverse=True)
                return pos, sorted({m for j in tests for m in piece.resets.get(j, ())})
            connects, own = [], []
            for key, chain in self.plans.items():
                for j, piece in enumerate(chain):
                    if j and piece.types[0] in tests:
                        connects.append((key, j))
                    if isinstance(piece, _OwnPiece) and any(hits(piece)):
                        own.append((key, j, *hits(piece)))
            updated = [(sub, *hits(sub)) for sub in self.subs.values() if any(hits(sub))]
            started = [sub for sub in self.subs.values() if sub.types[0] in tests]
            triggers = [name for name, j in self.last_test.items() if j in tests]
            acts = self._acts[tests] = (connects, updated, own, started, triggers)
        return acts

    def _process(self, e: Mapping[str, Any], n: int, out: list[dict]) -> None:
        self.counters.events += 1
        tests = self.letters.passing(e)
        if not tests:
            return
        connects_to, updated, own_updated, started, triggers = self._actions(tests)
        t = e["time"]
        self.now = t
        # the connects this event starts, from the counts before it
        connects = [(key, j, self._connect(key, j)) for key, j in connects_to]
        for sub, positions, resets in updated:
            self._expire(sub)
            self.counters.pm_extended += sub.update(positions, resets, e)
        for key, j, positions, resets in own_updated:
            rows = self._tag_rows(key, j)
            self.plans[key][j].update(positions, resets, rows, e)
            self.counters.pm_extended += len(rows) * len(positions)
        new = {}
        for sub in started:
            self._expire(sub)
            new[sub.piece] = sub.add(t, e)
            self.counters.pm_created += 1
        for key, j, connect in connects:
            piece = self.plans[key][j]
            if isinstance(piece, _OwnPiece):
                from_tag, counts = connect
                piece.enter(self._tag_rows(key, j, from_tag), counts, e)
            else:
                self.snaps[key][j].attach(new[piece.piece], connect)
        for name in triggers:
            out.append(self._record(name, t, e.get("id", n)))
            self.counters.outputs += 1

    def _record(self, name: str, t: Any, trigger_id: Any) -> dict:
        """The query's output at a trigger: COUNT, and SUM / AVG / MAX / MIN from the
        weighted copies (None when no match counts, as in SQL and A-Seq)."""
        count = self._total(name)
        rec = {"query": name, "time": t, "trigger_id": trigger_id}
        for label, func, key in self.outputs[name]:
            if func == "COUNT":
                rec[label] = count
            elif count == 0:
                rec[label] = None
            elif func in ("MAX", "MIN"):
                x = self._total(key)
                top = x.m if isinstance(x, CountMax) else NEG_INF
                rec[label] = top if func == "MAX" else -top
            else:
                total = float(self._total(key))
                rec[label] = total / count if func == "AVG" else total
        return rec

    def _expire(self, sub: _Substring) -> None:
        """Drop the substring's vectors whose START left the window (before reading it)."""
        before = sub.head
        sub.expire(self.now, self.window)
        self.counters.pm_dropped += sub.head - before

    def _live_tags(self, name: str) -> tuple[int, int]:
        """The serials of the query's live tags: (first, one past the last)."""
        first = self.plans[name][0]
        self._expire(first)
        return first.serial(first.head), first.serial(first.n)

    def _tag_rows(self, name: str, j: int, lo_tag: int | None = None) -> np.ndarray:
        """The rows of the own piece ``j`` of the query, from ``lo_tag`` (the first
        live tag) to the last tag."""
        lo, hi = self._live_tags(name)
        return self.plans[name][j].rows(lo if lo_tag is None else lo_tag, hi)

    def _prefix(self, name: str, j: int) -> tuple[int, np.ndarray]:
        """The query's counts of ``sub_1 .. sub_j-1`` per live tag now: (the first tag,
        the counts from it on; the tags after them have none). Multi-connect (Fig. 11)
        when ``sub_j-1`` is a shared substring after the first."""
        lo_tag, hi_tag = self._live_tags(name)
        prev = self.plans[name][j - 1]
        if j == 1:  # copies: this event may update them before they are used
            return lo_tag, prev.complete().copy()
        if isinstance(prev, _OwnPiece):
            return lo_tag, prev.rows(lo_tag, hi_tag)[:, -1].copy()
        snaps = self.snaps[name][j - 1]
        self._expire(prev)
        connected = snaps.weighted(prev.serial(prev.head), prev.complete(), lo_tag)
        snaps.forget_before(prev.serial(prev.head), lo_tag)
        return connected

    def _connect(self, name: str, j: int) -> Any:
        """What a START of the query's piece ``j`` connects with: for an own piece, the
        prefix counts per tag; for a shared substring, the version of the snapshot its
        new vector takes (the last one while those counts have not changed: they
        change only when piece ``j-1`` gains a vector or completes matches, and an
        expired vector of it had only expired tags)."""
        if isinstance(self.plans[name][j], _OwnPiece):
            return self._prefix(name, j)
        changes = self.plans[name][j - 1].changes
        latest = self.latest.get((name, j))
        if latest is not None and latest[0] == changes:
            return latest[1]
        version = self.snaps[name][j].add_version(*self._prefix(name, j))
        self.latest[(name, j)] = (changes, version)
        return version

    def _total(self, name: str) -> int | float:
        chain = self.plans[name]
        last = chain[-1]
        if isinstance(last, _OwnPiece):
            complete = self._tag_rows(name, len(chain) - 1)[:, -1]
            if not last.exact:
                return _scalar(complete.sum())
            return int(complete.sum(dtype=object) if last.bound * len(complete) > _SAFE
                       else complete.sum())
        self._expire(last)
        complete = last.complete()
        if len(chain) == 1:
            return int(complete.sum(dtype=object)) if last.exact else _scalar(complete.sum())
        lo_tag, _ = self._live_tags(name)
        total = self.snaps[name][-1].total(last.serial(last.head), complete, lo_tag)
        self.snaps[name][-1].forget_before(last.serial(last.head), lo_tag)
        return total
