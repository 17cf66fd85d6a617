"""The tiers as a stream (drsim.pipeline.streaming, stream_tiers, stream_clock): a streamed
run gives the batch run's summary, on the serial backend and on Spark Structured Streaming;
recorded readings monitored as their files arrive give the batch monitoring, with bad and
late rows counted, never fatal; a streamed run killed and started again on its checkpoint
ends as an uninterrupted one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from small_scenarios import quickstart

import drsim.api as api
from drsim.pipeline.stream_clock import Clock, intervals
from drsim.results import folders
from drsim.scenario import Scenario, load_scenario, scenario_from_dict
from drsim.utility.monitoring import MonitoringPlan

QUICKSTART = "scenarios/quickstart.yaml"
SKIP = ("backend", "timings", "resources", "files", "streaming", "code_version")
GAMMA = {"method": "expected", "z": 1.0, "replicas": 4}


def small(households: int = 400, **monitoring):
    s = load_scenario(QUICKSTART).with_households(households)
    data = s.model_dump(mode="json", exclude={"source_path"})
    data["chunk_size"] = 100
    data["monitoring"].update({"gamma_user": GAMMA, **monitoring})
    return scenario_from_dict(data)


def assert_same_summary(batch: dict, streamed: dict) -> None:
    for key in batch:
        if key not in SKIP:
            assert streamed[key] == batch[key], key


@pytest.fixture(scope="module")
def scenario():
    return small()


@pytest.fixture(scope="module")
def batch(scenario):
    return api.run(scenario, backend="serial").summary


def test_a_streamed_run_gives_the_batch_run(scenario, batch, tmp_path):
    assert batch["prediction"]["predicted"], "the test needs a prediction"
    result = api.run(scenario, tmp_path / "s", backend="serial", streaming=True)
    assert_same_summary(batch, result.summary)
    stream = result.summary["streaming"]
    assert stream["late_rows"] == 0 and stream["bad_rows"] == {}
    assert stream["latency_seconds"]["intervals"] == len(MonitoringPlan.of(scenario).test_times)
    out = tmp_path / "s"
    assert sorted(p.name for p in out.iterdir()) == sorted(result.summary["files"])
    plan = json.loads((out / "stream" / "second_event_plan.json").read_text())
    assert plan["second_event"] == {k: batch["second_event"][k]
                                    for k in ("announced", "start", "end")}
    assert plan["utility_noncompliance_time"] == batch["prediction"][
        "utility_noncompliance_time"]
    ran = pq.read_table(out / "events_group_events.parquet").to_pandas()
    assert len(ran) and set(ran["pass"]) <= {"expected", "traditional"}


def test_the_clock_plays_the_intervals_in_order():
    plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    edges = intervals(plan)
    assert edges[0] == plan.t_start and edges[-1] == plan.t_end
    assert np.all(np.diff(edges) <= plan.delta)
    assert set(plan.test_times) <= set(edges.tolist())


def test_a_file_staged_during_a_tick_never_overtakes_an_earlier_one(tmp_path, monkeypatch):
    """The adaptive pass renames a chunk's interval files in time order while the clock
    lists the released intervals' folders; a file of a later interval must not be released
    before the earlier one's (it would arrive behind its gateway's watermark: late)."""
    plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    staging, source = tmp_path / "staging", tmp_path / "source"
    source.mkdir()
    hidden = []
    for j in range(3):  # the writer's files, written and not yet renamed
        folder = staging / f"{j:04d}"
        folder.mkdir(parents=True)
        (folder / ".adaptive-00000.parquet").write_bytes(b"x")
        hidden.append(folder / ".adaptive-00000.parquet")
    real_glob = Path.glob

    def write(files):  # the writer's renames, in time order
        for h in files:
            if h.exists():
                os.replace(h, h.with_name("adaptive-00000.parquet"))

    def glob_while_writing(self, pattern):  # the writer renames intervals 0 and 1 as soon
        if self.name != "0000":  # as the clock lists another folder than the first
            write(hidden[:2])
        return real_glob(self, pattern)

    monkeypatch.setattr(Path, "glob", glob_while_writing)
    clock = Clock(plan, 1050, float("inf"), staging, source)
    clock.released.update({j: 0.0 for j in range(len(intervals(plan)) - 1)})
    clock.tick()
    released = sorted(p.name for p in source.iterdir())
    intervals_out = [int(name[:4]) for name in released]
    assert intervals_out == list(range(len(intervals_out)))  # no gap before a released one
    monkeypatch.setattr(Path, "glob", real_glob)
    write(hidden)
    clock.tick()
    assert sorted(p.name for p in source.iterdir()) == [f"{j:04d}-adaptive-00000.parquet"
                                                        for j in range(3)]


def test_a_streamed_run_refuses_what_it_does_not_monitor(tmp_path):
    data = small().model_dump(mode="json", exclude={"source_path"})
    data["monitoring"]["appliance_queries"] = {"paused": {
        "query": "PATTERN SEQ(dr_start s, ev_pause p) WHERE SAME[houseID] WITHIN 3h"}}
    with pytest.raises(ValueError, match="monitoring.appliance_queries: the streaming") \
            as refused:
        api.run(scenario_from_dict(data), tmp_path / "x", backend="serial", streaming=True)
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match="give out"):
        api.run(small(), backend="serial", streaming=True)


#: a loss model with bursts and meters that go dark (docs/lost_readings.md)
LOSS = {"rate": 0.1, "burst_length": 2.0, "dark": {"share": 0.05, "start": "19:30"}}
EVENT_TABLES = ("user_events", "group_alerts", "group_events", "utility_alerts")


def lossy(max_missing: int):
    """The small scenario with lost readings, matched exactly (0) or approximately."""
    data = small(max_missing=max_missing).model_dump(mode="json", exclude={"source_path"})
    data["meters"] = {"reading_loss": LOSS}
    return scenario_from_dict(data)


def assert_same_events(batch_dir: Path, streamed_dir: Path) -> None:
    for name in EVENT_TABLES:
        a = pq.read_table(batch_dir / f"events_{name}.parquet").to_pandas()
        b = pq.read_table(streamed_dir / f"events_{name}.parquet").to_pandas()
        keys = list(a.columns[1:3])
        pd.testing.assert_frame_equal(a.sort_values(keys, ignore_index=True),
                                      b[a.columns].sort_values(keys, ignore_index=True),
                                      check_dtype=False)


@pytest.mark.parametrize(("max_missing", "chunk_size"), [(0, 50), (1, None)])
def test_a_streamed_run_with_lost_readings_gives_the_batch_run(max_missing, chunk_size,
                                                               tmp_path):
    """The stream loses the batch run's readings (the same draws, whatever the chunks:
    gateways of 50 households against the batch run's 100): Listing 6.1 has the same
    lost test readings, and the summary (readings lost, silent meters, the deficit read
    from the households seen, the costs, the second event) and the event tables are the
    batch run's."""
    scenario = lossy(max_missing)
    batch = api.run(scenario, tmp_path / "b", backend="serial").summary
    lost = batch["monitoring"]["lost_readings"]
    assert batch["prediction"]["predicted"] and lost["test_readings_lost"] > 0
    assert batch["monitoring"]["meters_silent"]["total"] > 0
    assert batch["deficit_at_prediction"]["households_seen"]
    assert (lost["user_events_by_missing"].get("1", 0) > 0) == (max_missing == 1)
    result = api.run(scenario, tmp_path / "s", backend="serial", streaming=True,
                     chunk_size=chunk_size)
    assert_same_summary(batch, result.summary)
    assert_same_events(tmp_path / "b", tmp_path / "s")


