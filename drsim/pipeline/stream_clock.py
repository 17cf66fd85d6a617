"""The simulated clock of a streamed run: the readings' files, interval by interval, played
into the stream at N times real time (docs/streaming.md).

The program's minutes are cut every δ minutes up to the first test, then at the test times:
one test interval ``[T, T + δ)`` after another, the last ending at ``t_end``. A chunk task
writes its households' readings of each interval to a staging folder (:func:`write_intervals`); the
clock moves an interval's files into the stream's source folder when the simulated time
reaches its end (:class:`Clock`), counted from the program's notice. A file is written under
a hidden name and renamed, so the stream never reads half a file.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drsim.utility.monitoring import MonitoringPlan

__all__ = ["SERIES", "file_rows", "width", "intervals", "write_intervals", "write_warmup",
           "Clock"]

#: the readings a simulated run's stream carries: P (the tests accumulate it into accLoad
#: exactly as the batch run does) and P̂ (for λ); the register and B̂ add nothing there
SERIES = ("kw", "expected_kw")


def file_rows(width: int) -> pa.Schema:
    """A stream file's rows: one per household and interval, its readings of each of
    :data:`SERIES` in ``width`` columns (``kw_0``, ``kw_1``, ...: the interval's minutes
    from ``time``, NaN past its end), the pass and, from a simulation, the household's
    realised Eq. 6.2 outcome (evaluation only): a household's interval data in one row, as
    meters send blocks of interval data."""
    return pa.schema([("household", pa.int64()), ("group", pa.int64()), ("time", pa.int64()),
                      ("pass", pa.string()), ("noncompliant", pa.bool_()),
                      *((f"{c}_{j}", pa.float64()) for c in SERIES for j in range(width))])


def width(plan: MonitoringPlan) -> int:
    """The longest interval [minutes]: the columns per series of a stream file."""
    return int(np.diff(intervals(plan)).max())


def _flat(values: np.ndarray, name: str, size: int) -> dict[str, np.ndarray]:
    """(households, m) values as ``size`` columns ``name_j`` (NaN past m)."""
    n, m = values.shape
    return {f"{name}_{j}": values[:, j] if j < m else np.full(n, np.nan)
            for j in range(size)}


def intervals(plan: MonitoringPlan) -> np.ndarray:
    """The boundaries of the stream's intervals: every δ minutes from ``t_start`` before
    the first test, the test times, ``t_end`` [minutes since midnight].

    Examples
    --------
    >>> plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> intervals(plan).tolist()
    [1110, 1115, 1120, 1125, 1130, 1135, 1140, 1145, 1150]
    """
    before = np.arange(plan.t_start, plan.t_first_test, plan.delta)
    return np.unique(np.r_[before, plan.test_times, plan.t_end])


def write_intervals(staging: Path, name: str, chunk: int, first: int, group: int,
                    plan: MonitoringPlan, columns: dict[str, np.ndarray],
                    noncompliant: np.ndarray | None = None, start: int | None = None) -> None:
    """Write one chunk's readings of pass ``name`` as one file per interval, from the
    interval holding minute ``start`` on (default: all): ``staging/<j>/<name>-<chunk>.parquet``.

    ``columns``: each of :data:`SERIES`, (households, program minutes)."""
    edges, size = intervals(plan), width(plan)
    schema = file_rows(size)
    n = len(columns["kw"])
    for j in range(len(edges) - 1):
        lo, hi = int(edges[j]), int(edges[j + 1])
        if start is not None and hi <= start:
            continue
        cut = slice(lo - plan.t_start, hi - plan.t_start)
        table = pa.table({
            "household": np.arange(first, first + n, dtype=np.int64),
            "group": np.full(n, group, dtype=np.int64), "time": np.full(n, lo, np.int64),
            "pass": pa.array([name] * n, pa.string()),
            "noncompliant": pa.array(noncompliant, pa.bool_()) if noncompliant is not None
            else pa.nulls(n, pa.bool_()),
            **{k: v for c in SERIES for k, v in _flat(columns[c][:, cut], c, size).items()}},
            schema=schema)
        folder = staging / f"{j:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        hidden = folder / f".{name}-{chunk:05d}.parquet"
        pq.write_table(table, hidden)
        os.replace(hidden, folder / f"{name}-{chunk:05d}.parquet")


def write_warmup(source: Path, names: tuple[str, ...], firsts: list[int], group_of: list[int],
                 plan: MonitoringPlan) -> None:
    """A file the stream reads before the program: one reading per pass and chunk at the
    minute before ``t_start``, which the tiers ignore; it starts the stream's workers and
    states during the notice, not in the program's first interval."""
    n, size = len(firsts) * len(names), width(plan)
    table = pa.table({
        "household": np.tile(np.asarray(firsts, np.int64), len(names)),
        "group": np.tile(np.asarray(group_of, np.int64), len(names)),
        "time": np.full(n, plan.t_start - 1, np.int64),
        "pass": pa.array(np.repeat(names, len(firsts)).tolist(), pa.string()),
        "noncompliant": pa.nulls(n, pa.bool_()),
        **{k: v for c in SERIES for k, v in _flat(np.zeros((n, 1)), c, size).items()}},
        schema=file_rows(size))
    hidden = source / ".warmup.parquet"
    pq.write_table(table, hidden)
    os.replace(hidden, source / "warmup.parquet")


@dataclass
class Clock:
    """Releases each interval's staged files into ``source`` when the simulated time,
    ``speed`` times real time from the notice, reaches the interval's end."""

    plan: MonitoringPlan
    notice: int  # the program's announcement [minutes since midnight]
    speed: float  # simulated seconds per real second
    staging: Path
    source: Path
    started: float = field(default_factory=time.perf_counter)
    released: dict[int, float] = field(default_factory=dict)  # interval -> when (perf_counter)

    @property
    def edges(self) -> np.ndarray:
        return intervals(self.plan)

    def due(self, j: int) -> float:
        """When interval ``j`` is due [s on the perf_counter clock]."""
        return self.started + (int(self.edges[j + 1]) - self.notice) * 60.0 / self.speed

    def now(self) -> float:
        """The simulated time [minutes since midnight]."""
        return self.notice + (time.perf_counter() - self.started) * self.speed / 60.0

    def tick(self) -> int:
        """Release every interval that is due (and any file staged later for one released
        already, e.g. the adaptive pass's); return how many intervals are released."""
        for j in range(len(self.edges) - 1):
            if time.perf_counter() < self.due(j):
                break
            folder = self.staging / f"{j:04d}"
            for path in sorted(folder.glob("[!.]*.parquet")) if folder.is_dir() else []:
                target = self.source / f"{j:04d}-{path.name}"
                if target.exists():  # released before a restart: the stream has it
                    path.unlink()
                else:
                    os.replace(path, target)
            self.released.setdefault(j, time.perf_counter())
        return len(self.released)

    def finished(self) -> bool:
        return len(self.released) == len(self.edges) - 1

    def wait(self) -> float:
        """Seconds until the next interval is due (0 when all are out)."""
        if self.finished():
            return 0.0
        return max(0.0, self.due(len(self.released)) - time.perf_counter())
