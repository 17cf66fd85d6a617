"""One engine protocol (cep_core.engine.protocol): every engine answers it, and a session
runs any of them through it alone."""

from __future__ import annotations

import ast
import inspect
from dataclasses import FrozenInstanceError

import numpy as np
import pandas as pd
import pytest

import cep_core
from cep_core.aggregate import (
    ChopConnect,
    PreTree,
    SeqAggregator,
    StreamAggregation,
    seq_query,
)
from cep_core.aggregate.engine import SeqEngine
from cep_core.approx.matchnodes import MatchNodeEngine
from cep_core.approx.rc_acep import BudgetedMatcher
from cep_core.engine.keyed_stepper import KeyedStepper
from cep_core.engine.matching import CountMerging
from cep_core.engine.options import EngineOptions
from cep_core.engine.protocol import Engine, EngineBase, StepFeeding
from cep_core.errors import QueryError
from cep_core.query import Session
from cep_core.registry import CHOICES, ENGINES
from cep_core.remote import KeyedFetcher, LatencyModel, RemoteConfig, RemoteSource
from cep_core.shedding import KeyedShedder, SheddingConfig
from cep_core.shedding.engine import TracingEngine

SEQ = "PATTERN SEQ(A a, B b) WHERE b.v > a.v WITHIN 10"
KEYED = "PATTERN SEQ(A a, B b) WHERE SAME[k] AND b.v > a.v WITHIN 10 RETURN R(a.v AS x)"
AGG = "SELECT SUM(v) AS n FROM A STREAM GROUP BY time RETURN N(time, n)"
STREAM = [{"type": t, "time": i, "v": i % 4, "k": i % 2} for i, t in enumerate("ABABBA")]


def _keyed_session():
    return cep_core.compile(KEYED).start("strict-contiguity", runs="one-per-partition")


def _engines() -> dict[str, Engine]:
    """One engine of each of the seventeen classes, as compile/start or their own
    constructors build them."""
    seq, keyed = cep_core.compile(SEQ), cep_core.compile(KEYED)
    source = RemoteSource({0: 1, 1: 2}, latency=LatencyModel("fixed", value=1.0), names=("R",))
    remote = cep_core.compile("PATTERN SEQ(A a, B b) WHERE b.v = R[a.k] WITHIN 10",
                              remote={"R": source})
    keyed_source = RemoteSource({(k, t): 1 for k in (0, 1) for t in range(len(STREAM))},
                                latency=LatencyModel("fixed", value=0.5), names=("L",))
    fetched = cep_core.compile("PATTERN SEQ(A a, B b) WHERE SAME[k] AND b.v > L[a.k, a.time]"
                               " WITHIN 10 RETURN R(a.v AS x)", remote={"L": keyed_source})
    return {
        "reference": seq.start(engine="reference").engine,
        "graph": seq.start().engine,
        "keyed": keyed.start("strict-contiguity", runs="one-per-partition").engine,
        "adaptive": seq.start(plan="order", adapt={"runner": "event"}).engine,
        "adaptive-array": seq.start(plan="order").engine,
        "adaptive-or": cep_core.compile("PATTERN (SEQ(A a, B b) OR SEQ(B c, A d)) WITHIN 5")
        .start(plan="order").engine,
        "shedding": seq.start(shedding=SheddingConfig("NS", unit_cost=1.0)).engine,
        "remote": remote.start(remote=RemoteConfig("BL1")).engine,
        "aggregation": cep_core.compile(AGG).start().engine,
        "aseq": SeqAggregator(seq_query("A a, B b", within=5)),
        "match-node": MatchNodeEngine(seq.plan, 1),
        "pretree": PreTree([seq_query("A a, B b", within=5, name="ab"),
                            seq_query("A a, B b, A c", within=5, name="aba")]),
        "chop-connect": ChopConnect({"ab": [("A", "B")], "aba": [("A", "B"), ("A",)]}, 5),
        "rc-acep": BudgetedMatcher(seq.plan, 1),
        "tracing": TracingEngine(seq.plan, "skip-till-any-match"),
        "keyed-shedding": KeyedShedder(_keyed_session(), "NS", lambda k: k * 0, np.ones(1)),
        "keyed-remote": KeyedFetcher(
            fetched.start("strict-contiguity", runs="one-per-partition"), keyed_source, "L",
            ("k", "time"), lambda k: k * 0, 1, "BL1"),
    }


