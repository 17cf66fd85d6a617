"""The lazy order plan of a sequence evaluated as an array join over the window's events
(US 11,693,862 B2, Algorithm 2's order-based plan, evaluated as in the lazy NFA of its
"Experimental Setup": the rarest type first; **patented**, see the package).

The per-event evaluation (:class:`cep_core.adaptive.runners.OrderRunner`) keeps partial
matches one by one and extends each with every arriving event. Here a plan's order is
evaluated over a whole range of events at once, with numpy:

* :class:`WindowEvents` keeps the events of the pattern's types that a later match may
  still hold (those within the pattern's window of the newest) as columns: their
  stream positions (``seq``, counted over these events), times, partition codes and the
  attributes the predicates read, and per pattern position the positions of the events
  that pass its predicates on one position (sorted, by partition first when there is a
  ``SAME`` key);
* :class:`OrderJoin` finds every match whose last event (the sequence's last element)
  lies in given ranges of positions (those of a batch where the order is the plan):
  the events of the order's first position that may belong to such a match, then,
  level by level down the order, for every partial match the events of the next
  position that the sequence's order (after the nearest bound element before it,
  before the nearest bound one after it) and the window leave, found with
  :func:`numpy.searchsorted` as one contiguous range of that position's sorted events;
  the predicates that the level binds, evaluated over all the
  new partial matches at once (:mod:`cep_core.engine.vectorize`). Under
  skip-till-any-match every combination is a match, so the rows left after the last
  level are the matches; the window is checked exactly on them, ``last.t − first.t ≤
  W``, as the text-order engines do (the levels search with a relative margin of 1e-9).

The matches are the same whatever the order (a join is exact for any order); the order
decides only how many partial matches the levels make, which is what a plan saves: with
the rarest type first, the later levels search around the few rare events only.

Example: ``SEQ(A a, B b)`` within 2, the events A@0, B@1, A@2, B@5, the last two new:

>>> import numpy as np
>>> w = WindowEvents(2, keyed=False)
>>> w.append(np.array([0.0, 1.0, 2.0, 5.0]), None, {}, [None] * 4,
...          [np.array([0, 2]), np.array([1, 3])])
>>> j = OrderJoin(order=(1, 0), n=2, window=2.0, checks=[[], []])
>>> j.matches(w, np.array([[2, 4]]))[0].tolist()  # B@5 has no A within 2 time units
[]
>>> j.matches(w, np.array([[0, 2], [3, 4]]))[0].tolist()
[[0, 1]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cep_core.engine.vectorize import passes

__all__ = ["WindowEvents", "OrderJoin", "ColumnValues", "STRIDE"]

#: the stride of a partition code in a position's sorted keys (code · STRIDE + seq)
STRIDE = np.int64(1) << np.int64(40)
_EMPTY = np.empty(0, dtype=np.int64)


def _concat(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``old`` then ``new``, as objects when their kinds differ (numbers beside text)."""
    if old.size and new.size and (old.dtype.kind in "iufb") != (new.dtype.kind in "iufb"):
        return np.concatenate([old.astype(object), new.astype(object)])
    return np.concatenate([old, new])


