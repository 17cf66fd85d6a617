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
from drsim.household.appliances import load_catalogue
from drsim.pipeline.recorded import BACKWARDS, ReadingsError, household_ceiling_kw
from drsim.results.output import ThresholdsError
from drsim.scenario import load_scenario, scenario_from_dict
from drsim.scenario.monitoring_settings import QUERY_NAMES
from drsim.utility.monitoring import QUERIES, MonitoringPlan
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
    assert "cost_models.parquet" not in summary["files"]  # kept only when the run sheds
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


T0 = 18 * 60 + 30  # the program's start in scenarios/quickstart.yaml
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
    "kW times 10^12": (lambda f: f.assign(kw=f["kw"] * 1e12),
                       "column 'kw': above 59.0 kW, the household ceiling in 48,000 row(s) "
                       "(first: household 0 at 18:30, kw "),
    "B̂ above the ceiling": (lambda f: pd.concat([f, first_row(f, baseline_kw=1e3, time=3)]),
                            "column 'baseline_kw': above 59.0 kW, the household ceiling in 1 "
                            "row(s) (first: household 0 at 00:03, baseline_kw 1000.0)"),
    "P̂ above the ceiling": (lambda f: pd.concat([f, first_row(f, expected_kw=1e3, time=4)]),
                            "column 'expected_kw': above 59.0 kW, the household ceiling"),
    "register above the ceiling": (
        lambda f: pd.concat([f, first_row(f, energy_kwh=1e6, time=T0 + 10)]),
        "column 'energy_kwh': more than 59.0 kW for the minutes since 18:30"),
    "register going back": (
        lambda f: f.assign(energy_kwh=f["energy_kwh"].where(
            (f["household"] != 3) | (f["time"] != T0 + 30), 0.0)),
        "column 'energy_kwh': the register goes back in 1 row(s) (first: household 3 at "
        "19:00, below an earlier reading)"),
    "no household": (lambda f: f.assign(household=f["household"].astype("Int64").where(
        f.index != 5, pd.NA)), "column 'household': no value in 1 row(s)"),
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


def test_the_ceiling_is_every_ownable_appliance_at_its_peak_and_the_largest_charger():
    """docs/monitor.md: the sum over the catalogue's appliances a household can own of
    their highest phase power, plus the EV data's largest charger (7 kW); the paper
    scenario's simulated households stay far below it."""
    s = small(400)
    cat = load_catalogue()
    peaks = np.maximum(cat.phase_kw.max(axis=1), cat.standby_kw)
    assert household_ceiling_kw(s) == pytest.approx(peaks.sum() + 7.0)
    assert 59.0 <= household_ceiling_kw(s) < 59.1  # the messages below say 59.0 kW
    data = s.model_dump(mode="json", exclude={"source_path"})
    data["ev"]["penetration"] = 0.0
    data["appliances"]["electric_heating"]["storage_heaters"] = 0.0
    storage = peaks[cat.index("storage_heater")]
    assert household_ceiling_kw(scenario_from_dict(data)) == \
        pytest.approx(peaks.sum() - storage)


def test_the_readings_of_a_run_are_under_the_ceiling(forced):
    s, out, _ = forced
    frame = pq.read_table(out / "readings").to_pandas()
    assert frame[["kw", "baseline_kw", "expected_kw"]].max().max() < household_ceiling_kw(s) / 2


COVER_NONE = {
    "empty file": lambda f: f.iloc[:0],
    "rows outside the program": lambda f: f.assign(time=f["time"] - 300),
    "every reading lost": lambda f: f.assign(kw=np.nan, energy_kwh=np.nan),
}


@pytest.mark.parametrize("case", list(COVER_NONE))
@pytest.mark.parametrize("lenient", [False, True])
def test_readings_that_cover_none_of_the_program_are_refused(forced, tmp_path, case, lenient):
    s, out, _ = forced
    path = tmp_path / "none.parquet"
    rewrite(out / "readings", path, COVER_NONE[case])
    with pytest.raises(ReadingsError) as error:
        api.monitor(path, s, tmp_path / "m", backend="serial", lenient=lenient,
                    thresholds=out / "thresholds.parquet")
    text = str(error.value)
    assert "\n" not in text and str(path) in text, text
    assert "no reading of the program 18:30-20:30" in text and "nothing to monitor" in text
    assert not (tmp_path / "m").exists()


def test_households_without_any_reading_are_told(forced, tmp_path):
    """Half the households have no row: one warning line with the counts; their readings
    count as lost, and the summary says how many households had none."""
    s, out, _ = forced
    path = tmp_path / "half.parquet"
    rewrite(out / "readings", path, lambda f: f[f["household"] % 2 == 0])
    told: list[str] = []
    result = api.monitor(path, s, tmp_path / "m", backend="serial", warn=told.append,
                         thresholds=out / "thresholds.parquet")
    assert told == [f"warning: 200 of 400 households of the scenario have no reading at all "
                    f"in readings {path} (their readings count as lost)"]
    readings = result.summary["readings"]
    assert readings["households_without_readings"] == 200
    assert readings["lost_readings"] == 200 * 120
    with pytest.warns(UserWarning, match="200 of 400 households"):
        api.monitor(path, s, backend="serial", thresholds=out / "thresholds.parquet")


