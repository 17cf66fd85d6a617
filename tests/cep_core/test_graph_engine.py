"""The graph engine (skip-till-any-match without partial matches one by one) gives the
reference engine's matches, at the same events, on random queries of its class (Kleene
elements, predicates between singles, the previous and the newest event of a Kleene,
equalities answered by its index, windows, SAME) and random streams; it is picked
automatically for that class, and its state grows with the window, not with the subsets
of a Kleene element."""

from __future__ import annotations

import random

import pytest
from test_negation import random_stream

import cep_core
from cep_core.engine.graph import GraphEngine
from cep_core.engine.reference import ReferenceEngine
from cep_core.errors import QueryError

ANY = "skip-till-any-match"


def random_query(rng: random.Random) -> str:
    n = rng.choice([1, 2, 2, 3, 3, 4])
    items, singles, kleenes = [], [], []
    for j in range(n):
        t, v = rng.choice("ABC"), f"p{j}"
        if rng.random() < 0.35:
            items.append(f"{t}+ {v}[]")
            kleenes.append(v)
        else:
            items.append(f"{t} {v}")
            singles.append(v)
    where = []
    if rng.random() < 0.3:
        where.append("SAME[k]")
    for v in singles:
        if rng.random() < 0.3:
            where.append(f"{v}.v {rng.choice(['>', '<=', '!='])} {rng.randrange(3)}")
    for v in kleenes:
        r = rng.random()
        if r < 0.25:
            where.append(f"{v}[i].v > {rng.randrange(3)}")
        elif r < 0.45:
            where.append(f"{v}[i].v {rng.choice(['<', '=', '<='])} {v}[i+1].v")
        elif r < 0.6 and singles and singles[0] < v:
            where.append(f"{v}[i].v = {singles[0]}.v")
    if len(singles) >= 2 and rng.random() < 0.5:
        a, b = sorted(rng.sample(singles, 2))
        where.append(rng.choice([f"{a}.v = {b}.v", f"{a}.v + {b}.v = 3",
                                 f"{a}.v < {b}.v", f"{a}.k = {b}.k"]))
    if len(singles) >= 3 and rng.random() < 0.5:
        a, b, c = sorted(rng.sample(singles, 3))
        where.append(f"{a}.v + {b}.v = {c}.v")
    text = f"PATTERN SEQ({', '.join(items)})"
    if where:
        text += " WHERE " + " AND ".join(where)
    return text + f" WITHIN {rng.choice([3, 5, 8, 20])} RETURN R(p0.id AS first)"


def run(engine, stream):
    """Outputs per completing event: {event index: sorted outputs}."""
    per_event = {}
    for i, e in enumerate(stream):
        out: list = []
        engine.process(dict(e), out)
        if out:
            per_event[i] = sorted(map(str, out))
    return per_event


@pytest.mark.parametrize("seed", range(3))
def test_the_graph_engine_gives_the_reference_engine_s_matches_at_the_same_events(seed):
    rng = random.Random(seed)
    checked = 0
    for n in range(150):
        text = random_query(rng)
        plan = cep_core.compile(text).plan
        stream = random_stream(rng, rng.choice([8, 12]))
        for output in ("events", "matches"):
            got = run(GraphEngine(plan, output), stream)
            want = run(ReferenceEngine(plan, ANY, output), stream)
            assert got == want, (n, text, output, stream)
        # match sets, counted (without enumerating) and enumerated at their event
        sets = GraphEngine(plan, "sets")
        for i, e in enumerate(stream):
            out: list = []
            sets.process(dict(e), out)
            assert sum(s.count() for s in out) == len(want.get(i, ())), (n, text, i)
            assert sorted(str(m) for s in out for m in s) == want.get(i, []), (n, text, i)
        checked += bool(want)
    assert checked > 30  # enough of the cases have matches


def test_it_is_picked_for_its_class_and_explain_says_why_not_otherwise():
    q = cep_core.compile("PATTERN SEQ(A a, B+ b[], C c) WHERE a.x = c.x WITHIN 10")
    assert q.engine == "graph" and "engine: graph" in q.explain()
    assert q.engine_for("skip-till-next-match") == "reference"
    assert q.start(engine="reference").engine_name == "reference"
    assert q.start(output="matches").engine_name == "graph"
    with pytest.raises(QueryError, match="not partial matches one by one"):
        q.start().partial_matches()
    with pytest.raises(QueryError, match="graph engine does not apply"):
        q.start("skip-till-next-match", engine="graph")
    ruled_out = cep_core.compile("PATTERN SEQ(A a, B+ b[], C c) WHERE LENGTH(b[]) > 2 "
                                 "WITHIN 10")
    assert ruled_out.engine == "reference"
    assert "graph does not apply: a predicate over a Kleene variable's whole sequence" \
        in ruled_out.explain()


