"""The small interface a run is written against, and the serial backend that runs it in process.

A run (:mod:`drsim.pipeline.stages`) needs three things of the machinery below it
(docs/architecture.md, "Backends"):

- **map a function over chunks**: ``task(i)`` for every chunk index, each returning one Arrow
  record batch per named output (the outputs' schemas are given);
- **group rows by a key and apply a function**: a pandas function over all rows of each key;
- **collect** a result to the caller as an Arrow table (only small results are collected);
- **write** a result that grows with the households (the user events) as a Parquet dataset,
  without collecting it;
- **stream** files of rows arriving in a folder through keyed stateful stages to a sink
  (:class:`StreamStage`, :meth:`Backend.stream`; the tiers as a stream,
  :mod:`drsim.pipeline.stream_tiers`).

A backend keeps what it computed until :meth:`Backend.close`, so a result can be grouped and
collected without computing it twice. :class:`SerialBackend` is a plain loop in this process,
for tests and tiny scenarios; ``spark.backend.SparkBackend`` runs the same calls on Spark.
Both give the same numbers: every sum in a run is exact and every collected table is sorted
before use.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

Progress = Callable[[int, int], None]  # (chunks or tasks done, in all)
ChunkTask = Callable[[int], Mapping[str, pa.RecordBatch]]  # chunk index -> output -> batch
GroupFunction = Callable[[pd.DataFrame], pd.DataFrame]
#: the serial stream's checkpoint file in its checkpoint folder (:class:`SerialStream`)
CHECKPOINT = "serial-stream.parquet"


#: a stateful stage's step: (key, its state or None, its rows) -> (new state, output rows)
StreamStep = Callable[[tuple, bytes | None, pd.DataFrame], tuple[bytes | None, pd.DataFrame]]


@dataclass(frozen=True)
class StreamSource:
    """Where a stream's rows come from: Parquet files of ``schema`` arriving in ``folder``,
    each written under a hidden name and renamed (so never read half-written). Before the
    first stage each row gets the ``constants`` (name, value, Arrow type) its file lacks
    and, with ``bucket`` (name, column, edges), a column numbering the range of ``column``
    it falls in: i for ``edges[i] <= x < edges[i+1]``, -1 outside; then only ``columns``
    are kept."""

    folder: Path
    schema: pa.Schema
    columns: tuple[str, ...]
    constants: tuple[tuple[str, Any, pa.DataType], ...] = ()
    bucket: tuple[str, str, tuple[int, ...]] | None = None

    def rows(self, table: pa.Table) -> pd.DataFrame:
        """The rows of ``table`` (files of :attr:`schema`) as the first stage reads them."""
        frame = table.to_pandas()
        for name, value, _ in self.constants:
            if name not in frame.columns:
                frame[name] = value
        if self.bucket is not None:
            name, column, edges = self.bucket
            x = frame[column].to_numpy()
            at = np.searchsorted(np.asarray(edges), x, side="right") - 1
            frame[name] = np.where((at >= 0) & (at < len(edges) - 1), at, -1)
        return frame[list(self.columns)]


@dataclass(frozen=True)
class StreamStage:
    """One keyed stateful stage of a stream: its rows grouped by ``keys``, each key's state
    kept between micro-batches as bytes, its output rows of ``schema``."""

    keys: tuple[str, ...]
    step: StreamStep
    schema: pa.Schema


class Stream(Protocol):
    """A running stream (:meth:`Backend.stream`)."""

    def poll(self, seconds: float) -> None:
        """Let the stream work for up to ``seconds`` (a backend without threads of its own
        processes the files that arrived); raises what failed in it."""
        ...

    def drain(self) -> None:
        """Return when every file that arrived so far is processed."""
        ...

    def stop(self) -> None:
        ...


@dataclass
class Job:
    """How one :meth:`Backend.map_chunks` or :meth:`Backend.group_apply` call ran."""

    label: str
    chunks: int | None  # None for group_apply
    partitions: int
    tasks: int
    seconds: float


@dataclass
class BackendInfo:
    """What summary.json says about the machinery of a run (its ``backend`` section)."""

    name: str
    master: str | None = None
    app_id: str | None = None
    parallelism: int = 1
    jobs: list[Job] = field(default_factory=list)
    jvm_pid: int | None = None  # the driver's JVM (Spark), for its peak memory


class Backend(Protocol):
    """The three operations of a run (module docstring)."""

    info: BackendInfo

    def map_chunks(self, task: ChunkTask, n_chunks: int, schemas: Mapping[str, pa.Schema],
                   *, label: str, progress: Progress | None = None,
                   max_tasks: int | None = None) -> dict[str, Any]:
        """Run ``task(i)`` for i in 0..n_chunks-1; one handle per output name. With
        ``max_tasks``, in at most that many tasks at once (the rest of the cores are
        left to a stream)."""
        ...

    def group_apply(self, data: Any, keys: Sequence[str], function: GroupFunction,
                    schema: pa.Schema, *, label: str, progress: Progress | None = None
                    ) -> Any:
        """``function`` over the rows of each distinct ``keys`` value of ``data``; its
        results (each a frame of ``schema``'s columns) as one handle, computed at once
        (``progress`` in tasks)."""
        ...

    def write_parquet(self, data: Any, path: Path, function: GroupFunction,
                      schema: pa.Schema, sort_by: Sequence[str]) -> None:
        """Write ``function`` of the rows of ``data`` (applied to any part of them; each
        result a frame of ``schema``'s columns), sorted by ``sort_by`` (empty: in the
        order of ``data``, chunk after chunk), as a Parquet dataset: the folder ``path``,
        one or more ``part-*.parquet`` files that read in order."""
        ...

    def stream(self, source: StreamSource, stages: Sequence[StreamStage],
               sink: Callable[[pa.Table, int], None], checkpoint: Path) -> Stream:
        """Start a stream: the rows of ``source`` through ``stages`` in order; the last
        stage's rows of each micro-batch go to ``sink(table, batch id)`` (a batch id again
        after a restart brings the same rows). ``checkpoint``: where the stream's progress
        and state are kept, so that a stream restarted on it goes on where it stopped."""
        ...

    def collect(self, data: Any) -> pa.Table:
        """The rows of a handle as an Arrow table (in no particular order)."""
        ...

    def release(self) -> None:
        """Forget what was kept for the results handed out so far (their handles become
        invalid); the backend stays open for the next run."""
        ...

    def close(self) -> None:
        """Release everything kept (a session the backend started is stopped)."""
        ...


def check_batch(name: str, batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` cast to ``schema``; ValueError naming the output if its columns differ."""
    if batch.schema.names != schema.names:
        raise ValueError(f"chunk output {name!r}: columns {batch.schema.names}, expected "
                         f"{schema.names}")
    return batch if batch.schema.equals(schema) else batch.cast(schema)


