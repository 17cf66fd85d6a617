"""The M&V profiles as remote data at the utility (EIRES, dissertation Ch. 5).

EIRES applied to the DR monitoring (§6.2.2, §6.3.4), on :mod:`cep_core.remote.batch`.

The meter query's ``λ[houseID, time]`` (Listing 6.1: the expected complete response
Σ P̂ up to each test time) and the group query's ``γ[groupID, time]`` (Listing 6.2's
threshold table, :mod:`drsim.utility.threshold`) live at the utility. One element per
(household or group, test time), ``element_bytes`` each, travels over the metering
network with the scenario's latency model (seconds; the engines' time is in minutes).

* *Meter tier*: the meters of a gateway (``gateway_households`` of one group, counted
  from the group's first household, as for load shedding) share one device: at each
  test time the gateway needs the elements of the readings it evaluates (a reading shed
  by load shedding needs none).
* *Group tier*: each group leader is one device; it needs its group's element at each
  test time.

Strategies (``monitoring.remote.strategy``; §5.4, §5.6.1): ``BL1`` fetches what a test
needs when it comes and blocks until the last element is in (no cache); ``BL2`` the same
with a cache; ``PFetch`` prefetches each household's (group's) next test element when
a test is done, and the first test's at the program's start, and blocks on what has not
arrived; ``LzEval`` fetches when needed but decides each reading when its own element
arrives, without holding the device; ``Hybrid`` prefetches and decides lazily. The
profiles fetched are the ones published at the announcement (with the day-of adjustment
when ``baseline.day_of_adjustment`` is set; every fetch is after the start, so no
element of the earlier version is in a cache). With ``monitoring.remote.updates`` the
utility keeps publishing versions of the elements whose value its re-estimates change
(:mod:`drsim.utility.profile_updates`): the fetchers serve the version current when a
fetch is sent, invalidate the copies a later one supersedes and fetch them again
(:mod:`cep_core.remote.batch`, module doc 6), and the group leaders read the γ each
test's fetch served (:func:`served_values`).

**When the tiers see the data** (docs/decisions.md, "Remote profiles and when the tiers
see them"). A reading decided ``data_delay`` after its test time sends its user event
then; a group leader evaluates at whole minutes, so the alert of test time T holds from
the tick ``T + ⌈delay⌉``, the delay being the largest of T's user events' and of the
leader's own γ fetch, until a later test's is in (before, the previous test's holds).
Without latency every delay is zero and the run is the run with local tables.

Not modelled: the gateway's processing time (load shedding's device, :mod:`drsim.utility.shedding`)
is not added to the data delays, and fetches do not occupy that device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cep_core.remote import BatchFetcher, KeyedFetcher, LatencyModel, RemoteSource, Versions
from cep_core.remote.batch import element_hash
from drsim.scenario import RemoteData
from drsim.utility.monitoring import MonitoringPlan

__all__ = ["latency_model", "MeterFetch", "FetchCounts", "GroupFetches", "group_fetches",
           "served_values", "alert_shift", "MICRO"]

MICRO = 1_000_000  # waits and delays are summed in whole µs
SECONDS_PER_MINUTE = 60.0


def latency_model(cfg: RemoteData) -> LatencyModel:
    """Convert the metering network's latency to the engines' time unit, minutes.

    Parameters
    ----------
    cfg : drsim.scenario.RemoteData
        The scenario's ``monitoring.remote``; its ``latency`` is in seconds.

    Returns
    -------
    cep_core.remote.LatencyModel
        The same latency model in minutes.

    Examples
    --------
    >>> from drsim.scenario import NetworkLatency
    >>> latency_model(RemoteData(latency=NetworkLatency(kind="fixed", seconds=3.0))).value
    0.05
    """
    lat = cfg.latency
    m = SECONDS_PER_MINUTE
    if lat.kind == "uniform":
        return LatencyModel("uniform", low=lat.low_seconds / m, high=lat.high_seconds / m)
    return LatencyModel(lat.kind, value=lat.seconds / m, sigma=lat.sigma)


@dataclass
class FetchCounts:
    """What one tier's devices fetched, in integers that add up exactly over chunks.

    Attributes
    ----------
    requests : int
        Requests sent, prefetches among them [requests].
    prefetches : int
        Prefetch requests [requests].
    bytes : int
        Bytes fetched [bytes].
    waited_us : int
        Time the devices waited for data [µs].
    hits, misses : int
        Cache hits and misses of the elements needed [elements].
    decisions : int
        Decisions made: readings or group tests [decisions].
    delay_us : int
        The decisions' data delays summed [µs].
    refetches : int
        Requests of elements whose copy an update's invalidation had dropped, among
        ``requests``: the fetches the updates caused [requests].
    invalidations : int
        Copies (cached or in flight) dropped on an update's invalidation [elements].
    """

    requests: int = 0
    prefetches: int = 0
    bytes: int = 0
    waited_us: int = 0
    hits: int = 0
    misses: int = 0
    decisions: int = 0
    delay_us: int = 0
    refetches: int = 0
    invalidations: int = 0

    def as_list(self) -> list[int]:
        """Return the counts as a list of integers, in field order."""
        return list(self.__dict__.values())

    @classmethod
    def of(cls, fetcher: BatchFetcher) -> FetchCounts:
        """Read the counts of a fetcher whose time unit is minutes.

        Parameters
        ----------
        fetcher : cep_core.remote.BatchFetcher
            The fetcher (a :class:`cep_core.remote.KeyedFetcher` too) after its steps.

        Returns
        -------
        FetchCounts
            Its counts, times rounded to whole µs.
        """
        s, delays = fetcher.stats, fetcher.report()["delays"]
        us = SECONDS_PER_MINUTE * MICRO
        return cls(int(s["requests"].sum()), int(s["prefetches"].sum()),
                   int(s["bytes"].sum()), int(np.round(s["waited"] * us).sum()),
                   int(s["hits"].sum()), int(s["misses"].sum()), int(delays.size),
                   int(np.round(delays * us).sum()), int(s["refetches"].sum()),
                   int(s["invalidations"].sum()))

    @classmethod
    def merged(cls, rows: Any) -> FetchCounts:
        """Sum :meth:`as_list` rows, e.g. of the chunks of a run.

        Parameters
        ----------
        rows : iterable of list of int or None
            :meth:`as_list` rows; None rows (no remote data) are skipped.

        Returns
        -------
        FetchCounts
            The sum (all zero without rows).
        """
        rows = [r for r in rows if r is not None]
        if not rows:
            return cls()
        total = np.sum([np.asarray(r, dtype=np.int64) for r in rows], axis=0)
        return cls(*(int(x) for x in total))

    def summary(self) -> dict[str, Any]:
        """Return the figures a run reports (summary.json's ``remote``).

        Returns
        -------
        dict
            The counts, the time waited [s] and the mean data delay per decision [s]
            (None without decisions).
        """
        return {"requests": self.requests, "prefetches": self.prefetches,
                "bytes": self.bytes, "waited_seconds": self.waited_us / MICRO,
                "hits": self.hits, "misses": self.misses, "decisions": self.decisions,
                "data_delay_avg_seconds": self.delay_us / MICRO / self.decisions
                if self.decisions else None,
                "refetches": self.refetches, "invalidations": self.invalidations}


def _source(cfg: RemoteData, table: Any, name: str, seed: int) -> RemoteSource:
    return RemoteSource(table, names=(name,), latency=latency_model(cfg),
                        element_size=cfg.element_bytes, seed=seed)


def _next_test(plan: MonitoringPlan, key: str):
    """Make the function giving the events the keys send at the next test.

    None after the last; their ``key`` and time, the columns a fetch reads.
    """
    def following(rows: pd.DataFrame) -> pd.DataFrame:
        time = rows["time"].to_numpy() + plan.delta
        due = time < plan.t_end
        return pd.DataFrame({key: rows[key].to_numpy()[due], "time": time[due]})
    return following


class MeterFetch:
    """The meter tier's fetches of ``λ[houseID, time]`` for the households of one chunk.

    The meters of a gateway share one device (module doc):
    :func:`drsim.utility.monitoring.meter_tier` makes the source from the chunk's table
    (:meth:`source`) and wraps what it feeds in the fetcher (:meth:`wrap`).

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring (test times, δ, program start and end).
    cfg : drsim.scenario.RemoteData
        The scenario's ``monitoring.remote``.
    house_ids : numpy.ndarray
        The chunk's household ids.
    group_first : int
        The id of the first household of the chunk's group (gateways are counted from
        it).
    seed : int
        The scenario's seed (the elements' latencies).
    versions : cep_core.remote.Versions, optional
        The versions of the chunk's ``λ`` elements the utility publishes while the
        program runs (:mod:`drsim.utility.profile_updates`); None: the table's only.
    """

    def __init__(self, plan: MonitoringPlan, cfg: RemoteData, house_ids: np.ndarray,
                 group_first: int, seed: int, versions: Versions | None = None):
        self.plan, self.cfg, self.seed, self.versions = plan, cfg, seed, versions
        self.house_ids = np.asarray(house_ids, dtype=np.int64)
        gateway = (self.house_ids - group_first) // cfg.gateway_households
        self.first = int(gateway.min())
        self.devices = int(gateway.max()) - self.first + 1
        self.group_first = group_first
        self.fetcher: KeyedFetcher | None = None

    def source(self, lam: pd.DataFrame) -> RemoteSource:
        """Make the remote source serving ``λ[houseID, time]`` from the chunk's table.

        Parameters
        ----------
        lam : pandas.DataFrame
            ``λ[houseID, time]`` [kWh], one row per household, one column per test time
            (:func:`drsim.utility.monitoring.meter_stream`).

        Returns
        -------
        cep_core.remote.RemoteSource
            The source, with the network's latency and ``element_bytes``.
        """
        return _source(self.cfg, lam, "λ", self.seed)

    def _device_of(self, keys: np.ndarray) -> np.ndarray:
        return (np.asarray(keys, dtype=np.int64) - self.group_first) \
            // self.cfg.gateway_households - self.first

    def wrap(self, feeder: Any, source: RemoteSource) -> KeyedFetcher:
        """Wrap the feeder in the fetcher the readings go through.

        With a prefetching strategy (``PFetch``, ``Hybrid``) the first test's elements are
        requested at the program's start.

        Parameters
        ----------
        feeder : Any
            The meter query's session, or the load shedder around it.
        source : cep_core.remote.RemoteSource
            The source from :meth:`source`.

        Returns
        -------
        cep_core.remote.KeyedFetcher
            The fetcher (also kept as ``self.fetcher``).
        """
        plan = self.plan
        self.fetcher = KeyedFetcher(feeder, source, "λ", ("houseID", "time"),
                                    self._device_of, self.devices, self.cfg.strategy,
                                    self.cfg.cache_elements, _next_test(plan, "houseID"),
                                    self.versions)
        if self.cfg.strategy in ("PFetch", "Hybrid") and len(plan.test_times):
            self.fetcher.prefetch(plan.t_start, pd.DataFrame(
                {"houseID": self.house_ids, "time": plan.test_times[0]}))
        return self.fetcher

    def counts(self) -> list[int]:
        """Return the chunk's :class:`FetchCounts` as a list (:meth:`FetchCounts.as_list`)."""
        return FetchCounts.of(self.fetcher).as_list()

    def requests_per_test(self) -> np.ndarray:
        """Count the requests sent for each test time.

        Those sent before the first test (at the program's start) count at the first.

        Returns
        -------
        numpy.ndarray of int64
            Requests per test time [requests].
        """
        times = self.plan.test_times
        out = np.zeros(len(times), dtype=np.int64)
        if self.fetcher is not None and self.fetcher.sent:
            when = np.fromiter(self.fetcher.sent, float, len(self.fetcher.sent))
            count = np.fromiter(self.fetcher.sent.values(), np.int64, len(when))
            at = np.searchsorted(times, when, side="right") - 1
            np.add.at(out, at.clip(0, len(times) - 1), count)
        return out


