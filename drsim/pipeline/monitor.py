"""``drsim monitor``: the three tiers and the second event's plan on recorded meter readings.

No household is simulated (docs/monitor.md). The readings (:mod:`drsim.pipeline.recorded`)
are read where the work is, one chunk of households per task
(:func:`monitor_task`): Listing 6.1 on each household's readings at its test times, with
``accLoad`` the meter's register (or the energy of its readings, accumulated) and
``λ[houseID, time]`` the utility's P̂ accumulated, Eq. 6.4. From there the stages are the
run's: the group leaders (Listing 6.2) and the utility (Listing 6.3) on the user events,
what the utility knows at t_nc and the second event's plan (Eq. 6.5-6.8,
:func:`drsim.pipeline.stages.second_event_stage`). The participants' contracts (θ_o and the
mapping u, which Eq. 6.7-6.8 read) are the scenario's households: the utility's enrolment
records, not readings.

The readings are those of one day as deployed, so the monitored pass is named
``traditional``, as in a run. What only a simulation knows is absent: the no-DR and
expected passes, the households' realised compliance (Eq. 6.2 against the true baseline:
precision and recall), the threshold's replicas (γ comes from a run's thresholds or is the
scenario's constant), the adaptive pass.

A monitoring feature's stages before the passes (load shedding's cost models, fitted on a
simulated day) are not run: their values come from the run folder that kept them
(``prepared``, :mod:`drsim.pipeline.kept`). With load shedding every chunk's readings run
through the meter tier twice, under the bound (OP) and unshed (BL, the plain twin), the
group leaders and the utility shed on OP's, and BL's second event is planned beside OP's
(:func:`drsim.pipeline.stages.plain_plan`); BL has no adaptive pass, nor has OP.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from drsim.household.population import Population
from drsim.household.render import micro_kw
from drsim.pipeline.backend import Backend
from drsim.pipeline.loads import sum_loads
from drsim.pipeline.passes import Chunk, ChunkResult, plan_chunks
from drsim.pipeline.recorded import ReadingsCheck, check_readings, read_chunk
from drsim.pipeline.stages import (
    Passes,
    Progress,
    Run,
    Simulation,
    check_run,
    chunk_rows,
    closed_loop,
    monitored_passes,
    pass_costs,
    plain_plan,
    this_run,
    tiers,
)
from drsim.pipeline.tasks import (
    CHUNKS,
    EVENTS,
    LOADS,
    METER,
    chunk_batch,
    enrolled,
    event_row,
    feature_batches,
    loads_batch,
    lost_on_the_way,
    meter_inputs,
    meter_row,
    meter_runner,
    simulate_households,
)
from drsim.scenario import Scenario
from drsim.units import DAY
from drsim.utility.control_group_refusals import check_control_group
from drsim.utility.feature_registry import active_features, combined, features_of
from drsim.utility.features import (
    FeatureChunk,
    MonitoringFeature,
    feature_output,
    feature_schema,
)
from drsim.utility.monitoring import MonitoringPlan, accumulated_kwh
from drsim.utility.threshold import Thresholds

__all__ = ["MONITORED_PASS", "Monitoring", "check_monitor", "check_prepared", "monitor",
           "monitor_features", "monitor_task", "participants_task"]

MONITORED_PASS = "traditional"


@dataclass(frozen=True)
class Monitoring:
    """``drsim monitor``'s result: the run's values from what readings show
    (:class:`drsim.pipeline.stages.Run`: its simulation holds the recorded pass and the
    estimates only), what the checks found in the readings, and where γ came from."""

    run: Run
    readings: ReadingsCheck
    thresholds_from: str

    def timed(self, backend_start_seconds: float, started: float) -> Monitoring:
        """This monitoring with its run :meth:`~drsim.pipeline.stages.Run.timed`."""
        return replace(self, run=self.run.timed(backend_start_seconds, started))


def check_monitor(scenario: Scenario) -> MonitoringPlan:
    """The monitoring plan, or ValueError for what readings cannot feed: a monitoring
    feature with a :attr:`~drsim.utility.features.MonitoringFeature.readings_refusal`
    (appliance-level queries read each appliance's starts), and a control group (whose
    households the readings do not tell apart)."""
    check_control_group(scenario, "drsim monitor")
    for feature in active_features(scenario):
        if feature.readings_refusal is not None:
            raise ValueError(f"{feature.scenario_key}: {feature.readings_refusal}")
    return check_run(scenario)


def check_prepared(scenario: Scenario, plan: MonitoringPlan,
                   prepared: dict[str, tuple[Any, ...]]) -> None:
    """ValueError, in one line naming the scenario key and the file a run keeps them in,
    when an active monitoring feature has a stage before the passes and no value of it
    in ``prepared`` (:func:`drsim.pipeline.kept.kept_values` reads them)."""
    for feature in active_features(scenario):
        if feature.name in prepared:
            continue
        for step in feature.preparations(scenario, plan, simulate_households):
            raise ValueError(f"{feature.scenario_key}: drsim monitor simulates nothing and "
                             f"needs the values of the stage {step.label!r} (a run's "
                             f"{step.file})")


def monitor_features(scenario: Scenario, check: ReadingsCheck
                     ) -> tuple[MonitoringFeature, ...]:
    """The monitoring features active on the checked readings
    (:meth:`~drsim.utility.features.MonitoringFeature.with_readings`: lost readings turn
    on when some did not arrive), or ValueError in one line when one of them excludes
    another (load shedding, whose gateways assume every reading arrives, and lost
    readings)."""
    features = tuple(f for f in (f.with_readings(check.lost) for f in features_of(scenario))
                     if f.active)
    return combined(features, f", and {check.lost:,} of the readings in "
                              f"{Path(check.path).name} did not arrive")


def monitor_task(scenario: Scenario, plan: MonitoringPlan, path: str,
                 chunks: tuple[Chunk, ...], lenient: bool,
                 features: tuple[MonitoringFeature, ...],
                 prepared: dict[str, tuple[Any, ...]], index: int
                 ) -> dict[str, pa.RecordBatch]:
    """Listing 6.1 on the recorded readings of chunk ``index``: the meter tier's counts and
    user events of each of its runs (``meter``, ``events``; load shedding: OP, then BL),
    the recorded load and the estimates in whole µkW (``loads``) and the participants'
    sums (``chunks``), in the run's schemas, and the rows of the monitoring ``features``
    (:func:`drsim.pipeline.tasks.feature_batches`), which read the readings that arrived
    (``FeatureChunk.arrived``) and the values of their stages before the passes
    (``prepared``)."""
    chunk = chunks[index]
    started = time.perf_counter()
    pop = Population(scenario, chunk.first, chunk.count)
    grid = read_chunk(path, chunk.first, chunk.count, plan.t_start, plan.t_end, scenario,
                      lenient)
    times = plan.test_times
    kw = grid.filled_kw
    acc = accumulated_kwh(kw, plan.t_start, times) if grid.energy_kwh is None else \
        grid.energy_kwh[:, times - plan.t_start]
    at_chunk = FeatureChunk(plan, chunk.index, chunk.group, pop.ids, arrived=~grid.lost,
                            prepared=prepared)
    at_chunk = replace(at_chunk, lost=lost_on_the_way(features, at_chunk))
    runs = meter_runner(features, at_chunk)(
        MONITORED_PASS, acc, accumulated_kwh(grid.expected_kw, plan.t_start, times),
        partial(meter_inputs, features, at_chunk))
    unknown = np.zeros(chunk.count, dtype=bool)  # realised compliance needs the true baseline
    window = {"load": kw, "baseline": grid.baseline_kw, "expected": grid.expected_kw}

    def day(window: np.ndarray) -> np.ndarray:
        curve = np.full(DAY, np.nan)
        curve[plan.t_start:plan.t_end] = micro_kw(window).sum(axis=0)
        return curve

    result = ChunkResult(chunk, chunk.count, int(pop.has_ev.sum()),
                         load={MONITORED_PASS: day(kw)}, by_category={MONITORED_PASS: {}},
                         estimates={"baseline": micro_kw(grid.baseline_kw).sum(axis=0),
                                    "expected": micro_kw(grid.expected_kw).sum(axis=0)})
    return {"loads": loads_batch(scenario, result),
            "chunks": chunk_batch(result, time.perf_counter() - started,
                                  enrolled(scenario, pop)),
            "meter": pa.RecordBatch.from_pylist(
                [meter_row(plan, chunk, r.label, r.result, unknown) for r in runs],
                schema=METER),
            "events": pa.RecordBatch.from_pylist(
                [event_row(chunk, r.label, r.result) for r in runs], schema=EVENTS),
            **feature_batches(features, [(replace(at_chunk, meter=runs[0].result,
                                                  meter_runs=tuple(runs), window=window),
                                          MONITORED_PASS)])}


def participants_task(scenario: Scenario, chunks: tuple[Chunk, ...], index: int
                      ) -> dict[str, pa.RecordBatch]:
    """The participants' sums of chunk ``index`` (Eq. 6.5-6.8 read θ_o and u: the
    utility's enrolment records) as a row of :data:`drsim.pipeline.tasks.CHUNKS`."""
    chunk = chunks[index]
    started = time.perf_counter()
    pop = Population(scenario, chunk.first, chunk.count)
    result = ChunkResult(chunk, chunk.count, int(pop.has_ev.sum()))
    return {"chunks": chunk_batch(result, time.perf_counter() - started,
                                  enrolled(scenario, pop))}