def test_lenient_drops_and_counts_the_bad_rows(forced, tmp_path):
    """Bad rows added to good readings: counted and dropped, the first of a duplicate
    kept; the monitoring is the run's."""
    s, out, _ = forced
    path = tmp_path / "bad.parquet"
    changes = [BAD[c][0] for c in ("unknown household", "wrong group", "outside the day",
                                   "negative", "not finite", "duplicate",
                                   "B̂ above the ceiling", "P̂ above the ceiling",
                                   "register above the ceiling")]
    changes.append(lambda f: pd.concat([f, first_row(f, kw=1e13, time=5)]))

    def spoil(frame):
        for change in changes:
            frame = change(frame)
        return frame

    rewrite(out / "readings", path, spoil)
    result = api.monitor(path, s, tmp_path / "m", backend="serial", lenient=True,
                         thresholds=out / "thresholds.parquet")
    bad = result.summary["readings"]["bad_rows_dropped"]
    assert sum(bad.values()) == 10 and all(v == 1 for v in bad.values()), bad
    assert bad["kw: above 59.0 kW, the household ceiling"] == 1
    assert result.summary["readings"]["households_without_readings"] == 0
    assert_same_monitoring(out, tmp_path / "m")


def test_lenient_drops_a_register_going_back(forced, tmp_path):
    """The reading whose register is below an earlier one is dropped (a lost reading) and
    counted; the registers after it, above the earlier ones, are kept."""
    s, out, _ = forced
    path = tmp_path / "back.parquet"
    rewrite(out / "readings", path, BAD["register going back"][0])
    result = api.monitor(path, s, backend="serial", lenient=True,
                         thresholds=out / "thresholds.parquet")
    readings = result.summary["readings"]
    assert readings["bad_rows_dropped"] == {BACKWARDS: 1}
    assert readings["lost_readings"] == 1


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
    """Appliance-level queries read each appliance's starts (load shedding is monitored
    with a run's cost models: test_monitor_shedding.py)."""
    s, out, _ = forced
    data = s.model_dump(mode="json", exclude={"source_path"})
    data["monitoring"]["appliance_queries"] = {"paused": {"query": (
        "PATTERN SEQ(dr_start s, ev_pause p, dr_end e) WHERE SAME[houseID] WITHIN 3h")}}
    with pytest.raises(ValueError, match="monitoring.appliance_queries: they read each "
                                         "appliance's starts"):
        api.monitor(out / "readings", scenario_from_dict(data), backend="serial")
    # the utility's updates of the profiles read the readings before the notice (with an
    # M&V error: without, they would publish nothing)
    del data["monitoring"]["shedding"], data["monitoring"]["appliance_queries"]
    data["monitoring"]["remote"] = {"updates": {}}
    data["baseline"]["error"] = 0.1
    with pytest.raises(ValueError, match="monitoring.remote: updates"):
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


def _yaml(scenario, path):
    import yaml

    path.write_text(yaml.safe_dump(scenario.model_dump(mode="json", exclude={"source_path"})))
    return path


@pytest.mark.parametrize("case, change, message", [
    ("scaled", BAD["kW times 10^12"][0], BAD["kW times 10^12"][1]),
    ("empty", COVER_NONE["empty file"], "no reading of the program 18:30-20:30"),
])
def test_the_command_line_refuses_implausible_readings_in_one_line(forced, tmp_path, case,
                                                                   change, message):
    """Exit 2 before any work, one line on stderr naming the file, nothing written."""
    from typer.testing import CliRunner

    from drsim.cli import app

    s, out, _ = forced
    scenario = _yaml(s, tmp_path / "s.yaml")
    bad = tmp_path / f"{case}.parquet"
    rewrite(out / "readings", bad, change)
    result = CliRunner().invoke(app, ["monitor", str(bad), "--scenario", str(scenario),
                                      "--backend", "serial", "--out", str(tmp_path / "n"),
                                      "--thresholds", str(out / "thresholds.parquet")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and message in lines[0], result.stderr
    assert not (tmp_path / "n").exists()


def test_the_command_line_warns_of_households_without_readings(forced, tmp_path):
    from typer.testing import CliRunner

    from drsim.cli import app

    s, out, _ = forced
    scenario = _yaml(s, tmp_path / "s.yaml")
    half = tmp_path / "half.parquet"
    rewrite(out / "readings", half, lambda f: f[f["household"] < 100])
    result = CliRunner().invoke(app, ["monitor", str(half), "--scenario", str(scenario),
                                      "--backend", "serial", "--out", str(tmp_path / "m"),
                                      "--thresholds", str(out / "thresholds.parquet")])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: 300 of 400 households of the scenario have no reading at "
                        f"all in readings {half} (their readings count as lost)"], result.stderr
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summary["readings"]["households_without_readings"] == 300


def test_an_unknown_query_name_is_refused_naming_the_scenario_file(forced, tmp_path):
    """monitoring.queries with a name no query has: exit 2 naming the scenario file, in
    drsim run as in drsim monitor (the names are the queries')."""
    from typer.testing import CliRunner

    from drsim.cli import app

    assert tuple(QUERIES) == QUERY_NAMES
    s, out, _ = forced
    data = s.model_dump(mode="json", exclude={"source_path"})
    data["monitoring"]["queries"] = {"metre": QUERIES["meter"]}
    import yaml

    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(data))
    for args in (["run", str(scenario)], ["monitor", str(out / "readings"), "--scenario",
                                          str(scenario)]):
        result = CliRunner().invoke(app, [*args, "--backend", "serial", "--out",
                                          str(tmp_path / "o")])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"{scenario}: monitoring.queries: unknown query "
                                        "name(s) 'metre'"), result.stderr
        assert not (tmp_path / "o").exists()