class WindowEvents:
    """The window's events of the pattern's types as columns (module doc). Row ``i`` is
    the event with stream position ``base + i``; ``at[q]`` holds position q's events
    (their ``seq``; keyed: ``code · STRIDE + seq``, sorted)."""

    def __init__(self, n: int, keyed: bool):
        self.base = 0
        self.times = np.empty(0, dtype=float)
        self.codes: np.ndarray | None = _EMPTY if keyed else None
        self.cols: dict[str, np.ndarray] = {}
        self.events: list = []
        self.at: list[np.ndarray] = [_EMPTY] * n

    @property
    def end(self) -> int:
        """The stream position after the newest event."""
        return self.base + self.times.size

    def append(self, times: np.ndarray, codes: np.ndarray | None,
               cols: dict[str, np.ndarray], events: list, at: Sequence[np.ndarray]) -> None:
        """Add a batch's events (``at[q]``: the seqs of those position q takes)."""
        if self.codes is not None:
            _check_keys(codes, self.end + times.size)
            self.codes = np.concatenate([self.codes, codes])
        self.times = np.concatenate([self.times, times])
        for a, col in cols.items():
            old = self.cols.get(a)
            self.cols[a] = col if old is None else _concat(old, col)
        self.events.extend(events)
        for q, seqs in enumerate(at):
            if seqs.size:
                keys = seqs if self.codes is None else \
                    self.codes[seqs - self.base] * STRIDE + seqs
                merged = np.concatenate([self.at[q], keys])
                self.at[q] = np.sort(merged, kind="stable") if self.codes is not None \
                    else merged
        # (a keyed position's keys of a new batch interleave with the old ones' by code)

    def trim(self, oldest: float) -> None:
        """Forget the events before time ``oldest`` (no later match holds them)."""
        k = int(np.searchsorted(self.times, oldest, side="left"))
        if not k:
            return
        self.base += k
        self.times = self.times[k:]
        if self.codes is not None:
            self.codes = self.codes[k:]
        for a in self.cols:
            self.cols[a] = self.cols[a][k:]
        del self.events[:k]
        for q, keys in enumerate(self.at):
            seqs = keys if self.codes is None else keys % STRIDE
            self.at[q] = keys[seqs >= self.base]

    def seq_of(self, keys: np.ndarray) -> np.ndarray:
        """The stream positions of a position's keys."""
        return keys if self.codes is None else keys % STRIDE


class ColumnValues:
    """What a compiled predicate reads (:mod:`cep_core.engine.vectorize`) for the rows of a
    join: ``var.attr`` of the events the rows bind at the variable's position."""

    __slots__ = ("events", "rows", "position", "size", "deferred")

    def __init__(self, events: WindowEvents, rows: np.ndarray, position: dict[str, int]):
        self.events, self.rows, self.position = events, rows, position
        self.size = rows.shape[0]
        self.deferred = None

    def ref(self, key: tuple) -> tuple[Any, Any]:
        _, var, _, attr, _ = key
        w = self.events
        return w.cols[attr][self.rows[:, self.position[var]] - w.base], None


#: a compiled predicate: its index among the plan's predicates and f(values) -> (vals, bad)
Check = tuple[int, Callable]