@dataclass(frozen=True)
class GroupFetches:
    """What the group leaders' fetches of ``γ[groupID, time]`` gave (:func:`group_fetches`).

    Attributes
    ----------
    delays : numpy.ndarray
        (groups, test times) each test's data delay [minutes].
    counts : FetchCounts
        What the leaders fetched.
    served : numpy.ndarray of int64
        (groups, test times) the version of its element each test read (0: the table's).
    """

    delays: np.ndarray
    counts: FetchCounts
    served: np.ndarray


def group_fetches(plan: MonitoringPlan, cfg: RemoteData, groups: int, seed: int,
                  versions: Versions | None = None) -> GroupFetches:
    """Simulate the group leaders' fetches of ``γ[groupID, time]`` and their data delays.

    Each group leader is one device that needs its group's element of the threshold table
    (:mod:`drsim.utility.threshold`, the threshold of Listing 6.2) at each test time,
    fetched over the metering network with the strategy of ``cfg`` (§5.4: PFetch,
    LzEval; §5.6.1: the baselines BL1, BL2; Hybrid). The timing and the version each test
    read are modelled here; the values are the threshold table's and its versions'
    (:func:`served_values`). How the tiers see the data is drsim's reading
    (docs/decisions.md, "Remote profiles and when the tiers see them").

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring (test times, δ, program start and end).
    cfg : drsim.scenario.RemoteData
        The scenario's ``monitoring.remote``.
    groups : int
        Number of groups [groups].
    seed : int
        The scenario's seed (the elements' latencies).
    versions : cep_core.remote.Versions, optional
        The γ versions the utility publishes while the program runs
        (:mod:`drsim.utility.profile_updates`); None: the table's only.

    Returns
    -------
    GroupFetches
        Per (group, test time) the data delay and the version read; the counts.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §5.4, §5.6.1, §6.2.2
       (Listing 6.2) and §6.3.4.

    Examples
    --------
    >>> from drsim.scenario import NetworkLatency
    >>> plan = MonitoringPlan(1110, 1230, 1130, 5, 3, 3, 3, 0.5, 0.4, 1, 15, 2)
    >>> fixed = NetworkLatency(kind="fixed", seconds=3.0)
    >>> got = group_fetches(plan, RemoteData(strategy="BL1", latency=fixed), 2, seed=1)
    >>> got.delays.shape, got.delays[:, :2].round(6).tolist(), got.counts.requests
    ((2, 20), [[0.05, 0.05], [0.05, 0.05]], 40)
    >>> got = group_fetches(plan, RemoteData(strategy="PFetch", latency=fixed), 2, seed=1)
    >>> float(got.delays.max()), got.counts.prefetches, got.counts.hits
    (0.0, 40, 40)

    A version of group 1's element of 19:00 published at 18:57, after its prefetch at
    18:55 had been sent: the copy is dropped when the invalidation arrives, and the test
    fetches the new version again.

    >>> v = Versions("γ", [np.array([1]), np.array([1140])], np.array([1137.0]),
    ...              np.array([0.3]))
    >>> got = group_fetches(plan, RemoteData(strategy="PFetch", latency=fixed), 2, 1, v)
    >>> got.counts.refetches, got.counts.invalidations, int(got.served[1, 2])
    (1, 1, 1)
    """
    source = _source(cfg, {}, "γ", seed)
    fetcher = BatchFetcher(source, "γ", ("groupID", "time"), "groupID", lambda k: k,
                           groups, cfg.strategy, cfg.cache_elements,
                           _next_test(plan, "groupID"), versions)
    ids = np.arange(groups, dtype=np.int64)
    times = plan.test_times
    if cfg.strategy in ("PFetch", "Hybrid") and len(times):
        fetcher.prefetch(plan.t_start, pd.DataFrame({"groupID": ids, "time": times[0]}))
    delays = np.zeros((groups, len(times)))
    for j, t in enumerate(times.tolist()):
        delays[:, j] = fetcher.step(t, pd.DataFrame({"groupID": ids, "time": t}))
    served = fetcher.report()["versions"].reshape(len(times), groups).T
    return GroupFetches(delays, FetchCounts.of(fetcher), served)


