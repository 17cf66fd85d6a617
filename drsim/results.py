"""Result folders: summary.json, load curves as Parquet, matplotlib figures.

Two kinds of folder: the ``drsim simulate`` folder (:func:`write_simulation`) and the
adaptive DR run folder (:class:`RunData`, :func:`write_run`; Figure 6.11 of the
dissertation, Ch. 6, as ``system_demand.png``). A folder is written to a temporary
sibling and renamed into place when complete, so a failed or interrupted run never leaves
a folder that looks like a finished result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drsim.deficit import expected_reduction_kwh, reduction_goal_kwh

if TYPE_CHECKING:
    import pandas as pd

    from drsim.threshold import Thresholds
    from spark.simulate_job import SimulationResult

MINUTES = 1440
EVENING = (16 * 60, 22 * 60)  # the evening peak is looked for in [16:00, 22:00)
BREAKDOWN = ("ev", "wet", "cold", "rest")
DR_PASSES = ("expected", "traditional")
PASS_STYLE = {"baseline": ("black", "-"), "expected": ("tab:green", "-"),
              "traditional": ("tab:red", "--")}

SUMMARY = "summary.json"
LOAD_CURVES = "load_curves.parquet"
SYSTEM_FIGURE = "system_demand.png"
BREAKDOWN_FIGURE = "breakdown.png"


class OutputExistsError(FileExistsError):
    """The output folder exists and overwriting was not asked for."""


def check_output(out_dir: str | Path, overwrite: bool = False) -> Path:
    """The output folder as a Path; raise OutputExistsError if it exists (unless overwrite)."""
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise OutputExistsError(f"output folder {out} already exists (use --overwrite to "
                                "replace it)")
    return out


# --------------------------------------------------------------------------- figures
def _mwh(kw_minutes: float) -> float:
    """Σ kW over minutes → MWh."""
    return float(kw_minutes) / 60.0 / 1000.0


def _bucket(category: str) -> str:
    return category if category in BREAKDOWN else "rest"


def clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def summarize(result: SimulationResult) -> dict[str, Any]:
    """The headline figures of a simulation (pure numbers; see write_simulation)."""
    scenario = result.scenario
    program = scenario.dr_program
    start, end = program.start_minute, program.end_minute
    n = result.households
    base = result.system_kw["baseline"]
    evening = base[EVENING[0]:EVENING[1]]
    peak_minute = EVENING[0] + int(np.argmax(evening))

    reduction, breakdown, rebound = {}, {}, {}
    for name in DR_PASSES:
        curve = result.system_kw[name]
        reduction[name] = _mwh((base[start:end] - curve[start:end]).sum())
        buckets = dict.fromkeys(BREAKDOWN, 0.0)
        for category, kw in result.category_kw[name].items():
            saved = result.category_kw["baseline"][category][start:end] - kw[start:end]
            buckets[_bucket(category)] += _mwh(saved.sum())
        breakdown[name] = buckets
        rebound[name] = {
            "post_event_peak_kw": float(curve[end:].max()) if end < MINUTES else None,
            "post_event_peak_time": clock(end + int(np.argmax(curve[end:])))
            if end < MINUTES else None,
            "post_event_energy_mwh": _mwh((curve[end:] - base[end:]).sum()),
        }

    groups = {}
    for g, group in enumerate(scenario.groups):
        gb = result.group_kw["baseline"][g]
        groups[group.name] = {
            "households": int(scenario.group_sizes()[g]),
            "reduction_mwh": {name: _mwh((gb[start:end] - result.group_kw[name][g][start:end])
                                         .sum()) for name in DR_PASSES},
        }

    est = result.estimate_kw
    expected_kwh = expected_reduction_kwh(est["baseline"], est["expected"], start, end)
    estimated = {
        **scenario.baseline.model_dump(mode="json"),
        "note": "the utility's M&V estimates B and P̂ (drsim.baseline), which never use the "
                "evaluated day's follow-through decisions; reduction_mwh above is measured "
                "against the simulated no-DR pass (ground truth)",
        "baseline_mwh": _mwh(est["baseline"][start:end].sum()),
        "expected_mwh": _mwh(est["expected"][start:end].sum()),
        "expected_reduction_mwh": expected_kwh / 1000.0,
        "simulated_baseline_mwh": _mwh(base[start:end].sum()),
    }
    goal_kwh = reduction_goal_kwh(program.reduction_goal_kwh, expected_kwh)

    return {
        "scenario_name": scenario.name,
        "households": n,
        "ev_households": result.ev_households,
        "kwh_per_household_day": float(base.sum()) / 60.0 / n,
        "evening_peak_kw_per_household": float(evening.max()) / n,
        "evening_peak_time": clock(peak_minute),
        "dr_window": {"start": program.start, "end": program.end},
        "reduction_goal_mwh": goal_kwh / 1000.0,
        "reduction_mwh": reduction,
        "reduction_breakdown_mwh": breakdown,
        "estimated_by_utility": estimated,
        "rebound": rebound,
        "groups": groups,
        "daily_energy_mwh": {name: _mwh(c.sum()) for name, c in result.system_kw.items()},
        "system_peak_kw": {name: float(c.max()) for name, c in result.system_kw.items()},
    }


def code_version() -> dict[str, str | None]:
    """drsim's version and, when the code is in a git work tree, ``git describe``."""
    import drsim

    version = getattr(drsim, "__version__", None)
    if version is None:
        from importlib import metadata

        try:
            version = metadata.version("drsim")
        except metadata.PackageNotFoundError:  # a source checkout that is not installed
            version = _pyproject_version(Path(drsim.__file__).resolve().parent.parent)
    git = None
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"],
                             cwd=Path(drsim.__file__).resolve().parent, capture_output=True,
                             text=True, timeout=10, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
        if out.returncode == 0 and out.stdout.strip():
            git = out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {"drsim": version, "git": git}


