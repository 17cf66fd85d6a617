"""The tiers as a stream: the closed loop live (``drsim run --streaming``) and recorded
readings monitored as they arrive (``drsim monitor --stream``); docs/streaming.md.

``run_streaming``: the monitoring features' stages before the passes run as in batch (and,
for a feature whose devices are sized on the whole day, a batch run of the day's tiers:
:func:`~drsim.pipeline.stages.day_sized`, whose plain twins the run reports, the stream
running OP alone: :mod:`drsim.pipeline.day_twins`); the passes job simulates the day and stages the
expected and traditional passes' readings interval by interval
(:func:`drsim.pipeline.tasks.stream_task`); γ comes from its replicas as in batch. A
simulated clock (:class:`~drsim.pipeline.stream_clock.Clock`) plays the intervals into the stream at
``speed`` times real time; the stream's three stateful stages
(:mod:`drsim.pipeline.stream_tiers`) decide each test in the micro-batch that brings its
interval. When the utility predicts on the traditional pass, the second event is planned at
once from what the stream has shown (its plan written to ``stream/second_event_plan.json``)
and the adaptive pass runs beside the stream; its readings from the announcement on are
played in as pass ``adaptive`` (loads only). When the program's last minute is decided on
every monitored pass, the run is assembled as the batch run is, from the stream's rows
(and the day run's twins), and the plain twin's closed loop (BL) runs after it, as in batch.

``monitor_stream``: the same stages over the files that arrive in a folder, the readings of
one pass (``traditional``), γ given or constant; the participants' sums come from the
scenario (:mod:`drsim.pipeline.monitor`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from drsim.pipeline.backend import Backend, Stream, StreamStage
from drsim.pipeline.day_twins import DayTwins
from drsim.pipeline.loads import Loads, sum_loads
from drsim.pipeline.monitor import MONITORED_PASS, participants_task
from drsim.pipeline.pass_names import MONITORED, PASSES
from drsim.pipeline.passes import plan_chunks
from drsim.pipeline.recorded import ROWS, ReadingsError, check_schema
from drsim.pipeline.stages import (
    Passes,
    Progress,
    Run,
    SecondEventPlan,
    Simulation,
    adaptive_pass,
    check_run,
    chunk_rows,
    day_sized,
    monitored_passes,
    pass_costs,
    plain_loop,
    preparations,
    replica_counts,
    second_event_stage,
    this_run,
)
from drsim.pipeline.stream_clock import Clock, file_rows, intervals, width, write_warmup
from drsim.pipeline.stream_features import (
    check_monitor_stream,
    chunk_feature_rows,
    monitored_from,
    readings_context,
)
from drsim.pipeline.stream_tiers import (
    OUT,
    StreamContext,
    check_streamable,
    group_step,
    meter_step,
    source,
    utility_step,
)
from drsim.pipeline.tasks import CHUNKS, LOADS, METER, stream_task
from drsim.scenario import Scenario
from drsim.units import DAY, MICRO, clock
from drsim.utility.feature_registry import active_features, features_of
from drsim.utility.features import feature_output, feature_schema
from drsim.utility.monitoring import MonitoringPlan
from drsim.utility.threshold import Thresholds

__all__ = ["StreamReport", "Live", "run_streaming", "monitor_stream", "check_stream_files",
           "StreamEndedError", "StreamIdleError", "PLAN_FILE", "IDLE_SECONDS", "FIRST_FILE_SECONDS"]

PLAN_FILE = "second_event_plan.json"
_NO_SECOND = "no utility non-compliance predicted: no second event"
POLL_SECONDS = 0.2
#: ``drsim monitor --stream`` fails after this long without a reading the tiers could take
#: while the program is not decided (the default of ``--idle-seconds``): longer than a
#: settlement interval (15 minutes), the longest a meter goes without reporting
IDLE_SECONDS = 900.0
#: ``drsim monitor --stream`` refuses a folder where no file arrives in this long, before
#: any work (or in ``--idle-seconds``, when given)
FIRST_FILE_SECONDS = 20.0


class StreamEndedError(RuntimeError):
    """A streamed run's stream took every file of the run and has still not decided the
    program's last minute: it never would."""


