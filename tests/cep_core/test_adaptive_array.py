"""The adaptive order plan over batches with arrays (cep_core.adaptive.array_engine, the
join of cep_core.adaptive.array_join): on random sequences and random streams whose
rates drift, under every decision method, it finds exactly the text-order plan's
matches at the same events, however the stream is cut into batches, and its plans and
statistics do not depend on the cuts either."""

from __future__ import annotations

import pickle
import random
from collections import Counter

import pytest

import cep_core
from cep_core.adaptive.array_engine import ArrayOrderEngine, array_problem
from cep_core.adaptive.engine import AdaptiveEngine
from cep_core.errors import QueryError
from tests.cep_core.test_adaptive import drifting_stream as drifting_stream_of


def random_sequence(rng: random.Random) -> str:
    """SEQ of 2-6 events of types A-D (repeats allowed), with unary, binary (any two
    positions), arithmetic and equality predicates, sometimes SAME[k], a window."""
    n = rng.randint(2, 6)
    elems = [f"{rng.choice('ABCD')} v{j}" for j in range(n)]
    where = ["SAME[k]"] if rng.random() < 0.3 else []
    for _ in range(rng.randint(0, 4)):
        a, b = rng.sample(range(n), 2)
        where.append(rng.choice([f"v{a}.x < v{b}.x", f"v{a}.x = v{b}.x",
                                 f"v{a}.x > {rng.randrange(3)}", f"v{a}.x + v{b}.x <= 4",
                                 f"v{a}.k != v{b}.k"]))
    text = f"PATTERN SEQ({', '.join(elems)})"
    if where:
        text += " WHERE " + " AND ".join(where)
    return text + f" WITHIN {rng.choice([2, 4.5, 9])}"


def drifting_stream(rng: random.Random, n: int) -> list[dict]:
    """Types A-D whose frequencies change every n/3 events; times with ties, in
    half-steps."""
    return drifting_stream_of(rng, n, steps=(0, 0.5, 1, 1.5))


ADAPTS = [None, {"method": "unconditional"}, {"method": "threshold", "t": 0.3},
          {"method": "invariant"}, {"method": "invariant", "d": "avg"},
          {"method": "invariant", "d": "meta"}]


def _cuts(rng: random.Random, stream: list[dict]) -> list[list[dict]]:
    """The stream cut into batches of random sizes (1 to 40 events)."""
    out, i = [], 0
    while i < len(stream):
        k = rng.randint(1, 40)
        out.append(stream[i:i + k])
        i += k
    return out


def _report(session) -> dict:
    return {k: v for k, v in session.adaptation_report().items() if not k.startswith("seconds")}


@pytest.mark.parametrize("seed", range(10))
def test_the_array_join_finds_the_text_order_matches_at_their_events(seed):
    rng = random.Random(seed)
    replaced = 0
    for _ in range(3):
        q = cep_core.compile(random_sequence(rng))
        stream = drifting_stream(rng, 120)
        ref = q.start(output="matches", engine="reference")
        want = [Counter(str(sorted(m.items())) for m in ref.feed([e])) for e in stream]
        for adapt in ADAPTS:
            adapt = {**(adapt or {"method": "static"}), "period": rng.choice([1, 3]),
                     "window": rng.choice([5, 12])}
            s = q.start(output="matches", plan="order", adapt=adapt)
            assert isinstance(s.engine, ArrayOrderEngine), q.query
            got = [Counter(str(sorted(m.items())) for m in s.feed([e])) for e in stream]
            assert got == want, (q.query, adapt)
            replaced += s.adaptation_report()["replacements"]
    assert replaced > 10  # plans were replaced between the matches' events