def served_values(name: str, keys: np.ndarray, test_times: np.ndarray, table: np.ndarray,
                  versions: Versions | None, served: np.ndarray) -> np.ndarray:
    """Return the values the elements ``name[key, time]`` had at the versions served.

    Parameters
    ----------
    name : str
        The lookup (``γ``).
    keys : numpy.ndarray of int64
        (n,) the elements' first argument (group ids).
    test_times : numpy.ndarray of int64
        (k,) their second argument [minutes since midnight].
    table : numpy.ndarray
        (n, k) the values of version 0.
    versions : cep_core.remote.Versions or None
        The later versions (None: none).
    served : numpy.ndarray of int64
        (n, k) the version each element was served at (:attr:`GroupFetches.served`).

    Returns
    -------
    numpy.ndarray
        (n, k) the values read.

    Examples
    --------
    >>> v = Versions("γ", [np.array([1]), np.array([1140])], np.array([1135.0]),
    ...              np.array([0.3]))
    >>> served_values("γ", np.array([0, 1]), np.array([1135, 1140]), np.full((2, 2), 0.1),
    ...               v, np.array([[0, 0], [0, 1]])).tolist()
    [[0.1, 0.1], [0.1, 0.3]]
    """
    out = np.asarray(table, dtype=np.float64).copy()
    if versions is None or not len(versions):
        return out
    key, at = np.meshgrid(np.asarray(keys, np.int64), np.asarray(test_times, np.int64),
                          indexing="ij")
    row = versions.value_row(element_hash(name, [key.ravel(), at.ravel()]),
                             np.asarray(served).ravel())
    flat = out.ravel()
    flat[row >= 0] = versions.values[row[row >= 0]]
    return flat.reshape(out.shape)


