"""drsim's streams (:meth:`drsim.pipeline.backend.Backend.stream`) on Spark Structured Streaming.

``readStream.parquet(folder)`` with the source's columns added in SQL (a literal, a
``CASE`` over the bucket's edges), then ``groupBy(keys).transformWithStateInPandas`` for each
stage, its state one binary ``ValueState`` per key in the RocksDB state store, then
``foreachBatch(sink)``, with the query's offsets, commits and state in the checkpoint folder:
a query started again on the same checkpoint replays the micro-batch it had not committed
(the same batch id, the same rows) and goes on from there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StructField, StructType

from drsim.pipeline.backend import StreamSource, StreamStage
from spark.task_errors import carry, raised_in_task, task_errors

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STATE = StructType([StructField("state", BinaryType())])


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its Arrow-backed columns (pandas 3 text, for one) as Python objects:
    such a column may hold several Arrow chunks, which Spark's conversion does not take."""
    for column in frame.columns:
        if not isinstance(frame[column].dtype, np.dtype):  # Arrow-backed (text and others)
            frame[column] = frame[column].astype(object)
    return frame


class _Stage(StatefulProcessor):
    """One stage's step as a stateful processor: its bytes in a ValueState per key."""

    def __init__(self, stage: StreamStage):
        self.stage = stage

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("state", STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        frame = pd.concat(list(rows), ignore_index=True)
        for column, value in zip(self.stage.keys, key, strict=True):
            if column not in frame.columns:  # the grouping columns may not be in the rows
                frame[column] = value
        before = self.state.get()[0] if self.state.exists() else None
        try:
            after, out = self.stage.step(tuple(key), None if before is None else
                                         bytes(before), frame)
        except Exception as exc:  # raised again as itself in the driver (poll)
            raise carry(exc) from exc
        if after is not None:
            self.state.update((after,))
        yield _plain(out[self.stage.schema.names].copy())

    def close(self) -> None:
        """Nothing to release."""


class SparkStream:
    """A started Structured Streaming query (module doc)."""

    def __init__(self, spark: SparkSession, source: StreamSource,
                 stages: Sequence[StreamStage], sink: Callable[[pa.Table, int], None],
                 checkpoint: Path, partitions: int):
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
        # commit a changelog of the micro-batch's writes, not a snapshot of the store
        spark.conf.set("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
                       "true")
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
        frame = spark.readStream.schema(from_arrow_schema(source.schema)).parquet(
            str(source.folder))
        for name, value, kind in source.constants:
            if name not in source.schema.names:
                frame = frame.withColumn(name, F.lit(value).cast(
                    from_arrow_schema(pa.schema([(name, kind)]))[0].dataType))
        if source.bucket is not None:
            name, column, edges = source.bucket
            cases = " ".join(f"WHEN `{column}` < {int(hi)} THEN {i}"
                             for i, hi in enumerate(edges[1:]))
            frame = frame.withColumn(name, F.expr(
                f"CASE WHEN `{column}` < {int(edges[0])} THEN -1 {cases} ELSE -1 END"))
        frame = frame.select(*source.columns)
        for stage in stages:
            frame = frame.groupBy(*stage.keys).transformWithStateInPandas(
                _Stage(stage), from_arrow_schema(stage.schema), "Append", "None")
        self._error: BaseException | None = None
        last = stages[-1].schema

        def write(batch, batch_id: int) -> None:
            try:
                sink(batch.toArrow().select(last.names).cast(last), batch_id)
            except BaseException as exc:  # reported by poll(), in the driver's thread
                self._error = exc
                raise

        self.query = frame.writeStream.foreachBatch(write).option(
            "checkpointLocation", str(checkpoint)).start()

    def poll(self, seconds: float) -> None:
        with task_errors():
            self.query.awaitTermination(seconds)
        # the sink's error (set in the stream's thread, maybe before the query stops) or
        # the query's; a stage's error is carried in either, as the serial backend raises it
        failed = self._error if self._error is not None else self.query.exception()
        if failed is None:
            return
        carried = raised_in_task(failed)
        if carried is not None:
            raise carried from None
        if failed is self._error:
            raise failed
        raise RuntimeError(f"the stream failed: {failed}")

    def drain(self) -> None:
        with task_errors():
            self.query.processAllAvailable()
        self.poll(0.001)

    def progress(self) -> list[dict]:
        """The query's recent micro-batches (Spark's progress reports)."""
        return [json.loads(p.json) for p in self.query.recentProgress]

    def stop(self) -> None:
        if self.query.isActive:
            self.query.stop()
