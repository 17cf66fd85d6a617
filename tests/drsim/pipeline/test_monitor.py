"""``drsim run --export-readings`` and ``drsim monitor`` (drsim.pipeline.recorded,
drsim.pipeline.monitor): the monitoring of exported readings gives the run's events,
prediction and second-event plan; bad readings give one line naming the file and the
column, or are counted and dropped with ``lenient``; missing rows are lost readings."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import drsim.api as api
from drsim.pipeline.recorded import ReadingsError
from drsim.results.output import ThresholdsError
from drsim.scenario import load_scenario, scenario_from_dict
from drsim.utility.monitoring import MonitoringPlan
from drsim.utility.readings import lost_readings

QUICKSTART = "scenarios/quickstart.yaml"
TABLES = ("user_events", "group_alerts", "group_events", "utility_alerts")


def small(households: int = 400, meters: dict | None = None, **monitoring):
    s = load_scenario(QUICKSTART).with_households(households)
    data = s.model_dump(mode="json", exclude={"source_path"})
    data["chunk_size"] = 100
    data["monitoring"].update(monitoring)
    if meters is not None:
        data["meters"] = meters
    return scenario_from_dict(data)


def events(folder, name: str, traditional_only: bool = True) -> pd.DataFrame:
    frame = pq.read_table(folder / f"events_{name}.parquet").to_pandas()
    if traditional_only:
        frame = frame[frame["pass"] == "traditional"]
    return frame.sort_values(list(frame.columns[1:3]), kind="stable", ignore_index=True)


def assert_same_monitoring(run_dir, monitor_dir) -> None:
    """The events of the traditional pass, t_nc, latches, what the utility knew, costs and
    the second event's plan of a run equal those of ``drsim monitor`` on its readings."""
    for name in TABLES:
        ran, monitored = events(run_dir, name), events(monitor_dir, name, False)
        pd.testing.assert_frame_equal(ran[monitored.columns], monitored, check_dtype=False)
    a = json.loads((run_dir / "summary.json").read_text())
    b = json.loads((monitor_dir / "summary.json").read_text())
    for key in ("utility_noncompliance_time", "group_noncompliance_times",
                "groups_compliant_at_prediction", "detection_delay_minutes"):
        assert a["prediction"][key] == b["prediction"][key], key
    for key in ("deficit_at_prediction", "second_event", "second_event_note", "cost"):
        assert a[key] == b[key], key
    planned = {k: v for k, v in b["incentive"].items() if v is not None}
    assert planned and {k: a["incentive"][k] for k in planned} == planned


@pytest.fixture(scope="module")
def forced(tmp_path_factory):
    """A run (γ from the expected response, z = 1) that predicts, with its readings
    exported."""
    s = small(400, gamma_user={"method": "expected", "z": 1.0, "replicas": 4})
    out = tmp_path_factory.mktemp("run") / "run"
    summary = api.run(s, out, backend="serial", export_readings=True).summary
    return s, out, summary


def test_the_readings_are_every_household_and_minute_of_the_program(forced):
    s, out, summary = forced
    plan = MonitoringPlan.of(s)
    assert "readings" in summary["files"]
    frame = pq.read_table(out / "readings").to_pandas()
    minutes = plan.t_end - plan.t_start
    assert len(frame) == s.households * minutes
    assert list(frame.columns) == ["household", "group", "time", "kw", "energy_kwh",
                                   "baseline_kw", "expected_kw"]
    assert frame[["household", "time"]].equals(
        frame[["household", "time"]].sort_values(["household", "time"], ignore_index=True))
    assert frame["time"].min() == plan.t_start and frame["time"].max() == plan.t_end - 1
    # the register is the energy of the minutes before, accLoad of Table 6.1
    one = frame[frame["household"] == 7]
    assert one["energy_kwh"].iloc[0] == 0.0
    assert np.allclose(one["energy_kwh"].to_numpy()[1:], np.cumsum(one["kw"])[:-1] / 60.0)
    # B̂ and P̂ summed over the households are the run's estimates
    curves = pq.read_table(out / "load_curves.parquet").to_pandas()
    trad = curves[curves["pass"] == "traditional"].groupby("minute")["kw"].sum()
    by_minute = frame.groupby("time")["kw"].sum()
    assert np.allclose(by_minute.to_numpy(), trad.loc[by_minute.index].to_numpy())
    assert not any("readings" in f for f in summary["files"] if f != "readings")


