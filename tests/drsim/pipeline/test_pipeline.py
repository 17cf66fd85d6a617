"""The closed-loop run (drsim.pipeline.stages): the replay property of the closed loop, the second
event, costs and the prediction outputs on a small scenario, on the serial backend; the
same summary on Spark."""

from __future__ import annotations

import numpy as np
import pytest

import drsim
from drsim.household.dr import DREvent
from drsim.household.population import Population
from drsim.household.sim import ChunkSimulator
from drsim.pipeline.loads import Loads
from drsim.pipeline.passes import pass_schedules, plan_chunks, simulate_chunk
from drsim.scenario import load_scenario, scenario_from_dict
from drsim.units import DAY, MICRO, clock_minutes
from drsim.utility.monitoring import MonitoringPlan

QUICKSTART = "scenarios/quickstart.yaml"


def small(households: int = 400, **monitoring) -> object:
    s = load_scenario(QUICKSTART).with_households(households)
    data = s.model_dump(mode="json", exclude={"source_path"})
    data["chunk_size"] = 100
    data["monitoring"].update(monitoring)
    return scenario_from_dict(data)


def test_adaptive_pass_replays_the_traditional_pass_before_the_announcement():
    """Two independent simulations, minute by minute: DR2 announced at 19:15 changes
    nothing before 19:15 (docs/architecture.md, "The closed loop by replay"), and something
    after."""
    s = small(300)
    announce, start, end = 19 * 60 + 15, 19 * 60 + 25, 20 * 60 + 30
    trad = pass_schedules(s, 1)["traditional"]
    dr2 = DREvent(start, end, announce, follow_through=lambda theta: np.minimum(1, 2 * theta))
    a = ChunkSimulator(Population(s, 100, 150)).run(trad).load()
    b = ChunkSimulator(Population(s, 100, 150)).run([*trad, dr2]).load()
    assert np.array_equal(a[:, :announce], b[:, :announce])
    assert not np.array_equal(a[:, announce:], b[:, announce:])


def test_the_adaptive_pass_renders_from_the_announcement_and_replays_before_it():
    """The adaptive task renders its day from DR2's announcement on (NaN before); the
    driver takes the minutes before it from the traditional pass (Loads.replayed), which
    gives the loads of the whole adaptive day rendered again, to the µkW."""
    s = small(300)
    chunk = plan_chunks(s)[1]
    announce, start, end = 19 * 60 + 15, 19 * 60 + 25, 20 * 60 + 30
    trad = pass_schedules(s, chunk.group)["traditional"]
    dr2 = DREvent(start, end, announce, follow_through=lambda theta: np.minimum(1, 2 * theta))
    schedule = {"adaptive": [*trad, dr2]}
    whole = simulate_chunk(s, chunk, schedules=schedule)
    part = simulate_chunk(s, chunk, schedules=schedule, render_from=announce)
    assert np.isnan(part.load["adaptive"][:announce]).all()
    assert np.array_equal(part.load["adaptive"][announce:], whole.load["adaptive"][announce:])
    for c, kw in whole.by_category["adaptive"].items():
        assert np.array_equal(part.by_category["adaptive"][c][announce:], kw[announce:])

    def loads(result, name):
        group_kw = np.zeros((2, DAY))
        group_kw[chunk.group] = result.load[name] / MICRO
        return Loads({name: group_kw}, {name: {c: kw / MICRO for c, kw in
                                               result.by_category[name].items()}}, {})

    traditional = loads(simulate_chunk(s, chunk, schedules={"traditional": trad}),
                        "traditional")
    spliced = loads(part, "adaptive").replayed(traditional, "traditional", announce)
    expected = loads(whole, "adaptive")
    assert np.array_equal(spliced.group_kw["adaptive"], expected.group_kw["adaptive"])
    for c, kw in expected.category_kw["adaptive"].items():
        assert np.array_equal(spliced.category_kw["adaptive"][c], kw)