class StreamIdleError(ValueError):
    """``drsim monitor --stream``: no reading the tiers could take for the idle bound, and
    the program not decided: the readings stop before the program does (an input problem)."""


def stages(context: StreamContext) -> list[StreamStage]:
    """The meter, group and utility stages over ``context``, its tiers' inputs made here
    once so that they travel to the workers made
    (:attr:`~drsim.pipeline.stream_tiers.StreamContext.group_inputs`)."""
    _ = context.group_inputs, context.utility_inputs
    return [StreamStage(("gateway",), partial(meter_step, context), OUT),
            StreamStage(("pass", "group"), partial(group_step, context), OUT),
            StreamStage(("pass",), partial(utility_step, context), OUT)]


class Collector:
    """The stream's sink: every micro-batch's rows, kept by batch id (a batch replayed after
    a restart replaces its rows) and written to ``folder/batch-<id>.parquet``, with when
    it arrived; the alerts as they happen. Called from the stream's thread, read from the
    driver's."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.parts: dict[int, pd.DataFrame] = {}
        self.arrived: dict[int, float] = {}
        self._lock = threading.Lock()
        self._cache: tuple[int, pd.DataFrame] | None = None
        for path in sorted(folder.glob("batch-*.parquet")):  # a resumed stream's batches
            batch = int(path.stem.split("-")[1])
            self.parts[batch] = pq.read_table(path).to_pandas()
            self.arrived[batch] = float("nan")

    def __call__(self, table: pa.Table, batch: int) -> None:
        hidden = self.folder / f".batch-{batch:06d}.parquet"
        pq.write_table(table, hidden)
        hidden.replace(self.folder / f"batch-{batch:06d}.parquet")
        frame = table.to_pandas()
        with self._lock:
            self.parts[batch] = frame
            self.arrived[batch] = time.perf_counter()
            self._cache = None

    def batches(self) -> list[tuple[int, pd.DataFrame, float]]:
        """(batch id, rows, when it arrived), in batch order."""
        with self._lock:
            return [(b, self.parts[b], self.arrived[b]) for b in sorted(self.parts)]

    def rows(self) -> pd.DataFrame:
        with self._lock:
            if self._cache is not None:
                return self._cache[1]
            frames = [self.parts[b] for b in sorted(self.parts) if len(self.parts[b])]
            rows = pd.concat(frames, ignore_index=True) if frames else \
                OUT.empty_table().to_pandas()
            self._cache = (len(self.parts), rows)
            return rows

    def _of(self, name: str, kind: str) -> pd.DataFrame:
        rows = self.rows()
        return rows[(rows["pass"] == name) & (rows["kind"] == kind)]

    def decided(self, name: str) -> int:
        """The last tick the utility has decided on pass ``name`` (-1: none)."""
        mine = self._of(name, "decided")
        return int(mine["time"].max()) if len(mine) else -1

    def decided_at(self, name: str, tick: int) -> float | None:
        """When the batch arrived that decided ``tick`` on pass ``name`` (None: not yet)."""
        for _, part, arrived in self.batches():
            mine = part[(part["pass"] == name) & (part["kind"] == "decided")]
            if len(mine) and int(mine["time"].max()) >= tick:
                return arrived
        return None

    def t_nc(self, name: str) -> int | None:
        """The utility's prediction on pass ``name`` once sent (-1: none by the end)."""
        mine = self._of(name, "t_nc")
        return int(mine["time"].iloc[0]) if len(mine) else None


def _renamed(rows: pd.DataFrame) -> pd.DataFrame:
    """The stream's rows with ``pass`` as ``pass_`` (a keyword cannot name a tuple field)."""
    return rows.rename(columns={"pass": "pass_"})


def stream_loads(context: StreamContext, rows: pd.DataFrame, name: str,
                 estimates: bool = False) -> Loads:
    """Pass ``name``'s per-group loads [kW] from the stream's ``load`` rows (NaN for the
    minutes not final yet), and with ``estimates`` the utility's B̂ and P̂ the same way."""
    n_groups = len(context.sizes)
    mine = rows[(rows["pass"] == name) & (rows["kind"] == "load")]
    micro = np.full((3, n_groups, DAY), np.nan)
    if len(mine):
        values = np.stack(mine["counts"].to_numpy()).astype(np.float64)  # (rows, 3) µkW
        group, minute = mine["group"].to_numpy(np.int64), mine["time"].to_numpy(np.int64)
        cells = np.zeros((3, n_groups, DAY))
        seen = np.zeros((n_groups, DAY), dtype=bool)
        for i in range(3):
            np.add.at(cells[i], (group, minute), values[:, i])
        seen[group, minute] = True
        micro = np.where(seen, cells, np.nan)
    kw = micro / MICRO
    return Loads({name: kw[0]}, {name: {}},
                 {"baseline": kw[1], "expected": kw[2]} if estimates else {})


