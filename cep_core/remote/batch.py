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
   first, an element in flight never; ``BL1`` keeps none (§5.6.1);
6. *versions* (optional, ``versions=``: a :class:`~cep_core.remote.versions.Versions`
   schedule). The source keeps updating some elements (§6.3.4: the baseline profiles
   are updated from the latest DR feedback while meters and gateways fetch them; the
   remote data of §5.2 served by §5.3-5.4's fetches): element ``e`` gets version ``k``
   at its publish time ``p_k``; version 0, the table's value, holds from -inf.

   * A fetch of ``e`` sent at ``s`` is answered with the version current at ``s``
     (latest ``p_k <= s``), arriving at ``s + ℓ(e, k)``; ``ℓ(e, k)`` is hashed from the
     element and the version (``ℓ(e, 0)`` is the unversioned ``ℓ(e)``), so a refetch
     takes a deterministic but different time.
   * When ``k`` is published, the source pushes an invalidation to every device holding
     ``e`` (cached or in flight); it arrives at ``p_k + ℓ(e, k)``. A copy of version
     ``v`` is thus valid from its arrival until ``x(e, v) = min_{k > v} p_k + ℓ(e, k)``,
     when the device drops it; an answer that arrives at or after ``x(e, v)`` is
     dropped on arrival (the invalidation came first).
   * A device that needs an element it no longer holds fetches it again (a miss). A
     copy an invalidation reaches while its events wait (a blocking device waiting for
     its other elements, a lazy event for its own) is fetched again when the
     invalidation arrives, until every event's copy is valid when the event is decided.
   * Prefetching (``PFetch``, ``Hybrid``) does not refetch an invalidated prefetched
     element on the push: prefetches are chosen when a step is done from the events the
     keys send next (§5.4.1), and an element updated again before its step would be
     fetched twice for nothing; the step that needs it fetches it (a miss).
   * Guarantee: an event decided at ``t`` never reads version ``v`` of ``e`` when a
     later version ``k`` arrived by then (``p_k + ℓ(e, k) <= t``), nor a version
     published after ``t`` (each fetch is sent by ``t``).
   * Counted per device: ``refetches`` (requests of elements whose copy an invalidation
     dropped) and ``invalidations`` (copies dropped, once per copy; one that reaches a
     copy after the device's last step is not counted); the report gives the version
     each event read (``versions``);
7. the values the session reads. Without versions they are the source's own (the keyed
   engine reads its table directly), and what the fetches change is *when* each event
   is decided. With versions, :class:`KeyedFetcher` makes the step's fetches when the
   session first reads the lookup (the fetches do not depend on the session's
   evaluation, only on the events served: those a load shedder kept) and overlays the
   lookup's table (:attr:`cep_core.engine.vectorize.TableIndex.overlay`) with the value
   of the version each element was served, for that step only. The lookup's arguments
   do not name the device, so one element served at two versions in one step (to two
   devices) is refused. A shedder's input tests run before it chooses the step's events,
   so before anything is fetched for them: they read the version current at the step's
   time (the one a fetch sent then is answered with; a device that sheds an event on it
   is one that knows the element's latest value, as a meter filtering its own reading
   against the profile it reads).

Each output carries ``data_delay``, the time from its step's arrival until the data its
last event needed were in hand (and, under a blocking strategy, its device had stopped
waiting).

Choices the text leaves open, for this batched setting:

* an element's latency is the latency model's quantile at a uniform hashed from the
  source's seed and the element (and its version, 6), so it does not depend on which
  batch, chunk or core fetches it (an element fetched again after an eviction takes
  the same time);
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
from cep_core.remote.hashing import GOLDEN, element_hash, mix, uniform
from cep_core.remote.source import FetchStats, RemoteSource
from cep_core.remote.versions import Versions

__all__ = ["BatchFetcher", "KeyedFetcher", "BatchCache", "KEYED_FETCH_STRATEGIES", "element_hash"]

KEYED_FETCH_STRATEGIES = ("BL1", "BL2", "PFetch", "LzEval", "Hybrid")
_LAZY = {"LzEval", "Hybrid"}
_PREFETCH = {"PFetch", "Hybrid"}
_COUNTS = ("requests", "prefetches", "bytes", "waited", "hits", "misses", "refetches",
           "invalidations")


class BatchCache:
    """Per-device caches as arrays (module doc, 5): ``capacity`` elements per device,
    least recently used first out, elements in flight kept. Entries are keyed by
    :meth:`slot` (element hash and device); each has its arrival, last use, version and
    expiry (when an invalidation reaches it, module doc 6; inf without versions). A copy
    dropped on an invalidation leaves its slot in :attr:`dropped`, so that fetching it
    again counts as a refetch."""

    def __init__(self, capacity: int):
        if capacity < 0:
            raise QueryError(f"cache capacity must be ≥ 0 elements, not {capacity!r}")
        self.capacity = capacity
        self.key = np.zeros(0, dtype=np.uint64)  # sorted
        self.device = np.zeros(0, dtype=np.int64)
        self.arrival = np.zeros(0)
        self.used = np.zeros(0)
        self.version = np.zeros(0, dtype=np.int64)
        self.expires = np.zeros(0)
        self.dropped = np.zeros(0, dtype=np.uint64)  # sorted
        self.evictions = 0

    @staticmethod
    def slot(h: np.ndarray, device: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return mix(h ^ (np.asarray(device).astype(np.uint64) * GOLDEN))

    def find(self, key: np.ndarray) -> np.ndarray:
        """Index of each entry, -1 where absent."""
        if not len(self.key):
            return np.full(len(key), -1)
        i = np.minimum(np.searchsorted(self.key, key), len(self.key) - 1)
        return np.where(self.key[i] == key, i, -1)

    def touch(self, index: np.ndarray, t: np.ndarray | float) -> None:
        self.used[index] = np.maximum(self.used[index], t)

    def add(self, key: np.ndarray, device: np.ndarray, arrival: np.ndarray,
            used: np.ndarray, version: np.ndarray | None = None,
            expires: np.ndarray | None = None) -> None:
        """Put absent entries in (version 0, never expiring, unless given)."""
        version = np.zeros(len(key), np.int64) if version is None else version
        expires = np.full(len(key), np.inf) if expires is None else expires
        key = np.concatenate([self.key, key])
        order = np.argsort(key, kind="stable")
        self.key = key[order]
        self.device = np.concatenate([self.device, device])[order]
        self.arrival = np.concatenate([self.arrival, arrival])[order]
        self.used = np.concatenate([self.used, used])[order]
        self.version = np.concatenate([self.version, version])[order]
        self.expires = np.concatenate([self.expires, expires])[order]

    def _keep(self, keep: np.ndarray) -> None:
        self.key, self.device = self.key[keep], self.device[keep]
        self.arrival, self.used = self.arrival[keep], self.used[keep]
        self.version, self.expires = self.version[keep], self.expires[keep]

    def drop(self, index: np.ndarray) -> np.ndarray:
        """Drop entries on an invalidation (module doc, 6); their devices."""
        devices = self.device[index]
        if not len(index):
            return devices
        self.dropped = np.union1d(self.dropped, self.key[index])
        keep = np.ones(len(self.key), dtype=bool)
        keep[index] = False
        self._keep(keep)
        return devices

    def drop_expired(self, now: np.ndarray) -> np.ndarray:
        """Drop the entries an invalidation has reached by ``now`` [per device]; their
        devices."""
        if not len(self.key):
            return np.zeros(0, dtype=np.int64)
        return self.drop(np.flatnonzero(self.expires <= now[self.device]))

    def revive(self, key: np.ndarray) -> np.ndarray:
        """Whether each of ``key`` (absent entries) was dropped on an invalidation; forget
        those drops (they are fetched again)."""
        if not len(self.dropped):
            return np.zeros(len(key), dtype=bool)
        was = np.isin(key, self.dropped)
        if was.any():
            self.dropped = np.setdiff1d(self.dropped, key[was], assume_unique=True)
        return was

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
        self._keep(keep)


class BatchFetcher:
    """The fetches of steps of events on ``devices`` devices (module doc, 1-6), without a
    session: :meth:`step` gives each event's data delay.

    ``source``: the :class:`RemoteSource` serving ``name``; ``args``: the event
    attributes that make the element's arguments; ``key``: the attribute ``device_of``
    maps to device numbers (arrays to arrays); ``strategy``: one of
    :data:`KEYED_FETCH_STRATEGIES`; ``capacity``: cache elements per device (``BL1``:
    none); ``next_events``: from a step's events (a DataFrame), the events the keys send
    next (columns: the key and ``args``), whose elements ``PFetch`` and ``Hybrid``
    prefetch; ``versions``: the source's publication schedule of ``name``
    (:class:`~cep_core.remote.versions.Versions`, module doc 6), None for one value per
    element for the whole run."""

    def __init__(self, source: RemoteSource, name: str, args: Sequence[str], key: str,
                 device_of: Callable[[np.ndarray], np.ndarray], devices: int,
                 strategy: str, capacity: int = 0,
                 next_events: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
                 versions: Versions | None = None):
        if strategy not in KEYED_FETCH_STRATEGIES:
            raise QueryError(f"remote strategy {strategy!r} is not one of "
                             f"{', '.join(KEYED_FETCH_STRATEGIES)} (the keyed engine's)")
        if not args:
            raise QueryError(f"{name}[..]: name the event attributes of its arguments")
        if versions is not None and (versions.name != name or
                                     len(versions.dtypes) != len(args)):
            raise QueryError(f"the versions of {versions.name}[..] with "
                             f"{len(versions.dtypes)} argument(s) are not those of "
                             f"{name}[..] with {len(args)}")
        self.source, self.lookup, self.args, self.key = source, name, tuple(args), key
        self.strategy, self.lazy = strategy, strategy in _LAZY
        self.device_of, self.next_events = device_of, next_events
        self.cache = BatchCache(0 if strategy == "BL1" else capacity)
        self.free = np.full(devices, -np.inf)  # when each blocking device stops waiting
        self.stats = {f: np.zeros(devices, dtype=np.float64 if f == "waited" else np.int64)
                      for f in _COUNTS}
        self.sent: dict[float, int] = {}  # requests by the time they were sent
        self.delays: list[np.ndarray] = []
        # an empty schedule is none: every element keeps the table's value (version 0)
        self.versions = versions if versions is not None and len(versions) else None
        self.served: list[np.ndarray] = []  # the version each event read, per step
        self._expiry = None if self.versions is None else \
            self.versions.invalidation_table(self._latency)

    def step(self, t: float, events: pd.DataFrame) -> np.ndarray:
        """The data delay of each event of a step at ``t`` (module doc, 1-6)."""
        if not len(events):
            return np.zeros(0)
        n = len(self.free)
        dev = self._devices(events)
        h = self._hashes(events)
        start = np.maximum(t, self.free)  # a blocking device may still be waiting
        arrival = self._request(h, dev, start[dev], prefetch=False)
        if self.versions is None:
            decision, end = self._decide(dev, start, arrival)
            self.served.append(np.zeros(len(dev), dtype=np.int64))
        else:
            decision, end = self._refresh(h, dev, start)
        if self.lazy:
            done = np.full(n, t)
        else:
            active = np.bincount(dev, minlength=n) > 0
            self.stats["waited"][active] += (end - start)[active]
            self.free[active] = end[active]
            done = np.where(active, end, t)
        delay = decision - t
        if self.strategy in _PREFETCH and self.next_events is not None:
            following = self.next_events(events)
            if len(following):
                fdev = self._devices(following)
                self._request(self._hashes(following), fdev, done[fdev], prefetch=True)
        if self.versions is not None:
            self._count("invalidations", self.cache.drop_expired(done))
        self.cache.evict(done)
        self.delays.append(delay)
        return delay

    def _decide(self, dev: np.ndarray, start: np.ndarray,
                arrival: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """When each event is decided, its elements arriving at ``arrival`` (module doc,
        3), and when each blocking device stops waiting (None for a lazy strategy)."""
        ready = np.maximum(arrival, start[dev])
        if self.lazy:
            return ready, None
        end = start.copy()
        np.maximum.at(end, dev, ready)
        return end[dev], end

    def _refresh(self, h: np.ndarray, dev: np.ndarray,
                 start: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`_decide` with versions (module doc, 6): a copy an invalidation reaches
        before its event is decided is fetched again when the invalidation arrives,
        until every event's copy is valid at its decision; the versions served are
        appended to :attr:`served`."""
        cache = self.cache
        index = cache.find(BatchCache.slot(h, dev))
        while True:
            decision, end = self._decide(dev, start, cache.arrival[index])
            stale = cache.expires[index] <= decision
            if not stale.any():
                self.served.append(cache.version[index])
                return decision, end
            entry, first = np.unique(index[stale], return_index=True)
            eh, at = h[stale][first], cache.expires[entry]
            version = self.versions.version_at(eh, at)
            cache.version[entry], cache.arrival[entry] = version, at + self._latency(eh, version)
            cache.expires[entry] = self.versions.expiry(eh, version, self._expiry)
            self._count("invalidations", cache.device[entry])
            self._count("refetches", cache.device[entry])
            self._sent(cache.device[entry], at)

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
        cols = [rows[a].to_numpy() for a in self.args]
        if self.versions is not None:
            _check_kinds(self.lookup, self.args, cols, self.versions.dtypes)
        return element_hash(self.lookup, cols)

    def _latency(self, h: np.ndarray, version: np.ndarray | None = None) -> np.ndarray:
        """Each element-version's latency (module doc): the latency model's quantile at
        a uniform hashed from the source's seed, the element and the version (the
        element's own hash for version 0)."""
        if version is not None:
            with np.errstate(over="ignore"):
                h = h ^ mix(np.asarray(version).astype(np.uint64) * GOLDEN)
        u = uniform(h ^ np.uint64(self.source.seed & 0xFFFFFFFFFFFFFFFF))
        return self.source.latency.quantile(u)

    def _count(self, counter: str, devices: np.ndarray) -> None:
        self.stats[counter] += np.bincount(devices, minlength=len(self.free))

    def _sent(self, devices: np.ndarray, at: np.ndarray) -> np.ndarray:
        """Count requests sent from ``devices`` at ``at``; the requests per device."""
        sent = np.bincount(devices, minlength=len(self.free))
        self.stats["requests"] += sent
        self.stats["bytes"] += sent * self.source.element_size
        for when, count in zip(*np.unique(at, return_counts=True), strict=True):
            self.sent[float(when)] = self.sent.get(float(when), 0) + int(count)
        return sent

    def _request(self, h: np.ndarray, dev: np.ndarray, at: np.ndarray,
                 prefetch: bool) -> np.ndarray:
        """Fetch the distinct elements not in their device's cache (or whose copy an
        invalidation has reached), sent at ``at``; the arrival of each (cached or
        fetched)."""
        slot = BatchCache.slot(h, dev)
        uniq, first, inv = np.unique(slot, return_index=True, return_inverse=True)
        udev, uat, uh = dev[first], at[first], h[first]
        idx = self.cache.find(uniq)
        if self.versions is not None:
            idx = self._drop_stale(uniq, idx, uat)
        found = idx >= 0
        arrival = np.empty(len(uniq))
        arrival[found] = self.cache.arrival[idx[found]]
        miss = ~found
        version = None if self.versions is None else self.versions.version_at(uh[miss],
                                                                              uat[miss])
        arrival[miss] = uat[miss] + self._latency(uh[miss], version)
        sent = self._sent(udev[miss], uat[miss])
        if prefetch:
            self.stats["prefetches"] += sent
        else:
            ready = found.copy()
            ready[found] = arrival[found] <= uat[found]
            self._count("hits", udev[ready])
            self._count("misses", udev[~ready])
            self.cache.touch(idx[found], uat[found])
        expires = None
        if self.versions is not None:
            self._count("refetches", udev[miss][self.cache.revive(uniq[miss])])
            expires = self.versions.expiry(uh[miss], version, self._expiry)
        self.cache.add(uniq[miss], udev[miss], arrival[miss], uat[miss], version, expires)
        return arrival[inv]

    def _drop_stale(self, uniq: np.ndarray, idx: np.ndarray, at: np.ndarray) -> np.ndarray:
        """Drop the cached copies an invalidation reaches by ``at`` (module doc, 6); the
        entries of ``uniq`` after that."""
        found = idx >= 0
        stale = np.zeros(len(idx), dtype=bool)
        stale[found] = self.cache.expires[idx[found]] <= at[found]
        if not stale.any():
            return idx
        self._count("invalidations", self.cache.drop(idx[stale]))
        return self.cache.find(uniq)

    def report(self) -> dict[str, Any]:
        """Per device: requests, prefetches, bytes, waited [time units], hits, misses,
        refetches and invalidations (module doc, 6); the cache's evictions; every
        event's data delay and the version it read (0: the table's)."""
        def joined(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
        return {**self.stats, "evictions": self.cache.evictions,
                "delays": joined(self.delays, np.float64),
                "versions": joined(self.served, np.int64)}

    def totals(self) -> FetchStats:
        """The report summed over devices (``postponed``: the misses of a lazy
        strategy)."""
        s = self.stats
        return FetchStats(int(s["requests"].sum()), int(s["prefetches"].sum()),
                          int(s["bytes"].sum()), float(s["waited"].sum()),
                          int(s["hits"].sum()), int(s["misses"].sum()),
                          int(self.lazy) * int(s["misses"].sum()),
                          int(s["refetches"].sum()), int(s["invalidations"].sum()))


def _check_kinds(name: str, args: Sequence[str], cols: list[np.ndarray],
                 dtypes: Sequence[np.dtype]) -> None:
    """Refuse event attributes whose kind (integer, float, ..) is not that of the
    schedule's argument columns: their hashes would differ."""
    def kind(dt: np.dtype) -> str:
        return "i" if dt.kind in "iu" else dt.kind
    for a, col, dt in zip(args, cols, dtypes, strict=True):
        if kind(col.dtype) != kind(dt):
            raise QueryError(f"{name}[..]: attribute {a} is {col.dtype}, the versions' "
                             f"argument is {dt}")


class KeyedFetcher(KeyedStepper, BatchFetcher):
    """A :class:`BatchFetcher` around ``session`` (a keyed session with one partition
    attribute, the key, or a :class:`cep_core.shedding.KeyedShedder` around one, whose
    shed events need no data): :meth:`feed` feeds a step and gives the session's outputs,
    each with its ``data_delay`` (module doc). An engine of the protocol through
    :class:`~cep_core.engine.keyed_stepper.KeyedStepper`, whose report is the fetches'
    (:meth:`BatchFetcher.report`). With ``versions`` the session's predicates read the
    value of the version each event was served (module doc, 7)."""

    name = "keyed-vectorized+remote"
    reports = "remote"
    report = BatchFetcher.report

    def __init__(self, session: Any, source: RemoteSource, name: str, args: Sequence[str],
                 device_of: Callable[[np.ndarray], np.ndarray], devices: int,
                 strategy: str, capacity: int = 0,
                 next_events: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
                 versions: Versions | None = None):
        self._wrap(session)
        if self.engine.plan.lookups.routes.get(name) is not source:
            raise QueryError(f"{name}[..] is not served by this remote source in the "
                             "session's query")
        super().__init__(source, name, args, self.key, device_of, devices, strategy,
                         capacity, next_events, versions)
        self._pending: tuple[float, pd.DataFrame] | None = None  # the step being fed
        self._fetched: tuple | None = None  # its fetches (_fetch_pending)

    def feed_step(self, batch: pd.DataFrame, as_frame: bool = True) -> Any:
        """Process one batch of events arriving at one time (module doc); the session's
        outputs, each with its ``data_delay``."""
        if self.versions is not None and len(batch):
            return self._feed_versioned(batch, as_frame)
        out = self.session.feed(batch, as_frame)
        if not len(batch):
            return _with_delay(out, None, None, self.key)
        t = self._step_time(batch)
        kept = getattr(self.session, "kept", None)
        rows = batch if kept is None else batch[kept]
        delay = self.step(t, rows)
        return _with_delay(out, rows[self.key].to_numpy(), delay, self.key)

    def _feed_versioned(self, batch: pd.DataFrame, as_frame: bool) -> Any:
        """:meth:`feed_step` with versions (module doc, 7): the lookup's values are
        overlaid, while the session evaluates the step, with those of the versions
        served."""
        self._pending, self._fetched = (self._step_time(batch), batch), None
        if hasattr(self.session, "kept"):
            self.session.kept = None  # the shedder sets the step's own before feeding
        index = self.engine.c.indexes.get(self.lookup)
        if index is not None:
            index.overlay = self._overlay
        try:
            out = self.session.feed(batch, as_frame)
            rows, delay, _ = self._fetch_pending()
        finally:
            self._pending = None
            if index is not None:
                index.overlay = None
        return _with_delay(out, rows[self.key].to_numpy(), delay, self.key)

    def _fetch_pending(self) -> tuple[pd.DataFrame, np.ndarray, tuple]:
        """The fetches of the step being fed, made once, when the session first reads
        the lookup or after it has been fed (they do not depend on when): the events
        served (those the shedder kept), their delays, and the elements served at a
        version above 0 (sorted hashes) with those versions' values."""
        if self._fetched is None:
            t, batch = self._pending
            kept = getattr(self.session, "kept", None)
            rows = batch if kept is None else batch[kept]
            delay = self.step(t, rows)
            served = self.served[-1] if len(rows) else np.zeros(0, dtype=np.int64)
            self._fetched = (rows, delay, self._served_values(self._hashes(rows), served))
        return self._fetched

    def _served_values(self, h: np.ndarray, version: np.ndarray) -> tuple:
        """(sorted element hashes, values) of the elements served at a version above 0;
        one element served at two versions in one step is refused (the lookup's
        arguments do not name the device)."""
        if not len(h):
            return h, self.versions.values[:0]
        order = np.lexsort((version, h))
        h, version = h[order], version[order]
        keys, first = np.unique(h, return_index=True)
        last = np.append(first[1:], len(h)) - 1
        if (version[first] != version[last]).any():
            raise QueryError(f"{self.lookup}[..]: an element was served at two versions "
                             "in one step (to two devices); the session reads one")
        newer = version[first] > 0
        keys, version = keys[newer], version[first][newer]
        return keys, self.versions.values[self.versions.value_row(keys, version)]

    def _overlay(self, args: list[np.ndarray], values: np.ndarray) -> np.ndarray:
        """The lookup's ``values`` at ``args`` with the served versions' values in place
        of the table's (:attr:`cep_core.engine.vectorize.TableIndex.overlay`). Outside a
        step, the table's; in a shedder's input tests before it has chosen the step's
        events, those of the versions current at the step's time (module doc, 7)."""
        if self._pending is None or not len(values):
            return values
        cols = [np.asarray(a).astype(dt, copy=False)
                for a, dt in zip(args, self.versions.dtypes, strict=True)]
        h = element_hash(self.lookup, cols)
        if hasattr(self.session, "kept") and self.session.kept is None:
            row = self.versions.value_row(h, self.versions.version_at(h, self._pending[0]))
            if not (row >= 0).any():
                return values
            out = values.astype(np.result_type(values, self.versions.values))
            out[row >= 0] = self.versions.values[row[row >= 0]]
            return out
        keys, served = self._fetch_pending()[2]
        if not len(keys):
            return values
        i = np.minimum(np.searchsorted(keys, h), len(keys) - 1)
        hit = keys[i] == h
        if not hit.any():
            return values
        out = values.astype(np.result_type(values, served))
        out[hit] = served[i[hit]]
        return out


def _with_delay(out: Any, keys: np.ndarray | None, delay: np.ndarray | None,
                key: str) -> Any:
    """The outputs with ``data_delay``: the largest delay of the step's events of the
    output's key (of the whole step when outputs do not carry the key)."""
    if keys is None or not len(keys):
        if isinstance(out, pd.DataFrame):
            return out.assign(data_delay=np.zeros(len(out)))
        return [{**r, "data_delay": 0.0} for r in out]
    uniq, at = np.unique(keys, return_inverse=True)
    per_key = np.full(len(uniq), -np.inf)
    np.fmax.at(per_key, at.ravel(), np.asarray(delay, dtype=np.float64))
    per_key[np.isneginf(per_key)] = 0.0  # (a key whose delays are all NaN)
    top = float(delay.max())
    if isinstance(out, pd.DataFrame):
        if key not in out.columns:
            return out.assign(data_delay=np.full(len(out), top))
        wanted = out[key].to_numpy()
        i = np.minimum(np.searchsorted(uniq, wanted), max(len(uniq) - 1, 0))
        return out.assign(data_delay=np.where(uniq[i] == wanted, per_key[i], 0.0))
    found = dict(zip(uniq.tolist(), per_key.tolist(), strict=True))
    return [{**r, "data_delay": found.get(r[key], 0.0) if key in r else top} for r in out]
