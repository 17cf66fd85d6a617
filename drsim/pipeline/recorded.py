"""Recorded meter readings: what ``drsim run --export-readings`` writes and ``drsim monitor``
reads (docs/monitor.md).

One row per household and minute of the DR program ``[t_start, t_end)`` (:data:`ROWS`):
the household's id and group, the minute, its metered load P [kW] and the meter's energy
register since ``t_start`` (``accLoad`` of Table 6.1 at that minute) [kWh], and the
utility's estimates B̂ and P̂ for that household and minute [kW] (§6.2.1, Eq. 6.4).

A reading that did not arrive (``meters.reading_loss``) is a row without ``kw`` and
``energy_kwh`` (the utility's own estimates are still there); a household-minute with no
row at all is a lost reading as well. Lost readings are not errors: the monitoring handles
them as ``monitoring.max_missing`` says (:mod:`drsim.utility.readings`). Rows that cannot be
readings are: their checks (:func:`row_problems`) name the column, and ``drsim monitor``
stops with one line (or, with ``--lenient``, counts and drops them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from drsim.household.behaviour_data import load_ev_data
from drsim.household.population import Population
from drsim.scenario import Scenario
from drsim.units import DAY, clock

__all__ = ["CHUNK_READINGS", "ROWS", "ReadingsError", "ReadingsCheck",
           "Grid", "readings_batch", "reading_rows", "check_readings", "read_chunk",
           "row_problems", "problems", "check_schema", "household_ceiling_kw", "register_backwards"]

#: one exported chunk (a row per chunk: its households × program minutes, row-major)
CHUNK_READINGS = pa.schema([
    ("chunk", pa.int64()), ("group", pa.int32()), ("first", pa.int64()),
    ("households", pa.int64()), ("t_start", pa.int64()),
    ("kw", pa.list_(pa.float64())), ("energy_kwh", pa.list_(pa.float64())),
    ("baseline_kw", pa.list_(pa.float64())), ("expected_kw", pa.list_(pa.float64()))])
#: the dataset's rows
ROWS = pa.schema([("household", pa.int64()), ("group", pa.int32()), ("time", pa.int64()),
                  ("kw", pa.float64()), ("energy_kwh", pa.float64()),
                  ("baseline_kw", pa.float64()), ("expected_kw", pa.float64())])
REQUIRED = ("household", "group", "time", "kw", "baseline_kw", "expected_kw")
OPTIONAL = ("energy_kwh",)
LOADS = ("kw", "energy_kwh", "baseline_kw", "expected_kw")
#: a register below an earlier reading of its household (:func:`register_backwards`)
BACKWARDS = "energy_kwh: below an earlier reading of the household (the register went back)"
#: slack on the register's bound: float rounding of a sum of many minutes [kWh]
REGISTER_SLACK = 1e-6


class ReadingsError(ValueError):
    """Readings that cannot be monitored: one line naming the file and the column."""


def readings_batch(chunk: int, group: int, first: int, t_start: int, kw: np.ndarray,
                   energy_kwh: np.ndarray, baseline_kw: np.ndarray, expected_kw: np.ndarray,
                   lost: np.ndarray | None = None) -> pa.RecordBatch:
    """One chunk's readings as a row of :data:`CHUNK_READINGS`.

    Parameters
    ----------
    chunk, group, first : int
        The chunk, its group and its first household id.
    t_start : int
        The first minute of the arrays [minutes since midnight].
    kw, energy_kwh, baseline_kw, expected_kw : numpy.ndarray
        (households, minutes): P [kW], the energy since ``t_start`` [kWh], B̂ and P̂ [kW].
    lost : numpy.ndarray, optional
        (households, minutes) the readings that did not arrive: their ``kw`` and
        ``energy_kwh`` are NaN (null in the dataset).
    """
    n = len(kw)
    if lost is not None:
        kw = np.where(lost, np.nan, kw)
        energy_kwh = np.where(lost, np.nan, energy_kwh)

    def flat(values: np.ndarray) -> pa.Array:
        return pa.array([pa.array(np.asarray(values, np.float64).ravel())],
                        pa.list_(pa.float64()))

    return pa.RecordBatch.from_arrays(
        [pa.array([chunk], pa.int64()), pa.array([group], pa.int32()),
         pa.array([first], pa.int64()), pa.array([n], pa.int64()),
         pa.array([t_start], pa.int64()), flat(kw), flat(energy_kwh), flat(baseline_kw),
         flat(expected_kw)], schema=CHUNK_READINGS)


def reading_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of :data:`CHUNK_READINGS` as the dataset's rows (:data:`ROWS`); a NaN load is
    a lost reading (null)."""
    parts = []
    for row in rows.itertuples(index=False):  # one row per chunk
        n = int(row.households)
        kw = np.asarray(row.kw, np.float64)
        m = len(kw) // max(n, 1)
        parts.append(pd.DataFrame({
            "household": np.repeat(np.arange(row.first, row.first + n, dtype=np.int64), m),
            "group": np.full(n * m, row.group, np.int32),
            "time": np.tile(np.arange(row.t_start, row.t_start + m, dtype=np.int64), n),
            **{c: np.asarray(getattr(row, c), np.float64) for c in LOADS}}))
    # NaN (a lost reading) becomes null when the frame is written
    return pd.concat(parts, ignore_index=True) if parts else ROWS.empty_table().to_pandas()


