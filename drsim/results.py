"""Result folders: summary.json, load curves as Parquet, matplotlib figures.

A folder is written to a temporary sibling and renamed into place when complete, so a
failed or interrupted run never leaves a folder that looks like a finished result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
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
    estimated = {
        "method": scenario.baseline.method,
        "note": "the utility's M&V estimates B and P̂ (drsim.baseline), never the evaluated "
                "day's own draws; reduction_mwh above is measured against the simulated "
                "no-DR pass (ground truth)",
        "baseline_mwh": _mwh(est["baseline"][start:end].sum()),
        "expected_mwh": _mwh(est["expected"][start:end].sum()),
        "expected_reduction_mwh": _mwh((est["baseline"] - est["expected"])[start:end].sum()),
        "simulated_baseline_mwh": _mwh(base[start:end].sum()),
    }

    return {
        "scenario_name": scenario.name,
        "households": n,
        "ev_households": result.ev_households,
        "kwh_per_household_day": float(base.sum()) / 60.0 / n,
        "evening_peak_kw_per_household": float(evening.max()) / n,
        "evening_peak_time": clock(peak_minute),
        "dr_window": {"start": program.start, "end": program.end},
        "reduction_goal_mwh": program.reduction_goal_kwh / 1000.0,
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
    names = result.group_names
    passes = result.passes
    n_groups = len(names)
    kw = np.concatenate([result.group_kw[p].reshape(-1) for p in passes])
    return pa.table({
        "pass": pa.array(np.repeat(passes, n_groups * MINUTES).tolist(), pa.string()),
        "group": pa.array(np.tile(np.repeat(names, MINUTES), len(passes)).tolist(), pa.string()),
        "minute": pa.array(np.tile(np.arange(MINUTES, dtype=np.int16), len(passes) * n_groups)),
        "kw": pa.array(kw, pa.float64()),
    })


def _clock_axis(ax) -> None:
    ticks = np.arange(0, MINUTES + 1, 180)
    ax.set_xticks(ticks, [clock(int(t) % MINUTES) if t < MINUTES else "24:00" for t in ticks])
    ax.set_xlim(0, MINUTES)
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
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        os.chmod(tmp, 0o755)
        pq.write_table(load_curves_table(result), tmp / LOAD_CURVES)
        plot_system_demand(result, tmp / SYSTEM_FIGURE)
        plot_breakdown(result, tmp / BREAKDOWN_FIGURE)
        summary = summary_document(result)
        (tmp / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        _replace(tmp, out, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


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