def _batch(kind: str) -> object:
    """The stream as the engine takes it: a step of events at one time for the steppers
    (load shedding and remote data on the keyed engine), dicts with ids otherwise."""
    if kind.startswith("keyed-"):
        return pd.DataFrame(STREAM).assign(time=0)
    return [dict(e, id=n) for n, e in enumerate(STREAM)]


def _engine_classes(base: type = EngineBase) -> set[type]:
    """Every public engine class of cep_core: the subclasses of EngineBase defined in
    cep_core but the bases of engines (StepFeeding, CountMerging, KeyedStepper);
    subclasses outside it (an experiment's instrumented engine) are not cep_core's."""
    found = set()
    for sub in base.__subclasses__():
        found |= _engine_classes(sub)
        if (sub.__module__.startswith("cep_core.") and not sub.__name__.startswith("_")
                and sub not in (StepFeeding, CountMerging, KeyedStepper)):
            found.add(sub)
    return found


def test_every_engine_class_answers_the_protocol():
    engines = _engines()
    assert len({type(e) for e in engines.values()}) == 17
    assert _engine_classes() <= {type(e) for e in engines.values()}
    for kind, eng in engines.items():
        assert isinstance(eng, Engine), kind
        assert isinstance(eng.name, str) and eng.name, kind
        out = eng.feed(_batch(kind), False)
        out += eng.flush()
        assert isinstance(out, list), kind
        assert eng.counters.events > 0, kind
        assert isinstance(eng.statistics(), dict), kind
        if eng.reports is not None:
            assert isinstance(eng.report(), dict), kind


def test_the_a_seq_state_is_a_part_of_its_engines_not_an_engine():
    assert not isinstance(SeqEngine([seq_query("A a, B b", within=5)], None, None), Engine)
    assert "Not an engine of the protocol" in " ".join(SeqEngine.__doc__.split())


def test_several_queries_feed_in_trigger_order_and_run_per_query():
    """PreTree and Chop-Connect: feed gives each query's outputs (the same as run's per
    query) in stream order, each naming its query."""
    events = [dict(e, id=n) for n, e in enumerate(STREAM)]
    for kind in ("pretree", "chop-connect"):
        fed, whole = _engines()[kind].feed(events), _engines()[kind].run(events)
        assert {rec["query"] for rec in fed} == set(whole)
        for name, outs in whole.items():
            assert [{k: v for k, v in rec.items() if k != "query"} for rec in fed
                    if rec["query"] == name] == outs
        assert [rec["trigger_id"] for rec in fed] == sorted(rec["trigger_id"] for rec in fed)


def test_a_stepper_feeds_a_step_as_its_session_does():
    """Load shedding that sheds nothing gives the outputs and counters of the session."""
    plain, shedder = _keyed_session(), _engines()["keyed-shedding"]
    step = _batch("keyed-shedding")
    assert shedder.feed(step).equals(plain.feed(step, as_frame=True))
    assert shedder.counters.as_dict() == plain.counters.as_dict()
    assert shedder.policy == "strict-contiguity" and shedder.reports == "shedding"
    with pytest.raises(QueryError, match="masks its steps itself"):
        shedder.feed(step, keep=np.ones(len(step), dtype=bool))


def test_explain_and_start_read_each_registered_engines_own_refusal():
    assert {c.cls.name for c in CHOICES} <= set(ENGINES)
    q = cep_core.compile(SEQ)
    refusals = q.refusals()
    assert refusals == {c.cls.name: c.cls.refusal(q.plan, c.home) for c in CHOICES}
    assert refusals["graph"] is None and "no SAME" in refusals["keyed-vectorized"]
    assert f"keyed-vectorized does not apply: {refusals['keyed-vectorized']}" in q.explain()
    assert cep_core.compile(KEYED).refusals()["keyed-vectorized"] is None


def test_feed_gives_the_same_outputs_as_the_old_ways_of_feeding():
    """feed over a batch equals process one by one (match-node) and run (A-Seq)."""
    seq = cep_core.compile(SEQ)
    events = [dict(e, id=n) for n, e in enumerate(STREAM)]
    assert MatchNodeEngine(seq.plan, 1).feed(events) == MatchNodeEngine(seq.plan, 1).run(
        events)
    q = seq_query("A a, B b", within=5)
    assert SeqAggregator(q).feed(events, frame=True).equals(
        pd.DataFrame(SeqAggregator(q).run(events)))