# --------------------------------------------------------------------------- checks
@dataclass
class ReadingsCheck:
    """What the checks found in a readings dataset.

    Attributes
    ----------
    path : str
        The dataset (a Parquet file or folder).
    rows : int
        Its rows.
    bad : dict of str to int
        Rows that cannot be readings, by ``"column: problem"`` (dropped with ``--lenient``).
    lost : int
        Household-minutes of the program without a reading (no row, or no ``kw``).
    has_energy : bool
        Whether the dataset has the meters' registers (``energy_kwh``).
    households : int
        The scenario's households.
    silent : int
        Those with no reading at all in the program (all their readings count as lost).
    """

    path: str
    rows: int = 0
    bad: dict[str, int] = field(default_factory=dict)
    lost: int = 0
    has_energy: bool = False
    households: int = 0
    silent: int = 0

    def as_dict(self) -> dict:
        return {"file": Path(self.path).name, "rows": self.rows,
                "bad_rows_dropped": dict(self.bad), "lost_readings": self.lost,
                "households_without_readings": self.silent,
                "energy_register": self.has_energy}

    @property
    def warning(self) -> str | None:
        """One line when households of the scenario have no reading at all, else None."""
        if not self.silent:
            return None
        return (f"warning: {self.silent:,} of {self.households:,} households of the scenario "
                f"have no reading at all in readings {self.path} (their readings count as "
                "lost)")


def household_ceiling_kw(scenario: Scenario) -> float:
    """The most one household of ``scenario`` can draw [kW]: every appliance of its
    catalogue that a household can own (lighting, and those of ownership above 0 after the
    scenario's electric heating) at its highest phase power (or its standby, if higher) at
    once, plus the largest charger of its EV data when it has EVs (docs/monitor.md, "Bad
    rows are errors"). A bound, not a likely load: a household draws 20-25 appliances
    (§6.3.1) and runs few at once."""
    cat = Population(scenario, 0, 0).catalogue  # the day's catalogue, cached per scenario
    peak = np.maximum(cat.phase_kw.max(axis=1), cat.standby_kw)
    ownable = cat.always_owned | (cat.ownership > 0)
    charger = 0.0
    if scenario.ev.penetration > 0:
        ref = scenario.ev.data
        charger = _largest_charger(ref, None if ref == "default" else
                                   str(scenario.resolve_path(".")))
    return float(peak[ownable].sum()) + charger


@lru_cache(maxsize=8)
def _largest_charger(ref: str, base: str | None) -> float:
    """The largest home charger of the EV data ``ref`` [kW] (its ``charger_kw`` values)."""
    return float(load_ev_data(ref, None if base is None else Path(base)).charger_kw.values.max())


def _dataset(path: str | Path) -> ds.Dataset:
    p = Path(path)
    if not p.exists():
        raise ReadingsError(f"readings {path}: no such file or folder")
    try:
        return ds.dataset(p, format="parquet")
    except (pa.ArrowInvalid, OSError) as exc:
        raise ReadingsError(f"readings {path}: not a Parquet file or dataset ({exc})") from None


def check_schema(where: str, schema: pa.Schema) -> None:
    """ReadingsError for a missing column, a repeated one or one of the wrong type, one
    line starting with ``where`` (the file, as the message names it)."""
    for name in REQUIRED:
        if name not in schema.names:
            raise ReadingsError(f"{where}: column {name!r} is missing (needed: "
                                f"{', '.join(REQUIRED)}; optional: {', '.join(OPTIONAL)})")
    for name in (*REQUIRED, *OPTIONAL):
        if name not in schema.names:
            continue
        if schema.names.count(name) > 1:
            raise ReadingsError(f"{where}: column {name!r} is there "
                                f"{schema.names.count(name)} times, expected once")
        kind = schema.field(name).type
        integer = name in ("household", "group", "time")
        ok = pa.types.is_integer(kind) if integer else \
            (pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_null(kind))
        if not ok:
            raise ReadingsError(f"{where}: column {name!r} is {kind}, expected "
                                f"{'an integer' if integer else 'a number'}")


