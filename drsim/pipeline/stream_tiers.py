"""The three tiers as stateful stream operators (docs/streaming.md).

Readings arrive as rows of :data:`drsim.pipeline.recorded.ROWS` with their pass (or, from a
simulated run, a household's interval for every pass in one row:
:func:`drsim.pipeline.stream_clock.file_rows`); three keyed stages turn them into the run's
events, each stage a pure function
``step(key, state, rows) -> (state, rows)`` whose state is bytes (a backend keeps it: Spark
in its RocksDB state store, :mod:`spark.streaming`):

1. **meter** (key: the gateway, one chunk of households, the keyed engine's layout; each
   pass on its own): each household's running energy and P̂ as arrays; a minute is final
   once a later one arrived (or it is the program's last), so a test is decided in the
   micro-batch that brings its interval. Listing 6.1 is evaluated again over the gateway's
   tests so far (:func:`drsim.utility.monitoring.meter_tier` on the plan cut after the last
   test), run as the monitoring features run it (load shedding: OP and the plain twin on
   the gateways; remote profiles: a fetcher per run), which gives, test by test, the
   events and work of the batch run. Rows of a minute already final are late: counted,
   not used. A reading that did not arrive is lost: counted, its
   load carried from the household's previous one, a lost test reading a placeholder or
   left out as ``monitoring.max_missing`` says (docs/lost_readings.md). Once a gateway's
   program is final it makes the monitoring features' rows of its passes
   (:attr:`StreamContext.features`).
2. **group** (key: pass and group): the group's user events so far; once every gateway of
   the group has decided test T, Listing 6.2 (:func:`drsim.pipeline.tasks.group_leader`)
   with the features' inputs of the pass (:attr:`StreamContext.group_inputs`) gives the
   alerts, events and work of the ticks up to the next test, which nothing later can
   change (a fetch delay holds an alert back, never forward); the leader's forecast comes
   with its first ticks, its device's figures with the last.
3. **utility** (key: pass): once every group has ticked to minute X, Listing 6.3
   (:func:`drsim.pipeline.tasks.utility`) gives the utility's alerts and work up to X and
   t_nc when it falls there.

Every stage passes the earlier stages' rows on, so the last one's output (:data:`OUT`) holds
what the run folder and summary need: user events, meter work and outcome counts, group and
utility events, loads per group and minute (whole µkW), late and bad rows.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from drsim.household.render import micro_kw
from drsim.pipeline.backend import StreamSource
from drsim.pipeline.passes import Chunk
from drsim.pipeline.recorded import problems
from drsim.pipeline.stream_carries import forget, kept_leader, kept_run, kept_utility
from drsim.pipeline.stream_clock import PASSES as STREAM_PASSES
from drsim.pipeline.stream_clock import intervals as intervals_of
from drsim.pipeline.stream_clock import width
from drsim.pipeline.stream_rows import OUT, Block, frame, join
from drsim.pipeline.stream_rows import rows as _rows
from drsim.pipeline.tasks import (
    EVENTS,
    TIERS,
    UTILITY,
    group_leader,
    lost_on_the_way,
    meter_inputs,
    outcome_counts,
    utility,
)
from drsim.pipeline.tier_inputs import TierInputs
from drsim.scenario import Scenario
from drsim.units import DAY
from drsim.utility.control_group_refusals import check_control_group
from drsim.utility.feature_registry import active_features
from drsim.utility.features import FeatureChunk, MeterRun, MonitoringFeature
from drsim.utility.method_registry import method_of
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan, meter_tier
from drsim.utility.threshold import Thresholds

__all__ = ["IN", "OUT", "StreamContext", "source", "meter_step", "group_step",
           "utility_step", "check_streamable"]

#: the rows a stream carries into the meter stage: readings with their pass and gateway;
#: ``noncompliant``: the household's realised Eq. 6.2 outcome when a simulation knows it
#: (for precision and recall, never read by the tiers)
IN = pa.schema([("pass", pa.string()), ("gateway", pa.int64()), ("household", pa.int64()),
                ("group", pa.int64()), ("time", pa.int64()), ("kw", pa.float64()),
                ("energy_kwh", pa.float64()), ("baseline_kw", pa.float64()),
                ("expected_kw", pa.float64()), ("noncompliant", pa.bool_())])
PASSED_ON = ("user", "meter", "outcome", "load", "late", "bad", "lost", "feature")


def check_streamable(scenario: Scenario) -> None:
    """ValueError, in one line, for what the stream does not monitor yet: the monitoring
    features that are not :attr:`~drsim.utility.features.MonitoringFeature.streamed`
    (appliance queries; their batch runs: ``drsim run``)."""
    check_control_group(scenario, "a streamed run")
    names = [f.scenario_key for f in active_features(scenario) if not f.streamed]
    if method_of(scenario).group_test:  # the stream's leaders count user events
        names.insert(0, "monitoring.method")
    if names:
        raise ValueError(f"{names[0]}: the streaming monitoring does not run it yet; run "
                         "this scenario in batch (without --stream or --streaming)")


@dataclass(frozen=True)
class StreamContext:
    """What the stages need besides their rows (picklable: it travels to the workers)."""

    scenario: Scenario
    plan: MonitoringPlan
    chunks: tuple[Chunk, ...]
    thresholds: Thresholds
    passes: tuple[str, ...]  # the monitored passes (others, e.g. adaptive: loads only)
    packed: bool = False  # rows of a household's interval (drsim.pipeline.stream_clock)
    #: the monitoring features whose rows the meter stage makes once a gateway's program
    #: is decided (drsim.utility.features.MonitoringFeature.chunk_rows)
    features: tuple[MonitoringFeature, ...] = ()
    #: the values of the features' stages before the passes, by feature
    #: (drsim.utility.features.MonitoringFeature.preparations)
    prepared: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    #: the stream's id: the meter stage's runs kept between micro-batches are its own
    #: (drsim.pipeline.stream_carries)
    stream_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @cached_property
    def group_inputs(self) -> TierInputs:
        """The features' keyword arguments of the group leaders, per pass
        (:meth:`~drsim.utility.features.MonitoringFeature.group_inputs`, and
        :meth:`~drsim.utility.features.MonitoringFeature.merged_group_inputs` with no
        merge of the chunks' rows, which a stream has not made: the leaders' own γ
        fetches, whose delays hold their alerts back, as in batch). Made once (the
        leaders' γ fetches take a while), and pickled with the context once made
        (:func:`drsim.pipeline.streaming.stages` makes it on the driver)."""
        return TierInputs.of(self.features, lambda f: {
            **f.group_inputs(self.plan, self.prepared),
            **f.merged_group_inputs(None, self.thresholds)})

    @cached_property
    def utility_inputs(self) -> TierInputs:
        """The features' keyword arguments of the utility, per pass
        (:meth:`~drsim.utility.features.MonitoringFeature.utility_inputs`), made once."""
        return TierInputs.of(self.features,
                             lambda f: f.utility_inputs(self.plan, self.prepared))

    @property
    def whole_rows(self) -> bool:
        """Whether the meter stage makes the features' whole rows, keeping the readings
        that arrived and the loads of its gateway's households: recorded readings, which
        no chunk task has seen (a simulated run's chunk task makes the part that needs
        the loads, :func:`drsim.pipeline.tasks.stream_task`)."""
        return bool(self.features) and not self.packed

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(self.scenario.group_sizes())

    def gateways(self, group: int) -> int:
        return sum(1 for c in self.chunks if c.group == group)


# --------------------------------------------------------------------------- the source
def source(context: StreamContext, folder: Path, schema: pa.Schema,
           name: str | None = None) -> StreamSource:
    """The stream's rows: readings in files of ``schema`` (with their pass, or of pass
    ``name``; or a simulated run's, drsim.pipeline.stream_clock.file_rows), each with its
    gateway, the chunk its household falls in (-1: none)."""
    edges = (*(c.first for c in context.chunks), context.scenario.households)
    columns = IN.names if not context.packed else ["gateway", *schema.names]
    return StreamSource(folder, schema, tuple(columns),
                        constants=(("pass", name, pa.string()),
                                   ("energy_kwh", None, pa.float64()),
                                   ("noncompliant", None, pa.bool_())),
                        bucket=("gateway", "household", edges))


LOAD_COLUMNS = ("kw", "energy_kwh", "baseline_kw", "expected_kw")
Columns = dict[str, np.ndarray]


def _floats(values: pd.Series) -> np.ndarray:
    """An object or number column as float64, None and NaN as NaN."""
    if pd.api.types.is_numeric_dtype(values):  # (a nullable dtype's NA: NaN)
        return values.to_numpy(np.float64, na_value=np.nan)
    return pd.to_numeric(values, errors="coerce").to_numpy(np.float64)


def _columns(context: StreamContext, rows: pd.DataFrame) -> dict[str, Columns]:
    """A stage's rows as arrays per pass (household, group, time, the :data:`LOAD_COLUMNS`
    and noncompliant: 1, 0 or NaN), a minute a row;
    a simulated run's rows (a household's interval each, every pass in its own columns:
    drsim.pipeline.stream_clock.file_rows) are spread over their minutes."""
    ints = {c: rows[c].to_numpy(np.int64) for c in ("household", "group", "time")}
    if not context.packed:
        out = {}
        for name in pd.unique(rows["pass"]):
            mine = (rows["pass"] == name).to_numpy()
            out[str(name)] = {**{c: v[mine] for c, v in ints.items()},
                              **{c: _floats(rows.loc[mine, c])
                                 for c in LOAD_COLUMNS},
                              "noncompliant": _floats(rows.loc[mine, "noncompliant"])}
        return out
    edges = np.r_[intervals_of(context.plan), DAY]
    size = width(context.plan)
    floats: Columns = {}  # the rows' columns as float64, each read once

    def read(names: list[str]) -> np.ndarray:
        for c in names:
            if c not in floats:
                floats[c] = _floats(rows[c])
        return np.column_stack([floats[c] for c in names])

    out = {}
    for name in STREAM_PASSES:
        # a row holds the pass when any of its columns has a value (a lost reading has
        # none; the columns are typed, numbers or flags: NaN where null)
        given = ~np.isnan(read([*(f"{name}_kw_{j}" for j in range(size)), f"{name}_kwh",
                                f"{name}_noncompliant"])).all(axis=1)
        if not given.any():
            continue
        start = ints["time"][given]
        ends = edges[np.searchsorted(edges, start, side="right").clip(max=len(edges) - 1)]
        m = np.maximum(ends - start, 1)  # the warm-up's single minute before the program
        inside = np.arange(size)[None, :] < m[:, None]  # (rows, size): the minutes
        total = int(m.sum())

        spread = {c: read([f"{c}_{j}" for j in range(size)])[given][inside]
                  for c in (f"{name}_kw", "phat_kw")}
        register = np.full((len(start), size), np.nan)  # given at the interval's start
        register[:, 0] = read([f"{name}_kwh"])[given, 0]
        out[name] = {"household": np.repeat(ints["household"][given], m),
                     "group": np.repeat(ints["group"][given], m),
                     "time": (start[:, None] + np.arange(size)[None, :])[inside],
                     "kw": spread[f"{name}_kw"], "energy_kwh": register[inside],
                     "baseline_kw": np.full(total, np.nan),
                     "expected_kw": spread["phat_kw"],
                     "noncompliant": np.repeat(read([f"{name}_noncompliant"])[given, 0], m)}
    return out


def _take(columns: Columns, rows: np.ndarray) -> Columns:
    """The rows ``rows`` (a mask or indices) of every column (not copied: all of them)."""
    if rows.dtype == bool and rows.all():
        return dict(columns)
    return {c: v[rows] for c, v in columns.items()}


def _bad(name: str, columns: Columns, scenario: Scenario) -> tuple[Columns, Block]:
    """The rows that are readings, and the count of the others per problem as rows of
    :data:`OUT` (:func:`drsim.pipeline.recorded.problems`; NaN is a load not given, and
    nothing is fatal in a stream)."""
    given = {c: ~np.isnan(columns[c]) for c in LOAD_COLUMNS}
    loads = {c: (np.where(given[c], columns[c], 0.0), given[c]) for c in LOAD_COLUMNS}
    found = problems(columns["household"], columns["group"], columns["time"], loads, scenario)
    n = len(columns["time"])
    bad = np.zeros(n, dtype=bool)
    what = np.full(n, None, dtype=object)
    for problem, mask in found.items():
        what[mask & ~bad] = problem
        bad |= mask
    if not bad.any():
        return columns, join([])
    counts = pd.Series(what[bad]).value_counts()
    return _take(columns, ~bad), _rows(**{"pass": name, "kind": "bad",
                                          "note": counts.index.to_numpy(object),
                                          "value": counts.to_numpy(np.float64)})


# --------------------------------------------------------------------------- meter stage
@dataclass
class GatewayState:
    """One gateway's households on one pass: what the meter stage keeps between
    micro-batches (as arrays over its households)."""

    chunk: Chunk
    next_minute: int  # the gateway's event-time watermark: minutes before it are final
    kw_cum: np.ndarray  # Σ P over the final minutes [kW·min]
    expected_cum: np.ndarray  # Σ P̂ over the same minutes [kW·min]
    last: np.ndarray  # (3, households) the last P, B̂, P̂ [kW]: carried over lost minutes
    acc: list[np.ndarray] = field(default_factory=list)  # accLoad per decided test [kWh]
    lam: list[np.ndarray] = field(default_factory=list)  # λ per decided test [kWh]
    lost: list[np.ndarray] = field(default_factory=list)  # test readings lost per test
    #: (households, program minutes) the readings that arrived, and (3, households,
    #: program minutes) P, B̂, P̂ as the tiers use them: kept for the features' whole rows
    #: (StreamContext.whole_rows)
    arrived: np.ndarray | None = None
    window: np.ndarray | None = None
    noncompliant: np.ndarray | None = None
    pending: Columns | None = None  # rows of the latest minute, not final yet


def _new_gateway(context: StreamContext, gateway: int) -> GatewayState:
    chunk = context.chunks[gateway]
    n, m = chunk.count, context.plan.t_end - context.plan.t_start
    whole = context.whole_rows
    return GatewayState(chunk, context.plan.t_start, np.zeros(n), np.zeros(n),
                        np.zeros((3, n)), arrived=np.zeros((n, m), bool) if whole else None,
                        window=np.zeros((3, n, m)) if whole else None)


def meter_step(context: StreamContext, key: tuple, state: bytes | None, rows: pd.DataFrame
               ) -> tuple[bytes | None, pd.DataFrame]:
    """The meter stage for key (gateway,): each pass's readings (module doc)."""
    gateway = int(key[0])
    states: dict[str, GatewayState] = pickle.loads(state) if state is not None else {}
    out = []
    for name, columns in _columns(context, rows).items():
        columns, bad = _bad(name, columns, context.scenario)
        out.append(bad)
        if gateway >= 0:  # (a household of no gateway: bad, counted above)
            s = states.get(name) or _new_gateway(context, gateway)
            out.append(_pass_step(context, name, s, columns))
            states[name] = s
    return (pickle.dumps(states) if gateway >= 0 else state), frame(out)