def test_reports_are_each_engines_own_and_refused_elsewhere():
    engines = _engines()
    assert {k: e.reports for k, e in engines.items() if e.reports} == {
        "adaptive": "adaptation", "adaptive-array": "adaptation",
        "adaptive-or": "adaptation", "shedding": "shedding",
        "remote": "remote", "rc-acep": "rc-acep", "keyed-shedding": "shedding",
        "keyed-remote": "remote"}
    for kind in ("adaptive", "adaptive-array", "adaptive-or", "shedding", "remote"):
        assert isinstance(engines[kind].report(), dict)
    with pytest.raises(QueryError, match="the graph engine keeps no report"):
        engines["graph"].report()
    session = cep_core.compile(SEQ).start()
    with pytest.raises(QueryError, match="runs without load shedding"):
        session.shedding_report()
    with pytest.raises(QueryError, match="runs the text-order plan"):
        session.adaptation_report()
    with pytest.raises(QueryError, match="live_runs\\(\\) is a feature of the keyed"):
        session.live_runs()
    with pytest.raises(QueryError, match="keep= masks a batch on the keyed"):
        session.feed(STREAM, keep=[True] * len(STREAM))


def test_a_session_runs_its_engine_through_the_protocol_alone():
    """No isinstance, hasattr or getattr in Session: what differs is each engine's."""
    tree = ast.parse(inspect.getsource(Session))
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name)}
    assert not calls & {"isinstance", "hasattr", "getattr"}


def test_work_by_books_each_values_work_on_every_engine():
    """feed(work_by=) on an engine stepping event by event equals feeding each value's
    events as a batch of its own."""
    q = cep_core.compile(SEQ)
    whole = q.start(engine="reference")
    out = whole.feed(STREAM, work_by="time")
    apart = q.start(engine="reference")
    parts = [apart.feed([e]) for e in STREAM]
    assert out == [x for p in parts for x in p]
    assert whole.work.events.sum() == len(STREAM)
    assert whole.counters.as_dict() == apart.counters.as_dict()


def test_start_takes_one_frozen_options_object_or_its_fields():
    q = cep_core.compile(KEYED)
    options = EngineOptions("strict-contiguity", runs="one-per-partition")
    with pytest.raises(FrozenInstanceError):
        options.policy = "skip-till-next-match"  # type: ignore[misc]
    by_object, by_fields = q.start(options), q.start("strict-contiguity",
                                                     runs="one-per-partition")
    assert by_object.engine_name == by_fields.engine_name == "keyed-vectorized"
    assert by_object.feed(STREAM) == by_fields.feed(STREAM)


@pytest.mark.parametrize(("options", "message"), [
    ({"shedding": SheddingConfig("NS", unit_cost=1.0), "max_missing": 1},
     "max_missing does not apply with remote data or load shedding on the modelled device"),
    ({"shedding": SheddingConfig("NS", unit_cost=1.0), "input_filter": bool},
     "load shedding applies to pattern queries without input or state filters of their own"),
    ({"remote": RemoteConfig("BL1"), "state_filter": list},
     "remote data on the modelled device applies to pattern queries without filters or "
     "shedding"),
    ({"output": "sets", "max_missing": 1},
     "output='sets' gives match sets, which do not carry the number of missing elements"),
    ({"output": "sets", "engine": "reference"},
     "output='sets' \\(match sets enumerated on demand\\) needs the graph engine"),
    ({"engine": "keyed-vectorized"},
     "the keyed-vectorized engine does not apply: no SAME"),
    ({"engine": "graph", "input_filter": bool},
     "the graph engine does not apply: it runs skip-till-any-match with runs='every-event' "
     "and no filters"),
    ({"engine": "fast"}, "unknown engine 'fast'"),
])
def test_each_engine_refuses_the_options_it_does_not_run(options, message):
    with pytest.raises(QueryError, match=message):
        cep_core.compile(SEQ).start(**options)


def test_an_aggregation_refuses_filters_and_other_outputs():
    with pytest.raises(QueryError, match="aggregation queries take no filters and output "
                                         "events"):
        cep_core.compile(AGG).start(output="matches")
    assert StreamAggregation.refusal(None, EngineOptions()) is None


def test_a_compiled_query_keeps_no_session_and_its_sessions_tell_the_counters():
    q = cep_core.compile(SEQ)
    out = q.run(STREAM)
    assert not any(isinstance(v, Session) for v in vars(q).values())
    session = q.start()
    assert session.run(STREAM) == out and session.counters.events == len(STREAM)
    assert session.run([], as_frame=True).empty
