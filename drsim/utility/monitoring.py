"""The DR compliance queries (Listings 6.1-6.3 as query text) and the three tiers.

Source: the dissertation (Zhao 2022) §6.2.1-6.2.2, Listings 6.1-6.3, Figure 6.7, Table 6.2;
where the text is silent or inconsistent, the readings of ``docs/decisions.md`` (cited
below by their headings).
Each tier runs its query text through ``cep_core``; a scenario may replace any text
(``monitoring.queries``, by the names in :data:`QUERIES`).

* **Meter tier** (:func:`meter_tier`, each smart meter, keyed by houseID): Listing 6.1
  over the household's readings at its test times → ``userNonComplianceEvent``.
* **Group tier** (:func:`group_tier`, each group leader): Listing 6.2 top (alert when more
  than γ_user of the group's households are flagged) and bottom (m_group + 1 consecutive
  alerts) → ``groupNonComplianceEvent``; the group is then latched.
* **Utility tier** (:func:`utility_tier`): Listing 6.3 top (alert when more than γ_group
  of the groups are latched) and bottom (m_utility + 1 consecutive alerts) →
  ``utilityNonComplianceEvent`` at ``t_nc``, which triggers the second DR event.

Changes from the printed listings (:data:`CHANGES` says each one again, for reports):

1. Times are minutes since midnight (docs/decisions.md, "Units, time and the three
   meanings of λ"); ``WITHIN 2h`` is compiled with ``time_unit="min"``. Household tests
   are δ minutes apart, so Listing 6.1's ``a[i].time+1 = a[i+1].time`` is
   ``a[i].time + δ = a[i+1].time``; the group and utility queries step by their tick,
   one minute, as printed (docs/decisions.md, "Test times and the first test").
2. ``a[i].time > t_start`` becomes ``a[i].time >= t_first_test`` with
   ``t_first_test = t_start + t_wait``: the first test waits for the pre-DR rebound to
   pass (§6.2.1, Step 1; docs/decisions.md, "Test times and the first test"); the group
   and utility queries use the same bound.
3. Outputs are built from ``a[last]`` instead of ``a[m]``: stamped with their detection
   time (when the next tier can see them; docs/decisions.md, "Length and detection
   time"), carrying the latest accumulated load; the house and group ids are the same for
   every event of a run, and ``a[last]`` exists even when a scenario edits the length
   condition. ``LENGTH(a+[]) > m`` is kept as printed: m + 1 consecutive tests.
4. Selection policy: strict contiguity with one run per partition
   (``runs="one-per-partition"``) over the tier's own input (a meter's readings at its
   test times, a leader's alerts at each tick; docs/decisions.md, "Strict contiguity in
   the monitoring queries"). The listings name no policy. Under skip-till-next-match,
   cep_core starts a run at every qualifying reading (so duplicate (house, time)
   events) and, with one run per household, cannot end a run whose streak broke (the
   breaking reading is skipped, the ``+ δ`` test then fails on every later reading, and
   the run waits for the window). Under strict contiguity with one run per household a
   test at which Eq. 6.4 does not hold ends the run, and the next test at which it holds
   starts a new one.
5. The group leader keeps each household's latest status between its tests
   (docs/decisions.md, "Cadence, held status and latching"): Listing 6.2 top is
   evaluated on the user events of each test time, and its alert holds at every tick
   until the next test time.
6. A latched group counts at every later tick (docs/decisions.md, "Cadence, held status
   and latching"): Listing 6.3 top reads, at each tick, one event per group latched by
   then.
7. Listing 6.2's ``γ_user × GroupSize[groupID]`` reads the threshold per group and test
   time, ``γ[groupID, time] × GroupSize[groupID]`` (:mod:`drsim.utility.threshold`;
   docs/decisions.md, "The group threshold from the expected response"): a constant
   γ_user, as printed, is the same value everywhere; from the expected response it is
   the utility's estimate of the share flagged when every household responds as
   expected, plus z standard errors.

Lost readings (``meters.reading_loss``, :mod:`drsim.utility.readings`; docs/decisions.md, "Lost
meter readings") change the meter tier's input, not the query text. The head-end knows the
test schedule, so a lost test reading is a known empty slot. With
``monitoring.max_missing`` k ≥ 1 it reaches the engine as a placeholder (``lost`` true,
``accLoad`` unknown) and the query runs as approximate matching (ACEP, Li & Ge 2016,
Definition 1, with insertions only at placeholders strictly inside a run): a run of
m_user + 1 consecutive test slots whose first and last are real failed tests, at most k
lost between, firing at its last real slot, when the loss-free run would; each user event
carries its ``missing`` slots. With k = 0 lost readings are dropped and a lost test breaks
the run (exact matching).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import cep_core
from drsim.scenario import ExpectedShare, Scenario
from drsim.utility.readings import silence

__all__ = ["QUERIES", "CHANGES", "MonitoringPlan", "MeterResult", "GroupResult",
           "UtilityResult", "accumulated_kwh", "meter_tier", "group_tier", "utility_tier",
           "check_queries", "POLICY", "RUNS", "NOT_LATCHED"]

POLICY, RUNS = "strict-contiguity", "one-per-partition"
NOT_LATCHED = -1  # latch / detection minute of a group or utility that never fired

QUERIES: dict[str, str] = {
    "meter": """\
