"""An engine's compiled plan apart from what it keeps of the stream (its state, as Flink
CEP keeps an NFA apart from its NFAState): the state pickles and is sized, and restored
into a fresh engine of the same compiled query it goes on with the same matches and
counters as an uninterrupted run."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from test_engine_keyed import TABLE, random_stream
from test_engine_reference import SlowLookup
from test_keyed_negation import random_neg_query

import cep_core
from cep_core.engine.keyed_state import KeyedState
from cep_core.engine.reference_state import ReferenceState
from cep_core.remote import LatencyModel, RemoteConfig, RemoteSource
from cep_core.remote.state import RemoteState
from cep_core.shedding import SheddingConfig, fit_cost_model, unit_cost_for, work_units
from cep_core.shedding.state import SheddingState
from experiments import ch4_data

ONE = "one-per-partition"
METER = ("PATTERN SEQ(M+ m[]) WHERE SAME[k] AND m[i].x > 1 AND LENGTH(m+[]) >= 2 "
         "WITHIN 20 RETURN R(m[1].time AS first, LENGTH(m+[]) AS n)")
KINDS = {  # query, start options, events
    "keyed": (METER, {"policy": "strict-contiguity", "runs": ONE}, None),
    "keyed, approximate": (METER, {"policy": "strict-contiguity", "runs": ONE,
                                   "max_missing": 1}, "lost"),
}

#: a stream whose rare type flips (B, then A): adaptive plans are replaced
FLIP = [{"type": "A" if i % 5 else "B", "time": i, "x": i % 3} for i in range(30)] + \
       [{"type": "B" if i % 5 else "A", "time": i, "x": i % 3} for i in range(30, 60)]
REFERENCE = {  # the reference engine: query, start options, stream ("flip" or lost events)
    "next match": (METER, {"policy": "skip-till-next-match"}, None),
    "approximate, one run per error level": (
        METER, {"policy": "strict-contiguity", "runs": ONE, "max_missing": 1}, "lost"),
    "any match, NEG at both ends": (
        "PATTERN SEQ(NEG B n, A a, A c, NEG B m) WHERE a.x <= c.x WITHIN 6",
        {"output": "matches"}, "flip"),
}


def _stream(rng: np.random.Generator, lost: bool) -> list[dict]:
    events = [{"type": "M", "time": t, "k": int(k), "x": int(rng.integers(0, 4))}
              for t in range(40) for k in rng.choice(6, 3, replace=False)]
    if lost:
        for e in events[::7]:
            e["lost"] = True
    return events


def _resumed(q, options: dict, events: list[dict], cut: int) -> tuple[list, dict]:
    """The outputs and counters of feeding ``events[:cut]``, moving the engine's state
    through a pickle into a fresh engine of the same query, and feeding the rest."""
    first = q.start(**options)
    out = first.feed(events[:cut])
    state = pickle.loads(pickle.dumps(first.engine.stream_state))
    second = q.start(**options)
    second.engine.stream_state = state
    second.events_fed, second.last_time = first.events_fed, first.last_time
    out += second.feed(events[cut:]) + second.flush()
    return out, second.counters.as_dict()


def _whole(q, options: dict, events: list[dict]) -> tuple[list, dict]:
    session = q.start(**options)
    return session.run(events), session.counters.as_dict()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(4))
def test_a_keyed_engines_state_moves_into_a_fresh_engine_mid_stream(kind, seed):
    text, options, lost = KINDS[kind]
    rng = np.random.default_rng(seed)
    events = _stream(rng, lost is not None)
    q = cep_core.compile(text)
    whole = _whole(q, options, events)
    assert whole[0], "the stream completes matches"
    assert _resumed(q, options, events, int(rng.integers(1, len(events) - 1))) == whole


@pytest.mark.parametrize("kind", REFERENCE)
@pytest.mark.parametrize("seed", range(3))
def test_the_reference_engines_state_moves_into_a_fresh_engine_mid_stream(kind, seed):
    """Its partial matches, counters and statistics, and what the NEG elements at the
    pattern's ends keep (the matches waiting for their window to close)."""
    text, options, events = REFERENCE[kind]
    options = {**options, "engine": "reference"}
    rng = np.random.default_rng(100 + seed)
    events = FLIP if events == "flip" else _stream(rng, events is not None)
    q = cep_core.compile(text)
    whole = _whole(q, options, events)
    assert whole[0], "the stream completes matches"
    cut = int(rng.integers(1, len(events) - 1))
    assert _resumed(q, options, events, cut) == whole
    session = q.start(**options)
    session.feed(events[:cut])
    assert session.statistics == _moved(session, q, options).statistics