@pytest.mark.parametrize("seed", range(6))
def test_batches_cut_anywhere_give_the_same_matches_plans_and_statistics(seed):
    rng = random.Random(100 + seed)
    q = cep_core.compile(random_sequence(rng))
    stream = drifting_stream(rng, 300)
    adapt = {"method": "invariant", "d": rng.choice([0.0, "avg"]), "period": 2, "window": 10}
    whole = q.start(output="matches", plan="order", adapt=adapt)
    got_whole = whole.feed(stream)
    cut = q.start(output="matches", plan="order", adapt=adapt)
    got_cut = [m for batch in _cuts(rng, stream) for m in cut.feed(batch)]
    want = q.start(output="matches", engine="reference").run(stream)
    key = [str(sorted(m.items())) for m in want]
    assert sorted(str(sorted(m.items())) for m in got_whole) == sorted(key)
    assert got_cut == got_whole  # in the order of their last events, within one alike
    assert _report(cut) == _report(whole) and _report(whole)["checks"] > 10
    by_event = q.start(output="matches", plan="order", adapt={**adapt, "runner": "event"})
    by_event.feed(stream)  # D is asked at the same events (of any type)
    assert by_event.adaptation_report()["checks"] == _report(whole)["checks"]
    for part in ("window", "events_per_type"):  # (the join's work depends on the cuts)
        assert cut.statistics[part] == whole.statistics[part]
    assert cut.counters.as_dict()["outputs"] == len(want)


def test_records_with_return_carry_the_time_of_their_last_event():
    q = cep_core.compile("PATTERN SEQ(A a, B b, C c) WHERE a.x < c.x WITHIN 6 "
                         "RETURN R(a.x AS ax, c.x AS cx)")
    rng = random.Random(7)
    stream = drifting_stream(rng, 200)
    want = q.start(engine="reference").run(stream)
    s = q.start(plan="order", adapt={"method": "unconditional", "period": 2, "window": 8})
    got = s.feed(stream[:77]) + s.feed(stream[77:]) + s.flush()
    assert isinstance(s.engine, ArrayOrderEngine)
    assert sorted(map(str, got)) == sorted(map(str, want)) and want


def test_its_state_moves_mid_stream_with_the_plans_and_samples():
    rng = random.Random(11)
    q = cep_core.compile("PATTERN SEQ(A a, B b, A c) WHERE SAME[k] AND a.x <= c.x WITHIN 10")
    stream = drifting_stream(rng, 240)
    options = {"output": "matches", "plan": "order",
               "adapt": {"method": "invariant", "period": 5, "window": 20}}
    whole = q.start(**options)  # (cut at the same event: the join's work depends on cuts)
    want = whole.feed(stream[:131]) + whole.feed(stream[131:]) + whole.flush()
    first = q.start(**options)
    got = first.feed(stream[:131])
    resumed = q.start(**options)
    resumed.engine.stream_state = pickle.loads(pickle.dumps(first.engine.stream_state))
    resumed.events_fed, resumed.last_time = first.events_fed, first.last_time
    got += resumed.feed(stream[131:]) + resumed.flush()
    assert got == want and want
    assert resumed.counters.as_dict() == whole.counters.as_dict()
    assert _report(resumed) == _report(whole) and _report(whole)["replacements"] >= 1
    assert resumed.engine.stream_state.nbytes > 0


def test_the_runner_option_and_what_the_array_join_leaves_to_the_event_runner():
    seq = cep_core.compile("PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 5")
    assert isinstance(seq.start(plan="order").engine, ArrayOrderEngine)
    assert isinstance(seq.start(plan="order", adapt={"runner": "event"}).engine,
                      AdaptiveEngine)
    assert isinstance(seq.start(plan="tree").engine, AdaptiveEngine)
    with pytest.raises(QueryError, match="unknown runner 'fast'; one of array, event"):
        seq.start(plan="order", adapt={"runner": "fast"})
    for text, why in (("PATTERN SEQ(A a, NEG C n, B b) WITHIN 5", "NEG"),
                      ("PATTERN SEQ(A a, B+ b[]) WITHIN 5", "Kleene"),
                      ("PATTERN AND(A a, B b) WITHIN 5", "AND"),
                      ("PATTERN SEQ(A a, B b) WITHIN 5 RETURN R(COUNT(*) AS n)", "COUNT"),
                      ("PATTERN (SEQ(A a, B b) OR SEQ(C c, D d)) WITHIN 5", "disjunction")):
        q = cep_core.compile(text)
        assert why in array_problem(q.plan)
        engine = q.start(plan="order").engine
        assert engine.name == "adaptive-order" and not isinstance(engine, ArrayOrderEngine)