#: scenarios/quickstart_op.yaml's remote profiles with a fixed latency long enough, and a
#: cache small enough, that some user events wait for their λ (their delay moves alerts)
REMOTE = {"strategy": "Hybrid", "latency": {"kind": "fixed", "seconds": 20.0},
          "cache_elements": 50}


def optimised(households: int = 600, tiers: list[str] | None = None,
              remote: dict | None = REMOTE) -> Scenario:
    """The small quickstart_op: load shedding in ``tiers`` (None: every tier, the
    scenario's) and the profiles fetched as ``remote`` says (None: local)."""
    shedding = {} if tiers is None else {"tiers": tiers}
    data = quickstart(households, remote=remote, shedding=shedding)
    data["chunk_size"] = 100
    data["monitoring"]["gamma_user"] = GAMMA
    return scenario_from_dict(data)


def assert_streamed_op_run(scenario: Scenario, tmp_path: Path) -> dict:
    """The streamed run of an optimised scenario gives the batch run's summary (the
    outcomes, costs, ``shedding``, ``remote``, ``op_vs_bl``) and event tables; the stream
    itself runs OP alone, the plain twins (BL) coming from the day run made before it;
    the batch summary."""
    batch = api.run(scenario, tmp_path / "b", backend="serial").summary
    assert batch["prediction"]["predicted"] and batch["op_vs_bl"]["bl"]["prediction"]
    # at a speed the second event is planned at t_nc, before the gateways' programs end
    streamed = api.run(scenario, tmp_path / "s", backend="serial", streaming=True,
                       speed=3000).summary
    assert_same_summary(batch, streamed)
    assert_same_events(tmp_path / "b", tmp_path / "s")
    assert streamed["timings"]["day_sizes_seconds"] > 0
    rows = pq.read_table(tmp_path / "s" / "stream" / "alerts").to_pandas()
    ran = set(rows.loc[rows["kind"].isin(("user", "meter", "event", "device")), "pass"])
    assert ran == {"expected", "traditional"}
    return batch