def _pass_step(context: StreamContext, name: str, s: GatewayState, columns: Columns
               ) -> Block:
    """One pass of the meter stage at one gateway: late rows, the latest minute kept
    until a later one arrives, the final minutes taken (module doc)."""
    plan, chunk, out = context.plan, s.chunk, []
    minute = columns["time"]
    columns = _take(columns, (minute >= plan.t_start) & (minute < plan.t_end))  # the program
    late = columns["time"] < s.next_minute
    if late.any():
        out.append(_rows(**{"pass": name, "kind": "late", "group": chunk.group,
                            "gateway": chunk.index, "time": int(columns["time"].max()),
                            "value": float(late.sum())}))
        columns = _take(columns, ~late)
    if s.pending is not None:  # (its columns that held no value were left out)
        columns = {c: np.concatenate([s.pending.get(c, np.full(len(s.pending["time"]), np.nan)),
                                      v]) for c, v in columns.items()}
    if not len(columns["time"]):
        return join(out)
    _, first = np.unique(columns["household"] * DAY + columns["time"], return_index=True)
    if len(first) < len(columns["time"]):
        out.append(_rows(**{"pass": name, "kind": "bad", "gateway": chunk.index,
                            "note": "household, time: duplicate reading",
                            "value": float(len(columns["time"]) - len(first))}))
        columns = _take(columns, np.sort(first))
    newest = int(columns["time"].max())
    final_to = newest + 1 if newest == plan.t_end - 1 else newest  # minutes before it final
    s.pending = None if final_to > newest else \
        _take({c: v for c, v in columns.items() if c == "time" or c == "household"
               or not np.isnan(v).all()}, columns["time"] >= final_to)
    known = ~np.isnan(columns["noncompliant"])
    if s.noncompliant is None and known.any():
        s.noncompliant = np.zeros(chunk.count, dtype=bool)
        s.noncompliant[columns["household"][known] - chunk.first] = \
            columns["noncompliant"][known] > 0
    out.append(_final_minutes(context, name, s, _take(columns, columns["time"] < final_to),
                              final_to))
    return join(out)


