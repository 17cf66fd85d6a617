"""The stage sequence of ``simulate`` and ``run``, written once against a backend.

``simulate`` (docs/architecture.md, "Data flow of one run"):

1. **passes**: every chunk's baseline, expected and traditional passes and the utility's
   M&V estimates (:func:`drsim.pipeline.tasks.simulation_task`), summed exactly
   (:func:`drsim.pipeline.loads.sum_loads`).

``run`` adds the monitoring and the closed loop (Ch. 6):

1. **passes + meter tier**: the same task with every household's meter query
   (Listing 6.1) and the replicas' flags that set γ[groupID, time]
   (:class:`drsim.utility.threshold.Thresholds`);
2. **tiers**: user events grouped by (pass, group) to the group leaders (Listing 6.2),
   their output grouped by pass to the utility (Listing 6.3): the prediction ``t_nc`` of
   each monitored pass (a prediction on the expected pass is a false alarm);
3. **incentive**: the second event planned from what the utility knows at ``t_nc``
   (:mod:`drsim.utility.deficit`, Eq. 6.5-6.8 in :mod:`drsim.utility.incentive`), announced at
   ``t_nc`` (+ ``delay_detection``), starting ``second_event_delay`` minutes later, ending at
   ``t_end``;
4. **adaptive pass**: DR1 at θ_red and DR2 at θ_new, with the lottery of Eq. 6.5
   (:func:`drsim.pipeline.tasks.adaptive_task`); it replays the traditional pass up to the
   announcement (common random numbers: nothing before it depends on DR2), so its load
   is rendered from the announcement on and taken from the traditional pass before it.

Each value is computed once, where it is known: chunks send exact sums, the driver merges
them and plans; executors receive the plan (:class:`drsim.pipeline.passes.SecondEvent`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from cep_core import QueryError
from drsim.pipeline.backend import Backend, BackendInfo
from drsim.pipeline.evaluation import TierOutcome, costs, tier_outcome
from drsim.pipeline.kept import kept_table
from drsim.pipeline.loads import Loads, sum_loads
from drsim.pipeline.pass_names import MONITORED, PASSES
from drsim.pipeline.passes import Chunk, SecondEvent, plan_chunks
from drsim.pipeline.recorded import CHUNK_READINGS
from drsim.pipeline.tasks import (
    CHUNKS,
    EVENTS,
    LOADS,
    METER,
    TIERS,
    WORK_ROWS,
    adaptive_task,
    participant_sums,
    pass_group_leader,
    pass_utility,
    preparation_task,
    simulate_households,
    simulation_task,
)
from drsim.pipeline.tier_inputs import TierInputs
from drsim.scenario import Scenario
from drsim.units import clock
from drsim.utility import deficit
from drsim.utility.control_group_refusals import check_control_group
from drsim.utility.feature_registry import active_features, features_of
from drsim.utility.features import (
    MonitoringFeature,
    feature_output,
    feature_schema,
    plain_twin,
)
from drsim.utility.incentive import IncentiveResult, plan_second_event
from drsim.utility.lottery import monitoring_cost, saved_cost
from drsim.utility.monitoring import MonitoringPlan, check_queries
from drsim.utility.participants import ParticipantSums
from drsim.utility.threshold import Thresholds

Progress = Callable[[str, int, int], None]  # (stage, done, in all), in the stage's unit
#: the adaptive pass of a streamed run runs beside the stream in this many tasks at a time,
#: leaving the other cores to the stream's micro-batches
STREAM_SIDE_TASKS = 1
STAGE_UNITS = {"cost models": "groups", "passes": "chunks", "passes + meter tier": "chunks",
               "group tier": "group leaders", "utility tier": "passes",
               "adaptive pass": "chunks", "readings + meter tier": "chunks"}


@dataclass(frozen=True)
class Simulation:
    """The passes of a whole scenario and how the backend ran them; built once, when
    every pass has run."""

    scenario: Scenario
    chunks: list[Chunk]
    loads: Loads
    chunk_rows: pd.DataFrame  # one row per chunk (drsim.pipeline.tasks.CHUNKS), in chunk order
    backend: BackendInfo
    timings: dict[str, float]  # stage -> wall seconds

    def timed(self, backend_start_seconds: float, started: float) -> Simulation:
        """This simulation with the backend's start-up time [s] first in its timings and
        the total wall time since ``started`` (a :func:`time.perf_counter` reading) last."""
        return replace(self, timings={"backend_start_seconds": backend_start_seconds,
                                      **self.timings,
                                      "total_seconds": time.perf_counter() - started})

    @property
    def households(self) -> int:
        return int(self.chunk_rows["households"].sum())

    @property
    def ev_households(self) -> int:
        return int(self.chunk_rows["ev_households"].sum())

    @property
    def participants(self) -> ParticipantSums:
        """The participants' exact sums for Eq. 6.5-6.8."""
        return participant_sums(self.chunk_rows)

    @property
    def expected_kwh(self) -> float:
        """The utility's estimated expected reduction of the program [kWh]: Σ (B̂ − P̂)."""
        return expected_kwh(self.scenario, self.loads)

    @property
    def goal_kwh(self) -> float:
        """The reduction goal [kWh]: the scenario's number, or the estimated expected
        reduction."""
        return goal_kwh(self.scenario, self.loads)