def test_a_streamed_optimised_run_gives_the_batch_run(tmp_path):
    """quickstart_op (load shedding in every tier, the profiles fetched with Hybrid's
    prefetch) streamed: each tier sheds, some readings wait for their λ, and the
    stream's OP and BL are the batch run's, value for value; so are their costs and
    op_vs_bl."""
    batch = assert_streamed_op_run(optimised(), tmp_path)
    op = batch["shedding"]["op"]
    assert op["meter_tier"]["readings_shed"] > 0 and op["group_tier"]["user_events_shed"] > 0
    assert op["utility_tier"]["group_events_shed"] > 0
    fetched = batch["remote"]["meter_tier"]
    assert fetched["prefetches"] > 0 and fetched["misses"] > 0
    assert fetched["data_delay_avg_seconds"] > 0
    events = pq.read_table(tmp_path / "s" / "events_user_events.parquet").to_pandas()
    assert set(events["pass"]) == {"expected", "expected_bl", "traditional", "traditional_bl"}


@pytest.mark.slow
@pytest.mark.parametrize(("tiers", "remote"), [
    (["group"], None), (["utility"], None),
    (None, {**REMOTE, "strategy": "LzEval"})])  # every λ waited for: alerts held back
def test_a_streamed_run_shedding_in_one_tier_gives_the_batch_run(tiers, remote, tmp_path):
    """Each tier's shedding alone, without remote profiles; every tier's with fetches on
    demand, whose delays hold the user events' alerts back: the stream's is the batch's."""
    batch = assert_streamed_op_run(optimised(tiers=tiers, remote=remote), tmp_path)
    assert all(batch["shedding"]["op"][f"{t}_tier"]["shed"] for t in tiers or ())
    if remote is not None:
        events = pq.read_table(tmp_path / "s" / "events_user_events.parquet").to_pandas()
        assert (events.loc[events["pass"] == "traditional", "delay"] > 0).all()


def test_the_monitored_stream_refuses_shedding_without_its_prepared_values():
    """drsim monitor --stream: load shedding needs the caller's cost models and the
    devices' sizes of the whole day; without either, one line naming the key."""
    from drsim.pipeline.stream_features import check_monitor_stream

    scenario = optimised(remote=None)
    for given in (None, {"shedding": ("cost models",)}):
        with pytest.raises(ValueError, match="^monitoring.shedding: ") as refused:
            check_monitor_stream(scenario, given)
        assert "\n" not in str(refused.value)
    plan = check_monitor_stream(scenario, {"shedding": ("cost models", "sizes")})
    assert plan == MonitoringPlan.of(scenario)


def test_monitoring_a_stream_of_readings_with_remote_profiles(tmp_path):
    """Recorded readings monitored with the profiles fetched: the streamed monitoring's
    fetches, delays and events are the batch monitoring's."""
    data = quickstart(300, remote=REMOTE)
    data["chunk_size"] = 100
    scenario = scenario_from_dict(data)
    run_dir = tmp_path / "run"
    api.run(scenario, run_dir, backend="serial", export_readings=True)
    readings = pq.read_table(run_dir / "readings").to_pandas()
    write_files(readings, tmp_path / "in", MonitoringPlan.of(scenario))
    gamma = run_dir / "thresholds.parquet"
    batch = api.monitor(run_dir / "readings", scenario, tmp_path / "b", backend="serial",
                        thresholds=gamma).summary
    streamed = api.monitor(None, scenario, tmp_path / "s", backend="serial",
                           stream=tmp_path / "in", thresholds=gamma).summary
    assert batch["remote"]["meter_tier"]["requests"] > 0
    for key in ("prediction", "second_event", "cost", "remote"):
        assert streamed[key] == batch[key], key
    assert_same_events(tmp_path / "b", tmp_path / "s")