def row_problems(batch: pa.RecordBatch | pa.Table, scenario: Scenario,
                 ceiling_kw: float | None = None) -> dict[str, np.ndarray]:
    """Per ``"column: problem"``, the rows of ``batch`` that cannot be readings (but
    duplicates and registers that go back, which need every row: :func:`check_readings`;
    :func:`problems`)."""
    loads = {}
    for name in LOADS:
        if name not in batch.schema.names or pa.types.is_null(batch.column(name).type):
            continue
        values = pc.cast(batch.column(name), pa.float64())
        loads[name] = (values.fill_null(0.0).to_numpy(zero_copy_only=False),
                       pc.is_valid(values).to_numpy(zero_copy_only=False))

    def ints(name: str) -> tuple[np.ndarray, np.ndarray]:
        column = batch.column(name)
        given = pc.is_valid(column).to_numpy(zero_copy_only=False)
        values = pc.cast(column.fill_null(0), pa.int64(), safe=False)
        return values.to_numpy(zero_copy_only=False), given

    (household, has_house), (group, has_group), (minute, has_time) = \
        ints("household"), ints("group"), ints("time")
    out = problems(household, group, minute, loads, scenario, ceiling_kw)
    for name, given in (("household", has_house), ("group", has_group), ("time", has_time)):
        if not given.all():
            out = {f"{name}: no value": ~given} | {what: mask & given for what, mask in
                                                   out.items()}
    return out


def problems(household: np.ndarray, group: np.ndarray, minute: np.ndarray,
             loads: dict[str, tuple[np.ndarray, np.ndarray]], scenario: Scenario,
             ceiling_kw: float | None = None) -> dict[str, np.ndarray]:
    """Per ``"column: problem"``, the rows that cannot be readings: a household outside the
    scenario, a group that is not the household's, a time outside the day, a load (values
    and whether given, by column) that is negative or not finite, or more than a household
    can draw (``ceiling_kw``, default :func:`household_ceiling_kw`): P, B̂ or P̂ above it, a
    register above it times the time since the program's start (a load not given is a lost
    reading, allowed)."""
    ceiling = household_ceiling_kw(scenario) if ceiling_kw is None else ceiling_kw
    t_start = scenario.dr_program.start_minute
    ends = np.array([hi for _, hi in scenario.group_ranges()], dtype=np.int64)
    unknown = (household < 0) | (household >= scenario.households)
    own = np.searchsorted(ends, household, side="right")
    out = {"household: not a household of the scenario": unknown,
           "group: not the household's group": ~unknown & (group != own),
           "time: outside the day (0-1439)": (minute < 0) | (minute >= DAY)}
    for name, (values, given) in loads.items():
        sane = np.isfinite(values) & (values >= 0)
        out[f"{name}: negative or not finite"] = given & ~sane
        if name == "energy_kwh":  # the register counts from t_start: at most ceiling × time
            since = minute - t_start
            bound = ceiling * np.maximum(since, 0) / 60.0 * (1 + 1e-9) + REGISTER_SLACK
            out[f"energy_kwh: more than {ceiling:.1f} kW for the minutes since "
                f"{clock(t_start)} (the household ceiling)"] = \
                given & sane & (since >= 0) & (values > bound)
        else:
            out[f"{name}: above {ceiling:.1f} kW, the household ceiling"] = \
                given & sane & (values > ceiling)
    return out


def register_backwards(household: np.ndarray, minute: np.ndarray, energy: np.ndarray
                       ) -> np.ndarray:
    """Which readings' register (``energy_kwh``, given) is below an earlier reading of the
    same household: a meter's register never goes back. One reading per household and
    minute, in any order; dropping the rows found leaves every household's register
    non-decreasing (a reading below the highest before it is dropped, so the highest is
    that of the readings kept)."""
    key = household.astype(np.int64) * DAY + minute.astype(np.int64)
    order = None if _increasing(key) else np.argsort(key, kind="stable")
    h = household if order is None else household[order]
    e = energy if order is None else energy[order]
    back = e < pd.Series(e).groupby(h, sort=False).cummax().to_numpy()
    if order is None:
        return back
    out = np.empty_like(back)
    out[order] = back
    return out


