"""The ``drsim`` command line (typer + rich): the commands call :mod:`drsim.api`.

The run, simulate, monitor, sweep, report and baselines commands are here; the command
groups ``drsim cluster`` (:mod:`drsim.cli.cluster`) and ``drsim scenarios``
(:mod:`drsim.cli.scenarios`) have a module each.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from drsim.cli.cluster import cluster_app
from drsim.cli.exits import fail as _fail
from drsim.cli.scenarios import scenarios_app
from drsim.scenario import MAX_CHUNK_SIZE, ScenarioError, load_scenario
from drsim.units import clock

if TYPE_CHECKING:
    from drsim.results.summary_model import Timings

app = typer.Typer(
    name="drsim",
    help="Distributed smart-grid demand-response simulator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,  # plain help: flags show as flags (rich help marks them <bool>)
)
app.add_typer(cluster_app, name="cluster")
app.add_typer(scenarios_app, name="scenarios")


def _print_version(asked: bool) -> None:
    """``drsim --version``: the installed package's version (summary.json's), then exit."""
    if asked:
        from drsim.results.summary import code_version

        print(f"drsim {code_version()['drsim'] or 'unknown'}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print drsim's version and exit.")] = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", help="Show Spark's and the stream's log lines (INFO and up) and the "
                          "JVM's own output, stack traces included (also: DRSIM_VERBOSE=1)."
    )] = False,
) -> None:
    """Distributed smart-grid demand-response simulator (see README.md)."""
    import spark

    if verbose:
        os.environ[spark.VERBOSE] = "1"  # read where Spark starts (spark.session.get_spark)
    root = logging.getLogger()
    if not spark.verbose() and not any(type(h) is logging.NullHandler for h in root.handlers):
        root.addHandler(logging.NullHandler())  # py4j logs a call broken off (Ctrl-C) there


def _before(out: Path | None) -> tuple[int, int] | None:
    """What a command may replace at ``out``: its summary.json's inode and time (None: no
    summary.json there)."""
    try:
        stat = (Path(out) / "summary.json").stat()
    except (OSError, TypeError):
        return None
    return stat.st_ino, stat.st_mtime_ns


def _interrupted(out: Path | None, before: tuple[int, int] | None,
                 streamed: bool = False) -> typer.Exit:
    """Exit 130 (Ctrl-C) with one line saying what the interrupted command left at
    ``out`` (``before``: :func:`_before` when it started; ``streamed``: the command runs
    a stream, which the same command resumes)."""
    from drsim.results.folders import stream_in_progress

    if out is None:
        message = "nothing was written"
    elif stream_in_progress(out):
        message = f"{out} holds a stopped streamed run; the same command resumes it" \
            if streamed else f"nothing was written; {out} holds the stopped streamed run it held"
    elif (now := _before(out)) is not None and now != before:
        message = f"the result folder {out} is complete (written before the interruption)"
    elif now is not None:
        message = f"nothing was written; {out} holds the result folder it held before"
    else:
        message = f"nothing was written to {out}"
    return _fail(f"interrupted: {message}", 130)


ScenarioArg = Annotated[Path, typer.Argument(
    metavar="SCENARIO",
    help="Scenario YAML file, or a packaged one's name (drsim scenarios list).")]
HouseholdsOpt = Annotated[int | None, typer.Option(
    min=1, help="Scale the scenario to this many households.")]
ChunkSizeOpt = Annotated[int | None, typer.Option(
    min=1, max=MAX_CHUNK_SIZE, help="Households per Spark task (default: the scenario's).")]
MasterOpt = Annotated[str | None, typer.Option(
    help="Spark master URL, e.g. spark://host:7077 (default: local[*]).")]
OverwriteOpt = Annotated[bool, typer.Option(
    "--overwrite", help="Replace the output folder if drsim wrote it (or it is empty); "
                        "anything else there is refused and left alone.")]


class BackendName(StrEnum):
    """Where the stages run (drsim.api.BACKENDS)."""

    spark = "spark"
    serial = "serial"


BackendOpt = Annotated[BackendName, typer.Option(
    "--backend", help="spark (default: local mode, or --master) or serial (this process, no "
                      "Spark: quick for small scenarios).", case_sensitive=False)]
SERIAL_WARNING_HOUSEHOLDS = 20_000  # above this, the serial backend is called slow


def _scenario(path: Path, households: int | None):
    """The scenario of ``path`` (scaled to ``households``); a bad one exits with code 2."""
    try:
        scenario = load_scenario(path)
        return scenario if households is None else scenario.with_households(households)
    except ScenarioError as exc:
        raise _fail(str(exc), 2) from None


def _warn(console: Console):
    """A ``warn(message)`` that prints ``message`` (a ``warning:`` line) in yellow on
    ``console`` (a progress bar's: above the bar)."""
    return lambda message: console.print(message, style="yellow", markup=False,
                                         highlight=False, soft_wrap=True)


def _backend(backend: BackendName, master: str | None, households: int) -> str:
    """The backend's name; ``--master`` with ``serial``, or a master that cannot be reached,
    exits with code 2, and ``serial`` on more than :data:`SERIAL_WARNING_HOUSEHOLDS`
    households warns that it will be slow."""
    if backend is BackendName.spark and master is not None:
        from spark.master import MasterError, check_master

        try:
            check_master(master)
        except MasterError as exc:
            raise _fail(str(exc), 2) from None
    if backend is BackendName.serial:
        if master is not None:
            raise _fail(f"--master {master}: the serial backend runs in this process; use "
                        "--backend spark with --master", 2)
        if households > SERIAL_WARNING_HOUSEHOLDS:
            Console(stderr=True).print(
                f"warning: --backend serial runs all {households:,} households in this one "
                "process, on one core; --backend spark uses every core", style="yellow",
                markup=False, highlight=False, soft_wrap=True)
    return backend.value


def _output_errors():
    """Input errors (exit 2): an output path that may not be written, a query text that
    does not compile (monitoring.queries, monitoring.appliance_queries)."""
    from cep_core import QueryError
    from drsim.results.folders import OutputError
    from drsim.sweeps import SweepOutputError

    return OutputError, SweepOutputError, QueryError


@contextmanager
def _progress_bar(console: Console):
    """The stages' progress bars on ``console``, shown from the first stage's report (an
    input refused before any work leaves its one line alone)."""
    bar = Progress(TextColumn("{task.description:24s}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[unit]}"), TimeElapsedColumn(), console=console)
    try:
        yield bar
    finally:
        if bar.live.is_started:
            bar.stop()


def _stages(bar: Progress):
    """A ``progress(stage, done, total)`` that shows one bar per stage, in the stage's unit
    (chunks, group leaders, ...)."""
    from drsim.pipeline.stages import STAGE_UNITS

    tasks: dict[str, int] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if not bar.live.is_started:
            bar.start()
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total, unit=STAGE_UNITS.get(stage, ""))
        bar.update(tasks[stage], completed=done, total=total)

    return progress