def test_the_staged_readings_lose_the_batch_runs_readings(tmp_path):
    """A streamed run's chunk task stages each monitored pass without the readings the
    loss model loses (readings_lost: the batch run's draws) and with the meters'
    registers, a test's accLoad as the batch meter tier has it."""
    from drsim.household.population import Population
    from drsim.pipeline.passes import plan_chunks
    from drsim.pipeline.stream_clock import file_rows, width
    from drsim.pipeline.tasks import stream_task
    from drsim.utility.feature_registry import active_features
    from drsim.utility.features import FeatureChunk

    scenario = lossy(1)
    plan = MonitoringPlan.of(scenario)
    chunks = tuple(plan_chunks(scenario, None))
    out = stream_task(scenario, chunks, plan, str(tmp_path), 1)
    assert out["feature_lost_readings"].num_rows == 2  # a row per monitored pass
    chunk = chunks[1]
    ids = Population(scenario, chunk.first, chunk.count).ids
    lost = next(f.readings_lost(FeatureChunk(plan, chunk.index, chunk.group, ids))
                for f in active_features(scenario) if f.name == "lost_readings")
    rows = pa.concat_tables([pq.read_table(f, schema=file_rows(width(plan)))
                             for f in sorted(tmp_path.glob("*/passes-00001.parquet"))])
    rows = rows.to_pandas()
    staged = np.zeros_like(lost)
    for j in range(width(plan)):
        minute = rows["time"].to_numpy() + j
        inside = minute < plan.t_end
        mine = rows[f"traditional_kw_{j}"].isna().to_numpy() & inside
        staged[rows["household"].to_numpy()[mine] - chunk.first,
               minute[mine] - plan.t_start] = True
    assert lost.any() and (staged == lost).all()
    at = (rows["time"] - plan.t_start).to_numpy()
    register = rows["traditional_kwh"].to_numpy()
    assert (np.isnan(register) == lost[rows["household"] - chunk.first, at]).all()


@pytest.mark.parametrize("registers", [True, False])
def test_monitoring_a_stream_of_readings_with_gaps(registers, tmp_path):
    """Readings that lack some (a lossy run's, exported; with the meters' registers or
    without, accLoad then accumulated from the loads carried over the gaps) dropped as
    files: the missing readings are lost readings, as the batch monitoring has them: the
    same events and the same lost-readings keys, deficit, costs and plan."""
    scenario = lossy(1)
    run_dir = tmp_path / "run"
    api.run(scenario, run_dir, backend="serial", export_readings=True)
    table = pq.read_table(run_dir / "readings")
    if not registers:
        table = table.drop_columns(["energy_kwh"])
    pq.write_table(table, tmp_path / "readings.parquet")
    readings = table.to_pandas()
    assert readings["kw"].isna().any()
    write_files(readings, tmp_path / "in", MonitoringPlan.of(scenario))
    gamma = run_dir / "thresholds.parquet"
    batch = api.monitor(tmp_path / "readings.parquet", scenario, tmp_path / "b",
                        backend="serial", thresholds=gamma).summary
    streamed = api.monitor(None, scenario, tmp_path / "s", backend="serial",
                           stream=tmp_path / "in", thresholds=gamma).summary
    assert batch["monitoring"]["lost_readings"]["readings_lost"] > 0
    assert streamed["readings"]["lost_readings"] == batch["readings"]["lost_readings"] > 0
    for key in ("prediction", "deficit_at_prediction", "second_event", "incentive", "cost",
                "monitoring"):
        assert streamed[key] == batch[key], key
    assert_same_events(tmp_path / "b", tmp_path / "s")


def write_files(readings: pd.DataFrame, folder, plan) -> list:
    """The readings as one file per interval (what a head-end would drop)."""
    folder.mkdir(parents=True, exist_ok=True)
    edges = intervals(plan)
    names = []
    for j in range(len(edges) - 1):
        part = readings[(readings["time"] >= edges[j]) & (readings["time"] < edges[j + 1])]
        path = folder / f"{j:04d}.parquet"
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), path)
        names.append(path)
    return names