def run_summary(scenario, **options) -> dict:
    return drsim.run(scenario, backend="serial", **options).summary


@pytest.fixture(scope="module")
def forced():
    """A run whose constant γ_user is low enough that the traditional pass surely predicts."""
    s = small(400, gamma_user=0.01)
    return s, run_summary(s)


def test_a_prediction_schedules_the_second_event(forced):
    s, summary = forced
    plan = MonitoringPlan.of(s)
    t_nc = summary["prediction"]["utility_noncompliance_time"]
    assert t_nc is not None and summary["prediction"]["predicted"]
    predicted = clock_minutes(t_nc)
    # earliest possible: user 19:05, group 19:08, utility 19:11 (docs/decisions.md,
    # "Length and detection time")
    assert plan.t_first_test + 21 <= predicted < plan.t_end
    assert summary["prediction"]["detection_delay_minutes"] == predicted - plan.t_first_test
    second = summary["second_event"]
    assert clock_minutes(second["start"]) == predicted + s.incentive.second_event_delay_minutes
    assert second["end"] == s.dr_program.end
    red = summary["reduction_mwh"]
    assert red["adaptive"] > red["traditional"] > 0
    inc = summary["incentive"]
    assert inc["scheduled"] and 0 < inc["p_inc"] <= 1 and inc["theta_new_mean"] is not None
    assert inc["theta_new_mean"] >= inc["theta_red_mean"]


def test_the_utility_plans_with_what_it_knows_at_the_prediction(forced):
    """θ̄_red of Eq. 6.7-6.8 is read from the meter data up to t_nc (drsim.utility.deficit), close
    to, but not, the simulation's input; the goal is the estimated expected reduction."""
    _, summary = forced
    known = summary["deficit_at_prediction"]
    inc = summary["incentive"]
    assert inc["theta_red_mean"] == known["theta_red_mean_observed"]
    assert inc["theta_red_mean"] != inc["theta_red_mean_simulated"]
    assert inc["theta_red_mean"] == pytest.approx(inc["theta_red_mean_simulated"], abs=0.1)
    assert known["theta_red_mean_observed"] == pytest.approx(
        known["theta_o_mean"] * known["realised_reduction_kwh"]
        / known["expected_reduction_kwh"])
    assert summary["reduction_goal"] == "expected"
    assert summary["reduction_goal_mwh"] == pytest.approx(
        summary["baseline"]["expected_reduction_mwh"])
    assert inc["c_saved"] == pytest.approx(known["shortfall_kwh"] * 0.25)  # default price


def test_the_lottery_is_drawn_among_the_compliant(forced):
    _, summary = forced
    inc = summary["incentive"]
    assert 0 < inc["second_event_compliant"] <= 400
    assert 0 <= inc["lottery_winners"] <= inc["second_event_compliant"]
    # about p_inc of the compliant households win (binomial, 4 standard deviations)
    n, p = inc["second_event_compliant"], inc["p_inc"]
    assert abs(inc["lottery_winners"] - n * p) <= 4 * np.sqrt(n * p * (1 - p)) + 1
    extra = inc["realised_lottery_cost"] / max(inc["lottery_winners"], 1)
    assert min(inc["lambda_new"].values()) - 1e-12 <= extra + inc["lambda_o"] \
        <= max(inc["lambda_new"].values()) + 1e-12
    assert inc["realised_second_event_cost"] == pytest.approx(
        inc["monitoring_cost"] + inc["realised_lottery_cost"])


def test_costs_and_household_predictions_are_reported(forced):
    _, summary = forced
    comm, comp = summary["cost"]["communication"], summary["cost"]["computation"]
    assert comm["total"] == sum(v for k, v in comm.items() if k != "total") > 0
    assert comp["meter"] > 0 and comp["group"] > 0 and comp["utility"] > 0
    # meters slow down after the prediction: fewer readings than every minute all along
    assert comm["meter_readings"] < 400 * 120
    p = summary["prediction"]
    assert 0 <= p["household_precision"] <= 1 and 0 <= p["household_recall"] <= 1
    # flags over the whole program include the flags while tested
    assert p["household_recall_whole_program"] >= p["household_recall"]
    conf = p["household_confusion"]
    assert conf["households"] == 400
    assert summary["backend"]["name"] == "serial"
    assert summary["backend"]["tasks"] == summary["backend"]["chunks"] == 6  # 134, 133, 133