def _print_stage_times(console: Console, timings: Timings) -> None:
    """One line: the wall time of each stage of the run (summary.json's ``timings``; the
    ``*_tier_seconds`` are parts of ``tiers_seconds``)."""
    def name(key: str) -> str:
        return key.removesuffix("_seconds").replace("_", " ")

    seconds = {key: value for key, value in timings.model_dump().items()
               if key.endswith("_seconds") and key != "total_seconds"
               and isinstance(value, int | float)}
    parts = {key: value for key, value in seconds.items() if key.endswith("_tier_seconds")}
    shown = []
    for key, value in seconds.items():
        if key in parts:
            continue
        inner = ", ".join(f"{name(k).removesuffix(' tier')} {v:.1f} s"
                          for k, v in parts.items()) if key == "tiers_seconds" else ""
        shown.append(f"{name(key)} {value:.1f} s" + (f" ({inner})" if inner else ""))
    console.print("stage times: " + ", ".join(shown), markup=False, highlight=False,
                  soft_wrap=True)


@app.command()
def simulate(
    scenario_file: ScenarioArg,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Output folder (default: results/<scenario name>; new, or one "
                            "drsim wrote with --overwrite).")] = None,
    households: HouseholdsOpt = None,
    chunk_size: ChunkSizeOpt = None,
    master: MasterOpt = None,
    backend: BackendOpt = BackendName.spark,
    overwrite: OverwriteOpt = False,
) -> None:
    """Simulate the baseline, expected and traditional passes; write curves and figures."""
    from drsim import api

    scenario = _scenario(scenario_file, households)
    name = _backend(backend, master, scenario.households)
    out = out or Path("results") / scenario.name
    before = _before(out)
    try:
        with _progress_bar(Console(stderr=True)) as bar:
            result = api.simulate(scenario, out, chunk_size=chunk_size, master=master,
                                  backend=name, overwrite=overwrite, progress=_stages(bar))
    except _output_errors() as exc:
        raise _fail(str(exc), 2) from None
    except (ValueError, RuntimeError, OSError) as exc:
        raise _fail(str(exc), 1) from None
    except KeyboardInterrupt:
        raise _interrupted(out, before) from None
    _print_result(result.summary, result.out, written=False)


