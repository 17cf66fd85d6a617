"""Hybrid load shedding in the DR monitoring: the optimised configuration "OP" of the
dissertation's §6.3.4 (bounds at 50 % of the unshed latency), with cep_core's shedding on
the keyed engine (:mod:`cep_core.shedding.keyed`).

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
* *Group leaders and the utility* do not shed. Their inputs are a few user events per
  household and test, and the bound is met where the load is; shedding a user event
  would delay a group's alert by a whole test interval. Their work is counted as without
  shedding, and an event a group leader dropped would have been sent (communication) but
  not evaluated (computation).

**The cost model** of the meter query is fitted by the utility, per group, on a
previous program day: the traditional pass of the group's first gateway simulated with
the scenario's seed + 1 (another day's draws; the evaluated day's decisions are never
used), with ``classes`` classes per automaton state and ``slices`` time slices
(:func:`cep_core.shedding.fit_cost_model`). A run's time slice is its age, so the slices
tell long runs (about to produce user events) from new ones.

**The unshed run (BL)** is computed beside OP on the same households in the same task:
first to size each gateway's device, then as the reference the bound is a share of.
"""

from __future__ import annotations

from dataclasses import dataclass
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

__all__ = ["gateways", "history_day", "fit_meter_model", "GatewayStats", "shed_meter_tier",
           "LATENCY_BINS", "BL_SUFFIX", "bl_name"]

MICRO = 1_000_000  # times are summed in whole µmin
BL_SUFFIX = "_bl"  # the pass name of a monitored pass's unshed (BL) monitoring
#: log-spaced latency bins [min] of the mergeable latency histogram, 40 per decade
LATENCY_BINS = np.logspace(-4, 3, 7 * 40 + 1)


def bl_name(name: str) -> str:
    """The name of the BL monitoring of pass ``name``."""
    return name + BL_SUFFIX


def gateways(house_ids: np.ndarray, group_first: int, size: int) -> np.ndarray:
    """The gateway of each household within its group (module doc).

    >>> gateways(np.array([100, 101, 349, 350]), group_first=100, size=250).tolist()
    [0, 0, 0, 1]
    """
    return (np.asarray(house_ids, dtype=np.int64) - group_first) // size


def history_day(scenario: Scenario, group: int) -> tuple[Scenario, int, int]:
    """The previous program day the cost model of ``group`` is fitted on (module doc): the
    scenario with the next seed, and the group's first gateway's households (first id,
    number)."""
    lo, hi = scenario.group_ranges()[group]
    day = scenario.model_copy(update={"seed": (scenario.seed + 1) % (2**63 - 1)})
    return day, lo, min(scenario.monitoring.shedding.gateway_households, hi - lo)


def fit_meter_model(scenario: Scenario, plan: MonitoringPlan, group: int, history: Any
                    ) -> Any:
    """The utility's cost model of Listing 6.1 for ``group`` (module doc), fitted on
    ``history``: the households of :func:`history_day` simulated by the run (their
    ``population``, traditional ``window_kw`` and expected ``estimate_window_kw``)."""
    from cep_core.shedding import fit_cost_model
    from drsim.utility.monitoring import accumulated_kwh

    cfg = scenario.monitoring.shedding
    times = plan.test_times
    acc = accumulated_kwh(history.window_kw["traditional"], plan.t_start, times)
    expected = accumulated_kwh(history.estimate_window_kw["expected"], plan.t_start, times)
    stream, lam = meter_stream(plan, history.population.ids, group, acc, expected)
    query = plan.compile("meter", λ=lam)
    return fit_cost_model(query, stream, policy=POLICY, runs=RUNS, slices=cfg.slices,
                          classes=cfg.classes, max_classes=cfg.classes)


