"""OP and BL in one run (§6.3.4): BL, the plain twin, is the plain run value for value."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from small_scenarios import quickstart

from drsim.pipeline import stages as pipeline
from drsim.pipeline.backend import SerialBackend
from drsim.pipeline.tasks import user_events
from drsim.results.headline import run_table
from drsim.results.summary import build
from drsim.results.summary_model import Summary
from drsim.scenario import scenario_from_dict
from drsim.utility.features import plain_twin

HOUSEHOLDS = 2400
#: blocking fetches over a slow network: OP predicts later than BL, so BL's loop has a
#: second event and an adaptive pass of its own
OP = {"shedding": {}, "remote": {"strategy": "BL1",
                                 "latency": {"kind": "fixed", "seconds": 200.0}}}


def _summary(scenario_data: dict) -> tuple[pipeline.Run, dict]:
    run = pipeline.run(scenario_from_dict(scenario_data, "s.yaml"), SerialBackend())
    run = run.timed(0.0, time.perf_counter())
    return run, build(run.simulation, run)


@pytest.fixture(scope="module")
def runs():
    return _summary(quickstart(HOUSEHOLDS, **OP)), _summary(quickstart(HOUSEHOLDS))


def test_bl_is_the_plain_run_value_for_value(runs):
    (_, op), (_, plain) = runs
    bl = op["op_vs_bl"]["bl"]
    for key, value in bl["prediction"].items():
        assert value == plain["prediction"][key], key
    for key in ("deficit_at_prediction", "second_event", "second_event_note", "cost"):
        assert bl[key] == plain[key], key
    for key, value in bl["reduction_mwh"].items():
        assert value == plain["reduction_mwh"][key], key
    assert bl["reduction_share_of_expected"] == {
        k: plain["reduction_share_of_expected"][k] for k in ("traditional", "adaptive")}
    assert op["op_vs_bl"]["bl_prediction"] == plain["prediction"]["utility_noncompliance_time"]


def test_bl_sends_the_plain_runs_user_events(runs):
    (op_run, _), (plain_run, _) = runs
    backend = SerialBackend()
    ours = user_events(backend.collect(op_run.monitored.user_events).to_pandas())
    theirs = user_events(backend.collect(plain_run.monitored.user_events).to_pandas())
    bl = ours[ours["pass"] == plain_twin("traditional")].drop(columns="pass")
    plain = theirs[theirs["pass"] == "traditional"].drop(columns="pass")
    assert len(plain) > 0
    assert bl.reset_index(drop=True).equals(plain.reset_index(drop=True))


def test_op_against_bl_reads_both_loops(runs):
    (op_run, op), _ = runs
    section = op["op_vs_bl"]
    # the slow blocking fetches hold OP's alerts back: a later prediction, its own event
    assert section["prediction_minutes_after_bl"] > 0
    assert op["second_event"] != section["bl"]["second_event"]
    assert section["adaptive_share_of_bl"] == pytest.approx(
        op["reduction_mwh"]["adaptive"] / section["bl"]["reduction_mwh"]["adaptive"])
    assert section["computation"] == pytest.approx(
        op["cost"]["computation"]["total"] / section["bl"]["cost"]["computation"]["total"])
    assert section["computation"] < 1
    meter = section["tiers"]["meter"]
    assert meter["shed"] and meter["bound_minutes"] == pytest.approx(
        0.5 * meter["unshed_latency_average_minutes"])
    assert op_run.simulation.timings["plain_loop_seconds"] > 0


def test_one_adaptive_pass_serves_both_when_they_ask_the_same(runs):
    (op_run, _), _ = runs
    event = op_run.second
    dearer = event.incentive.monitoring_cost + 1
    costlier = replace(event, incentive=replace(event.incentive, monitoring_cost=dearer))
    assert pipeline.same_response(event, costlier)  # the lottery differs, not θ_new
    other = replace(event, incentive=replace(event.incentive,
                                             theta_red_mean=event.incentive.theta_red_mean / 2))
    assert not pipeline.same_response(event, other)
    assert not pipeline.same_response(event, replace(event, announced=event.announced + 1))
    assert pipeline.same_response(None, None) and not pipeline.same_response(event, None)


def test_the_headline_sets_op_against_bl_beside_the_published_figures():
    data = quickstart(HOUSEHOLDS, **OP)
    data["reference"] = {"source": "Figure 6.14", "op_vs_bl": {
        "communication": 0.7, "computation": 0.7, "bl_prediction": "19:11",
        "prediction_minutes_after_bl": 4}}
    _, summary = _summary(data)
    columns, rows = run_table(Summary.model_validate(summary))
    assert columns == ["quantity", "this run", "reference"]
    table = {row[0]: row[1:] for row in rows}
    section = summary["op_vs_bl"]
    assert table["BL (plain monitoring) prediction; OP minutes after"] == (
        f"{section['bl_prediction']}; {section['prediction_minutes_after_bl']:+d}", "19:11; +4")
    assert table["OP communication / computation, share of BL"][1] == "0.700 / 0.700"
    assert table["OP adaptive reduction, share of BL"][1] == "not given"
