"""drsim's Python API: ``drsim.simulate``, ``drsim.run``, ``drsim.monitor``, ``drsim.sweep``.

The composition root of the library (with :mod:`drsim.cli`, which calls these functions): it
picks the backend (Spark by default, in its embedded local mode unless ``master`` names a
cluster; ``backend="serial"`` runs in this process), runs the stage sequence of
:mod:`drsim.pipeline.stages`, builds the summary (:mod:`drsim.results.summary`) and, when ``out`` is
given, writes the result folder (:mod:`drsim.results.output`); each entry point is its
checks and one :func:`_execute`. What they return: :mod:`drsim.results.result`. In a
notebook::

    import drsim
    result = drsim.run("scenarios/quickstart.yaml")
    result.summary["reduction_mwh"]          # the summary.json content
    result.record.prediction                 # the same, typed (drsim.results.summary_model)
    result.tables["load_curves"]             # the Parquet outputs as pandas DataFrames
    result.figure("system_demand")           # Figure 6.11 as a matplotlib Figure
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from drsim.pipeline import stages as pipeline
from drsim.pipeline.backend import Backend, SerialBackend
from drsim.pipeline.monitor import Monitoring, check_monitor, monitor_features
from drsim.pipeline.monitor import monitor as monitor_readings
from drsim.pipeline.recorded import ROWS, ReadingsCheck, check_readings, reading_rows
from drsim.pipeline.streaming import Live, check_stream_files, monitor_stream, run_streaming
from drsim.pipeline.tasks import USER_EVENT_ROWS, user_events
from drsim.results import folders, output, run_data
from drsim.results import summary as summaries
from drsim.results.result import MonitorResult, RunResult, SimulationResult
from drsim.scenario import MAX_CHUNK_SIZE, Scenario, load_scenario

if TYPE_CHECKING:
    from drsim.sweeps import Sweep, SweepOutcome
    from drsim.utility.threshold import Thresholds

BACKENDS = ("spark", "serial")
Progress = Callable[[str, int, int], None]  # (stage, done, total)


def open_backend(backend: str | Backend = "spark", master: str | None = None) -> Backend:
    """A backend by name (``spark``: on ``master``, default local[*]; ``serial``), or the
    given one."""
    if not isinstance(backend, str):
        return backend
    if backend == "serial":
        if master is not None:
            raise ValueError("the serial backend runs in this process: master must be None")
        return SerialBackend()
    if backend == "spark":
        from spark.backend import SparkBackend

        return SparkBackend(master)
    raise ValueError(f"backend {backend!r} is not known; accepted: {', '.join(BACKENDS)}")


def _scenario(scenario: Scenario | str | Path, households: int | None,
              chunk_size: int | None = None) -> Scenario:
    """The scenario (one, or a YAML file's), scaled to ``households``; a bad
    ``chunk_size`` [households per task] is refused here, before any work."""
    if not isinstance(scenario, Scenario | str | Path):
        raise TypeError("scenario must be a drsim Scenario or the path of a scenario YAML "
                        f"file, not {type(scenario).__name__}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(
            chunk_size, int) or not 1 <= chunk_size <= MAX_CHUNK_SIZE):
        raise ValueError(f"chunk_size must be an integer from 1 to {MAX_CHUNK_SIZE} "
                         f"[households per task], not {chunk_size!r}")
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    return scenario if households is None else scenario.with_households(households)


def _with_backend(backend: str | Backend, master: str | None, work):
    """``work(backend, start_seconds)`` on the named backend (closed afterwards) or on the
    given one (what the work kept on it released afterwards, as between a sweep's runs);
    ``start_seconds``: the backend's start-up time."""
    started = time.perf_counter()
    opened = open_backend(backend, master)
    start_seconds = time.perf_counter() - started
    try:
        return work(opened, start_seconds)
    finally:
        if opened is not backend:
            opened.close()
        else:
            opened.release()


def _execute(backend: str | Backend, master: str | None, started: float,
             execute: Callable[[Backend], tuple[Any, dict[str, Any]]],
             summarise: Callable[..., dict[str, Any]],
             write: Callable[[Backend, Any, dict[str, Any]], Any]) -> Any:
    """What every entry point does on its backend (:func:`_with_backend`): ``execute`` the
    work (its result, with a ``timed`` method, and the summary sections only the work knows,
    e.g. a stream's ``streaming``), time it from ``started`` (a :func:`time.perf_counter`
    reading), ``summarise(result, **sections)`` into the complete summary and ``write(backend,
    result, summary)``: what that returns."""

    def work(opened: Backend, start_seconds: float) -> Any:
        result, sections = execute(opened)
        result = result.timed(start_seconds, started)
        return write(opened, result, summarise(result, **sections))

    return _with_backend(backend, master, work)


def _run_summary(readings: bool = False, stream: bool = False
                 ) -> Callable[..., dict[str, Any]]:
    """The summary of a run (and its sections) whose folder holds the files of
    :func:`drsim.results.output.run_files` (with ``readings``, ``stream``, and the files
    that keep its features' stages before the passes, :attr:`pipeline.Run.kept`)."""
    return lambda result, **sections: summaries.build(
        result.simulation, result, files=output.run_files(
            readings=readings, stream=stream, kept=result.kept), **sections)


def _backend_written(opened: Backend, run: pipeline.Run, summary: dict[str, Any],
                     out: str | Path, overwrite: bool, readings: Any = None) -> Path:
    """The folder of ``run`` written to ``out``; the backend writes the user events (and
    ``readings``, the exported meter readings) into it: they never pass through this
    process."""
    events = partial(opened.write_parquet, run.monitored.user_events, function=user_events,
                     schema=USER_EVENT_ROWS, sort_by=["pass", "time", "houseID"])
    rows = None if readings is None else partial(
        opened.write_parquet, readings, function=reading_rows, schema=ROWS,
        sort_by=())  # each chunk's rows by household and time, chunk after chunk
    return output.write_run(run, summary, out, overwrite=overwrite, user_events=events,
                            readings=rows)


def _stream_written(run: pipeline.Run, summary: dict[str, Any], out: str | Path | None,
                    folder: Path) -> Path:
    """The folder of a streamed run or monitor written to ``out`` in place of its live
    ``folder`` (the checkpoint); the stream's user events were collected. ``out`` is
    given: :func:`_stream_folder` refused None before the stream ran."""
    data = run_data.run_data(run, summary, user_events(run.monitored.user_events))
    return output.write_run_data(data, cast("str | Path", out), overwrite=True, stream=folder)


def simulate(scenario: Scenario | str | Path, out: str | Path | None = None, *,
             households: int | None = None, chunk_size: int | None = None,
             master: str | None = None, backend: str | Backend = "spark",
             overwrite: bool = False, progress: Progress | None = None) -> SimulationResult:
    """Simulate the baseline, expected and traditional passes of a scenario (a
    :class:`~drsim.scenario.Scenario` or a YAML file), scaled to ``households`` if given;
    write the result folder to ``out`` if given."""
    started = time.perf_counter()
    scenario = _scenario(scenario, households, chunk_size)
    if out is not None:
        folders.check_output(out, overwrite)

    def write(_: Backend, simulation: pipeline.Simulation, summary: dict) -> SimulationResult:
        return SimulationResult(summary, simulation, None if out is None else
                                output.write_simulation(simulation, summary, out, overwrite))

    return _execute(backend, master, started, lambda opened: (pipeline.simulate(
        scenario, opened, chunk_size=chunk_size, progress=progress), {}),
        partial(summaries.build, files=output.SIMULATION_FILES), write)


def run(scenario: Scenario | str | Path, out: str | Path | None = None, *,
        households: int | None = None, delay_detection: int = 0,
        chunk_size: int | None = None, master: str | None = None,
        backend: str | Backend = "spark", overwrite: bool = False,
        progress: Progress | None = None, export_readings: bool = False,
        streaming: bool = False, speed: float | None = None,
        view: Callable[[Live], None] | None = None) -> RunResult:
    """Run the closed loop on a scenario (passes, three tiers, second event); write the
    result folder to ``out`` if given. ``delay_detection`` [min] delays the second event
    after the prediction (Figure 6.12). ``export_readings`` writes the traditional pass's
    meter readings into the folder too (a dataset ``readings``: docs/monitor.md).
    ``streaming`` runs the tiers as a stream, live, the readings played at ``speed`` times
    real time (None: as fast as it goes), ``view`` called with what the live view shows
    (docs/streaming.md); it needs ``out``, where its checkpoint is kept: the same command
    resumes a streamed run that was stopped (one of other inputs is refused:
    :func:`_stream_identity`).

    The user events grow with the households: with ``out`` the backend writes them into
    the folder (they never pass through this process); without, they are collected into
    ``RunResult.tables``."""
    started = time.perf_counter()
    scenario = _scenario(scenario, households, chunk_size)
    options: dict[str, Any] = {"delay_detection": delay_detection, "chunk_size": chunk_size,
                               "progress": progress}
    if streaming:
        return _run_streamed(scenario, out, backend, master, overwrite, started, speed=speed,
                             view=view, **options)
    return _run_batch(scenario, out, backend, master, overwrite, started,
                      export_readings=export_readings, **options)


def _run_batch(scenario: Scenario, out: str | Path | None, backend: str | Backend,
               master: str | None, overwrite: bool, started: float, *,
               delay_detection: int, export_readings: bool, **options: Any) -> RunResult:
    """:func:`run` of the passes and tiers in batches (drsim.pipeline.stages.run)."""
    if out is not None:
        folders.check_output(out, overwrite)
    elif export_readings:
        raise ValueError("export_readings writes into the result folder: give out")
    pipeline.check_run(scenario, delay_detection)  # bad input stops before Spark starts

    def write(opened: Backend, result: pipeline.Run, summary: dict) -> RunResult:
        if out is None:
            events = opened.collect(result.monitored.user_events).to_pandas()
            return RunResult(summary, result, None, user_events(events))
        return RunResult(summary, result, _backend_written(opened, result, summary, out,
                                                           overwrite, result.readings))

    return _execute(backend, master, started, lambda opened: (pipeline.run(
        scenario, opened, delay_detection=delay_detection, export_readings=export_readings,
        **options), {}), _run_summary(readings=export_readings), write)


def _run_streamed(scenario: Scenario, out: str | Path | None, backend: str | Backend,
                  master: str | None, overwrite: bool, started: float, *,
                  delay_detection: int, speed: float | None, **options: Any) -> RunResult:
    """:func:`run` with ``streaming`` (drsim.pipeline.streaming.run_streaming)."""
    from drsim.pipeline.stream_tiers import check_streamable

    pipeline.check_run(scenario, delay_detection)
    check_streamable(scenario)
    if speed is not None and not speed > 0:
        raise ValueError(f"speed must be > 0 (times real time), not {speed}")
    folder = _stream_folder(out, overwrite, _stream_identity(
        "drsim run --streaming", scenario, options["chunk_size"], backend,
        delay_detection=delay_detection), scenario)

    def execute(opened: Backend) -> tuple[pipeline.Run, dict[str, Any]]:
        result, report = run_streaming(scenario, opened, folder, speed=speed,
                                       delay_detection=delay_detection, **options)
        return result, {"streaming": report.as_dict()}

    return _execute(backend, master, started, execute, _run_summary(stream=True),
                    lambda _, result, summary: RunResult(
            summary, result, _stream_written(result, summary, out, folder)))


def _backend_kind(backend: str | Backend) -> str:
    """``spark`` or ``serial``: the kind of checkpoint a backend's stream keeps."""
    if isinstance(backend, str):
        return backend
    return "serial" if isinstance(backend, SerialBackend) else "spark"


def _stream_identity(command: str, scenario: Scenario, chunk_size: int | None,
                     backend: str | Backend, **more: Any) -> dict[str, Any]:
    """What defines a streamed run, recorded in its live folder's mark when it starts; a
    stopped stream is resumed only by the same (:func:`drsim.results.folders.check_resume`):
    the command, the scenario's hash (summary.json's; it covers ``--households``, which
    scales the scenario), the households per chunk (the gateways the meter stage's state
    is keyed by), the backend's kind (Spark's checkpoint and the serial one are not each
    other's) and ``more`` (the run's ``delay_detection``; the monitor's stream folder and
    thresholds). Not the clock's ``speed``: the stream's rows, and so the run, do not
    depend on it (a stream that falls behind takes the files that piled up in one
    micro-batch), only the latencies in summary.json's ``streaming`` section do, which
    report the resumed part; so a stopped run may be resumed at another speed. Nor the
    Spark master: where the stream runs does not change what it computes."""
    return {"command": command, "scenario_hash": summaries.scenario_hash(scenario),
            "chunk_size": chunk_size or scenario.chunk_size, "backend": _backend_kind(backend),
            **more}


def _stream_folder(out: str | Path | None, overwrite: bool, identity: dict[str, Any],
                   scenario: Scenario) -> Path:
    """The live folder of a streamed run of ``identity`` into ``out``
    (:func:`drsim.results.folders.stream_folder`)."""
    if out is None:
        raise ValueError("a streamed run keeps its checkpoint in its result folder: give out")
    return folders.stream_folder(out, overwrite, identity, scenario.model_dump(mode="json"))


def monitor_thresholds(readings: str | Path | None, scenario: Scenario,
                       thresholds: str | Path | None = None
                       ) -> tuple[Thresholds | None, str | None]:
    """γ[groupID, time] for ``drsim monitor``: from ``thresholds`` (a run's
    thresholds.parquet), else from the run folder the ``readings`` sit in, else None (the
    scenario's constant γ_user); and where it came from."""
    from drsim.utility.monitoring import MonitoringPlan
    from drsim.utility.threshold import Thresholds

    source = "--thresholds " + Path(thresholds).name if thresholds is not None else \
        "the run folder of the readings"
    if thresholds is None:
        if readings is None:
            return None, None
        beside = Path(readings).parent / output.THRESHOLDS
        if not (beside.is_file() and (Path(readings).parent / output.SUMMARY).is_file()):
            return None, None
        thresholds = beside
    plan = MonitoringPlan.of(scenario)
    gamma, share = output.read_thresholds(thresholds, [g.name for g in scenario.groups],
                                          plan.test_times)
    return Thresholds(plan.test_times, gamma, share), source


def monitor_prepared(readings: str | Path | None, scenario: Scenario,
                     cost_models: str | Path | None = None) -> dict[str, tuple[Any, ...]]:
    """The values of the stages a run of ``scenario`` runs before the passes, for ``drsim
    monitor``, which simulates nothing: load shedding's cost models from ``cost_models``
    (a run's cost_models.parquet), else from the run folder the ``readings`` sit in
    (:func:`drsim.pipeline.kept.kept_values`).

    Parameters
    ----------
    readings : str or pathlib.Path or None
        The recorded readings (None: a stream's, which sit in no run folder).
    scenario : drsim.scenario.Scenario
        The scenario of the readings.
    cost_models : str or pathlib.Path, optional
        The file in place of the run folder's (of the stage that keeps one).

    Returns
    -------
    dict of str to tuple
        Feature name -> its stages' values (``prepared`` of
        :func:`drsim.pipeline.monitor.monitor`); empty when no active monitoring feature
        has a stage before the passes.

    Raises
    ------
    ValueError
        In one line: the file is not found (naming the scenario key and the file looked
        for), cannot be read, or is not the stage's or was made for another scenario; or
        ``cost_models`` is given to a scenario that sheds no load.
    """
    from drsim.pipeline.kept import kept_values
    from drsim.utility.monitoring import MonitoringPlan

    used = []

    def read(feature: Any, step: Any) -> tuple[Any, str]:
        path: Path | None
        if cost_models is not None:
            path = Path(cost_models)
            if not path.exists():
                raise ValueError(f"{feature.scenario_key}: --cost-models {path}: no such file")
        else:
            path = None if readings is None else Path(readings).parent / step.file
            if path is None or not (path.is_file()
                                    and (path.parent / output.SUMMARY).is_file()):
                where = "the readings sit in no run folder" if path is None else \
                    f"none at {path}"
                raise ValueError(f"{feature.scenario_key}: drsim monitor simulates nothing "
                                 f"and needs the {step.file} of the run the readings came "
                                 f"from: {where} (give it with --cost-models)")
        used.append(path)
        return output.read_kept(path), str(path)

    prepared = kept_values(scenario, MonitoringPlan.of(scenario), read)
    if cost_models is not None and not used:
        raise ValueError(f"cost models {cost_models} given, but the scenario sheds no load "
                         "(monitoring.shedding is not set)")
    return prepared


def monitor(readings: str | Path | None, scenario: Scenario | str | Path,
            out: str | Path | None = None, *, thresholds: str | Path | None = None,
            cost_models: str | Path | None = None,
            chunk_size: int | None = None, master: str | None = None,
            backend: str | Backend = "spark", overwrite: bool = False, lenient: bool = False,
            progress: Progress | None = None, stream: str | Path | None = None,
            idle_seconds: float | None = None,
            view: Callable[[Live], None] | None = None,
            warn: Callable[[str], None] | None = None) -> MonitorResult:
    """The three tiers and the second event's plan on recorded meter readings (a Parquet
    file or dataset, docs/monitor.md) of the households of ``scenario``; write the result
    folder to ``out`` if given. γ comes from ``thresholds`` (a run's thresholds.parquet),
    else the run folder the readings sit in, else the scenario's constant γ_user; with
    load shedding the cost models come from ``cost_models`` (a run's cost_models.parquet),
    else the run folder the readings sit in (:func:`monitor_prepared`). The
    readings are checked before any work (:class:`~drsim.pipeline.recorded.ReadingsError`);
    ``lenient`` drops and counts bad rows instead. Households of the scenario with no
    reading at all are told in one line, to ``warn`` (default: :func:`warnings.warn`).

    With ``stream`` (a folder; ``readings`` None) the readings are monitored as their
    files arrive there (docs/streaming.md): rows that cannot be readings are counted and
    dropped, never fatal; it ends when the program's last minute is decided, and fails
    (:class:`~drsim.pipeline.streaming.StreamIdleError`) after ``idle_seconds`` (None:
    :data:`~drsim.pipeline.streaming.IDLE_SECONDS`) without a reading the tiers could
    take; a folder where no file arrives in ``idle_seconds`` (None:
    :data:`~drsim.pipeline.streaming.FIRST_FILE_SECONDS`) is refused before any work. A
    stopped one is resumed by the same call, as a streamed :func:`run` is."""
    started = time.perf_counter()
    scenario = _scenario(scenario, None, chunk_size)
    if stream is not None:
        return _monitor_stream(stream, scenario, out, backend, master, overwrite,
                               started, thresholds=thresholds, chunk_size=chunk_size,
                               idle_seconds=idle_seconds, view=view)
    if out is not None:
        folders.check_output(out, overwrite)
    plan = check_monitor(scenario)
    gamma, source = monitor_thresholds(readings, scenario, thresholds)
    prepared = monitor_prepared(readings, scenario, cost_models)
    recorded = cast("str | Path", readings)  # without a stream, the readings are given
    check = check_readings(recorded, scenario, plan.t_start, plan.t_end, lenient)
    monitor_features(scenario, check)  # what the readings turn on, refused before any work
    if check.warning is not None:
        import warnings

        (warn or partial(warnings.warn, stacklevel=2))(check.warning)

    def write(opened: Backend, found: Monitoring, summary: dict) -> MonitorResult:
        return MonitorResult(summary, found, None if out is None else _backend_written(
            opened, found.run, summary, out, overwrite))

    return _execute(backend, master, started, lambda opened: (monitor_readings(
        scenario, recorded, opened, thresholds=gamma, thresholds_from=source,
        chunk_size=chunk_size, lenient=lenient, progress=progress, check=check,
        prepared=prepared), {}),
        lambda found: summaries.build_monitoring(found.run, found.readings.as_dict(),
                                                 found.thresholds_from, output.run_files()),
        write)


def _monitor_stream(stream: str | Path, scenario: Scenario, out: str | Path | None,
                    backend: str | Backend, master: str | None, overwrite: bool,
                    started: float, *, thresholds: str | Path | None,
                    chunk_size: int | None, idle_seconds: float | None,
                    view: Callable[[Live], None] | None) -> MonitorResult:
    """:func:`monitor` with ``stream``."""
    from drsim.pipeline.stream_tiers import check_streamable

    plan = check_monitor(scenario)
    check_streamable(scenario)  # what the stream cannot run: refused before any work
    if not Path(stream).is_dir():
        raise ValueError(f"--stream {stream}: no such folder (the readings' files arrive "
                         "there)")
    gamma, source = monitor_thresholds(None, scenario, thresholds)
    if gamma is None and plan.threshold.readings_refusal is not None:
        raise ValueError(plan.threshold.readings_refusal)
    source = source or "scenario (constant)"
    check_stream_files(Path(stream), *(() if idle_seconds is None else (idle_seconds,)))
    folder = _stream_folder(out, overwrite, _stream_identity(
        "drsim monitor --stream", scenario, chunk_size, backend, stream=str(Path(stream).resolve()),
        thresholds_hash=None if thresholds is None else folders.file_hash(thresholds)), scenario)

    def execute(opened: Backend) -> tuple[pipeline.Run, dict[str, Any]]:
        run, report = monitor_stream(scenario, Path(stream), opened, folder, thresholds=gamma,
                                     chunk_size=chunk_size, idle_seconds=idle_seconds,
                                     view=view)
        found = report.as_dict()
        return run, {"streaming": found, "readings": {
            "file": Path(stream).name, "bad_rows_dropped": found["bad_rows"],
            "lost_readings": report.lost_readings, "late_rows": found["late_rows"]}}

    def write(_: Backend, run: pipeline.Run, summary: dict) -> MonitorResult:
        return MonitorResult(summary, Monitoring(run, ReadingsCheck(str(stream)), source),
                             _stream_written(run, summary, out, folder))

    return _execute(backend, master, started, execute, lambda run, readings, streaming:
                    summaries.build_monitoring(run, readings, source,
                                               output.run_files(stream=True), streaming),
                    write)


def sweep(spec: Sweep | str | Path, out: str | Path, *, seeds: int | None = None,
          master: str | None = None, backend: str | Backend = "spark",
          overwrite: bool = False, progress: Callable[[int, int, str], None] | None = None
          ) -> SweepOutcome:
    """Run a sweep (a :class:`~drsim.sweeps.Sweep` or a sweep YAML file) into ``out``, every
    run on one backend; rerun with the same ``out`` to resume."""
    from drsim.sweeps import check_resume, load_sweep, run_sweep

    if not isinstance(spec, str | Path):
        sweep_spec = spec
    else:
        sweep_spec = load_sweep(spec)
    if seeds is not None:
        sweep_spec = sweep_spec.with_seeds(seeds)
    if not overwrite:
        check_resume(sweep_spec, out)  # another sweep's runs: refused before Spark starts

    def sweep_on(opened: Backend) -> SweepOutcome:
        def runner(scenario: Scenario, run_dir: Path, **options: Any) -> dict[str, Any]:
            return run(scenario, run_dir, backend=opened, **options).summary

        return run_sweep(sweep_spec, out, runner=runner, progress=progress,
                         overwrite=overwrite)

    return _with_backend(backend, master, lambda opened, _: sweep_on(opened))
