"""The modelled device clock: latency you can bound and reproduce on any machine.

A query session on a modelled device (dissertation §2.3 for latency, §4.2.1 for the
overload situation of Definition 4.1) works like a single FIFO server:

* event ``k`` arrives at its timestamp ``t_k`` and waits until the device is free;
* processing it costs the work it makes the engine do, counted in the engine's own cost
  units (:func:`work_units`: the event, partial matches created and extended, predicates
  evaluated), times the device's ``unit_cost`` [stream time units per cost unit];
* a match completed by event ``k`` is detected when the device finishes ``k``, so its
  latency is ``finish_k − t_k`` (detection time minus the arrival of its last event);
  shed events and partial matches produce no match and do not enter the statistic.

Utilisation is busy time over the stream's time span. An experiment sets ``unit_cost`` so
that the unshed run's utilisation is a chosen value (:func:`unit_cost_for`; 0.9 in the
Ch. 4 reproduction), then bounds latency as a share of the unshed run's.

Choice (the spec leaves it open): the overload detector ℓ(k) of Eq. 2.5 reads a window of
the latencies of the most recent processed events *that could complete a match* (of a
type that enters an accepting state: each is the latency a match it completes has), not
of the matches themselves, which are too sparse and bursty to steer by; after a state
shedding it is judged on the events that arrive after it only. The statistic reported
as the result is over matches.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass

from cep_core.counters import Counters

__all__ = ["DeviceClock", "LatencyWindow", "work_units", "unit_cost_for", "STATISTICS"]

STATISTICS = ("avg", "p95")


def work_units(counters: Counters) -> int:
    """Cost units of the work in ``counters``: events + partial matches created +
    partial matches extended + predicates evaluated (the engine's cost counters,
    :mod:`cep_core.counters`).

    >>> work_units(Counters(events=1, pm_created=2, pm_extended=3, predicates=4))
    10
    """
    return counters.events + counters.pm_created + counters.pm_extended + counters.predicates


def unit_cost_for(units: float, span: float, utilisation: float = 0.9) -> float:
    """The per-unit cost [time units per cost unit] that makes ``units`` of work over a
    stream of ``span`` time units keep the device busy for ``utilisation`` of the span.

    >>> unit_cost_for(units=1_000, span=90.0, utilisation=0.9)
    0.081
    """
    if units <= 0 or span <= 0:
        raise ValueError("unit_cost_for needs positive work and a positive time span")
    return utilisation * span / units


class LatencyWindow:
    """The average or 95th percentile of the most recent ``size`` latencies.

    >>> w = LatencyWindow("avg", size=3)
    >>> for x in (1.0, 2.0, 3.0, 10.0):
    ...     w.add(x)
    >>> w.value()
    5.0
    """

    def __init__(self, statistic: str = "avg", size: int = 256):
        if statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, "
                             f"not {statistic!r}")
        if size < 1:
            raise ValueError("a latency window holds at least one latency")
        self.statistic, self.size = statistic, size
        self._recent: deque[float] = deque()
        self._sorted: list[float] = []
        self._sum = 0.0

    def add(self, latency: float) -> None:
        self._recent.append(latency)
        self._sum += latency
        if self.statistic == "p95":
            bisect.insort(self._sorted, latency)
        if len(self._recent) > self.size:
            old = self._recent.popleft()
            self._sum -= old
            if self.statistic == "p95":
                del self._sorted[bisect.bisect_left(self._sorted, old)]

    def __len__(self) -> int:
        return len(self._recent)

    def clear(self) -> None:
        """Forget every latency (after a shedding action, whose effect is judged anew)."""
        self._recent.clear()
        self._sorted.clear()
        self._sum = 0.0

    def value(self) -> float:
        """The statistic over the window (0 when empty)."""
        n = len(self._recent)
        if not n:
            return 0.0
        if self.statistic == "avg":
            return self._sum / n
        return self._sorted[min(n - 1, int(0.95 * n))]


@dataclass
class DeviceClock:
    """A single FIFO server with a per-unit cost (module doc). Times are in the stream's
    time units; ``busy`` accumulates service time."""

    unit_cost: float
    free_at: float = float("-inf")
    busy: float = 0.0
    first_arrival: float | None = None
    last_finish: float = float("-inf")

    def __post_init__(self) -> None:
        if not self.unit_cost >= 0:
            raise ValueError(f"unit_cost must be ≥ 0, not {self.unit_cost!r}")

    def start(self, arrival: float) -> float:
        """When the device picks up an event arriving at ``arrival``."""
        if self.first_arrival is None:
            self.first_arrival = arrival
        return max(arrival, self.free_at)

    def serve(self, start: float, units: float) -> float:
        """Charge ``units`` of work from ``start``; the finish time."""
        service = units * self.unit_cost
        finish = start + service
        self.busy += service
        self.free_at = finish
        self.last_finish = finish
        return finish

    def utilisation(self, span: float) -> float:
        """Busy time over ``span`` time units."""
        return self.busy / span if span > 0 else 0.0