def _not_taken(rows: pd.DataFrame) -> tuple[dict[str, int], int, int]:
    """The bad rows per problem, the late rows, the traditional pass's readings lost."""
    bad = rows[rows["kind"] == "bad"].groupby("note")["value"].sum()
    late = rows.loc[rows["kind"] == "late", "value"].sum()
    lost = rows.loc[(rows["kind"] == "lost") & (rows["pass"] == MONITORED_PASS), "value"].sum()
    return {str(k): int(v) for k, v in bad.items()}, int(late), int(lost)


def _took(rows: pd.DataFrame) -> bool:
    """Whether a micro-batch's rows show the tiers took a reading (not only bad or late)."""
    return bool((~rows["kind"].isin(("bad", "late"))).any())


def _undecided(collector: Collector, plan: MonitoringPlan, names: tuple[str, ...]) -> str:
    """How far the utility got on each pass and what the stream could not take, in words."""
    decided = ", ".join(f"the {n} pass up to {clock(d + 1)}" if d >= 0
                        else f"no minute of the {n} pass"
                        for n in names for d in [collector.decided(n)])
    bad, late, _ = _not_taken(collector.rows())
    worst = f" ({max(bad, key=bad.get)} the most)" if bad else ""
    return (f"of the program {clock(plan.t_start)}-{clock(plan.t_end)} the utility has "
            f"decided {decided}, from {len(collector.batches())} micro-batches; "
            f"{sum(bad.values()):,} bad rows{worst}, {late:,} late rows")


def _readings_files(folder: Path) -> list[Path]:
    """The files of ``folder`` the stream reads: not those whose names start with ``.`` or
    ``_`` (files being written), and no folders, as the stream skips them."""
    return [path for path in sorted(folder.iterdir())
            if not path.name.startswith((".", "_")) and not path.is_dir()]


def check_stream_files(folder: Path, first_file_seconds: float = FIRST_FILE_SECONDS) -> None:
    """:class:`~drsim.pipeline.recorded.ReadingsError`, one line naming the file and what
    is wrong, for a file in ``folder`` the stream cannot read as readings: not a Parquet
    file, a column of docs/monitor.md missing, repeated or of another type
    (:func:`~drsim.pipeline.recorded.check_schema`, as for a readings file); and for a
    folder where no file arrives within ``first_file_seconds`` (the wrong folder, before
    any work). Files that arrive later are read as they come, their bad rows counted."""
    waited = time.perf_counter()
    while not (files := _readings_files(folder)):
        if time.perf_counter() - waited > first_file_seconds:
            raise ReadingsError(f"--stream {folder}: no file of readings arrived in "
                                f"{first_file_seconds:g} s; is it the folder the readings' "
                                "Parquet files land in? (--idle-seconds sets the wait)")
        time.sleep(POLL_SECONDS)
    for path in files:
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError) as exc:
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ReadingsError(f"--stream {folder}: {path.name} is not a Parquet file of "
                                f"readings ({why})") from None
        check_schema(f"--stream {folder}: {path.name}", schema)