def test_the_loop_closes_with_the_expected_share_threshold():
    """The whole path with γ from the expected response on a small scenario: the two groups
    whose follow-through collapsed latch, the one that follows through does not, the
    expected pass predicts nothing, the second event wins back part of the deficit (a
    third here: groups of 1,000 are detected late, at 19:26)."""
    s = small(3000)
    s = s.model_copy(update={"groups": [g.model_copy(update={"follow_through_drop": d})
                                        for g, d in zip(s.groups, (0.1, 0.8, 0.8),
                                                        strict=True)]})
    summary = run_summary(s)
    p = summary["prediction"]
    assert p["predicted"] and summary["second_event"] is not None
    t_nc = p["utility_noncompliance_time"]
    latched = p["group_noncompliance_times"]
    assert latched["south"] <= t_nc and latched["east"] <= t_nc
    assert latched["north"] is None or latched["north"] > t_nc
    assert p["groups_compliant_at_prediction"] == 1
    assert p["expected_pass_noncompliance_time"] is None
    assert p["gamma_user"] == {"method": "expected", "z": 3.0, "replicas": 4}
    red = summary["reduction_mwh"]
    assert red["traditional"] < 0.6 * red["expected"]
    assert red["adaptive"] > red["traditional"] + 0.25 * (red["expected"] - red["traditional"])


def test_without_a_prediction_the_adaptive_pass_is_the_traditional_one():
    summary = run_summary(small(200, gamma_user=0.95))
    assert summary["prediction"]["utility_noncompliance_time"] is None
    assert summary["second_event"] is None and "no utility" in summary["second_event_note"]
    assert summary["incentive"] is None and summary["deficit_at_prediction"] is None
    red = summary["reduction_mwh"]
    assert red["adaptive"] == red["traditional"]


def test_a_later_detection_moves_the_second_event(forced):
    s, summary = forced
    later = run_summary(s, delay_detection=10)
    a, b = summary["second_event"], later["second_event"]
    assert later["prediction"]["utility_noncompliance_time"] == \
        summary["prediction"]["utility_noncompliance_time"]
    assert clock_minutes(b["start"]) == clock_minutes(a["start"]) + 10
    assert later["reduction_mwh"]["adaptive"] <= summary["reduction_mwh"]["adaptive"]


def test_runs_on_one_backend_report_their_own_jobs(forced):
    """A sweep runs every run on one backend: each summary lists that run's jobs only."""
    s, summary = forced
    backend = drsim.api.open_backend("serial")
    first = drsim.run(s, backend=backend).summary["backend"]["jobs"]
    second = drsim.run(s, backend=backend).summary["backend"]["jobs"]
    assert [job["label"] for job in first] == [job["label"] for job in second] == [
        "passes", "group tier", "utility tier", "adaptive pass"]
    assert len(backend.info.jobs) == 2 * len(first)
    assert summary["backend"]["jobs"] == first


def test_bad_delay_is_refused():
    with pytest.raises(ValueError, match="delay_detection"):
        run_summary(small(100), delay_detection=-5)


def test_spark_and_serial_backends_give_the_same_summary(forced, spark):
    """The run written once: on Spark (local[2], partitions in any order) every value of
    the summary equals the serial backend's, except the backend's own facts and timings."""
    s, serial = forced
    on_spark = drsim.run(s, backend="spark").summary
    assert on_spark["backend"]["name"] == "spark" and on_spark["backend"]["master"]
    assert on_spark["prediction"]["predicted"]
    for key in serial:
        if key not in ("backend", "timings", "resources"):
            assert on_spark[key] == serial[key], key
