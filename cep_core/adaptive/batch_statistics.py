"""Arrival rates and predicate selectivities over a sliding window, updated per batch of
events with numpy and read at many checks of a batch at once.

Source: US 11,693,862 B2, "Detection-Adaptation Loop" (the statistics re-estimated
continuously over sliding windows) and Algorithm 2 (its inputs: the rate r_i of each
type, the selectivities sel_{i,j}); the estimates are those of
:mod:`cep_core.adaptive.statistics`, as of the event at stream position s and time t:

    r_T(s) = (|{events of T at positions ≤ s with time > t − w}| + 1) / w  [1/time unit]
    sel_p(s) = (passed_p + 1) / (evaluated_p + 2) over p's samples in that window

(the whole stream's samples up to s while the window holds fewer than
:data:`~cep_core.adaptive.statistics.MIN_EVALUATIONS`). Each kind of value is kept as
sorted arrays (positions, times, outcomes), so the estimate at every check of a batch
is two :func:`numpy.searchsorted` and a difference of cumulative sums.

The samples of a predicate between two positions are disjoint pairs of events, the
per-event engine's (:mod:`cep_core.adaptive.engine`), but
paired without a loop over the events: per partition (sorted by partition code, then
stream position), an event of the two positions (that passes their own predicates;
one of both positions is a step at each) pairs with the step waiting before it when
that is of the other position, another event, and within the pattern's window, and
waits itself otherwise (:func:`adjacent_pairs`). Each event is in one pair at most;
the steps left waiting at the end of a batch, one per partition, are carried to the
next, so the samples do not depend on how the stream is cut into batches.
A predicate on one position is sampled on every event of the
position's type.

>>> import numpy as np
>>> s = BatchStatistics(["A", "B"], 1, window=10.0)
>>> s.arrivals("A", np.array([0, 1, 2]), np.array([1.0, 2.0, 3.0]))
>>> s.arrivals("B", np.array([3]), np.array([12.0]))
>>> s.sampled(0, np.array([3, 3]), np.array([12.0, 12.0]), np.array([True, False]))
>>> snap = s.at(np.array([3]), np.array([12.0]))[0]
>>> snap.rate("A"), snap.rate("B"), snap.selectivity(0)
(0.2, 0.2, 0.5)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from cep_core.adaptive.statistics import MIN_EVALUATIONS

__all__ = ["BatchStatistics", "Snapshot", "adjacent_pairs"]

_I = np.empty(0, dtype=np.int64)
_F = np.empty(0, dtype=float)


class _Series:
    """Values in stream order: their positions, times and outcomes (1 for an arrival),
    and what was trimmed away of them (how many, how many passed)."""

    __slots__ = ("seqs", "times", "passed", "dropped", "dropped_passed")

    def __init__(self) -> None:
        self.seqs, self.times, self.passed = _I, _F, _I
        self.dropped = self.dropped_passed = 0

    def add(self, seqs: np.ndarray, times: np.ndarray, passed: np.ndarray) -> None:
        order = np.argsort(seqs, kind="stable")
        self.seqs = np.concatenate([self.seqs, seqs[order]])
        self.times = np.concatenate([self.times, times[order]])
        self.passed = np.concatenate([self.passed, passed[order].astype(np.int64)])

    def trim(self, oldest: float) -> None:
        k = int(np.searchsorted(self.times, oldest, side="right"))
        if k:
            self.dropped += k
            self.dropped_passed += int(self.passed[:k].sum())
            self.seqs, self.times, self.passed = (self.seqs[k:], self.times[k:],
                                                  self.passed[k:])

    def counts(self, seqs: np.ndarray, since: np.ndarray) -> tuple[np.ndarray, ...]:
        """At each (position, window start): the values in the window and those passed,
        and the values and passes since the stream began."""
        cum = np.concatenate([[0], np.cumsum(self.passed)])
        upto = np.searchsorted(self.seqs, seqs, side="right")
        start = np.minimum(np.searchsorted(self.times, since, side="right"), upto)
        return (upto - start, cum[upto] - cum[start], upto + self.dropped,
                cum[upto] + self.dropped_passed)


class Snapshot:
    """The estimates at one check (what :func:`cep_core.adaptive.planning.inputs` reads):
    :meth:`rate` per type and :meth:`selectivity` per predicate."""

    def __init__(self, window: float, rates: dict[str, float], sels: list[float]):
        self.window, self._rates, self._sels = window, rates, sels

    def expire(self) -> None:
        """Nothing to forget: the snapshot is of one moment."""

    def rate(self, typ: str) -> float:
        return self._rates[typ]

    def selectivity(self, index: int) -> float:
        return self._sels[index]

    def as_dict(self, pred_texts: list[str]) -> dict[str, Any]:
        """The window section of a session's statistics."""
        return {"length": self.window, "rate_per_type": dict(self._rates),
                "selectivity": {text: self._sels[i] for i, text in enumerate(pred_texts)}}