@dataclass
class StreamReport:
    """What summary.json's ``streaming`` section says: the speed asked for, the micro-batches,
    each test interval's latency from its release to the utility's decision of its ticks
    (on every monitored pass), how far the stream fell behind, late and bad rows."""

    speed: float | None
    interval_seconds: float | None  # a test interval in real time at that speed
    micro_batches: int
    latency_seconds: list[float]
    late_rows: int
    bad_rows: dict[str, int]
    stream_seconds: float
    plan_seconds_after_prediction: float | None = None
    played_minutes: int = 0  # the simulated minutes the stream played (from the notice)
    lost_readings: int = 0  # the traditional pass's: drsim monitor's readings.lost_readings

    def as_dict(self) -> dict[str, Any]:
        lat = np.asarray(self.latency_seconds, dtype=np.float64)
        pct = {f"p{q}": float(np.percentile(lat, q)) for q in (50, 90, 99)} if len(lat) \
            else {}
        return {"speed": self.speed, "interval_seconds": self.interval_seconds,
                "micro_batches": self.micro_batches,
                "latency_seconds": {**pct, "max": float(lat.max()) if len(lat) else None,
                                    "intervals": len(lat)},
                "intervals_late": int((lat > self.interval_seconds).sum())
                if self.interval_seconds and len(lat) else 0,
                "real_time_factor": self.played_minutes * 60.0 / self.stream_seconds
                if self.stream_seconds else None,
                "stream_seconds": self.stream_seconds,
                "second_event_planned_after_seconds": self.plan_seconds_after_prediction,
                "late_rows": self.late_rows, "bad_rows": self.bad_rows}


@dataclass
class Live:
    """What the live view shows, after every poll of the stream."""

    now: str  # the simulated clock
    released: int
    intervals: int
    passes: dict[str, dict[str, Any]] = field(default_factory=dict)
    behind_minutes: float = 0.0  # the simulated clock ahead of the tiers' decisions
    late_rows: int = 0
    bad_rows: int = 0


def _live(context: StreamContext, clock_: Clock | None, collector: Collector,
          names: tuple[str, ...], released: int) -> Live:
    rows = collector.rows()
    plan = context.plan
    sizes = np.asarray(context.sizes)
    bad, late, _ = _not_taken(rows)
    status = Live(clock(int(clock_.now())) if clock_ is not None else "—", released,
                  len(intervals(plan)) - 1, late_rows=late, bad_rows=sum(bad.values()))
    for name in names:
        meter = rows[(rows["pass"] == name) & (rows["kind"] == "meter")]
        latest = int(meter["time"].max()) if len(meter) else None
        flagged = np.zeros(len(sizes))
        if latest is not None:
            now = meter[meter["time"] == latest]
            np.add.at(flagged, now["group"].to_numpy(np.int64),
                      [c[2] for c in now["counts"]])
        at = int(np.searchsorted(plan.test_times, latest)) if latest is not None else 0
        events = rows[(rows["pass"] == name) & (rows["kind"] == "event")]
        latch = events.groupby("group")["time"].min()
        status.passes[name] = {
            "test": None if latest is None else clock(latest),
            "flagged_share": (flagged / sizes).tolist(),
            "gamma": context.thresholds.gamma[:, min(at, len(plan.test_times) - 1)].tolist(),
            "latched": {int(g): clock(int(t)) for g, t in latch.items()},
            "t_nc": collector.t_nc(name), "decided": collector.decided(name)}
    decided = [p["decided"] for p in status.passes.values() if p["decided"] >= 0]
    if clock_ is not None and decided:
        status.behind_minutes = max(0.0, min(clock_.now(), plan.t_end) - 1 - min(decided))
    return status


def _plan_now(scenario: Scenario, context: StreamContext, passes: Passes, rows: pd.DataFrame,
              delay_detection: int, loads: Loads,
              feature_rows: dict[str, pd.DataFrame] | None = None) -> SecondEventPlan:
    """The second event planned from what the stream has shown (module doc), with the
    monitoring features' rows its chunk tasks made (``feature_rows``)."""
    plan = context.plan
    monitored = monitored_from(context, _renamed(rows), context.passes, context.features,
                               feature_rows)
    run_costs = pass_costs(scenario, monitored, MONITORED_PASS)
    now = Passes(passes.chunks, loads, passes.chunk_rows, passes.handles, passes.seconds)
    return second_event_stage(scenario, plan, now, monitored, run_costs, delay_detection)


def _write_plan(folder: Path, second: SecondEventPlan, t_nc: int) -> None:
    """The second event's plan, written when the utility predicts."""
    event = second.second
    text = {"utility_noncompliance_time": clock(t_nc),
            "second_event": None if event is None else {
                "announced": clock(event.announced), "start": clock(event.start),
                "end": clock(event.end)},
            "note": second.note,
            "incentive": None if second.incentive is None else second.incentive.as_dict(),
            "deficit_at_prediction": second.deficit}
    hidden = folder / f".{PLAN_FILE}"
    hidden.write_text(json.dumps(text, indent=2, default=float) + "\n", encoding="utf-8")
    hidden.replace(folder / PLAN_FILE)