def test_monitoring_a_stream_of_recorded_readings(scenario, tmp_path):
    """Exported readings dropped as files, with a file of bad rows and a file of rows
    that come too late: the same events as the batch monitoring, bad and late rows
    counted."""
    run_dir = tmp_path / "run"
    api.run(scenario, run_dir, backend="serial", export_readings=True)
    readings = pq.read_table(run_dir / "readings").to_pandas()
    plan = MonitoringPlan.of(scenario)
    source = tmp_path / "in"
    write_files(readings, source, plan)
    bad = readings.iloc[:3].assign(kw=-1.0, time=plan.t_start + 50)
    pq.write_table(pa.Table.from_pandas(bad, preserve_index=False), source / "0010-bad.parquet")
    batch = api.monitor(run_dir / "readings", scenario, tmp_path / "b", backend="serial")
    streamed = api.monitor(None, scenario, tmp_path / "s", backend="serial", stream=source,
                           thresholds=run_dir / "thresholds.parquet")
    for name in ("user_events", "group_alerts", "group_events", "utility_alerts"):
        a = pq.read_table(tmp_path / "b" / f"events_{name}.parquet").to_pandas()
        b = pq.read_table(tmp_path / "s" / f"events_{name}.parquet").to_pandas()
        keys = list(a.columns[1:3])
        pd.testing.assert_frame_equal(a.sort_values(keys, ignore_index=True),
                                      b[a.columns].sort_values(keys, ignore_index=True),
                                      check_dtype=False)
    for key in ("prediction", "deficit_at_prediction", "second_event", "cost"):
        want = batch.summary[key]
        got = streamed.summary[key]
        if key == "prediction":
            want = {k: v for k, v in want.items() if k != "thresholds_from"}
            got = {k: v for k, v in got.items() if k != "thresholds_from"}
        assert got == want, key
    assert streamed.summary["readings"]["bad_rows_dropped"] == {
        "kw: negative or not finite": 3}
    assert streamed.summary["readings"]["late_rows"] == 0


def test_late_readings_are_counted_and_left_out(scenario, tmp_path):
    """A file that repeats readings the stream has taken as final: its rows are late."""
    from drsim.pipeline.backend import SerialBackend
    from drsim.pipeline.streaming import monitor_stream
    from drsim.utility.threshold import Thresholds

    run_dir = tmp_path / "run"
    api.run(scenario, run_dir, backend="serial", export_readings=True)
    readings = pq.read_table(run_dir / "readings").to_pandas()
    plan = MonitoringPlan.of(scenario)
    source = tmp_path / "in"
    files = write_files(readings, source, plan)
    late = tmp_path / "late.parquet"
    early = readings[readings["time"] == plan.t_start + 1]
    pq.write_table(pa.Table.from_pandas(early, preserve_index=False), late)
    backend = SerialBackend()
    sizes = np.asarray(scenario.group_sizes())
    gamma = Thresholds(plan.test_times, np.full((len(sizes), len(plan.test_times)), 0.1))
    hidden = [f.rename(f.with_name("." + f.name)) for f in files[1:]]  # held back
    started = []

    def view(status):  # after the first batch: the late file, then the rest
        if not started:
            started.append(1)
            shutil.copy(late, source / "0000-late.parquet")
        elif len(started) == 1:
            started.append(1)
            for f in hidden:
                f.rename(f.with_name(f.name[1:]))

    run, report = monitor_stream(scenario, source, backend, tmp_path / "stream",
                                 thresholds=gamma, view=view)
    assert report.late_rows == len(early)
    assert run.monitored.outcome["traditional"] is not None


def test_spark_streams_the_run_as_batch(scenario, batch, tmp_path, spark):
    """On Spark Structured Streaming (transformWithStateInPandas, RocksDB state)."""
    result = api.run(scenario, tmp_path / "s", backend="spark", streaming=True)
    assert_same_summary(batch, result.summary)
    assert (tmp_path / "s" / "stream" / "checkpoint" / "commits").is_dir()


@pytest.mark.slow
def test_spark_streams_a_run_with_lost_readings_as_batch(tmp_path, spark):
    """Lost readings on Spark Structured Streaming: the staged readings with gaps and
    registers, and the feature's rows of the meter stage, travel as the stream's rows
    (the session of the module's other Spark test; about 75 s on 2 cores)."""
    scenario = lossy(1)
    batch = api.run(scenario, backend="serial").summary
    result = api.run(scenario, tmp_path / "s", backend="spark", streaming=True)
    assert_same_summary(batch, result.summary)


