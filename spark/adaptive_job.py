"""The adaptive DR run's Spark stages (DESIGN.md, "Data flow of one adaptive run").

1. **Passes and meter tier** (``spark.range(n_chunks) → mapInArrow``): each task
   simulates its chunks' baseline, expected and traditional passes, and runs every
   household's meter query (Listing 6.1, :func:`drsim.monitoring.meter_tier`) on the
   expected and traditional passes, right after the chunk is simulated. Only per-minute
   sums, user events, per-household flags and counters leave the task.
2. **Group tier**: user events shuffled by (pass, groupID) →
   ``groupBy.applyInPandas`` → Listing 6.2 at each group leader.
3. **Utility tier**: the group tier's output in one partition (``repartition(1) →
   mapInPandas``) → Listing 6.3 → ``t_nc`` per pass.
4. **Adaptive pass** (after the driver planned the second event): the chunks again, with
   DR1 at θ_red and DR2 at θ_new (Eq. 6.8).

Stage 1's output is persisted, so stages 2-3 read it without simulating again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from drsim.dr import DREvent
from drsim.incentive import IncentiveResult, lottery_winners
from drsim.monitoring import NOT_LATCHED, MonitoringPlan
from drsim.passes import Chunk, ChunkResult, group_drop, pass_schedules, plan_chunks
from drsim.scenario import ExpectedShare, Scenario
from drsim.threshold import Thresholds
from spark.simulate_job import (
    ROW_SCHEMA,
    TASKS_PER_CORE,
    SimulationResult,
    _aggregate,
    _peak_rss_bytes,
    collect_watched,
    load_batch,
)

MONITORED = ("expected", "traditional")  # passes the tiers run on
PASSES_A = ("baseline", "expected", "traditional")

_EXTRA_TYPES = {  # stage-1 columns beside ROW_SCHEMA: null where a row has no such value
    "kind": pa.string(), "ev_time": pa.list_(pa.int64()), "ev_house": pa.list_(pa.int64()),
    "ev_acc": pa.list_(pa.float64()), "hh_id": pa.list_(pa.int64()),
    "hh_flag": pa.list_(pa.int64()), "hh_reduction": pa.list_(pa.float64()),
    "hh_goal": pa.list_(pa.float64()), "work": pa.list_(pa.int64()),
    "replica_flags": pa.list_(pa.int64()), "lottery_u": pa.list_(pa.float64()),
    "lottery_winners": pa.list_(pa.int64()), "second_event_compliant": pa.int64(),
    "info": pa.string(),
}
_EXTRA = list(_EXTRA_TYPES)
_SQL_TYPES = {pa.string(): "string", pa.int64(): "long", pa.float64(): "double"}
STAGE1_SCHEMA = ROW_SCHEMA + "".join(
    f", {name} " + (f"array<{_SQL_TYPES[t.value_type]}>" if pa.types.is_list(t)
                    else _SQL_TYPES[t]) for name, t in _EXTRA_TYPES.items())
TIER_SCHEMA = ("pass string, group int, kind string, time long, load double, "
               "processed long, partial_matches long")

Progress = Callable[[int, int], None]


# --------------------------------------------------------------------------- executor side
def _with_kind(batch: pa.RecordBatch, kind: str, **values: Any) -> pa.RecordBatch:
    """A load batch with the stage-1 columns: ``kind``, the ``values`` given (one per row),
    the rest null."""
    n = batch.num_rows
    cols = [pa.array([values[name]] * n, typ) if name in values
            else pa.nulls(n, typ) for name, typ in _EXTRA_TYPES.items()]
    cols[0] = pa.array([kind] * n, pa.string())
    return pa.RecordBatch.from_arrays([*batch.columns, *cols],
                                      names=[*batch.schema.names, *_EXTRA])


def _meter_rows(scenario: Scenario, plan: MonitoringPlan, result: ChunkResult
                ) -> list[dict]:
    """Per monitored pass: the chunk's user events, the meter tier's work per test time,
    and per household its first flag, realised reduction and goal (Eq. 6.2); on the
    expected pass's row, the replicas' flags per test time when γ_user is estimated from
    the expected response (drsim.threshold)."""
    from drsim.monitoring import accumulated_kwh, meter_tier
    from drsim.threshold import replica_flags

    pop, chunk = result.population, result.chunk
    lo = plan.t_start
    times = plan.test_times
    expected_acc = accumulated_kwh(result.estimate_window_kw["expected"], lo, times)
    base_kw = result.window_kw["baseline"]
    goal = (result.estimate_window_kw["baseline"]
            - result.estimate_window_kw["expected"]).sum(axis=1) / 60.0
    replicas = plan.gamma_user.replicas if isinstance(plan.gamma_user, ExpectedShare) \
        else None
    rows = []
    for name in MONITORED:
        acc = accumulated_kwh(result.window_kw[name], lo, times)
        m = meter_tier(plan, pop.ids, chunk.group, acc, expected_acc)
        rows.append({
            "pass": name, "kind": "meter",
            "ev_time": m.events["time"].to_numpy(), "ev_house": m.events["houseID"].to_numpy(),
            "ev_acc": m.events["accLoad"].to_numpy(),
            "hh_id": pop.ids, "hh_flag": m.first_flag,
            "hh_reduction": (base_kw - result.window_kw[name]).sum(axis=1) / 60.0,
            "hh_goal": goal,
            "work": np.concatenate([m.processed, m.partial_matches, m.outputs]),
            "replica_flags": None if replicas is None or name != "expected" else
            replica_flags(plan, pop, result.simulator, chunk.group, result.estimate_exact,
                          replicas),
        })
    return rows


def _participants(scenario: Scenario, result: ChunkResult) -> dict:
    """The chunk's participant sums for Eq. 6.5-6.8 (exact integers, see incentive)."""
    from drsim.incentive import ParticipantSums, household_mappings

    pop = result.population
    theta_o = pop.follow_through
    s = ParticipantSums.of(theta_o, theta_o * (1.0 - pop.follow_through_drop),
                           household_mappings(scenario, pop.ids))
    return {"count": s.count, "theta_o_sum": s.theta_o_sum, "theta_red_sum": s.theta_red_sum,
            "u_counts": [list(x) for x in s.u_counts]}