def _folders(folder: Path) -> dict[str, Path]:
    """The stream's folders under ``folder``: the clock's staged files, the stream's
    source, its output as it happens (the alerts), its checkpoint."""
    names = {n: folder / n for n in ("staging", "source", "alerts", "checkpoint")}
    for path in names.values():
        path.mkdir(parents=True, exist_ok=True)
    return names


def run_streaming(scenario: Scenario, backend: Backend, folder: Path, *,
                  speed: float | None = None, delay_detection: int = 0,
                  chunk_size: int | None = None, progress: Progress | None = None,
                  view: Callable[[Live], None] | None = None) -> tuple[Run, StreamReport]:
    """The closed loop live (module doc), its stream's files under ``folder``. ``speed``:
    simulated seconds per real second (None: as fast as it goes)."""
    plan = check_run(scenario, delay_detection)
    check_streamable(scenario)
    where = _folders(folder)
    first_job = len(backend.info.jobs)
    timings: dict[str, float] = {}
    prepared, day = day_sized(scenario, plan, backend, chunk_size,
                              preparations(scenario, plan, backend, progress, timings), timings)
    # the plain twins (BL) from the day run, when there is one: the stream runs OP alone
    features = tuple(f if day is None else f.without_twins() for f in active_features(scenario))
    twins = None if day is None else DayTwins.of(day, backend, monitored_passes(features))
    passes, thresholds = _staged_passes(scenario, backend, plan, where["staging"], chunk_size,
                                        progress)
    chunks = passes.chunks
    context = StreamContext(scenario, plan, tuple(chunks), thresholds,
                            monitored_passes(features), packed=True, features=features,
                            prepared=prepared)
    live = _LiveRun(scenario, backend, folder, context, passes, Collector(where["alerts"]),
                    delay_detection, chunk_feature_rows(backend, passes.handles, features),
                    twins)
    stream = backend.stream(source(context, where["source"], file_rows(width(plan))),
                            stages(context), live.collector, where["checkpoint"])
    write_warmup(where["source"], [c.first for c in chunks], [c.group for c in chunks], plan)
    rate = float("inf") if speed is None else float(speed)
    clock_ = Clock(plan, scenario.dr_program.announce_minute, rate, where["staging"],
                   where["source"])
    stream_started = time.perf_counter()
    live.play(stream, clock_, where["staging"], view)
    stream_seconds = time.perf_counter() - stream_started
    run = live.run(first_job, {"passes_seconds": passes.seconds, **timings,
                               "stream_seconds": stream_seconds})
    return run, _report(clock_, live.collector, plan, rate, speed, stream_seconds,
                        live.planned_after)


def _staged_passes(scenario: Scenario, backend: Backend, plan: MonitoringPlan, staging: Path,
                   chunk_size: int | None, progress: Progress | None
                   ) -> tuple[Passes, Thresholds]:
    """The passes job: the day simulated, the expected and traditional passes' readings
    staged in ``staging`` interval by interval (:func:`~drsim.pipeline.tasks.stream_task`),
    the loads summed; γ from the replicas as in batch. The handles hold the monitoring
    features' rows the chunk tasks made
    (:func:`~drsim.pipeline.stream_features.chunk_feature_rows`)."""
    started = time.perf_counter()
    chunks = plan_chunks(scenario, chunk_size)
    features = {feature_output(f.name): feature_schema(f) for f in active_features(scenario)}
    out = backend.map_chunks(partial(stream_task, scenario, tuple(chunks), plan, str(staging)),
                             len(chunks), {"loads": LOADS, "chunks": CHUNKS, "meter": METER,
                                           **features},
                             label="passes", progress=None if progress is None else
                             partial(progress, "passes"))
    loads = sum_loads(backend.collect(out["loads"]), len(scenario.groups), PASSES)
    rows = chunk_rows(backend, out["chunks"], len(chunks))
    meter = backend.collect(out["meter"]).to_pandas()
    sizes = np.asarray(scenario.group_sizes(), dtype=np.int64)
    thresholds = Thresholds.of(plan, sizes, replica_counts(meter, len(sizes)))
    return Passes(chunks, loads, rows, out, time.perf_counter() - started), thresholds


