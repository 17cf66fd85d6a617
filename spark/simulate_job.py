"""The simulation passes as one Spark job over chunks of households.

``spark.range(n_chunks)`` → ``mapInArrow``: each task simulates its chunks with
:func:`drsim.passes.simulate_chunk` and sends back only per-minute sums, one row per
(chunk, pass, series) where a series is the chunk's "total" load or one category's. The
driver sorts the rows by chunk and sums them with numpy. Loads travel as whole µkW in
float64, so every sum is exact and the figures do not depend on chunking or partitioning.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from drsim.passes import PASSES, Chunk, ChunkResult, plan_chunks
from drsim.scenario import Scenario

MINUTES = 1440
MICRO = 1_000_000  # kW → whole µkW (drsim.sim.MICRO)
TOTAL = "total"
ESTIMATE = "estimate"  # pass name of the utility's M&V estimates (series "baseline", "expected")
TASKS_PER_CORE = 4  # partitions per core: load balance and progress granularity
POLL_SECONDS = 0.25

ROW_SCHEMA = (
    "chunk long, group int, pass string, series string, kw_micro array<double>, "
    "households long, ev_households long, peak_rss_bytes long, seconds double"
)

Progress = Callable[[int, int], None]  # (chunks done, chunks in all)


@dataclass
class SimulationResult:
    """The passes' load curves of a whole scenario and how the job ran."""

    scenario: Scenario
    chunks: list[Chunk]
    system_kw: dict[str, np.ndarray]  # pass -> (1440,)
    group_kw: dict[str, np.ndarray]  # pass -> (n_groups, 1440)
    category_kw: dict[str, dict[str, np.ndarray]]  # pass -> category -> (1440,)
    estimate_kw: dict[str, np.ndarray]  # "baseline" (B), "expected" (P̂): NaN outside the window
    estimate_group_kw: dict[str, np.ndarray]  # the same per group: (n_groups, 1440)
    households: int
    ev_households: int
    master: str
    default_parallelism: int
    partitions: int
    tasks: int
    peak_task_rss_bytes: int
    chunk_seconds: np.ndarray  # (n_chunks,) wall seconds of each chunk's simulation
    timings: dict[str, float] = field(default_factory=dict)  # stage -> wall seconds

    @property
    def passes(self) -> list[str]:
        return list(self.system_kw)

    @property
    def group_names(self) -> list[str]:
        return [g.name for g in self.scenario.groups]


# --------------------------------------------------------------------------- executor side
def _peak_rss_bytes() -> int:
    import resource
    import sys

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)  # Linux reports KiB


def _chunk_rows(scenario: Scenario, chunk: Chunk) -> pa.RecordBatch:
    """Simulate one chunk; one row per (pass, series), loads in whole µkW."""
    from drsim.passes import simulate_chunk

    start = time.perf_counter()
    result = simulate_chunk(scenario, chunk)
    return load_batch(scenario, result, time.perf_counter() - start)


def load_batch(scenario: Scenario, result: ChunkResult, seconds: float) -> pa.RecordBatch:
    """The rows (ROW_SCHEMA) of one simulated chunk: one per (pass, series), loads in
    whole µkW, and the utility's estimates when the result has them."""
    chunk = result.chunk
    passes, series, curves = [], [], []
    for name in result.load:
        passes.append(name)
        series.append(TOTAL)
        curves.append(result.load[name])
        for category in sorted(result.by_category[name]):
            passes.append(name)
            series.append(category)
            curves.append(result.by_category[name][category])
    program = scenario.dr_program
    for name, window in sorted(result.estimates.items()):
        curve = np.full(MINUTES, np.nan)  # the utility estimates the program window only
        curve[program.start_minute : program.end_minute] = window
        passes.append(ESTIMATE)
        series.append(name)
        curves.append(curve)
    n = len(curves)
    values = np.concatenate([np.asarray(c, dtype=np.float64).reshape(MINUTES) for c in curves])
    offsets = pa.array(np.arange(0, (n + 1) * MINUTES, MINUTES, dtype=np.int32))
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(n, chunk.index, dtype=np.int64)),
            pa.array(np.full(n, chunk.group, dtype=np.int32)),
            pa.array(passes, pa.string()),
            pa.array(series, pa.string()),
            pa.ListArray.from_arrays(offsets, pa.array(values, pa.float64())),
            pa.array(np.full(n, result.households, dtype=np.int64)),
            pa.array(np.full(n, result.ev_households, dtype=np.int64)),
            pa.array(np.full(n, _peak_rss_bytes(), dtype=np.int64)),
            pa.array(np.full(n, seconds, dtype=np.float64)),
        ],
        names=["chunk", "group", "pass", "series", "kw_micro", "households", "ev_households",
               "peak_rss_bytes", "seconds"],
    )


