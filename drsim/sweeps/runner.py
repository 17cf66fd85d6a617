"""Running a sweep into its output folder, with the journal that lets it resume.

:func:`run_sweep` runs every (point, seed) of a :class:`~drsim.sweeps.spec.Sweep` that the
folder's ``runs.jsonl`` does not record yet, through the :data:`Runner` it is given, appends
each finished run's summary to the journal at once (a line torn by an interruption is skipped
and ended), then writes ``sweep.json``, the table (``table.csv``, ``table.parquet``) and the
plots. It owns the folder's layout and its rules: a sweep resumes in its own folder (or
starts in an empty one); ``overwrite`` replaces a sweep folder that holds only what drsim
wrote (:mod:`drsim.results.folders`); anything else at the output path is refused, untouched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from drsim.results import folders
from drsim.sweeps.plots import plot_metrics
from drsim.sweeps.spec import Sweep, SweepRun
from drsim.sweeps.stats import check_metric_paths, tabulate
from drsim.sweeps.table_text import sweep_html, sweep_title

JOURNAL = folders.SWEEP_JOURNAL
RUNS_DIR = folders.SWEEP_RUNS
SWEEP_RECORD = folders.SWEEP_RECORD
TABLE_CSV, TABLE_PARQUET = folders.SWEEP_TABLES

#: The function that runs one scenario into a result folder and returns its summary dict.
Runner = Callable[..., Mapping[str, Any] | None]


class SweepOutputError(OSError):
    """The output folder cannot be used for this sweep."""


class SweepChangedError(SweepOutputError):
    """The output folder's journal records a run that the sweep, as it is now, would make
    otherwise: the folder holds another sweep's runs, which are not resumed."""


class SweepRunError(RuntimeError):
    """One run failed; the runs finished before it are recorded and a rerun resumes."""

    def __init__(self, message: str, run: SweepRun, done: int, total: int):
        super().__init__(message)
        self.run = run
        self.done = done
        self.total = total


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did and wrote; in a notebook, the head of its table as HTML."""

    out_dir: Path
    table: Any  # pandas.DataFrame
    total: int
    ran: int
    reused: int
    files: list[str]
    name: str = "sweep"
    axes: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    seeds: int = 1

    def _repr_html_(self) -> str:
        """The head of the table, a row per point with mean ± CI half-width per metric
        (:func:`drsim.sweeps.table_text.sweep_html`)."""
        title = sweep_title(self.name, len(self.table), self.seeds)
        return sweep_html(self.table, self.axes, self.metrics, title)


Progress = Callable[[int, int, str], None]


def run_sweep(sweep: Sweep, out_dir: str | Path, *, runner: Runner,
              master: str | None = None, progress: Progress | None = None,
              overwrite: bool = False) -> SweepOutcome:
    """Run every (point, seed) not yet recorded in ``out_dir``, then write table and plots.

    ``runner(scenario, run_dir, master=..., delay_detection=...)`` runs one scenario into
    ``run_dir`` (which it creates) and returns the summary dict (or writes
    ``run_dir/summary.json``). Each finished run is appended to ``runs.jsonl`` at once, so
    after an interruption the same call resumes. ``progress`` is called as
    ``progress(done, total, label)``.
    """
    if not overwrite:
        check_resume(sweep, out_dir)
    out = _prepare_output(Path(out_dir), overwrite)
    journal = out / JOURNAL
    recorded = read_journal(journal)
    runs = sweep.runs()
    todo = [run for run in runs if run.key not in recorded]
    total = len(runs)
    reused = total - len(todo)
    if todo:
        _remove_outputs(out, sweep)
    _write_json(out / SWEEP_RECORD, {**sweep.describe(), "complete": False})
    _repair_journal(journal)
    done = reused
    if progress:
        progress(done, total, todo[0].point.label if todo else "")
    metrics_checked = False
    for run in todo:
        if progress:
            progress(done, total, f"{run.point.label}, seed {run.replicate + 1}/{sweep.seeds}")
        run_dir = out / RUNS_DIR / run.name
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            # a run that finished but was not recorded (killed in between): run it again
            folders.remove(run_dir)
            result = runner(run.scenario, run_dir, master=master, **run.point.options)
            summary = _summary_of(result, run_dir)
        except Exception as exc:
            raise SweepRunError(
                f"run {run.name} ({run.point.label}; seed {run.seed}) failed: "
                f"{type(exc).__name__}: {exc}", run, done, total) from exc
        record = {"key": run.key, "point": run.point.index, "values": run.point.values,
                  "replicate": run.replicate, "seed": run.seed, "options": run.point.options,
                  "run_dir": f"{RUNS_DIR}/{run.name}", "summary": summary}
        _append_line(journal, record)
        recorded[run.key] = record
        done += 1
        if progress:
            progress(done, total, run.point.label)
        if not metrics_checked:
            check_metric_paths(sweep, [summary])
            metrics_checked = True

    records = [recorded[run.key] for run in runs]
    check_metric_paths(sweep, [r["summary"] for r in records])
    table = tabulate(sweep, recorded)
    files = _write_table(table, out)
    files += plot_metrics(sweep, table, out)
    _write_json(out / SWEEP_RECORD, {**sweep.describe(), "complete": True, "files": files})
    return SweepOutcome(out, table, total, len(todo), reused, files, sweep.name,
                        tuple(sweep.axes), sweep.metrics, sweep.seeds)


def check_output(out: str | Path, overwrite: bool = False, sweep: Sweep | None = None
                 ) -> Path:
    """``out`` as a Path if a sweep may write there (resume its own folder, start in an
    empty or new one, replace its own with ``overwrite``); else SweepOutputError, one
    line naming the path and what is there. With ``sweep``, a folder of another sweep's
    runs is not resumed (:func:`check_resume`). Nothing is touched."""
    out = Path(out)
    if sweep is not None and not overwrite:
        check_resume(sweep, out)
    try:
        folders.check_writable(out)
        if overwrite:
            folders.check_output(out, overwrite=True, kind=folders.SWEEP)
        elif not folders.is_sweep_folder(out) and (why := folders.problem(out, folders.SWEEP)):
            raise SweepOutputError(f"{out} already exists and is {why}; choose another --out "
                                   "(a sweep resumes only in its own folder)")
    except folders.OutputError as exc:
        raise SweepOutputError(str(exc)) from None
    return out


def check_resume(sweep: Sweep, out: str | Path) -> None:
    """:class:`SweepChangedError` if ``out``'s journal records a run at the same point
    values and replicate as a run of ``sweep`` but with another key (its scenario, seed
    included, or its options differ): the sweep file or its scenario changed, and resuming
    would mix two sweeps' runs. One line names the run and what changed; nothing is
    touched. Runs the sweep no longer makes (a point or seeds dropped) and new ones (the
    grid or the seeds extended) are no conflict."""
    recorded = read_journal(Path(out) / JOURNAL)
    if not recorded:
        return
    runs = {(_values(run.point.values), run.replicate): run for run in sweep.runs()}
    for record in recorded.values():
        run = runs.get((_values(record.get("values")), record.get("replicate")))
        if run is None or run.key == record["key"]:
            continue
        scenario = record["summary"].get("scenario")
        settings = scenario.get("settings") if isinstance(scenario, dict) else None
        changed = folders.changes(settings, run.scenario.model_dump(mode="json")) \
            if isinstance(settings, dict) else [f"run key {record['key'][:12]}… then, "
                                                f"{run.key[:12]}… now"]
        changed += folders.changes(record.get("options", {}), run.point.options,
                                   at="options")
        raise SweepChangedError(
            f"{Path(out) / JOURNAL} records run {record.get('run_dir', run.name)} "
            f"({run.point.label}; replicate {run.replicate}) made otherwise than "
            f"{Path(sweep.source).name} makes it now ({'; '.join(changed)}): run with "
            "--overwrite to start afresh, or another --out")


def _values(values: Any) -> str:
    """A point's axis values as comparable text (as the journal holds them: JSON)."""
    return json.dumps(values, sort_keys=True, default=_json_default)