def _final_minutes(context: StreamContext, name: str, s: GatewayState, columns: Columns,
                   final_to: int) -> Block:
    """Take minutes ``s.next_minute .. final_to - 1`` as final: the loads, and the tests
    among them (module doc)."""
    plan, chunk = context.plan, s.chunk
    minutes = np.arange(s.next_minute, final_to)
    if not len(minutes):
        return join([])
    n, m = chunk.count, len(minutes)
    grid = np.full((4, n, m), np.nan)  # P, register, B̂, P̂
    row = columns["household"] - chunk.first
    col = columns["time"] - s.next_minute
    for i, column in enumerate(LOAD_COLUMNS):
        grid[i, row, col] = columns[column]
    register = bool(np.isfinite(grid[1]).any())
    lost = np.isnan(grid[0]) & np.isnan(grid[1])  # a reading that did not arrive
    tests = set(plan.test_times.tolist())
    loads = np.zeros((3, m), dtype=np.int64)
    decided = []
    for j, minute in enumerate(minutes.tolist()):  # a few minutes a batch, vectorised
        if minute in tests and name in context.passes:
            s.acc.append(grid[1, :, j].copy() if register else s.kw_cum / 60.0)
            s.lam.append(s.expected_cum / 60.0)
            s.lost.append(lost[:, j].copy())
            decided.append(minute)
        values = grid[[0, 2, 3], :, j]
        values = np.where(np.isnan(values), s.last, values)
        s.last = values
        s.kw_cum = s.kw_cum + values[0]
        s.expected_cum = s.expected_cum + values[2]
        loads[:, j] = micro_kw(values).sum(axis=1)
        if s.window is not None:
            s.window[:, :, minute - plan.t_start] = values
    if s.arrived is not None:
        s.arrived[:, minutes - plan.t_start] = ~lost
    s.next_minute = final_to
    common = {"pass": name, "group": chunk.group, "gateway": chunk.index}
    out = [_rows(**common, kind="load", time=minutes,
                 counts=[loads[:, j].tolist() for j in range(m)]),
           _rows(**common, kind="lost", time=final_to - 1, value=float(lost.sum()))]
    if decided and name in context.passes:
        out.append(_decide(context, name, s, decided))
    if final_to == plan.t_end and name in context.passes and context.features:
        out.append(_feature_rows(context, name, s))
    if final_to == plan.t_end:
        forget(context.stream_id, chunk.index, name)
    return join(out)