def test_monitoring_the_exported_readings_gives_the_run(forced, tmp_path):
    s, out, summary = forced
    assert summary["prediction"]["predicted"], "the test needs a prediction"
    result = api.monitor(out / "readings", s, tmp_path / "m", backend="serial")
    assert result.summary["prediction"]["thresholds_from"] == "the run folder of the readings"
    assert result.summary["readings"]["rows"] == s.households * 120
    assert result.summary["readings"]["lost_readings"] == 0
    assert_same_monitoring(out, tmp_path / "m")
    files = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert files == sorted(result.summary["files"]) and "readings" not in files


def test_the_thresholds_decide(forced, tmp_path):
    """Without the run's thresholds γ is the scenario's: estimated γ cannot be made from
    readings, and a constant one gives another monitoring."""
    s, out, _ = forced
    alone = tmp_path / "readings"
    shutil.copytree(out / "readings", alone)
    with pytest.raises(ValueError, match="thresholds.parquet"):
        api.monitor(alone, s, backend="serial")
    result = api.monitor(alone, s, backend="serial", thresholds=out / "thresholds.parquet")
    assert result.summary["prediction"]["utility_noncompliance_time"] == \
        json.loads((out / "summary.json").read_text())["prediction"][
            "utility_noncompliance_time"]
    constant = small(400, gamma_user=0.9)
    lax = api.monitor(alone, constant, backend="serial")
    assert lax.summary["prediction"]["thresholds_from"] == "scenario (constant)"
    assert not lax.summary["prediction"]["predicted"]
    other = small(400, delta_minutes=10, gamma_user=s.monitoring.gamma_user)
    with pytest.raises(ThresholdsError, match="column 'time'"):
        api.monitor(alone, other, backend="serial", thresholds=out / "thresholds.parquet")


def rewrite(source, target, change) -> None:
    """The readings at ``source`` changed by ``change(frame)`` written to ``target``."""
    frame = pq.read_table(source).to_pandas()
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(change(frame), preserve_index=False), target)


def first_row(frame: pd.DataFrame, **values) -> pd.DataFrame:
    row = frame.iloc[[0]].copy()
    for k, v in values.items():
        row[k] = v
    return row