def test_an_event_without_an_attribute_a_predicate_reads_is_an_error():
    q = cep_core.compile("PATTERN SEQ(A a, B b) WHERE a.x > 1 WITHIN 5")
    s = q.start(plan="order")
    s.feed([{"type": "B", "time": 0, "y": 1}, {"type": "C", "time": 1}])  # (B: no x read)
    with pytest.raises(QueryError, match="type A has no attribute 'x'"):
        s.feed([{"type": "A", "time": 2}])


@pytest.mark.parametrize("text, keys", [
    ("PATTERN SEQ(A a, B b, A c) WHERE a.x <= c.x WITHIN 10", 2),
    ("PATTERN SEQ(A a, A b, B c) WHERE a.x < b.x AND b.x + c.x <= 4 WITHIN 6", 2),
    ("PATTERN SEQ(A a, B b) WHERE SAME[k] AND a.x < b.x WITHIN 10", 12),
    ("PATTERN SEQ(A a, B b, A c) WHERE SAME[k] AND a.x <= c.x WITHIN 10", 7)])
def test_the_selectivity_samples_are_the_event_runners_whatever_the_cuts(text, keys):
    rng = random.Random(keys)
    stream = drifting_stream(rng, 400)
    for e in stream:
        e["k"] = rng.randrange(keys)
    q = cep_core.compile(text)
    adapt = {"method": "invariant", "period": 5, "window": 30}
    by_event = q.start(output="matches", plan="order", adapt={**adapt, "runner": "event"})
    whole = q.start(output="matches", plan="order", adapt=adapt)
    cut = q.start(output="matches", plan="order", adapt=adapt)
    assert isinstance(cut.engine, ArrayOrderEngine)
    moved = set()
    for batch in _cuts(rng, stream):
        by_event.feed(batch)
        cut.feed(batch)
        want = by_event.statistics["window"]["selectivity"]
        assert cut.statistics["window"]["selectivity"] == want
        moved.update(want.values())
    whole.feed(stream)
    assert whole.statistics["window"] == cut.statistics["window"]
    assert len(moved) > 3  # the estimates left the prior and changed


def test_partition_keys_beyond_what_int64_keys_hold_are_an_error(monkeypatch):
    import numpy as np

    from cep_core.adaptive import array_join
    monkeypatch.setattr(array_join, "STRIDE", np.int64(1) << np.int64(60))  # room: 7 codes
    q = cep_core.compile("PATTERN SEQ(A a, B b) WHERE SAME[k] AND a.x < b.x WITHIN 50")
    s = q.start(output="matches", plan="order")
    stream = [{"type": "AB"[i % 2], "time": i, "x": i % 3, "k": i // 2, "id": i}
              for i in range(12)]
    want = q.start(output="matches", engine="reference").run(stream)
    assert s.feed(stream) == want and want  # codes 0-5: the keys fit
    with pytest.raises(OverflowError, match="7 partition keys \\(at most 6\\)"):
        s.feed([{"type": "A", "time": 12, "x": 0, "k": 6, "id": 12}])


def test_a_predicate_numpy_does_not_evaluate_is_raised_anew_each_time():
    from cep_core.adaptive.array_engine import _compiled
    from cep_core.engine.vectorize import Unsupported
    q = cep_core.compile("PATTERN SEQ(A a, B b) WHERE a.x < p WITHIN 5", params={"p": {"u": 1}})
    raised = []
    for _ in range(2):
        with pytest.raises(Unsupported, match="parameter p") as got:
            _compiled(q.plan)
        raised.append(got.value)
    assert raised[0] is not raised[1]  # (a stored exception would grow its traceback)