def alert_shift(plan: MonitoringPlan, user_events: pd.DataFrame,
                gamma_delay: np.ndarray | None) -> np.ndarray:
    r"""Compute per test time the whole minutes after it until the group leader knows its alert.

    A group leader evaluates at whole minutes, so the alert of test time T holds from the
    tick T + shift, the delay being the largest of T's user events' and of the leader's
    own γ fetch (drsim's reading, docs/decisions.md, "Remote profiles and when the tiers
    see them"):

    .. math:: \text{shift}_T = \lceil \max(\max_{e \in E_T} d_e, d^{\gamma}_T) \rceil

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring (its test times).
    user_events : pandas.DataFrame
        The group's user events, columns ``time`` [minutes since midnight] (a test time)
        and ``delay``, their data delay [minutes].
    gamma_delay : numpy.ndarray or None
        The leader's γ fetch delay per test time (:func:`group_fetches`) [minutes];
        None for none.

    Returns
    -------
    numpy.ndarray of int64
        The shift per test time [minutes], >= 0.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2 (Listing 6.2) and §6.3.4.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> plan = SimpleNamespace(test_times=np.array([1130, 1135]))
    >>> ev = pd.DataFrame({"time": [1130, 1130], "delay": [0.02, 0.0]})
    >>> alert_shift(plan, ev, np.array([0.0, 0.0])).tolist()
    [1, 0]
    """
    times = plan.test_times
    delay = np.zeros(len(times)) if gamma_delay is None else np.asarray(gamma_delay, float)
    if len(user_events):
        per_test = user_events.groupby("time")["delay"].max()
        at = np.searchsorted(times, per_test.index.to_numpy())
        delay = delay.copy()
        np.maximum.at(delay, at, per_test.to_numpy())
    return np.ceil(delay - 1e-9).clip(min=0).astype(np.int64)