@dataclass
class GatewayStats:
    """What the gateways of a chunk did on one monitored pass, in integers that add up
    exactly over chunks (so the figures do not depend on the chunking): readings,
    readings shed, runs shed, work [cost units], busy time and the monitoring window
    [µmin, summed over gateways, each rounded per gateway], latency sum [µmin] and
    count, and a histogram of latencies over :data:`LATENCY_BINS`."""

    readings: int
    readings_shed: int
    runs_shed: int
    work: int
    busy: int
    span: int
    latency_sum: int
    latency_count: int
    histogram: np.ndarray

    LAYOUT = 8  # the leading fields of :meth:`as_list`

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GatewayStats) and self.as_list() == other.as_list()

    def as_list(self) -> list[float]:
        return [self.readings, self.readings_shed, self.runs_shed, self.work, self.busy,
                self.span, self.latency_sum, self.latency_count, *self.histogram.tolist()]

    @classmethod
    def merged(cls, rows: Any) -> GatewayStats:
        """The sum of chunks' :meth:`as_list` rows."""
        total = np.sum([np.asarray(r, dtype=np.float64).astype(np.int64) for r in rows],
                       axis=0)
        return cls(*(int(x) for x in total[:cls.LAYOUT]), total[cls.LAYOUT:])

    def summary(self) -> dict[str, Any]:
        """The figures a run reports (summary.json's ``shedding``)."""
        n = self.latency_count
        cum = np.cumsum(self.histogram)
        p95 = float(LATENCY_BINS[1:][np.searchsorted(cum, 0.95 * cum[-1])]) if n else None
        return {"readings": self.readings, "readings_shed": self.readings_shed,
                "runs_shed": self.runs_shed, "work": self.work,
                "utilisation": self.busy / self.span if self.span else None,
                "latency_avg_minutes": self.latency_sum / MICRO / n if n else None,
                "latency_p95_minutes": p95}

    @classmethod
    def of_report(cls, report: dict[str, Any], span: float) -> GatewayStats:
        lat = report["latencies"]
        hist = np.histogram(np.clip(lat, LATENCY_BINS[0], LATENCY_BINS[-1]),
                            LATENCY_BINS)[0]
        def micro(x: np.ndarray) -> int:
            return int(np.round(np.asarray(x) * MICRO).astype(np.int64).sum())

        return cls(int(report["events"].sum()), int(report["events_shed"].sum()),
                   int(report["runs_shed"].sum()), int(report["work"].sum()),
                   micro(report["busy"]), micro(np.full(len(report["events"]), span)),
                   micro(report["latency_sum"]), int(lat.size), hist)


def _statistic(latencies: np.ndarray, device: np.ndarray, n: int, kind: str) -> np.ndarray:
    """Per device, the average or 95th percentile of its latencies."""
    out = np.zeros(n)
    for d in range(n):
        mine = latencies[device == d]
        if mine.size:
            out[d] = mine.mean() if kind == "avg" else np.percentile(mine, 95,
                                                                     method="lower")
    return out


def shed_meter_tier(plan: MonitoringPlan, cfg: Shedding, model: Any, house_ids: np.ndarray,
                    group_id: int, group_first: int, acc_kwh: np.ndarray,
                    expected_acc_kwh: np.ndarray, fetch: Any = None
                    ) -> tuple[MeterResult, GatewayStats, MeterResult, GatewayStats]:
    """Listing 6.1 on a chunk's gateways: the unshed run (BL) and the run under the
    bound (OP), each with what its gateways did (module doc); ``fetch()`` makes each
    run's :class:`drsim.utility.fetching.MeterFetch` when λ is remote data."""
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

    def run(strategy: str, unit_cost: np.ndarray, bound=None, fetching: bool = True):
        result = meter_tier(plan, index, group_id, acc_kwh, expected_acc_kwh,
                            shedder(strategy, unit_cost, bound),
                            fetch() if fetching and fetch is not None else None)
        return result, made[-1].report()

    _, sized = run("NS", np.ones(n), fetching=False)  # only the work counts here
    unit_cost = cfg.utilisation * span / np.maximum(sized["work"], 1)
    bl, bl_report = run("NS", unit_cost)
    device = np.tile(device_of(index), len(plan.test_times))  # BL serves every reading
    bound = cfg.bound * _statistic(bl_report["latencies"], device, n, cfg.statistic)
    op, op_report = run(cfg.strategy, unit_cost, bound)
    return (bl, GatewayStats.of_report(bl_report, span), op,
            GatewayStats.of_report(op_report, span))