def monitor(scenario: Scenario, readings: str | Path, backend: Backend, *,
            thresholds: Thresholds | None = None, thresholds_from: str | None = None,
            chunk_size: int | None = None, lenient: bool = False,
            progress: Progress | None = None, check: ReadingsCheck | None = None,
            prepared: dict[str, tuple[Any, ...]] | None = None) -> Monitoring:
    """The three tiers and the second event's plan on the readings at ``readings``.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The households, groups, program and monitoring the readings belong to.
    readings : str or pathlib.Path
        A Parquet file or dataset of :data:`drsim.pipeline.recorded.ROWS`.
    backend : drsim.pipeline.backend.Backend
        Where the chunks and tiers run.
    thresholds : drsim.utility.threshold.Thresholds, optional
        γ[groupID, time] (a run's thresholds.parquet); default: the scenario's constant
        γ_user (ValueError when it is estimated from the expected response).
    thresholds_from : str, optional
        Where ``thresholds`` came from, for the summary.
    chunk_size : int, optional
        Households per task (default: the scenario's).
    lenient : bool, default False
        Drop and count the rows that cannot be readings instead of stopping.
    progress : callable, optional
        ``progress(stage, done, total)``.
    check : drsim.pipeline.recorded.ReadingsCheck, optional
        The readings' checks, when already made (:func:`check_readings`).
    prepared : dict of str to tuple, optional
        Feature name -> the values of its stages before the passes, as a run kept them
        (load shedding's cost models); ValueError when an active feature needs them and
        they are not given (:func:`check_prepared`).
    """
    started = time.perf_counter()
    plan = check_monitor(scenario)
    prepared = dict(prepared or {})
    check_prepared(scenario, plan, prepared)
    sizes = np.array(scenario.group_sizes(), dtype=np.int64)
    if thresholds is None:
        if plan.threshold.readings_refusal is not None:
            raise ValueError(plan.threshold.readings_refusal)
        thresholds, thresholds_from = Thresholds.of(plan, sizes), "scenario (constant)"
    check = check or check_readings(readings, scenario, plan.t_start, plan.t_end, lenient)
    features = monitor_features(scenario, check)
    chunks = plan_chunks(scenario, chunk_size)
    first_job = len(backend.info.jobs)
    out = backend.map_chunks(
        partial(monitor_task, scenario, plan, str(readings), tuple(chunks), lenient,
                features, prepared), len(chunks),
        {"loads": LOADS, "chunks": CHUNKS, "meter": METER, "events": EVENTS,
         **{feature_output(f.name): feature_schema(f) for f in features}},
        label="readings + meter tier",
        progress=None if progress is None else partial(progress, "readings + meter tier"))
    loads = sum_loads(backend.collect(out["loads"]), len(sizes), (MONITORED_PASS,))
    rows = chunk_rows(backend, out["chunks"], len(chunks))
    timings = {"readings_seconds": time.perf_counter() - started}
    tiers_started = time.perf_counter()
    monitored, tier_timings = tiers(scenario, plan, backend, out, progress,
                                    names=monitored_passes(features, (MONITORED_PASS,)),
                                    thresholds=thresholds, prepared=prepared)
    timings["tiers_seconds"] = time.perf_counter() - tiers_started
    timings.update(tier_timings)
    run_costs = pass_costs(scenario, monitored, MONITORED_PASS)
    passes = Passes(chunks, loads, rows, out, timings["readings_seconds"])
    second = closed_loop(scenario, plan, passes, monitored, run_costs, 0)
    simulation = Simulation(scenario, chunks, loads, rows,
                            this_run(backend.info, first_job), timings)
    run = Run(simulation, monitored, run_costs, 0, second.deficit, second.incentive,
              second.second, second.note,
              bl=plain_plan(scenario, plan, passes, monitored, 0))
    return Monitoring(run, check, thresholds_from or "given")