@pytest.mark.slow
@pytest.mark.spark
def test_a_killed_stream_restarts_on_its_checkpoint(scenario, batch, tmp_path):
    """``drsim run --streaming`` killed mid-stream and started again with the same
    command ends with the batch run's events, none lost and none twice."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario.model_dump(mode="json", exclude={"source_path"})))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "drsim", "run", str(path), "--out", str(out),
               "--streaming", "--speed", "100"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=env, start_new_session=True)
    alerts = out / "stream" / "alerts"
    deadline = time.time() + 300
    while time.time() < deadline and len(list(alerts.glob("batch-*.parquet"))) < 8:
        time.sleep(0.5)
    assert first.poll() is None, "the first run ended before it could be killed"
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert not (out / "summary.json").exists()
    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert second.returncode == 0, second.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scenario"].pop("file") == "s.yaml"  # (the batch run's had no file)
    assert_same_summary(batch, {**summary, "scenario": {**summary["scenario"], "file": None}})
    events = pq.read_table(out / "events_user_events.parquet").to_pandas()
    assert not events.duplicated(["pass", "time", "houseID"]).any()


def test_the_command_line_refuses_what_does_not_go_together(tmp_path):
    from typer.testing import CliRunner

    from drsim.cli import app

    speed = CliRunner().invoke(app, ["run", QUICKSTART, "--speed", "60", "--out",
                                     str(tmp_path / "a")])
    assert speed.exit_code == 2 and "--streaming" in speed.output
    both = CliRunner().invoke(app, ["monitor", "--scenario", QUICKSTART, "--out",
                                    str(tmp_path / "b")])
    assert both.exit_code == 2 and "--stream" in both.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_the_live_view_is_drawn_as_fast_as_it_goes(scenario, batch, tmp_path):
    """The live view's status after every poll, with no speed (the clock as fast as it
    goes): the simulated clock is the last interval released."""
    seen = []
    result = api.run(scenario, tmp_path / "s", backend="serial", streaming=True,
                     view=seen.append)
    assert seen and seen[-1].released == seen[-1].intervals
    assert seen[-1].now == "20:30"
    last = seen[-1].passes["traditional"]
    assert last["t_nc"] is not None and last["decided"] == 20 * 60 + 29
    assert result.summary["prediction"] == batch["prediction"]


# --------------------------------------------------------------------------- resuming
class Stop(Exception):
    """Stops a streamed run from its live view, as Ctrl-C does."""


def stopped_stream(scenario, out: Path, **options) -> None:
    """A streamed run on the serial backend stopped once 12 of its 24 intervals are out,
    its live folder left as a killed run leaves it."""
    def view(status):
        if status.released >= 12:
            raise Stop

    with pytest.raises(Stop):
        api.run(scenario, out, backend="serial", streaming=True, speed=3000, view=view,
                **options)
    assert folders.stream_in_progress(out) and not (out / "summary.json").exists()
    assert list((out / "stream" / "alerts").glob("batch-*.parquet"))


def files_of(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


def edited(scenario, drop: float = 0.7):
    """``scenario`` with its first group's follow_through_drop set to ``drop``."""
    data = scenario.model_dump(mode="json", exclude={"source_path"})
    data["groups"][0]["follow_through_drop"] = drop
    return scenario_from_dict(data)


def test_a_stopped_stream_resumes_to_the_clean_run(scenario, batch, tmp_path):
    """Stopped and started again with the same inputs (at another speed: not part of the
    run), the serial stream goes on from its checkpoint: the clean run's summary."""
    out = tmp_path / "s"
    stopped_stream(scenario, out)
    assert (out / "stream" / "checkpoint" / "serial-stream.parquet").is_file()
    result = api.run(scenario, out, backend="serial", streaming=True)
    assert_same_summary(batch, result.summary)
    events = pq.read_table(out / "events_user_events.parquet").to_pandas()
    assert not events.duplicated(["pass", "time", "houseID"]).any()


@pytest.mark.slow
def test_a_stopped_optimised_stream_resumes_to_the_batch_run(tmp_path):
    """OP streamed alone, stopped and started again: the resumed run makes the day run
    again, takes BL's twins from it, and gives the batch run's summary (about
    15 s of CPU)."""
    scenario = optimised(300, remote=None)
    batch = api.run(scenario, backend="serial").summary
    assert batch["op_vs_bl"]["bl"]["prediction"]
    out = tmp_path / "s"
    stopped_stream(scenario, out)
    result = api.run(scenario, out, backend="serial", streaming=True)
    assert_same_summary(batch, result.summary)
    events = pq.read_table(out / "events_user_events.parquet").to_pandas()
    assert {"traditional", "traditional_bl"} <= set(events["pass"])
    assert not events.duplicated(["pass", "time", "houseID"]).any()


