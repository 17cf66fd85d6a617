"""Many modelled devices at once: the device clock of :mod:`cep_core.shedding.clock`
vectorised with numpy, for a keyed query whose partitions are served by many devices
(each partition on one device, e.g. the meters of one gateway).

Each device is a single FIFO server with its own per-unit cost: the events of one step
arrive together at time ``t`` and are served in the order given, so an event's latency is
the device's backlog at ``t`` plus the work of the events before it and its own, times the
unit cost (dissertation §2.3, Definition 2.9; Definition 4.1 for the overload). A latency
window per device keeps the most recent ``size`` latencies for ℓ (Eq. 2.5).
"""

from __future__ import annotations

import numpy as np

__all__ = ["DeviceFleet", "keepable"]


class DeviceFleet:
    """``n`` modelled devices (module doc) with per-unit costs ``unit_cost`` [time units
    per cost unit] and latency windows of ``size`` entries.

    >>> fleet = DeviceFleet(np.array([1.0, 2.0]), size=4)
    >>> fleet.serve(np.array([0, 0, 1]), 10.0, np.array([1, 2, 1]))
    array([1., 3., 2.])
    >>> fleet.free_at.tolist(), fleet.busy.tolist()
    ([13.0, 12.0], [3.0, 2.0])
    >>> fleet.statistic("avg").tolist()
    [2.0, 2.0]
    """

    def __init__(self, unit_cost: np.ndarray, size: int = 64):
        self.unit_cost = np.asarray(unit_cost, dtype=np.float64)
        n = len(self.unit_cost)
        self.free_at = np.full(n, -np.inf)
        self.busy = np.zeros(n)
        self.window = np.full((n, size), np.nan)
        self._next = np.zeros(n, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.unit_cost)

    def serve(self, device: np.ndarray, t: float, work: np.ndarray) -> np.ndarray:
        """Serve events arriving at ``t`` on ``device`` (one per event, events of a
        device in service order) with ``work`` cost units each; their latencies, also
        recorded in the devices' windows."""
        device = np.asarray(device, dtype=np.int64)
        work = np.asarray(work, dtype=np.float64)
        if not device.size:
            return np.zeros(0)
        order = np.argsort(device, kind="stable")
        dev, cost = device[order], work[order] * self.unit_cost[device[order]]
        first = np.r_[True, dev[1:] != dev[:-1]]
        run = np.cumsum(cost)
        before = np.maximum.accumulate(np.where(first, np.arange(dev.size), 0))
        within = run - np.r_[0.0, run][before]  # cumulative cost within the device
        start = np.maximum(t, self.free_at[dev])
        finish = start + within
        latency = np.empty(dev.size)
        latency[order] = finish - t
        last = np.r_[dev[1:] != dev[:-1], True]
        self.free_at[dev[last]] = finish[last]
        np.add.at(self.busy, dev, cost)
        self._record(device, latency)
        return latency

    def _record(self, device: np.ndarray, latency: np.ndarray) -> None:
        """Append the latencies to their devices' windows (oldest overwritten first)."""
        order = np.argsort(device, kind="stable")
        dev = device[order]
        first = np.r_[True, dev[1:] != dev[:-1]]
        rank = np.arange(dev.size) - np.maximum.accumulate(
            np.where(first, np.arange(dev.size), 0))
        size = self.window.shape[1]
        slot = (self._next[dev] + rank) % size
        keep = rank >= np.bincount(dev, minlength=len(self))[dev] - size
        self.window[dev[keep], slot[keep]] = latency[order][keep]
        np.add.at(self._next, dev, 1)

    def statistic(self, kind: str = "avg") -> np.ndarray:
        """ℓ per device: the mean or 95th percentile of its window (0 when empty)."""
        w = self.window
        have = ~np.isnan(w).all(axis=1)
        out = np.zeros(len(self))
        if have.any():
            if kind == "avg":
                out[have] = np.nanmean(w[have], axis=1)
            else:
                out[have] = np.nanpercentile(w[have], 95, axis=1, method="lower")
        return out

    def samples(self) -> np.ndarray:
        """The number of latencies in each device's window."""
        return (~np.isnan(self.window)).sum(axis=1)

    def clear(self, devices: np.ndarray) -> None:
        """Forget the windows of ``devices`` (after a shedding action there)."""
        self.window[devices] = np.nan


def keepable(backlog: float, unit_cost: float, n: int, bound: float,
             statistic: str = "avg") -> int:
    """The most of ``n`` events arriving together, one cost unit each, that a device with
    ``backlog`` [time units] of work waiting serves with their latency statistic within
    ``bound``: the first k are served at ``backlog + unit_cost × (1..k)``, whose average
    or 95th percentile (method "lower", as :meth:`DeviceFleet.statistic`) must not
    exceed it (Definition 4.1). The events beyond are what an input filter has to shed
    to meet the bound at this arrival (Eq. 4.6's capacity, exact on the modelled device).

    >>> keepable(0.0, 1.0, 4, 1.5), keepable(0.0, 1.0, 4, 10.0), keepable(2.0, 1.0, 4, 1.5)
    (2, 4, 0)
    >>> keepable(0.0, 1.0, 40, 5.0, "p95")
    6
    """
    k = np.arange(1, n + 1)
    if statistic == "avg":
        stat = backlog + unit_cost * (k + 1) / 2.0
    else:
        stat = backlog + unit_cost * (np.floor(0.95 * (k - 1)) + 1)
    ok = np.flatnonzero(stat <= bound + 1e-12)
    return int(ok[-1] + 1) if ok.size else 0
