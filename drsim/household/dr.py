"""DR events and the behavioural response to them (dissertation §6.3.1).

A DR request lowers the start probability of deferrable appliances and delays EV
charging for the households that follow through: a start that would fall inside a
known event is moved after its end with probability θ (rebound), and appliances that
can run in advance (pre-cooling, pre-heating) are moved before it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from drsim.units import clock_minutes

FollowThroughSpec = None | float | Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class DREvent:
    """A DR event of the schedule.

    ``announced`` defaults to the scenario's notice period before ``start``; households
    react only from the announcement on. ``follow_through`` is None for each household's
    θ_o, a float that scales θ_o, or a function from the θ_o array to this event's θ.
    """

    start: str | int = "18:30"
    end: str | int = "20:30"
    announced: str | int | None = None
    follow_through: FollowThroughSpec = None

    def resolve(self, notice_minutes: int, theta_o: np.ndarray) -> ResolvedEvent:
        start = clock_minutes(self.start, "DREvent.start")
        end = clock_minutes(self.end, "DREvent.end")
        if end <= start:
            raise ValueError(f"DREvent: end {self.end} must be after start {self.start}")
        announce = (
            start - notice_minutes
            if self.announced is None
            else clock_minutes(self.announced, "DREvent.announced")
        )
        if announce > start:
            raise ValueError(f"DREvent: announced {self.announced} after start {self.start}")
        ft = self.follow_through
        if ft is None:
            theta = theta_o
        elif callable(ft):
            theta = np.asarray(ft(theta_o), dtype=np.float64)
        else:
            theta = theta_o * float(ft)
        return ResolvedEvent(start, end, announce, np.clip(theta, 0.0, 1.0))


@dataclass(frozen=True)
class ResolvedEvent:
    """An event in minutes since midnight of the DR day, with θ per household."""

    start: int
    end: int
    announce: int
    theta: np.ndarray


def merged_windows(events: list[ResolvedEvent]) -> np.ndarray:
    """(k, 2) array of the union of the events' [start, end) windows, sorted."""
    spans = sorted((e.start, e.end) for e in events)
    out: list[list[int]] = []
    for s, e in spans:
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def active_theta(events: list[ResolvedEvent], rows: np.ndarray, t: np.ndarray) -> np.ndarray:
    """θ of each (household row, time) pair: the highest θ of the events active at t, else 0."""
    theta = np.zeros(len(t))
    for e in events:
        inside = (t >= e.start) & (t < e.end)
        theta = np.where(inside, np.maximum(theta, e.theta[rows]), theta)
    return theta


def window_end(events: list[ResolvedEvent], t: np.ndarray) -> np.ndarray:
    """End of the merged event window containing each t (t itself outside windows)."""
    w = merged_windows(events)
    if len(w) == 0:
        return t.copy()
    i = np.searchsorted(w[:, 0], t, side="right") - 1
    inside = (i >= 0) & (t < w[np.maximum(i, 0), 1])
    return np.where(inside, w[np.maximum(i, 0), 1], t)
