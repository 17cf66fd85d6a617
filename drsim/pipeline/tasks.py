"""What a run computes where the data is: one chunk's task, one group leader, the utility.

These are the functions a backend (:mod:`drsim.pipeline.backend`) runs; each is a plain function
over numpy, pandas and Arrow data, and each returns what leaves its worker as Arrow batches or a
pandas frame of the schemas below (docs/architecture.md, "Data flow of one run").

A **chunk task** simulates its households' passes (:func:`drsim.pipeline.passes.simulate_chunk`),
makes the utility's M&V estimates (:mod:`drsim.utility.baseline`), and, when the run is monitored,
runs every household's meter query (Listing 6.1) right away, with the replicas' flags that set the
threshold of Listing 6.2 (:mod:`drsim.utility.threshold`). Only per-minute sums, user events,
counters (the meter tier's work, households by first flag and compliance) and the
participants' exact sums (Eq. 6.5-6.8) leave it: no row per household.
Loads travel as whole µkW, so every sum is exact whatever the chunking.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from drsim.household.population import Population
from drsim.pipeline.memory import peak_rss_bytes
from drsim.pipeline.pass_names import MONITORED
from drsim.pipeline.passes import Chunk, ChunkResult, SecondEvent, pass_schedules, simulate_chunk
from drsim.pipeline.recorded import readings_batch
from drsim.pipeline.stream_clock import write_intervals
from drsim.pipeline.tier_inputs import TierInputs
from drsim.scenario import Scenario
from drsim.units import DAY
from drsim.utility.aggregate_reference import ReferenceReadings
from drsim.utility.aggregate_tier import blocks_frame, group_statistic, statistic_tier
from drsim.utility.baseline import estimate
from drsim.utility.control_adjustment import covariate_curves
from drsim.utility.feature_registry import active_features
from drsim.utility.features import (
    FeatureChunk,
    MeterRun,
    MeterRuns,
    MonitoringFeature,
    Preparation,
    feature_output,
    feature_schema,
)
from drsim.utility.group_and_utility_tiers import group_tier, utility_stream
from drsim.utility.leader_carry import LeaderCarry
from drsim.utility.lottery import lottery_winners, second_event_compliant
from drsim.utility.monitoring import (
    NOT_LATCHED,
    MeterResult,
    MonitoringPlan,
    accumulated_kwh,
    meter_tier,
)
from drsim.utility.participants import ParticipantSums, household_mappings
from drsim.utility.pooled_tier import leader_rows
from drsim.utility.threshold import Thresholds, replica_flags
from drsim.utility.tier_shedding import TierShedding
from drsim.utility.utility_rules import run_utility

TOTAL = "total"  # the series of a pass's whole load (the others are categories)
ESTIMATE = "estimate"  # the pass name of the utility's M&V estimates (series B and P̂)
CONTROL = "control"  # the pass name of the control households' load (series total)
_SUM = pa.decimal128(38, 0)  # the participants' fixed-point sums exceed 64 bits

LOADS = pa.schema([("chunk", pa.int64()), ("group", pa.int32()), ("pass", pa.string()),
                   ("series", pa.string()), ("kw_micro", pa.list_(pa.float64()))])
CHUNKS = pa.schema([
    ("chunk", pa.int64()), ("group", pa.int32()), ("households", pa.int64()),
    ("ev_households", pa.int64()), ("peak_rss_bytes", pa.int64()), ("seconds", pa.float64()),
    ("theta_o_sum", _SUM), ("theta_red_sum", _SUM), ("theta_new_sum", _SUM),
    ("u", pa.list_(pa.float64())), ("u_households", pa.list_(pa.int64())),
    ("winners", pa.list_(pa.int64())), ("second_event_compliant", pa.int64())])
METER = pa.schema([  # per (chunk, pass): aggregates only, whatever the chunk's size
    ("chunk", pa.int64()), ("group", pa.int32()), ("pass", pa.string()),
    ("work", pa.list_(pa.int64())), ("outcomes", pa.list_(pa.int64())),
    ("replica_flags", pa.list_(pa.int64()))])
#: meter work per test: events processed, partial matches, user events, readings shed,
#: remote-data requests
WORK_ROWS = 5
EVENTS = pa.schema([
    ("chunk", pa.int64()), ("group", pa.int32()), ("pass", pa.string()),
    ("time", pa.list_(pa.int64())), ("houseID", pa.list_(pa.int64())),
    ("accLoad", pa.list_(pa.float64())), ("delay", pa.list_(pa.float64())),
    ("missing", pa.list_(pa.int64())),
    # the readings' sums of monitoring.method aggregate beside Σ A (accLoad): its
    # reference's columns (drsim.utility.aggregate_reference), one after the other, each
    # one value per test time; null for user events
    ("sums", pa.list_(pa.float64()))])
#: the columns of a meter tier's events that are not a reference's sums
_EVENT_COLUMNS = ("time", "houseID", "groupID", "accLoad", "delay", "missing")
USER_EVENT_ROWS = pa.schema([  # the run folder's user events (:func:`user_events`)
    ("pass", pa.string()), ("time", pa.int64()), ("houseID", pa.int64()),
    ("groupID", pa.int64()), ("accLoad", pa.float64()), ("delay", pa.float64()),
    ("missing", pa.int64())])
#: the group leaders' and the utility's rows; kinds: alert, event, work, t_nc, and with
#: load shedding (drsim.utility.tier_shedding) device (``device``: the device's
#: DeviceStats.as_list), user_events_shed (a leader's per test time, ``processed`` of
#: them), group_event_shed (one per group event the utility dropped, under its group) and
#: forecast (a leader's latch predicted from the previous day, sent whether or not its
#: group flags) and sizing (``device``: a device's cost per unit and bound, NaN unbounded:
#: drsim.utility.shedding.DeviceSizing)
TIERS = pa.schema([("pass", pa.string()), ("group", pa.int32()), ("kind", pa.string()),
                   ("time", pa.int64()), ("load", pa.float64()), ("processed", pa.int64()),
                   ("partial_matches", pa.int64()), ("device", pa.list_(pa.float64()))])
UTILITY = -1  # the group column of the utility's rows


# --------------------------------------------------------------------------- chunk tasks
def simulation_task(scenario: Scenario, chunks: tuple[Chunk, ...], plan: MonitoringPlan | None,
                    index: int, prepared: Mapping[str, tuple[Any, ...]] | None = None,
                    export_readings: bool = False) -> dict[str, pa.RecordBatch]:
    """The baseline, expected and traditional passes of chunk ``index``: its loads and
    participants (``loads``, ``chunks``) and, with a monitoring ``plan``, the meter tier's
    output (``meter``, ``events``), each active monitoring feature's
    (:func:`feature_batches`) and, with ``export_readings``, the traditional pass's
    meter readings (``readings``, :func:`meter_readings`); ``prepared``: the values of
    the features' stages before the passes, by feature
    (:meth:`~drsim.utility.features.MonitoringFeature.preparations`)."""
    chunk = chunks[index]
    started = time.perf_counter()
    features = () if plan is None else active_features(scenario)
    result = simulate_chunk(scenario, chunk, households=plan is not None,
                            keep_runs=any(f.needs_runs for f in features))
    out = {"loads": loads_batch(scenario, result)}
    if plan is not None:
        out.update(_meter_batches(scenario, plan, result, features, prepared or {}))
        if export_readings:
            out["readings"] = meter_readings(plan, result, features)
    out["chunks"] = chunk_batch(result, time.perf_counter() - started,
                                enrolled(scenario, result.population))
    return out


def enrolled(scenario: Scenario, pop: Population) -> ParticipantSums:
    """The participants' exact sums of a chunk's households (θ_o, θ_red and the mappings u
    that Eq. 6.5-6.8 read: the utility's enrolment records)."""
    return ParticipantSums.of(pop.follow_through, pop.observed_follow_through,
                              household_mappings(scenario, pop.ids))


def _replica_flags(plan: MonitoringPlan, result: ChunkResult) -> np.ndarray | None:
    """The replicas' flags per test time of a chunk when γ is estimated from the expected
    response (:func:`drsim.utility.threshold.replica_flags`), else None."""
    policy = plan.threshold
    if not policy.needs_replicas:
        return None
    return replica_flags(plan, result.population, result.simulator, result.chunk.group,
                         result.estimate_exact, policy.replicas,
                         result.before_notice)


def _noncompliant(result: ChunkResult, name: str) -> np.ndarray:
    """Per household of a chunk, whether its realised reduction on pass ``name`` (against
    the simulated no-DR pass) falls below its goal Σ (B̂ − P̂) (Eq. 6.2) [kWh]."""
    est = result.estimate_window_kw
    goal = (est["baseline"] - est["expected"]).sum(axis=1) / 60.0
    return (result.window_kw["baseline"] - result.window_kw[name]).sum(axis=1) / 60.0 < goal


def stream_task(scenario: Scenario, chunks: tuple[Chunk, ...], plan: MonitoringPlan,
                staging: str, index: int) -> dict[str, pa.RecordBatch]:
    """The passes of chunk ``index`` for a streamed run (docs/streaming.md): its loads and
    participants as :func:`simulation_task`'s, the replicas' flags that set γ (``meter``,
    that column only), and the expected and traditional passes' meter readings written to
    ``staging``, interval by interval, for the clock to play into the stream: without the
    readings the monitoring features lose on the way
    (:meth:`~drsim.utility.features.MonitoringFeature.readings_lost`), with the meters'
    registers. Each active feature's rows of what needs no meter tier (which runs in the
    stream) come from here, where the data is (:func:`feature_batches` with no meter
    result)."""
    chunk = chunks[index]
    started = time.perf_counter()
    features = active_features(scenario)
    result = simulate_chunk(scenario, chunk, households=True)
    at = FeatureChunk(plan, chunk.index, chunk.group, result.population.ids)
    masks = [mask for mask in (f.readings_lost(at) for f in features) if mask is not None]
    lost = np.logical_or.reduce(masks) if masks else None
    minutes = np.arange(plan.t_start, plan.t_end)
    kw = {name: result.window_kw[name] for name in MONITORED}
    registers = {name: accumulated_kwh(load, plan.t_start, minutes) for name, load in kw.items()}
    if lost is not None:
        kw = {name: np.where(lost, np.nan, load) for name, load in kw.items()}
        registers = {name: np.where(lost, np.nan, r) for name, r in registers.items()}
    est = result.estimate_window_kw
    write_intervals(Path(staging), "passes", chunk.index, chunk.first, chunk.group, plan,
                    kw, est["expected"],
                    {name: _noncompliant(result, name) for name in MONITORED},
                    registers=registers)
    meter = {**dict.fromkeys(METER.names), "chunk": chunk.index, "group": chunk.group,
             "pass": "expected", "replica_flags": _replica_flags(plan, result)}
    parts = [(replace(at, window={"load": result.window_kw[name], "baseline": est["baseline"],
                                  "expected": est["expected"]}), name) for name in MONITORED]
    return {"loads": loads_batch(scenario, result),
            "chunks": chunk_batch(result, time.perf_counter() - started,
                                  enrolled(scenario, result.population)),
            "meter": pa.RecordBatch.from_pylist([meter], schema=METER),
            **feature_batches(features, parts)}


def meter_readings(plan: MonitoringPlan, result: ChunkResult,
                   features: tuple[MonitoringFeature, ...]) -> pa.RecordBatch:
    """The traditional pass's meter readings of a chunk over the program, as
    ``drsim run --export-readings`` writes them (:mod:`drsim.pipeline.recorded`): P, the
    meters' registers ``accLoad`` (:func:`drsim.utility.monitoring.accumulated_kwh` at every
    minute), B̂ and P̂; a reading a monitoring feature loses on the way
    (:meth:`~drsim.utility.features.MonitoringFeature.readings_lost`) has no load."""
    chunk = result.chunk
    kw, est = result.window_kw["traditional"], result.estimate_window_kw
    minutes = np.arange(plan.t_start, plan.t_end)
    at = FeatureChunk(plan, chunk.index, chunk.group, result.population.ids)
    return readings_batch(chunk.index, chunk.group, chunk.first, plan.t_start, kw,
                          accumulated_kwh(kw, plan.t_start, minutes), est["baseline"],
                          est["expected"], lost_on_the_way(features, at))


def lost_on_the_way(features: tuple[MonitoringFeature, ...], chunk: FeatureChunk
                    ) -> np.ndarray | None:
    """(households, program minutes) the readings of ``chunk`` the monitoring features lose
    on the way (:meth:`~drsim.utility.features.MonitoringFeature.readings_lost`), or None."""
    masks = [mask for mask in (f.readings_lost(chunk) for f in features) if mask is not None]
    return np.logical_or.reduce(masks) if masks else None


def simulate_households(scenario: Scenario, first: int, count: int, group: int
                        ) -> ChunkResult:
    """Households ``first`` .. ``first + count - 1`` of ``group`` simulated with their
    estimates: what a monitoring feature's stage before the passes may simulate
    (load shedding's previous day)."""
    return simulate_chunk(scenario, Chunk(0, first, count, group), households=True)


def preparation_task(preparation: Preparation, index: int) -> dict[str, pa.RecordBatch]:
    """Task ``index`` of a monitoring feature's stage before the passes, its rows as
    ``prepared``."""
    return {"prepared": pa.RecordBatch.from_pydict(dict(preparation.task(index)),
                                                   schema=preparation.schema)}


def adaptive_task(scenario: Scenario, chunks: tuple[Chunk, ...], second: SecondEvent,
                  index: int, staging: str | None = None) -> dict[str, pa.RecordBatch]:
    """The adaptive pass of chunk ``index`` (DR1 at θ_red, DR2 at θ_new of Eq. 6.8 for the
    planned incentive) and the lottery of Eq. 6.5 among the households compliant in the
    second event (:func:`drsim.utility.lottery.second_event_compliant`). Its day's load is
    rendered from DR2's announcement on: before it, the pass replays the traditional
    pass, whose load the driver has. With ``staging`` (a streamed run), its readings from
    the announcement on are written there for the clock
    (:func:`drsim.pipeline.stream_clock.write_intervals`)."""
    chunk = chunks[index]
    started = time.perf_counter()
    result = simulate_chunk(scenario, chunk, households=True,
                            schedules={"adaptive": second.schedule(scenario, chunk.group)},
                            render_from=second.announced)
    pop, incentive = result.population, second.incentive
    u = household_mappings(scenario, pop.ids)
    theta_new = incentive.new_follow_through(pop.follow_through, pop.observed_follow_through)
    sums = ParticipantSums.of(pop.follow_through, pop.observed_follow_through, u, theta_new)
    est = estimate(pop, second.start, second.end, result.simulator)
    lo = scenario.dr_program.start_minute  # the window of ``window_kw`` starts here
    compliant = second_event_compliant(est.baseline_kw, est.expected_kw,
                                       result.window_kw["adaptive"][:, second.start - lo:])
    won = incentive.winner_counts(u, lottery_winners(scenario.seed, pop.ids, incentive.p_inc,
                                                     compliant))
    if staging is not None:
        write_intervals(Path(staging), "adaptive", chunk.index, chunk.first, chunk.group,
                        MonitoringPlan.of(scenario), {"adaptive": result.window_kw["adaptive"]},
                        start=second.announced)
    return {"loads": loads_batch(scenario, result),
            "chunks": chunk_batch(result, time.perf_counter() - started, sums, won,
                                   int(compliant.sum()))}


def loads_batch(scenario: Scenario, result: ChunkResult) -> pa.RecordBatch:
    """One row (:data:`LOADS`) per (pass, series) of a simulated chunk, in whole µkW: each
    pass's total and categories, the utility's estimates B̂, P̂ (pass ``estimate``,
    NaN outside the program window) when the result has them, and the control
    households' load (pass ``control``, series ``total``) with a control group, and with
    the households' loads their covariate sums (series
    :data:`drsim.utility.control_adjustment.COVARIATES`)."""
    chunk = result.chunk
    rows: list[tuple[str, str, np.ndarray]] = []
    for name in result.load:
        rows.append((name, TOTAL, result.load[name]))
        rows += [(name, c, result.by_category[name][c]) for c in sorted(result.by_category[name])]
    program = scenario.dr_program
    for name, window in sorted(result.estimates.items()):
        curve = np.full(DAY, np.nan)  # the utility estimates the program window only
        curve[program.start_minute:program.end_minute] = window
        rows.append((ESTIMATE, name, curve))
    if result.control_load is not None:
        rows.append((CONTROL, TOTAL, result.control_load))
    if result.pre_notice_kwh is not None and any(scenario.control_group_sizes()):
        rows += [(CONTROL, name, curve) for name, curve in covariate_curves(
            result.control_window_kw, result.control_pre_notice_kwh, result.pre_notice_kwh,
            program.start_minute, program.end_minute).items()]
    passes, series, curves = zip(*rows, strict=True) if rows else ((), (), ())
    n = len(curves)
    values = np.concatenate([np.asarray(c, dtype=np.float64).reshape(DAY) for c in curves])
    offsets = pa.array(np.arange(0, (n + 1) * DAY, DAY, dtype=np.int32))
    return pa.RecordBatch.from_arrays(
        [pa.array(np.full(n, chunk.index, dtype=np.int64)),
         pa.array(np.full(n, chunk.group, dtype=np.int32)),
         pa.array(list(passes), pa.string()), pa.array(list(series), pa.string()),
         pa.ListArray.from_arrays(offsets, pa.array(values, pa.float64()))],
        schema=LOADS)


def chunk_batch(result: ChunkResult, seconds: float, sums: ParticipantSums,
                 winners: dict[float, int] | None = None, compliant: int | None = None
                 ) -> pa.RecordBatch:
    """The chunk's one row of :data:`CHUNKS`."""
    chunk = result.chunk
    won = winners or {}
    new = None if sums.theta_new_sum is None else Decimal(sums.theta_new_sum)
    return pa.RecordBatch.from_pylist([{
        "chunk": chunk.index, "group": chunk.group, "households": result.households,
        "ev_households": result.ev_households, "peak_rss_bytes": peak_rss_bytes(),
        "seconds": seconds, "theta_o_sum": Decimal(sums.theta_o_sum),
        "theta_red_sum": Decimal(sums.theta_red_sum), "theta_new_sum": new,
        "u": [u for u, _ in sums.u_counts], "u_households": [n for _, n in sums.u_counts],
        "winners": [won.get(u, 0) for u, _ in sums.u_counts],
        "second_event_compliant": compliant}], schema=CHUNKS)


def participant_sums(rows: pd.DataFrame) -> ParticipantSums:
    """The chunks' rows of :data:`CHUNKS` merged into the participants' exact sums."""
    total = ParticipantSums()
    for row in rows.itertuples():
        new = None if pd.isna(row.theta_new_sum) else int(row.theta_new_sum)
        total += ParticipantSums(int(row.households), int(row.theta_o_sum),
                                 int(row.theta_red_sum),
                                 tuple(zip(map(float, row.u), map(int, row.u_households),
                                           strict=True)), new)
    return total


def _meter_batches(scenario: Scenario, plan: MonitoringPlan, result: ChunkResult,
                   features: tuple[MonitoringFeature, ...],
                   prepared: Mapping[str, tuple[Any, ...]]) -> dict[str, pa.RecordBatch]:
    """Listing 6.1 on the chunk's households for each monitored pass (``meter``,
    ``events``): the meter tier's work per test time (events processed, partial matches,
    user events, readings shed), the households counted by the test of their first flag
    and by their realised Eq. 6.2 compliance (:func:`outcome_counts`), the user events,
    and, on the expected pass, the replicas' flags per test time when γ is estimated from
    the expected response; and each active monitoring feature's rows of the passes
    (:func:`feature_batches`). The features give the meter tier its inputs
    (:func:`meter_inputs`) and may run it their own way
    (:meth:`~drsim.utility.features.MonitoringFeature.meter_runs`: load shedding runs
    each pass twice, under the bound and unshed, the twin under a name of its own)."""
    pop, chunk = result.population, result.chunk
    times = plan.test_times
    est = result.estimate_window_kw
    expected_acc = accumulated_kwh(est["expected"], plan.t_start, times)
    schedules = pass_schedules(scenario, chunk.group)
    at = FeatureChunk(plan, chunk.index, chunk.group, pop.ids, result.runs,
                      prepared=prepared,
                      values={f.name: f.chunk_values(plan, result) for f in features})
    at = replace(at, lost=lost_on_the_way(features, at))
    run = meter_runner(features, at)
    readings = reference_readings(plan, result)
    meter, events, parts = [], [], []
    for name in MONITORED:
        acc = accumulated_kwh(result.window_kw[name], plan.t_start, times)
        runs = run(name, acc, expected_acc, partial(meter_inputs, features, at,
                                                     readings=readings))
        flags = _replica_flags(plan, result) if name == "expected" else None
        noncompliant = _noncompliant(result, name)
        for r in runs:
            meter.append(meter_row(plan, chunk, r.label, r.result, noncompliant,
                                   replica_flags=flags if r.label == name else None))
            events.append(event_row(chunk, r.label, r.result))
        signals = tuple((r.announce, r.start, r.end) for r in (
            e.resolve(scenario.dr_program.notice_minutes, pop.follow_through)
            for e in schedules[name]))
        parts.append((replace(at, signals=signals, meter=runs[0].result,
                              meter_runs=tuple(runs), window={
                                  "load": result.window_kw[name],
                                  "baseline": est["baseline"], "expected": est["expected"]}),
                      name))
    return {"meter": pa.RecordBatch.from_pylist(meter, schema=METER),
            "events": pa.RecordBatch.from_pylist(events, schema=EVENTS),
            **feature_batches(features, parts)}


def meter_runner(features: tuple[MonitoringFeature, ...], chunk: FeatureChunk) -> MeterRuns:
    """How ``chunk``'s monitored passes run through the meter tier (Listing 6.1): the plain
    meter tier, wrapped by each monitoring feature's
    :meth:`~drsim.utility.features.MonitoringFeature.meter_runs` in turn (load shedding:
    OP and BL on the gateways)."""

    def plain(name: str, acc: np.ndarray, expected: np.ndarray,
              inputs: Callable[..., Mapping[str, Any]]) -> list[MeterRun]:
        return [MeterRun(name, meter_tier(chunk.plan, chunk.house_ids, chunk.group, acc,
                                          expected, **inputs()))]

    run: MeterRuns = plain
    for feature in features:
        run = feature.meter_runs(chunk, run)
    return run


def reference_readings(plan: MonitoringPlan, result: ChunkResult) -> ReferenceReadings:
    """The chunk's readings beside its called households' at the test times: the M&V
    method's cumulative B̂ of the called households and the control households'
    cumulative load (none without a control group), and each household's energy in the
    hour before the notice [kWh], which the reference of ``aggregate`` may read
    (:mod:`drsim.utility.aggregate_reference`)."""
    times = plan.test_times
    control, control_pre = result.control_window_kw, result.control_pre_notice_kwh
    if control is None:
        control, control_pre = np.zeros((0, plan.t_end - plan.t_start)), np.zeros(0)
    return ReferenceReadings(
        accumulated_kwh(result.estimate_window_kw["baseline"], plan.t_start, times),
        accumulated_kwh(control, plan.t_start, times), result.pre_notice_kwh, control_pre)


def meter_inputs(features: tuple[MonitoringFeature, ...], chunk: FeatureChunk,
                 plain: bool = False, readings: ReferenceReadings | None = None
                 ) -> dict[str, Any]:
    """The monitoring features' keyword arguments of the meter tier of ``chunk``
    (:meth:`~drsim.utility.features.MonitoringFeature.meter_inputs`); ``plain``: of a
    plain twin (BL), without the features that optimise the monitoring; ``readings``:
    the chunk's readings beside its called households' (:func:`reference_readings`)."""
    out: dict[str, Any] = {} if readings is None else {"readings": readings}
    for feature in features:
        if not (plain and feature.optimises):
            out.update(feature.meter_inputs(chunk))
    return out


def meter_row(plan: MonitoringPlan, chunk: Chunk, label: str, m: MeterResult,
              noncompliant: np.ndarray, **fields: Any) -> dict[str, Any]:
    """The row of :data:`METER` of one chunk's meter tier ``m`` on pass ``label``:
    ``noncompliant`` per household (Eq. 6.2, realised), and the other columns' values in
    ``fields`` (null when not given)."""
    times = plan.test_times
    n = len(m.first_flag)
    # readings a gateway did not report (load shedding): not those lost on the way
    dropped = 0 if m.lost is None or plan.max_missing >= 1 else m.lost
    shed = n - m.processed - dropped
    return {**dict.fromkeys(METER.names), **fields,
            "chunk": chunk.index, "group": chunk.group, "pass": label,
            "work": np.concatenate([m.processed, m.partial_matches, m.outputs, shed,
                                    m.fetches]),
            "outcomes": outcome_counts(times, m.first_flag, noncompliant).ravel()}


def event_row(chunk: Chunk, label: str, m: MeterResult) -> dict[str, Any]:
    """The row of :data:`EVENTS` of one chunk's meter tier ``m`` on pass ``label`` (with
    ``aggregate``, its readings' sums: :func:`drsim.utility.aggregate_method.meter_sums`,
    its reference's columns in ``sums``, column after column)."""
    extra = [c for c in m.events.columns if c not in _EVENT_COLUMNS]
    return {"chunk": chunk.index, "group": chunk.group, "pass": label,
            **{c: m.events[c].to_numpy() for c in ("time", "houseID", "accLoad", "delay",
                                                   "missing")},
            "sums": m.events[extra].to_numpy(np.float64).T.ravel() if extra else None}


def feature_batches(features: tuple[MonitoringFeature, ...],
                    parts: list[tuple[FeatureChunk, str]]) -> dict[str, pa.RecordBatch]:
    """Each monitoring feature's rows (:meth:`MonitoringFeature.chunk_rows`) of a chunk's
    monitored passes (``parts``: the chunk as the feature reads it, and the pass), under
    its output name (:func:`drsim.utility.features.feature_output`), the chunk, group and
    pass before its columns."""
    out = {}
    for feature in features:
        schema = feature_schema(feature)
        columns: dict[str, list[Any]] = {f.name: [] for f in schema}
        for chunk, name in parts:
            rows = feature.chunk_rows(chunk, name)
            n = len(rows[feature.schema.names[0]])
            for key, value in (("chunk", chunk.chunk), ("group", chunk.group), ("pass", name)):
                columns[key] += [value] * n
            for f in feature.schema:
                columns[f.name] += list(rows[f.name])
        out[feature_output(feature.name)] = pa.RecordBatch.from_pydict(columns, schema=schema)
    return out


def outcome_counts(test_times: np.ndarray, first_flag: np.ndarray, noncompliant: np.ndarray
                   ) -> np.ndarray:
    """(tests + 1, 2) households by the test of their first user event (row ``tests``:
    never flagged) and by their realised non-compliance (column 1: a reduction below the
    household's goal, Eq. 6.2); what household precision and recall need
    (:func:`drsim.pipeline.evaluation.precision_recall`) without a row per household.

    Examples
    --------
    >>> outcome_counts(np.array([10, 15]), np.array([15, -1, -1]),
    ...                np.array([True, True, False])).tolist()
    [[0, 0], [0, 1], [1, 1]]
    """
    k = len(test_times)
    flagged = first_flag != NOT_LATCHED
    test = np.where(flagged, np.searchsorted(test_times, first_flag), k)
    counts = np.zeros((k + 1, 2), dtype=np.int64)
    np.add.at(counts, (test, np.asarray(noncompliant, dtype=np.int64)), 1)
    return counts


# --------------------------------------------------------------------------- tiers
def user_events(rows: pd.DataFrame) -> pd.DataFrame:
    """The user events held in rows of :data:`EVENTS` as one frame (pass, time, houseID,
    groupID, accLoad, delay [min]: when after its test time it was decided, missing: the
    lost test slots in its run), in (pass, time, houseID) order; the readings' sums of
    ``aggregate`` (houseID −1) are not user events."""
    if "sums" in rows:
        rows = rows[rows["sums"].isna()]
    counts = rows["time"].map(len).to_numpy(np.int64)
    frame = pd.DataFrame({
        "pass": np.repeat(rows["pass"].to_numpy(object), counts),
        "time": np.concatenate([np.asarray(x, np.int64) for x in rows["time"]] or [[]]),
        "houseID": np.concatenate([np.asarray(x, np.int64) for x in rows["houseID"]] or [[]]),
        "groupID": np.repeat(rows["group"].to_numpy(np.int64), counts),
        **{c: np.concatenate([np.asarray(x, np.float64) for x in rows[c]] or [[]])
           for c in ("accLoad", "delay")},
        "missing": np.concatenate([np.asarray(x, np.int64) for x in rows["missing"]]
                                  or [[]])})
    frame = frame.astype({"time": np.int64, "houseID": np.int64, "accLoad": np.float64,
                          "delay": np.float64, "missing": np.int64})
    return frame.sort_values(["pass", "time", "houseID"], kind="stable", ignore_index=True)


def pass_group_leader(plan: MonitoringPlan, sizes: tuple[int, ...], thresholds: Thresholds,
                      inputs: TierInputs, rows: pd.DataFrame) -> pd.DataFrame:
    """:func:`group_leader` of one group and pass with the features' inputs of that pass
    (:meth:`TierInputs.at`)."""
    return group_leader(plan, sizes, thresholds, rows, **inputs.at(str(rows["pass"].iloc[0])))


def pass_utility(plan: MonitoringPlan, inputs: TierInputs, rows: pd.DataFrame) -> pd.DataFrame:
    """:func:`utility` of one pass with the features' inputs of that pass
    (:meth:`TierInputs.at`)."""
    return utility(plan, rows, **inputs.at(str(rows["pass"].iloc[0])))


def _tier_frame(rows: list[tuple], devices: list[tuple] | None = None) -> pd.DataFrame:
    """Rows of :data:`TIERS`: ``rows`` without a device, then ``devices``' rows
    (pass, group, kind, figures): of kind ``device`` its figures, of kind ``sizing`` its
    cost per unit and bound (NaN: unbounded)."""
    out = pd.DataFrame(rows, columns=TIERS.names[:-1])
    out["device"] = None
    if devices:
        more = pd.DataFrame([(name, group, kind, 0, 0.0, 0, 0, figures)
                             for name, group, kind, figures in devices], columns=TIERS.names)
        out = pd.concat([out, more], ignore_index=True) if len(out) else more
    return out


def _device_rows(name: str, group: int, ran: Any) -> list[tuple]:
    """A tier's device rows (:func:`_tier_frame`) of its run ``ran``
    (:class:`drsim.utility.tier_shedding.TierRun`): its figures and its sizing."""
    sizing = ran.sizing
    bound = float("nan") if sizing.bound is None else sizing.bound[0]
    return [(name, group, "device", ran.stats.as_list()),
            (name, group, "sizing", [sizing.unit_cost[0], bound])]


def group_leader(plan: MonitoringPlan, sizes: tuple[int, ...], thresholds: Thresholds,
                 rows: pd.DataFrame,
                 alert_delays: Callable[[pd.DataFrame, int], np.ndarray] | None = None,
                 shed: TierShedding | None = None,
                 gamma: Thresholds | None = None,
                 carry: LeaderCarry | None = None) -> pd.DataFrame:
    """Listing 6.2 at the leader of one group for one pass, over its chunks' user events
    (rows of :data:`EVENTS`); its alerts, group events and work per tick (:data:`TIERS`).
    A group with no user event sends nothing (but its forecast, with ``shed``).
    ``alert_delays(events, group)``: the whole
    minutes after each test time until the leader knows its alert (with remote data,
    :class:`drsim.utility.fetching_feature.AlertDelays`: the leaders' γ fetches and the
    user events' own delays); none: at once. ``shed``: the leader runs on its modelled
    device and may shed user events (:class:`drsim.utility.tier_shedding.TierShedding`);
    it adds its device's figures and sizing, the user events shed per test time and its
    latch forecast. ``gamma``: the γ its fetches served (with the utility's updates of the
    profiles, OP); none: ``thresholds``. A monitoring method whose leader tests the group's
    summed readings (``aggregate``) runs its own test over them
    (:func:`aggregate_leader`). ``carry``: a stream's runs of the leader, kept between
    micro-batches and final up to a tick (:class:`drsim.utility.leader_carry.LeaderCarry`:
    the rows of later ticks are not its result)."""
    if plan.method.group_test:
        return aggregate_leader(plan, rows)
    events = user_events(rows)
    if not len(events) and shed is None:
        return pd.DataFrame({f.name: pd.Series(dtype=f.type.to_pandas_dtype())
                             for f in TIERS})
    name, group = str(rows["pass"].iloc[0]), int(rows["group"].iloc[0])
    gamma_table = (thresholds if gamma is None else gamma).table(group)
    # the leader's forecast is the previous day's: sent whether or not the group flags
    out = [] if shed is None else [(name, group, "forecast", shed.forecast(
        plan, group, sizes[group], gamma_table), 0.0, 0, 0)]
    if not len(events):
        return _tier_frame(out)
    shift = None if alert_delays is None else alert_delays(events, group)
    devices = []
    if shed is None:
        g = group_tier(plan, group, sizes[group], events, gamma_table, shift,
                       None if carry is None else carry.unshed)
    else:
        ran = shed.group(plan, name, group, sizes[group], events, gamma_table, shift, carry)
        g = ran.result
        devices += _device_rows(name, group, ran)
        times, dropped = np.unique(events["time"].to_numpy(np.int64)[~ran.keep],
                                   return_counts=True)
        out += [(name, group, "user_events_shed", int(t), 0.0, int(n), 0)
                for t, n in zip(times, dropped, strict=True)]
    out += [(name, group, "alert", int(t), float(v), 0, 0)
            for t, v in zip(g.alerts["time"], g.alerts["sumAccLoad"], strict=True)]
    out += [(name, group, "event", int(t), float(v), 0, 0)
            for t, v in zip(g.events["time"], g.events["sumAccLoad"], strict=True)]
    out += [(name, group, "work", int(t), 0.0, int(p), int(m))
            for t, p, m in zip(plan.ticks, g.processed, g.partial_matches, strict=True)
            if p or m]
    return _tier_frame(out, devices)


def aggregate_leader(plan: MonitoringPlan, rows: pd.DataFrame) -> pd.DataFrame:
    """The CUSUM of ``aggregate`` at one group's leader for one pass, over its chunks' sums
    (rows of :data:`EVENTS`, :func:`drsim.utility.aggregate_tier.aggregate_tier`): alerts,
    group events, work per tick and the statistic if the utility reads it (:data:`TIERS`)."""
    name, group = str(rows["pass"].iloc[0]), int(rows["group"].iloc[0])
    stat = group_statistic(plan, plan.method, blocks_frame(
        plan.method.reference.columns, rows["time"], rows["accLoad"], rows["sums"]), group)
    g = statistic_tier(plan, group, stat)
    sent = [(kind, t, v) for kind, frame in (("alert", g.alerts), ("event", g.events))
            for t, v in zip(frame["time"], frame["sumAccLoad"], strict=True)]
    sent += leader_rows(stat) if plan.method.utility_rule().reads_statistics else []
    out = [(name, group, kind, int(t), float(v), 0, 0) for kind, t, v in sent]
    out += [(name, group, "work", int(t), 0.0, int(p), int(m))
            for t, p, m in zip(plan.ticks, g.processed, g.partial_matches, strict=True)
            if p or m]
    return _tier_frame(out)


def utility(plan: MonitoringPlan, rows: pd.DataFrame, name: str | None = None,
            shed: TierShedding | None = None, carry: LeaderCarry | None = None
            ) -> pd.DataFrame:
    """Listing 6.3 for one pass (``name``, default the rows') over its group leaders'
    output (rows of :data:`TIERS`): the utility's alerts, work per tick and its prediction
    ``t_nc`` (group :data:`UTILITY`). ``shed``: the utility runs on its modelled device
    and may shed group events (:class:`drsim.utility.tier_shedding.TierShedding`, with
    the leaders' forecasts); it adds its device's figures and one row per group event
    shed (under the event's group). ``carry``: with ``shed``, a stream's runs of the
    utility on its device, kept between micro-batches and final up to a tick
    (:meth:`drsim.utility.leader_carry.LeaderCarry.at_utility`: the rows of later ticks
    are not its result)."""
    name = str(rows["pass"].iloc[0]) if name is None else name
    ev = rows[rows["kind"] == "event"].sort_values(["group", "time"], kind="stable")
    first = ev.groupby("group").first()
    latches = {int(g): int(t) for g, t in first["time"].items()}
    loads = {int(g): float(v) for g, v in first["load"].items()}
    devices, out = [], []
    if shed is None:
        u = run_utility(plan, latches, loads, rows)
    else:
        told = rows[rows["kind"] == "forecast"]
        forecast = dict(zip(told["group"].astype(int), told["time"].astype(int),
                            strict=True))
        ran = shed.utility(plan, name, latches, loads,
                           [forecast.get(g, NOT_LATCHED) for g in range(plan.n_groups)],
                           carry)
        u = ran.result
        devices += _device_rows(name, UTILITY, ran)
        dropped = utility_stream(plan, latches, loads)[~ran.keep]
        out += [(name, int(g), "group_event_shed", int(t), 0.0, 1, 0)
                for g, t in zip(dropped["groupID"], dropped["time"], strict=True)]
    out += [(name, UTILITY, "alert", int(t), float(v), 0, 0)
            for t, v in zip(u.alerts["time"], u.alerts["load"], strict=True)]
    out += [(name, UTILITY, "work", int(t), 0.0, int(p), int(m))
            for t, p, m in zip(plan.ticks, u.processed, u.partial_matches, strict=True)
            if p or m]
    out.append((name, UTILITY, "t_nc", int(u.t_nc), 0.0, 0, 0))
    return _tier_frame(out, devices)