def _pyproject_version(root: Path) -> str | None:
    import tomllib

    try:
        project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None
    return project.get("version") if project.get("name") == "drsim" else None


def load_curves_table(result: SimulationResult) -> pa.Table:
    """One row per (pass, group, minute): pass, group name, minute (int16), kW."""
    return _curves_table(result.group_names, result.group_kw, result.passes)


def _curves_table(names: list[str], group_kw: Mapping[str, np.ndarray],
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


def _clock_axis(ax, start: int = 0, end: int = MINUTES, step: int = 180,
                label: bool = True) -> None:
    """Clock-time x axis over ``[start, end]`` minutes, a tick every ``step`` minutes."""
    first = -(-start // step) * step
    ticks = np.arange(first, end + 1, step)
    ax.set_xticks(ticks, [clock(int(t) % MINUTES) if t < MINUTES else "24:00" for t in ticks])
    ax.set_xlim(start, end)
    if label:
        ax.set_xlabel("time of day")
    ax.grid(True, alpha=0.3)


def _shade_program(ax, result: SimulationResult) -> None:
    p = result.scenario.dr_program
    ax.axvspan(p.start_minute, p.end_minute, color="tab:orange", alpha=0.15,
               label=f"DR program {p.start}–{p.end}")


def plot_system_demand(result: SimulationResult, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    minutes = np.arange(MINUTES)
    _shade_program(ax, result)
    for name, curve in result.system_kw.items():
        color, style = PASS_STYLE.get(name, (None, "-"))
        ax.plot(minutes, curve / 1000.0, color=color, linestyle=style, linewidth=1.2, label=name)
    for name, curve in result.estimate_kw.items():
        ax.plot(minutes, curve / 1000.0, color=PASS_STYLE.get(name, (None, "-"))[0],
                linestyle=":", linewidth=1.6, label=f"utility estimate: {name}")
    _clock_axis(ax)
    ax.set_ylabel("system demand (MW)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{result.scenario.name}: system demand, {result.households:,} households")
    ax.legend(loc="upper left")
    fig.savefig(path, dpi=150)


def plot_breakdown(result: SimulationResult, path: Path, pass_name: str = "baseline") -> None:
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    categories = result.category_kw[pass_name]
    names = sorted(categories, key=lambda c: -categories[c].sum())
    fig = Figure(figsize=(10, 5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    palette = matplotlib.colormaps["tab20"]
    ax.stackplot(np.arange(MINUTES), *[categories[c] / 1000.0 for c in names], labels=names,
                 colors=[palette(i % 20) for i in range(len(names))], linewidth=0)
    program = result.scenario.dr_program
    for minute in (program.start_minute, program.end_minute):
        ax.axvline(minute, color="black", linestyle=":", linewidth=1)
    _clock_axis(ax)
    ax.set_ylabel("demand (MW)")
    ax.set_title(f"{result.scenario.name}: {pass_name} demand by category, "
                 f"{result.households:,} households")
    ax.legend(loc="upper left", fontsize="small", ncols=2)
    fig.savefig(path, dpi=150)


# --------------------------------------------------------------------------- writing
def write_simulation(result: SimulationResult, out_dir: str | Path,
                     overwrite: bool = False) -> Path:
    """Write summary.json, load_curves.parquet and the figures to ``out_dir`` atomically."""
    out = check_output(out_dir, overwrite)
    with _staged(out, overwrite) as tmp:
        pq.write_table(load_curves_table(result), tmp / LOAD_CURVES)
        plot_system_demand(result, tmp / SYSTEM_FIGURE)
        plot_breakdown(result, tmp / BREAKDOWN_FIGURE)
        summary = summary_document(result)
        (tmp / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return out


@contextmanager
def _staged(out: Path, overwrite: bool) -> Iterator[Path]:
    """A temporary sibling folder of ``out`` to write into; renamed to ``out`` (see
    :func:`_replace`) when the block ends normally, removed when it raises."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        os.chmod(tmp, 0o755)
        yield tmp
        _replace(tmp, out, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def summary_document(result: SimulationResult) -> dict[str, Any]:
    """summary.json: the figures plus everything needed to know how they were made."""
    scenario = result.scenario
    seconds = np.asarray(result.chunk_seconds, dtype=float)
    return {
        **summarize(result),
        "scenario": scenario.model_dump(mode="json"),
        "scenario_file": scenario.source_path.name if scenario.source_path else None,
        "seed": scenario.seed,
        "code_version": code_version(),
        "spark": {
            "master": result.master,
            "default_parallelism": result.default_parallelism,
            "partitions": result.partitions,
            "tasks": result.tasks,
            "chunks": len(result.chunks),
            "chunk_size": max((c.count for c in result.chunks), default=0),
        },
        "timings_seconds": {
            **{k: float(v) for k, v in result.timings.items()},
            "chunk_min": float(seconds.min()) if seconds.size else None,
            "chunk_mean": float(seconds.mean()) if seconds.size else None,
            "chunk_max": float(seconds.max()) if seconds.size else None,
        },
        "clock": "wall",
        "peak_task_memory_bytes": result.peak_task_rss_bytes,
        "files": [SUMMARY, LOAD_CURVES, SYSTEM_FIGURE, BREAKDOWN_FIGURE],
    }


def _replace(tmp: Path, out: Path, overwrite: bool) -> None:
    """Rename the finished folder into place (replacing ``out`` only when asked to)."""
    if not out.exists() and not out.is_symlink():
        tmp.rename(out)
        return
    if not overwrite:
        raise OutputExistsError(f"output folder {out} already exists (use --overwrite to "
                                "replace it)")
    old = out.with_name(f".{out.name}.{uuid.uuid4().hex}.old")
    out.rename(old)
    try:
        tmp.rename(out)
    except BaseException:
        old.rename(out)
        raise
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink()


# =========================================================================== adaptive run
RUN_PASSES = ("baseline", "expected", "traditional", "adaptive")
RUN_PASS_STYLE = {  # colour, line style, width, z-order: the four curves of Figure 6.11
    # adaptive is drawn widest and lowest, so that where the passes coincide (before the
    # program, and adaptive with traditional before DR2) every line stays visible
    "baseline": ("black", "-", 1.5, 6),
    "expected": ("tab:green", "-", 1.8, 4),
    "traditional": ("tab:red", "--", 1.9, 5),
    "adaptive": ("tab:blue", "-", 3.2, 3),
}
FLAGGED_PASSES = ("expected", "traditional")
DEMAND_WINDOW = (16 * 60, 23 * 60)  # Figure 6.11 shows 16:00-23:00
COMPLIANCE_FIGURE = "compliance_timeline.png"
THRESHOLDS = "thresholds.parquet"
MAX_GROUP_ROWS = 12  # more groups than this: a heatmap instead of one subplot per group
EVENT_TABLES = {  # the tier tables and their column types (extra columns are kept)
    "user_events": {"pass": pa.string(), "time": pa.int64(), "houseID": pa.int64(),
                    "groupID": pa.int64(), "accLoad": pa.float64()},
    "group_alerts": {"pass": pa.string(), "time": pa.int64(), "groupID": pa.int64(),
                     "sumAccLoad": pa.float64()},
    "group_events": {"pass": pa.string(), "time": pa.int64(), "groupID": pa.int64(),
                     "sumAccLoad": pa.float64()},
    "utility_alerts": {"pass": pa.string(), "time": pa.int64(), "load": pa.float64()},
}
MISSING = "—"


@dataclass
class RunData:
    """Everything the run folder shows; built by the adaptive DR pipeline.

    Times are minutes since midnight, loads kW averaged over each minute."""

    name: str  # scenario name
    group_names: list[str]
    # pass -> (n_groups, 1440) kW; passes "baseline", "expected", "traditional", "adaptive"
    group_kw: dict[str, np.ndarray]
    # "baseline" (B̂), "expected" (P̂): (1440,) kW, NaN outside the program window
    estimate_kw: dict[str, np.ndarray]
    program: tuple[int, int]  # (t_start, t_end) minutes since midnight
    second_event: tuple[int, int, int] | None  # (announced, start, end) of DR2, None if none
    t_nc: int | None  # utility non-compliance prediction of the traditional pass
    test_times: np.ndarray  # household test minutes
    ticks: np.ndarray  # group/utility evaluation minutes
    # pass ("expected", "traditional") -> (n_groups, len(test_times)): share of the group's
    # households with a user event at that test
    flagged_fraction: dict[str, np.ndarray]
    group_alert_ticks: dict[str, list[np.ndarray]]  # pass -> per group, ticks with an alert
    group_latch: dict[str, list[int | None]]  # pass -> per group, latch minute (None: never)
    thresholds: Thresholds  # γ[groupID, time] of Listing 6.2 (drsim.threshold)
    # name -> table with a "pass" column: "user_events" (pass, time, houseID, groupID,
    # accLoad), "group_alerts" (pass, time, groupID, sumAccLoad), "group_events" (same),
    # "utility_alerts" (pass, time, load)
    tier_events: dict[str, pd.DataFrame]
    summary: dict  # the complete summary.json content (the pipeline builds it)


def run_files(data: RunData) -> list[str]:
    """The files :func:`write_run` writes for ``data`` (for summary.json's file list)."""
    return [SUMMARY, LOAD_CURVES, *(f"events_{name}.parquet" for name in data.tier_events),
            THRESHOLDS, SYSTEM_FIGURE, COMPLIANCE_FIGURE]


def write_run(data: RunData, out_dir: str | Path, overwrite: bool = False) -> Path:
    """Write an adaptive DR run folder atomically and return its path.

    Files: ``summary.json`` (``data.summary``, NaN and ±inf as null), ``load_curves.parquet``
    (pass, group, minute, kw: every pass, long format), ``events_<name>.parquet`` per tier
    table (its columns and types even when empty), ``thresholds.parquet`` (group, time,
    expected_share, gamma: Listing 6.2's threshold per group and test time),
    ``system_demand.png``
    (:func:`plot_run_demand`) and ``compliance_timeline.png``
    (:func:`plot_compliance_timeline`). Everything is checked and converted before the
    temporary folder is made; on any error nothing is left behind. Raises OutputExistsError
    if ``out_dir`` exists and ``overwrite`` is false, ValueError for inconsistent data."""
    out = check_output(out_dir, overwrite)
    _check_run(data)
    summary_text = json.dumps(json_safe(data.summary), indent=2, allow_nan=False) + "\n"
    curves = _curves_table(list(data.group_names), data.group_kw, _pass_order(data.group_kw))
    events = {name: event_table(name, frame) for name, frame in data.tier_events.items()}
    with _staged(out, overwrite) as tmp:
        pq.write_table(curves, tmp / LOAD_CURVES)
        for name, table in events.items():
            pq.write_table(table, tmp / f"events_{name}.parquet")
        pq.write_table(thresholds_table(data), tmp / THRESHOLDS)
        plot_run_demand(data, tmp / SYSTEM_FIGURE)
        plot_compliance_timeline(data, tmp / COMPLIANCE_FIGURE)
        (tmp / SUMMARY).write_text(summary_text, encoding="utf-8")
    return out


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


# --------------------------------------------------------------------------- checks
def _pass_order(by_pass: Mapping[str, Any]) -> list[str]:
    """The run's passes in Figure 6.11's order, then any others in the given order."""
    return [p for p in RUN_PASSES if p in by_pass] + [p for p in by_pass
                                                      if p not in RUN_PASSES]


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


# --------------------------------------------------------------------------- figures
def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _number(value: Any) -> float | None:
    """A finite real number, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return None
    return float(value) if np.isfinite(value) else None


def _system_mw(data: RunData, name: str) -> np.ndarray:
    return np.asarray(data.group_kw[name], dtype=np.float64).sum(axis=0) / 1000.0


def _demand_window(data: RunData) -> tuple[int, int]:
    """16:00-23:00, widened by whole hours when the program or DR2 reaches outside it."""
    lo, hi = DEMAND_WINDOW
    times = [*data.program, *(data.second_event or ()),
             *([data.t_nc] if data.t_nc is not None else [])]
    lo = min(lo, (min(times) - 30) // 60 * 60)
    hi = max(hi, -(-(max(times) + 30) // 60) * 60)
    return max(lo, 0), min(hi, MINUTES)


def plot_run_demand(data: RunData, path: str | Path) -> None:
    """Figure 6.11: system demand of the four passes with the DR windows and t_nc."""
    fig = _figure(11, 6.5)
    ax = fig.add_subplot()
    lo, hi = _demand_window(data)
    minutes = np.arange(MINUTES)
    view = slice(lo, hi + 1)
    start, end = data.program
    ax.axvspan(start, end, color="tab:orange", alpha=0.13, linewidth=0,
               label=f"DR program {clock(start)}–{clock(end)}")
    if data.second_event is not None:
        announced, s2, e2 = data.second_event
        ax.axvspan(s2, e2, facecolor="none", hatch="///", edgecolor="tab:blue", alpha=0.5,
                   linewidth=0, label=f"second DR event {clock(s2)}–{clock(e2)}")
        if announced != data.t_nc:
            ax.axvline(announced, color="tab:blue", linestyle="-.", linewidth=1.2,
                       label=f"second event announced {clock(announced)}")
    reductions = data.summary.get("reduction_mwh", {}) if isinstance(data.summary, Mapping) \
        else {}
    for name in _pass_order(data.group_kw):
        color, style, width, z = RUN_PASS_STYLE.get(name, (None, "-", 1.4, 3))
        label = name
        mwh = _number(reductions.get(name)) if isinstance(reductions, Mapping) else None
        if mwh is not None and name != "baseline":
            label = f"{name}: {mwh:.2f} MWh reduced"
        ax.plot(minutes[view], _system_mw(data, name)[view], color=color, linestyle=style,
                linewidth=width, label=label, zorder=z)
    if "baseline" in data.estimate_kw:
        estimate = np.asarray(data.estimate_kw["baseline"], dtype=np.float64) / 1000.0
        ax.plot(minutes[view], estimate[view], color="dimgray", linestyle=":", linewidth=2.0,
                label="utility's baseline estimate B̂", zorder=7)
    marker = ax.get_xaxis_transform()  # x in minutes, y in axes fraction
    if data.t_nc is not None:
        what = "non-compliance predicted"
        if data.second_event is not None and data.second_event[0] == data.t_nc:
            what += ", second event announced"
        ax.axvline(data.t_nc, color="black", linestyle="--", linewidth=1.3, zorder=8,
                   label=f"t_nc {clock(data.t_nc)}: {what}")
        ax.text(data.t_nc, 0.98, f" t_nc {clock(data.t_nc)}", transform=marker, ha="left",
                va="top", fontsize=11, fontweight="bold",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})
    else:
        ax.text(0.99, 0.98, "no utility non-compliance prediction", transform=ax.transAxes,
                ha="right", va="top", fontsize=10)
    _clock_axis(ax, lo, hi, step=60)
    ax.set_ylabel("system demand (MW)")
    households = _first(data.summary, "scenario.households", "households")
    who = f"{households:,} households, " if isinstance(households, int) \
        and not isinstance(households, bool) else ""
    ax.set_title(f"{data.name}: system demand ({who}{len(data.group_names)} groups)")
    fig.legend(loc="outside lower center", ncols=3, fontsize="small")
    fig.savefig(path, dpi=150)


def _runs(ticks: np.ndarray, marked: np.ndarray) -> list[tuple[float, float]]:
    """Spans [first - ½, last + ½] of the runs of consecutive ``ticks`` that are ``marked``."""
    ticks = np.asarray(ticks)
    on = np.isin(ticks, np.asarray(marked))
    if not on.any():
        return []
    edges = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(np.int8), [0]])))
    return [(ticks[a] - 0.5, ticks[b - 1] + 0.5) for a, b in zip(edges[::2], edges[1::2],
                                                                   strict=True)]


def _timeline_window(data: RunData) -> tuple[int, int, int]:
    """x range of the compliance timeline (the program, a little margin) and tick step."""
    start, end = data.program
    times = np.asarray(data.test_times)
    lo = min(start, int(times.min())) if times.size else start
    hi = max(end, int(times.max())) if times.size else end
    span = hi - lo
    step = 15 if span <= 180 else 30 if span <= 360 else 60
    return lo - 2, hi + 2, step


def plot_compliance_timeline(data: RunData, path: str | Path) -> None:
    """Household non-compliance per group over the program (traditional pass): one row per
    group (up to :data:`MAX_GROUP_ROWS`), else a heatmap of group × test time."""
    if len(data.group_names) > MAX_GROUP_ROWS:
        _compliance_heatmap(data, path)
    else:
        _compliance_rows(data, path)


def _latch(data: RunData, name: str, g: int) -> int | None:
    latches = data.group_latch.get(name)
    return None if latches is None or latches[g] is None else int(latches[g])


def _compliance_rows(data: RunData, path: str | Path) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    names = list(data.group_names)
    n = len(names)
    times = np.asarray(data.test_times)
    lo, hi, step = _timeline_window(data)
    fig = _figure(11, 1.0 + 1.35 * n)
    axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
    traditional = data.flagged_fraction.get("traditional")
    expected = data.flagged_fraction.get("expected")
    alerts = data.group_alert_ticks.get("traditional")
    gamma = np.asarray(data.thresholds.gamma, dtype=np.float64)
    shares = [f for f in (traditional, expected) if f is not None and np.size(f)]
    peak = max([float(np.nanmax(f)) for f in shares] + [float(np.max(gamma, initial=0.0))])
    top = min(1.05, max(1.25 * peak, 0.01))  # zoom on the shares and the threshold
    for g, ax in enumerate(axes):
        for a, b in (_runs(data.ticks, alerts[g]) if alerts is not None else []):
            ax.axvspan(a, b, color="tab:red", alpha=0.15, linewidth=0)
        ax.plot(times, gamma[g], color="dimgray", linestyle="--", linewidth=1,
                drawstyle="steps-post")
        if expected is not None:
            ax.plot(times, expected[g], color="tab:green", alpha=0.6, linewidth=1,
                    drawstyle="steps-post", zorder=4)  # on top: visible where they coincide
        if traditional is not None:
            ax.plot(times, traditional[g], color="tab:red", linewidth=1.8,
                    drawstyle="steps-post", marker="o", markersize=3)
        latch = _latch(data, "traditional", g)
        status = "never latched"
        if latch is not None:
            ax.axvline(latch, color="darkred", linewidth=2.2)
            status = f"latched {clock(latch)}"
        false_alarm = _latch(data, "expected", g)
        if false_alarm is not None:
            ax.axvline(false_alarm, color="tab:green", linewidth=1.2, linestyle=":")
            status += f"; expected pass latched {clock(false_alarm)}"
        if data.t_nc is not None:
            ax.axvline(data.t_nc, color="black", linestyle="--", linewidth=1.2)
        ax.text(0.005, 0.93, f"{names[g]}: {status}", transform=ax.transAxes, ha="left",
                va="top", fontsize=9, fontweight="bold",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})
        ax.set_ylim(0, top)
        ax.set_ylabel("flagged", fontsize=8)
        _clock_axis(ax, lo, hi, step=step, label=g == n - 1)
    handles = [
        Line2D([], [], color="tab:red", linewidth=1.8, marker="o", markersize=3,
               label="traditional: share of households flagged"),
        Line2D([], [], color="tab:green", alpha=0.6, label="expected pass (false alarms)"),
        Line2D([], [], color="dimgray", linestyle="--", label=_threshold_label(data)),
        Patch(color="tab:red", alpha=0.15, label="group alert"),
        Line2D([], [], color="darkred", linewidth=2.2, label="group latched (non-compliant)"),
    ]
    if data.t_nc is not None:
        handles.append(Line2D([], [], color="black", linestyle="--",
                              label=f"utility prediction t_nc {clock(data.t_nc)}"))
    fig.suptitle(f"{data.name}: household non-compliance per group, traditional pass")
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize="small")
    fig.savefig(path, dpi=120)


def _threshold_label(data: RunData) -> str:
    settings = data.thresholds.settings
    if settings is not None:
        return f"γ[group, time]: expected share + {settings.z:g} standard errors"
    values = np.unique(data.thresholds.gamma)
    return f"γ_user = {float(values[0]):g}" if len(values) == 1 else "γ_user"


def _compliance_heatmap(data: RunData, path: str | Path) -> None:
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    names = list(data.group_names)
    n = len(names)
    times = np.asarray(data.test_times, dtype=np.float64)
    lo, hi, step = _timeline_window(data)
    fig = _figure(11, min(4.0 + 0.05 * n, 14.0))
    ax = fig.add_subplot()
    cmap = colormaps["RdYlGn_r"].with_extremes(bad="lightgray")
    frac = data.flagged_fraction.get("traditional")
    if frac is not None and times.size:
        # the share flagged as a multiple of the group's threshold: above 1 the group alerts
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.asarray(frac, dtype=np.float64) / np.asarray(data.thresholds.gamma)
        top = max(2.0, float(np.nanmax(ratio, initial=0.0)))
        norm = TwoSlopeNorm(vmin=0.0, vcenter=1.0, vmax=top)
        if times.size > 1:
            mids = (times[1:] + times[:-1]) / 2
            edges = np.concatenate([[times[0] - (mids[0] - times[0])], mids,
                                    [times[-1] + (times[-1] - mids[-1])]])
        else:
            edges = np.array([times[0] - 2.5, times[0] + 2.5])
        mesh = ax.pcolormesh(edges, np.arange(n + 1) - 0.5, np.ma.masked_invalid(ratio),
                             cmap=cmap, norm=norm, shading="flat")
        bar = fig.colorbar(mesh, ax=ax, pad=0.01, fraction=0.05)
        bar.set_label("share of the group's households flagged, / its threshold γ")
        bar.ax.axhline(1.0, color="black", linewidth=2)
    latched = [(g, _latch(data, "traditional", g)) for g in range(n)]
    latched = [(g, t) for g, t in latched if t is not None]
    if latched:
        ax.scatter([t for _, t in latched], [g for g, _ in latched], marker="|", s=60,
                   color="black", linewidths=2,
                   label=f"group latched ({len(latched)} of {n})", zorder=3)
    if data.t_nc is not None:
        ax.axvline(data.t_nc, color="black", linestyle="--", linewidth=1.5,
                   label=f"utility prediction t_nc {clock(data.t_nc)}")
    ax.set_ylim(n - 0.5, -0.5)
    every = max(1, -(-n // 40))
    ax.set_yticks(np.arange(0, n, every), names[::every], fontsize=7)
    ax.set_ylabel("group")
    _clock_axis(ax, lo, hi, step=step)
    ax.grid(False)
    ax.set_title(f"{data.name}: household non-compliance, {n} groups, traditional pass")
    handles = ax.get_legend_handles_labels()[0]
    if frac is not None and np.isnan(np.asarray(frac, dtype=np.float64)).any():
        from matplotlib.patches import Patch

        handles.append(Patch(color="lightgray", label="no test (group latched)"))
    if handles:
        ax.legend(handles=handles, loc="upper left", fontsize="small", framealpha=0.9)
    fig.savefig(path, dpi=120)


# --------------------------------------------------------------------------- headline table
def _first(summary: Any, *dotted: str) -> Any:
    """The value of the first of the ``dotted`` keys found in ``summary`` (else None)."""
    for key in dotted:
        found, value = _get(summary, key)
        if found:
            return value
    return None


def _get(summary: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    """(found, value) of ``a.b.c`` in nested mappings; NaN counts as null."""
    node: Any = summary
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    if isinstance(node, float | np.floating) and not np.isfinite(node):
        return True, None
    return True, node


def _fmt_mwh(value: Any) -> str:
    number = _number(value)
    return f"{number:.2f}" if number is not None else "none" if value is None else str(value)


def _fmt_time(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return clock(int(value))
    return str(value)


def _fmt_share(value: Any) -> str:
    number = _number(value)
    return f"{number:.3f}" if number is not None else "n/a" if value is None else str(value)


def _fmt_groups(value: Any, summary: Mapping[str, Any]) -> str:
    if value is None:
        return "n/a"
    groups = _first(summary, "scenario.groups", "groups", "prediction.group_noncompliance_times")
    total = len(groups) if isinstance(groups, Mapping | list) and groups else None
    if isinstance(value, list | tuple):
        count = len(value)
    elif isinstance(value, int | np.integer) and not isinstance(value, bool):
        count = int(value)
    else:
        return str(value)
    return f"{count} of {total}" if total is not None else str(count)


def _fmt_pair(section: Any, first: str, second: str) -> str:
    """"0.878 / 0.305": two shares of a summary section."""
    cells = []
    for key in (first, second):
        found, value = _get(section, key) if isinstance(section, Mapping) else (False, None)
        cells.append(_fmt_share(value) if found else MISSING)
    return " / ".join(cells)


def _fmt_reduction(mwh: Any, expected: Any) -> str:
    """"12.58 (58.9 %)": a reduction and its share of the expected one."""
    number, whole = _number(mwh), _number(expected)
    if number is None:
        return _fmt_mwh(mwh)
    share = f" ({100.0 * number / whole:.1f} %)" if whole else ""
    return f"{number:.2f}{share}"


def run_table(summary: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, ...]]]:
    """The headline table of a run's summary: column names and rows.

    Columns: quantity, this run, and the scenario's published reference (``reference``
    of the summary) only where the scenario declares one. Reductions are in MWh with
    their share of the expected reduction. A missing key shows "—", a null value "none"
    (no prediction) or "n/a"; a reference value the source does not give, "not given"."""
    found, ref = _get(summary, "reference")
    ref = ref if found and isinstance(ref, Mapping) else None
    rows: list[tuple[str, ...]] = []

    def row(label: str, key: str, fmt, ref_key: str | None = None, ref_fmt=None) -> None:
        found, value = _get(summary, key)
        cells = [label, fmt(value) if found else MISSING]
        if ref is not None:
            has, given = _get(ref, ref_key) if ref_key else (False, None)
            cells.append((ref_fmt or fmt)(given) if has and given is not None
                         else "not given")
        rows.append(tuple(cells))

    _, expected = _get(summary, "reduction_mwh.expected")
    ref_expected = _get(ref, "reduction_mwh.expected")[1] if ref is not None else None
    for name in ("expected", "traditional", "adaptive"):
        row(f"reduction, {name}, MWh (share)", f"reduction_mwh.{name}",
            lambda v: _fmt_reduction(v, expected), f"reduction_mwh.{name}",
            lambda v: _fmt_reduction(v, ref_expected))
    row("utility non-compliance predicted", "prediction.utility_noncompliance_time",
        _fmt_time, "utility_noncompliance_time")
    row("groups compliant at prediction", "prediction.groups_compliant_at_prediction",
        lambda v: _fmt_groups(v, summary), "groups_compliant_at_prediction",
        lambda v: _fmt_groups(v, summary))
    row("prediction on the expected pass", "prediction.expected_pass_noncompliance_time",
        _fmt_time)
    row("household precision / recall, while tested", "prediction",
        lambda p: _fmt_pair(p, "household_precision", "household_recall"))
    row("household precision / recall, whole program", "prediction",
        lambda p: _fmt_pair(p, "household_precision_whole_program",
                            "household_recall_whole_program"))
    columns = ["quantity", "this run"] + ([] if ref is None else ["reference"])
    return columns, rows
