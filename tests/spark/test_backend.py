"""The backend interface (drsim.pipeline.backend): the serial backend and Spark's give the same
tables for the same chunk tasks and group functions."""

from __future__ import annotations

import sys
from functools import partial

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from drsim.pipeline.backend import SerialBackend
from spark.backend import SparkBackend

ROWS = pa.schema([("chunk", pa.int64()), ("key", pa.string()), ("value", pa.float64())])
TOTALS = pa.schema([("chunk", pa.int64()), ("n", pa.int64())])
SUMS = pa.schema([("key", pa.string()), ("label", pa.string()), ("total", pa.float64())])


def task(n_rows: int, index: int) -> dict[str, pa.RecordBatch]:
    """Two outputs of different schemas from one chunk."""
    keys = [f"k{(index + i) % 3}" for i in range(n_rows)]
    rows = pa.RecordBatch.from_pydict({"chunk": [index] * n_rows, "key": keys,
                                       "value": [float(index * 10 + i) for i in range(n_rows)]},
                                      schema=ROWS)
    return {"rows": rows, "totals": pa.RecordBatch.from_pydict(
        {"chunk": [index], "n": [n_rows]}, schema=TOTALS)}


def key_sum(frame: pd.DataFrame) -> pd.DataFrame:
    """A group function whose text column is a concatenation (several Arrow chunks in
    pandas 3), which Spark's conversion of the result must still take."""
    parts = [pd.DataFrame({"key": [k], "label": [f"sum of {k}"]}) for k in frame["key"].unique()]
    out = pd.concat(parts, ignore_index=True)
    out["total"] = frame["value"].sum()
    return out


def run(backend, n_chunks: int = 5) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    calls = []
    out = backend.map_chunks(partial(task, 4), n_chunks, {"rows": ROWS, "totals": TOTALS},
                             label="toy", progress=lambda d, t: calls.append((d, t)))
    sums = backend.group_apply(out["rows"], ["key"], key_sum, SUMS, label="sums")
    frames = [backend.collect(h).to_pandas().sort_values(list(h_cols), ignore_index=True)
              for h, h_cols in ((out["rows"], ["chunk", "value"]), (out["totals"], ["chunk"]),
                                (sums, ["key"]))]
    assert calls[0] == (0, n_chunks) and calls[-1] == (n_chunks, n_chunks)
    return tuple(frames)


def test_serial_backend_maps_groups_and_collects():
    rows, totals, sums = run(SerialBackend())
    assert len(rows) == 20 and totals["n"].tolist() == [4] * 5
    assert sums["key"].tolist() == ["k0", "k1", "k2"]
    expected = rows.groupby("key")["value"].sum().to_numpy()
    assert np.array_equal(sums["total"].to_numpy(), expected)
    assert sums["label"].tolist() == ["sum of k0", "sum of k1", "sum of k2"]


def test_spark_backend_gives_the_serial_backend_s_tables(spark):
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests
    backend = SparkBackend(spark=spark)
    try:
        on_spark = run(backend)
        assert backend.info.jobs[0].chunks == 5 and backend.info.jobs[0].tasks >= 1
    finally:
        backend.close()
    assert not spark.sparkContext._jsc.sc().isStopped()  # a session it did not start
    for a, b in zip(run(SerialBackend()), on_spark, strict=True):
        pd.testing.assert_frame_equal(a, b, check_dtype=False)


def test_a_chunk_output_with_other_columns_is_refused():
    def bad(index: int) -> dict[str, pa.RecordBatch]:
        return {"totals": pa.RecordBatch.from_pydict({"chunk": [index]})}

    with pytest.raises(ValueError, match="chunk output 'totals'"):
        SerialBackend().map_chunks(bad, 1, {"totals": TOTALS}, label="bad")
