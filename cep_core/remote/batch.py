"""Batched fetches of remote data around the keyed engine (dissertation Ch. 5 on
:class:`cep_core.engine.keyed.KeyedEngine`).

The keyed engine evaluates a batch of events with array operations, so it cannot stop
at one event to wait for a datum as the reference engine's modelled device does
(:mod:`cep_core.remote.engine`). The fetches are modelled per batch instead, around the
session. A *step* is a batch of events arriving at one time ``t``; its keys are served
by devices (each key on one device, e.g. the meters of one gateway, as in
:mod:`cep_core.shedding.keyed`). Every processed event reads the element
``name[args]``, ``args`` being attributes of the event (an event-key need, §5.3.2), and
per device:

1. the distinct elements its events need are looked up in its cache (arrived, or still
   in flight from a prefetch);
2. the misses are requested together when the device takes the step up, each arriving
   ``ℓ_remote(d)`` later (Definition 2.10: elements needed together travel in parallel);
3. *blocking* strategies (``BL1``, ``BL2``, ``PFetch``): the device stands still until
   the last element it needs has arrived (time waited) and decides every event then; a
   device still waiting when the next step arrives takes that step up late.
   *Lazy* strategies (``LzEval``, ``Hybrid``): an event whose element is at hand is
   decided at once, one whose element is on its way when it arrives (its predicate
   postponed, §5.4.2: no match is emitted before); the device does not stand still;
4. *prefetching* (``PFetch``, ``Hybrid``; §5.4.1): ``next_events`` names the events the
   keys will send next (the attributes that give their elements, known before they
   come, such as a meter's next reading slot); their elements are requested when the
   device has done the step, unless cached. :meth:`KeyedFetcher.prefetch` requests
   elements before the first step. An element prefetched for an event that a load
   shedder then drops is fetched for nothing (counted, never used);
5. the cache keeps ``capacity`` elements per device, the least recently used evicted
   first, an element in flight never; ``BL1`` keeps none (§5.6.1).

The values the engine reads are the source's own (the keyed engine reads its table
directly); what the fetches change is *when* each event is decided: each output
carries ``data_delay``, the time from its step's arrival until the data its last event
needed were in hand (and, under a blocking strategy, its device had stopped waiting).

Choices the text leaves open, for this batched setting:

* an element's latency is the latency model's quantile at a uniform hashed from the
  source's seed and the element, so it does not depend on which batch, chunk or core
  fetches it (an element fetched again after an eviction takes the same time);
* every processed event of the step needs its element, also one that would fail an
  earlier predicate (the engine evaluates look-ups last, on the rows that pass the
  others; this overcounts only such events);
* elements are fetched one by one, each ``element_size`` bytes, not through their
  containers (ρ); the utility model's anticipation of event keys (the reference
  engine's slice-end prefetches) is replaced by ``next_events``, the keys' next
  elements being known.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from cep_core.engine.keyed_stepper import KeyedStepper
from cep_core.errors import QueryError
from cep_core.remote.source import FetchStats, RemoteSource

__all__ = ["BatchFetcher", "KeyedFetcher", "BatchCache", "KEYED_FETCH_STRATEGIES", "element_hash"]

KEYED_FETCH_STRATEGIES = ("BL1", "BL2", "PFetch", "LzEval", "Hybrid")
_LAZY = {"LzEval", "Hybrid"}
_PREFETCH = {"PFetch", "Hybrid"}
_C1, _C2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser over uint64 values."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _C1
        x = (x ^ (x >> np.uint64(27))) * _C2
    return x ^ (x >> np.uint64(31))


def element_hash(name: str, cols: Sequence[np.ndarray]) -> np.ndarray:
    """A 64-bit hash of each element ``name[cols[0][i], cols[1][i], ..]``, the same in
    every process.

    >>> a = element_hash("λ", [np.array([1, 2]), np.array([10, 10])])
    >>> b = element_hash("λ", [np.array([2]), np.array([10])])
    >>> bool(a[1] == b[0]), bool(a[0] != a[1])
    (True, True)
    """
    n = len(cols[0])
    h = np.full(n, pd.util.hash_array(np.array([name], dtype=object))[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for col in cols:
            h = _mix(h * _GOLDEN + pd.util.hash_array(np.asarray(col)))
    return h


def _uniform(h: np.ndarray) -> np.ndarray:
    """A uniform [0, 1) from each hash."""
    return (_mix(h) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


class BatchCache:
    """Per-device caches as arrays (module doc, 5): ``capacity`` elements per device,
    least recently used first out, elements in flight kept. Entries are keyed by
    :meth:`slot` (element hash and device)."""

    def __init__(self, capacity: int):
        if capacity < 0:
            raise QueryError(f"cache capacity must be ≥ 0 elements, not {capacity!r}")
        self.capacity = capacity
        self.key = np.zeros(0, dtype=np.uint64)  # sorted
        self.device = np.zeros(0, dtype=np.int64)
        self.arrival = np.zeros(0)
        self.used = np.zeros(0)
        self.evictions = 0

    @staticmethod
    def slot(h: np.ndarray, device: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return _mix(h ^ (np.asarray(device).astype(np.uint64) * _GOLDEN))

    def find(self, key: np.ndarray) -> np.ndarray:
        """Index of each entry, -1 where absent."""
        if not len(self.key):
            return np.full(len(key), -1)
        i = np.minimum(np.searchsorted(self.key, key), len(self.key) - 1)
        return np.where(self.key[i] == key, i, -1)

    def touch(self, index: np.ndarray, t: np.ndarray | float) -> None:
        self.used[index] = np.maximum(self.used[index], t)

    def add(self, key: np.ndarray, device: np.ndarray, arrival: np.ndarray,
            used: np.ndarray) -> None:
        """Put absent entries in."""
        key = np.concatenate([self.key, key])
        order = np.argsort(key, kind="stable")
        self.key = key[order]
        self.device = np.concatenate([self.device, device])[order]
        self.arrival = np.concatenate([self.arrival, arrival])[order]
        self.used = np.concatenate([self.used, used])[order]

    def evict(self, now: np.ndarray) -> None:
        """Per device, drop the least recently used arrived entries beyond capacity;
        ``now`` [per device] says what has arrived."""
        if not len(self.key):
            return
        counts = np.bincount(self.device)
        excess = counts - self.capacity
        if (excess <= 0).all():
            return
        evictable = self.arrival <= now[self.device]
        cand = np.flatnonzero(evictable & (excess[self.device] > 0))
        order = cand[np.lexsort((self.key[cand], self.used[cand], self.device[cand]))]
        dev = self.device[order]
        first = np.searchsorted(dev, dev, side="left")
        rank = np.arange(len(order)) - first
        drop = order[rank < excess[dev]]
        self.evictions += len(drop)
        keep = np.ones(len(self.key), dtype=bool)
        keep[drop] = False
        self.key, self.device = self.key[keep], self.device[keep]
        self.arrival, self.used = self.arrival[keep], self.used[keep]


class BatchFetcher:
    """The fetches of steps of events on ``devices`` devices (module doc, 1-5), without a
    session: :meth:`step` gives each event's data delay.

    ``source``: the :class:`RemoteSource` serving ``name``; ``args``: the event
    attributes that make the element's arguments; ``key``: the attribute ``device_of``
    maps to device numbers (arrays to arrays); ``strategy``: one of
    :data:`KEYED_FETCH_STRATEGIES`; ``capacity``: cache elements per device (``BL1``:
    none); ``next_events``: from a step's events (a DataFrame), the events the keys send
    next (columns: the key and ``args``), whose elements ``PFetch`` and ``Hybrid``
    prefetch."""

    def __init__(self, source: RemoteSource, name: str, args: Sequence[str], key: str,
                 device_of: Callable[[np.ndarray], np.ndarray], devices: int,
                 strategy: str, capacity: int = 0,
                 next_events: Callable[[pd.DataFrame], pd.DataFrame] | None = None):
        if strategy not in KEYED_FETCH_STRATEGIES:
            raise QueryError(f"remote strategy {strategy!r} is not one of "
                             f"{', '.join(KEYED_FETCH_STRATEGIES)} (the keyed engine's)")
        if not args:
            raise QueryError(f"{name}[..]: name the event attributes of its arguments")
        self.source, self.lookup, self.args, self.key = source, name, tuple(args), key
        self.strategy, self.lazy = strategy, strategy in _LAZY
        self.device_of, self.next_events = device_of, next_events
        self.cache = BatchCache(0 if strategy == "BL1" else capacity)
        self.free = np.full(devices, -np.inf)  # when each blocking device stops waiting
        self.stats = {f: np.zeros(devices, dtype=np.float64 if f == "waited" else np.int64)
                      for f in ("requests", "prefetches", "bytes", "waited", "hits",
                                "misses")}
        self.sent: dict[float, int] = {}  # requests by the time they were sent
        self.delays: list[np.ndarray] = []

    def step(self, t: float, events: pd.DataFrame) -> np.ndarray:
        """The data delay of each event of a step at ``t`` (module doc, 1-5)."""
        if not len(events):
            return np.zeros(0)
        n = len(self.free)
        dev = self._devices(events)
        start = np.maximum(t, self.free)  # a blocking device may still be waiting
        arrival = self._request(self._hashes(events), dev, start[dev], prefetch=False)
        ready = np.maximum(arrival, start[dev])
        if self.lazy:
            done = np.full(n, t)
            delay = ready - t
        else:
            end = start.copy()
            np.maximum.at(end, dev, ready)
            active = np.bincount(dev, minlength=n) > 0
            self.stats["waited"][active] += (end - start)[active]
            self.free[active] = end[active]
            done = np.where(active, end, t)
            delay = end[dev] - t
        if self.strategy in _PREFETCH and self.next_events is not None:
            following = self.next_events(events)
            if len(following):
                fdev = self._devices(following)
                self._request(self._hashes(following), fdev, done[fdev], prefetch=True)
        self.cache.evict(done)
        self.delays.append(delay)
        return delay

    def prefetch(self, t: float, events: pd.DataFrame) -> None:
        """Request, at time ``t``, the elements of ``events`` (columns: the key and
        ``args``) that are not cached."""
        if len(events):
            self._request(self._hashes(events), self._devices(events),
                          np.full(len(events), float(t)), prefetch=True)

    def _devices(self, rows: pd.DataFrame) -> np.ndarray:
        dev = np.asarray(self.device_of(rows[self.key].to_numpy()), dtype=np.int64)
        if len(dev) and (dev.min() < 0 or dev.max() >= len(self.free)):
            raise QueryError(f"device_of gave devices outside 0..{len(self.free) - 1}")
        return dev

    def _hashes(self, rows: pd.DataFrame) -> np.ndarray:
        return element_hash(self.lookup, [rows[a].to_numpy() for a in self.args])

    def _latency(self, h: np.ndarray) -> np.ndarray:
        u = _uniform(h ^ np.uint64(self.source.seed & 0xFFFFFFFFFFFFFFFF))
        return self.source.latency.quantile(u)

    def _request(self, h: np.ndarray, dev: np.ndarray, at: np.ndarray,
                 prefetch: bool) -> np.ndarray:
        """Fetch the distinct elements not in their device's cache, sent at ``at``; the
        arrival of each (cached or fetched)."""
        slot = BatchCache.slot(h, dev)
        uniq, first, inv = np.unique(slot, return_index=True, return_inverse=True)
        idx = self.cache.find(uniq)
        found = idx >= 0
        arrival = np.empty(len(uniq))
        arrival[found] = self.cache.arrival[idx[found]]
        miss = ~found
        udev, uat = dev[first], at[first]
        arrival[miss] = uat[miss] + self._latency(h[first][miss])
        n = len(self.free)
        sent = np.bincount(udev[miss], minlength=n)
        self.stats["requests"] += sent
        self.stats["bytes"] += sent * self.source.element_size
        for when, count in zip(*np.unique(uat[miss], return_counts=True), strict=True):
            self.sent[float(when)] = self.sent.get(float(when), 0) + int(count)
        if prefetch:
            self.stats["prefetches"] += sent
        else:
            ready = found.copy()
            ready[found] = arrival[found] <= uat[found]
            self.stats["hits"] += np.bincount(udev[ready], minlength=n)
            self.stats["misses"] += np.bincount(udev[~ready], minlength=n)
            self.cache.touch(idx[found], uat[found])
        self.cache.add(uniq[miss], udev[miss], arrival[miss], uat[miss])
        return arrival[inv]

    def report(self) -> dict[str, Any]:
        """Per device: requests, prefetches, bytes, waited [time units], hits, misses;
        the cache's evictions; every event's data delay."""
        return {**self.stats, "evictions": self.cache.evictions,
                "delays": np.concatenate(self.delays) if self.delays else np.zeros(0)}

    def totals(self) -> FetchStats:
        """The report summed over devices (``postponed``: the misses of a lazy
        strategy)."""
        s = self.stats
        return FetchStats(int(s["requests"].sum()), int(s["prefetches"].sum()),
                          int(s["bytes"].sum()), float(s["waited"].sum()),
                          int(s["hits"].sum()), int(s["misses"].sum()),
                          int(self.lazy) * int(s["misses"].sum()))


class KeyedFetcher(KeyedStepper, BatchFetcher):
    """A :class:`BatchFetcher` around ``session`` (a keyed session with one partition
    attribute, the key, or a :class:`cep_core.shedding.KeyedShedder` around one, whose
    shed events need no data): :meth:`feed` feeds a step and gives the session's outputs,
    each with its ``data_delay`` (module doc). An engine of the protocol through
    :class:`~cep_core.engine.keyed_stepper.KeyedStepper`, whose report is the fetches'
    (:meth:`BatchFetcher.report`)."""

    name = "keyed-vectorized+remote"
    reports = "remote"
    report = BatchFetcher.report

    def __init__(self, session: Any, source: RemoteSource, name: str, args: Sequence[str],
                 device_of: Callable[[np.ndarray], np.ndarray], devices: int,
                 strategy: str, capacity: int = 0,
                 next_events: Callable[[pd.DataFrame], pd.DataFrame] | None = None):
        self._wrap(session)
        if self.engine.plan.lookups.routes.get(name) is not source:
            raise QueryError(f"{name}[..] is not served by this remote source in the "
                             "session's query")
        super().__init__(source, name, args, self.key, device_of, devices, strategy,
                         capacity, next_events)

    def feed_step(self, batch: pd.DataFrame, as_frame: bool = True) -> Any:
        """Process one batch of events arriving at one time (module doc); the session's
        outputs, each with its ``data_delay``."""
        out = self.session.feed(batch, as_frame)
        if not len(batch):
            return _with_delay(out, None, None, self.key)
        t = self._step_time(batch)
        kept = getattr(self.session, "kept", None)
        rows = batch if kept is None else batch[kept]
        delay = self.step(t, rows)
        return _with_delay(out, rows[self.key].to_numpy(), delay, self.key)


def _with_delay(out: Any, keys: np.ndarray | None, delay: np.ndarray | None,
                key: str) -> Any:
    """The outputs with ``data_delay``: the largest delay of the step's events of the
    output's key (of the whole step when outputs do not carry the key)."""
    if keys is None or not len(keys):
        if isinstance(out, pd.DataFrame):
            return out.assign(data_delay=np.zeros(len(out)))
        return [{**r, "data_delay": 0.0} for r in out]
    per_key = pd.Series(delay).groupby(keys).max()
    if isinstance(out, pd.DataFrame):
        if key in out.columns:
            d = per_key.reindex(out[key].to_numpy()).fillna(0.0).to_numpy()
        else:
            d = np.full(len(out), float(delay.max()))
        return out.assign(data_delay=d)
    top = float(delay.max())
    return [{**r, "data_delay": float(per_key.get(r[key], 0.0)) if key in r else top}
            for r in out]
