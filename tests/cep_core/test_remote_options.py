"""The remote engine's options (cep_core.remote.config.RemoteConfig: ``blocking``,
``bl1_capacity``, ``latency_from``, ``latency_to``, ``payload``, ``order``,
``carry_waits``): their waits and
latencies on hand-built streams with known fetch times, and that no combination of them
changes the matches of any strategy on random streams."""

from __future__ import annotations

import random

import pytest

import cep_core
from cep_core.errors import QueryError
from cep_core.remote import STRATEGIES, LatencyModel, RemoteConfig, RemoteSource
from tests.cep_core.test_remote import TEMPLATES, random_stream

QUERY = "PATTERN SEQ(A a, B b) WHERE b.v = REMOTE[a.k] WITHIN 1000"


def _run(events: list[dict], strategy: str = "BL1", **options) -> dict:
    source = RemoteSource({1: 7, 2: 7}, latency=LatencyModel("fixed", value=50.0))
    cq = cep_core.compile(QUERY, remote={"REMOTE": source})
    session = cq.start("skip-till-any-match", output="matches",
                       remote=RemoteConfig(strategy, **options))
    out = session.feed(events) + session.flush()
    return {**session.remote_report(), "out": out}


def _a(t: float, k: int, i: int) -> dict:
    return {"type": "A", "time": t, "k": k, "id": i}


def _b(t: float, i: int) -> dict:
    return {"type": "B", "time": t, "v": 7, "id": i}


def test_per_match_blocking_adds_the_waits_of_one_event_up():
    # two runs at B need REMOTE[1] and REMOTE[2] (50 each): together they cost 50 (sent
    # when B is picked up at 10), one after the other 100 (10 -> 60 -> 110)
    events = [_a(0.0, 1, 1), _a(1.0, 2, 2), _b(10.0, 3)]
    per_event, per_match = _run(events), _run(events, blocking="match")
    assert per_event["out"] == per_match["out"] and len(per_match["out"]) == 2
    assert per_event["fetch"]["waited"] == pytest.approx(50.0)
    assert per_match["fetch"]["waited"] == pytest.approx(100.0)
    assert per_event["p50"] == pytest.approx(50.0)
    assert per_match["p50"] == pytest.approx(100.0)  # both detected when B is done


def test_bl1_serves_a_repeated_element_from_its_one_element_cache():
    # both runs need REMOTE[1]: per partial match and without a cache BL1 fetches it
    # twice; a cache of one element keeps it for the second run
    events = [_a(0.0, 1, 1), _a(1.0, 1, 2), _b(10.0, 3)]
    none = _run(events, blocking="match")
    one = _run(events, blocking="match", bl1_capacity=1)
    assert none["fetch"]["requests"] == 2 and none["fetch"]["waited"] == pytest.approx(100.0)
    assert one["fetch"]["requests"] == 1 and one["fetch"]["waited"] == pytest.approx(50.0)
    assert one["fetch"]["hits"] == 1 and one["cache"] != "none"
    assert none["cache"] == "none"


def test_latency_from_the_start_of_processing_leaves_queueing_out():
    # B at 11 queues behind B at 10 (device blocked 10 -> 60), then fetches 60 -> 110:
    # 99 from its arrival, 50 from the start of its processing
    events = [_a(0.0, 1, 1), _b(10.0, 2), _b(11.0, 3)]
    arrival, start = _run(events), _run(events, latency_from="start")
    assert sorted(arrival["out"], key=repr) == sorted(start["out"], key=repr)
    assert (arrival["p5"], arrival["p95"]) == pytest.approx((50.0 + 49 * 0.05, 99.0 - 49 * 0.05))
    assert start["p5"] == pytest.approx(50.0) and start["p95"] == pytest.approx(50.0)


def test_latency_to_the_match_leaves_the_rest_of_its_event_out():
    # per partial match, the run of a=1 fetches 10 -> 60 and completes its match, then
    # the run of a=2 fetches 60 -> 110: to the match 50 and 100, to the event's end both 100
    events = [_a(0.0, 1, 1), _a(1.0, 2, 2), _b(10.0, 3)]
    options = {"blocking": "match", "latency_from": "start"}
    finish, match = _run(events, **options), _run(events, latency_to="match", **options)
    assert finish["out"] == match["out"] and len(match["out"]) == 2
    assert finish["p5"] == pytest.approx(100.0) and finish["p95"] == pytest.approx(100.0)
    assert match["p5"] == pytest.approx(50.0 + 50 * 0.05)
    assert match["p95"] == pytest.approx(100.0 - 50 * 0.05)


def test_a_partial_match_reads_its_payload_again_without_a_fetch():
    # the run of a is tested against REMOTE[1] at both B's (the first fails, 9 != 7):
    # BL1 without a cache fetches it twice, with the payload once
    events = [_a(0.0, 1, 1), {**_b(10.0, 2), "v": 9}, _b(100.0, 3)]
    without, kept = _run(events), _run(events, payload=True)
    assert without["out"] == kept["out"] == [{"a": 1, "b": 3}]
    assert without["fetch"]["requests"] == 2 and kept["fetch"]["requests"] == 1
    assert without["p50"] == pytest.approx(50.0) and kept["p50"] == pytest.approx(0.0)