def _increasing(key: np.ndarray) -> bool:
    """Whether ``key`` is strictly increasing (sorted without repeats)."""
    return bool(np.all(key[1:] > key[:-1]))


def _first_bad(batch: pa.RecordBatch, mask: np.ndarray, column: str | None = None) -> str:
    """Where the first row of ``mask`` is: its household and time (and ``column``'s
    value)."""
    i = int(np.flatnonzero(mask)[0])
    house = batch.column("household")[i].as_py()
    minute = batch.column("time")[i].as_py()
    when = clock(minute) if isinstance(minute, int) and 0 <= minute < DAY else minute
    value = f", {column} {batch.column(column)[i].as_py()!r}" if column in LOADS else ""
    return f"household {house} at {when}{value}"


def check_readings(path: str | Path, scenario: Scenario, t_start: int, t_end: int,
                   lenient: bool = False) -> ReadingsCheck:
    """Check the readings at ``path`` before any work: the schema, then every row.

    Raises
    ------
    ReadingsError
        One line naming the file and the column: a missing column or a wrong type; unless
        ``lenient``, the first kind of bad row found (:func:`row_problems`), duplicate
        readings (a household and minute twice) or a register that goes back
        (:func:`register_backwards`); and, even with ``lenient``, readings with no reading
        of the program ``[t_start, t_end)``.
    """
    dataset = _dataset(path)
    check_schema(f"readings {path}", dataset.schema)
    columns = [c for c in (*REQUIRED, *OPTIONAL) if c in dataset.schema.names]
    check = ReadingsCheck(str(path), has_energy="energy_kwh" in columns,
                          households=scenario.households)
    ceiling = household_ceiling_kw(scenario)
    value = "energy_kwh" if check.has_energy else "kw"
    keys, given, registers = [], [], []  # of every good row
    first = None  # the first kind of bad row found, and where
    for batch in dataset.to_batches(columns=columns):
        check.rows += batch.num_rows
        bad = np.zeros(batch.num_rows, dtype=bool)
        for what, mask in row_problems(batch, scenario, ceiling).items():
            if mask.any():
                if first is None:
                    first = what, _first_bad(batch, mask, what.split(": ", 1)[0])
                check.bad[what] = check.bad.get(what, 0) + int((mask & ~bad).sum())
            bad |= mask
        if first is not None and not lenient:
            continue  # only counting now
        good = ~bad
        household = batch.column("household").to_numpy(zero_copy_only=False)[good]
        minute = batch.column("time").to_numpy(zero_copy_only=False)[good]
        keys.append(household.astype(np.int64) * DAY + minute.astype(np.int64))
        given.append(pc.is_valid(batch.column(value)).to_numpy(zero_copy_only=False)[good])
        if check.has_energy:
            registers.append(pc.cast(batch.column("energy_kwh"), pa.float64())
                             .to_numpy(zero_copy_only=False)[good])
    if first is not None and not lenient:
        (what, where), n = first, check.bad[first[0]]
        column, problem = what.split(": ", 1)
        raise ReadingsError(f"readings {path}: column {column!r}: {problem} in {n:,} row(s) "
                            f"(first: {where}); --lenient drops them")
    key = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    # the rows in (household, time) order; of duplicates the first in the file is kept
    order = np.arange(len(key)) if _increasing(key) else np.argsort(key, kind="stable")
    repeat = key[order[1:]] == key[order[:-1]]
    duplicates = int(repeat.sum())
    if duplicates:
        house, minute = divmod(int(key[order[1:][repeat].min()]), DAY)
        if not lenient:
            raise ReadingsError(f"readings {path}: columns household and time: {duplicates} "
                                f"duplicate readings (first: household {house} at "
                                f"{clock(minute)}); --lenient keeps the first of each")
        check.bad["household, time: duplicate reading"] = duplicates
    rows = order[np.r_[True, ~repeat]] if len(key) else order
    household, minute = np.divmod(key[rows], DAY)
    # the program's household-minutes with a reading, each once
    flags = np.concatenate(given) if given else np.zeros(0, dtype=bool)
    arrived = (minute >= t_start) & (minute < t_end) & flags[rows]
    if check.has_energy and arrived.any():
        back = np.zeros(len(rows), dtype=bool)
        back[arrived] = register_backwards(household[arrived], minute[arrived],
                                           np.concatenate(registers)[rows[arrived]])
        if back.any():
            if not lenient:
                house, at = divmod(int(key[rows[back].min()]), DAY)
                raise ReadingsError(f"readings {path}: column 'energy_kwh': the register goes "
                                    f"back in {int(back.sum())} row(s) (first: household "
                                    f"{house} at {clock(at)}, below an earlier reading); "
                                    "--lenient drops them")
            check.bad[BACKWARDS] = int(back.sum())
            arrived &= ~back
    if not arrived.any():
        raise ReadingsError(f"readings {path}: no reading of the program "
                            f"{clock(t_start)}-{clock(t_end)} among its {check.rows:,} row(s) "
                            f"(none{' left once the bad ones are dropped' if check.bad else ''}"
                            f" has a 'time' inside it and a value in {value!r}); nothing to "
                            "monitor")
    check.lost = scenario.households * (t_end - t_start) - int(arrived.sum())
    heard = np.bincount(household[arrived], minlength=scenario.households) > 0
    check.silent = scenario.households - int(heard.sum())
    return check