def test_a_stopped_stream_of_other_inputs_is_refused_untouched(scenario, batch, tmp_path):
    """The issue's case: the scenario edited (or another --households, --chunk-size,
    --delay-detection, backend) after the stream was stopped: refused in one line naming
    what changed, before any work, the folder as it was; with --overwrite the edited
    scenario's clean run."""
    from typer.testing import CliRunner

    from drsim.cli import app
    from drsim.results.summary import scenario_hash

    out = tmp_path / "s"
    stopped_stream(scenario, out)
    before = files_of(out)
    changed = edited(scenario)
    assert scenario.groups[0].follow_through_drop == 0.1
    cases = [(changed, {}, r"groups\[0\]\.follow_through_drop 0\.1 then, 0\.7 now; "
                           r"scenario hash \w{12}… then, \w{12}… now"),
             (scenario.with_households(300), {}, "households 400 then, 300 now"),
             (scenario, {"chunk_size": 50}, "chunk size 100 then, 50 now"),
             (scenario, {"delay_detection": 10}, "delay detection 0 then, 10 now"),
             (scenario, {"backend": "spark"}, "backend serial then, spark now")]
    for other, options, what in cases:  # (no Spark starts: the conftest would fail it)
        with pytest.raises(folders.StreamChangedError, match=what) as refused:
            api.run(other, out, **{"backend": "serial", **options}, streaming=True)
        assert "\n" not in str(refused.value) and "--overwrite" in str(refused.value)
        assert files_of(out) == before
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(changed.model_dump(mode="json", exclude={"source_path"})))
    cli = CliRunner().invoke(app, ["run", str(path), "--streaming", "--backend", "serial",
                                   "--out", str(out)])
    assert cli.exit_code == 2 and "follow_through_drop 0.1 then, 0.7 now" in cli.output
    assert len(cli.output.strip().splitlines()) == 1 and files_of(out) == before
    (out / "stream" / ".drsim-stream").write_text("")  # an older drsim's mark: no identity
    with pytest.raises(folders.StreamChangedError, match="older drsim"):
        api.run(scenario, out, backend="serial", streaming=True)

    result = api.run(changed, out, backend="serial", streaming=True, overwrite=True)
    clean = api.run(changed, backend="serial").summary
    assert_same_summary(clean, result.summary)
    assert result.summary["scenario"]["hash"] == scenario_hash(changed) != \
        batch["scenario"]["hash"]
    assert result.summary["reduction_mwh"] != batch["reduction_mwh"]  # another run indeed


def test_overwrite_leaves_a_stream_with_files_not_drsims(scenario, tmp_path):
    out = tmp_path / "s"
    (out / "stream").mkdir(parents=True)
    folders.mark_stream(out / "stream", {"command": "x"})
    (out / "stream" / "notes.txt").write_text("mine")
    with pytest.raises(folders.OutputRefusedError, match="notes.txt"):
        api.run(scenario, out, backend="serial", streaming=True, overwrite=True)
    assert (out / "stream" / "notes.txt").read_text() == "mine"


def test_a_stream_that_never_decides_the_program_fails(scenario, tmp_path, monkeypatch):
    """A stream that has taken every file of the run and still has not decided the
    program's last minute fails in one line, instead of waiting for ever."""
    from drsim.pipeline import streaming
    from drsim.pipeline.backend import StreamStage

    real = streaming.stages

    def undecided(context):  # the utility never says it decided a minute
        *first, last = real(context)

        def step(key, state, rows):
            state, out = last.step(key, state, rows)
            return state, out[out["kind"] != "decided"]

        return [*first, StreamStage(last.keys, step, last.schema)]

    monkeypatch.setattr(streaming, "stages", undecided)
    started = time.perf_counter()
    with pytest.raises(streaming.StreamEndedError,
                       match="no minute of the traditional pass") as ended:
        api.run(scenario, tmp_path / "s", backend="serial", streaming=True)
    assert "\n" not in str(ended.value) and time.perf_counter() - started < 60
    assert not (tmp_path / "s" / "summary.json").exists()