class BatchStatistics:
    """Rates per type and selectivities per predicate over the last ``window`` stream time
    units (module doc)."""

    def __init__(self, types: Iterable[str], n_preds: int, window: float):
        if not window > 0:
            raise ValueError(f"the statistics window must be positive, not {window!r}")
        self.window = float(window)
        self.types = list(types)
        self.arrived = {t: _Series() for t in self.types}
        self.samples = [_Series() for _ in range(n_preds)]

    def arrivals(self, typ: str, seqs: np.ndarray, times: np.ndarray) -> None:
        """Events of ``typ`` arrived at these positions and times."""
        self.arrived[typ].add(seqs, times, np.ones(seqs.size, dtype=np.int64))

    def sampled(self, index: int, seqs: np.ndarray, times: np.ndarray,
                passed: np.ndarray) -> None:
        """Predicate ``index`` was evaluated on samples completed at these positions and
        times, with these outcomes."""
        if seqs.size:
            self.samples[index].add(seqs, times, passed)

    def trim(self, now: float) -> None:
        """Forget what no check from ``now`` on reads."""
        oldest = now - self.window
        for series in (*self.arrived.values(), *self.samples):
            series.trim(oldest)

    def at(self, seqs: np.ndarray, times: np.ndarray) -> list[Snapshot]:
        """The estimates as of the events at these positions and times (module doc)."""
        w = self.window
        since = times - w
        rates = {t: (s.counts(seqs, since)[0] + 1) / w for t, s in self.arrived.items()}
        sels = []
        for s in self.samples:
            n, passed, ever, ever_passed = s.counts(seqs, since)
            sels.append(np.where(n >= MIN_EVALUATIONS, (passed + 1) / (n + 2),
                                 (ever_passed + 1) / (ever + 2)))
        return [Snapshot(w, {t: float(r[k]) for t, r in rates.items()},
                         [float(x[k]) for x in sels]) for k in range(seqs.size)]


def adjacent_pairs(first: np.ndarray, second: np.ndarray, start: int, times: np.ndarray,
                   codes: np.ndarray | None, carry: tuple | None,
                   window: float) -> tuple[np.ndarray, np.ndarray, tuple | None]:
    """Disjoint pairs of an event of ``first`` and one of ``second`` for the samples of a
    predicate between two positions, as the per-event engine draws them (module doc).

    ``first``, ``second``: a batch's events of the two positions (stream positions,
    sorted; an event may be in both); ``times`` and ``codes`` (partition codes, or None)
    of the batch's events from position ``start`` on; ``carry``: the events left
    waiting by the batches before, one per partition (arrays of codes, positions, sides
    and times), or None. Per partition, the steps (an event at a position, in stream
    order, an event's first position first) are scanned as the per-event engine does:
    a step pairs with the waiting one when that is of the other position, another
    event, and at most ``window`` older; otherwise it waits itself. In a run of steps
    each of which could pair with the one before, the pairs are so the run's first and
    second, third and fourth, ..., found with cumulative maxima rather than a loop. A
    carry older than ``window`` before the batch's last event pairs with no later one
    and is dropped. Returns the samples' events of ``first`` and of ``second``, and the
    events left waiting.

    >>> import numpy as np
    >>> t = np.arange(6.0)
    >>> a, b, left = adjacent_pairs(np.array([0, 1, 4]), np.array([2, 3, 5]), 0, t,
    ...                             None, None, 10.0)
    >>> a.tolist(), b.tolist(), left[1].tolist()  # 1 replaces 0; (1, 2), (3, 4); 5 waits
    ([1, 4], [2, 3], [5])
    >>> adjacent_pairs(np.array([0]), np.array([3]), 0, t, None, None, 2.0)[:2]  # too far
    (array([], dtype=int64), array([], dtype=int64))
    >>> adjacent_pairs(np.array([0, 1]), np.array([0, 1]), 0, t, None, None,
    ...                10.0)[:2]  # events of both positions: 0 (second) with 1 (first)
    (array([1]), array([0]))
    """
    seqs = np.concatenate([first, second])
    side = np.concatenate([np.zeros(first.size, dtype=bool), np.ones(second.size, dtype=bool)])
    at = times[seqs - start] if seqs.size else times[:0]
    code = codes[seqs - start] if codes is not None and seqs.size else \
        np.zeros(seqs.size, dtype=np.int64)
    if carry is not None:
        code, seqs, side, at = (np.concatenate([c, x]) for c, x in
                                zip(carry, (code, seqs, side, at), strict=True))
    order = np.lexsort((side, seqs, code))
    code, seqs, side, at = code[order], seqs[order], side[order], at[order]
    n = seqs.size
    link = (code[1:] == code[:-1]) & (side[1:] != side[:-1]) & (seqs[1:] != seqs[:-1]) \
        & (at[:-1] >= at[1:] - window)
    k = np.arange(n - 1) if n else _I
    run = np.maximum.accumulate(np.where(link, 0, k + 1)) if n > 1 else _I
    paired = link & ((k - run) % 2 == 0)  # link k: steps k and k + 1 pair
    waits = np.ones(n, dtype=bool)
    waits[1:] = ~paired
    last = np.ones(n, dtype=bool)
    last[:-1] = code[1:] != code[:-1]
    keep = waits & last
    if n:
        keep &= at >= at.max() - window
    left = tuple(x[keep] for x in (code, seqs, side, at)) if keep.any() else None
    a, b, sa = seqs[:-1][paired], seqs[1:][paired], side[:-1][paired]
    return np.where(sa, b, a), np.where(sa, a, b), left