class OrderJoin:
    """A plan's ``order`` of the ``n`` positions of a sequence, compiled for the join
    (module doc): per level the nearest bound position before and after the new one,
    whether the new one becomes the first or the last bound (the window then bounds it),
    and ``checks[q]``, the predicates that binding q after ``order[:level]`` completes
    (:meth:`cep_core.adaptive.pattern.Shape.checks`)."""

    def __init__(self, order: tuple[int, ...], n: int, window: float,
                 checks: Sequence[Sequence[Check]], variables: Sequence[str] = ()):
        self.order, self.n, self.window = order, n, window
        self.position = {v: q for q, v in enumerate(variables)}
        self.levels = []
        for i, q in enumerate(order):
            bound = order[:i]
            before = max((r for r in bound if r < q), default=None)
            after = min((r for r in bound if r > q), default=None)
            self.levels.append((q, before, after, min(bound, default=q),
                                max(bound, default=q), checks[i]))

    def matches(self, w: WindowEvents, ranges: np.ndarray,
                tally: Any = None) -> tuple[np.ndarray, int]:
        """The matches whose last event has a stream position in one of ``ranges``
        (``[lo, hi)`` pairs, one a row, in stream order, disjoint): rows of the stream
        positions bound at each position, ordered by their last event; and the partial
        matches made on the way. ``tally(index, evaluated, passed)`` counts the
        predicates' evaluations."""
        n, span = self.n, self.window
        made = 0
        rows = self._first(w, ranges)
        c_lo, c_hi = int(ranges[0, 0]), int(ranges[-1, 1])
        for q, before, after, first, last, checks in self.levels[1:]:
            if not rows.shape[0]:
                break
            made += rows.shape[0]
            rows = self._extend(w, rows, (q, before, after, first, last), c_lo, c_hi)
            rows = self._check(w, rows, checks, tally)
        if rows.shape[0]:
            t = w.times
            last, first = t[rows[:, n - 1] - w.base], t[rows[:, 0] - w.base]
            rows = rows[(last - first <= span) & _inside(rows[:, n - 1], ranges[:, 0],
                                                         ranges[:, 1])]
            rows = rows[np.argsort(rows[:, n - 1], kind="stable")]
        return rows, made

    def _first(self, w: WindowEvents, ranges: np.ndarray) -> np.ndarray:
        """The events of the order's first position that a match ending in the ranges
        may hold, one row each."""
        q, n = self.order[0], self.n
        if q == n - 1:
            lo, hi = ranges[:, 0], ranges[:, 1]
        else:
            ranges = ranges[ranges[:, 0] < w.end]
            t0 = w.times[ranges[:, 0] - w.base]
            lo = w.base + np.searchsorted(w.times, t0 - span_margin(t0, self.window))
            hi = ranges[:, 1] - (n - 1 - q)
        seqs = w.seq_of(w.at[q])
        got = seqs[_inside(seqs, lo, hi)]
        rows = np.full((got.size, n), -1, dtype=np.int64)
        rows[:, q] = got
        return rows

    def _extend(self, w: WindowEvents, rows: np.ndarray, level: tuple, c_lo: int,
                c_hi: int) -> np.ndarray:
        """Every row extended with each event of the level's position q that the order
        and the window leave it (module doc): after the nearest bound position before q
        (else within the window of the last bound one), before the nearest after it (else
        within the window of the first bound one)."""
        q, before, after, first, last = level
        n, span, t = self.n, self.window, w.times
        m = rows.shape[0]
        if before is not None:
            lo = rows[:, before] + 1
        else:
            newest = t[rows[:, last] - w.base]
            lo = w.base + np.searchsorted(t, newest - span_margin(newest, span))
        if after is not None:
            hi = rows[:, after]
        else:
            oldest = t[rows[:, first] - w.base]
            hi = w.base + np.searchsorted(t, oldest + span_margin(oldest, span),
                                          side="right")
            hi = np.minimum(hi, c_hi - (n - 1 - q))
        if q == n - 1:
            lo = np.maximum(lo, c_lo)
        keys = w.at[q]
        if w.codes is not None:
            code = w.codes[rows[:, self.order[0]] - w.base] * STRIDE
            lo, hi = lo + code, hi + code
        a = np.searchsorted(keys, lo)
        counts = np.maximum(np.searchsorted(keys, hi) - a, 0)
        total = int(counts.sum())
        if not total:
            return rows[:0]
        offsets = np.cumsum(counts) - counts
        pick = np.repeat(a - offsets, counts) + np.arange(total)
        grown = rows[np.repeat(np.arange(m), counts)]
        grown[:, q] = w.seq_of(keys[pick])
        return grown

    def _check(self, w: WindowEvents, rows: np.ndarray, checks: Sequence[Check],
               tally: Any) -> np.ndarray:
        """The rows that pass ``checks`` (in order, each on the rows the previous left)."""
        for index, fn in checks:
            if not rows.shape[0]:
                break
            ok = passes(fn(ColumnValues(w, rows, self.position)), rows.shape[0])
            if tally is not None:
                tally(index, rows.shape[0], int(ok.sum()))
            rows = rows[ok]
        return rows


def _inside(seqs: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether each stream position lies in one of the intervals ``[lo_i, hi_i)``, whose
    ends both never decrease with i (so the last interval that starts at or before a
    position reaches furthest)."""
    if not lo.size:
        return np.zeros(seqs.size, dtype=bool)
    i = np.searchsorted(lo, seqs, side="right") - 1
    return (i >= 0) & (seqs < hi[np.maximum(i, 0)])


def _check_keys(codes: np.ndarray, end: int) -> None:
    """Raise OverflowError when a keyed position's keys (``code · STRIDE + seq``) of
    partition ``codes`` and stream positions below ``end`` would not fit in int64
    (codes are not recycled: one per partition key seen)."""
    room = int(np.iinfo(np.int64).max) // int(STRIDE)
    if end > int(STRIDE) or (codes.size and int(codes.max()) + 1 >= room):
        raise OverflowError(
            f"the array join's keys overflow int64: {int(codes.max()) + 1 if codes.size else 0}"
            f" partition keys (at most {room - 1}) or {end} events (at most {int(STRIDE)});"
            " run the query with adapt={'runner': 'event'}")


def span_margin(t: Any, span: float) -> Any:
    """``span`` widened by a relative margin of 1e-9 of ``|t| + span`` (the levels'
    searches may keep a little more than the window; the complete matches are checked
    exactly)."""
    return span + 1e-9 * (np.abs(t) + span)
