"""Hybrid load shedding in the DR monitoring: the optimised configuration "OP".

OP is the configuration of the dissertation's §6.3.4 (bounds at 50 % of the unshed
latency), here with cep_core's shedding on the keyed engine (:mod:`cep_core.shedding.keyed`).

**Where each filter sits and what it saves.**

* *Meter tier.* Listing 6.1 is evaluated at gateways, each serving ``gateway_households``
  meters of one group (counted from the group's first household; chunks are cut at
  gateway boundaries, so results do not depend on the chunking). A gateway is a modelled
  device: the readings of a test time arrive together and are served in household order,
  one cost unit per reading and one more when it starts or extends a run of failed tests
  (the events and partial matches drsim counts as computation). Its per-unit cost makes
  the unshed run keep it busy ``utilisation`` of the monitoring window; its bound is
  ``bound`` × its unshed latency (average or 95th percentile of its readings).
  The *input filter* tells a meter not to report a reading: it is neither sent (the
  reading and its λ fetch leave communication) nor evaluated (computation). The *state
  filter* drops runs of failed tests at the gateway: they are not extended again.
* *Group leaders and the utility* shed their inputs (user events, group events) on
  devices of their own (:mod:`drsim.utility.tier_shedding`). ``tiers`` lists the tiers
  that shed; a tier not listed runs unshed (the meter tier then runs plain on the same
  gateways, measured as BL's).

**The cost model** of the meter query is fitted by the utility, per group, on a
previous program day: the traditional pass of the group's first gateway simulated with
the scenario's seed + 1 (another day's draws; the evaluated day's decisions are never
used), with ``classes`` classes per automaton state and ``slices`` time slices
(:func:`cep_core.shedding.fit_cost_model`). A run's time slice is its age, so the slices
tell long runs (about to produce user events) from new ones.

**The unshed run (BL)** is computed beside OP on the same households in the same task:
first to size each gateway's device, then as the reference the bound is a share of. It
is the plain monitoring (:func:`drsim.utility.features.plain_twin`): no shedding and
the profiles read as the plain run reads them (no EIRES, no updates).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from drsim.scenario import Scenario, Shedding
from drsim.utility.monitoring import (
    POLICY,
    RUNS,
    MeterResult,
    MonitoringPlan,
    meter_stream,
    meter_tier,
)

__all__ = ["gateways", "history_day", "fit_meter_model", "flagged_shares", "DeviceStats",
           "DeviceSizing", "statistic", "shed_meter_tier", "LATENCY_BINS"]

MICRO = 1_000_000  # times are summed in whole µmin
#: log-spaced latency bins [min] of the mergeable latency histogram, 40 per decade
LATENCY_BINS = np.logspace(-4, 3, 7 * 40 + 1)


def gateways(house_ids: np.ndarray, group_first: int, size: int) -> np.ndarray:
    """Return the gateway of each household within its group (module doc).

    Parameters
    ----------
    house_ids : numpy.ndarray
        (households,) household ids of one group.
    group_first : int
        The id of the group's first household.
    size : int
        Meters per gateway (``gateway_households``) [households].

    Returns
    -------
    numpy.ndarray
        (households,) the gateway's index within the group.

    Examples
    --------
    >>> gateways(np.array([100, 101, 349, 350]), group_first=100, size=250).tolist()
    [0, 0, 0, 1]
    """
    return (np.asarray(house_ids, dtype=np.int64) - group_first) // size


def history_day(scenario: Scenario, group: int) -> tuple[Scenario, int, int]:
    """Return the previous program day the cost model of ``group`` is fitted on.

    The scenario with the next seed (another day's draws; module doc), and the households
    of the group's first gateway.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The evaluated scenario.
    group : int
        The group's index.

    Returns
    -------
    day : drsim.scenario.Scenario
        The scenario with seed + 1.
    first : int
        The id of the gateway's first household.
    n : int
        The gateway's households [households].
    """
    lo, hi = scenario.group_ranges()[group]
    day = scenario.model_copy(update={"seed": (scenario.seed + 1) % (2**63 - 1)})
    return day, lo, min(scenario.monitoring.shedding.gateway_households, hi - lo)


def fit_meter_model(scenario: Scenario, plan: MonitoringPlan, group: int, history: Any
                    ) -> Any:
    """Fit the utility's cost model of Listing 6.1 for ``group`` on a previous day.

    Offline estimation on historic data (§4.3.2): the meter query runs over the
    traditional pass of the households of :func:`history_day`, against their expected
    complete response, and its runs of failed tests are clustered into
    ``monitoring.shedding.classes`` classes per automaton state and
    ``monitoring.shedding.slices`` time slices (§4.3.1; a run's time slice is its age),
    each with its contribution and consumption (Definitions 4.4-4.5, Eq. 4.3-4.4).

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        Its ``monitoring.shedding`` (classes, slices) is read.
    plan : MonitoringPlan
        The monitoring (test times, the meter query).
    group : int
        The group's id.
    history : Any
        The households of :func:`history_day` simulated by the run: their ``population``
        (ids), ``window_kw["traditional"]`` and ``estimate_window_kw["expected"]``,
        (households, minutes from t_start) [kW].

    Returns
    -------
    cep_core.shedding.CostModel
        Contribution and consumption per (state, class, time slice).

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §4.2.3 (Eq. 4.3-4.4), §4.3.1,
       §4.3.2 and §6.3.4.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> plan = MonitoringPlan(1110, 1230, 1120, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> rng = np.random.default_rng(0)
    >>> day = NS(population=NS(ids=np.arange(8)),
    ...          window_kw={"traditional": rng.uniform(0, 2, (8, 120))},
    ...          estimate_window_kw={"expected": np.ones((8, 120))})
    >>> cfg = Shedding(gateway_households=4, classes=2, slices=2)
    >>> model = fit_meter_model(NS(monitoring=NS(shedding=cfg)), plan, 0, day)
    >>> type(model).__name__, model.slices
    ('CostModel', 2)
    """
    from cep_core.shedding import fit_cost_model
    from drsim.utility.monitoring import accumulated_kwh

    cfg = scenario.monitoring.shedding
    times = plan.test_times
    acc = accumulated_kwh(history.window_kw["traditional"], plan.t_start, times)
    expected = accumulated_kwh(history.estimate_window_kw["expected"], plan.t_start, times)
    stream, lam = meter_stream(plan, history.population.ids, group, acc, expected)
    query = plan.compile("meter", λ=lam, **plan.method.meter_tables(lam))
    return fit_cost_model(query, stream, policy=POLICY, runs=RUNS, slices=cfg.slices,
                          classes=cfg.classes, max_classes=cfg.classes)


def flagged_shares(plan: MonitoringPlan, group: int, history: Any) -> np.ndarray:
    """Return the share of the previous day's sample flagged at each test time.

    The meter tier (Listing 6.1) over the traditional pass of the households of
    :func:`history_day`, as :func:`fit_meter_model` reads them: what the group leaders'
    and the utility's cost models are estimated from
    (:func:`drsim.utility.tier_shedding.group_contribution`, §4.3.2).

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (test times, the meter query).
    group : int
        The group's id.
    history : Any
        The simulated households, as :func:`fit_meter_model` takes them.

    Returns
    -------
    numpy.ndarray
        (tests,) user events over households [1].

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> plan = MonitoringPlan(1110, 1230, 1120, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> day = NS(population=NS(ids=np.arange(2)),
    ...          window_kw={"traditional": np.r_[np.full((1, 120), 3.0), np.zeros((1, 120))]},
    ...          estimate_window_kw={"expected": np.ones((2, 120))})
    >>> flagged_shares(plan, 0, day)[:3].tolist()
    [0.0, 0.5, 0.5]
    """
    from drsim.utility.monitoring import accumulated_kwh

    times = plan.test_times
    ids = history.population.ids
    acc = accumulated_kwh(history.window_kw["traditional"], plan.t_start, times)
    expected = accumulated_kwh(history.estimate_window_kw["expected"], plan.t_start, times)
    events = meter_tier(plan, ids, group, acc, expected).events
    counts = np.bincount(np.searchsorted(times, events["time"].to_numpy(np.int64)),
                         minlength=len(times))
    return counts / max(len(ids), 1)


@dataclass
class DeviceStats:
    """What the modelled devices of one tier did on one monitored pass.

    The gateways of a chunk (Listing 6.1), a group leader (Listing 6.2) or the utility
    (Listing 6.3; :mod:`drsim.utility.tier_shedding`). Every figure is an integer that
    adds up exactly over chunks and devices, so the figures do not depend on the chunking.

    Attributes
    ----------
    inputs, inputs_shed : int
        The inputs the devices received (readings, user events, group events), and those
        shed [inputs].
    runs_shed : int
        The runs shed by the state filter [runs].
    work : int
        The work done [cost units].
    busy, span : int
        The busy time and the monitoring window, summed over devices, each rounded per
        device [µmin].
    latency_sum, latency_count : int
        The sum of the processed inputs' latencies [µmin] and their number [inputs].
    unshed_latency_sum, unshed_latency_count : int
        The same of the unshed run on the same devices and inputs, whose statistic the
        bound is a share of [µmin], [inputs].
    bound_sum : int
        Σ over devices of the bound θ × the device's ``latency_count`` (0: unbounded)
        [µmin]; over ``latency_count`` it is the bound the average latency meets when
        every device meets its own.
    histogram : numpy.ndarray
        The inputs per latency bin of :data:`LATENCY_BINS`.
    """

    inputs: int
    inputs_shed: int
    runs_shed: int
    work: int
    busy: int
    span: int
    latency_sum: int
    latency_count: int
    unshed_latency_sum: int
    unshed_latency_count: int
    bound_sum: int
    histogram: np.ndarray

    LAYOUT = 11  # the leading fields of :meth:`as_list`

    def __eq__(self, other: object) -> bool:
        """Compare the figures of two statistics (the histogram by value)."""
        return isinstance(other, DeviceStats) and self.as_list() == other.as_list()

    def as_list(self) -> list[float]:
        """Return the figures as one row: the :attr:`LAYOUT` integers, then the histogram."""
        return [self.inputs, self.inputs_shed, self.runs_shed, self.work, self.busy,
                self.span, self.latency_sum, self.latency_count, self.unshed_latency_sum,
                self.unshed_latency_count, self.bound_sum, *self.histogram.tolist()]

    @classmethod
    def merged(cls, rows: Any) -> DeviceStats:
        """Sum chunks' (or devices') :meth:`as_list` rows into one statistic.

        Parameters
        ----------
        rows : iterable of list of float
            The rows.

        Returns
        -------
        DeviceStats
            The figures over all the rows.
        """
        total = np.sum([np.asarray(r, dtype=np.float64).astype(np.int64) for r in rows],
                       axis=0)
        return cls(*(int(x) for x in total[:cls.LAYOUT]), total[cls.LAYOUT:])

    def summary(self, unit: str = "readings") -> dict[str, Any]:
        """Return the figures a run reports (summary.json's ``shedding``).

        Parameters
        ----------
        unit : str
            What the inputs are called: ``readings`` (meter tier), ``user_events``
            (group tier), ``group_events`` (utility tier).

        Returns
        -------
        dict of str to Any
            ``<unit>``, ``<unit>_shed``, ``runs_shed``, ``work`` [cost units],
            ``utilisation`` (busy time over the monitoring window) [1],
            ``latency_avg_minutes`` and ``latency_p95_minutes`` (the upper edge of the
            histogram bin that holds the 95th percentile), ``unshed_latency_avg_minutes``
            (the unshed run's on the same devices) and ``bound_minutes`` (the bound the
            average meets when each device meets its own; None when unbounded)
            [minutes]; None where there is nothing to divide by.
        """
        n, m = self.latency_count, self.unshed_latency_count
        cum = np.cumsum(self.histogram)
        p95 = float(LATENCY_BINS[1:][np.searchsorted(cum, 0.95 * cum[-1])]) if n else None
        return {unit: self.inputs, f"{unit}_shed": self.inputs_shed,
                "runs_shed": self.runs_shed, "work": self.work,
                "utilisation": self.busy / self.span if self.span else None,
                "latency_avg_minutes": self.latency_sum / MICRO / n if n else None,
                "latency_p95_minutes": p95,
                "unshed_latency_avg_minutes": self.unshed_latency_sum / MICRO / m
                if m else None,
                "bound_minutes": self.bound_sum / MICRO / n if n and self.bound_sum
                else None}

    @classmethod
    def of_report(cls, report: dict[str, Any], span: float, unshed: dict[str, Any],
                  bound: np.ndarray | None = None) -> DeviceStats:
        """Build the statistics from a shedder's report.

        Parameters
        ----------
        report, unshed : dict of str to Any
            :meth:`cep_core.shedding.KeyedShedder.report` of the run and of the unshed
            run on the same devices: per device ``events``, ``events_shed``,
            ``runs_shed``, ``work``, ``busy`` [minutes] and ``latency_sum`` [minutes],
            and per reading processed ``latencies`` [minutes].
        span : float
            The monitoring window of each device [minutes].
        bound : numpy.ndarray, optional
            Per device, its bound θ (None: unbounded) [minutes].

        Returns
        -------
        DeviceStats
            The figures in integers (times in µmin).
        """
        lat = report["latencies"]
        processed = report["events"] - report["events_shed"]
        bound_sum = 0 if bound is None else \
            int((np.round(np.asarray(bound) * MICRO).astype(np.int64) * processed).sum())
        return cls(int(report["events"].sum()), int(report["events_shed"].sum()),
                   int(report["runs_shed"].sum()), int(report["work"].sum()),
                   _micro(report["busy"]), _micro(np.full(len(report["events"]), span)),
                   _micro(report["latency_sum"]), int(lat.size),
                   _micro(unshed["latency_sum"]), int(unshed["latencies"].size), bound_sum,
                   _histogram(lat))

    @classmethod
    def of_device(cls, inputs: int, inputs_shed: int, latencies: np.ndarray, busy: float,
                  work: int, span: float, unshed_latencies: np.ndarray,
                  bound: float | None = None) -> DeviceStats:
        """Build the statistics of one device from its inputs' latencies.

        Parameters
        ----------
        inputs, inputs_shed : int
            Inputs received and shed [inputs].
        latencies, unshed_latencies : numpy.ndarray
            Per input processed, its latency, on this run and on the unshed run
            [minutes].
        busy : float
            The busy time [minutes].
        work : int
            The work done [cost units].
        span : float
            The monitoring window [minutes].
        bound : float, optional
            θ (None: unbounded) [minutes].

        Returns
        -------
        DeviceStats
            The figures in integers (times in µmin).

        Examples
        --------
        >>> s = DeviceStats.of_device(3, 1, np.array([0.5, 1.0]), 1.5, 3, 10.0,
        ...                           np.array([0.5, 1.0, 1.5]), bound=0.75)
        >>> s.summary("user_events")["bound_minutes"], s.summary()["latency_avg_minutes"]
        (0.75, 0.75)
        """
        lat = np.asarray(latencies, dtype=np.float64)
        bound_sum = 0 if bound is None else int(round(bound * MICRO)) * int(lat.size)
        return cls(int(inputs), int(inputs_shed), 0, int(work), _micro(busy), _micro(span),
                   _micro(lat), int(lat.size), _micro(unshed_latencies),
                   int(np.asarray(unshed_latencies).size), bound_sum, _histogram(lat))


@dataclass(frozen=True)
class DeviceSizing:
    """How fast a tier's modelled devices are and the bound they keep.

    Both are sized on the unshed run of the whole monitoring window (module doc; Eq. of
    :func:`shed_meter_tier` and :func:`drsim.utility.tier_shedding.run_on_device`): a
    device's speed is its hardware's, known before the day, so a stream that gets the
    sizing (docs/streaming.md, "Load shedding") decides each arrival from the arrivals
    before it alone.

    Attributes
    ----------
    unit_cost : tuple of float
        Per device, its cost per unit of work [minutes per cost unit].
    bound : tuple of float or None
        Per device, its bound θ [minutes]; None: it sheds nothing, only measures.
    """

    unit_cost: tuple[float, ...]
    bound: tuple[float, ...] | None = None

    @classmethod
    def of(cls, unit_cost: Any, bound: Any = None) -> DeviceSizing:
        """Return the sizing of arrays (or numbers) ``unit_cost`` and ``bound``."""
        return cls(tuple(np.atleast_1d(np.asarray(unit_cost, dtype=np.float64)).tolist()),
                   None if bound is None else
                   tuple(np.atleast_1d(np.asarray(bound, dtype=np.float64)).tolist()))


def _micro(x: Any) -> int:
    """Minutes summed per element, each rounded to whole µmin."""
    return int(np.round(np.asarray(x, dtype=np.float64) * MICRO).astype(np.int64).sum())


def _histogram(latencies: np.ndarray) -> np.ndarray:
    """Count the latencies per bin of :data:`LATENCY_BINS` (clipped into its range)."""
    return np.histogram(np.clip(latencies, LATENCY_BINS[0], LATENCY_BINS[-1]),
                        LATENCY_BINS)[0]


def statistic(latencies: np.ndarray, kind: str) -> float:
    """Return the average or 95th percentile (method "lower") of latencies (0 if none).

    Parameters
    ----------
    latencies : numpy.ndarray
        Latencies [minutes].
    kind : str
        "avg" or "p95" (``monitoring.shedding.statistic``).

    Returns
    -------
    float
        The statistic [minutes].

    Examples
    --------
    >>> statistic(np.array([1.0, 2.0, 6.0]), "avg"), statistic(np.array([]), "p95")
    (3.0, 0.0)
    """
    lat = np.asarray(latencies, dtype=np.float64)
    if not lat.size:
        return 0.0
    return float(lat.mean() if kind == "avg" else np.percentile(lat, 95, method="lower"))


def _statistic(latencies: np.ndarray, device: np.ndarray, n: int, kind: str) -> np.ndarray:
    """Per device, the average or 95th percentile of its latencies."""
    return np.array([statistic(latencies[device == d], kind) for d in range(n)])


def shed_meter_tier(plan: MonitoringPlan, cfg: Shedding, model: Any, house_ids: np.ndarray,
                    group_id: int, group_first: int, acc_kwh: np.ndarray,
                    expected_acc_kwh: np.ndarray,
                    inputs: Callable[..., Mapping[str, Any]] | None = None,
                    shed: bool = True, sizing: DeviceSizing | None = None,
                    reference: tuple[int, int] | None = None
                    ) -> tuple[MeterResult | None, DeviceStats | None, MeterResult,
                               DeviceStats, tuple[np.ndarray, np.ndarray], DeviceSizing]:
    r"""Run Listing 6.1 on a chunk's gateways, unshed (BL) and under a latency bound (OP).

    Each gateway g is a modelled device (module doc). BL, the unshed run, measures its
    work W_g [cost units]; the device's cost per unit c_g makes that work keep it busy a
    share u (``utilisation``) of the monitoring window [t_first_test, t_end), and BL's
    latencies are those of its steps served again on these devices (nothing shed, so
    nothing served depends on them); OP runs under the bound θ_g, a share b (``bound``) of BL's
    latency ℓ_g (its average or 95th percentile, ``statistic``), shedding readings and
    runs of failed tests with ``strategy`` when the gateway is overloaded, ℓ > θ_g
    (Definition 4.1):

    .. math::

        c_g = \frac{u \, (t_{end} - t_{first\_test})}{W_g}, \qquad
        \theta_g = b \cdot \ell_g^{BL}

    This device model and bound are drsim's reading of §6.3.4 (docs/decisions.md, "Load
    shedding in the monitoring (OP)").

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (test times, the meter query).
    cfg : drsim.scenario.Shedding
        The scenario's ``monitoring.shedding``.
    model : cep_core.shedding.CostModel
        The group's cost model (:func:`fit_meter_model`).
    house_ids : numpy.ndarray
        (households,) the chunk's household ids, of one group.
    group_id : int
        The group's id.
    group_first : int
        The id of the group's first household (gateways count from it).
    acc_kwh, expected_acc_kwh : numpy.ndarray
        (households, tests) ``accLoad`` and ``λ[houseID, time]`` as in
        :func:`drsim.utility.monitoring.meter_tier` [kWh].
    inputs : callable, optional
        ``inputs(plain=...)`` makes the other keyword arguments of each run
        (:func:`drsim.utility.monitoring.meter_tier`: the monitoring features', e.g. the
        :class:`drsim.utility.fetching.MeterFetch` when λ is remote data): OP's, and
        BL's with ``plain=True`` (:func:`drsim.pipeline.tasks.meter_inputs`: BL is the
        plain monitoring: no EIRES fetcher).
    shed : bool
        Whether OP sheds (``"meter"`` in ``monitoring.shedding.tiers``); if not, OP is
        the meter tier with OP's inputs, unshed, served on the same devices as BL.
    sizing : DeviceSizing, optional
        The gateways' cost per unit and bounds, sized before on BL's run of the whole
        window (a stream's, which runs the tier over the tests so far); None: sized here.
    reference : tuple of int, optional
        With ``sizing``: BL's latency sum [µmin] and count [readings] on these gateways
        over the whole window, measured before (a stream's, from the day run): BL is not
        run, and OP's figures take them as the unshed reference.

    Returns
    -------
    bl, bl_stats : MeterResult, DeviceStats
        The unshed run and what its gateways did (None with ``reference``).
    op : MeterResult
        The run under the bound.
    op_stats : DeviceStats
        What OP's gateways did.
    shed : tuple of numpy.ndarray
        The household and test time [minutes since midnight] of each reading OP's input
        filter dropped (:func:`drsim.utility.quiet_meters.quiet_readings`).
    sizing : DeviceSizing
        The gateways' cost per unit and, when OP sheds, bounds.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §4.2 (Definition 4.1; hybrid
       load shedding, Eq. 4.1-4.2) and §6.3.4 (Figure 6.14).

    Examples
    --------
    Two gateways of four households; OP sheds readings and works less than BL.

    >>> from types import SimpleNamespace as NS
    >>> from drsim.utility.monitoring import accumulated_kwh
    >>> plan = MonitoringPlan(1110, 1230, 1120, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> rng = np.random.default_rng(0)
    >>> day = NS(population=NS(ids=np.arange(8)),
    ...          window_kw={"traditional": rng.uniform(0, 2, (8, 120))},
    ...          estimate_window_kw={"expected": np.ones((8, 120))})
    >>> cfg = Shedding(gateway_households=4, classes=2, slices=2)
    >>> model = fit_meter_model(NS(monitoring=NS(shedding=cfg)), plan, 0, day)
    >>> used = accumulated_kwh(rng.uniform(0, 2, (8, 120)), 1110, plan.test_times)
    >>> expected = accumulated_kwh(np.ones((8, 120)), 1110, plan.test_times)
    >>> bl, bl_stats, op, op_stats, shed, sizing = shed_meter_tier(
    ...     plan, cfg, model, np.arange(8), 0, 0, used, expected)
    >>> bl_stats.inputs, bl_stats.inputs_shed, op_stats.inputs_shed > 0
    (176, 0, True)
    >>> op_stats.work < bl_stats.work, len(shed[0]) == op_stats.inputs_shed
    (True, True)

    Sized before, the gateways decide as they did (a stream's re-run over fewer tests):

    >>> again = shed_meter_tier(plan, cfg, model, np.arange(8), 0, 0, used, expected,
    ...                         sizing=sizing)
    >>> again[3] == op_stats, again[1] == bl_stats
    (True, True)
    """
    from cep_core.shedding import KeyedShedder

    gw = gateways(house_ids, group_first, cfg.gateway_households)
    first = int(gw.min())
    n = int(gw.max()) - first + 1
    span = float(plan.t_end - plan.t_first_test)
    index = np.asarray(house_ids, dtype=np.int64)

    def device_of(keys: np.ndarray) -> np.ndarray:
        return (np.asarray(keys, dtype=np.int64) - group_first) // cfg.gateway_households \
            - first

    made: list[Any] = []

    def shedder(strategy: str, unit_cost: np.ndarray, bound: np.ndarray | None = None):
        def make(session: Any) -> Any:
            s = KeyedShedder(session, strategy, device_of, unit_cost, bound,
                             model if strategy != "NS" else None, statistic=cfg.statistic,
                             seed=plan.t_start)
            made.append(s)
            return s
        return make

    def run(strategy: str, unit_cost: np.ndarray, bound=None, plain: bool | None = None):
        plain = strategy == "NS" if plain is None else plain
        given = {} if inputs is None else inputs(plain=plain)
        result = meter_tier(plan, index, group_id, acc_kwh, expected_acc_kwh,
                            shedder(strategy, unit_cost, bound), **given)
        carry = given.get("carry")  # a stream's run, continued: the shedder it ended
        return result, (made[-1] if carry is None else carry.layer(KeyedShedder)).report()

    if reference is not None and sizing is None:
        raise ValueError("an unshed reference needs the devices' sizing")
    if sizing is None:
        bl, sized = run("NS", np.ones(n))  # BL's work sizes the devices
        unit_cost = cfg.utilisation * span / np.maximum(sized["work"], 1)
        bl_report = made[-1].report_at(unit_cost)
    else:  # sized before: serving BL on them is what report_at does
        unit_cost = np.asarray(sizing.unit_cost, dtype=np.float64)
        bl, bl_report = (None, None) if reference is not None else run("NS", unit_cost)
    bl_stats = None if bl is None else DeviceStats.of_report(bl_report, span, bl_report)

    def stats(report: dict[str, Any], bound: np.ndarray | None = None) -> DeviceStats:
        figures = DeviceStats.of_report(report, span, bl_report or report, bound)
        return figures if reference is None else replace(
            figures, unshed_latency_sum=reference[0], unshed_latency_count=reference[1])

    if not shed:
        op, op_report = run("NS", unit_cost, plain=False)
        return (bl, bl_stats, op, stats(op_report),
                (np.zeros(0, dtype=np.int64), np.zeros(0)), DeviceSizing.of(unit_cost))
    if sizing is None:
        device = np.tile(device_of(index), len(plan.test_times))  # BL serves every reading
        bound = cfg.bound * _statistic(bl_report["latencies"], device, n, cfg.statistic)
    else:
        bound = np.asarray(sizing.bound, dtype=np.float64)
    op, op_report = run(cfg.strategy, unit_cost, bound)
    return (bl, bl_stats, op, stats(op_report, bound),
            (op_report["shed_keys"], op_report["shed_times"]),
            DeviceSizing.of(unit_cost, bound))