def _prepare_output(out: Path, overwrite: bool) -> Path:
    """The sweep folder to write into: resumed as it is, emptied (``overwrite``), or new."""
    check_output(out, overwrite)
    if overwrite:
        folders.remove(out, kind=folders.SWEEP)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _remove_outputs(out: Path, sweep: Sweep) -> None:
    """Drop an earlier table and the plots of the earlier and the current metrics, so that
    an unfinished folder never looks finished (no other file is touched)."""
    plots = {folders.sweep_plot_name(m) for m in sweep.metrics}
    plots |= folders.sweep_plots(out)
    for name in [TABLE_CSV, TABLE_PARQUET, *sorted(plots)]:
        path = out / name
        if path.is_file() and not path.is_symlink():
            path.unlink()


def _summary_of(result: Any, run_dir: Path) -> dict[str, Any]:
    if isinstance(result, Mapping):
        return json.loads(json.dumps(dict(result), default=_json_default))
    path = run_dir / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RuntimeError(f"the runner returned no summary and wrote no {path}") from None
    if not isinstance(summary, dict):
        raise RuntimeError(f"{path} does not hold a JSON object")
    return summary


def read_journal(path: Path) -> dict[str, dict[str, Any]]:
    """The finished runs recorded in ``runs.jsonl``, by key (a torn last line is skipped)."""
    records: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return records
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by an interruption
            continue
        if isinstance(record, dict) and isinstance(record.get("key"), str) and isinstance(
                record.get("summary"), dict):
            records[record["key"]] = record
    return records


def _repair_journal(path: Path) -> None:
    """End a line cut short by an interruption, so that the next record starts a new line."""
    if path.exists() and path.stat().st_size:
        with path.open("rb+") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                f.write(b"\n")


def _append_line(path: Path, record: dict[str, Any]) -> None:
    line = json.dumps(record, default=_json_default, ensure_ascii=False) + "\n"
    with path.open("a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_json_default) + "\n", encoding="utf-8")
    os.replace(tmp, path)



def _write_table(table, out: Path) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    written = []
    tmp = out / f".{TABLE_CSV}.tmp"
    table.to_csv(tmp, index=False)
    os.replace(tmp, out / TABLE_CSV)
    written.append(TABLE_CSV)
    tmp = out / f".{TABLE_PARQUET}.tmp"
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), tmp)
    os.replace(tmp, out / TABLE_PARQUET)
    written.append(TABLE_PARQUET)
    return written
