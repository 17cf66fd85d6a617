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
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drsim.utility.monitoring import MonitoringPlan

__all__ = ["PASSES", "file_rows", "width", "intervals", "write_intervals", "write_warmup",
           "Clock"]

#: the passes a simulated run's stream carries (the adaptive pass from its announcement)
PASSES = ("expected", "traditional", "adaptive")


def file_rows(width: int) -> pa.Schema:
    """A stream file's rows: one per household and interval, its readings in ``width``
    columns per series (the interval's minutes from ``time``, NaN past its end): the
    utility's P̂ (``phat_kw_0``, ...: λ accumulates it) and each pass's P
    (``traditional_kw_0``, ...; NaN for a reading lost on the way) with the meter's
    register at the interval's first minute (``traditional_kwh``: the energy since
    ``t_start``, a test's accLoad exactly as the batch run has it, after lost readings
    too; NaN when that reading is lost), null for a pass the file does not hold, with
    the pass's realised Eq. 6.2 outcome per household (``traditional_noncompliant``:
    evaluation only). A household's interval data in one row, as meters send blocks of
    interval data; B̂ adds nothing in a simulated run."""
    return pa.schema([("household", pa.int64()), ("group", pa.int64()), ("time", pa.int64()),
                      *((f"phat_kw_{j}", pa.float64()) for j in range(width)),
                      *(f for p in PASSES for f in (
                          *((f"{p}_kw_{j}", pa.float64()) for j in range(width)),
                          (f"{p}_kwh", pa.float64()), (f"{p}_noncompliant", pa.bool_())))])


def width(plan: MonitoringPlan) -> int:
    """The longest interval [minutes]: the columns per series of a stream file."""
    return int(np.diff(intervals(plan)).max())


def _flat(values: np.ndarray | None, name: str, size: int, n: int) -> dict[str, np.ndarray]:
    """(households, m) values as ``size`` columns ``name_j`` (NaN past m; None: all NaN)."""
    m = 0 if values is None else values.shape[1]
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


def write_intervals(staging: Path, tag: str, chunk: int, first: int, group: int,
                    plan: MonitoringPlan, kw: dict[str, np.ndarray],
                    expected_kw: np.ndarray | None = None,
                    noncompliant: dict[str, np.ndarray] | None = None,
                    start: int | None = None,
                    registers: dict[str, np.ndarray] | None = None) -> None:
    """Write one chunk's readings as one file per interval, from the interval holding
    minute ``start`` on (default: all): ``staging/<j>/<tag>-<chunk>.parquet``.

    ``kw``: pass -> P (NaN where a reading is lost), ``expected_kw``: P̂, ``registers``:
    pass -> the meters' registers (energy since ``t_start`` [kWh], NaN where lost), each
    (households, program minutes); ``noncompliant``: pass -> each household's realised
    Eq. 6.2 outcome."""
    edges, size = intervals(plan), width(plan)
    schema = file_rows(size)
    n = len(next(iter(kw.values())))
    for j in range(len(edges) - 1):
        lo, hi = int(edges[j]), int(edges[j + 1])
        if start is not None and hi <= start:
            continue
        cut = slice(lo - plan.t_start, hi - plan.t_start)
        columns: dict[str, Any] = {
            "household": np.arange(first, first + n, dtype=np.int64),
            "group": np.full(n, group, dtype=np.int64), "time": np.full(n, lo, np.int64),
            **_flat(None if expected_kw is None else expected_kw[:, cut], "phat_kw", size, n)}
        for name in PASSES:
            columns.update(_flat(kw[name][:, cut] if name in kw else None, f"{name}_kw",
                                 size, n))
            register = (registers or {}).get(name)
            columns[f"{name}_kwh"] = np.full(n, np.nan) if register is None else \
                register[:, lo - plan.t_start]
            given = (noncompliant or {}).get(name)
            columns[f"{name}_noncompliant"] = pa.nulls(n, pa.bool_()) if given is None \
                else pa.array(given, pa.bool_())
        folder = staging / f"{j:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        hidden = folder / f".{tag}-{chunk:05d}.parquet"
        pq.write_table(pa.table(columns, schema=schema), hidden)
        os.replace(hidden, folder / f"{tag}-{chunk:05d}.parquet")


def write_warmup(source: Path, firsts: list[int], group_of: list[int],
                 plan: MonitoringPlan) -> None:
    """A file the stream reads before the program: one reading per pass and chunk at the
    minute before ``t_start``, which the tiers ignore; it starts the stream's workers and
    states during the notice, not in the program's first interval."""
    n, size = len(firsts), width(plan)
    zeros = np.zeros((n, 1))
    table = pa.table({
        "household": np.asarray(firsts, np.int64), "group": np.asarray(group_of, np.int64),
        "time": np.full(n, plan.t_start - 1, np.int64),
        **_flat(zeros, "phat_kw", size, n),
        **{k: v for p in PASSES for k, v in (*_flat(zeros, f"{p}_kw", size, n).items(),
                                             (f"{p}_kwh", np.full(n, np.nan)),
                                             (f"{p}_noncompliant", pa.nulls(n, pa.bool_())))}},
        schema=file_rows(size))
    hidden = source / ".warmup.parquet"
    pq.write_table(table, hidden)
    os.replace(hidden, source / "warmup.parquet")


def _join_passes(path: Path, other: Path) -> None:
    """A chunk's interval staged twice (the passes job's file, ``passes-<chunk>``, and the
    adaptive pass's, ``adaptive-<chunk>``, staged after the prediction) as one file:
    the passes' rows with the adaptive columns filled in (the households are in the same
    order in both), so that each household's interval is one row of the stream."""
    table, adaptive = pq.read_table(path), pq.read_table(other)
    for name in (f for f in table.schema.names if f.startswith("adaptive_")):
        table = table.set_column(table.schema.get_field_index(name), name,
                                 adaptive.column(name))
    hidden = path.with_name(f".{path.name}")
    pq.write_table(table, hidden)
    os.replace(hidden, path)
    other.unlink()


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
        """The simulated time [minutes since midnight]; as fast as it goes (an infinite
        speed), the end of the last interval released."""
        if not np.isfinite(self.speed):
            return float(self.edges[len(self.released)]) if self.released else self.notice
        return self.notice + (time.perf_counter() - self.started) * self.speed / 60.0

    def tick(self) -> int:
        """Release every interval that is due (and any file staged later for one released
        already, e.g. the adaptive pass's); return how many intervals are released."""
        due = 0
        while due < len(self.edges) - 1 and time.perf_counter() >= self.due(due):
            due += 1
        # The due folders are listed from the last to the first: write_intervals renames a
        # chunk's intervals in time order, so a file listed for one interval has its
        # earlier intervals' files listed too, and none arrives after a later one.
        listed = {j: {p.name for p in (self.staging / f"{j:04d}").glob("[!.]*.parquet")}
                  for j in reversed(range(due))}
        for j in range(due):
            folder = self.staging / f"{j:04d}"
            names = listed[j]
            for name in sorted(n for n in names if n.startswith("passes-")):
                other = name.replace("passes-", "adaptive-", 1)
                if other in names:  # first every join, then the renames
                    _join_passes(folder / name, folder / other)
                    names.discard(other)
            for name in sorted(names):
                path, target = folder / name, self.source / f"{j:04d}-{name}"
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
