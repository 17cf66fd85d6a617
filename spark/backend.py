"""drsim's backend interface (:mod:`drsim.pipeline.backend`) on Spark.

- ``map_chunks``: ``spark.range(n_chunks) → mapInArrow`` over at least
  :data:`TASKS_PER_CORE` tasks per core and at most :data:`MAX_CHUNKS_PER_TASK` chunks per
  task. A task's named outputs travel in one frame whose columns are every output's
  columns (prefixed by the output's name) and a ``kind`` column naming the output of each
  row; the frame is persisted and materialised at once (with progress), and each output
  is a filter and projection of it.
- ``group_apply``: ``repartition(n, keys) → groupBy(keys).applyInPandas``, persisted and
  materialised at once (with progress): ``n`` is :data:`TASKS_PER_CORE` tasks per core, so
  every core works and no partition holds much more than its share of the keys (Spark's
  adaptive execution would coalesce the small shuffle of the tiers into one partition).
- ``collect``: ``toArrow()``.
- ``stream``: Structured Streaming, each stage a ``transformWithStateInPandas`` with RocksDB
  state (:mod:`spark.streaming`).
- ``write_parquet``: ``mapInPandas → orderBy → write.parquet`` (no ``orderBy`` when the rows
  keep their chunks' order): the executors write the dataset; nothing passes through the
  driver.

An error raised in a task reaches the caller as itself, as the serial backend raises it
(:mod:`spark.task_errors`), not as Spark's report of the task's failure.

The backend owns the session: it starts one (:func:`spark.session.get_spark`) unless one is
active, and stops what it started on :meth:`SparkBackend.close`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from drsim.pipeline.backend import (
    BackendInfo,
    ChunkTask,
    GroupFunction,
    Job,
    Progress,
    StreamSource,
    StreamStage,
    check_batch,
)
from spark.session import get_spark
from spark.streaming import SparkStream
from spark.task_errors import carried, task_errors

TASKS_PER_CORE = 4  # at least this many partitions per core: load balance, progress
MAX_CHUNKS_PER_TASK = 4  # at most this many chunks per task: progress every few seconds
POLL_SECONDS = 0.25
KIND = "kind"


def _union_schema(schemas: Mapping[str, pa.Schema]) -> pa.Schema:
    fields = [pa.field(KIND, pa.string())]
    for name, schema in schemas.items():
        fields += [pa.field(f"{name}__{f.name}", f.type) for f in schema]
    return pa.schema(fields)


@carried
def _union_batches(task: ChunkTask, schemas: Mapping[str, pa.Schema], union: pa.Schema,
                   batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: each chunk's outputs as rows of the union schema."""
    for batch in batches:
        for index in batch.column("id").to_numpy():
            for name, out in task(int(index)).items():
                out = check_batch(name, out, schemas[name])
                n = out.num_rows
                columns = {KIND: pa.array([name] * n, pa.string())}
                columns.update({f"{name}__{f}": out.column(f) for f in out.schema.names})
                yield pa.RecordBatch.from_arrays(
                    [columns[f.name] if f.name in columns else pa.nulls(n, f.type)
                     for f in union], schema=union)


@carried
def _apply(function: GroupFunction, names: list[str], frame: pd.DataFrame) -> pd.DataFrame:
    out = function(frame)[names]
    for column in names:  # pandas 3 text columns may hold several Arrow chunks
        if pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].astype(object)
    return out


