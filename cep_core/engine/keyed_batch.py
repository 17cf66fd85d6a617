"""The keyed vectorized engine's data layout (:mod:`cep_core.engine.keyed`): the columns of
a fed batch, its outputs collected as columns and put back in stream order, the waves in
which every key occurs once, and the dense numbering of partition keys."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd

from cep_core.approx.placeholders import LOST, is_lost
from cep_core.errors import QueryError

__all__ = ["Batch", "Outputs", "KeyIndex", "waves", "as_array", "resize"]

_MISSING = object()


class Batch:
    """The columns of one fed batch that the engine reads."""

    def __init__(self, events: Any, attrs: Iterable[str], first_id: int,
                 placeholders: bool = False):
        frame = hasattr(events, "columns") and hasattr(events, "to_numpy")
        #: which events are placeholders (:mod:`cep_core.approx.placeholders`; None
        #: without ``placeholders``)
        self.lost: np.ndarray | None = _lost_flags(events) if placeholders else None
        self.missing: dict[str, np.ndarray] = {}
        self.absent: dict[str, np.ndarray] = {}  # attributes placeholders do not carry
        self.cols: dict[str, np.ndarray] = {}
        if frame:
            for c in ("type", "time"):
                if c not in events.columns:
                    raise QueryError(f"events need 'type' and 'time' columns (have "
                                     f"{sorted(map(str, events.columns))})")
            self.n = len(events)
            codes, names = _type_codes(events["type"])
            get = {a: events[a].to_numpy() for a in {"time", *attrs} if a in events.columns}
            for a in {"time", *attrs}:
                if a in get:
                    self.cols[a] = get[a]
                elif a == "id":
                    self.cols[a] = np.arange(first_id, first_id + self.n)
                else:
                    self.cols[a] = np.full(self.n, None, dtype=object)
                    self.missing[a] = np.ones(self.n, dtype=bool)
        else:
            rows = events
            self.n = len(rows)
            for a in {"type", "time", *attrs}:
                vals = [e.get(a, _MISSING) for e in rows]
                miss = np.fromiter((v is _MISSING for v in vals), bool, self.n)
                if miss.any() and self.lost is not None and not (miss & ~self.lost).any():
                    stand_in = next((v for v in vals if v is not _MISSING), 0)
                    vals = [stand_in if v is _MISSING else v for v in vals]  # never read
                    self.absent[a] = miss
                    miss = np.zeros(self.n, dtype=bool)
                if miss.any():
                    vals = [None if v is _MISSING else v for v in vals]
                    self.missing[a] = miss
                arr = np.empty(self.n, dtype=object) if miss.any() else None
                if arr is not None:
                    arr[:] = vals
                    self.cols[a] = arr
                else:
                    self.cols[a] = as_array(vals)
            codes, names = pd.factorize(np.asarray([e["type"] for e in rows], dtype=object))
        #: the event types as numbers into ``type_names``
        self.type_codes = np.asarray(codes)
        self.type_names = [str(x) for x in list(names)]
        t = self.cols["time"]
        if self.n and t.dtype.kind not in "iuf":
            raise QueryError("the keyed vectorized engine needs numeric event times")
        self.steps = np.diff(t) if self.n > 1 else np.zeros(0, dtype=t.dtype)
        if (self.steps < 0).any():
            j = int(np.flatnonzero(self.steps < 0)[0]) + 1
            raise QueryError(f"event {j}: time {t[j]} before the previous {t[j - 1]}; a "
                             "stream has non-decreasing timestamps")

    def unknown(self, attr: str, rows: Any) -> np.ndarray:
        """Of the events ``rows``, the placeholders that lack ``attr``."""
        lost = self.lost[rows]
        if not lost.any():
            return lost
        absent = self.absent.get(attr)
        return lost & (pd.isna(self.cols[attr][rows]) if absent is None else absent[rows])

    def column(self, attr: str, rows: np.ndarray) -> np.ndarray:
        miss = self.missing.get(attr)
        if miss is not None and self.lost is not None:
            miss = miss & ~self.lost  # a placeholder's unknown attribute (see unknown)
        if miss is not None and miss[rows].any():
            raise QueryError(f"an event has no attribute '{attr}'")
        return self.cols[attr][rows]


def _lost_flags(events: Any) -> np.ndarray:
    """Which events are placeholders (a true ``lost`` attribute)."""
    if hasattr(events, "columns"):
        if LOST not in events.columns:
            return np.zeros(len(events), dtype=bool)
        return events[LOST].fillna(False).astype(bool).to_numpy()
    return np.fromiter((is_lost(e) for e in events), bool, len(events))


def _type_codes(col: pd.Series) -> tuple[np.ndarray, Any]:
    """The event types of a frame as codes and names (one comparison when there is one)."""
    names = col.unique()  # fast on Arrow-backed strings, unlike a comparison
    if len(names) == 1 and isinstance(names[0], str):
        return np.zeros(len(col), dtype=np.int8), [names[0]]
    return col.factorize()


def as_array(values: list) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "biufUO" or arr.ndim != 1:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return arr


def waves(kid: np.ndarray, steps: np.ndarray) -> Iterable[np.ndarray]:
    """Positions of the events in waves where each key occurs at most once, in stream
    order per key: the timestamp groups (``steps``: the time differences of consecutive
    events) when none repeats a key, else the ``r``-th event of every key for r = 0, 1,
    ..."""
    n = kid.size
    cuts = np.flatnonzero(steps) + 1
    if len(cuts) + 1 <= max(1, n // 16):
        bounds = [0, *cuts.tolist(), n]
        groups = [np.arange(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        if all(np.bincount(kid[g]).max() <= 1 for g in groups):
            yield from groups
            return
    order = np.argsort(kid, kind="stable")
    counts = np.bincount(kid)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    present = np.flatnonzero(counts)
    for r in range(int(counts.max())):
        present = present[counts[present] > r]
        yield order[starts[present] + r]


class KeyIndex:
    """Partition key values to dense ids 0, 1, ... (first come, first numbered). Integer
    keys within a span of :data:`DIRECT_LIMIT` values are looked up in an array that
    covers the span from the least key seen (``base``), so its size follows the spread of
    the keys, not their magnitude; other keys in a dict."""

    DIRECT_LIMIT = 1 << 24

    def __init__(self):
        self.direct = np.full(0, -1, dtype=np.int64)  # key - base -> id, -1: not seen
        self.base = 0
        self.keys: dict[Any, int] = {}
        self.size = 0

    def ids(self, cols: list[np.ndarray]) -> np.ndarray:
        col = cols[0]
        if len(cols) == 1 and col.dtype.kind in "iu" and not self.keys and col.size:
            lo = min(int(col.min()), self.base) if len(self.direct) else int(col.min())
            top = max(int(col.max()) + 1, self.base + len(self.direct))
            if top - lo <= self.DIRECT_LIMIT:
                return self._direct(col, lo, top)
        if len(self.direct):  # leave the array for the dict from now on
            known = np.flatnonzero(self.direct >= 0)
            self.keys = {(int(v) + self.base,): int(self.direct[v]) for v in known}
            self.direct = np.full(0, -1, dtype=np.int64)
        if len(cols) == 1:
            codes, uniques = pd.factorize(col)
            values = [(u,) for u in uniques.tolist()]
        else:
            codes, uniques = pd.MultiIndex.from_arrays(cols).factorize()
            values = [tuple(u) for u in uniques.tolist()]
        keys = self.keys
        ids = np.fromiter((keys.setdefault(v, len(keys)) for v in values), np.int64,
                          len(values))
        self.size = len(keys)
        return ids[codes]

    def find(self, cols: list[np.ndarray]) -> np.ndarray:
        """The ids of known keys, -1 for keys never seen (nothing is numbered)."""
        col = cols[0]
        if len(self.direct) and len(cols) == 1 and col.dtype.kind in "iu":
            at = col.astype(np.int64) - self.base
            inside = (at >= 0) & (at < len(self.direct))
            out = np.full(col.size, -1, dtype=np.int64)
            out[inside] = self.direct[at[inside]]
            return out
        values = zip(*(c.tolist() for c in cols), strict=True)
        return np.fromiter((self.keys.get(tuple(v), -1) for v in values), np.int64,
                           col.size)

    def values(self, ids: np.ndarray) -> list[np.ndarray]:
        """The key values (one array per partition attribute) of these ids."""
        if len(self.direct):
            order = np.full(self.size, -1, dtype=np.int64)
            known = np.flatnonzero(self.direct >= 0)
            order[self.direct[known]] = known + self.base
            return [order[ids]]
        by_id: list[Any] = [None] * self.size
        for key, i in self.keys.items():
            by_id[i] = key
        rows = [by_id[i] for i in ids.tolist()]
        width = len(by_id[0]) if by_id else 1
        return [np.array([r[j] for r in rows]) for j in range(width)]

    def _direct(self, col: np.ndarray, lo: int, top: int) -> np.ndarray:
        """Ids of ``col`` by the array, widened to cover keys ``lo .. top - 1``; new keys
        are numbered in order of value (ids are internal)."""
        if not len(self.direct) or lo < self.base or top > self.base + len(self.direct):
            span = top - lo
            if len(self.direct):  # grow to the right by doubling, as a list does
                span = max(span, min(2 * len(self.direct), self.DIRECT_LIMIT))
            wider = np.full(span, -1, dtype=np.int64)
            offset = self.base - lo
            wider[offset:offset + len(self.direct)] = self.direct
            self.direct, self.base = wider, lo
        at = col.astype(np.int64) - self.base
        ids = self.direct[at]
        new = ids < 0
        if new.any():
            seen = np.zeros(len(self.direct), dtype=bool)
            seen[at[new]] = True
            fresh = np.flatnonzero(seen)  # numbered in order of value (ids are internal)
            self.direct[fresh] = np.arange(self.size, self.size + fresh.size)
            self.size += fresh.size
            ids = self.direct[at]
        return ids


class Outputs:
    """The outputs of one fed batch, collected as columns and put in stream order."""

    def __init__(self, type_: str, names: list[str]):
        self.type, self.names = type_, names
        self.parts: list[tuple] = []

    def add(self, pos: np.ndarray, sub: int | np.ndarray, fields: list,
            times: np.ndarray) -> None:
        """Outputs at batch positions ``pos``, ordered at one position by ``sub`` (one
        number, or one per output)."""
        self.parts.append((pos, sub, fields, times))

    def _columns(self) -> tuple[dict[str, np.ndarray], int]:
        """The output fields as arrays in stream order (object arrays with None where a
        value does not exist)."""
        if not self.parts:
            return {}, 0
        pos = np.concatenate([p[0] for p in self.parts])
        subs = [p[1] for p in self.parts]
        if any(isinstance(x, np.ndarray) for x in subs):
            order = np.lexsort((np.concatenate([np.broadcast_to(x, p[0].shape) for x, p in
                                                zip(subs, self.parts, strict=True)]), pos))
        elif len(self.parts) == 1:  # distinct positions: ranked without a sort
            rank = np.empty(int(pos.max()) + 1, dtype=np.int64)
            rank[pos] = np.arange(pos.size)
            seen = np.zeros(rank.size, dtype=bool)
            seen[pos] = True
            order = rank[seen]
        elif len(set(subs)) == 1:
            order = np.argsort(pos, kind="stable")
        else:
            sub = np.concatenate([np.full(p[0].size, p[1]) for p in self.parts])
            order = np.lexsort((sub, pos))
        cols: dict[str, np.ndarray] = {}
        for j, name in enumerate(self.names):
            vals = _concat([p[2][j][0] for p in self.parts])[order]
            bads = [p[2][j][1] for p in self.parts]
            if any(x is not None for x in bads):
                bad = np.concatenate([np.zeros(p[0].size, bool) if x is None else x
                                      for p, x in zip(self.parts, bads, strict=True)])[order]
                vals = vals.astype(object)
                vals[bad] = None
            cols[name] = vals
        if "time" not in cols:
            cols["time"] = _concat([p[3] for p in self.parts])[order]
        return cols, pos.size

    def result(self, frame: bool) -> list[dict] | pd.DataFrame:
        cols, n = self._columns()
        if frame:
            names = ["type", *self.names] + ["time"] * ("time" not in self.names)
            if not n:
                return pd.DataFrame(columns=names)
            kind = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), [self.type])
            return pd.DataFrame({"type": kind, **cols})
        if not n:
            return []
        lists = [col.tolist() for col in cols.values()]
        return list(map(_record_builder(list(cols)), repeat(self.type, n), *lists))


def _record_builder(fields: list[str]):
    """``f(type, *values) -> {"type": type, field: value, ..}``: a dict display compiled
    for these field names (about twice as fast as ``dict(zip(..))`` per record)."""
    args = ", ".join(f"v{j}" for j in range(len(fields) + 1))
    body = ", ".join(f"{name!r}: v{j}" for j, name in enumerate(["type", *fields]))
    return eval(f"lambda {args}: {{{body}}}")  # noqa: S307 (names are repr()-quoted)


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    try:
        return np.concatenate(arrays)
    except (TypeError, ValueError):
        out = np.empty(sum(a.size for a in arrays), dtype=object)
        out[:] = [x for a in arrays for x in a.tolist()]
        return out


def resize(arr: np.ndarray, n: int, fill: Any) -> np.ndarray:
    out = np.full(n, fill, dtype=arr.dtype)
    out[:len(arr)] = arr
    return out


def value_codes(events: Any, column: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(code per event, distinct values in order of first appearance) of ``column``."""
    try:
        values = events[column].to_numpy() if hasattr(events, "columns") else \
            np.asarray([e[column] for e in events])
    except KeyError:
        raise QueryError(f"work_by={column!r}: the events have no such attribute") from None
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.asarray(values)
    codes, uniques = pd.factorize(values)
    return codes.astype(np.int64), np.asarray(uniques)


def equal_runs(codes: np.ndarray) -> list[tuple[int, int]]:
    """The runs of equal consecutive ``codes`` as (first, end) positions (none if empty)."""
    if not codes.size:
        return []
    cut = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    bounds = [0, *cut.tolist(), codes.size]
    return list(zip(bounds[:-1], bounds[1:], strict=True))
