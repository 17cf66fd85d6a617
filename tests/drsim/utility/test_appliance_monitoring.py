"""Appliance-level utility queries in the DR run (drsim.utility.appliance_monitoring): the
stream of what the households do, and queries with adaptive plans whose alerts are the
text-order plan's and do not depend on the chunking."""

from __future__ import annotations

import numpy as np
import pytest
from small_scenarios import quickstart

from drsim import api
from drsim.pipeline.passes import pass_schedules, plan_chunks, simulate_chunk
from drsim.scenario import ApplianceQuery, scenario_from_dict
from drsim.utility.appliance_monitoring import COUNTS, appliance_stream, compile_appliance_queries
from drsim.utility.monitoring import MonitoringPlan

PAUSED = ("PATTERN SEQ(dr_start s, ev_pause p, start_wet w, dr_end e) WHERE SAME[houseID] "
          "WITHIN 3h")
OVER = ("PATTERN SEQ(dr_end e, over_baseline o, start_wet w) WHERE SAME[houseID] "
        "WITHIN 2h")


def test_the_stream_holds_the_signals_the_readings_over_baseline_and_the_starts():
    scenario = scenario_from_dict(quickstart(1200))
    plan = MonitoringPlan.of(scenario)
    chunk = plan_chunks(scenario)[0]
    result = simulate_chunk(scenario, chunk, keep_runs=True)
    pop, runs = result.population, result.runs
    (event,) = pass_schedules(scenario, chunk.group)["traditional"]
    r = event.resolve(scenario.dr_program.notice_minutes, pop.follow_through)
    stream = appliance_stream(runs["traditional"], runs["baseline"], pop.ids,
                              [(r.announce, r.start, r.end)], plan.t_first_test,
                              plan.delta, plan.t_start, plan.t_end)
    assert np.all(np.diff(stream["time"].to_numpy()) >= 0)
    for typ, t in (("dr_notice", r.announce), ("dr_start", r.start), ("dr_end", r.end)):
        got = stream[stream["type"] == typ]
        assert len(got) == len(pop.ids) and (got["time"] == t).all()
    over = stream[stream["type"] == "over_baseline"]
    assert ((over["time"] - plan.t_first_test) % plan.delta == 0).all()
    assert (over["time"] > plan.t_end).any()  # the rebound
    t = int(over["time"].iloc[-1])
    excess = (runs["traditional"].load(t - plan.delta, t)
              - runs["baseline"].load(t - plan.delta, t)).sum(axis=1)
    at = over[over["time"] == t]["houseID"].to_numpy()
    assert set(at.tolist()) == set(pop.ids[excess > 1e-9].tolist())
    assert stream["type"].str.startswith("start_").any()


def test_a_query_not_partitioned_by_household_is_refused():
    with pytest.raises(ValueError, match="appliance_queries.bad.query: .*SAME\\[houseID\\]"):
        compile_appliance_queries({"bad": ApplianceQuery(
            query="PATTERN SEQ(dr_start s, ev_pause p) WITHIN 1h")})


@pytest.mark.parametrize("chunk_size", [1200, 300])
def test_adaptive_plans_alert_as_the_text_order_and_for_any_chunking(chunk_size):
    data = quickstart(1200)
    data["monitoring"]["appliance_queries"] = {
        "paused_text": {"query": PAUSED, "plan": "text"},
        "paused_order": {"query": PAUSED, "plan": "order"},
        "over_tree": {"query": OVER, "plan": "tree",
                      "adapt": {"method": "threshold", "t": 0.5, "window": 20,
                                "period": 5}},
        "over_text": {"query": OVER, "plan": "text"},
    }
    summary = api.run(scenario_from_dict(data), backend="serial",
                      chunk_size=chunk_size).summary
    got = summary["appliance_queries"]
    for name in got:
        assert set(got[name]["passes"]) == {"expected", "traditional"}
        assert set(got[name]["passes"]["traditional"]) == set(COUNTS)
    for a, b in (("paused_text", "paused_order"), ("over_text", "over_tree")):
        for p in ("expected", "traditional"):
            assert got[a]["passes"][p]["alerts"] == got[b]["passes"][p]["alerts"]
            assert got[a]["passes"][p]["events"] == got[b]["passes"][p]["events"]
    assert got["over_tree"]["passes"]["traditional"]["alerts"] > 0
    assert got["over_tree"]["passes"]["traditional"]["checks"] > 0
    _ALERTS[chunk_size] = {n: q["passes"]["traditional"]["alerts"] for n, q in got.items()}
    if len(_ALERTS) == 2:
        assert _ALERTS[1200] == _ALERTS[300]


_ALERTS: dict[int, dict[str, int]] = {}