@dataclass
class _LiveRun:
    """A streamed run from its passes job to its result: what the live loop reads, and the
    second event it plans when the utility predicts, with its adaptive pass."""

    scenario: Scenario
    backend: Backend
    folder: Path
    context: StreamContext
    passes: Passes
    collector: Collector
    delay_detection: int
    feature_rows: dict[str, pd.DataFrame]  # the monitoring features' rows of the chunk tasks
    twins: DayTwins | None = None  # the passes the stream does not run, from the day run
    second: SecondEventPlan | None = None
    adaptive: Future | None = None  # the adaptive pass, beside the stream
    planned_after: float | None = None  # seconds from the prediction's batch to the plan

    def play(self, stream: Stream, clock_: Clock, staging: Path,
             view: Callable[[Live], None] | None) -> None:
        """The live loop: the clock releases the intervals and the stream takes them in,
        the view drawn after every poll, the second event planned when the utility
        predicts; it ends when the program's last minute is decided on every monitored
        pass and the adaptive pass is done. :class:`StreamEndedError` when the stream
        has every file of the run and never decides."""
        plan, collector = self.context.plan, self.collector
        pool = ThreadPoolExecutor(max_workers=1)
        drained = -1  # micro-batches after the last drain with every file of the run released
        try:
            while True:
                released = clock_.tick()
                stream.poll(min(max(clock_.wait(), 0.01), POLL_SECONDS))
                if view is not None:
                    view(_live(self.context, clock_, collector, self.context.passes,
                               released))
                # read before t_nc: the sink runs in the stream's thread, and a batch that
                # lands between the two reads must not end the loop before its t_nc is planned
                done = clock_.finished() and self._decided()
                t_nc = collector.t_nc(MONITORED_PASS)
                if self.second is None and t_nc is not None:
                    self._predicted(t_nc, pool, staging)
                if done and self._adaptive_done():
                    clock_.tick()
                    stream.drain()
                    break
                if clock_.finished() and self._adaptive_done():
                    # every file the run makes is out: drained once more with nothing new and
                    # not decided since `done` was read, the stream never decides the program
                    if len(collector.batches()) == drained and not self._decided():
                        undecided = _undecided(collector, plan, self.context.passes)
                        raise StreamEndedError(
                            "the stream took every file of the run and has not decided the "
                            f"program's last minute: {undecided}")
                    clock_.tick()
                    stream.drain()
                    drained = len(collector.batches())
        finally:
            pool.shutdown(wait=True)
            stream.stop()

    def _adaptive_done(self) -> bool:
        return self.adaptive is None or self.adaptive.done()

    def _decided(self) -> bool:
        return all(self.collector.decided(n) >= self.context.plan.t_end - 1
                   for n in self.context.passes)

    def _predicted(self, t_nc: int, pool: ThreadPoolExecutor, staging: Path) -> None:
        """The utility predicted at ``t_nc`` (-1: it predicts no non-compliance): the
        second event planned from what the stream has shown and written to the folder,
        its adaptive pass started in ``pool``, staging its readings in ``staging``."""
        now = self.collector.rows()
        streamed = stream_loads(self.context, now, MONITORED_PASS).group_kw[MONITORED_PASS]
        # the minutes the stream has shown, their load the simulation's as in batch (a lost
        # reading's is carried in the stream; the deficit reads the households seen)
        shown = np.where(np.isnan(streamed), np.nan,
                         self.passes.loads.group_kw[MONITORED_PASS])
        known = Loads({MONITORED_PASS: shown}, {}, self.passes.loads.estimate_group_kw)
        self.second = _plan_now(self.scenario, self.context, self.passes, now, self.delay_detection,
                                known, self.feature_rows) if t_nc >= 0 else SecondEventPlan(
            note=_NO_SECOND)
        _write_plan(self.folder, self.second, t_nc)
        if t_nc >= 0:
            self.planned_after = time.perf_counter() - (self.collector.decided_at(
                MONITORED_PASS, t_nc) or time.perf_counter())
        if self.second.second is not None:
            self.adaptive = pool.submit(adaptive_pass, self.scenario, self.passes.chunks,
                                        self.second.second, self.backend, None, str(staging))

    def run(self, first_job: int, timings: dict[str, float]) -> Run:
        """The run assembled as the batch run is, from the stream's rows, the second event
        and the adaptive pass's loads (the traditional pass's without a second event);
        ``timings`` gets the adaptive pass's seconds."""
        scenario, context, passes = self.scenario, self.context, self.passes
        monitored = monitored_from(context, _renamed(self.collector.rows()), context.passes,
                                   context.features, self.feature_rows)
        if self.twins is not None:
            monitored = self.twins.joined(monitored, context.features)
        run_costs = pass_costs(scenario, monitored, MONITORED_PASS)
        second = self.second or SecondEventPlan(note=_NO_SECOND)
        incentive = second.incentive
        loads = passes.loads
        if self.adaptive is not None:
            extra, incentive = self.adaptive.result()
            loads = loads.merged(extra.replayed(loads, "traditional", second.second.announced))
            timings["adaptive_pass_seconds"] = self.backend.info.jobs[-1].seconds
        else:
            loads = loads.merged(loads.renamed("traditional", "adaptive"))
            timings["adaptive_pass_seconds"] = 0.0
        started = time.perf_counter()
        bl = plain_loop(scenario, context.plan, passes, monitored, self.delay_detection,
                        self.backend, None, (second, loads))
        if bl is not None:
            timings["plain_loop_seconds"] = time.perf_counter() - started
        simulation = Simulation(scenario, passes.chunks, loads, passes.chunk_rows,
                                this_run(self.backend.info, first_job), timings)
        return Run(simulation, monitored, run_costs, self.delay_detection, second.deficit,
                   incentive, second.second, second.note, bl=bl)