def _print_result(summary: dict, out: Path, *, written: bool = True) -> None:
    """The headline of a summary, its stage times, and where it was written (in how long,
    when ``written``)."""
    from drsim.results.headline import headline
    from drsim.results.summary_model import Summary

    record = Summary.model_validate(summary)
    console = Console()
    for part in headline(record):
        console.print(part, markup=False, highlight=False, soft_wrap=True)
    _print_stage_times(console, record.timings)
    console.print(f"written to {out} in {record.timings.total_seconds:.1f} s" if written
                  else f"results: {out}", markup=False, highlight=False, soft_wrap=True)


@app.command()
def run(
    scenario_file: ScenarioArg,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Output folder (default: results/<scenario name>).")] = None,
    master: MasterOpt = None,
    delay_detection: Annotated[int, typer.Option(
        min=0, help="Minutes to delay the second event after the prediction (Fig. 6.12).")
    ] = 0,
    households: HouseholdsOpt = None,
    chunk_size: ChunkSizeOpt = None,
    backend: BackendOpt = BackendName.spark,
    overwrite: OverwriteOpt = False,
    export_readings: Annotated[bool, typer.Option(
        "--export-readings", help="Also write the traditional pass's meter readings "
                                  "(household, group, time, kW, B̂, P̂) as the Parquet dataset "
                                  "'readings' in the folder, for drsim monitor.")] = False,
    streaming: Annotated[bool, typer.Option(
        "--streaming", help="Run the tiers live, as a Spark Structured Streaming query, "
                            "the readings played in by a simulated clock; the same command "
                            "resumes a stopped run (docs/streaming.md).")] = False,
    speed: Annotated[float | None, typer.Option(
        min=0.001, help="With --streaming: the clock's speed, times real time (default: as "
                        "fast as it goes).")] = None,
) -> None:
    """Run the adaptive DR scenario: passes, meter/group/utility tiers, second event."""
    from drsim import api

    scenario = _scenario(scenario_file, households)
    name = _backend(backend, master, scenario.households)
    out = out or Path("results") / scenario.name
    if speed is not None and not streaming:
        raise _fail("--speed plays a streamed run's clock: use it with --streaming", 2)
    if streaming and export_readings:
        raise _fail("--export-readings writes a batch run's readings: run without "
                    "--streaming", 2)
    before = _before(out)
    try:
        with _progress_bar(Console(stderr=True)) as bar, _live_view(streaming) as view:
            result = api.run(scenario, out, master=master, delay_detection=delay_detection,
                             chunk_size=chunk_size, backend=name, overwrite=overwrite,
                             progress=_stages(bar), export_readings=export_readings,
                             streaming=streaming, speed=speed, view=view)
    except _output_errors() as exc:
        raise _fail(str(exc), 2) from None
    except (ValueError, RuntimeError, OSError) as exc:
        raise _fail(str(exc), 1) from None
    except KeyboardInterrupt:
        raise _interrupted(out, before, streamed=streaming) from None
    _print_result(result.summary, out)


@contextmanager
def _live_view(on: bool):
    """A ``view(live)`` that draws the stream's state in a rich Live table, started with
    the first state (an input refused before the stream leaves its one line alone); None
    when ``on`` is false."""
    if not on:
        yield None
        return
    from rich.live import Live

    live = Live(console=Console(stderr=True), refresh_per_second=4, transient=False)

    def view(status) -> None:
        if not live.is_started:
            live.start()
        live.update(_live_table(status))

    try:
        yield view
    finally:
        if live.is_started:
            live.stop()
            if not live.console.is_terminal:  # (its last table ends with no new line there)
                live.console.line()


