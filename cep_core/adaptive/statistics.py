"""Arrival rates and predicate selectivities over a sliding window.

Source: US 11,693,862 B2, "Detection-Adaptation Loop" (the statistics Stat are
re-estimated continuously over sliding windows, after the histogram methods it cites) and
Algorithm 2 (its inputs: the arrival rate r_i of each event type and the selectivity
sel_{i,j} of the predicates between two elements, sel_{i,i} of those on one). Here the
window holds the events themselves (a deque per type, and per predicate its evaluations
with their outcomes), so the estimates are exact over the window:

    r_T = (|{events of type T with t > now − w}| + 1) / w                    [1/time unit]
    sel_p = (passed_p + 1) / (evaluated_p + 2) over the evaluations of p in the window

The one added event and the added pass and failure (Laplace's rule of succession) keep a
type seen rarely, or a predicate evaluated rarely, from swinging between zero and a value
at every event, which no distance d could tell from a real change. A predicate evaluated
fewer than :data:`MIN_EVALUATIONS` times in the window keeps its estimate over the whole
stream.

The evaluations must be independent samples. Those a plan makes are not: it evaluates a
predicate between two positions on the candidates its earlier steps let through, one
partial match against every later event, so a window's evaluations of ``a.x < b.x`` may
all share two or three ``a`` events and their share swings between 0 and 1 with their x
(measured: 0.01 to 0.95 on a stream where the predicate holds for half of the pairs).
The adaptive engine therefore samples them apart from any plan, each event in one pair
at most: an event that arrives at a position is paired with the event of the other
position in its partition that waits for a partner within the pattern's window, or waits
itself (:mod:`cep_core.adaptive.engine`). A rare position thus gives few samples, and the
estimate stays the whole stream's until the window holds enough. Predicates on one
position are evaluated on every arriving event, once.

>>> s = WindowStatistics(["A", "B"], 1, window=10.0)
>>> for t in (1, 2, 3):
...     s.event("A", t)
>>> s.event("B", 12); s.predicate(0, True, 12); s.predicate(0, False, 12)
>>> s.expire()
>>> s.rate("A"), s.rate("B"), s.selectivity(0)
(0.2, 0.2, 0.5)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

__all__ = ["WindowStatistics", "MIN_EVALUATIONS"]

MIN_EVALUATIONS = 30  # evaluations in the window before its share replaces the stream's


class WindowStatistics:
    """Rates per event type and selectivities per predicate over the last ``window``
    stream time units (module doc), updated incrementally."""

    def __init__(self, types: Iterable[str], n_preds: int, window: float):
        if not window > 0:
            raise ValueError(f"the statistics window must be positive, not {window!r}")
        self.window = float(window)
        self.arrivals: dict[str, deque] = {t: deque() for t in types}
        self.evaluations: list[deque] = [deque() for _ in range(n_preds)]
        self.passed = [0] * n_preds  # passes among the evaluations in the window
        self.ever = [[0, 0] for _ in range(n_preds)]  # (evaluated, passed), whole stream
        self.now: Any = None

    def event(self, typ: str, t: Any) -> None:
        """An event of type ``typ`` arrived at ``t`` (stream time)."""
        self.now = t
        q = self.arrivals.get(typ)
        if q is not None:
            q.append(t)

    def predicate(self, index: int, passed: bool, t: Any) -> None:
        """Predicate ``index`` was evaluated at ``t`` with this outcome."""
        self.evaluations[index].append((t, passed))
        self.passed[index] += passed
        ever = self.ever[index]
        ever[0] += 1
        ever[1] += passed

    def expire(self) -> None:
        """Forget what fell out of the window."""
        if self.now is None:
            return
        lo = self.now - self.window
        for q in self.arrivals.values():
            while q and q[0] <= lo:
                q.popleft()
        for i, q in enumerate(self.evaluations):
            while q and q[0][0] <= lo:
                self.passed[i] -= q.popleft()[1]

    def rate(self, typ: str) -> float:
        """Events of ``typ`` per stream time unit in the window, with one event added (as
        of the last :meth:`expire`)."""
        return (len(self.arrivals[typ]) + 1) / self.window

    def selectivity(self, index: int) -> float:
        """The share of predicate ``index``'s evaluations in the window that passed, one
        pass and one failure added (over the whole stream while the window holds fewer
        than :data:`MIN_EVALUATIONS`)."""
        n = len(self.evaluations[index])
        if n >= MIN_EVALUATIONS:
            return (self.passed[index] + 1) / (n + 2)
        evaluated, passed = self.ever[index]
        return (passed + 1) / (evaluated + 2)

    def as_dict(self, pred_texts: list[str]) -> dict[str, Any]:
        """The window section of a session's statistics."""
        self.expire()
        return {"length": self.window,
                "rate_per_type": {t: self.rate(t) for t in self.arrivals},
                "selectivity": {text: self.selectivity(i)
                                for i, text in enumerate(pred_texts)}}