def _meter_runs(context: StreamContext, name: str, s: GatewayState, plan: MonitoringPlan
                ) -> list[MeterRun]:
    """Listing 6.1 over the gateway's tests so far (``plan``: cut after the last), run as
    the monitoring features run it (:meth:`~drsim.utility.features.MonitoringFeature.meter_runs`,
    with their :meth:`~drsim.utility.features.MonitoringFeature.meter_inputs`: remote
    profiles' fetcher), the test readings that did not arrive lost (placeholders with
    max_missing ≥ 1); pass ``name``'s own run first, then the twins a feature adds."""
    chunk = s.chunk
    ids = np.arange(chunk.first, chunk.first + chunk.count, dtype=np.int64)
    acc, lam, lost = (np.stack(x, axis=1) for x in (s.acc, s.lam, s.lost))
    at = FeatureChunk(plan, chunk.index, chunk.group, ids, prepared=context.prepared)
    # the readings lost on the way over the program (load shedding's quiet meters)
    at = dataclasses.replace(at, lost=lost_on_the_way(context.features, at)
                             if s.arrived is None else ~s.arrived[:, :plan.t_end - plan.t_start])

    # the features' inputs see the whole program (a fetcher prefetches for the test after
    # the last one so far, as in batch); the stream knows which readings were lost
    whole = dataclasses.replace(at, plan=context.plan)

    def inputs(plain: bool = False) -> dict[str, Any]:
        return {**meter_inputs(context.features, whole, plain), "lost": lost,
                "carry": kept_run(context.stream_id, chunk.index, name, plain, context.plan)}

    def plain(label: str, acc_kwh: np.ndarray, expected: np.ndarray, given) -> list[MeterRun]:
        return [MeterRun(label, meter_tier(plan, ids, chunk.group, acc_kwh, expected,
                                           **given()))]

    run = plain
    for feature in context.features:
        run = feature.meter_runs(at, run)
    return run(name, acc, lam, inputs)


