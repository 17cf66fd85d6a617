"""drsim's Python API: ``drsim.simulate``, ``drsim.run`` and ``drsim.sweep``.

The composition root of the library (with :mod:`drsim.cli`, which calls these functions): it
picks the backend (Spark by default, in its embedded local mode unless ``master`` names a
cluster; ``backend="serial"`` runs in this process), runs the stage sequence of
:mod:`drsim.pipeline.stages`, builds the summary (:mod:`drsim.results.summary`) and, when ``out`` is
given, writes the result folder (:mod:`drsim.results.output`). In a notebook::

    import drsim
    result = drsim.run("scenarios/quickstart.yaml")
    result.summary["reduction_mwh"]          # the summary.json content
    result.tables["load_curves"]             # the Parquet outputs as pandas DataFrames
    result.figure("system_demand")           # Figure 6.11 as a matplotlib Figure
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from drsim.pipeline import stages as pipeline
from drsim.pipeline.backend import Backend, SerialBackend
from drsim.pipeline.tasks import USER_EVENT_ROWS, user_events
from drsim.results import folders, output, run_data
from drsim.results import summary as summaries
from drsim.scenario import Scenario, load_scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from drsim.sweeps import Sweep, SweepOutcome

BACKENDS = ("spark", "serial")
Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True)
class SimulationResult:
    """A simulation: its summary, its tables as pandas DataFrames, its figures."""

    summary: dict[str, Any]
    simulation: pipeline.Simulation
    out: Path | None = None  # the result folder, when one was written

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """``load_curves``: pass, group, minute, kw (long format)."""
        loads = self.simulation.loads
        names = [g.name for g in self.simulation.scenario.groups]
        return {"load_curves": output.curves_table(names, loads.group_kw,
                                                   list(loads.group_kw)).to_pandas()}

    def figure(self, name: str) -> Figure:
        """``system_demand`` or ``breakdown`` as a matplotlib Figure."""
        return _figure(name, self.simulation, system_demand="plot_system_demand",
                       breakdown="plot_breakdown")


@dataclass(frozen=True)
class RunResult:
    """A closed-loop run: its summary, its tables as pandas DataFrames, its figures."""

    summary: dict[str, Any]
    run: pipeline.Run
    out: Path | None = None
    #: the user events, collected when no folder was written (they grow with the households)
    user_events: pd.DataFrame | None = field(default=None, repr=False)

    @cached_property
    def data(self) -> run_data.RunData:
        """What the run folder shows (:class:`~drsim.results.run_data.RunData`)."""
        return run_data.run_data(self.run, self.summary, self.user_events)

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """``load_curves``, the tiers' events (``user_events``, ``group_alerts``,
        ``group_events``, ``utility_alerts``) and ``thresholds``, as in the run folder (the
        user events are read from it when the run wrote one)."""
        tables = {name: table.to_pandas() for name, table in output.run_tables(self.data).items()}
        if "user_events" not in tables and self.out is not None:
            import pyarrow.parquet as pq

            tables["user_events"] = pq.read_table(self.out / output.USER_EVENTS).to_pandas()
        return tables

    def figure(self, name: str) -> Figure:
        """``system_demand`` (Figure 6.11) or ``compliance_timeline`` as a Figure."""
        return _figure(name, self.data, system_demand="plot_run_demand",
                       compliance_timeline="plot_compliance_timeline")


def _figure(name: str, data: Any, **draw: str) -> Figure:
    """Figure ``name`` of ``data``, drawn by the :mod:`drsim.results.figures` function
    ``draw[name]``."""
    from drsim.results import figures

    if name not in draw:
        raise KeyError(f"no figure {name!r}; accepted: {', '.join(draw)}")
    return getattr(figures, draw[name])(data)


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


def _scenario(scenario: Scenario | str | Path, households: int | None) -> Scenario:
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


def simulate(scenario: Scenario | str | Path, out: str | Path | None = None, *,
             households: int | None = None, chunk_size: int | None = None,
             master: str | None = None, backend: str | Backend = "spark",
             overwrite: bool = False, progress: Progress | None = None) -> SimulationResult:
    """Simulate the baseline, expected and traditional passes of a scenario (a
    :class:`~drsim.scenario.Scenario` or a YAML file), scaled to ``households`` if given;
    write the result folder to ``out`` if given."""
    started = time.perf_counter()
    scenario = _scenario(scenario, households)
    if out is not None:
        folders.check_output(out, overwrite)

    def work(opened: Backend, start_seconds: float) -> tuple[pipeline.Simulation, dict]:
        simulation = pipeline.simulate(scenario, opened, chunk_size=chunk_size,
                                       progress=progress).timed(start_seconds, started)
        return simulation, summaries.build(simulation, files=output.SIMULATION_FILES)

    simulation, summary = _with_backend(backend, master, work)
    if out is not None:
        out = output.write_simulation(simulation, summary, out, overwrite=overwrite)
    return SimulationResult(summary, simulation, out)


def run(scenario: Scenario | str | Path, out: str | Path | None = None, *,
        households: int | None = None, delay_detection: int = 0,
        chunk_size: int | None = None, master: str | None = None,
        backend: str | Backend = "spark", overwrite: bool = False,
        progress: Progress | None = None) -> RunResult:
    """Run the closed loop on a scenario (passes, three tiers, second event); write the
    result folder to ``out`` if given. ``delay_detection`` [min] delays the second event
    after the prediction (Figure 6.12).

    The user events grow with the households: with ``out`` the backend writes them into
    the folder (they never pass through this process); without, they are collected into
    ``RunResult.tables``."""
    started = time.perf_counter()
    scenario = _scenario(scenario, households)
    if out is not None:
        folders.check_output(out, overwrite)
    pipeline.check_run(scenario, delay_detection)  # bad input stops before Spark starts

    def work(opened: Backend, start_seconds: float) -> RunResult:
        result = pipeline.run(scenario, opened, delay_detection=delay_detection,
                              chunk_size=chunk_size, progress=progress
                              ).timed(start_seconds, started)
        summary = summaries.build(result.simulation, result, files=output.run_files())
        events = result.monitored.user_events
        if out is None:
            return RunResult(summary, result, None,
                             user_events(opened.collect(events).to_pandas()))
        writer = partial(opened.write_parquet, events, function=user_events,
                         schema=USER_EVENT_ROWS, sort_by=["pass", "time", "houseID"])
        path = output.write_run(result, summary, out, overwrite=overwrite, user_events=writer)
        return RunResult(summary, result, path)

    return _with_backend(backend, master, work)


def sweep(spec: Sweep | str | Path, out: str | Path, *, seeds: int | None = None,
          master: str | None = None, backend: str | Backend = "spark",
          overwrite: bool = False, progress: Callable[[int, int, str], None] | None = None
          ) -> SweepOutcome:
    """Run a sweep (a :class:`~drsim.sweeps.Sweep` or a sweep YAML file) into ``out``, every
    run on one backend; rerun with the same ``out`` to resume."""
    from drsim.sweeps import load_sweep, run_sweep

    if not isinstance(spec, str | Path):
        sweep_spec = spec
    else:
        sweep_spec = load_sweep(spec)
    if seeds is not None:
        sweep_spec = sweep_spec.with_seeds(seeds)

    def sweep_on(opened: Backend) -> SweepOutcome:
        def runner(scenario: Scenario, run_dir: Path, **options: Any) -> dict[str, Any]:
            return run(scenario, run_dir, backend=opened, **options).summary

        return run_sweep(sweep_spec, out, runner=runner, progress=progress,
                         overwrite=overwrite)

    return _with_backend(backend, master, lambda opened, _: sweep_on(opened))