def _simulate_batches(scenario: Scenario, chunks: tuple[Chunk, ...],
                      batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for index in batch.column("id").to_numpy():
            yield _chunk_rows(scenario, chunks[int(index)])


# --------------------------------------------------------------------------- driver side
def run_simulation(spark: SparkSession, scenario: Scenario, chunk_size: int | None = None,
                   progress: Progress | None = None) -> SimulationResult:
    """Simulate every pass of ``scenario`` on Spark and sum the chunks on the driver.

    ``progress(done, total)`` is called from a watcher thread as chunks finish (at task
    granularity: a task's chunks count when the task ends).
    """
    t0 = time.perf_counter()
    chunks = plan_chunks(scenario, chunk_size)
    sc = spark.sparkContext
    parallelism = sc.defaultParallelism
    partitions = max(1, min(len(chunks), parallelism * TASKS_PER_CORE))
    frame = spark.range(len(chunks), numPartitions=partitions).mapInArrow(
        partial(_simulate_batches, scenario, tuple(chunks)), ROW_SCHEMA)

    table, tasks = collect_watched(spark, frame, f"simulate {scenario.name}", len(chunks),
                                   partitions, progress)
    t1 = time.perf_counter()

    result = _aggregate(scenario, chunks, table)
    result.master = sc.master
    result.default_parallelism = parallelism
    result.partitions = partitions
    result.tasks = tasks
    result.timings.update({"simulate_seconds": t1 - t0,
                           "aggregate_seconds": time.perf_counter() - t1})
    return result


def _aggregate(scenario: Scenario, chunks: list[Chunk], table: pa.Table,
               passes: tuple[str, ...] = PASSES) -> SimulationResult:
    """Sum the chunks' rows per (pass, group) and per (pass, category), in chunk order."""
    table = table.sort_by([("chunk", "ascending"), ("pass", "ascending"),
                           ("series", "ascending")])
    chunk = table.column("chunk").to_numpy()
    group = table.column("group").to_numpy()
    pass_ = np.asarray(table.column("pass").to_pylist(), dtype=object)
    series = np.asarray(table.column("series").to_pylist(), dtype=object)
    kw_micro = table.column("kw_micro").combine_chunks().flatten().to_numpy()
    kw_micro = kw_micro.reshape(len(table), MINUTES)
    seen = np.unique(chunk)
    if len(seen) != len(chunks) or not np.array_equal(seen, np.arange(len(chunks))):
        raise RuntimeError(f"the Spark job returned {len(seen)} of {len(chunks)} chunks")

    n_groups = len(scenario.groups)
    total = series == TOTAL
    group_kw, system_kw, category_kw = {}, {}, {}
    for name in passes:
        rows = total & (pass_ == name)
        micro = np.zeros((n_groups, MINUTES))
        np.add.at(micro, group[rows], kw_micro[rows])  # exact: whole µkW
        group_kw[name] = micro / MICRO
        system_kw[name] = micro.sum(axis=0) / MICRO
        rows = ~total & (pass_ == name)
        category_kw[name] = {
            c: kw_micro[rows & (series == c)].sum(axis=0) / MICRO
            for c in sorted(set(series[rows]))
        }

    estimate_group_kw = {}
    for name in ("baseline", "expected"):
        rows = (pass_ == ESTIMATE) & (series == name)
        micro = np.zeros((n_groups, MINUTES))
        np.add.at(micro, group[rows], kw_micro[rows])  # exact: whole µkW (NaN outside)
        estimate_group_kw[name] = micro / MICRO
    estimate_kw = {name: kw.sum(axis=0) for name, kw in estimate_group_kw.items()}
    first = np.unique(chunk, return_index=True)[1]  # one row per chunk
    return SimulationResult(
        scenario=scenario,
        chunks=chunks,
        system_kw=system_kw,
        group_kw=group_kw,
        category_kw=category_kw,
        estimate_kw=estimate_kw,
        estimate_group_kw=estimate_group_kw,
        households=int(table.column("households").to_numpy()[first].sum()),
        ev_households=int(table.column("ev_households").to_numpy()[first].sum()),
        master="",
        default_parallelism=0,
        partitions=0,
        tasks=0,
        peak_task_rss_bytes=int(table.column("peak_rss_bytes").to_numpy().max()),
        chunk_seconds=table.column("seconds").to_numpy()[first],
    )


def collect_watched(spark: SparkSession, frame: DataFrame, label: str, n_chunks: int,
                    partitions: int, progress: Progress | None) -> tuple[pa.Table, int]:
    """``frame.toArrow()`` as a job group of its own, reporting ``progress(done, total)``
    in chunks as its tasks finish; the table and the number of tasks that ran."""
    sc = spark.sparkContext
    group_id = f"drsim-{time.time_ns()}"
    sc.setJobGroup(group_id, f"drsim {label}: {n_chunks} chunks")
    watcher = ProgressWatcher(spark, group_id, n_chunks, partitions, progress)
    if progress is not None:
        progress(0, n_chunks)
    watcher.start()
    try:
        table = frame.toArrow()
    finally:
        watcher.stop()
        for key in ("spark.jobGroup.id", "spark.job.description"):
            sc.setLocalProperty(key, None)  # type: ignore[arg-type]  # later jobs are not ours
    if progress is not None:
        progress(n_chunks, n_chunks)
    return table, watcher.tasks() or partitions


class ProgressWatcher:
    """Polls Spark's status tracker for the job group's finished tasks."""

    def __init__(self, spark: SparkSession, group_id: str, n_chunks: int, partitions: int,
                 progress: Progress | None):
        self.tracker = spark.sparkContext.statusTracker()
        self.group_id = group_id
        self.n_chunks, self.partitions = n_chunks, partitions
        self.progress = progress
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drsim-progress", daemon=True)

    def start(self) -> None:
        if self.progress is not None:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _stages(self):
        for job in self.tracker.getJobIdsForGroup(self.group_id):
            info = self.tracker.getJobInfo(job)
            for stage in (info.stageIds if info else []):
                stage_info = self.tracker.getStageInfo(stage)
                if stage_info is not None:
                    yield stage_info

    def tasks(self) -> int:
        """Tasks of the job group's stages (0 if Spark no longer knows them)."""
        try:
            return sum(s.numTasks for s in self._stages())
        except Exception:  # noqa: BLE001 - statistics only
            return 0

    def _run(self) -> None:
        last = -1
        while not self._stop.wait(POLL_SECONDS):
            try:
                done = sum(s.numCompletedTasks for s in self._stages())
            except Exception:  # noqa: BLE001 - the progress bar must never fail the run
                continue
            chunks = min(self.n_chunks, done * self.n_chunks // self.partitions)
            if chunks != last:
                last = chunks
                self.progress(chunks, self.n_chunks)