def _live_table(status) -> Table:
    """The live view: per pass and group the share flagged at the latest test beside γ, the
    latch, and the utility's t_nc (drsim.pipeline.streaming.Live)."""
    table = Table(title=f"simulated clock {status.now}: {status.released}/{status.intervals} "
                        f"intervals released, the tiers {status.behind_minutes:.0f} min "
                        f"behind; late rows {status.late_rows}, bad rows {status.bad_rows}",
                  title_justify="left")
    for column in ("pass", "test", "group", "flagged", "γ", "latched", "t_nc"):
        table.add_column(column, justify="left" if column == "pass" else "right")
    for name, p in status.passes.items():
        t_nc = p["t_nc"]
        shown = "—" if t_nc is None else "none" if t_nc < 0 else clock(t_nc)
        for g, (share, gamma) in enumerate(zip(p["flagged_share"], p["gamma"], strict=True)):
            table.add_row(name if g == 0 else "", p["test"] or "—" if g == 0 else "",
                          str(g), f"{share:.3f}", f"{gamma:.3f}",
                          p["latched"].get(g, ""), shown if g == 0 else "",
                          style="red" if share > gamma else None)
    return table


@app.command()
def monitor(
    scenario_file: Annotated[Path, typer.Option(
        "--scenario", "-s", help="The scenario of the households, groups, program and "
                                 "monitoring the readings belong to.")],
    readings: Annotated[Path | None, typer.Argument(
        metavar="[READINGS]", help="Recorded meter readings: a Parquet file or dataset "
                                   "(drsim run --export-readings writes one; "
                                   "docs/monitor.md).")] = None,
    thresholds: Annotated[Path | None, typer.Option(
        help="A run's thresholds.parquet (γ per group and test time); default: the one of "
             "the run folder READINGS sits in, else the scenario's constant γ_user.")] = None,
    cost_models: Annotated[Path | None, typer.Option(
        help="With load shedding (monitoring.shedding): a run's cost_models.parquet (the "
             "groups' cost models); default: the one of the run folder READINGS sits "
             "in.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Output folder (default: results/<scenario name>_monitor).")
    ] = None,
    lenient: Annotated[bool, typer.Option(
        "--lenient", help="Count and drop rows that cannot be readings instead of "
                          "stopping.")] = False,
    stream: Annotated[Path | None, typer.Option(
        help="Monitor the readings as their Parquet files arrive in this folder (Spark "
             "Structured Streaming; instead of READINGS).")] = None,
    idle_seconds: Annotated[float | None, typer.Option(
        min=0.0, help="With --stream: fail after this many seconds without a reading the "
                      "tiers could take while the program is not decided (default: 900), "
                      "and wait as long for a first file (default: 20; "
                      "docs/streaming.md).")] = None,
    chunk_size: ChunkSizeOpt = None,
    master: MasterOpt = None,
    backend: BackendOpt = BackendName.spark,
    overwrite: OverwriteOpt = False,
) -> None:
    """Monitor recorded meter readings: the three tiers, t_nc and the second event's plan,
    with no simulation."""
    from drsim import api
    from drsim.pipeline.recorded import ReadingsError
    from drsim.results.output import ThresholdsError

    scenario = _scenario(scenario_file, None)
    name = _backend(backend, master, scenario.households)
    out = out or Path("results") / f"{scenario.name}_monitor"
    if (readings is None) == (stream is None):
        raise _fail("give either READINGS (a Parquet file or dataset) or --stream FOLDER", 2)
    before = _before(out)
    try:
        with _progress_bar(Console(stderr=True)) as bar, \
                _live_view(stream is not None) as view:
            result = api.monitor(readings, scenario, out, thresholds=thresholds,
                                 cost_models=cost_models, chunk_size=chunk_size,
                                 master=master, backend=name, overwrite=overwrite,
                                 lenient=lenient, progress=_stages(bar),
                                 stream=stream, idle_seconds=idle_seconds, view=view,
                                 warn=_warn(bar.console))
    except (*_output_errors(), ReadingsError, ThresholdsError) as exc:
        raise _fail(str(exc), 2) from None
    except ValueError as exc:  # what readings cannot feed (drsim.pipeline.monitor)
        raise _fail(str(exc), 2) from None
    except (RuntimeError, OSError) as exc:
        raise _fail(str(exc), 1) from None
    except KeyboardInterrupt:
        raise _interrupted(out, before, streamed=stream is not None) from None
    _print_result(result.summary, out)