def frame_to_table(frame: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """A group function's result as an Arrow table of ``schema``."""
    return pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False)


class SerialBackend:
    """Every operation as a plain loop in this process (no scheduling, no copies)."""

    def __init__(self) -> None:
        self.info = BackendInfo(name="serial")

    def map_chunks(self, task: ChunkTask, n_chunks: int, schemas: Mapping[str, pa.Schema],
                   *, label: str, progress: Progress | None = None,
                   max_tasks: int | None = None) -> dict[str, pa.Table]:
        started = time.perf_counter()
        batches: dict[str, list[pa.RecordBatch]] = {name: [] for name in schemas}
        if progress is not None:
            progress(0, n_chunks)
        for i in range(n_chunks):
            for name, batch in task(i).items():
                batches[name].append(check_batch(name, batch, schemas[name]))
            if progress is not None:
                progress(i + 1, n_chunks)
        self.info.jobs.append(Job(label, n_chunks, n_chunks, n_chunks,
                                  time.perf_counter() - started))
        return {name: pa.Table.from_batches(b, schema=schemas[name])
                for name, b in batches.items()}

    def group_apply(self, data: pa.Table, keys: Sequence[str], function: GroupFunction,
                    schema: pa.Schema, *, label: str, progress: Progress | None = None
                    ) -> pa.Table:
        started = time.perf_counter()
        groups = list(data.to_pandas().groupby(list(keys), sort=True))
        parts = []
        for i, (_, rows) in enumerate(groups):
            if progress is not None:
                progress(i, len(groups))
            parts.append(frame_to_table(function(rows.reset_index(drop=True)), schema))
        if progress is not None:
            progress(len(groups), len(groups))
        self.info.jobs.append(Job(label, None, 1, len(groups),
                                  time.perf_counter() - started))
        return pa.concat_tables(parts) if parts else schema.empty_table()

    def write_parquet(self, data: pa.Table, path: Path, function: GroupFunction,
                      schema: pa.Schema, sort_by: Sequence[str]) -> None:
        frame = function(data.to_pandas())
        if sort_by:
            frame = frame.sort_values(list(sort_by), kind="stable")
        path.mkdir(parents=True)
        pq.write_table(frame_to_table(frame, schema), path / "part-00000.parquet")

    def collect(self, data: pa.Table) -> pa.Table:
        return data

    def stream(self, source: StreamSource, stages: Sequence[StreamStage],
               sink: Callable[[pa.Table, int], None], checkpoint: Path) -> SerialStream:
        return SerialStream(source, stages, sink, checkpoint)

    def release(self) -> None:
        """Nothing is kept beyond the tables handed out."""

    def close(self) -> None:
        """Nothing to release."""


