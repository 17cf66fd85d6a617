"""The DR compliance queries (Listings 6.1-6.3 as query text) and the three tiers.

Source: the dissertation (Zhao 2022) §6.2.1-6.2.2, Listings 6.1-6.3, Figure 6.7, Table 6.2;
where the text is silent or inconsistent, the readings of ``docs/decisions.md`` (cited
below by their headings).
Each tier runs its query text through ``cep_core``; a scenario may replace any text
(``monitoring.queries``, by the names in :data:`QUERIES`).

* **Meter tier** (:func:`meter_tier`, each smart meter, keyed by houseID): Listing 6.1
  over the household's readings at its test times → ``userNonComplianceEvent``.
* **Group tier** (:func:`drsim.utility.group_and_utility_tiers.group_tier`, each group
  leader): Listing 6.2 top (alert when more than γ_user of the group's households are
  flagged) and bottom (m_group + 1 consecutive alerts) → ``groupNonComplianceEvent``; the
  group is then latched.
* **Utility tier** (:func:`drsim.utility.group_and_utility_tiers.utility_tier`): Listing
  6.3 top (alert when more than γ_group of the groups are latched) and bottom (m_utility +
  1 consecutive alerts) → ``utilityNonComplianceEvent`` at ``t_nc``, which triggers the
  second DR event.

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

How the tiers test under baseline error is the plan's monitoring method
(``monitoring.method``, :mod:`drsim.utility.monitoring_method`): ``counting``, the listings
as above, by default; a method may run texts of its own (``tolerance``: Listing 6.1 with a
band, :mod:`drsim.utility.tolerance_method`).

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
from cep_core.reads import check_events
from drsim.scenario import ExpectedShare, Scenario
from drsim.utility.aggregate_reference import ReferenceReadings
from drsim.utility.meter_result import MeterResult
from drsim.utility.method_registry import method_of
from drsim.utility.monitoring_method import Counting, MonitoringMethod
from drsim.utility.readings import silence
from drsim.utility.session_feed import feed_by_time
from drsim.utility.threshold_policy import ThresholdPolicy, threshold_policy

__all__ = ["QUERIES", "CHANGES", "MonitoringPlan", "MeterResult", "accumulated_kwh",
           "meter_tier", "check_queries", "feed_by_time", "POLICY", "RUNS", "NOT_LATCHED"]

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

#: per query, the events its tier feeds it (event type -> attributes, besides type and time)
#: and the fields the tiers read of its outputs: a replacement must fit (check_queries)
TIER_EVENTS: dict[str, tuple[dict[str, tuple[str, ...]], tuple[str, ...]]] = {
    "meter": ({"smartMeterEvent": ("houseID", "groupID", "accLoad")},
              ("time", "houseID", "groupID", "accLoad")),
    "group_alert": ({"userNonComplianceEvent": ("houseID", "groupID", "accLoad")},
                    ("time", "groupID", "sumAccLoad")),
    "group": ({"groupAlertEvent": ("groupID", "sumAccLoad")}, ("time", "groupID", "sumAccLoad")),
    "utility_alert": ({"groupNonComplianceEvent": ("groupID", "sumAccLoad")}, ("time", "load")),
    "utility": ({"utilityAlertEvent": ("load",)}, ("time",)),
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
    """Times and parameters of the monitoring of one scenario (Table 6.2, §6.2.2).

    Attributes
    ----------
    t_start, t_end : int
        The DR program [minutes since midnight].
    t_first_test : int
        The first household test, ``t_start + t_wait`` (§6.2.1, Step 1; docs/decisions.md,
        "Test times and the first test") [minutes since midnight].
    delta : int
        The test interval δ [minutes].
    m_user, m_group, m_utility : int
        The lengths of Listings 6.1-6.3: a tier fires after m + 1 consecutive failed tests
        or alerts (``LENGTH(a+[]) > m``) [tests or ticks].
    gamma_user : float or drsim.scenario.ExpectedShare
        γ_user of Listing 6.2: a constant share [1], or the threshold estimated from the
        expected response (:mod:`drsim.utility.threshold`).
    gamma_group : float
        γ_group of Listing 6.3 [1].
    reading, settlement : int
        The meter reading intervals before and after a latch (§6.2.2) [minutes].
    n_groups : int
        ``GROUPNUM`` of Listing 6.3 [groups].
    queries : tuple of (str, str)
        The query texts by name (:data:`QUERIES` with the scenario's replacements).
    max_missing : int
        The lost test readings a run of the meter query may hold (0: exact matching)
        [test readings].
    method : drsim.utility.monitoring_method.MonitoringMethod
        What the tiers test under baseline error (``monitoring.method``; default
        ``counting``, the listings as above).

    Examples
    --------
    Table 6.2's program and monitoring (18:30-20:30, t_wait 20, δ 5, m 3, γ_group 0.4,
    5 groups), with γ_user 0.5:

    >>> plan = MonitoringPlan(1110, 1230, 1130, 5, 3, 3, 3, 0.5, 0.4, 1, 15, 5)
    >>> plan.test_times[:3].tolist(), int(plan.test_times[-1]), len(plan.ticks)
    ([1130, 1135, 1140], 1225, 100)
    """

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
    #: what the tiers test under baseline error (drsim.utility.monitoring_method)
    method: MonitoringMethod = Counting()

    @classmethod
    def of(cls, scenario: Scenario) -> MonitoringPlan:
        """Build the plan of a scenario's DR program and monitoring settings.

        Parameters
        ----------
        scenario : drsim.scenario.Scenario
            Its ``dr_program``, ``monitoring`` and ``groups`` are read.

        Returns
        -------
        MonitoringPlan
            The plan, with the scenario's query replacements (``monitoring.queries``).

        Raises
        ------
        ValueError
            When ``monitoring.queries`` names a query that is not in :data:`QUERIES`.
        """
        mon, dr = scenario.monitoring, scenario.dr_program
        unknown = sorted(set(mon.queries) - set(QUERIES))
        if unknown:
            raise ValueError(f"monitoring.queries: unknown query name(s) {unknown}; "
                             f"accepted: {', '.join(QUERIES)}")
        method = method_of(scenario)
        texts = {**QUERIES, **method.queries(), **mon.queries}
        return cls(dr.start_minute, dr.end_minute, dr.start_minute + mon.t_wait_minutes,
                   mon.delta_minutes, mon.m_user, mon.m_group, mon.m_utility, mon.gamma_user,
                   mon.gamma_group, mon.reading_interval_minutes,
                   mon.settlement_interval_minutes, len(scenario.groups),
                   tuple(texts.items()), mon.max_missing or 0, method)

    @property
    def test_times(self) -> np.ndarray:
        """Household test times ``t_start + t_wait + k·δ`` before ``t_end``.

        The times t_1, t_2, ... of §6.2.1, Step 2 (docs/decisions.md, "Test times and the
        first test") [minutes since midnight].
        """
        return np.arange(self.t_first_test, self.t_end, self.delta)

    @property
    def ticks(self) -> np.ndarray:
        """Minutes at which the group and utility tiers evaluate.

        Every minute from the first test up to ``t_end`` (docs/decisions.md, "Cadence, held
        status and latching") [minutes since midnight].
        """
        return np.arange(self.t_first_test, self.t_end)

    @property
    def threshold(self) -> ThresholdPolicy:
        """How γ[groupID, time] of Listing 6.2 is set (:mod:`drsim.utility.threshold_policy`).

        From the method's reading of γ_user (:meth:`MonitoringMethod.gamma_user`).
        """
        return threshold_policy(self.method.gamma_user(self.gamma_user))

    def text(self, name: str) -> str:
        """Return the text of query ``name`` (:data:`QUERIES` or its replacement)."""
        return dict(self.queries)[name]

    def params(self) -> dict[str, Any]:
        """Return the values the query texts' parameter names are bound to.

        ``γ_user`` is bound only when it is a constant (the printed Listing 6.2, for
        replacement texts that use it); drsim's Listing 6.2 reads the table
        ``γ[groupID, time]`` instead (change 7 of the module doc).

        Returns
        -------
        dict of str to Any
            ``t_start``, ``t_end``, ``t_first_test`` [minutes since midnight], ``δ``
            [minutes], ``m_user``, ``m_group``, ``m_utility``, ``γ_user`` and ``γ_group``
            [1], ``GROUPNUM`` [groups], and the method's (:attr:`method`).
        """
        return {"t_start": self.t_start, "t_end": self.t_end,
                "t_first_test": self.t_first_test, "δ": self.delta,
                "m_user": self.m_user, "m_group": self.m_group, "m_utility": self.m_utility,
                **self.threshold.query_params(),
                "γ_group": self.gamma_group, "GROUPNUM": self.n_groups,
                **self.method.params()}

    def compile(self, name: str, remote: dict[str, Any] | None = None,
                **tables: Any) -> cep_core.CompiledQuery:
        """Compile query ``name`` with this plan's parameters (:meth:`params`).

        Parameters
        ----------
        name : str
            A name of :data:`QUERIES`.
        remote : dict of str to Any, optional
            Remote data sources by name (:mod:`drsim.utility.fetching`).
        **tables
            Lookup tables by name (``λ``, ``γ``, ``GroupSize``).

        Returns
        -------
        cep_core.CompiledQuery
            The query, times in minutes.
        """
        return cep_core.compile(self.text(name), params={**self.params(), **tables},
                                remote=remote, time_unit="min",
                                source=f"monitoring.queries.{name}")


def check_queries(plan: MonitoringPlan) -> None:
    """Compile every query of ``plan`` once, with empty tables, and check it.

    A bad replacement text then stops the run before any work, naming the query: one
    that does not compile, or reads what its tier's events do not carry, or whose outputs
    lack a field the tiers read (:data:`TIER_EVENTS`).

    Parameters
    ----------
    plan : MonitoringPlan
        The plan whose query texts are checked.

    Raises
    ------
    cep_core.QueryError
        When a query text does not compile or does not fit its tier (one line).
    """
    for name in QUERIES:
        meter = {"λ": {}, **dict.fromkeys(plan.method.tables, {})}
        tables = meter if name == "meter" else {"GroupSize": {}, "γ": {}} \
            if name == "group_alert" else {}
        events, outputs = TIER_EVENTS[name]
        check_events(plan.compile(name, **tables), events, plan.params(),
                     f"monitoring.queries.{name}", outputs)


# --------------------------------------------------------------------------- meter tier
def accumulated_kwh(window_kw: np.ndarray, lo: int, times: np.ndarray) -> np.ndarray:
    r"""Accumulate each household's energy from minute ``lo`` up to each test minute.

    Each side of Eq. 6.4: of the metered load P it is ``accLoad`` of Table 6.1, of the
    expected complete response P̂ the lookup ``λ[houseID, time]`` of Listing 6.1. Table 6.1
    gives ``accLoad`` in kW; drsim reads it as the energy used from ``t_start`` up to (not
    including) the test minute (docs/decisions.md, "Units, time and the three meanings of
    λ"):

    .. math:: A_{k, t_{test}} = \sum_{t = lo}^{t_{test} - 1} P_{k,t} \cdot \frac{1}{60}

    Parameters
    ----------
    window_kw : numpy.ndarray
        (households, minutes) load from minute ``lo`` on [kW].
    lo : int
        First minute of ``window_kw``, ``t_start`` in the monitoring [minutes since
        midnight].
    times : numpy.ndarray
        Test minutes, each in (lo, lo + minutes] [minutes since midnight].

    Returns
    -------
    numpy.ndarray
        (households, tests) accumulated energy [kWh].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.4) and §6.2.2
       (Table 6.1, Listing 6.1).

    Examples
    --------
    >>> accumulated_kwh(np.full((1, 120), 6.0), 1110, np.array([1130, 1135]))
    array([[2. , 2.5]])
    """
    at = np.asarray(times) - lo  # minutes summed before each test
    cum = np.cumsum(window_kw, axis=1)[:, np.maximum(at - 1, 0)] / 60.0
    cum[:, at == 0] = 0.0
    return cum


def meter_stream(plan: MonitoringPlan, house_ids: np.ndarray, group_id: int,
                 acc_kwh: np.ndarray, expected_acc_kwh: np.ndarray,
                 lost: np.ndarray | None = None, first: int = 0
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Build the readings Listing 6.1 tests and the lookup ``λ[houseID, time]``.

    The readings are the ``smartMeterEvent`` of Table 6.1 at each test time, ordered by
    test time, then household (:func:`meter_tier`).

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (test times, ``max_missing``).
    house_ids : numpy.ndarray
        (households,) the chunk's household ids.
    group_id : int
        The households' group.
    acc_kwh : numpy.ndarray
        (households, tests) ``accLoad``: energy used since t_start up to each test time
        [kWh].
    expected_acc_kwh : numpy.ndarray
        (households, tests) Σ P̂ over the same minutes [kWh].
    lost : numpy.ndarray, optional
        (households, tests) the test readings that did not arrive. With
        ``plan.max_missing`` ≥ 1 each is a placeholder (column ``lost`` true, ``accLoad``
        NaN: unknown); otherwise it is left out of the stream.
    first : int, default 0
        The readings of the tests from this one on (by index; a stream's run fed the
        tests before it already, :class:`drsim.utility.session_feed.MeterCarry`); λ of
        every test.

    Returns
    -------
    stream : pandas.DataFrame
        Columns type, time [minutes since midnight], houseID, groupID, accLoad [kWh]
        (and ``lost`` with placeholders).
    lam : pandas.DataFrame
        ``λ[houseID, time]`` [kWh]: one row per household (its id), one column per test
        time.

    Raises
    ------
    ValueError
        When the accumulated loads or ``lost`` are not (households, tests).
    """
    times = plan.test_times
    n, k = len(house_ids), len(times)
    if acc_kwh.shape != (n, k) or expected_acc_kwh.shape != (n, k):
        raise ValueError(f"accumulated loads must be (households, tests) = {(n, k)}")
    house_ids = np.asarray(house_ids, dtype=np.int64)
    lam = pd.DataFrame(expected_acc_kwh, index=house_ids, columns=times)
    acc = acc_kwh[:, first:].T.ravel()
    kind = pd.Categorical.from_codes(np.zeros(len(acc), dtype=np.int8), ["smartMeterEvent"])
    columns = {"type": kind, "time": np.repeat(times[first:], n),
               "houseID": np.tile(house_ids, k - first), "groupID": group_id, "accLoad": acc}
    if lost is None:
        return pd.DataFrame(columns), lam
    if lost.shape != (n, k):
        raise ValueError(f"lost readings must be (households, tests) = {(n, k)}")
    gone = np.asarray(lost, dtype=bool)[:, first:].T.ravel()
    if plan.max_missing >= 1:
        stream = pd.DataFrame({**columns, "accLoad": np.where(gone, np.nan, acc),
                               "lost": gone})
    else:
        stream = pd.DataFrame(columns)[~gone].reset_index(drop=True)
    return stream, lam


#: the meter tier's user events: column -> (the meter query's output it is, its dtype)
USER_EVENT_COLUMNS = {"time": ("time", np.int64), "houseID": ("houseID", np.int64),
                      "groupID": ("groupID", np.int64), "accLoad": ("accLoad", np.float64),
                      "delay": ("data_delay", np.float64), "missing": ("missing", np.int64)}


def user_event_columns(outputs: pd.DataFrame) -> dict[str, np.ndarray]:
    """Return the meter query's outputs as the tier's user events, typed columns.

    :data:`USER_EVENT_COLUMNS`: the data delay [min] of remote λ and the lost test slots
    of a run are 0 where the query's outputs have none (local λ, no lost readings).

    >>> out = pd.DataFrame({"time": [1135], "houseID": [7], "groupID": [0],
    ...                     "accLoad": [2.5]})
    >>> {k: v.tolist() for k, v in user_event_columns(out).items()}["delay"]
    [0.0]
    """
    n = len(outputs)
    return {name: outputs[column].to_numpy(dtype) if column in outputs.columns
            else np.zeros(n, dtype) for name, (column, dtype) in USER_EVENT_COLUMNS.items()}


def meter_tier(plan: MonitoringPlan, house_ids: np.ndarray, group_id: int,
               acc_kwh: np.ndarray, expected_acc_kwh: np.ndarray,
               shedder: Any = None, fetch: Any = None,
               lost: np.ndarray | None = None, streams: int = 1,
               carry: Any = None, readings: ReferenceReadings | None = None
               ) -> MeterResult:
    r"""Run Listing 6.1 on every household of a chunk: the test of Eq. 6.4.

    At each test time t_test (§6.2.1, Step 2) a smart meter checks whether its household
    used more energy since t_start than its expected complete response over the same
    minutes, Eq. 6.4:

    .. math::

        \sum_{t = t_{start}}^{t_{test}} P_{k,t} > \sum_{t = t_{start}}^{t_{test}} \hat P_{k,t}

    and, from m_user + 1 consecutive such tests on (Step 3; ``LENGTH(a+[]) > m_user``),
    emits a ``userNonComplianceEvent`` at every test while the run lasts, stamped with
    its test time (the changes from the printed listing: module doc). The plan's method
    may widen the test by a band and reads its lookup tables here
    (:class:`drsim.utility.monitoring_method.MonitoringMethod`; ``tolerance``:
    :mod:`drsim.utility.tolerance_method`).

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (test times, m_user, the query text).
    house_ids : numpy.ndarray
        (households,) the chunk's household ids.
    group_id : int
        The chunk's group.
    acc_kwh : numpy.ndarray
        (households, tests) the energy used since t_start up to each test time,
        ``accLoad`` (:func:`accumulated_kwh`) [kWh].
    expected_acc_kwh : numpy.ndarray
        (households, tests) the expected complete response Σ P̂ over the same minutes:
        the lookup ``λ[houseID, time]``, remote data held by the utility [kWh].
    shedder : callable, optional
        Makes, from the query session, what the readings are fed through test time by
        test time (load shedding, :mod:`drsim.utility.shedding`).
    fetch : drsim.utility.fetching.MeterFetch, optional
        Serves λ as remote data; without it λ is a local table.
    lost : numpy.ndarray, optional
        (households, tests) the test readings lost on the way
        (:mod:`drsim.utility.readings`; placeholders with ``plan.max_missing`` ≥ 1,
        dropped otherwise: the module doc); the meters silent for m_user + 1 lost tests
        are counted.
    streams : int, default 1
        The households are that many independent streams, equal blocks of
        ``house_ids`` (the threshold's replicas,
        :func:`drsim.utility.threshold.replica_flags`), each monitored on its own
        (:meth:`MeterResult.combined`), so that the engine holds one block's events at a
        time.
    carry : drsim.utility.session_feed.MeterCarry, optional
        A stream's run of these households, continued: fed only the tests it has not
        fed (the result is the same).
    readings : drsim.utility.aggregate_reference.ReferenceReadings, optional
        The chunk's readings beside its called households' (the method's B̂, its control
        households' load), sent to a method whose group leader tests the group
        (``aggregate``'s reference may read them).

    Returns
    -------
    MeterResult
        The user events and the tier's work per test time.

    Raises
    ------
    ValueError
        When the accumulated loads or ``lost`` are not (households, tests).

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.4, Steps 1-3)
       and §6.2.2 (Listing 6.1, Table 6.1).
    .. [2] Z. Li, T. Ge, "History is a Mirror to the Future: Best-Effort Approximate
       Complex Event Matching with Insufficient Resources", PVLDB 10(4), 2016,
       Definition 1 (approximate matching over lost readings).

    Examples
    --------
    Two households tested at 18:50-19:05 with m_user = 1: house 7 is above its expected
    response at every test, house 8 below.

    >>> plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> plan.test_times.tolist()
    [1130, 1135, 1140, 1145]
    >>> expected = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]])
    >>> used = expected + np.array([[0.5], [-0.5]])
    >>> m = meter_tier(plan, np.array([7, 8]), 0, used, expected)
    >>> m.events[["time", "houseID", "accLoad"]]
       time  houseID  accLoad
    0  1135        7      2.5
    1  1140        7      3.5
    2  1145        7      4.5
    >>> m.first_flag.tolist(), m.outputs.tolist()
    ([1135, -1], [0, 1, 1, 1])
    """
    times = plan.test_times
    sums = plan.method.meter(house_ids, group_id, times, acc_kwh, expected_acc_kwh, readings)
    if sums is not None:  # the meters send their readings' sums, not user events
        return sums
    n, k = len(house_ids), len(times)
    if streams > 1:
        if fetch is not None or shedder is not None or n % streams:
            raise ValueError("streams > 1 splits the households into equal blocks fed by "
                             "plain query sessions (no shedder, no fetch)")
        blocks = [slice(r * n // streams, (r + 1) * n // streams) for r in range(streams)]
        return MeterResult.combined([meter_tier(
            plan, house_ids[b], group_id, acc_kwh[b], expected_acc_kwh[b],
            lost=None if lost is None else lost[b]) for b in blocks])
    house_ids = np.asarray(house_ids, dtype=np.int64)

    def readings(first: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
        return meter_stream(plan, house_ids, group_id, acc_kwh, expected_acc_kwh, lost,
                            first)

    approximate = {} if lost is None or plan.max_missing < 1 else \
        {"max_missing": plan.max_missing}

    def tables(lam: pd.DataFrame) -> dict[str, pd.DataFrame]:  # λ, and the method's
        return {"λ": lam, **plan.method.meter_tables(lam)}

    def start(tables: dict[str, pd.DataFrame], plan: MonitoringPlan) -> Any:
        # the session and what feeds it; the method's tables are published with the
        # profiles, held at the meter
        more = {k: v for k, v in tables.items() if k != "λ"}
        if fetch is None:
            session = plan.compile("meter", λ=tables["λ"], **more)\
                .start(POLICY, runs=RUNS, **approximate)
        else:
            source = fetch.source(tables["λ"])
            session = plan.compile("meter", remote={"λ": source}, **more)\
                .start(POLICY, runs=RUNS)
        feeder = session if shedder is None else shedder(session)
        return feeder if fetch is None else fetch.wrap(feeder, source)

    if carry is None:
        stream, lam = readings()
        found, processed, pms, outputs = feed_by_time(start(tables(lam), plan), stream,
                                                      times, as_frame=True)
        events = pd.DataFrame(user_event_columns(found))
    else:
        columns, processed, pms, outputs = carry.run(house_ids, readings, acc_kwh,
                                                     expected_acc_kwh, lost, tables, start,
                                                     user_event_columns)
        events = pd.DataFrame(columns)
        if fetch is not None:
            fetch.fetcher = carry.ended  # (the outermost layer) its counts, as run
    first = np.full(n, NOT_LATCHED, dtype=np.int64)
    if len(events):
        house, at = events["houseID"].to_numpy(np.int64), events["time"].to_numpy(np.int64)
        order = np.lexsort((at, house))
        house, at = house[order], at[order]
        earliest = np.r_[True, house[1:] != house[:-1]]
        first[pd.Index(house_ids).get_indexer(house[earliest])] = at[earliest]
    # (a fetcher of a longer program, a stream's, counts its later tests too: not here)
    fetches = processed.copy() if fetch is None else fetch.requests_per_test()[:k]
    gone = spells = silent = None
    if lost is not None:
        gone = np.asarray(lost, dtype=bool).sum(axis=0).astype(np.int64)
        if plan.max_missing >= 1:  # a placeholder needs no λ: fetched for real readings
            fetches = fetches - gone
        at, spells = silence(lost, plan.m_user + 1)
        silent = np.where(at >= 0, times[at.clip(0)] if k else at, NOT_LATCHED)
    return MeterResult(events, processed, pms, outputs, first, fetches,
                       None if fetch is None else fetch.counts(), gone, spells, silent)