def _feature_rows(context: StreamContext, name: str, s: GatewayState,
                  runs: list[MeterRun] | None = None) -> Block:
    """The monitoring features' rows of the gateway's pass
    (:meth:`~drsim.utility.features.MonitoringFeature.chunk_rows`), each row as JSON in
    ``note`` (kind ``feature``, ``value`` unused): once its program is decided, the meter
    tier's runs over every test (and with :attr:`StreamContext.whole_rows` the readings
    that arrived and the loads), at ``time`` t_end; or, given the ``runs`` of the tests
    so far, those of the features that make their rows so far
    (:attr:`~drsim.utility.features.MonitoringFeature.rows_so_far`), at the last test's
    time. The latest rows of a gateway replace its earlier ones
    (:func:`drsim.pipeline.stream_features.feature_merges`)."""
    plan, chunk = context.plan, s.chunk
    ids = np.arange(chunk.first, chunk.first + chunk.count, dtype=np.int64)
    if runs is None:
        window = {} if s.window is None else dict(zip(("load", "baseline", "expected"),
                                                      s.window, strict=True))
        features, runs, time = context.features, _meter_runs(context, name, s, plan), \
            plan.t_end
        at = FeatureChunk(plan, chunk.index, chunk.group, ids, window=window,
                          arrived=s.arrived)
    else:
        features = tuple(f for f in context.features if f.rows_so_far)
        time = int(plan.test_times[len(s.acc) - 1])
        at = FeatureChunk(dataclasses.replace(plan, t_end=time + 1), chunk.index,
                          chunk.group, ids)
    at = dataclasses.replace(at, meter=runs[0].result, prepared=context.prepared,
                             meter_runs=tuple(runs))
    out = []
    for feature in features:
        rows = feature.chunk_rows(at, name)
        for i in range(len(rows[feature.schema.names[0]])):
            text = json.dumps({"feature": feature.name, **{c: rows[c][i] for c in rows}},
                              default=lambda a: np.asarray(a).tolist())
            out.append(_rows(**{"pass": name, "kind": "feature", "group": chunk.group,
                                "gateway": chunk.index, "time": time, "note": text}))
    return join(out)