SEQ (smartMeterEvent a+[])
WHERE SAME[houseID] AND a[i].time >= t_first_test AND a[i].time < t_end
AND a[i].accLoad > λ[a[i].houseID, a[i].time]
AND a[i].time + δ = a[i+1].time
AND LENGTH(a+[]) > m_user
WITHIN 2h
RETURN userNonComplianceEvent(a[last].time, a[last].houseID, a[last].groupID,
                              a[last].accLoad)""",
    "group_alert": """\
SELECT COUNT(DISTINCT houseID) AS alertNum, SUM(accLoad) AS sumAccLoad
FROM userNonComplianceEvent STREAM
WHERE SAME[groupID] AND alertNum > γ[groupID, time] × GroupSize[groupID]
GROUP BY time
RETURN groupAlertEvent(time, groupID, sumAccLoad)""",
    "group": """\
SEQ (groupAlertEvent a+[])
FROM groupAlertEvent STREAM
WHERE SAME[groupID] AND a[i].time >= t_first_test AND a[i].time < t_end
AND a[i].time+1 = a[i+1].time
AND LENGTH(a+[]) > m_group
WITHIN 2h
RETURN groupNonComplianceEvent(a[last].time, a[last].groupID, a[last].sumAccLoad)""",
    "utility_alert": """\
SELECT COUNT(DISTINCT groupID) AS alertNum, SUM(sumAccLoad) AS load
FROM groupNonComplianceEvent STREAM
WHERE alertNum > γ_group × GROUPNUM
GROUP BY time
RETURN utilityAlertEvent(time, load)""",
    "utility": """\