def _report(clock_: Clock | None, collector: Collector, plan: MonitoringPlan, rate: float,
            speed: float | None, seconds: float, planned_after: float | None,
            names: tuple[str, ...] = MONITORED) -> StreamReport:
    """Each interval's latency: from its release to the batch that decided its ticks on
    every pass in ``names``."""
    edges = intervals(plan)
    latency = []
    for j in range(len(edges) - 1):
        if clock_ is None or j not in clock_.released:
            continue
        test = int(edges[j])
        if test not in set(plan.test_times.tolist()):
            continue
        upto = min(int(edges[j + 1]) - 1, plan.t_end - 1)
        at = [collector.decided_at(n, upto) for n in names]
        if all(a is not None and np.isfinite(a) for a in at):
            latency.append(max(0.0, max(at) - clock_.released[j]))
    rows = collector.rows()
    bad, late, lost = _not_taken(rows)
    delta = plan.delta * 60.0 / rate if np.isfinite(rate) else None
    played = plan.t_end - (clock_.notice if clock_ is not None else plan.t_start)
    return StreamReport(speed, delta, len(collector.batches()), latency, late, bad, seconds,
                        planned_after, played, lost)


def monitor_stream(scenario: Scenario, folder_in: Path, backend: Backend, folder: Path, *,
                   thresholds: Thresholds | None = None, chunk_size: int | None = None,
                   idle_seconds: float | None = None,
                   view: Callable[[Live], None] | None = None,
                   prepared: dict[str, tuple[Any, ...]] | None = None
                   ) -> tuple[Run, StreamReport]:
    """Recorded readings monitored as their files arrive in ``folder_in`` (module doc); ends
    when the utility has decided the program's last minute. :class:`StreamIdleError` after
    ``idle_seconds`` (None: :data:`IDLE_SECONDS`) without a micro-batch that brought a
    reading the tiers took (only bad or late rows, or no file, are no progress).
    ``prepared``: the values of the monitoring features' stages before the passes, by
    feature, handed in by the caller (load shedding's cost models and device sizes:
    refused without, :func:`~drsim.pipeline.stream_features.check_monitor_stream`)."""
    plan = check_monitor_stream(scenario, prepared)
    check_streamable(scenario)
    where = _folders(folder)
    sizes = np.asarray(scenario.group_sizes(), dtype=np.int64)
    if thresholds is None:
        thresholds = Thresholds.of(plan, sizes)  # a constant γ_user (api checks it)
    first_job = len(backend.info.jobs)
    chunks = plan_chunks(scenario, chunk_size)
    out = backend.map_chunks(partial(participants_task, scenario, tuple(chunks)),
                             len(chunks), {"chunks": CHUNKS}, label="participants")
    rows_by_chunk = chunk_rows(backend, out["chunks"], len(chunks))
    features = tuple(f for f in (f.with_readings(1) for f in features_of(scenario)) if f.active)
    names = (MONITORED_PASS,)
    for feature in features:
        names = feature.passes(names)
    context = StreamContext(scenario, plan, tuple(chunks), thresholds, names,
                            features=features, prepared=prepared or {})
    collector = Collector(where["alerts"])
    stream = backend.stream(source(context, Path(folder_in), ROWS, MONITORED_PASS),
                            stages(context), collector, where["checkpoint"])
    started = time.perf_counter()
    second: SecondEventPlan | None = None
    planned_after = None
    idle = IDLE_SECONDS if idle_seconds is None else idle_seconds
    last_batch, last_change = len(collector.batches()), time.perf_counter()
    try:
        done = False
        while not done:
            stream.poll(POLL_SECONDS)
            done = all(collector.decided(n) >= plan.t_end - 1  # read before t_nc
                       for n in context.passes)
            if view is not None:
                view(_live(context, None, collector, context.passes, 0))
            batches = collector.batches()
            if any(_took(part) for _, part, _ in batches[last_batch:]):
                last_change = time.perf_counter()
            last_batch = len(batches)
            if not done and time.perf_counter() - last_change > idle:
                what = f"no file of readings arrived in {idle:g} s" if not batches else \
                    f"no reading the tiers could take arrived in {idle:g} s"
                raise StreamIdleError(
                    f"--stream {folder_in}: {what}, and the program is not decided "
                    f"({_undecided(collector, plan, context.passes)}); the same command "
                    "resumes when more readings arrive (--idle-seconds sets the wait)")
            t_nc = collector.t_nc(MONITORED_PASS)
            if second is None and t_nc is not None and t_nc >= 0:
                now = collector.rows()
                second = _plan_now(scenario, readings_context(context, now),
                                   Passes(chunks, Loads({}, {}, {}), rows_by_chunk, {}, 0.0),
                                   now, 0, _projected(stream_loads(
                                       context, now, MONITORED_PASS, estimates=True), plan))
                _write_plan(folder, second, t_nc)
                planned_after = time.perf_counter() - last_change
        stream.drain()
    finally:
        stream.stop()
    seconds = time.perf_counter() - started
    everything = collector.rows()
    monitored = monitored_from(context, _renamed(everything), context.passes,
                               readings_context(context, everything).features)
    trad = monitored.outcome[MONITORED_PASS]
    run_costs = pass_costs(scenario, monitored, MONITORED_PASS)
    loads = stream_loads(context, everything, MONITORED_PASS, estimates=True)
    passes = Passes(chunks, loads, rows_by_chunk, {}, 0.0)
    final = second_event_stage(scenario, plan, passes, monitored, run_costs, 0) \
        if trad.predicted else \
        SecondEventPlan(note="no utility non-compliance predicted: no second event")
    simulation = Simulation(scenario, chunks, loads, rows_by_chunk,
                            this_run(backend.info, first_job), {"stream_seconds": seconds})
    report = _report(None, collector, plan, float("inf"), None, seconds, planned_after,
                     (MONITORED_PASS,))
    return Run(simulation, monitored, run_costs, 0, final.deficit, final.incentive,
               final.second, final.note), report


def _projected(loads: Loads, plan: MonitoringPlan) -> Loads:
    """Loads whose estimates B̂ and P̂ are known up to now, the rest of the program taken
    at the mean of the minutes known (the plan written at t_nc; the final one reads the
    whole program's)."""
    est = {}
    for name, kw in loads.estimate_group_kw.items():
        window = kw[:, plan.t_start:plan.t_end]
        window = np.where(np.isnan(window), np.nanmean(window, axis=1, keepdims=True), window)
        filled = kw.copy()
        filled[:, plan.t_start:plan.t_end] = window
        est[name] = filled
    return Loads(loads.group_kw, loads.category_kw, est)