def _decide(context: StreamContext, name: str, s: GatewayState, decided: list[int]
            ) -> Block:
    """Listing 6.1 over the gateway's tests so far, each run of pass ``name``
    (:func:`_meter_runs`); the user events, work and (at the last test) outcome counts of
    the tests ``decided`` now."""
    plan, chunk = context.plan, s.chunk
    cut = dataclasses.replace(plan, t_end=decided[-1] + 1)
    at = np.searchsorted(cut.test_times, decided)
    runs = _meter_runs(context, name, s, cut)
    out = [_feature_rows(context, name, s, runs)]
    for run in runs:
        m = run.result
        events = m.events[m.events["time"].isin(decided)]
        # lost test readings are not shed; dropped (max_missing 0) they are not processed
        shed = chunk.count - m.processed - (m.lost if plan.max_missing < 1 else 0)
        work = np.stack([m.processed, m.partial_matches, m.outputs, shed, m.fetches])[:, at]
        common = {"pass": run.label, "group": chunk.group, "gateway": chunk.index}
        out += [_rows(**common, kind="user", time=events["time"].to_numpy(np.int64),
                      house=events["houseID"].to_numpy(np.int64),
                      value=events["accLoad"].to_numpy(np.float64),
                      delay=events["delay"].to_numpy(np.float64),
                      missing=events["missing"].to_numpy(np.int64)),
                _rows(**common, kind="meter", time=np.asarray(decided, np.int64),
                      counts=[work[:, j].tolist() for j in range(len(decided))]),
                _rows(**common, kind="tested", time=decided[-1])]
        if decided[-1] == int(plan.test_times[-1]):
            noncompliant = s.noncompliant if s.noncompliant is not None else \
                np.zeros(chunk.count, dtype=bool)
            counts = outcome_counts(plan.test_times, m.first_flag, noncompliant).ravel()
            out.append(_rows(**common, kind="outcome", time=decided[-1],
                             counts=[counts.tolist()]))
    return join(out)