def test_state_grows_with_the_window_not_with_the_subsets():
    """SEQ(A a, B+ b[], C c): one A and n B events keep 2^n partial matches on the
    reference engine, n + 1 nodes here; a C then completes 2^n - 1 ... matches."""
    q = cep_core.compile("PATTERN SEQ(A a, B+ b[], C c) WITHIN 1000")
    for n in (8, 16, 48):
        session = q.start()
        session.feed([{"type": "A", "time": 0}]
                     + [{"type": "B", "time": i + 1} for i in range(n)])
        assert session.engine.live_count() == n + 1
    small = q.start()
    stream = ([{"type": "A", "time": 0}] + [{"type": "B", "time": i + 1} for i in range(10)]
              + [{"type": "C", "time": 20}])
    assert len(small.feed(stream)) == 2 ** 10 - 1
    assert small.counters.outputs == 2 ** 10 - 1


def test_nodes_leave_with_the_window():
    q = cep_core.compile("PATTERN SEQ(A a, B+ b[], C c) WITHIN 10")
    session = q.start()
    session.feed([{"type": t, "time": i} for i, t in enumerate("AB" * 50)])
    assert session.engine.live_count() <= 2 * 21 + 2  # two windows: match sets


def test_count_all_counts_each_detection_time_s_matches_without_enumerating_them():
    """RETURN R(COUNT(*) AS n): one output per event that completes matches, with their
    number, on the graph engine (counted, not enumerated) and on the reference engine
    alike; 2^48 - 1 matches of one A, 48 B and a C in well under a second."""
    rng = random.Random(11)
    for n in range(100):
        text = random_query(rng).replace("RETURN R(p0.id AS first)", "RETURN R(COUNT(*) AS n)")
        q = cep_core.compile(text)
        stream = random_stream(rng, 10)
        per_event: dict = {}
        for m in cep_core.compile(text.replace("RETURN R(COUNT(*) AS n)", "")).matches(
                [dict(e) for e in stream], engine="reference"):
            last = max(i for v in m.values() for i in (v if isinstance(v, list) else [v]))
            per_event[last] = per_event.get(last, 0) + 1
        want = [{"type": "R", "n": k, "time": stream[i]["time"]}
                for i, k in sorted(per_event.items())]
        assert q.run([dict(e) for e in stream]) == want, (n, text)
        assert q.run([dict(e) for e in stream], engine="reference") == want, (n, text)
    big = cep_core.compile("PATTERN SEQ(A a, B+ b[], C c) WITHIN 1000 RETURN R(COUNT(*) AS n)")
    stream = ([{"type": "A", "time": 0}] + [{"type": "B", "time": i + 1} for i in range(48)]
              + [{"type": "C", "time": 60}])
    assert big.run(stream) == [{"type": "R", "n": 2 ** 48 - 1, "time": 60}]


@pytest.mark.parametrize("seed", range(3))
def test_approximate_matching_gives_the_reference_engine_s_matches_and_errors(seed):
    """With max_missing=k the graph engine (paths that skip up to k positions, a node's
    error in its group's signature) gives the reference engine's matches, each with its
    least error, at the same events; equalities its index answers are not looked up
    across a skipped element."""
    rng = random.Random(100 + seed)
    checked = 0
    for n in range(100):
        text = random_query(rng)
        plan = cep_core.compile(text).plan
        k = rng.randint(1, max(1, min(2, len(plan.positions) - 1)))
        stream = random_stream(rng, rng.choice([8, 12]))
        for output in ("events", "matches"):
            got = run(GraphEngine(plan, output, k), stream)
            want = run(ReferenceEngine(plan, ANY, output, max_missing=k), stream)
            assert got == want, (n, text, k, output, stream)
        checked += bool(want)
    assert checked > 30
    assert cep_core.compile(text).engine_for(ANY, max_missing=k) == "graph"