class SerialStream:
    """A stream in this process: each :meth:`poll` reads the files that arrived (in name
    order) as one micro-batch and runs the stages over them, key by key in key order. With
    a ``checkpoint`` folder, the states, the files read and the next batch id are written
    there after each batch's sink (:data:`CHECKPOINT`), and a stream started again on it
    goes on from there: a batch whose sink ran but whose checkpoint was not written is run
    again under the same id, as Spark replays a batch it had not committed."""

    def __init__(self, source: StreamSource, stages: Sequence[StreamStage],
                 sink: Callable[[pa.Table, int], None], checkpoint: Path | None = None):
        self.source = source
        self.stages, self.sink = list(stages), sink
        self.states: list[dict[tuple, bytes | None]] = [{} for _ in self.stages]
        self.seen: set[str] = set()
        self.batch = 0
        self.checkpoint = None if checkpoint is None else Path(checkpoint) / CHECKPOINT
        if self.checkpoint is not None and self.checkpoint.is_file():
            self._restore(pq.read_table(self.checkpoint))

    def _restore(self, table: pa.Table) -> None:
        meta = table.schema.metadata or {}
        self.batch = int(meta[b"batch"])
        self.seen = set(json.loads(meta[b"seen"]))
        for stage, key, state in zip(*(table.column(c).to_pylist()
                                       for c in ("stage", "key", "state")), strict=True):
            self.states[stage][tuple(json.loads(key))] = state

    def _save(self) -> None:
        rows = [(i, json.dumps([k.item() if isinstance(k, np.generic) else k for k in key]),
                 state) for i, states in enumerate(self.states) for key, state in states.items()]
        table = pa.table({"stage": pa.array([r[0] for r in rows], pa.int32()),
                          "key": pa.array([r[1] for r in rows], pa.string()),
                          "state": pa.array([r[2] for r in rows], pa.binary())})
        table = table.replace_schema_metadata({"batch": str(self.batch),
                                               "seen": json.dumps(sorted(self.seen))})
        self.checkpoint.parent.mkdir(parents=True, exist_ok=True)
        hidden = self.checkpoint.with_name(f".{self.checkpoint.name}")
        pq.write_table(table, hidden)
        os.replace(hidden, self.checkpoint)

    def poll(self, seconds: float) -> None:
        files = sorted(p for p in Path(self.source.folder).glob("*.parquet")
                       if p.name not in self.seen and not p.name.startswith((".", "_")))
        if not files:
            time.sleep(seconds)
            return
        table = pa.concat_tables([pq.read_table(p, schema=self.source.schema) for p in files])
        frame = self.source.rows(table)
        for stage, states in zip(self.stages, self.states, strict=True):
            parts = []
            for key, rows in frame.groupby(list(stage.keys), sort=True, dropna=False):
                key = key if isinstance(key, tuple) else (key,)
                states[key], out = stage.step(key, states.get(key), rows.reset_index(drop=True))
                parts.append(out)
            frame = pd.concat(parts, ignore_index=True) if parts else \
                stage.schema.empty_table().to_pandas()
        self.sink(frame_to_table(frame, self.stages[-1].schema), self.batch)
        self.seen.update(p.name for p in files)
        self.batch += 1
        if self.checkpoint is not None:
            self._save()

    def drain(self) -> None:
        before = -1
        while before != self.batch:
            before = self.batch
            self.poll(0.0)

    def stop(self) -> None:
        """Nothing runs in the background."""