def _stage1_batches(scenario: Scenario, plan: MonitoringPlan, chunks: tuple[Chunk, ...],
                    batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    from drsim.passes import simulate_chunk

    for batch in batches:
        for index in batch.column("id").to_numpy():
            chunk = chunks[int(index)]
            start = time.perf_counter()
            result = simulate_chunk(scenario, chunk, households=True)
            meter = _meter_rows(scenario, plan, result)
            seconds = time.perf_counter() - start
            yield _with_kind(load_batch(scenario, result, seconds), "load")
            info = json.dumps({"participants": _participants(scenario, result)})
            yield _meter_batch(chunk, meter, info)


def _meter_batch(chunk: Chunk, rows: list[dict], info: str) -> pa.RecordBatch:
    n = len(rows)
    base = [pa.array([chunk.index] * n, pa.int64()), pa.array([chunk.group] * n, pa.int32()),
            pa.array([r["pass"] for r in rows], pa.string()),
            pa.array(["meter"] * n, pa.string()), pa.nulls(n, pa.list_(pa.float64())),
            pa.array([chunk.count] * n, pa.int64()), pa.nulls(n, pa.int64()),
            pa.array([_peak_rss_bytes()] * n, pa.int64()), pa.nulls(n, pa.float64())]
    extra = []
    for name, typ in _EXTRA_TYPES.items():
        if name == "info":
            extra.append(pa.array([info] * n, typ))
        elif pa.types.is_list(typ):
            extra.append(pa.array([None if r.get(name) is None else np.asarray(r[name])
                                   for r in rows], typ))
        else:
            extra.append(pa.array([r.get(name) for r in rows], typ))
    names = ["chunk", "group", "pass", "series", "kw_micro", "households", "ev_households",
             "peak_rss_bytes", "seconds", *_EXTRA]
    return pa.RecordBatch.from_arrays([*base, *extra], names=names)


def _group_tier(plan: MonitoringPlan, sizes: tuple[int, ...], thresholds: Thresholds,
                events: pd.DataFrame) -> pd.DataFrame:
    """applyInPandas body: one group leader of one pass (Listing 6.2)."""
    from drsim.monitoring import group_tier

    name, group = str(events["pass"].iloc[0]), int(events["group"].iloc[0])
    events = events.sort_values(["time", "houseID"], kind="stable")
    g = group_tier(plan, group, sizes[group], events, thresholds.table(group))
    rows = [(name, group, "alert", int(t), float(v), 0, 0)
            for t, v in zip(g.alerts["time"], g.alerts["sumAccLoad"], strict=True)]
    rows += [(name, group, "event", int(t), float(v), 0, 0)
             for t, v in zip(g.events["time"], g.events["sumAccLoad"], strict=True)]
    rows += [(name, group, "work", int(t), 0.0, int(p), int(m))
             for t, p, m in zip(plan.ticks, g.processed, g.partial_matches, strict=True)
             if p or m]
    return pd.DataFrame(rows, columns=["pass", "group", "kind", "time", "load", "processed",
                                       "partial_matches"])


def _utility_tier(plan: MonitoringPlan, frames: Iterator[pd.DataFrame]
                  ) -> Iterator[pd.DataFrame]:
    """mapInPandas body in one partition: pass the group tier's rows through and add the
    utility's (group -1) per pass (Listing 6.3)."""
    from drsim.monitoring import utility_tier

    frames = list(frames)
    yield from frames  # as they came: a concatenated text column is several Arrow chunks
    rows = pd.concat(frames, ignore_index=True)
    for name in MONITORED:
        ev = rows[(rows["pass"] == name) & (rows["kind"] == "event")]
        ev = ev.sort_values(["group", "time"], kind="stable")
        first = ev.groupby("group").first()
        latches = {int(g): int(t) for g, t in first["time"].items()}
        loads = {int(g): float(v) for g, v in first["load"].items()}
        u = utility_tier(plan, latches, loads)
        out = [(name, -1, "alert", int(t), float(v), 0, 0)
               for t, v in zip(u.alerts["time"], u.alerts["load"], strict=True)]
        out += [(name, -1, "work", int(t), 0.0, int(p), int(m))
                for t, p, m in zip(plan.ticks, u.processed, u.partial_matches, strict=True)
                if p or m]
        out.append((name, -1, "t_nc", int(u.t_nc), 0.0, 0, 0))
        yield pd.DataFrame(out, columns=rows.columns)


def _adaptive_batches(scenario: Scenario, chunks: tuple[Chunk, ...], second: tuple,
                      incentive: IncentiveResult, batches: Iterator[pa.RecordBatch]
                      ) -> Iterator[pa.RecordBatch]:
    """Stage 4: the adaptive pass of each chunk (DR1 at θ_red, DR2 at θ_new of Eq. 6.8 for
    the incentive the utility planned), and the lottery of Eq. 6.5 among the households
    compliant in the second event."""
    from drsim.baseline import estimate
    from drsim.incentive import ParticipantSums, household_mappings, second_event_compliant
    from drsim.passes import simulate_chunk

    announce, start, end = second
    lo = scenario.dr_program.start_minute  # the window_kw of a chunk starts here
    for batch in batches:
        for index in batch.column("id").to_numpy():
            chunk = chunks[int(index)]
            t0 = time.perf_counter()
            schedules = pass_schedules(scenario, chunk.group)
            drop = group_drop(scenario, chunk.group)

            def theta_new(theta_o, drop=drop):
                return incentive.new_follow_through(theta_o, theta_o * (1.0 - drop))

            dr2 = DREvent(start, end, announce, follow_through=theta_new)
            result = simulate_chunk(scenario, chunk, households=True,
                                    schedules={"adaptive": [*schedules["traditional"], dr2]})
            pop = result.population
            theta_o = pop.follow_through
            u = household_mappings(scenario, pop.ids)
            sums = ParticipantSums.of(theta_o, theta_o * (1.0 - drop), u, theta_new(theta_o))
            est = estimate(pop, start, end, result.simulator)
            compliant = second_event_compliant(est.baseline_kw, est.expected_kw,
                                               result.window_kw["adaptive"][:, start - lo:])
            winners = incentive.winner_counts(
                u, lottery_winners(scenario.seed, pop.ids, incentive.p_inc, compliant))
            info = json.dumps({"theta_new_sum": sums.theta_new_sum})
            yield _with_kind(load_batch(scenario, result, time.perf_counter() - t0), "load",
                             info=info, lottery_u=sorted(winners),
                             lottery_winners=[winners[k] for k in sorted(winners)],
                             second_event_compliant=int(compliant.sum()))


# --------------------------------------------------------------------------- driver side
@dataclass
class MonitoredPasses:
    """Stages 1-3: the passes' loads and everything the three tiers produced."""

    loads: SimulationResult
    user_events: pd.DataFrame  # pass, time, houseID, groupID, accLoad
    households: pd.DataFrame  # pass, houseID, group, first_flag, reduction_kwh, goal_kwh
    meter_work: dict[str, np.ndarray]  # pass -> (n_groups, 3, n_tests)
    thresholds: Thresholds  # γ[groupID, time] of Listing 6.2
    tier_rows: pd.DataFrame  # TIER_SCHEMA rows of the group and utility tiers
    participants: list[dict]
    timings: dict[str, float]


def run_monitored(spark: SparkSession, scenario: Scenario, plan: MonitoringPlan,
                  chunk_size: int | None = None, progress: Progress | None = None
                  ) -> MonitoredPasses:
    """Stages 1-3 (module doc)."""
    t0 = time.perf_counter()
    chunks = plan_chunks(scenario, chunk_size)
    sc = spark.sparkContext
    partitions = max(1, min(len(chunks), sc.defaultParallelism * TASKS_PER_CORE))
    stage1 = spark.range(len(chunks), numPartitions=partitions).mapInArrow(
        partial(_stage1_batches, scenario, plan, tuple(chunks)), STAGE1_SCHEMA).persist()
    sizes = np.array([hi - lo for lo, hi in scenario.group_ranges()], dtype=np.int64)
    try:
        table, tasks = collect_watched(spark, stage1.drop("ev_time", "ev_house", "ev_acc"),
                                    "passes", len(chunks), partitions, progress)
        t1 = time.perf_counter()
        meter = table.filter(pc.equal(table.column("kind"), "meter")).to_pandas()
        meter = meter.sort_values(["chunk", "pass"], kind="stable")
        thresholds = Thresholds.of(plan, sizes, _replica_flags(meter, len(sizes)))
        events = stage1.filter(F.col("kind") == "meter").select(
            F.col("pass"), F.col("group"),
            F.inline(F.arrays_zip(F.col("ev_time").alias("time"),
                                  F.col("ev_house").alias("houseID"),
                                  F.col("ev_acc").alias("accLoad"))))
        group_sizes = tuple(sizes.tolist())

        def group_leader(frame: pd.DataFrame) -> pd.DataFrame:
            return _group_tier(plan, group_sizes, thresholds, frame)

        def utility(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            return _utility_tier(plan, frames)

        tiers = events.groupBy("pass", "group").applyInPandas(group_leader, TIER_SCHEMA)
        tiers = tiers.repartition(1).mapInPandas(utility, TIER_SCHEMA)
        tier_rows = tiers.toPandas()
        user_events = events.toPandas()
    finally:
        stage1.unpersist()
    t2 = time.perf_counter()

    loads_table = table.filter(pc.equal(table.column("kind"), "load"))
    loads = _aggregate(scenario, chunks, loads_table.select(
        [n for n in loads_table.schema.names if n in ROW_SCHEMA_NAMES]), PASSES_A)
    loads.master, loads.default_parallelism = sc.master, sc.defaultParallelism
    loads.partitions, loads.tasks = partitions, tasks
    k = len(plan.test_times)
    n_groups = len(scenario.groups)
    meter_work = {name: np.zeros((n_groups, 3, k), dtype=np.int64) for name in MONITORED}
    hh = []
    participants = []
    for row in meter.to_dict("records"):
        name = row["pass"]
        meter_work[name][row["group"]] += np.asarray(row["work"], np.int64).reshape(3, k)
        hh.append(pd.DataFrame({"pass": name, "houseID": row["hh_id"], "group": row["group"],
                                "first_flag": row["hh_flag"],
                                "reduction_kwh": row["hh_reduction"],
                                "goal_kwh": row["hh_goal"]}))
        if name == MONITORED[0]:
            participants.append(json.loads(row["info"])["participants"])
    user_events = user_events.rename(columns={"group": "groupID"})
    user_events = user_events.sort_values(["pass", "time", "houseID"], kind="stable",
                                          ignore_index=True)
    tier_rows = tier_rows.sort_values(["pass", "group", "kind", "time"], kind="stable",
                                      ignore_index=True)
    return MonitoredPasses(loads, user_events[["pass", "time", "houseID", "groupID",
                                                "accLoad"]],
                           pd.concat(hh, ignore_index=True), meter_work, thresholds,
                           tier_rows, participants,
                           {"passes_and_meter_tier_seconds": t1 - t0,
                            "group_and_utility_tiers_seconds": t2 - t1})


def _replica_flags(meter: pd.DataFrame, n_groups: int) -> np.ndarray | None:
    """(groups, tests) replica flags summed over each group's chunks (None without)."""
    rows = meter[meter["replica_flags"].notna()]
    if not len(rows):
        return None
    flags = np.stack([np.asarray(x, np.int64) for x in rows["replica_flags"]])
    out = np.zeros((n_groups, flags.shape[1]), dtype=np.int64)
    np.add.at(out, rows["group"].to_numpy(np.int64), flags)
    return out


ROW_SCHEMA_NAMES = ("chunk", "group", "pass", "series", "kw_micro", "households",
                    "ev_households", "peak_rss_bytes", "seconds")


@dataclass
class AdaptivePass:
    """Stage 4: the adaptive pass's loads, Σθ_new (fixed point, drsim.incentive
    .ParticipantSums), the lottery winners per mapping u and the households compliant in
    the second event."""

    loads: SimulationResult
    theta_new_sum: int
    winners: dict[float, int]
    compliant: int


def run_adaptive(spark: SparkSession, scenario: Scenario, second: tuple[int, int, int],
                 incentive: IncentiveResult, chunk_size: int | None = None,
                 progress: Progress | None = None) -> AdaptivePass:
    """Stage 4 (module doc)."""
    chunks = plan_chunks(scenario, chunk_size)
    sc = spark.sparkContext
    partitions = max(1, min(len(chunks), sc.defaultParallelism * TASKS_PER_CORE))
    frame = spark.range(len(chunks), numPartitions=partitions).mapInArrow(
        partial(_adaptive_batches, scenario, tuple(chunks), second, incentive), STAGE1_SCHEMA)
    table, tasks = collect_watched(spark, frame, "adaptive", len(chunks), partitions, progress)
    first = np.unique(table.column("chunk").to_numpy(), return_index=True)[1]
    per_chunk = table.take(first).to_pydict()
    theta_new_sum = sum(json.loads(info)["theta_new_sum"] for info in per_chunk["info"])
    winners: dict[float, int] = {}
    for us, counts in zip(per_chunk["lottery_u"], per_chunk["lottery_winners"], strict=True):
        for u, n in zip(us, counts, strict=True):
            winners[u] = winners.get(u, 0) + n
    result = _aggregate(scenario, chunks, table.select(list(ROW_SCHEMA_NAMES)), ("adaptive",))
    result.tasks, result.partitions = tasks, partitions
    return AdaptivePass(result, theta_new_sum, winners,
                        int(sum(per_chunk["second_event_compliant"])))


__all__ = ["run_monitored", "run_adaptive", "MonitoredPasses", "AdaptivePass", "MONITORED",
           "NOT_LATCHED"]
