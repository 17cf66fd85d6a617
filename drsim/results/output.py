"""Result folders: written complete or not at all.

A folder is written to a temporary sibling and renamed into place when complete, so a
failed or interrupted run never leaves a folder that looks like a finished result; only a
folder drsim wrote (or an empty one) is ever replaced (:mod:`drsim.results.folders`). The
``simulate`` folder holds summary.json, load_curves.parquet and its figures; the ``run``
folder (:class:`~drsim.results.run_data.RunData`, :func:`write_run`) adds the tiers' events,
the thresholds and, with load shedding, the groups' cost models (what ``drsim monitor``
reads in place of the stage that fitted them: :func:`read_kept`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from drsim.pipeline.pass_names import pass_order
from drsim.results import folders
from drsim.results.figures import (
    plot_breakdown,
    plot_compliance_timeline,
    plot_run_demand,
    plot_system_demand,
)
from drsim.results.folders import check_output, staged
from drsim.results.run_data import TIER_TABLES, RunData, run_data
from drsim.units import DAY as MINUTES

if TYPE_CHECKING:
    from drsim.pipeline.stages import Run, Simulation

SUMMARY = "summary.json"
LOAD_CURVES = "load_curves.parquet"
SYSTEM_FIGURE = "system_demand.png"
BREAKDOWN_FIGURE = "breakdown.png"
COMPLIANCE_FIGURE = "compliance_timeline.png"
THRESHOLDS = "thresholds.parquet"
USER_EVENTS = "events_user_events.parquet"  # a Parquet dataset: a folder of part files
READINGS = "readings"  # with --export-readings: the traditional pass's meter readings (a dataset)
STREAM = folders.STREAM  # a streamed run's live folder: alerts as they happened, plan, checkpoint
SIMULATION_FILES = [SUMMARY, LOAD_CURVES, SYSTEM_FIGURE, BREAKDOWN_FIGURE]
_TABLE_FILES = {"load_curves": LOAD_CURVES, "thresholds": THRESHOLDS}

EVENT_TABLES = {  # the tier tables and their column types (extra columns are kept)
    "user_events": {"pass": pa.string(), "time": pa.int64(), "houseID": pa.int64(),
                    "groupID": pa.int64(), "accLoad": pa.float64()},
    "group_alerts": {"pass": pa.string(), "time": pa.int64(), "groupID": pa.int64(),
                     "sumAccLoad": pa.float64()},
    "group_events": {"pass": pa.string(), "time": pa.int64(), "groupID": pa.int64(),
                     "sumAccLoad": pa.float64()},
    "utility_alerts": {"pass": pa.string(), "time": pa.int64(), "load": pa.float64()},
}


def curves_table(names: list[str], group_kw: Mapping[str, np.ndarray],
                  passes: list[str] | tuple[str, ...]) -> pa.Table:
    """Long format of ``group_kw[pass]`` ((groups, 1440) kW) in the order of ``passes``."""
    passes = list(passes)
    n_groups = len(names)
    kw = np.concatenate([np.asarray(group_kw[p], dtype=np.float64).reshape(-1)
                         for p in passes]) if passes else np.zeros(0)
    return pa.table({
        "pass": pa.array(np.repeat(passes, n_groups * MINUTES).tolist(), pa.string()),
        "group": pa.array(np.tile(np.repeat(names, MINUTES), len(passes)).tolist(), pa.string()),
        "minute": pa.array(np.tile(np.arange(MINUTES, dtype=np.int16), len(passes) * n_groups)),
        "kw": pa.array(kw, pa.float64()),
    })



def write_simulation(result: Simulation, summary: dict, out_dir: str | Path,
                     overwrite: bool = False) -> Path:
    """Write summary.json, load_curves.parquet and the figures to ``out_dir`` atomically."""
    out = check_output(out_dir, overwrite)
    summary = {**summary, "files": SIMULATION_FILES}  # what marks the folder as drsim's
    summary_text = json.dumps(json_safe(summary), indent=2, allow_nan=False) + "\n"
    curves = curves_table([g.name for g in result.scenario.groups], result.loads.group_kw,
                           list(result.loads.group_kw))
    with staged(out, overwrite) as tmp:
        pq.write_table(curves, tmp / LOAD_CURVES)
        plot_system_demand(result, tmp / SYSTEM_FIGURE)
        plot_breakdown(result, tmp / BREAKDOWN_FIGURE)
        (tmp / SUMMARY).write_text(summary_text, encoding="utf-8")
    return out


def run_files(tier_tables: Iterable[str] = TIER_TABLES, readings: bool = False,
              stream: bool = False, kept: Iterable[str] = ()) -> list[str]:
    """The files of a run folder with the tier tables ``tier_tables`` (summary.json's file
    list): the user events first, whether they were collected or are written by the
    backend; the files that keep the monitoring features' stages before the passes
    (``kept``: load shedding's cost_models.parquet, :mod:`drsim.pipeline.kept`) after the
    thresholds; with ``readings``, the exported meter readings, and with ``stream`` a
    streamed run's live folder (:data:`STREAM`), last."""
    tables = [f"events_{name}.parquet" for name in tier_tables if name != "user_events"]
    return [SUMMARY, LOAD_CURVES, USER_EVENTS, *tables, THRESHOLDS, *kept, SYSTEM_FIGURE,
            COMPLIANCE_FIGURE, *([READINGS] if readings else []), *([STREAM] if stream else [])]


def write_run(run: Run, summary: dict, out_dir: str | Path, overwrite: bool = False,
              user_events: Callable[[Path], None] | None = None,
              readings: Callable[[Path], None] | None = None) -> Path:
    """Write the folder of the closed-loop run ``run`` with its summary atomically
    (:func:`write_run_data` of :func:`~drsim.results.run_data.run_data`); the user events
    (and the exported readings) stay with the backend, which writes them by
    ``user_events(folder)`` (``readings(folder)``)."""
    return write_run_data(run_data(run, summary), out_dir, overwrite, user_events, readings)


def write_run_data(data: RunData, out_dir: str | Path, overwrite: bool = False,
                   user_events: Callable[[Path], None] | None = None,
                   readings: Callable[[Path], None] | None = None,
                   stream: Path | None = None) -> Path:
    """Write what a run folder shows (``data``) atomically and return its path.

    Files: ``summary.json`` (``data.summary``, NaN and ±inf as null, ``files`` the list of
    the folder's files: what marks it as drsim's, :mod:`drsim.results.folders`),
    ``load_curves.parquet`` (pass, group, minute, kw: every pass, long format),
    ``events_<name>.parquet`` per tier table (its columns and types even when empty),
    ``thresholds.parquet`` (group, time, expected_share, gamma: Listing 6.2's threshold per group
    and test time), the tables of ``data.kept`` (load shedding's ``cost_models.parquet``),
    ``system_demand.png`` (:func:`plot_run_demand`) and ``compliance_timeline.png``
    (:func:`plot_compliance_timeline`). The user events are a Parquet dataset (a folder,
    :data:`USER_EVENTS`): written from ``data.tier_events`` when they were collected, else
    by ``user_events(folder)`` (the backend's writer); ``readings(folder)`` writes the
    exported readings. A streamed run's folder already holds its live folder ``stream``
    (:data:`STREAM`): the files are written beside and join it, summary.json last
    (:func:`~drsim.results.folders.publish_beside`). Everything is checked and converted
    before the temporary folder is made; on any error nothing is left behind. Raises
    :class:`~drsim.results.folders.OutputExistsError` if something is at ``out_dir`` that may not
    be replaced (:func:`~drsim.results.folders.check_output`), ValueError for inconsistent data."""
    out = check_output(out_dir, overwrite)
    summary = {**data.summary,  # its list of files marks the folder as drsim's
               "files": run_files(data.tier_events, readings is not None, stream is not None,
                                  data.kept)}
    summary_text = json.dumps(json_safe(summary), indent=2, allow_nan=False) + "\n"
    tables = run_tables(data)
    if "user_events" not in tables and user_events is None:
        raise ValueError("RunData: no user events, and no writer for them")

    def write(tmp: Path) -> None:
        for name, table in tables.items():
            if name == "user_events":
                (tmp / USER_EVENTS).mkdir()
                pq.write_table(table, tmp / USER_EVENTS / "part-00000.parquet")
            else:
                pq.write_table(table, tmp / _TABLE_FILES.get(name, f"events_{name}.parquet"))
        for name, table in data.kept.items():
            pq.write_table(table, tmp / name)
        if "user_events" not in tables:
            user_events(tmp / USER_EVENTS)
        if readings is not None:
            readings(tmp / READINGS)
        plot_run_demand(data, tmp / SYSTEM_FIGURE)
        plot_compliance_timeline(data, tmp / COMPLIANCE_FIGURE)
        (tmp / SUMMARY).write_text(summary_text, encoding="utf-8")

    if stream is None:
        with staged(out, overwrite) as tmp:
            write(tmp)
    else:  # the live folder stays (Spark may still tidy its checkpoint): the rest joins it
        folders.publish_beside(out, write)
        (stream / folders.STREAM_MARK).unlink(missing_ok=True)
    return out


def run_tables(data: RunData) -> dict[str, pa.Table]:
    """The run folder's Parquet tables by name: ``load_curves`` (pass, group, minute, kw:
    every pass, long format), each tier table (its columns and types even when empty),
    ``thresholds``. ValueError if ``data`` does not fit together."""
    _check_run(data)
    return {"load_curves": curves_table(list(data.group_names), data.group_kw,
                                        pass_order(data.group_kw)),
            **{name: event_table(name, frame) for name, frame in data.tier_events.items()},
            "thresholds": thresholds_table(data)}


def thresholds_table(data: RunData) -> pa.Table:
    """One row per (group, test time): the expected share flagged (null for a constant
    γ_user) and the threshold γ of Listing 6.2."""
    t = data.thresholds
    n, k = np.shape(t.gamma)
    share = (np.full((n, k), np.nan) if t.share is None
             else np.asarray(t.share, dtype=np.float64))
    return pa.table({
        "group": pa.array(np.repeat(list(data.group_names), k).tolist(), pa.string()),
        "time": pa.array(np.tile(np.asarray(t.test_times, dtype=np.int64), n)),
        "expected_share": pa.array(share.ravel(), pa.float64(), from_pandas=True),
        "gamma": pa.array(np.asarray(t.gamma, dtype=np.float64).ravel()),
    })



def read_kept(path: str | Path) -> pa.Table:
    """The table of a run folder's file that keeps a monitoring feature's stage before the
    passes (``cost_models.parquet``), with its metadata; ValueError in one line naming the
    file when it cannot be read."""
    try:
        return pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise ValueError(f"{path}: cannot be read ({exc})") from None


class ThresholdsError(ValueError):
    """A thresholds file that does not fit the scenario: one line naming the file and the
    column."""


def read_thresholds(path: str | Path, group_names: list[str], test_times: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray | None]:
    """γ and the expected share (None when every share is null: a constant γ_user) of a
    run's ``thresholds.parquet`` (:func:`thresholds_table`), (groups, tests) in the order of
    ``group_names`` and ``test_times``; :class:`ThresholdsError` if it does not fit."""
    try:
        frame = pq.read_table(path).to_pandas()
    except (OSError, pa.ArrowInvalid) as exc:
        raise ThresholdsError(f"thresholds {path}: cannot be read ({exc})") from None
    for column in ("group", "time", "gamma"):
        if column not in frame.columns:
            raise ThresholdsError(f"thresholds {path}: column {column!r} is missing")
    found = sorted(set(frame["group"].astype(str)))
    if found != sorted(group_names):
        raise ThresholdsError(f"thresholds {path}: column 'group' holds {found}, the "
                              f"scenario's groups are {sorted(group_names)}")
    times = sorted(set(frame["time"].astype(np.int64)))
    if times != sorted(np.asarray(test_times).tolist()):
        raise ThresholdsError(f"thresholds {path}: column 'time' holds other test times than "
                              "the scenario's monitoring (a run of another scenario?)")
    if frame.duplicated(["group", "time"]).any():
        raise ThresholdsError(f"thresholds {path}: columns group and time: a (group, time) "
                              "is given twice")

    def grid(column: str) -> np.ndarray:
        table = frame.pivot(index="group", columns="time", values=column)
        return table.loc[list(group_names), list(test_times)].to_numpy(np.float64)

    gamma = grid("gamma")
    if not np.isfinite(gamma).all() or (gamma < 0).any():
        raise ThresholdsError(f"thresholds {path}: column 'gamma' is not a share >= 0 "
                              "everywhere")
    share = grid("expected_share") if "expected_share" in frame.columns else None
    return gamma, None if share is None or np.isnan(share).all() else share


def _check_run(data: RunData) -> None:
    """ValueError naming the first field whose shape or content does not fit."""
    names = list(data.group_names)
    n = len(names)
    if n == 0:
        raise ValueError("RunData.group_names: at least one group is needed")
    if len(set(names)) != n:
        raise ValueError(f"RunData.group_names: names must be unique, got {names}")
    for p, kw in data.group_kw.items():
        if np.shape(kw) != (n, MINUTES):
            raise ValueError(f"RunData.group_kw[{p!r}]: shape {np.shape(kw)}, expected "
                             f"(groups, minutes) = {(n, MINUTES)}")
    for p, kw in data.estimate_kw.items():
        if np.shape(kw) != (MINUTES,):
            raise ValueError(f"RunData.estimate_kw[{p!r}]: shape {np.shape(kw)}, expected "
                             f"({MINUTES},)")
    start, end = data.program
    if not 0 <= start < end <= MINUTES:
        raise ValueError(f"RunData.program: {data.program}, expected (t_start, t_end) with "
                         f"0 <= t_start < t_end <= {MINUTES}")
    if data.second_event is not None:
        if len(data.second_event) != 3:
            raise ValueError(f"RunData.second_event: {data.second_event}, expected "
                             "(announced, start, end) or None")
        announced, s2, e2 = data.second_event
        if not 0 <= announced <= s2 < e2 <= MINUTES:
            raise ValueError(f"RunData.second_event: {data.second_event}, expected "
                             "announced <= start < end within the day")
    k = len(np.asarray(data.test_times))
    for p, frac in data.flagged_fraction.items():
        if np.shape(frac) != (n, k):
            raise ValueError(f"RunData.flagged_fraction[{p!r}]: shape {np.shape(frac)}, "
                             f"expected (groups, test times) = {(n, k)}")
    for field_name in ("group_alert_ticks", "group_latch"):
        for p, per_group in getattr(data, field_name).items():
            if len(per_group) != n:
                raise ValueError(f"RunData.{field_name}[{p!r}]: {len(per_group)} entries, "
                                 f"expected one per group ({n})")
    for p, stop in data.monitoring_stop.items():
        if np.shape(stop) != (n,):
            raise ValueError(f"RunData.monitoring_stop[{p!r}]: shape {np.shape(stop)}, "
                             f"expected one minute per group ({n},)")
    if np.shape(data.thresholds.gamma) != (n, k):
        raise ValueError(f"RunData.thresholds.gamma: shape {np.shape(data.thresholds.gamma)}, "
                         f"expected (groups, test times) = {(n, k)}")
    for name in data.tier_events:
        if not name or not all(c.isalnum() or c in "_-" for c in name):
            raise ValueError(f"RunData.tier_events: table name {name!r} cannot name a file "
                             "(letters, digits, '_' and '-' only)")


def json_safe(value: Any, where: str = "summary") -> Any:
    """``value`` as plain JSON data: numpy scalars and arrays as Python values, tuples as
    lists, NaN and ±inf as None. TypeError naming the key for anything else."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if isinstance(key, np.generic):
                key = key.item()
            if not isinstance(key, str | int | float | bool) and key is not None:
                raise TypeError(f"{where}: key {key!r} is not a JSON key")
            out[key] = json_safe(item, f"{where}.{key}")
        return out
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return [json_safe(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if value is None or isinstance(value, str | int | bool):
        return value
    raise TypeError(f"{where}: {type(value).__name__} is not JSON data")


def event_table(name: str, frame: pd.DataFrame) -> pa.Table:
    """A tier table as Arrow: the known tables (:data:`EVENT_TABLES`) get their column
    types; text columns are ``string``; an empty column of unknown type is ``string``."""
    if "pass" not in frame.columns:
        raise ValueError(f"RunData.tier_events[{name!r}]: no 'pass' column (columns: "
                         f"{list(frame.columns)})")
    known = EVENT_TABLES.get(name, {})
    missing = [c for c in known if c not in frame.columns]
    if missing:
        raise ValueError(f"RunData.tier_events[{name!r}]: missing columns {missing}; "
                         f"expected {list(known)}")
    table = pa.Table.from_pandas(frame, preserve_index=False)
    fields = []
    for f in table.schema:
        if f.name in known:
            fields.append(pa.field(f.name, known[f.name]))
        elif pa.types.is_null(f.type) or pa.types.is_large_string(f.type):
            fields.append(pa.field(f.name, pa.string()))
        else:
            fields.append(f)
    try:
        return table.cast(pa.schema(fields, metadata=table.schema.metadata))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"RunData.tier_events[{name!r}]: {exc}") from None