@app.command()
def sweep(
    sweep_file: Annotated[Path, typer.Argument(
        metavar="SWEEP", help="Sweep YAML file (format: drsim.sweeps, docs/sweeps.md).")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Output folder; rerun with the same folder to resume.")],
    seeds: Annotated[int | None, typer.Option(
        min=1, help="Runs per point with independent seeds (default: the sweep file's).",
    )] = None,
    master: MasterOpt = None,
    backend: BackendOpt = BackendName.spark,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Start afresh: replace the output folder if it is a sweep folder "
                            "that holds only what drsim wrote (or is empty).")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Check the sweep and list its points; run nothing.")] = False,
) -> None:
    """Run a grid of scenario overrides, each point with N seeds; write a table and plots.

    Finished runs are recorded in OUT/runs.jsonl as they complete: after an interruption,
    the same command resumes where it stopped (without --overwrite, an existing sweep folder
    is resumed).
    """
    from drsim.sweeps import (
        JOURNAL,
        SweepError,
        SweepOutputError,
        SweepRunError,
        load_sweep,
    )
    from drsim.sweeps.report import sweep_table
    from drsim.sweeps.table_text import sweep_title

    started = time.perf_counter()
    try:
        spec = load_sweep(sweep_file)
        if seeds is not None:
            spec = spec.with_seeds(seeds)
    except (SweepError, ScenarioError) as exc:
        raise _fail(str(exc), 2) from None
    runs = spec.runs()
    console = Console(stderr=True)
    if dry_run:
        stdout = Console()
        stdout.print(f"{spec.name}: {len(spec.points)} points x {spec.seeds} "
                     f"seed{'s' if spec.seeds != 1 else ''} = {len(runs)} runs "
                     f"(base scenario {spec.base.name}); nothing run (--dry-run)",
                     markup=False, highlight=False, soft_wrap=True)
        table = Table()
        table.add_column("point", justify="right")
        for axis in spec.axes:
            table.add_column(axis, justify="right")
        table.add_column("seeds")
        for point in spec.points:
            point_seeds = [str(r.seed) for r in runs if r.point is point]
            table.add_row(str(point.index), *(str(point.values[a]) for a in spec.axes),
                          ", ".join(point_seeds[:3]) + (" ..." if len(point_seeds) > 3 else ""))
        stdout.print(table)
        return

    from drsim import api
    from drsim.sweeps import check_output

    name = _backend(backend, master, max(r.scenario.households for r in runs))
    try:
        check_output(out, overwrite, spec)  # before any progress is shown
        with Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("runs"), TimeElapsedColumn(),
                      TextColumn("{task.description}"), console=console) as bar:
            task = bar.add_task("", total=len(runs))

            def progress(done: int, total: int, label: str) -> None:
                bar.update(task, completed=done, total=total, description=label)

            outcome = api.sweep(spec, out, master=master, backend=name, progress=progress,
                                overwrite=overwrite)
    except (SweepError, ScenarioError, SweepOutputError) as exc:
        raise _fail(str(exc), 2) from None
    except SweepRunError as exc:
        cause = exc.__cause__
        if cause is not None and not isinstance(cause, ScenarioError):
            from rich.traceback import Traceback

            console.print(Traceback.from_exception(type(cause), cause, cause.__traceback__))
        raise _fail(f"{exc}\n{exc.done} of {exc.total} runs are finished and recorded in "
                    f"{out / JOURNAL}; run the same command again to resume", 1) from None
    except KeyboardInterrupt:
        raise _fail(f"interrupted; the finished runs are recorded in {out / JOURNAL}; run "
                    "the same command again to resume", 130) from None
    if outcome.reused:
        console.print(f"resumed: {outcome.reused} of {outcome.total} runs were already done",
                      markup=False, highlight=False)
    table = sweep_table(outcome.table, spec.axes, spec.metrics,
                        title=sweep_title(spec.name, len(spec.points), spec.seeds))
    stdout = Console()
    stdout.print(table)
    stdout.print(f"results: {out} ({', '.join(outcome.files)}); "
                 f"{outcome.ran} runs in {time.perf_counter() - started:.1f} s",
                 markup=False, highlight=False, soft_wrap=True)


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(
        metavar="RUN_DIR", help="A result folder (summary.json), a finished sweep folder or a "
                                "drsim baselines folder.")],
    full: Annotated[bool, typer.Option(
        "--full", help="Every field of summary.json, section by section.")] = False,
    section: Annotated[list[str] | None, typer.Option(
        "--section", "-s", help="Every field of this section (repeatable), e.g. prediction.",
    )] = None,
    html: Annotated[bool, typer.Option(
        "--html", help="Write one self-contained HTML file with interactive figures (a run "
                       "or sweep folder; needs drsim[report]).")] = False,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="With --html: the file (default: RUN_DIR.html beside the "
                            "folder).")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="With --html: replace the file if it is a report drsim wrote.",
    )] = False,
) -> None:
    """Print a result folder's headline, as drsim run or simulate printed it (--full: every
    field of its summary.json); a sweep or drsim baselines folder: its table. With --html,
    write the report as an HTML file instead (docs/report.md)."""
    from drsim.results.baseline_table import accuracy_rich_table, read_accuracy_folder
    from drsim.results.report import ReportError, print_report
    from drsim.sweeps.report import is_sweep_folder, print_sweep_report

    if html and (full or section):
        raise _fail("--html writes the whole report; --full and --section apply to the "
                    "printed one", 2)
    if not html and (out is not None or overwrite):
        raise _fail("--out and --overwrite apply to --html", 2)
    try:
        if html:
            _html_report(run_dir, out, overwrite)
        elif (accuracy := read_accuracy_folder(run_dir)) is not None:
            Console().print(accuracy_rich_table(accuracy))
        elif is_sweep_folder(run_dir):
            print_sweep_report(run_dir, Console(), sections=section)
        else:
            print_report(run_dir, Console(), sections=section, full=full)
    except ReportError as exc:
        raise _fail(str(exc), 2) from None


