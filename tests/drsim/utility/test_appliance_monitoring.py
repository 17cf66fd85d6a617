"""Appliance-level utility queries in the DR run (drsim.utility.appliance_monitoring): the
stream of what the households do, and queries with adaptive plans whose alerts are the
text-order plan's and do not depend on the chunking."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from small_scenarios import quickstart

from drsim import api
from drsim.pipeline.monitor import check_monitor
from drsim.pipeline.passes import pass_schedules, plan_chunks, simulate_chunk
from drsim.pipeline.stages import check_run
from drsim.pipeline.stream_tiers import check_streamable
from drsim.pipeline.tasks import METER, simulation_task
from drsim.scenario import ApplianceQuery, scenario_from_dict
from drsim.utility.appliance_monitoring import (
    COUNTS,
    ApplianceQueries,
    appliance_stream,
    compile_appliance_queries,
)
from drsim.utility.features import feature_output, feature_schema
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


def with_queries(**queries: str) -> dict:
    data = quickstart(1200)
    data["chunk_size"] = 300
    data["monitoring"]["appliance_queries"] = {n: {"query": q} for n, q in queries.items()}
    return data


def test_a_chunk_sends_a_row_per_pass_and_query_as_the_features_own_output():
    scenario = scenario_from_dict(with_queries(paused=PAUSED, over=OVER))
    plan = check_run(scenario)
    out = simulation_task(scenario, tuple(plan_chunks(scenario)), plan, 1)
    batch = out[feature_output("appliance_queries")]
    assert batch.schema == feature_schema(ApplianceQueries.of(scenario))
    assert batch.column("pass").to_pylist() == ["expected"] * 2 + ["traditional"] * 2
    assert batch.column("query").to_pylist() == ["paused", "over"] * 2
    assert set(batch.column("chunk").to_pylist()) == {1}
    assert min(batch.column("events").to_pylist()) > 0
    assert "appliance" not in METER.names and "appliance" not in out["meter"].schema.names


def test_the_driver_sums_the_chunks_counts_per_pass_and_query_in_the_scenario_order():
    n = len(COUNTS)
    values = {(0, "b"): np.arange(n), (0, "a"): 10 * np.arange(n),
              (1, "a"): np.zeros(n, np.int64), (1, "b"): np.ones(n, np.int64)}
    rows = pd.DataFrame([{"chunk": c, "group": 0, "pass": p, "query": q,
                          **dict(zip(COUNTS, v.tolist(), strict=True))}
                         for (c, q), v in values.items() for p in ("expected", "traditional")])
    rows = rows.sort_values(["chunk", "pass"], kind="stable", ignore_index=True)
    feature = ApplianceQueries({"b": ApplianceQuery(query=PAUSED),
                                "a": ApplianceQuery(query=OVER)})
    got = feature.merge(rows)
    assert list(got) == ["expected", "traditional"]
    assert got["traditional"].tolist() == [(np.arange(n) + 1).tolist(),
                                           (10 * np.arange(n)).tolist()]
    section = feature.summary(got)
    assert list(section) == ["b", "a"]
    assert section["a"]["passes"]["expected"]["events"] == 10 * COUNTS.index("events")
    assert ApplianceQueries({}).summary(None) == {} and not ApplianceQueries({}).active


def test_drsim_monitor_and_the_stream_refuse_appliance_queries_by_their_key():
    scenario = scenario_from_dict(with_queries(paused=PAUSED))
    with pytest.raises(ValueError, match="^monitoring.appliance_queries: they read each "
                                         "appliance's starts"):
        check_monitor(scenario)
    with pytest.raises(ValueError, match="^monitoring.appliance_queries: the streaming "
                                         "monitoring"):
        check_streamable(scenario)