BAD = {
    "missing column": (lambda f: f.drop(columns="baseline_kw"), "column 'baseline_kw' is missing"),
    "wrong type": (lambda f: f.assign(time=f["time"].astype(str)), "expected an integer"),
    "unknown household": (lambda f: pd.concat([f, first_row(f, household=10**6)]),
                          "column 'household': not a household of the scenario"),
    "wrong group": (lambda f: pd.concat([f, first_row(f, group=2, time=0)]),
                    "column 'group': not the household's group"),
    "outside the day": (lambda f: pd.concat([f, first_row(f, time=1440)]),
                        "column 'time': outside the day"),
    "negative": (lambda f: pd.concat([f, first_row(f, kw=-1.0, time=1)]),
                 "column 'kw': negative or not finite"),
    "not finite": (lambda f: pd.concat([f, first_row(f, expected_kw=np.inf, time=2)]),
                   "column 'expected_kw': negative or not finite"),
    "duplicate": (lambda f: pd.concat([f, first_row(f, kw=5.0)]),
                  "columns household and time: 1 duplicate readings"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_readings_are_one_line_naming_the_file_and_the_column(forced, tmp_path, case):
    s, out, _ = forced
    change, message = BAD[case]
    path = tmp_path / "bad.parquet"
    rewrite(out / "readings", path, change)
    with pytest.raises(ReadingsError) as error:
        api.monitor(path, s, tmp_path / "m", backend="serial",
                    thresholds=out / "thresholds.parquet")
    text = str(error.value)
    assert "\n" not in text and str(path) in text and message in text
    assert not (tmp_path / "m").exists()


def test_lenient_drops_and_counts_the_bad_rows(forced, tmp_path):
    """Bad rows added to good readings: counted and dropped, the first of a duplicate
    kept; the monitoring is the run's."""
    s, out, _ = forced
    path = tmp_path / "bad.parquet"
    changes = [BAD[c][0] for c in ("unknown household", "wrong group", "outside the day",
                                   "negative", "not finite", "duplicate")]

    def spoil(frame):
        for change in changes:
            frame = change(frame)
        return frame

    rewrite(out / "readings", path, spoil)
    result = api.monitor(path, s, tmp_path / "m", backend="serial", lenient=True,
                         thresholds=out / "thresholds.parquet")
    bad = result.summary["readings"]["bad_rows_dropped"]
    assert sum(bad.values()) == 6 and all(v == 1 for v in bad.values())
    assert_same_monitoring(out, tmp_path / "m")


def test_missing_rows_are_lost_readings(forced, tmp_path):
    """Rows left out are lost readings, not errors: with max_missing 1 a lost test
    reading inside a run is a placeholder; the lost readings are counted."""
    s, out, _ = forced
    plan = MonitoringPlan.of(s)
    path = tmp_path / "gaps.parquet"
    gone = (plan.test_times[3], plan.test_times[6])

    def drop(frame):
        return frame[~(frame["time"].isin(gone) & (frame["household"] % 5 == 0))]

    rewrite(out / "readings", path, drop)
    lenient_k = small(400, max_missing=1, gamma_user=s.monitoring.gamma_user)
    result = api.monitor(path, lenient_k, tmp_path / "m", backend="serial",
                         thresholds=out / "thresholds.parquet")
    assert result.summary["readings"]["lost_readings"] == 2 * 80
    lost = result.summary["monitoring"]["lost_readings"]
    assert lost["test_readings_lost"] > 0
    assert result.summary["prediction"]["predicted"]


def test_a_run_with_lost_readings_is_monitored_again_exactly(tmp_path):
    """With meters.reading_loss the lost readings are rows without a load: the meters'
    registers carry the energy, so the user events and the prediction are the run's."""
    s = small(400, meters={"reading_loss": {"rate": 0.05}}, max_missing=1,
              gamma_user={"method": "expected", "z": 1.0, "replicas": 4})
    out = tmp_path / "run"
    summary = api.run(s, out, backend="serial", export_readings=True).summary
    frame = pq.read_table(out / "readings").to_pandas()
    plan = MonitoringPlan.of(s)
    minutes = np.arange(plan.t_start, plan.t_end)
    lost = lost_readings(s.meters.reading_loss, s.seed, np.arange(s.households), minutes)
    assert frame["kw"].isna().to_numpy().reshape(lost.shape).tolist() == lost.tolist()
    result = api.monitor(out / "readings", s, tmp_path / "m", backend="serial")
    for name in TABLES:
        ran, monitored = events(out, name), events(tmp_path / "m", name, False)
        pd.testing.assert_frame_equal(ran[monitored.columns], monitored, check_dtype=False)
    assert result.summary["prediction"]["utility_noncompliance_time"] == \
        summary["prediction"]["utility_noncompliance_time"]


def test_what_readings_cannot_feed_is_refused(forced):
    s, out, _ = forced
    data = s.model_dump(mode="json", exclude={"source_path"})
    data["monitoring"]["shedding"] = {"gateway_households": 100}
    with pytest.raises(ValueError, match="monitoring.shedding"):
        api.monitor(out / "readings", scenario_from_dict(data), backend="serial")


def test_the_command_line(forced, tmp_path):
    from typer.testing import CliRunner

    from drsim.cli import app

    s, out, _ = forced
    scenario = tmp_path / "s.yaml"
    import yaml

    scenario.write_text(yaml.safe_dump(s.model_dump(mode="json", exclude={"source_path"})))
    ok = CliRunner().invoke(app, ["monitor", str(out / "readings"), "--scenario",
                                  str(scenario), "--backend", "serial", "--out",
                                  str(tmp_path / "m")])
    assert ok.exit_code == 0, ok.output
    assert "monitoring of recorded readings" in ok.output
    bad = tmp_path / "bad.parquet"
    rewrite(out / "readings", bad, BAD["negative"][0])
    failed = CliRunner().invoke(app, ["monitor", str(bad), "--scenario", str(scenario),
                                      "--backend", "serial", "--out", str(tmp_path / "n")])
    assert failed.exit_code == 2
    assert "column 'kw': negative or not finite" in failed.output
    assert not (tmp_path / "n").exists()