def constant_gamma(tmp_path: Path) -> Path:
    """The small scenario with a constant γ_user, as a file (monitor needs no thresholds)."""
    data = small().model_dump(mode="json", exclude={"source_path"})
    data["monitoring"]["gamma_user"] = 0.05
    path = tmp_path / "constant.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_monitoring_an_empty_or_wrong_stream_fails_in_one_line(tmp_path):
    """drsim monitor --stream: a folder where no file arrives in the first-file bound
    (--idle-seconds when given) is refused in one line (exit 2) before any work, not a
    TypeError or a wait for ever; files that are not readings are refused before any work;
    a stopped monitoring resumes only on the same stream folder."""
    from typer.testing import CliRunner

    from drsim.cli import app

    path = constant_gamma(tmp_path)
    empty, out = tmp_path / "empty", tmp_path / "m"
    empty.mkdir()
    command = ["monitor", "--scenario", str(path), "--backend", "serial", "--out", str(out),
               "--idle-seconds", "1"]
    started = time.perf_counter()
    idle = CliRunner().invoke(app, [*command, "--stream", str(empty)])
    assert idle.exit_code == 2, idle.output
    assert idle.output.strip() == (f"--stream {empty}: no file of readings arrived in 1 s; "
                                   "is it the folder the readings' Parquet files land in? "
                                   "(--idle-seconds sets the wait)")
    assert time.perf_counter() - started < 30 and not out.exists()

    first, other = tmp_path / "first", tmp_path / "other"
    for folder in (first, other):
        folder.mkdir()
        pq.write_table(bad_rows(load_scenario(path)), folder / "0000.parquet")
    stopped = CliRunner().invoke(app, [*command, "--stream", str(first)])
    assert stopped.exit_code == 2 and folders.stream_in_progress(out), stopped.output
    moved = CliRunner().invoke(app, [*command, "--stream", str(other)])
    assert moved.exit_code == 2 and "stream " in moved.output and "then," in moved.output
    assert len(moved.output.strip().splitlines()) == 1

    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "0000.parquet").write_text("not parquet")
    for name, what in [("0000.parquet", "0000.parquet is not a Parquet file of readings"),
                       ("notes.txt", "notes.txt is not a Parquet file")]:
        shutil.rmtree(wrong)
        wrong.mkdir()
        (wrong / name).write_text("not parquet")
        refused = CliRunner().invoke(app, [*command[:-2], "--stream", str(wrong), "--out",
                                           str(tmp_path / "w")])
        assert refused.exit_code == 2 and what in refused.output, refused.output
        assert len(refused.output.strip().splitlines()) == 1
        assert not (tmp_path / "w").exists()
    shutil.rmtree(wrong)
    wrong.mkdir()
    pq.write_table(pa.table({"household": [1], "time": [1110]}), wrong / "0000.parquet")
    refused = CliRunner().invoke(app, [*command[:-2], "--stream", str(wrong), "--out",
                                       str(tmp_path / "w")])
    assert refused.exit_code == 2 and f"--stream {wrong}: 0000.parquet: column 'group' is " \
        "missing (needed: household, group, time, kw" in refused.output
    assert not (tmp_path / "w").exists()


def bad_rows(scenario) -> pa.Table:
    """A program's minutes of readings of a household the scenario does not have."""
    plan = MonitoringPlan.of(scenario)
    minutes = np.arange(plan.t_start, plan.t_end)
    return pa.table({"household": np.full(len(minutes), 10**6), "group": np.zeros(
        len(minutes), np.int32), "time": minutes, "kw": np.ones(len(minutes)),
        "baseline_kw": np.ones(len(minutes)), "expected_kw": np.ones(len(minutes))})


def test_a_monitored_stream_of_only_bad_rows_fails_after_its_idle_bound(tmp_path):
    """Files keep the stream busy but every row is bad (households the scenario does not
    have, as after another --households): no progress, so the idle bound ends it."""
    from drsim.pipeline.streaming import StreamIdleError

    scenario = load_scenario(constant_gamma(tmp_path))
    source = tmp_path / "in"
    source.mkdir()
    rows = bad_rows(scenario)
    pq.write_table(rows, source / "0000.parquet")
    with pytest.raises(StreamIdleError, match=f"no reading the tiers could take arrived in "
                       f"1 s.*{len(rows):,} bad rows \\(household: not a household"):
        api.monitor(None, scenario, tmp_path / "m", backend="serial", stream=source,
                    idle_seconds=1)
