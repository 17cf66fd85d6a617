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


# --------------------------------------------------------------------------- a task's error
def bad_query_task(index: int) -> dict[str, pa.RecordBatch]:
    """A chunk task that stops on a bad input, as cep_core does on an event without an
    attribute its query reads."""
    from cep_core import QueryError

    raise QueryError(f"chunk {index}: an event has no attribute 'accLod'")


def bad_group(frame: pd.DataFrame) -> pd.DataFrame:
    from drsim.scenario import ScenarioError

    raise ScenarioError("s.yaml", [("monitoring.queries.meter", "no good", "a query")])


def test_a_task_s_error_reaches_the_driver_as_the_serial_backend_raises_it(spark, tmp_path):
    from pyspark import cloudpickle

    from cep_core import QueryError
    from drsim.scenario import ScenarioError

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    backend = SparkBackend(spark=spark)
    try:
        with pytest.raises(QueryError) as raised:  # not Spark's report of the task's failure
            backend.map_chunks(bad_query_task, 2, {"totals": TOTALS}, label="bad")
        assert str(raised.value).startswith("chunk ") and "\n" not in str(raised.value)
        with pytest.raises(QueryError, match="no attribute 'accLod'"):
            SerialBackend().map_chunks(bad_query_task, 2, {"totals": TOTALS}, label="bad")
        out = backend.map_chunks(partial(task, 2), 2, {"rows": ROWS, "totals": TOTALS},
                                 label="good")
        with pytest.raises(ScenarioError) as grouped:
            backend.collect(backend.group_apply(out["rows"], ["key"], bad_group, SUMS,
                                                label="sums"))
        assert str(grouped.value) == "s.yaml: monitoring.queries.meter: no good; accepted: " \
                                     "a query"
        with pytest.raises(ScenarioError):
            backend.write_parquet(out["rows"], tmp_path / "rows", bad_group, SUMS, ["key"])
    finally:
        backend.close()


KEYED = pa.schema([("key", pa.string()), ("value", pa.float64())])


def bad_step(key: tuple, state: bytes | None, rows: pd.DataFrame
             ) -> tuple[bytes | None, pd.DataFrame]:
    from cep_core import QueryError

    raise QueryError(f"stage {key[0]}: an event has no attribute 'accLod'")


def test_a_stream_stage_s_error_reaches_the_driver_as_itself(spark, tmp_path):
    import pyarrow.parquet as pq
    from pyspark import cloudpickle

    from cep_core import QueryError
    from drsim.pipeline.backend import StreamSource, StreamStage

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table({"key": ["a"], "value": [1.0]}, schema=KEYED),
                   folder / "part-0.parquet")
    source = StreamSource(folder, KEYED, ("key", "value"))
    stage = StreamStage(("key",), bad_step, KEYED)
    backend = SparkBackend(spark=spark)
    stream = backend.stream(source, [stage], lambda table, batch: None, tmp_path / "ckpt")
    try:
        with pytest.raises(QueryError) as raised:
            for _ in range(240):  # a minute at most
                stream.poll(0.25)
        assert str(raised.value) == "stage a: an event has no attribute 'accLod'"
    finally:
        stream.stop()
        backend.close()