# --------------------------------------------------------------------------- one chunk
@dataclass
class Grid:
    """One chunk's readings as (households, program minutes) arrays.

    ``kw`` and ``energy_kwh`` are NaN where no reading arrived; B̂ and P̂ are carried
    forward from a household's previous minute (0 before its first) where its row is
    missing, as the stream's meter stage does (drsim.pipeline.stream_tiers); ``lost``
    marks the missing readings.
    """

    kw: np.ndarray
    energy_kwh: np.ndarray | None
    baseline_kw: np.ndarray
    expected_kw: np.ndarray

    @property
    def lost(self) -> np.ndarray:
        return np.isnan(self.kw if self.energy_kwh is None else self.energy_kwh)

    @property
    def filled_kw(self) -> np.ndarray:
        """P with each lost minute's load carried from the household's previous reading
        (0 before its first): what the tiers' sums use where nothing arrived."""
        return _filled(self.kw)


def _filled(values: np.ndarray) -> np.ndarray:
    """Each row's NaN carried forward from its previous value (0 before its first)."""
    if not np.isnan(values).any():
        return values
    return pd.DataFrame(values.T).ffill().fillna(0.0).to_numpy().T.copy()


def read_chunk(path: str | Path, first: int, count: int, t_start: int, t_end: int,
               scenario: Scenario, lenient: bool) -> Grid:
    """The readings of households ``first .. first+count-1`` over ``[t_start, t_end)``
    (:class:`Grid`); with ``lenient`` the rows that cannot be readings are dropped, of
    duplicates the first is kept and registers that go back are dropped
    (:func:`check_readings` counted them)."""
    dataset = _dataset(path)
    columns = [c for c in (*REQUIRED, *OPTIONAL) if c in dataset.schema.names]
    household = ds.field("household")
    table = dataset.to_table(columns=columns, filter=(household >= first)
                             & (household < first + count))
    if lenient and table.num_rows:
        bad = np.logical_or.reduce(list(row_problems(table, scenario).values()))
        table = table.filter(pa.array(~bad))
    minute = table.column("time").to_numpy(zero_copy_only=False).astype(np.int64)
    inside = (minute >= t_start) & (minute < t_end)
    row = table.column("household").to_numpy(zero_copy_only=False).astype(np.int64)[inside]
    col = minute[inside] - t_start
    m = t_end - t_start
    _, keep = np.unique((row - first) * m + col, return_index=True)  # first of duplicates
    row, col = row[keep] - first, col[keep]
    taken = np.flatnonzero(inside)[keep]
    if lenient and "energy_kwh" in columns and len(taken):  # as check_readings dropped them
        energy = pc.cast(table.column("energy_kwh"), pa.float64()).to_numpy(
            zero_copy_only=False)[taken]
        given = ~np.isnan(energy)
        back = np.zeros(len(taken), dtype=bool)
        back[given] = register_backwards(row[given], col[given], energy[given])
        row, col, taken = row[~back], col[~back], taken[~back]

    def grid(name: str) -> np.ndarray:
        out = np.full((count, m), np.nan)
        values = pc.cast(table.column(name), pa.float64()).to_numpy(zero_copy_only=False)
        out[row, col] = values[taken]
        return out

    energy = grid("energy_kwh") if "energy_kwh" in columns else None
    return Grid(grid("kw"), energy, _filled(grid("baseline_kw")), _filled(grid("expected_kw")))