# --------------------------------------------------------------------------- group stage
@dataclass
class GroupState:
    """One group leader on one pass: its user events so far, how far each gateway has
    tested and the last tick decided."""

    events: pd.DataFrame
    tested: dict[int, int] = field(default_factory=dict)
    ticked: int = -1


#: the tiers' rows not of a tick: sent with the first ticks (a leader's forecast, from the
#: previous day) or with the last (a device's figures and sizing, over the whole window)
FIRST_KINDS = ("forecast",)
LAST_KINDS = ("device", "sizing")


def _tiers_rows(name: str, tiers: pd.DataFrame, lo: int, hi: int, plan: MonitoringPlan
                ) -> Block:
    """Rows of :data:`drsim.pipeline.tasks.TIERS` of the ticks in (lo, hi] as rows of
    :data:`OUT`; those of :data:`FIRST_KINDS` when the ticks are the first (lo -1),
    of :data:`LAST_KINDS` when they reach the program's end (a device's list as JSON
    in ``note``)."""
    kind = tiers["kind"]
    timed = ~kind.isin(FIRST_KINDS + LAST_KINDS) & (tiers["time"] > lo) & \
        (tiers["time"] <= hi)
    part = tiers[timed | kind.isin(FIRST_KINDS) & (lo < 0)
                 | kind.isin(LAST_KINDS) & (hi >= plan.t_end - 1)]
    return _rows(**{"pass": name, "kind": part["kind"].to_numpy(object),
                    "group": part["group"].to_numpy(np.int64),
                    "time": part["time"].to_numpy(np.int64),
                    "value": part["load"].to_numpy(np.float64),
                    "counts": [[int(p), int(q)] for p, q in
                               zip(part["processed"], part["partial_matches"], strict=True)],
                    "note": [None if d is None else json.dumps(np.asarray(d).tolist())
                             for d in part["device"]]})


def _next_tick(plan: MonitoringPlan, test: int) -> int:
    """The last tick that the alert of ``test`` decides: the minute before the next test,
    or the program's last minute."""
    later = plan.test_times[plan.test_times > test]
    return int(later[0]) - 1 if len(later) else plan.t_end - 1


def group_step(context: StreamContext, key: tuple, state: bytes | None, rows: pd.DataFrame
               ) -> tuple[bytes | None, pd.DataFrame]:
    """The group stage for key (pass, group) (module doc)."""
    if pd.isna(key[1]):  # rows of no group (bad rows): passed on
        return state, frame([rows[rows["kind"].isin(PASSED_ON)]])
    name, group = str(key[0]), int(key[1])
    plan = context.plan
    s = pickle.loads(state) if state is not None else \
        GroupState(pd.DataFrame({c: pd.Series(dtype=np.float64 if c in ("accLoad", "delay")
                                              else np.int64)
                                 for c in ("time", "houseID", "accLoad", "delay", "missing")}))
    passed = rows[rows["kind"].isin(PASSED_ON)]
    user = rows[rows["kind"] == "user"]
    if len(user):
        s.events = pd.concat([s.events, pd.DataFrame({
            "time": user["time"].to_numpy(np.int64), "houseID": user["house"].to_numpy(np.int64),
            "accLoad": user["value"].to_numpy(np.float64),
            "delay": user["delay"].to_numpy(np.float64),
            "missing": user["missing"].to_numpy(np.int64)})], ignore_index=True)
    for gateway, at in rows.loc[rows["kind"] == "tested", ["gateway", "time"]].itertuples(
            index=False):
        s.tested[int(gateway)] = max(int(at), s.tested.get(int(gateway), -1))
    out = [passed]
    if name in context.passes and len(s.tested) == context.gateways(group):
        upto = _next_tick(plan, min(s.tested.values()))
        if upto > s.ticked:
            final = s.events[s.events["time"].to_numpy() <= upto]  # the rest may still grow
            batch = pd.DataFrame([{"chunk": 0, "group": group, "pass": name,
                                   **{c: final[c].to_numpy() for c in final}}])
            tiers = group_leader(plan, context.sizes, context.thresholds, batch,
                                 **context.group_inputs.at(name),
                                 carry=kept_leader(context.stream_id, name, group).until(upto))
            out.append(_tiers_rows(name, tiers, s.ticked, upto, plan))
            out.append(_rows(**{"pass": name, "kind": "ticked", "group": group,
                                "time": upto}))
            s.ticked = upto
    return pickle.dumps(s), frame(out)