def expected_kwh(scenario: Scenario, loads: Loads) -> float:
    """The utility's estimated expected reduction of the program [kWh]: Σ (B̂ − P̂) over
    its window (:func:`drsim.utility.deficit.expected_reduction_kwh`)."""
    program = scenario.dr_program
    est = loads.estimate_kw
    return deficit.expected_reduction_kwh(est["baseline"], est["expected"],
                                          program.start_minute, program.end_minute)


def goal_kwh(scenario: Scenario, loads: Loads) -> float:
    """The reduction goal [kWh]: the scenario's number, or the estimated expected
    reduction (:func:`drsim.utility.deficit.reduction_goal_kwh`)."""
    return deficit.reduction_goal_kwh(scenario.dr_program.reduction_goal_kwh,
                                      expected_kwh(scenario, loads))


@dataclass(frozen=True)
class Monitored:
    """What the three tiers produced on the monitored passes: aggregates per group and
    test time or tick, and the backend's handle of the user events (not collected: they
    grow with the households)."""

    plan: MonitoringPlan
    thresholds: Thresholds  # γ[groupID, time] of Listing 6.2
    #: backend handle of drsim.pipeline.tasks.EVENTS rows (drsim.pipeline.tasks.user_events)
    user_events: Any
    meter_work: dict[str, np.ndarray]  # pass -> (groups, WORK_ROWS, tests)
    outcomes: dict[str, np.ndarray]  # pass -> (groups, tests + 1, 2), tasks.outcome_counts
    tier_rows: pd.DataFrame  # drsim.pipeline.tasks.TIERS rows of the group leaders and the utility
    outcome: dict[str, TierOutcome]  # monitored pass -> latches and prediction
    #: each monitoring feature's merge of the chunks' rows, by feature name
    #: (drsim.utility.features.MonitoringFeature.merge)
    features: dict[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """The monitored passes' names (with the twins a feature adds,
        :meth:`~drsim.utility.features.MonitoringFeature.passes`)."""
        return tuple(self.outcome)


@dataclass(frozen=True)
class Run:
    """A closed-loop run: the passes, the monitoring and the second event; built once,
    when the adaptive pass has run."""

    simulation: Simulation
    monitored: Monitored
    costs: dict[str, Any]  # of the traditional pass, as deployed
    delay_detection: int
    deficit: dict[str, Any] | None = None  # what the utility knew at t_nc
    incentive: IncentiveResult | None = None
    second: SecondEvent | None = None
    note: str | None = None  # why there is no second event
    #: with ``export_readings``: the backend's handle of the traditional pass's meter
    #: readings (drsim.pipeline.recorded.CHUNK_READINGS rows)
    readings: Any = None
    #: the plain twin's closed loop (BL), when a monitoring feature runs one
    bl: PlainLoop | None = None
    #: file name -> the rows of a monitoring feature's stage before the passes that the
    #: run folder keeps for drsim monitor (load shedding's cost models, drsim.pipeline.kept)
    kept: dict[str, pa.Table] = field(default_factory=dict)

    @property
    def t_nc(self) -> int:
        return self.monitored.outcome["traditional"].t_nc

    def timed(self, backend_start_seconds: float, started: float) -> Run:
        """This run with its simulation :meth:`Simulation.timed`."""
        return replace(self, simulation=self.simulation.timed(backend_start_seconds,
                                                              started))


@dataclass(frozen=True)
class Passes:
    """Stage 1's values: the chunks, the passes' loads and per-chunk rows, the backend's
    handles of the monitored outputs, and its wall time [s]."""

    chunks: list[Chunk]
    loads: Loads
    chunk_rows: pd.DataFrame
    handles: dict[str, Any]
    seconds: float


@dataclass(frozen=True)
class SecondEventPlan:
    """Stage 3's values: what the utility knew at t_nc, the incentive plan and the
    second event, or the note saying why there is none."""

    deficit: dict[str, Any] | None = None
    incentive: IncentiveResult | None = None
    second: SecondEvent | None = None
    note: str | None = None


def _stage(progress: Progress | None, name: str):
    return None if progress is None else partial(progress, name)


def simulate(scenario: Scenario, backend: Backend, *, chunk_size: int | None = None,
             progress: Progress | None = None) -> Simulation:
    """The baseline, expected and traditional passes of ``scenario``."""
    first_job = len(backend.info.jobs)  # a backend may have run other runs before (a sweep)
    passes = _passes(scenario, backend, None, chunk_size, _stage(progress, "passes"))
    return Simulation(scenario, passes.chunks, passes.loads, passes.chunk_rows,
                      this_run(backend.info, first_job),
                      {"passes_seconds": passes.seconds})


def _passes(scenario: Scenario, backend: Backend, plan: MonitoringPlan | None,
            chunk_size: int | None, progress,
            prepared: dict[str, tuple[Any, ...]] | None = None,
            export_readings: bool = False) -> Passes:
    """Stage 1 (with the meter tier when ``plan`` is given, the values of the monitoring
    features' stages before it in ``prepared``, and the traditional pass's meter
    readings with ``export_readings``)."""
    started = time.perf_counter()
    chunks = plan_chunks(scenario, chunk_size)
    schemas = {"loads": LOADS, "chunks": CHUNKS}
    if plan is not None:
        schemas.update(meter=METER, events=EVENTS)
        schemas.update({feature_output(f.name): feature_schema(f)
                        for f in active_features(scenario)})
        if export_readings:
            schemas["readings"] = CHUNK_READINGS
    out = backend.map_chunks(partial(simulation_task, scenario, tuple(chunks), plan,
                                     prepared=prepared, export_readings=export_readings),
                             len(chunks), schemas, label="passes", progress=progress)
    loads = sum_loads(backend.collect(out["loads"]), len(scenario.groups),
                      PASSES).with_control_group(scenario)
    rows = chunk_rows(backend, out["chunks"], len(chunks))
    return Passes(chunks, loads, rows, out, time.perf_counter() - started)


def preparations(scenario: Scenario, plan: MonitoringPlan, backend: Backend,
                 progress: Progress | None, timings: dict[str, float],
                 kept: dict[str, pa.Table] | None = None) -> dict[str, tuple[Any, ...]]:
    """The stages the active monitoring features run before the passes, where the data
    is (:meth:`~drsim.utility.features.MonitoringFeature.preparations`; load shedding's
    cost models), each timed in ``timings``; their values by feature. The rows of a stage
    with a file go to ``kept`` under its name (:func:`drsim.pipeline.kept.kept_table`)."""
    prepared = {}
    for feature in active_features(scenario):
        values = []
        for step in feature.preparations(scenario, plan, simulate_households):
            started = time.perf_counter()
            out = backend.map_chunks(partial(preparation_task, step), step.count,
                                     {"prepared": step.schema}, label=step.label,
                                     progress=_stage(progress, step.label))
            rows = backend.collect(out["prepared"])
            if step.file is not None and kept is not None:
                kept[step.file] = kept_table(step, rows)
            values.append(step.finish(rows.to_pandas()))
            timings[f"{step.label.replace(' ', '_')}_seconds"] = \
                time.perf_counter() - started
        prepared[feature.name] = tuple(values)
    return prepared


def day_sized(scenario: Scenario, plan: MonitoringPlan, backend: Backend,
              chunk_size: int | None, prepared: dict[str, tuple[Any, ...]],
              timings: dict[str, float]
              ) -> tuple[dict[str, tuple[Any, ...]], Monitored | None]:
    """The features' prepared values with what a run of the whole day measures for the
    features :attr:`~drsim.utility.features.MonitoringFeature.sized_on_the_day`
    (:meth:`~drsim.utility.features.MonitoringFeature.day_sizes`: load shedding's device
    sizes), from the passes and the tiers run in batch, timed in ``timings``
    (``day_sizes_seconds``), and that run's monitoring, whose plain twins a streamed run
    reports (:mod:`drsim.pipeline.day_twins`); ``prepared`` itself and None when no
    feature needs it."""
    sized = [f for f in active_features(scenario) if f.sized_on_the_day]
    if not sized:
        return prepared, None
    started = time.perf_counter()
    passes = _passes(scenario, backend, plan, chunk_size, None, prepared)
    monitored, _ = tiers(scenario, plan, backend, passes.handles, None, prepared=prepared)
    timings["day_sizes_seconds"] = time.perf_counter() - started
    return {**prepared, **{f.name: (*prepared[f.name],
                                    f.day_sizes(monitored.features[f.name]))
                           for f in sized}}, monitored


def monitored_passes(features: tuple[MonitoringFeature, ...],
                     names: tuple[str, ...] = MONITORED) -> tuple[str, ...]:
    """The monitored passes the tiers report: ``names`` (a run's), and the twins the
    active monitoring ``features`` add
    (:meth:`~drsim.utility.features.MonitoringFeature.passes`)."""
    for feature in features:
        names = feature.passes(names)
    return names


def this_run(info: BackendInfo, first_job: int) -> BackendInfo:
    """The backend's facts with only the jobs from ``first_job`` on: a backend may have run
    other runs before (a sweep's)."""
    return replace(info, jobs=list(info.jobs[first_job:]))


def chunk_rows(backend: Backend, handle: Any, n_chunks: int) -> pd.DataFrame:
    rows = backend.collect(handle).to_pandas().sort_values("chunk", ignore_index=True)
    if not np.array_equal(rows["chunk"].to_numpy(), np.arange(n_chunks)):
        raise RuntimeError(f"the backend returned {len(rows)} of {n_chunks} chunks")
    return rows


def check_run(scenario: Scenario, delay_detection: int = 0) -> MonitoringPlan:
    """The monitoring plan of a run of ``scenario``, or the error of its bad input (a
    query text that does not compile or does not fit the events its tier reads, a
    negative delay), before any work; a query's error names the scenario file."""
    if delay_detection < 0:
        raise ValueError(f"delay_detection must be >= 0 minutes, not {delay_detection}")
    plan = MonitoringPlan.of(scenario)
    refusal = plan.method.refusal(scenario)
    if refusal is not None:
        raise ValueError(refusal)
    check_control_group(scenario)
    try:
        check_queries(plan)
        for feature in active_features(scenario):
            feature.check()
    except QueryError as exc:
        if scenario.source_path is None:
            raise
        raise QueryError(f"{_shown(scenario.source_path)}: {exc}") from None
    return plan


def _shown(path: Path) -> str:
    """``path`` as the user gave it: relative to the working folder when it is under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def run(scenario: Scenario, backend: Backend, *, delay_detection: int = 0,
        chunk_size: int | None = None, progress: Progress | None = None,
        export_readings: bool = False) -> Run:
    """The closed loop on ``scenario`` (module docstring). ``delay_detection`` [min] shifts
    the second event later (Figure 6.12); ``export_readings`` keeps the traditional
    pass's meter readings (:attr:`Run.readings`)."""
    plan = check_run(scenario, delay_detection)
    if export_readings:
        check_control_group(scenario, "--export-readings")
    first_job = len(backend.info.jobs)
    timings: dict[str, float] = {}
    kept: dict[str, pa.Table] = {}
    prepared = preparations(scenario, plan, backend, progress, timings, kept)
    passes = _passes(scenario, backend, plan, chunk_size,
                     _stage(progress, "passes + meter tier"), prepared, export_readings)
    timings = {"passes_seconds": passes.seconds, **timings}
    started = time.perf_counter()
    monitored, tier_timings = tiers(scenario, plan, backend, passes.handles, progress,
                                    prepared=prepared)
    timings["tiers_seconds"] = time.perf_counter() - started
    timings.update(tier_timings)

    run_costs = pass_costs(scenario, monitored, "traditional")
    second = closed_loop(scenario, plan, passes, monitored, run_costs, delay_detection)
    started = time.perf_counter()
    loads, incentive = _adaptive(scenario, passes, second, backend, progress, "adaptive pass")
    timings["adaptive_pass_seconds"] = 0.0 if second.second is None else \
        time.perf_counter() - started
    started = time.perf_counter()
    bl = plain_loop(scenario, plan, passes, monitored, delay_detection, backend, progress,
                    (second, loads))
    if bl is not None:
        timings["plain_loop_seconds"] = time.perf_counter() - started
    simulation = Simulation(scenario, passes.chunks, loads, passes.chunk_rows,
                            this_run(backend.info, first_job), timings)
    return Run(simulation, monitored, run_costs, delay_detection, second.deficit, incentive,
               second.second, second.note, passes.handles.get("readings"), bl, kept)


def closed_loop(scenario: Scenario, plan: MonitoringPlan, passes: Passes, monitored: Monitored,
                cost: dict[str, Any], delay_detection: int, name: str = "traditional"
                ) -> SecondEventPlan:
    """Stage 3 on monitored pass ``name``: its second event, or the note saying why there
    is none."""
    if not monitored.outcome[name].predicted:
        return SecondEventPlan(note="no utility non-compliance predicted: no second event")
    return second_event_stage(scenario, plan, passes, monitored, cost, delay_detection, name)


def _adaptive(scenario: Scenario, passes: Passes, second: SecondEventPlan, backend: Backend,
              progress: Progress | None, label: str) -> tuple[Loads, IncentiveResult | None]:
    """Stage 4: the loads with the adaptive pass (the traditional pass's, without a second
    event) and the incentive with the response to it (``label``: the stage's progress)."""
    loads = passes.loads
    if second.second is None:  # the adaptive pass is the traditional pass
        return loads.merged(loads.renamed("traditional", "adaptive")), second.incentive
    adaptive, incentive = adaptive_pass(scenario, passes.chunks, second.second, backend,
                                        _stage(progress, label))
    return loads.merged(adaptive.replayed(loads, "traditional", second.second.announced)), \
        incentive


@dataclass(frozen=True)
class PlainLoop:
    """The closed loop of the plain twin (BL, :func:`drsim.utility.features.plain_twin`) of
    the traditional pass, run beside the monitored one (OP): its costs, its second event
    and the adaptive pass's loads that follow from them."""

    name: str
    costs: dict[str, Any]
    second: SecondEventPlan
    #: (groups, 1440) [kW]; None without an adaptive pass (drsim monitor simulates nothing)
    adaptive_kw: np.ndarray | None


def plain_plan(scenario: Scenario, plan: MonitoringPlan, passes: Passes, monitored: Monitored,
               delay_detection: int) -> PlainLoop | None:
    """The plain twin's costs and second event planned, without its adaptive pass (what
    ``drsim monitor`` knows of BL's loop), when a feature runs the twin (None otherwise)."""
    name = plain_twin("traditional")
    if name not in monitored.outcome:
        return None
    cost = pass_costs(scenario, monitored, name)
    return PlainLoop(name, cost, closed_loop(scenario, plan, passes, monitored, cost,
                                             delay_detection, name), None)


def plain_loop(scenario: Scenario, plan: MonitoringPlan, passes: Passes, monitored: Monitored,
               delay_detection: int, backend: Backend, progress: Progress | None,
               op: tuple[SecondEventPlan, Loads]) -> PlainLoop | None:
    """The closed loop of the plain twin of the traditional pass, when a feature runs one
    (None otherwise): :func:`plain_plan` and its adaptive pass, OP's when its second
    event asks the same of the households (:func:`same_response`), else its own."""
    bl = plain_plan(scenario, plan, passes, monitored, delay_detection)
    if bl is None:
        return None
    op_second, op_loads = op
    if not same_response(bl.second.second, op_second.second):
        op_loads, _ = _adaptive(scenario, passes, bl.second, backend, progress,
                                "adaptive pass (BL)")
    return replace(bl, adaptive_kw=op_loads.group_kw["adaptive"])


def same_response(a: SecondEvent | None, b: SecondEvent | None) -> bool:
    """Whether two planned second events ask the same of the households (both none, or the
    same times and the same θ_new of Eq. 6.8), so that one adaptive pass renders both;
    their lotteries and costs may differ, the loads do not."""
    if a is None or b is None:
        return a is b
    ia, ib = a.incentive, b.incentive
    return (a.announced, a.start, a.end) == (b.announced, b.start, b.end) \
        and (ia.theta_o_mean, ia.theta_red_mean, ia.beta, tuple(ia.target_follow_through)) \
        == (ib.theta_o_mean, ib.theta_red_mean, ib.beta, tuple(ib.target_follow_through))


def tiers(scenario: Scenario, plan: MonitoringPlan, backend: Backend, out: dict[str, Any],
          progress: Progress | None, names: tuple[str, ...] | None = None,
          thresholds: Thresholds | None = None,
          prepared: dict[str, tuple[Any, ...]] | None = None
          ) -> tuple[Monitored, dict[str, float]]:
    """Stage 2: thresholds, group leaders and the utility, and the two tiers' wall times
    [s]. ``names``: the monitored passes in the meter tier's output (default: the run's);
    ``thresholds``: γ given (default: from the scenario and the replicas' flags);
    ``prepared``: the values of the features' stages before the passes, by feature
    (their inputs of the group leaders and the utility read them)."""
    sizes = np.array(scenario.called_group_sizes(), dtype=np.int64)
    n_groups, k = len(sizes), len(plan.test_times)
    if names is None:
        names = monitored_passes(active_features(scenario))
    meter = backend.collect(out["meter"]).to_pandas()
    meter = meter.sort_values(["chunk", "pass"], kind="stable", ignore_index=True)
    if thresholds is None:
        thresholds = Thresholds.of(plan, sizes, replica_counts(meter, n_groups))
    merged = {f.name: f.merge(_feature_rows(backend, out[feature_output(f.name)]))
              for f in features_of(scenario) if feature_output(f.name) in out}
    active = active_features(scenario)
    group_inputs = TierInputs.of(active, lambda f: {
        **f.group_inputs(plan, prepared or {}),
        **f.merged_group_inputs(merged.get(f.name), thresholds)})
    utility_inputs = TierInputs.of(active, lambda f: f.utility_inputs(plan, prepared or {}))
    started = time.perf_counter()
    leaders = backend.group_apply(
        out["events"], ["pass", "group"],
        partial(pass_group_leader, plan, tuple(sizes.tolist()), thresholds, group_inputs),
        TIERS,
        label="group tier", progress=_in_units(progress, "group tier",
                                               len(names) * n_groups))
    timings = {"group_tier_seconds": time.perf_counter() - started}
    started = time.perf_counter()
    util = backend.group_apply(leaders, ["pass"], partial(pass_utility, plan, utility_inputs),
                               TIERS,
                               label="utility tier",
                               progress=_in_units(progress, "utility tier", len(names)))
    timings["utility_tier_seconds"] = time.perf_counter() - started
    tier_rows = pd.concat([backend.collect(leaders).to_pandas(),
                           backend.collect(util).to_pandas()], ignore_index=True)
    tier_rows = tier_rows.sort_values(["pass", "group", "kind", "time"], kind="stable",
                                      ignore_index=True)
    meter_work = _per_group(meter, "work", names, n_groups, (WORK_ROWS, k))
    outcomes = _per_group(meter, "outcomes", names, n_groups, (k + 1, 2))
    features = {f.name: f.tier_merge(merged[f.name], tier_rows)
                for f in features_of(scenario) if f.name in merged}
    outcome = {name: tier_outcome(tier_rows, name, n_groups) for name in names}
    return Monitored(plan, thresholds, out["events"], meter_work, outcomes, tier_rows,
                     outcome, features), timings


def _feature_rows(backend: Backend, handle: Any) -> pd.DataFrame:
    """A monitoring feature's chunk output, collected, by chunk then pass (each chunk's
    rows of a pass in the order it gave them)."""
    rows = backend.collect(handle).to_pandas()
    return rows.sort_values(["chunk", "pass"], kind="stable", ignore_index=True)


def _in_units(progress: Progress | None, stage: str, units: int):
    """A backend progress callback (tasks done, tasks) reporting ``units`` (group leaders,
    passes) done in proportion."""
    if progress is None:
        return None
    return lambda done, total: progress(stage, done * units // max(total, 1), units)


def _per_group(meter: pd.DataFrame, column: str, names: tuple[str, ...], n_groups: int,
               shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """pass -> (groups, *shape): the chunks' counts in ``column`` summed per group."""
    out = {name: np.zeros((n_groups, *shape), dtype=np.int64) for name in names}
    for name, group, values in zip(meter["pass"], meter["group"], meter[column],
                                   strict=True):
        out[name][group] += np.asarray(values, np.int64).reshape(shape)
    return out


def replica_counts(meter: pd.DataFrame, n_groups: int) -> np.ndarray | None:
    """(groups, tests) replica flags summed over each group's chunks (None without)."""
    rows = meter[meter["replica_flags"].notna()]
    if not len(rows):
        return None
    flags = np.stack([np.asarray(x, np.int64) for x in rows["replica_flags"]])
    out = np.zeros((n_groups, flags.shape[1]), dtype=np.int64)
    np.add.at(out, rows["group"].to_numpy(np.int64), flags)
    return out


def _ran(scenario: Scenario, monitored: Monitored):
    """(feature, its merge) of each monitoring feature the tiers ran."""
    return ((f, monitored.features[f.name]) for f in features_of(scenario)
            if f.name in monitored.features)


def pass_costs(scenario: Scenario, monitored: Monitored, name: str) -> dict[str, Any]:
    """The costs of monitored pass ``name`` as deployed (:func:`evaluation.costs`), with
    the inputs of the monitoring features that ran
    (:meth:`~drsim.utility.features.MonitoringFeature.cost_inputs`)."""
    inputs: dict[str, Any] = {}
    for feature, merged in _ran(scenario, monitored):
        inputs.update(feature.cost_inputs(merged, name))
    return costs(monitored.plan, np.array(scenario.called_group_sizes(), dtype=np.int64),
                 monitored.meter_work[name], monitored.tier_rows, name,
                 monitored.outcome[name], **inputs)


def second_event_stage(scenario: Scenario, plan: MonitoringPlan, passes: Passes,
                       monitored: Monitored, cost: dict[str, Any], delay_detection: int,
                       name: str = "traditional") -> SecondEventPlan:
    """Stage 3: what the utility knows at t_nc of monitored pass ``name`` and the
    incentive plan (Eq. 6.5-6.8)."""
    trad = monitored.outcome[name]
    sums = participant_sums(passes.chunk_rows)
    inputs: dict[str, Any] = {}
    for feature, merged in _ran(scenario, monitored):
        inputs.update(feature.deficit_inputs(merged))
    known = deficit_at(plan, passes.loads, trad, sums.theta_o_mean,
                       goal_kwh(scenario, passes.loads), expected_kwh(scenario, passes.loads),
                       sizes=np.array(scenario.called_group_sizes(), dtype=np.int64), **inputs)
    inc = scenario.incentive
    incentive = plan_second_event(
        inc, scenario.dr_program.incentive, sums,
        monitoring_cost=monitoring_cost(
            cost["communication"]["total"], cost["computation"]["total"],
            cost_per_transmitted_event=inc.cost_per_transmitted_event,
            cost_per_processed_event=inc.cost_per_processed_event),
        c_saved=saved_cost(known["shortfall_kwh"], inc.saved_cost_per_kwh),
        theta_red_mean=known["theta_red_mean_observed"])
    announced = trad.t_nc + delay_detection
    start = announced + inc.second_event_delay_minutes
    if not incentive.scheduled:
        return SecondEventPlan(known, incentive, note=incentive.note)
    if start >= plan.t_end:
        return SecondEventPlan(known, incentive, note=(
            f"the second event would start at {clock(start)}, not before the program ends "
            f"({clock(plan.t_end)})"))
    return SecondEventPlan(known, incentive, SecondEvent(announced, start, plan.t_end,
                                                         incentive))


def deficit_at(plan: MonitoringPlan, loads: Loads, outcome: TierOutcome, theta_o_mean: float,
               goal_kwh: float, total_kwh: float, seen: np.ndarray | None = None,
               sizes: np.ndarray | None = None) -> dict[str, Any]:
    """What the utility knows at t_nc (:mod:`drsim.utility.deficit`): the reduction realised and
    expected so far, the θ̄_red it reads from them and the projected shortfall against
    the goal (``total_kwh``: the estimated expected reduction of the program). With lost
    readings (``seen``: :func:`drsim.utility.readings_feature.seen_reduction` summed per
    group; ``sizes``: households per group) the realised reduction is read from the
    households seen (:func:`drsim.utility.deficit.reduction_seen`)."""
    slowed = plan.method.utility_rule().slowed_from(outcome.latch)
    known = deficit.last_readings(plan.t_start, outcome.t_nc, np.array(slowed),
                                  plan.reading, plan.settlement)
    est = loads.estimate_group_kw
    traditional = loads.group_kw["traditional"]
    seen_part: dict[str, Any] = {}
    if seen is None:
        realised, expected = deficit.reduction_so_far(
            traditional, est["baseline"], est["expected"], plan.t_start, known)
    else:
        per_group = np.array([deficit.reduction_so_far(
            traditional[g:g + 1], est["baseline"][g:g + 1], est["expected"][g:g + 1],
            plan.t_start, known[g:g + 1])[1] for g in range(len(known))])
        realised, expected, n_seen = deficit.reduction_seen(seen, per_group, sizes,
                                                            plan.t_start, known)
        seen_part = {"households_seen": n_seen.tolist(),
                     "realised_reduction_all_readings_kwh": deficit.reduction_so_far(
                         traditional, est["baseline"], est["expected"], plan.t_start,
                         known)[0]}
    return {"readings_until": [clock(int(t)) for t in known], **seen_part,
            "realised_reduction_kwh": realised, "expected_reduction_kwh": expected,
            "share_of_expected": realised / expected if expected > 0 else None,
            "theta_o_mean": theta_o_mean,
            "theta_red_mean_observed": deficit.observed_follow_through(theta_o_mean, realised,
                                                                       expected),
            "shortfall_kwh": deficit.shortfall_kwh(goal_kwh, total_kwh, realised, expected)}


def adaptive_pass(scenario: Scenario, chunks: list[Chunk], second: SecondEvent,
                  backend: Backend, progress, staging: str | None = None
                  ) -> tuple[Loads, IncentiveResult]:
    """Stage 4: the adaptive pass's loads, and the incentive with θ_new's mean and the
    lottery drawn in the run (``staging``: a streamed run's, where its readings go,
    :func:`drsim.pipeline.tasks.adaptive_task`; it then runs in
    :data:`STREAM_SIDE_TASKS` tasks at a time, beside the stream)."""
    out = backend.map_chunks(partial(adaptive_task, scenario, tuple(chunks), second,
                                     staging=staging),
                             len(chunks), {"loads": LOADS, "chunks": CHUNKS},
                             label="adaptive pass", progress=progress,
                             max_tasks=None if staging is None else STREAM_SIDE_TASKS)
    adaptive = sum_loads(backend.collect(out["loads"]), len(scenario.groups), ("adaptive",))
    rows = chunk_rows(backend, out["chunks"], len(chunks))
    winners: dict[float, int] = {}
    for us, won in zip(rows["u"], rows["winners"], strict=True):
        for u, n in zip(us, won, strict=True):
            winners[float(u)] = winners.get(float(u), 0) + int(n)
    incentive = second.incentive.with_response(participant_sums(rows))
    return adaptive, incentive.with_lottery({u: n for u, n in winners.items() if n},
                                            int(rows["second_event_compliant"].sum()))
