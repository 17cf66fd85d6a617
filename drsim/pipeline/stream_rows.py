"""The rows the stream's stages emit (:data:`OUT`), built as columns and framed once.

A stage of :mod:`drsim.pipeline.stream_tiers` makes its output from many small parts (a
gateway's loads of a few minutes, the user events of its tests, a leader's ticks). Each
part is a :data:`Block`, one NumPy array per column of :data:`OUT`, and a stage joins its
parts (:func:`join`) and hands the backend one DataFrame (:func:`frame`), in types any
backend converts to the Arrow types at once: numbers as int64 where every row has one,
else float64 with NaN; text and lists as Python objects with None.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

__all__ = ["Block", "OUT", "frame", "join", "rows"]

#: what every stage emits: ``kind`` says which columns mean what
#: (:mod:`drsim.pipeline.stream_tiers`)
OUT = pa.schema([("pass", pa.string()), ("kind", pa.string()), ("group", pa.int64()),
                 ("gateway", pa.int64()), ("time", pa.int64()), ("house", pa.int64()),
                 ("value", pa.float64()), ("delay", pa.float64()), ("missing", pa.int64()),
                 ("counts", pa.list_(pa.int64())), ("note", pa.string())])
#: rows of :data:`OUT` as columns: numbers float64 (NaN: none), the rest Python objects
Block = dict[str, np.ndarray]
_NUMBERS = frozenset(f.name for f in OUT if pa.types.is_integer(f.type)
                     or pa.types.is_floating(f.type))
_INTEGERS = frozenset(f.name for f in OUT if pa.types.is_integer(f.type))
_SEQUENCE = list | np.ndarray | pd.Series


def _objects(values) -> np.ndarray:
    """``values`` as a 1-d object array, each a Python object (a list stays one)."""
    if isinstance(values, pd.Series):
        values = values.to_numpy(dtype=object)
    if isinstance(values, np.ndarray):
        return values.astype(object)
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # (rows of lists: a few per gateway and batch)
        out[i] = value
    return out


def rows(**columns) -> Block:
    """Rows of :data:`OUT`: each column a sequence or one value for every row (missing:
    none); ``counts`` a list per row.

    Examples
    --------
    >>> b = rows(kind="load", time=np.array([1, 2]), counts=[[1, 2], [3, 4]])
    >>> b["time"].tolist(), b["kind"].tolist(), b["counts"].tolist(), b["group"].tolist()
    ([1.0, 2.0], ['load', 'load'], [[1, 2], [3, 4]], [nan, nan])
    """
    n = max((len(v) for v in columns.values() if isinstance(v, _SEQUENCE)), default=1)
    out = {}
    for name in OUT.names:
        value = columns.get(name)
        if name in _NUMBERS:
            out[name] = np.asarray(value, dtype=np.float64) if isinstance(value, _SEQUENCE) \
                else np.full(n, np.nan if value is None else float(value))
        elif isinstance(value, _SEQUENCE):
            out[name] = _objects(value)
        else:
            out[name] = np.full(n, value, dtype=object)
    return out


def _of_frame(data: pd.DataFrame) -> Block:
    """A DataFrame of :data:`OUT`'s columns as a :data:`Block`."""
    out = {}
    for name in OUT.names:
        column = data[name]
        if name in _NUMBERS:
            out[name] = column.to_numpy(np.float64) if pd.api.types.is_numeric_dtype(column) \
                else pd.to_numeric(column, errors="coerce").to_numpy(np.float64)
        else:
            values = _objects(column.to_numpy(dtype=object))
            values[pd.isna(column).to_numpy()] = None
            out[name] = values
    return out


def join(parts: list[Block | pd.DataFrame]) -> Block:
    """The rows of ``parts`` (blocks, or DataFrames with :data:`OUT`'s columns) in order."""
    blocks = [_of_frame(p) if isinstance(p, pd.DataFrame) else p for p in parts]
    blocks = [b for b in blocks if len(b["kind"])]
    if not blocks:
        return {name: np.empty(0, dtype=np.float64 if name in _NUMBERS else object)
                for name in OUT.names}
    if len(blocks) == 1:
        return blocks[0]
    return {name: np.concatenate([b[name] for b in blocks]) for name in OUT.names}


def frame(parts: list[Block | pd.DataFrame]) -> pd.DataFrame:
    """The rows of ``parts`` as one DataFrame for the backend (module doc).

    Examples
    --------
    >>> f = frame([rows(kind="a", time=3), rows(kind="b", time=4, group=1)])
    >>> f["time"].dtype.name, f["group"].dtype.name, f["note"].tolist()
    ('int64', 'float64', [None, None])
    """
    block = join(parts)
    data = {}
    for name in OUT.names:
        values = block[name]
        if name in _INTEGERS and len(values) and not np.isnan(values).any():
            values = values.astype(np.int64)
        data[name] = values
    return pd.DataFrame(data, copy=False)