SEQ (utilityAlertEvent a+[])
FROM utilityAlertEvent STREAM
WHERE a[i].time >= t_first_test AND a[i].time < t_end
AND a[i].time+1=a[i+1].time
AND LENGTH(a+[]) > m_utility
WITHIN 2h
RETURN utilityNonComplianceEvent(a[last].time, a[last].load)""",
}

CHANGES = [
    "times in minutes; Listing 6.1 steps by δ (a[i].time + δ = a[i+1].time), the group "
    "and utility queries by their 1-minute tick; WITHIN 2h = 120 minutes",
    "a[i].time > t_start → a[i].time >= t_first_test (t_start + t_wait)",
    "outputs built from a[last] (detection time, latest accumulated load) instead of a[m]",
    "strict contiguity with one run per household / group / utility instead of "
    "skip-till-next-match (see drsim.utility.monitoring, change 4)",
    "the group leader holds each household's latest status between tests: the alert of a "
    "test time holds until the next test time",
    "a latched group counts at every later tick in the utility's alert",
    "γ_user × GroupSize[groupID] → γ[groupID, time] × GroupSize[groupID]: the threshold "
    "per group and test time (constant, or from the expected response)",
]


@dataclass(frozen=True)
class MonitoringPlan:
    """Times and parameters of the monitoring of one scenario (Table 6.2, §6.2.2)."""

    t_start: int
    t_end: int
    t_first_test: int
    delta: int
    m_user: int
    m_group: int
    m_utility: int
    gamma_user: float | ExpectedShare
    gamma_group: float
    reading: int
    settlement: int
    n_groups: int
    queries: tuple[tuple[str, str], ...] = field(default=tuple(QUERIES.items()))
    #: lost test readings a run of the meter query may hold (0: exact matching)
    max_missing: int = 0

    @classmethod
    def of(cls, scenario: Scenario) -> MonitoringPlan:
        mon, dr = scenario.monitoring, scenario.dr_program
        unknown = sorted(set(mon.queries) - set(QUERIES))
        if unknown:
            raise ValueError(f"monitoring.queries: unknown query name(s) {unknown}; "
                             f"accepted: {', '.join(QUERIES)}")
        texts = {**QUERIES, **mon.queries}
        return cls(dr.start_minute, dr.end_minute, dr.start_minute + mon.t_wait_minutes,
                   mon.delta_minutes, mon.m_user, mon.m_group, mon.m_utility, mon.gamma_user,
                   mon.gamma_group, mon.reading_interval_minutes,
                   mon.settlement_interval_minutes, len(scenario.groups),
                   tuple(texts.items()), mon.max_missing or 0)

    @property
    def test_times(self) -> np.ndarray:
        """Household test times ``t_start + t_wait + k·δ`` before ``t_end`` (§6.2.1;
        docs/decisions.md, "Test times and the first test")."""
        return np.arange(self.t_first_test, self.t_end, self.delta)

    @property
    def ticks(self) -> np.ndarray:
        """Minutes at which the group and utility tiers evaluate (docs/decisions.md,
        "Cadence, held status and latching")."""
        return np.arange(self.t_first_test, self.t_end)

    def text(self, name: str) -> str:
        return dict(self.queries)[name]

    def params(self) -> dict[str, Any]:
        """The queries' bound names; ``γ_user`` only when it is a constant (the printed
        Listing 6.2, for replacement texts that use it)."""
        constant = {} if isinstance(self.gamma_user, ExpectedShare) \
            else {"γ_user": self.gamma_user}
        return {"t_start": self.t_start, "t_end": self.t_end,
                "t_first_test": self.t_first_test, "δ": self.delta,
                "m_user": self.m_user, "m_group": self.m_group, "m_utility": self.m_utility,
                **constant, "γ_group": self.gamma_group, "GROUPNUM": self.n_groups}

    def compile(self, name: str, remote: dict[str, Any] | None = None,
                **tables: Any) -> cep_core.CompiledQuery:
        """Query ``name`` bound to this plan's parameters, the given lookup tables and
        ``remote`` sources (:mod:`drsim.utility.fetching`)."""
        return cep_core.compile(self.text(name), params={**self.params(), **tables},
                                remote=remote, time_unit="min",
                                source=f"monitoring.queries.{name}")


def _work(counters: Any) -> tuple[int, int]:
    """(events processed, partial matches created + extended) of an engine so far."""
    c = counters.as_dict()
    return c["events"], c["pm_created"] + c["pm_extended"]


def _feed_by_time(session: Any, stream: pd.DataFrame, times: np.ndarray,
                  as_frame: bool = False) -> tuple[list, np.ndarray, np.ndarray]:
    """Feed ``stream`` time by time (``times`` ascending, covering every event's time);
    the outputs of each feed (and of the final flush) and the work booked per time."""
    processed = np.zeros(len(times), dtype=np.int64)
    pms = np.zeros(len(times), dtype=np.int64)
    bounds = np.searchsorted(stream["time"].to_numpy(), times, side="left").tolist()
    bounds.append(len(stream))
    out = []
    nothing: Any = None  # the outputs of an empty batch: a batch without events changes nothing
    for i in range(len(times)):
        if bounds[i] == bounds[i + 1]:
            if nothing is None:
                nothing = session.feed(stream.iloc[:0], as_frame=as_frame)
            out.append(nothing)
            continue
        e0, p0 = _work(session.counters)
        out.append(session.feed(stream.iloc[bounds[i]:bounds[i + 1]], as_frame=as_frame))
        e1, p1 = _work(session.counters)
        processed[i], pms[i] = e1 - e0, p1 - p0
    e0, p0 = _work(session.counters)
    rest = session.flush()
    e1, p1 = _work(session.counters)
    if len(times):
        processed[-1] += e1 - e0
        pms[-1] += p1 - p0
    if rest:
        out.append(pd.DataFrame(rest) if as_frame else rest)
    return out, processed, pms


def check_queries(plan: MonitoringPlan) -> None:
    """Compile every query once (with empty tables), so that a bad replacement text
    stops the run before any work, naming the query."""
    for name in QUERIES:
        tables = {"λ": {}} if name == "meter" else {"GroupSize": {}, "γ": {}} \
            if name == "group_alert" else {}
        plan.compile(name, **tables)


# --------------------------------------------------------------------------- meter tier
def accumulated_kwh(window_kw: np.ndarray, lo: int, times: np.ndarray) -> np.ndarray:
    """(households, tests) energy used from minute ``lo`` up to (not including) each test
    minute: ``accLoad`` of Table 6.1 and Σ P̂ of Eq. 6.4 (docs/decisions.md, "Units, time
    and the three meanings of λ").

    Parameters
    ----------
    window_kw : (households, minutes) load from minute ``lo`` on [kW]
    lo : first minute of ``window_kw`` [minutes since midnight]
    times : test minutes, each in (lo, lo + minutes] [minutes since midnight]

    Examples
    --------
    >>> accumulated_kwh(np.full((1, 120), 6.0), 1110, np.array([1130, 1135]))
    array([[2. , 2.5]])
    """
    cum = np.concatenate([np.zeros((len(window_kw), 1)),
                          np.cumsum(window_kw, axis=1) / 60.0], axis=1)
    return cum[:, np.asarray(times) - lo]


@dataclass
class MeterResult:
    """User events of one chunk and the meter tier's work per test time.

    ``events``: columns time, houseID, groupID, accLoad, ``delay`` [min]: how long
    after its test time the reading that raised it was decided (its remote data in hand,
    :mod:`drsim.utility.fetching`; 0 with local tables), and ``missing``: the lost test slots in
    its run (0 without loss). Per test time (arrays aligned with ``plan.test_times``):
    ``processed`` events (placeholders of lost readings included), ``partial_matches``
    created plus extended, ``outputs`` (user events), ``fetches`` (remote-data requests
    sent for it: with local tables, one ``λ[houseID, time]`` per real reading tested),
    ``lost`` test readings, ``silent_spells`` (meters that fall silent there: one report
    each to the group leader, :func:`drsim.utility.readings.silence`); per household
    ``first_silent``, the first test at which it is silent (NOT_LATCHED: never)."""

    events: pd.DataFrame
    processed: np.ndarray
    partial_matches: np.ndarray
    outputs: np.ndarray
    first_flag: np.ndarray  # per household: first user event's minute, or NOT_LATCHED
    fetches: np.ndarray
    fetched: list[int] | None = None  # drsim.utility.fetching.FetchCounts.as_list, with remote data
    lost: np.ndarray | None = None  # per test: lost test readings (None: no loss)
    silent_spells: np.ndarray | None = None
    first_silent: np.ndarray | None = None  # per household: a test's minute, or NOT_LATCHED


def meter_stream(plan: MonitoringPlan, house_ids: np.ndarray, group_id: int,
                 acc_kwh: np.ndarray, expected_acc_kwh: np.ndarray,
                 lost: np.ndarray | None = None) -> tuple[pd.DataFrame, pd.Series]:
    """The readings Listing 6.1 tests (time, houseID, groupID, accLoad; by test time, then
    household) and the lookup ``λ[houseID, time]`` (module doc of :func:`meter_tier`).

    ``lost`` (households, tests): the test readings that did not arrive. With
    ``plan.max_missing`` ≥ 1 each is a placeholder (column ``lost`` true, ``accLoad``
    NaN: unknown); otherwise it is left out of the stream."""
    times = plan.test_times
    n, k = len(house_ids), len(times)
    if acc_kwh.shape != (n, k) or expected_acc_kwh.shape != (n, k):
        raise ValueError(f"accumulated loads must be (households, tests) = {(n, k)}")
    house_ids = np.asarray(house_ids, dtype=np.int64)
    index = pd.MultiIndex.from_arrays([np.tile(house_ids, k), np.repeat(times, n)],
                                      names=["houseID", "time"])
    lam = pd.Series(expected_acc_kwh.T.ravel(), index=index)
    acc = acc_kwh.T.ravel()
    columns = {"type": "smartMeterEvent", "time": np.repeat(times, n),
               "houseID": np.tile(house_ids, k), "groupID": group_id, "accLoad": acc}
    if lost is None:
        return pd.DataFrame(columns), lam
    if lost.shape != (n, k):
        raise ValueError(f"lost readings must be (households, tests) = {(n, k)}")
    gone = np.asarray(lost, dtype=bool).T.ravel()
    if plan.max_missing >= 1:
        stream = pd.DataFrame({**columns, "accLoad": np.where(gone, np.nan, acc),
                               "lost": gone})
    else:
        stream = pd.DataFrame(columns)[~gone].reset_index(drop=True)
    return stream, lam


def meter_tier(plan: MonitoringPlan, house_ids: np.ndarray, group_id: int,
               acc_kwh: np.ndarray, expected_acc_kwh: np.ndarray,
               shedder: Any = None, fetch: Any = None,
               lost: np.ndarray | None = None) -> MeterResult:
    """Listing 6.1 on every household of a chunk (Eq. 6.4's test).

    ``acc_kwh`` and ``expected_acc_kwh`` are (households, test times): the energy used
    since t_start up to each test time, and the expected complete response Σ P̂ over the
    same minutes (the lookup ``λ[houseID, time]``, remote data held by the utility).
    ``shedder``: makes, from the query session, what the readings are fed through test
    time by test time (load shedding, :mod:`drsim.utility.shedding`); ``fetch``: a
    :class:`drsim.utility.fetching.MeterFetch`, which serves λ as remote data. ``lost``
    (households, test times): the test readings lost on the way (:mod:`drsim.utility.readings`;
    placeholders with ``plan.max_missing`` ≥ 1, dropped otherwise: the module doc); the
    meters silent for m_user + 1 lost tests are counted."""
    times = plan.test_times
    n, k = len(house_ids), len(times)
    house_ids = np.asarray(house_ids, dtype=np.int64)
    stream, lam = meter_stream(plan, house_ids, group_id, acc_kwh, expected_acc_kwh, lost)
    approximate = {} if lost is None or plan.max_missing < 1 else \
        {"max_missing": plan.max_missing}
    if fetch is None:
        session = plan.compile("meter", λ=lam).start(POLICY, runs=RUNS, **approximate)
    else:
        source = fetch.source(lam)
        session = plan.compile("meter", remote={"λ": source}).start(POLICY, runs=RUNS)
    feeder = session if shedder is None else shedder(session)
    if fetch is not None:
        feeder = fetch.wrap(feeder, source)
    out, processed, pms = _feed_by_time(feeder, stream, times, as_frame=True)
    outputs = np.array([len(part) for part in out[:k]], dtype=np.int64)
    events = pd.concat(out, ignore_index=True)
    if "data_delay" not in events.columns:
        events["data_delay"] = 0.0
    if "missing" not in events.columns:
        events["missing"] = 0
    events = events[["time", "houseID", "groupID", "accLoad", "data_delay", "missing"]]\
        .rename(columns={"data_delay": "delay"})
    first = np.full(n, NOT_LATCHED, dtype=np.int64)
    if len(events):
        house, at = events["houseID"].to_numpy(np.int64), events["time"].to_numpy(np.int64)
        order = np.lexsort((at, house))
        house, at = house[order], at[order]
        earliest = np.r_[True, house[1:] != house[:-1]]
        first[pd.Index(house_ids).get_indexer(house[earliest])] = at[earliest]
    fetches = processed.copy() if fetch is None else fetch.requests_per_test()
    gone = spells = silent = None
    if lost is not None:
        gone = np.asarray(lost, dtype=bool).sum(axis=0).astype(np.int64)
        if plan.max_missing >= 1:  # a placeholder needs no λ: fetched for real readings
            fetches = fetches - gone
        at, spells = silence(lost, plan.m_user + 1)
        silent = np.where(at >= 0, times[at.clip(0)] if k else at, NOT_LATCHED)
    return MeterResult(events.astype({"time": np.int64, "houseID": np.int64,
                                      "groupID": np.int64, "accLoad": np.float64,
                                      "delay": np.float64, "missing": np.int64}),
                       processed, pms, outputs, first, fetches,
                       None if fetch is None else fetch.counts(), gone, spells, silent)


# --------------------------------------------------------------------------- group tier
@dataclass
class GroupResult:
    """One group leader's alerts and group events, and its work per tick (aligned with
    ``plan.ticks``): ``processed`` events and ``partial_matches`` of both queries."""

    group: int
    alerts: pd.DataFrame  # time, groupID, sumAccLoad (one row per alerting tick)
    events: pd.DataFrame  # groupNonComplianceEvent: time, groupID, sumAccLoad
    latch: int  # first group event's minute, or NOT_LATCHED
    processed: np.ndarray
    partial_matches: np.ndarray


def latest_test(plan: MonitoringPlan, shift: np.ndarray | None = None) -> np.ndarray:
    """For each tick, the latest test time known by then: at or before it, or, with
    ``shift`` (per test time, the whole minutes until its data are in, drsim.utility.fetching),
    the latest test T with T + shift ≤ tick (-1 before any).

    >>> from types import SimpleNamespace
    >>> plan = SimpleNamespace(test_times=np.array([10, 11, 12]), ticks=np.arange(10, 14))
    >>> latest_test(plan).tolist(), latest_test(plan, np.array([1, 1, 1])).tolist()
    ([10, 11, 12, 12], [-1, 10, 11, 12])
    """
    times = plan.test_times
    ready = times if shift is None else times + shift
    order = np.argsort(ready, kind="stable")
    latest = np.maximum.accumulate(times[order])
    at = np.searchsorted(ready[order], plan.ticks, side="right") - 1
    return np.where(at >= 0, latest[at.clip(0)], -1)


def group_tier(plan: MonitoringPlan, group: int, size: int, user_events: pd.DataFrame,
               gamma: dict[tuple[int, int], float],
               shift: np.ndarray | None = None) -> GroupResult:
    """Listing 6.2 at the leader of ``group`` (``size`` households) over its user events
    (columns time, houseID, accLoad); ``gamma`` is the lookup ``γ[groupID, time]``
    (:meth:`drsim.utility.threshold.Thresholds.table`); ``shift``: per test time, the whole
    minutes after it until its data are in (:func:`drsim.utility.fetching.alert_shift`; none:
    at once), from which its alert replaces the previous test's."""
    ticks = plan.ticks
    stream = pd.DataFrame({"type": "userNonComplianceEvent",
                           "time": user_events["time"].to_numpy(np.int64),
                           "houseID": user_events["houseID"].to_numpy(np.int64),
                           "groupID": group,
                           "accLoad": user_events["accLoad"].to_numpy(np.float64)})
    stream = stream.sort_values("time", kind="stable", ignore_index=True)
    alert_q = plan.compile("group_alert", GroupSize={group: size}, γ=gamma)
    parts, processed, pms = _feed_by_time(alert_q.start(), stream, ticks)
    at_tests = pd.DataFrame([r for part in parts for r in part],
                            columns=["type", "time", "groupID", "sumAccLoad"])
    # the alert of a test time holds until the next test time is known (docs/decisions.md,
    # "Cadence, held status and latching", "Remote profiles and when the tiers see them")
    known = latest_test(plan, shift)
    alerting = np.isin(known, at_tests["time"].to_numpy())
    load = at_tests.set_index("time")["sumAccLoad"]
    alerts = pd.DataFrame({"type": "groupAlertEvent", "time": ticks[alerting],
                           "groupID": group,
                           "sumAccLoad": load.reindex(known[alerting]).to_numpy()})
    session = plan.compile("group").start(POLICY, runs=RUNS)
    out, more_processed, more_pms = _feed_by_time(session, alerts, ticks, as_frame=True)
    processed += more_processed
    pms += more_pms
    events = pd.concat(out, ignore_index=True)
    events = events.reindex(columns=["time", "groupID", "sumAccLoad"])
    latch = int(events["time"].min()) if len(events) else NOT_LATCHED
    return GroupResult(group, alerts.drop(columns="type"), events, latch, processed, pms)


# --------------------------------------------------------------------------- utility tier
@dataclass
class UtilityResult:
    """The utility's alerts, its prediction ``t_nc`` (or NOT_LATCHED) and its work per
    tick."""

    alerts: pd.DataFrame  # time, load
    t_nc: int
    processed: np.ndarray
    partial_matches: np.ndarray


def utility_tier(plan: MonitoringPlan, latches: dict[int, int],
                 latch_loads: dict[int, float]) -> UtilityResult:
    """Listing 6.3 over the latched groups: ``latches[g]`` is group g's latch minute (or
    NOT_LATCHED), ``latch_loads[g]`` the accumulated load its group event carried."""
    ticks = plan.ticks
    rows = [(t, g, latch_loads.get(g, 0.0)) for t in ticks.tolist()
            for g, at in sorted(latches.items()) if at != NOT_LATCHED and at <= t]
    stream = pd.DataFrame(rows, columns=["time", "groupID", "sumAccLoad"])
    stream.insert(0, "type", "groupNonComplianceEvent")
    parts, processed, pms = _feed_by_time(plan.compile("utility_alert").start(), stream,
                                          ticks)
    alerts = pd.DataFrame([r for part in parts for r in part],
                          columns=["type", "time", "load"])
    session = plan.compile("utility").start(POLICY, runs=RUNS)
    out, more_processed, more_pms = _feed_by_time(session, alerts, ticks)
    processed += more_processed
    pms += more_pms
    found = [r["time"] for part in out for r in part]
    t_nc = int(min(found)) if found else NOT_LATCHED
    return UtilityResult(alerts.drop(columns="type"), t_nc, processed, pms)

