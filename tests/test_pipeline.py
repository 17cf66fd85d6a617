"""The adaptive DR run (drsim.pipeline, spark.adaptive_job): the replay property of the
closed loop, the second event, costs and the prediction outputs on a small scenario."""

from __future__ import annotations

import numpy as np
import pytest

from drsim.dr import DREvent
from drsim.monitoring import MonitoringPlan
from drsim.passes import pass_schedules
from drsim.pipeline import run_scenario
from drsim.population import Population
from drsim.scenario import load_scenario, scenario_from_dict
from drsim.sim import ChunkSimulator

QUICKSTART = "scenarios/quickstart.yaml"


def small(households: int = 400, **monitoring) -> object:
    s = load_scenario(QUICKSTART).with_households(households)
    data = s.model_dump(mode="json", exclude={"source_path"})
    data["chunk_size"] = 100
    data["monitoring"].update(monitoring)
    return scenario_from_dict(data)


def test_adaptive_pass_replays_the_traditional_pass_before_the_announcement():
    """Two independent simulations, minute by minute: DR2 announced at 19:15 changes
    nothing before 19:15 (DESIGN.md, "Closed loop by replay"), and something after."""
    s = small(300)
    announce, start, end = 19 * 60 + 15, 19 * 60 + 25, 20 * 60 + 30
    trad = pass_schedules(s, 1)["traditional"]
    dr2 = DREvent(start, end, announce, follow_through=lambda theta: np.minimum(1, 2 * theta))
    a = ChunkSimulator(Population(s, 100, 150)).run(trad).load()
    b = ChunkSimulator(Population(s, 100, 150)).run([*trad, dr2]).load()
    assert np.array_equal(a[:, :announce], b[:, :announce])
    assert not np.array_equal(a[:, announce:], b[:, announce:])


@pytest.fixture(scope="module")
def forced(spark):
    """A run whose γ_user is low enough that the traditional pass surely predicts."""
    s = small(400, gamma_user=0.15)
    return s, run_scenario(s, None)


def test_a_prediction_schedules_the_second_event(forced):
    s, summary = forced
    plan = MonitoringPlan.of(s)
    t_nc = summary["prediction"]["utility_noncompliance_time"]
    assert t_nc is not None
    h, m = map(int, t_nc.split(":"))
    # earliest possible: user 19:05, group 19:08, utility 19:11 (reading 3)
    assert plan.t_first_test + 21 <= h * 60 + m < plan.t_end
    second = summary["second_event"]
    h2, m2 = map(int, second["start"].split(":"))
    assert h2 * 60 + m2 == h * 60 + m + s.incentive.second_event_delay_minutes
    assert second["end"] == s.dr_program.end
    red = summary["reduction_mwh"]
    assert red["adaptive"] > red["traditional"] > 0
    inc = summary["incentive"]
    assert inc["scheduled"] and 0 < inc["p_inc"] <= 1 and inc["theta_new_mean"] is not None
    assert inc["theta_new_mean"] >= inc["theta_red_mean"]


def test_costs_and_household_predictions_are_reported(forced):
    _, summary = forced
    comm, comp = summary["cost"]["communication"], summary["cost"]["computation"]
    assert comm["total"] == sum(v for k, v in comm.items() if k != "total") > 0
    assert comp["meter"] > 0 and comp["group"] > 0 and comp["utility"] > 0
    # meters slow down after the prediction: fewer readings than every minute all along
    assert comm["meter_readings"] < 400 * 120
    p = summary["prediction"]
    assert 0 <= p["household_precision"] <= 1 and 0 <= p["household_recall"] <= 1
    conf = p["household_confusion"]
    assert conf["households"] == 400
    assert summary["spark"]["master"] and summary["spark"]["tasks"] >= 1


def test_without_a_prediction_the_adaptive_pass_is_the_traditional_one(spark):
    summary = run_scenario(small(200, gamma_user=0.95), None)
    assert summary["prediction"]["utility_noncompliance_time"] is None
    assert summary["second_event"] is None and "no utility" in summary["second_event_note"]
    red = summary["reduction_mwh"]
    assert red["adaptive"] == red["traditional"]


def test_a_later_detection_moves_the_second_event(forced, spark):
    s, summary = forced
    later = run_scenario(s, None, delay_detection=10)
    a, b = summary["second_event"], later["second_event"]
    assert later["prediction"]["utility_noncompliance_time"] == \
        summary["prediction"]["utility_noncompliance_time"]
    ha, ma = map(int, a["start"].split(":"))
    hb, mb = map(int, b["start"].split(":"))
    assert hb * 60 + mb == ha * 60 + ma + 10
    assert later["reduction_mwh"]["adaptive"] <= summary["reduction_mwh"]["adaptive"]


def test_bad_delay_is_refused():
    with pytest.raises(ValueError, match="delay_detection"):
        run_scenario(small(100), None, delay_detection=-5)