def test_state_order_makes_a_match_wait_for_the_fetches_of_earlier_states():
    # next-match: the run of a=1 takes b at 10 (fetch 10 -> 60); at B 100 it completes
    # its match while the run of a=2 (made at 20, at an earlier state) takes b and
    # fetches 100 -> 150. Made order: the match first (0 after its start, plus its own
    # earlier wait of 50); state order: after the fetch (50, plus 50)
    source = RemoteSource({1: 7, 2: 7}, latency=LatencyModel("fixed", value=50.0))
    cq = cep_core.compile("PATTERN SEQ(A a, B b, B c) WHERE b.v = REMOTE[a.k] WITHIN 1000",
                          remote={"REMOTE": source})
    events = [_a(0.0, 1, 1), _b(10.0, 2), _a(20.0, 2, 3), _b(100.0, 4)]
    p50 = {}
    for order in ("made", "state"):
        for carry in (True, False):
            session = cq.start("skip-till-next-match", output="matches", remote=RemoteConfig(
                "BL2", blocking="match", latency_from="start", latency_to="match",
                order=order, carry_waits=carry))
            out = session.feed(events) + session.flush()
            assert out == [{"a": 1, "b": 2, "c": 4}]
            assert session.remote_report()["fetch"]["waited"] == pytest.approx(100.0)
            p50[order, carry] = session.remote_report()["p50"]
    assert p50 == pytest.approx({("made", True): 50.0, ("made", False): 0.0,
                                 ("state", True): 100.0, ("state", False): 50.0})


@pytest.mark.parametrize("kwargs, field", [
    ({"blocking": "batch"}, "blocking"), ({"latency_from": "detection"}, "latency_from"),
    ({"bl1_capacity": -1}, "bl1_capacity"), ({"latency_to": "end"}, "latency_to"),
    ({"order": "age"}, "order"),
])
def test_bad_options_name_the_field(kwargs, field):
    with pytest.raises(QueryError, match=field):
        RemoteConfig(**kwargs)


@pytest.mark.parametrize("policy", ["skip-till-any-match", "skip-till-next-match"])
@pytest.mark.parametrize("template", range(len(TEMPLATES)))
def test_no_option_changes_the_matches_of_any_strategy(policy, template):
    rng = random.Random(template * 11 + len(policy))
    query = TEMPLATES[template]
    for trial in range(3):
        events, table = random_stream(rng, 60)
        expected = sorted(map(repr, cep_core.compile(query, remote={"REMOTE": table})
                              .matches(events, policy=policy)))
        options = {"blocking": rng.choice(("event", "match")),
                   "bl1_capacity": rng.choice((0, 1)),
                   "latency_from": rng.choice(("arrival", "start")),
                   "latency_to": rng.choice(("finish", "match")),
                   "payload": rng.choice((False, True)),
                   "order": rng.choice(("made", "state")),
                   "carry_waits": rng.choice((False, True))}
        for strategy in STRATEGIES:
            source = RemoteSource(table, latency=LatencyModel("uniform", low=1, high=15),
                                  seed=trial)
            cq = cep_core.compile(query, remote={"REMOTE": source})
            session = cq.start(policy, output="matches", remote=RemoteConfig(
                strategy, unit_cost=rng.choice((0.0, 0.05, 0.5)), capacity=2,
                cache=rng.choice(("lru", "cost")), slices=2, **options))
            got = session.feed(events) + session.flush()
            assert sorted(map(repr, got)) == expected, (strategy, trial, options)


def test_a_fetch_at_the_first_event_counts_in_the_latency_of_its_matches():
    # the run starts only once REMOTE[1] is there (0 -> 50): that first step's ℓ_fetch
    # (Eq. 2.4) adds to the match B completes, as a later step's does
    source = RemoteSource({1: 7}, latency=LatencyModel("fixed", value=50.0))
    cq = cep_core.compile("PATTERN SEQ(A a, B b) WHERE a.v = REMOTE[a.k] WITHIN 1000",
                          remote={"REMOTE": source})
    reports = {}
    for origin in ("arrival", "start"):
        session = cq.start("skip-till-any-match", output="matches",
                           remote=RemoteConfig("BL1", latency_from=origin))
        out = session.feed([{**_a(0.0, 1, 1), "v": 7}, _b(10.0, 2)]) + session.flush()
        assert out == [{"a": 1, "b": 2}]
        reports[origin] = session.remote_report()
    assert reports["arrival"]["fetch"]["waited"] == pytest.approx(50.0)
    # B waits 10 -> 50 behind A's fetch: 40 from its arrival, 0 from its start, plus 50
    assert reports["arrival"]["p50"] == pytest.approx(90.0)
    assert reports["start"]["p50"] == pytest.approx(50.0)