# --------------------------------------------------------------------------- utility stage
@dataclass
class UtilityState:
    """The utility on one pass: the groups' events so far, how far each group has ticked,
    the last tick decided and whether t_nc was sent."""

    events: pd.DataFrame
    ticked: dict[int, int] = field(default_factory=dict)
    decided: int = -1
    sent: bool = False


def utility_step(context: StreamContext, key: tuple, state: bytes | None, rows: pd.DataFrame
                 ) -> tuple[bytes | None, pd.DataFrame]:
    """The utility stage for key (pass,) (module doc)."""
    name = str(key[0])
    plan = context.plan
    s = pickle.loads(state) if state is not None else \
        UtilityState(pd.DataFrame(columns=TIERS.names))
    kinds = rows["kind"]
    out = [rows[kinds.isin(PASSED_ON + ("alert", "event", "work", "user_events_shed")
                           + FIRST_KINDS + LAST_KINDS)]]
    events = rows[kinds.isin(("event",) + FIRST_KINDS)]  # what Listing 6.3 reads
    if len(events):
        s.events = pd.concat([s.events.astype(object), pd.DataFrame({
            "pass": name, "group": events["group"].to_numpy(np.int64),
            "kind": events["kind"].to_numpy(object),
            "time": events["time"].to_numpy(np.int64),
            "load": events["value"].to_numpy(np.float64), "processed": 0,
            "partial_matches": 0})], ignore_index=True)
    for group, at in rows.loc[kinds == "ticked", ["group", "time"]].itertuples(index=False):
        s.ticked[int(group)] = max(int(at), s.ticked.get(int(group), -1))
    if name in context.passes and len(s.ticked) == len(context.sizes):
        upto = min(s.ticked.values())
        if upto > s.decided:
            tiers = utility(plan, s.events.astype({"group": np.int64, "time": np.int64,
                                                   "load": np.float64}), name,
                            **context.utility_inputs.at(name),
                            carry=kept_utility(context.stream_id, name).until(upto))
            out.append(_tiers_rows(name, tiers[tiers["kind"] != "t_nc"], s.decided, upto,
                                   plan))
            t_nc = int(tiers.loc[tiers["kind"] == "t_nc", "time"].iloc[0])
            if not s.sent and (t_nc != NOT_LATCHED and t_nc <= upto
                               or upto == plan.t_end - 1):
                out.append(_rows(**{"pass": name, "kind": "t_nc", "group": UTILITY,
                                    "time": t_nc}))
                s.sent = True
            out.append(_rows(**{"pass": name, "kind": "decided", "group": UTILITY,
                                "time": upto}))
            s.decided = upto
    return pickle.dumps(s), frame(out)


def user_event_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The ``user`` rows of the stream's output as rows of
    :data:`drsim.pipeline.tasks.EVENTS` (one per pass and group)."""
    user = rows[rows["kind"] == "user"]
    out = []
    for (name, group), part in user.groupby(["pass", "group"], sort=True):
        out.append({"chunk": 0, "group": int(group), "pass": name,
                    "time": part["time"].to_numpy(np.int64),
                    "houseID": part["house"].to_numpy(np.int64),
                    "accLoad": part["value"].to_numpy(np.float64),
                    "delay": part["delay"].to_numpy(np.float64),
                    "missing": part["missing"].to_numpy(np.int64)})
    return pd.DataFrame(out, columns=EVENTS.names)