def _moved(session, q, options: dict):
    """A fresh session of ``q`` holding ``session``'s state, moved through a pickle."""
    fresh = q.start(**options)
    fresh.engine.stream_state = pickle.loads(pickle.dumps(session.engine.stream_state))
    return fresh


@pytest.mark.parametrize("policy", ["skip-till-any-match", "skip-till-next-match"])
def test_the_reference_engines_waiting_lookups_move_too(policy):
    """Partial matches waiting for a lookup, with their queued events, move with the
    state and catch up in the fresh engine."""
    text = ("PATTERN SEQ(A a, B+ b[], C c) WHERE SAME[k] AND b[i].x > REMOTE[a.x] "
            "AND c.x = REMOTE[b[last].x] WITHIN 8")
    table = {0: 0, 1: 1, 2: 0}
    events = [{"type": "ABBCABC"[i % 7], "time": i, "x": (i * 7) % 3, "k": i % 2}
              for i in range(40)]
    options = {"policy": policy, "output": "matches", "engine": "reference"}
    whole = _whole(cep_core.compile(text, remote=SlowLookup(table)), options, events)
    q = cep_core.compile(text, remote=SlowLookup(table))
    first = q.start(**options)
    out = first.feed(events[:7])
    assert first.engine.stream_state.waiting, "partial matches wait at the cut"
    second = _moved(first, q, options)
    second.events_fed, second.last_time = first.events_fed, first.last_time
    out += second.feed(events[7:]) + second.flush()
    assert whole[0] and (out, second.counters.as_dict()) == whole


REMOTE = ("PATTERN SEQ(A a, B b, C c) WHERE SAME[g] AND b.v = REMOTE[a.k] AND c.w >= a.w "
          "WITHIN 40")


def _remote(strategy: str, cache: str) -> tuple:
    """The remote-data query (one RemoteSource), start options running ``strategy``
    with ``cache`` on the modelled device, and a stream of 400 events."""
    rng = np.random.default_rng(5)
    events = [{"type": "AABBC"[int(rng.integers(5))], "time": float(i),
               "k": int(rng.integers(12)), "v": int(rng.integers(12)),
               "w": int(rng.integers(4)), "g": int(rng.integers(3))} for i in range(400)]
    source = RemoteSource({k: int(rng.integers(12)) for k in range(12)},
                          latency=LatencyModel("uniform", low=2.0, high=9.0), seed=3)
    q = cep_core.compile(REMOTE, remote={"REMOTE": source})
    options = {"output": "matches", "remote": RemoteConfig(
        strategy, unit_cost=0.05, cache=cache, capacity=6, slices=4)}
    return q, options, events


@pytest.mark.parametrize(("strategy", "cache"), [
    ("BL2", "lru"), ("BL2", "cost"), ("PFetch", "cost"), ("LzEval", "lru"),
    ("Hybrid", "cost"), ("BL3", "lru")])
def test_the_remote_engines_state_moves_with_its_cache_and_latency_draws(strategy, cache):
    """Remote data on the modelled device: the partial matches and their guards, the
    device clock, the cache, the utility model and the latency draws move with the
    state; the matches, counters and report (latencies, fetches) are those of an
    uninterrupted run of the same compiled query."""
    q, options, events = _remote(strategy, cache)
    whole = q.start(**options)
    want = (whole.run(events), whole.counters.as_dict(), whole.remote_report())
    first = q.start(**options)
    out = first.feed(events[:217])
    assert isinstance(first.engine.stream_state, RemoteState)
    second = _moved(first, q, options)
    second.events_fed, second.last_time = first.events_fed, first.last_time
    out += second.feed(events[217:]) + second.flush()
    assert want[0] and want[2]["fetch"]["requests"] > 0
    assert (out, second.counters.as_dict(), second.remote_report()) == want
    assert second.engine.stream_state.nbytes > 0


