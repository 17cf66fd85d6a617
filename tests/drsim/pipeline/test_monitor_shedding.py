"""``drsim monitor`` with load shedding (OP, drsim.utility.shedding_feature): a run that
sheds keeps its cost models (cost_models.parquet), and the monitoring of its exported
readings with them gives the run's OP and BL; without them, or with another scenario's,
it is refused in one line."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from small_scenarios import quickstart

import drsim.api as api
from drsim.scenario import scenario_from_dict
from drsim.utility.features import plain_twin
from drsim.utility.shedding_feature import cost_models

TABLES = ("user_events", "group_alerts", "group_events", "utility_alerts")
TRADITIONAL, BL = "traditional", plain_twin("traditional")
#: γ from the expected response with z = 1: the run predicts (as test_monitor's ``forced``)
GAMMA = {"method": "expected", "z": 1.0, "replicas": 4}


def scenario(shedding: dict | None = None, households: int = 600):
    data = quickstart(households, shedding={} if shedding is None else shedding)
    data["chunk_size"] = 100
    data["monitoring"]["gamma_user"] = GAMMA
    return scenario_from_dict(data)


def plain_scenario(households: int = 600):
    data = quickstart(households)
    data["chunk_size"] = 100
    data["monitoring"]["gamma_user"] = GAMMA
    return scenario_from_dict(data)


def events(folder, name: str, pass_name: str) -> pd.DataFrame:
    frame = pq.read_table(folder / f"events_{name}.parquet").to_pandas()
    frame = frame[frame["pass"] == pass_name].drop(columns="pass")
    return frame.sort_values(list(frame.columns[:2]), kind="stable", ignore_index=True)


def summary(folder) -> dict:
    return json.loads((folder / "summary.json").read_text())


@pytest.fixture(scope="module")
def shed(tmp_path_factory):
    """A run that sheds and predicts, with its readings exported, and the monitoring of
    those readings in its folder."""
    s = scenario()
    root = tmp_path_factory.mktemp("shed")
    ran = api.run(s, root / "run", backend="serial", export_readings=True).summary
    monitored = api.monitor(root / "run" / "readings", s, root / "monitor",
                            backend="serial").summary
    return s, root, ran, monitored


def test_a_run_that_sheds_keeps_its_cost_models(shed):
    s, root, ran, _ = shed
    assert "cost_models.parquet" in ran["files"]
    assert sorted(p.name for p in (root / "run").iterdir()) == sorted(ran["files"])
    table = pq.read_table(root / "run" / "cost_models.parquet")
    assert table.column_names == ["group", "model", "shares"]
    assert table["group"].to_pylist() == list(range(len(s.groups)))


def test_monitoring_a_shed_runs_readings_gives_its_op_and_bl(shed):
    """OP's and BL's user, group and utility events, t_nc, latches, costs, what the
    utility knew and the second event's plan, and the devices' figures, are the run's."""
    _, root, ran, monitored = shed
    assert ran["prediction"]["predicted"], "the test needs a prediction"
    for pass_name in (TRADITIONAL, BL):
        for name in TABLES:
            a, b = events(root / "run", name, pass_name), events(root / "monitor", name,
                                                                  pass_name)
            assert len(a) or name == "utility_alerts", (name, pass_name)
            pd.testing.assert_frame_equal(a[b.columns], b, check_dtype=False)
    for key in ("utility_noncompliance_time", "group_noncompliance_times",
                "groups_compliant_at_prediction", "detection_delay_minutes"):
        assert ran["prediction"][key] == monitored["prediction"][key], key
    for key in ("deficit_at_prediction", "second_event", "second_event_note", "cost",
                "shedding"):
        assert ran[key] == monitored[key], key
    assert monitored["shedding"]["op"]["meter_tier"]["readings_shed"] > 0
    a, b = ran["op_vs_bl"], monitored["op_vs_bl"]
    for key in ("communication", "computation", "prediction_minutes_after_bl",
                "bl_prediction", "tiers"):
        assert a[key] == b[key], key
    for key in ("prediction", "deficit_at_prediction", "second_event", "second_event_note",
                "cost"):
        assert a["bl"][key] == b["bl"][key], key
    # no simulated baseline nor adaptive pass: no reductions
    assert b["adaptive_share_of_bl"] is None and b["bl"]["reduction_mwh"] is None
    assert sorted(p.name for p in (root / "monitor").iterdir()) == sorted(monitored["files"])
    assert "cost_models.parquet" not in monitored["files"]