def _html_report(folder: Path, out: Path | None, overwrite: bool) -> None:
    """``drsim report --html``: write the file, then say where and how large it is."""
    from drsim.report_html.writing import write_html_report

    path = write_html_report(folder, out, overwrite)
    Console().print(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB)", markup=False,
                    highlight=False, soft_wrap=True)


@app.command()
def baselines(
    scenario_file: ScenarioArg,
    households: Annotated[int, typer.Option(
        min=1, help="The sample: the first N households of each group.")] = 200,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Output folder (default: results/<scenario name>_baselines; new, "
                            "or one drsim wrote with --overwrite).")] = None,
    overwrite: OverwriteOpt = False,
) -> None:
    """Measure every M&V method (baseline.method) against the same-day counterfactual:
    CV(RMSE), bias and settlement error per household and group (docs/mv_accuracy.md)."""
    from drsim.pipeline.baseline_accuracy import accuracy_table
    from drsim.results.baseline_table import accuracy_rich_table, write_accuracy_folder
    from drsim.results.folders import check_output

    scenario = _scenario(scenario_file, None)
    out = out or Path("results") / f"{scenario.name}_baselines"
    before = _before(out)
    try:
        check_output(out, overwrite)  # before any work
        with Progress(TextColumn("households"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("chunks"), TimeElapsedColumn(),
                      console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("", total=None)
            result = accuracy_table(scenario, households, progress=lambda done, total:
                                    bar.update(task, completed=done, total=total))
        files = write_accuracy_folder(result, out, overwrite, command=(
            f"drsim baselines {scenario_file} --households {households}"))
    except _output_errors() as exc:
        raise _fail(str(exc), 2) from None
    except ScenarioError as exc:
        raise _fail(str(exc), 2) from None
    except KeyboardInterrupt:
        raise _interrupted(out, before) from None
    stdout = Console()
    stdout.print(accuracy_rich_table(result))
    stdout.print(f"results: {out} ({', '.join(files)})", markup=False, highlight=False,
                 soft_wrap=True)