@pytest.mark.parametrize("seed", range(6))
def test_a_keyed_engines_neg_state_moves_too(seed):
    rng = np.random.default_rng(700 + seed)
    text, _ = random_neg_query(rng)
    q = cep_core.compile(text, params={"tab": TABLE})
    events = random_stream(rng, int(rng.integers(60, 120)))
    for policy in ("skip-till-next-match", "strict-contiguity"):
        options = {"policy": policy, "runs": ONE}
        assert _resumed(q, options, events, len(events) // 2) == _whole(q, options, events)


def test_the_keyed_state_is_a_dataclass_of_its_own_sized_by_what_it_keeps():
    q = cep_core.compile(METER)
    session = q.start("strict-contiguity", runs=ONE)
    state = session.engine.stream_state
    assert isinstance(state, KeyedState) and state.counters is session.counters
    empty = state.nbytes
    session.feed(_stream(np.random.default_rng(0), False))
    assert state.nbytes > empty and state.keyindex.size == 6
    compiled = {k for k, v in vars(session.engine).items() if v is state}
    assert compiled == {"stream_state"}


def test_the_reference_state_is_a_dataclass_of_its_own_sized_by_what_it_keeps():
    session = cep_core.compile(METER).start("skip-till-next-match", engine="reference")
    state = session.engine.stream_state
    assert isinstance(state, ReferenceState) and state.counters is session.counters
    empty = state.nbytes
    session.feed(_stream(np.random.default_rng(0), False))
    assert state.nbytes > empty and len(state.live) == 6 and state.now == 39
    assert {k for k, v in vars(session.engine).items() if v is state} == {"stream_state"}


@pytest.mark.parametrize(("text", "options"), [
    (METER, {"policy": "strict-contiguity", "runs": ONE}),
    (METER, {"policy": "skip-till-next-match", "engine": "reference"}),
    ("PATTERN SEQ(NEG B n, A a, A c, NEG B m) WHERE a.x <= c.x WITHIN 6",
     {"engine": "reference"}),
    ("PATTERN SEQ(A a, B b) WHERE a.x <= b.x WITHIN 10",
     {"plan": "order", "adapt": {"method": "invariant", "period": 5, "window": 20}}),
])
def test_an_engine_keeps_nothing_of_a_call_but_its_state_and_work(text, options):
    """A call of feed changes no attribute of the engine but its state's and the work
    it tells (the per-call values are passed along, not kept)."""
    session = cep_core.compile(text).start(**options)
    stream = _stream(np.random.default_rng(1), False) if "SAME" in text else FLIP
    assert _changed_by_feed(session, stream) <= {"work"}


@pytest.mark.parametrize("strategy", ["BL1", "BL2", "BL3", "PFetch", "LzEval", "Hybrid"])
def test_the_remote_engine_keeps_nothing_of_an_event(strategy):
    """The values of one event on the modelled device (its start, the time waited, the
    elements fetched for it, how a look-up is answered) travel in a RemoteCall: after
    feed, the engine has no attribute but its state's and the work changed, and no
    RemoteSource still holds the call of an event."""
    q, options, events = _remote(strategy, "cost")
    session = q.start(**options)
    assert _changed_by_feed(session, events) <= {"work"}
    assert session.remote_report()["fetch"]["requests"] > 0
    assert all(source.call is None for source in session.engine.sources)


def _changed_by_feed(session, stream: list[dict]) -> set[str]:
    """The attributes of ``session``'s engine that feeding ``stream`` added, removed or
    replaced."""
    before = {k: id(v) for k, v in vars(session.engine).items()}
    session.feed(stream, work_by="time")
    after = {k: id(v) for k, v in vars(session.engine).items()}
    return {k for k in before.keys() | after.keys() if after.get(k) != before.get(k)}


@pytest.mark.parametrize("kind", ["order", "tree"])
@pytest.mark.parametrize("cut", [7, 23, 31, 44])
def test_an_adaptive_engines_state_moves_with_its_plans_mid_stream(kind, cut):
    """SEQ(A a, B b) on a stream whose rare type flips: the plans replaced before and
    after the cut, their partial matches and the statistics move with the state."""
    q = cep_core.compile("PATTERN SEQ(A a, B b, A c) WHERE a.x <= c.x WITHIN 10")
    options = {"output": "matches", "plan": kind,  # (the order plan event by event; the
               # array join's state: tests/cep_core/test_adaptive_array.py)
               "adapt": {"method": "invariant", "period": 5, "window": 20, "runner": "event"}}
    whole, resumed = q.start(**options), q.start(**options)
    want = whole.run(FLIP)
    first = q.start(**options)
    got = first.feed(FLIP[:cut])
    resumed.engine.stream_state = pickle.loads(pickle.dumps(first.engine.stream_state))
    resumed.events_fed, resumed.last_time = first.events_fed, first.last_time
    got += resumed.feed(FLIP[cut:]) + resumed.flush()
    assert got == want and want
    assert resumed.counters.as_dict() == whole.counters.as_dict()
    plans = [{k: v for k, v in s.adaptation_report().items() if not k.startswith("seconds")}
             for s in (whole, resumed)]
    assert plans[0] == plans[1] and plans[0]["replacements"] >= 1
    assert resumed.engine.stream_state.nbytes > 0
    assert all(r.engine is resumed.engine for r in resumed.engine.stream_state.runners)


@pytest.fixture(scope="module")
def shedding_q1():
    """Q1 of Ch. 4 with a fitted cost model, a test stream and a unit cost that
    overloads the device."""
    query = cep_core.compile(ch4_data.Q1, time_unit="ms")
    model = fit_cost_model(query, ch4_data.make_ds1(2000, rate=40_000.0, seed=1),
                           slices=4, max_classes=10)
    test = ch4_data.make_ds1(1000, rate=40_000.0, seed=2)
    session = query.start(output="matches", engine="reference")
    session.run(test)
    span = test[-1]["time"] - test[0]["time"]
    return query, model, test, unit_cost_for(work_units(session.counters), span, 0.9) * 1.5


@pytest.mark.parametrize(("strategy", "kw"), [
    ("NS", {}), ("RI", {"bound": 0.3}), ("SI", {"ratio": 0.3}), ("RS", {"ratio": 0.3}),
    ("SS", {"bound": 0.3}), ("HyI", {"bound": 0.3}), ("HyS", {"bound": 0.3}),
    ("Hybrid", {"bound": 0.3})])
def test_the_shedding_engines_state_moves_with_its_clock_model_and_strategy(
        shedding_q1, strategy, kw):
    """Load shedding on the modelled device: the partial matches, the device clock, the
    latency window, the adapting model and what the strategy has drawn and decided move
    with the state; the matches, counters and shedding report are those of an
    uninterrupted run."""
    query, model, test, unit_cost = shedding_q1
    options = {"output": "matches",
               "shedding": SheddingConfig(strategy, unit_cost, model=model, **kw)}
    whole = query.start(**options)
    want = (whole.run(test), whole.counters.as_dict(), whole.shedding_report())
    first = query.start(**options)
    out = first.feed(test[:450])
    assert isinstance(first.engine.stream_state, SheddingState)
    second = _moved(first, query, options)
    second.events_fed, second.last_time = first.events_fed, first.last_time
    out += second.feed(test[450:]) + second.flush()
    assert want[0] and (strategy == "NS") == (
        want[2]["pms_shed"] + want[2]["events_shed"] == 0)
    assert (out, second.counters.as_dict(), second.shedding_report()) == want
    assert second.engine.stream_state.nbytes > 0