def test_bl_is_the_plain_monitoring_of_the_same_readings(shed, tmp_path):
    """The same readings monitored without load shedding (γ of the run) are BL."""
    _, root, _, monitored = shed
    plain = api.monitor(root / "run" / "readings", plain_scenario(), tmp_path / "plain",
                        backend="serial").summary
    assert plain.get("op_vs_bl") is None and plain.get("shedding") is None
    bl = monitored["op_vs_bl"]["bl"]
    for key, value in bl["prediction"].items():
        assert value == plain["prediction"][key], key
    for key in ("deficit_at_prediction", "second_event", "second_event_note", "cost"):
        assert bl[key] == plain[key], key
    for name in TABLES:
        a, b = events(tmp_path / "plain", name, TRADITIONAL), events(root / "monitor", name,
                                                                      BL)
        pd.testing.assert_frame_equal(a, b[a.columns], check_dtype=False)


def test_the_prepared_values_are_the_runs_cost_models_by_feature(shed):
    """What a streamed monitor is given (``prepared``): the stage's value of the run."""
    s, root, _, _ = shed
    got = api.monitor_prepared(root / "run" / "readings", s)
    kept = pq.read_table(root / "run" / "cost_models.parquet").to_pandas()
    assert got == {"shedding": (cost_models(kept),)}
    assert api.monitor_prepared(None, s, root / "run" / "cost_models.parquet") == got
    with pytest.raises(ValueError, match="the readings sit in no run folder"):
        api.monitor_prepared(None, s)
    with pytest.raises(ValueError, match=r"^monitoring.shedding: --cost-models .*none.parquet: "
                                         r"no such file$"):
        api.monitor_prepared(None, s, root / "none.parquet")
    assert api.monitor_prepared(None, plain_scenario()) == {}


def test_without_the_cost_models_op_is_refused(shed, tmp_path):
    s, root, _, _ = shed
    alone = tmp_path / "readings"
    shutil.copytree(root / "run" / "readings", alone)
    with pytest.raises(ValueError, match=r"^monitoring.shedding: drsim monitor simulates "
                                         r"nothing and needs the cost_models.parquet of the "
                                         r"run the readings came from: none at .*"
                                         r"cost_models.parquet \(give it with --cost-models\)$"):
        api.monitor(alone, s, backend="serial",
                    thresholds=root / "run" / "thresholds.parquet")


def test_cost_models_of_another_scenario_are_refused(shed):
    _, root, _, _ = shed
    with pytest.raises(ValueError, match=r"^monitoring.shedding: the cost models of .*"
                                         r"cost_models.parquet were made for "
                                         r"monitoring.shedding.bound 0.5, the scenario's "
                                         r"is 0.25$"):
        api.monitor(root / "run" / "readings", scenario({"bound": 0.25}), backend="serial")
    with pytest.raises(ValueError, match="sheds no load"):
        api.monitor(root / "run" / "readings", plain_scenario(), backend="serial",
                    cost_models=root / "run" / "cost_models.parquet")


def test_readings_with_holes_are_refused_with_load_shedding(shed, tmp_path):
    """The modelled gateways assume every reading arrives (as a scenario's
    meters.reading_loss is not modelled with load shedding): one line, before any work."""
    s, root, _, _ = shed
    table = pq.read_table(root / "run" / "readings")
    holes = tmp_path / "holes.parquet"
    pq.write_table(table.slice(1), holes)  # the first household's first reading is lost
    with pytest.raises(ValueError, match=r"^monitoring.shedding: not modelled together with "
                                         r"lost_readings, and 1 of the readings in "
                                         r"holes.parquet did not arrive$"):
        api.monitor(holes, s, tmp_path / "m", backend="serial",
                    thresholds=root / "run" / "thresholds.parquet",
                    cost_models=root / "run" / "cost_models.parquet")
    assert not (tmp_path / "m").exists()


def test_the_command_line_takes_the_cost_models_given(shed, tmp_path):
    """Readings outside their run folder: --cost-models and --thresholds give OP the run's
    models and γ; without --cost-models, exit 2 and one line."""
    from typer.testing import CliRunner

    from drsim.cli import app

    s, root, ran, _ = shed
    alone = tmp_path / "readings"
    shutil.copytree(root / "run" / "readings", alone)
    models = tmp_path / "models.parquet"
    shutil.copy(root / "run" / "cost_models.parquet", models)
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(s.model_dump(mode="json", exclude={"source_path"})))
    common = ["monitor", str(alone), "--scenario", str(spec), "--backend", "serial",
              "--thresholds", str(root / "run" / "thresholds.parquet")]
    failed = CliRunner().invoke(app, [*common, "--out", str(tmp_path / "n")])
    assert failed.exit_code == 2, failed.output
    assert "monitoring.shedding: drsim monitor simulates nothing" in failed.output
    assert not (tmp_path / "n").exists()
    ok = CliRunner().invoke(app, [*common, "--cost-models", str(models), "--out",
                                  str(tmp_path / "m")])
    assert ok.exit_code == 0, ok.output
    got = summary(tmp_path / "m")
    assert got["shedding"] == ran["shedding"]
    assert got["prediction"]["utility_noncompliance_time"] == \
        ran["prediction"]["utility_noncompliance_time"]