class SparkBackend:
    """The backend interface on a Spark session (module docstring)."""

    def __init__(self, master: str | None = None, spark: SparkSession | None = None):
        self._own = spark is None and SparkSession.getActiveSession() is None
        self.spark = spark or get_spark(master)
        sc = self.spark.sparkContext
        gateway = getattr(sc, "_gateway", None)  # the JVM pyspark started (not in Connect)
        self.info = BackendInfo(name="spark", master=sc.master, app_id=sc.applicationId,
                                parallelism=sc.defaultParallelism,
                                jvm_pid=getattr(getattr(gateway, "proc", None), "pid", None))
        self._kept: list[DataFrame] = []

    def map_chunks(self, task: ChunkTask, n_chunks: int, schemas: Mapping[str, pa.Schema],
                   *, label: str, progress: Progress | None = None,
                   max_tasks: int | None = None) -> dict[str, DataFrame]:
        started = time.perf_counter()
        union = _union_schema(schemas)
        partitions = max(1, min(n_chunks, max(self.info.parallelism * TASKS_PER_CORE,
                                              -(-n_chunks // MAX_CHUNKS_PER_TASK))))
        if max_tasks is not None:  # as many partitions, so as many tasks at most at once
            partitions = max(1, min(partitions, max_tasks))
        frame = self.spark.range(n_chunks, numPartitions=partitions).mapInArrow(
            partial(_union_batches, task, dict(schemas), union), from_arrow_schema(union))
        frame = self._keep(frame)
        tasks = self._watched(frame.count, label, partitions,
                              None if progress is None else _in_chunks(progress, n_chunks))
        self.info.jobs.append(Job(label, n_chunks, partitions, tasks,
                                  time.perf_counter() - started))
        return {name: frame.filter(F.col(KIND) == name).select(
                    *(F.col(f"{name}__{f}").alias(f) for f in schema.names))
                for name, schema in schemas.items()}

    def group_apply(self, data: DataFrame, keys: Sequence[str], function: GroupFunction,
                    schema: pa.Schema, *, label: str, progress: Progress | None = None
                    ) -> DataFrame:
        started = time.perf_counter()
        names = schema.names

        def apply(frame: pd.DataFrame) -> pd.DataFrame:
            return _apply(function, names, frame)

        partitions = self.info.parallelism * TASKS_PER_CORE
        out = self._keep(data.repartition(partitions, *keys).groupBy(*keys)
                         .applyInPandas(apply, from_arrow_schema(schema)))
        tasks = self._watched(out.count, label, partitions, progress)
        self.info.jobs.append(Job(label, None, partitions, tasks,
                                  time.perf_counter() - started))
        return out

    def write_parquet(self, data: DataFrame, path: Path, function: GroupFunction,
                      schema: pa.Schema, sort_by: Sequence[str]) -> None:
        names = schema.names

        def apply(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for frame in frames:
                yield _apply(function, names, frame)

        rows = data.mapInPandas(apply, from_arrow_schema(schema))
        if not sort_by:  # the partitions' order: chunk after chunk
            with task_errors():
                rows.write.parquet(str(path))
        else:
            # kept while written: the sort samples the rows before it shuffles them, and
            # each would otherwise compute them again
            rows = rows.persist()
            try:
                with task_errors():
                    rows.orderBy(*sort_by).write.parquet(str(path))
            finally:
                rows.unpersist()
        if not any(path.glob("part-*.parquet")):  # Spark writes no file for no rows
            pq.write_table(schema.empty_table(), path / "part-00000.parquet")

    def collect(self, data: DataFrame) -> pa.Table:
        with task_errors():
            return data.toArrow()

    def stream(self, source: StreamSource, stages: Sequence[StreamStage], sink,
               checkpoint: Path) -> SparkStream:
        return SparkStream(self.spark, source, stages, sink, checkpoint,
                           self.info.parallelism)

    def release(self) -> None:
        for frame in self._kept:
            frame.unpersist()
        self._kept.clear()

    def close(self) -> None:
        self.release()
        if self._own:
            self.spark.stop()

    def _keep(self, frame: DataFrame) -> DataFrame:
        self._kept.append(frame.persist())
        return frame

    def _watched(self, action, label: str, partitions: int, progress: Progress | None
                 ) -> int:
        """Run ``action()`` as a job group of its own, reporting ``progress(tasks done,
        partitions)`` as its tasks finish; the number of tasks that ran."""
        sc = self.spark.sparkContext
        group_id = f"drsim-{time.time_ns()}"
        sc.setJobGroup(group_id, f"drsim {label}: {partitions} tasks")
        watcher = ProgressWatcher(self.spark, group_id, partitions, progress)
        if progress is not None:
            progress(0, partitions)
        watcher.start()
        try:
            with task_errors():  # a task's error as the serial backend raises it
                action()
        finally:
            watcher.stop()
            for key in ("spark.jobGroup.id", "spark.job.description"):
                sc.setLocalProperty(key, None)  # type: ignore[arg-type]  # later jobs are not ours
        if progress is not None:
            progress(partitions, partitions)
        return watcher.tasks() or partitions


def _in_chunks(progress: Progress, n_chunks: int) -> Progress:
    """Tasks done → chunks done, in proportion (each task holds a range of chunks)."""
    return lambda done, total: progress(min(n_chunks, done * n_chunks // max(total, 1)),
                                        n_chunks)


class ProgressWatcher:
    """Polls Spark's status tracker for the job group's finished tasks."""

    def __init__(self, spark: SparkSession, group_id: str, partitions: int,
                 progress: Progress | None):
        self.tracker = spark.sparkContext.statusTracker()
        self.group_id = group_id
        self.partitions = partitions
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
        """Tasks of the job group's largest stage (0 if Spark no longer knows them)."""
        try:
            return max((s.numTasks for s in self._stages()), default=0)
        except Exception:  # noqa: BLE001 - statistics only
            return 0

    def _run(self) -> None:
        last = -1
        while not self._stop.wait(POLL_SECONDS):
            try:
                # the latest stage of one task per partition: the chunks' or the groups'
                # (an earlier one reads the input, a later one counts)
                stages = [s for s in self._stages() if s.numTasks == self.partitions]
                done = max(stages, key=lambda s: s.stageId).numCompletedTasks \
                    if stages else 0
            except Exception:  # noqa: BLE001 - the progress bar must never fail the run
                continue
            done = min(done, self.partitions)
            if done > last:  # a later job of the group may start again from 0: never back
                last = done
                self.progress(done, self.partitions)
