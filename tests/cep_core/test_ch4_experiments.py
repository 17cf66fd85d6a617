"""The Ch. 4 experiments' generators and wiring: the case studies' generated streams
(experiments.ch4_case_data), the recall-over-time and recovery of Figure 4.16
(experiments.ch4_adaptivity), the statements of Figure 4.13 (experiments.ch4_clusters)
and a case's test-only generator options (experiments.reproduce_ch4.Case)."""

from __future__ import annotations

import doctest
import importlib
from collections import defaultdict

import numpy as np
import pytest

import cep_core
from experiments import ch4_adaptivity, ch4_case_data, ch4_cases, ch4_clusters, ch4_data
from experiments.reproduce_ch4 import Case


@pytest.mark.parametrize("name", ["experiments.ch4_adaptivity", "experiments.ch4_case_data"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0


def test_trips_chain_bikes_favour_hot_stations_and_peak_in_the_rush():
    trips = ch4_case_data.make_trips(3000, rate=0.05, seed=3)
    assert trips == ch4_case_data.make_trips(3000, rate=0.05, seed=3)
    by_bike = defaultdict(list)
    for t in trips:
        by_bike[t["bike"]].append(t)
    pairs = [(a["end"], b["start"]) for ts in by_bike.values()
             for a, b in zip(ts, ts[1:], strict=False)]
    chained = np.mean([a == b for a, b in pairs])
    assert 0.85 < chained < 0.95                      # 0.9, plus a moved bike's chance hit
    ends = np.array([t["end"] for t in trips])
    assert np.isin(ends, [7, 8, 9]).mean() > 2 * 3 / 30   # four times as likely each
    times = np.array([t["time"] for t in trips])
    rush = (times >= 0.4 * 3000 / 0.05) & (times < 0.6 * 3000 / 0.05)
    per_s_rush = rush.sum() / (0.2 * 3000 / 0.05)
    per_s_before = (times < 0.4 * 3000 / 0.05).sum() / (0.4 * 3000 / 0.05)
    assert per_s_rush > 1.5 * per_s_before    # idle time / 3, trips as long


def test_listing_4_1_needs_five_trips_of_a_bike_chained_into_a_hot_station():
    q = cep_core.compile(ch4_case_data.BIKE_QUERY, time_unit="s")
    chain = [{"type": "BikeTrip", "time": 60.0 * i, "bike": 1, "start": i + 1,
              "end": i + 2, "usertype": "Subscriber"} for i in range(5)]
    last = {"type": "BikeTrip", "time": 400.0, "bike": 1, "start": 6, "end": 8,
            "usertype": "Subscriber"}
    got = q.start(output="matches", engine="reference").run([*chain, last])
    assert {len(m["a"]) for m in got} == {5}
    short = q.start(output="matches", engine="reference").run([*chain[1:], last])
    assert short == []


def test_task_events_follow_the_lifecycle_and_listing_4_3_finds_matches():
    ev = ch4_case_data.make_task_events(6000, rate=0.5, seed=2)
    by_task = defaultdict(list)
    for e in ev:
        by_task[e["task_id"]].append(e)
    for es in by_task.values():
        assert es[0]["type"] == "Submit"
        for a, b in zip(es, es[1:], strict=False):
            if b["type"] in ("Evict", "Fail", "Finish", "Kill"):
                assert a["type"] == "Schedule" and a["machine"] == b["machine"]
    q = cep_core.compile(ch4_case_data.CLUSTER_QUERY, time_unit="s")
    got = q.start(output="matches", engine="reference").run(ev)
    assert len(got) >= 5
    for m in got:
        b, d, f = (ev[m[v]]["machine"] for v in "bdf")
        assert b != d and d != f


def test_a_case_changes_the_test_stream_only():
    case = Case(ch4_data.Q1, rate=40_000.0, events=400, test_kw=(("change_at", 200),))
    history = case.stream(400, 1)
    test = case.stream(400, 2, **dict(case.test_kw))
    cv = lambda s, lo, hi: [e["V"] for e in s[lo:hi] if e["type"] == "C"]  # noqa: E731
    assert max(cv(history, 0, 400)) <= 10
    assert max(cv(test, 0, 200)) <= 10 and min(cv(test, 200, 400)) >= 12


def _adaptivity_rows(recall_after: list[float], window_ms: int = 2) -> list[dict]:
    rows = []
    before = [1.0] * 6
    for strategy, fixed in (("Hybrid", 1.0), ("Hybrid (fixed model)", 0.3)):
        series = before + (recall_after if strategy == "Hybrid"
                           else [fixed] * len(recall_after))
        rows += [{"window_ms": window_ms, "window_events": 80, "strategy": strategy,
                  "bucket": b, "first_event": 100 * b, "after_change": int(b >= 6),
                  "matches": 10, "found": round(10 * r), "recall": r}
                 for b, r in enumerate(series)]
    return rows


def test_adaptivity_reports_when_hybrid_recovers():
    ok = ch4_adaptivity.check(_adaptivity_rows([0.0, 0.2, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
                                                1.0, 1.0]))
    assert ok[0][1] and "back within 5 points" in ok[0][0]
    never = ch4_adaptivity.check(_adaptivity_rows([0.0] * 10))
    assert not never[0][1]


def test_clusters_statements_fail_on_a_sensitive_model():
    flat = [{"clusters": k, "bound": 0.5, "recall": 0.9 + 0.01 * min(k, 8)}
            for k in range(2, 11)]
    assert all(ok for _, ok in ch4_clusters.check(flat))
    steep = [{"clusters": k, "bound": 0.5, "recall": 0.1 * k} for k in range(2, 11)]
    assert not ch4_clusters.check(steep)[0][1]
    same = [{"clusters": k, "bound": 0.5, "recall": 1.0} for k in range(2, 11)]
    assert not ch4_clusters.check(same)[1][1]  # no gain from more clusters


def test_partial_matches_over_time_counts_the_live_ones():
    case = Case(ch4_case_data.BIKE_QUERY, data="citibike", rate=0.05, events=300,
                time_unit="s")
    rows = ch4_cases.partial_matches(case, points=10)
    assert len(rows) == 10 and rows[-1]["events"] == 300
    assert all(r["live_pms"] >= 0 for r in rows) and max(r["live_pms"] for r in rows) > 0
    assert [r["time_h"] for r in rows] == sorted(r["time_h"] for r in rows)


def test_case_study_statements_compare_hybrid_with_the_best_baseline():
    def rows(hybrid: float) -> list[dict]:
        recall = {"RI": 0.2, "SI": 0.3, "RS": 0.5, "SS": 0.6, "Hybrid": hybrid}
        return [{"experiment": "bike_bound_p95", "strategy": s, "bound": 0.2,
                 "recall": r, "throughput": 1.0} for s, r in recall.items()]
    assert ch4_cases.check(rows(0.9))[0][1]
    assert not ch4_cases.check(rows(0.5))[0][1]
