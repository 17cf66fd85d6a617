"""A-Seq's Chop-Connect (§4.2): shared substrings computed once, connected by snapshots
and multi-connect, give each query's own A-Seq counts (and the brute-force counts) at
every trigger, with the window's expiry exact."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from cep_core.aggregate import Element, SeqAgg, SeqAggregator, SeqQuery, seq_query
from cep_core.aggregate.chop_connect import ChopConnect, chop
from cep_core.aggregate.chop_plan import CountMax
from cep_core.aggregate.chop_planner import plan_sharing, rates_of
from cep_core.errors import QueryError
from cep_core.lang import ast


def brute(pattern: str, stream: list[dict], window: float) -> list[int]:
    """At each event of the last type: the matches ending at or before it whose first
    event is in its window (A-Seq's output, §2.1), counted afresh over the events of
    that window as subsequences of the stream."""
    out = []
    for j, e in enumerate(stream):
        if e["type"] != pattern[-1]:
            continue
        counts = [1] + [0] * len(pattern)  # counts[m]: subsequences matching pattern[:m]
        for x in stream[:j + 1]:
            if e["time"] - x["time"] > window:
                continue
            for m in range(len(pattern) - 1, -1, -1):
                if x["type"] == pattern[m]:
                    counts[m + 1] += counts[m]
        out.append(counts[-1])
    return out


def test_the_brute_force_counts_combinations():
    stream = [{"type": t, "time": i} for i, t in enumerate("ABAB")]
    matches = [c for c in itertools.combinations(range(4), 2)
               if [stream[i]["type"] for i in c] == ["A", "B"]]
    assert brute("AB", stream, 10) == [1, len(matches)]
    assert brute("AB", stream, 1) == [1, 1]  # a0 is out of b3's window


def test_chop_cuts_at_the_shared_substrings():
    assert chop("ABCDEFG", ["DE", "FG"]) == [("A", "B", "C"), ("D", "E"), ("F", "G")]
    assert chop("ABAB", ["AB"]) == [("A", "B"), ("A", "B")]
    assert chop("XYZ", ["AB"]) == [("X", "Y", "Z")]


def test_example_8_and_multi_connect_against_brute_force():
    rng = random.Random(8)
    stream = [{"type": rng.choice("ABCDEFG"), "time": t} for t in range(300)]
    plans = {"two": [("A", "B", "C"), ("D", "E")],
             "three": [("A", "B", "C"), ("D", "E"), ("F", "G")]}
    out = ChopConnect(plans, window=40).run(stream)
    assert [o["count"] for o in out["two"]] == brute("ABCDE", stream, 40)
    assert [o["count"] for o in out["three"]] == brute("ABCDEFG", stream, 40)
    assert any(o["count"] for o in out["three"])


@pytest.mark.parametrize("seed", range(4))
def test_shared_substrings_give_each_query_its_own_a_seq_counts(seed):
    rng = random.Random(seed)
    for trial in range(15):
        stream = [{"type": rng.choice("ABCD"), "time": t // rng.choice([1, 2]), "id": t}
                  for t in range(150)]
        stream.sort(key=lambda e: e["time"])
        window = rng.choice([4, 10, 25])
        shared = ["".join(rng.choice("ABCD") for _ in range(rng.choice([2, 3])))]
        queries = {f"q{k}": "".join(rng.choice("ABCD") for _ in range(rng.randint(2, 6)))
                   for k in range(rng.randint(2, 4))}
        plans = {name: chop(p, shared) for name, p in queries.items()}
        cc = ChopConnect(plans, window)
        got = cc.run(stream)
        for name, pattern in queries.items():
            want = SeqAggregator(seq_query(", ".join(pattern), within=window)).run(stream)
            assert [o["count"] for o in got[name]] == [o["count"] for o in want], \
                (trial, name, pattern, plans[name], window)
        assert len(cc.substrings) <= sum(len(p) for p in plans.values())


def test_own_pieces_are_counted_per_tag_and_never_pair_an_event_with_itself():
    """A piece no other query shares is counted per tag; here each piece starts with the
    type the one before ends with, so a connect must read the counts from before its
    event."""
    rng = random.Random(5)
    plans = {"q": [("B",), ("A", "D"), ("D", "A", "B")], "r": [("A", "D"), ("D", "A")]}
    cc = ChopConnect(plans, window=10)
    assert cc.substrings == [("B",), ("A", "D")]  # r's first piece is a substring
    for _ in range(40):
        stream = [{"type": rng.choice("ABD"), "time": t} for t in range(40)]
        out = ChopConnect(plans, window=10).run(stream)
        assert [o["count"] for o in out["q"]] == brute("BADDAB", stream, 10)
        assert [o["count"] for o in out["r"]] == brute("ADDA", stream, 10)


def test_counts_stay_exact_beyond_int64():
    stream = [{"type": t, "time": 0} for t in "A" * 40 + "B" * 40 + "C" * 40 + "D" * 40]
    plans = {"q": [("A", "B"), ("C", "D")], "whole": [("A", "B", "C", "D")]}
    out = ChopConnect(plans, window=1).run(stream)
    assert out["q"][-1]["count"] == out["whole"][-1]["count"] == 40 ** 4
    long = ChopConnect({"q": [tuple("A" * 12)]}, window=1).run([{"type": "A", "time": 0}] * 300)
    assert long["q"][-1]["count"] == math.comb(300, 12) > 2 ** 63


def test_bad_plans_are_refused():
    with pytest.raises(QueryError, match="at least one query"):
        ChopConnect({}, 10)
    with pytest.raises(QueryError, match="an empty substring"):
        ChopConnect({"q": [("A",), ()]}, 10)
    with pytest.raises(QueryError, match="window"):
        ChopConnect({"q": [("A",)]}, -1)


# --------------------------------------------------------------------------- beyond COUNT
GT2 = ast.Compare(">", ast.Attr("x", "v"), ast.Num(2))


def random_query(rng: random.Random, types: str) -> list[Element]:
    """2-5 positive elements, some with ``v > 2``, negations between them."""
    els: list[Element] = []
    for m in range(rng.randint(2, 5)):
        if m and rng.random() < 0.3:
            els.append(Element(rng.choice(types), negated=True,
                               where=GT2 if rng.random() < 0.3 else None))
        els.append(Element(rng.choice(types), where=GT2 if rng.random() < 0.25 else None))
    return els


def shared_slice(rng: random.Random, els: list[Element]) -> tuple[Element, ...]:
    """A piece of ``els`` from a positive element to a positive element."""
    pos = [i for i, e in enumerate(els) if not e.negated]
    a = rng.randrange(len(pos) - 1)
    b = rng.randrange(a + 1, len(pos))
    return tuple(els[pos[a]:pos[b] + 1])


@pytest.mark.parametrize("seed", range(6))
def test_negation_predicates_and_every_aggregate_equal_each_querys_own_a_seq(seed):
    """Chop-Connect's COUNT, SUM, AVG, MAX and MIN with negations and local predicates,
    shared substrings cut anywhere, equal each query's A-Seq results at every trigger."""
    rng = random.Random(100 + seed)
    for trial in range(12):
        stream = [{"type": rng.choice("ABCD"), "time": t // rng.choice([1, 2]), "id": t,
                   "v": rng.randint(-3, 9)} for t in range(120)]
        stream.sort(key=lambda e: e["time"])
        window = rng.choice([3, 8, 20])
        queries = {f"q{k}": random_query(rng, "ABCD") for k in range(rng.randint(2, 4))}
        base = rng.choice(list(queries.values()))
        for name in rng.sample(list(queries), 2):              # two queries hold it
            queries[name] = random_query(rng, "ABCD")[:2] + list(shared_slice(rng, base))
        shared = [shared_slice(rng, base)]
        aggs = {}
        for name, els in queries.items():
            n = sum(not e.negated for e in els)
            aggs[name] = [SeqAgg("COUNT"), SeqAgg("SUM", rng.randint(1, n), "v", "s"),
                          SeqAgg("AVG", rng.randint(1, n), "v", "a"),
                          SeqAgg("MAX", rng.randint(1, n), "v", "hi"),
                          SeqAgg("MIN", rng.randint(1, n), "v", "lo")]
        plans = {name: chop(els, shared) for name, els in queries.items()}
        got = ChopConnect(plans, window, aggs).run(stream)
        for name, els in queries.items():
            want = SeqAggregator(SeqQuery(tuple(els), window, tuple(aggs[name]))).run(stream)
            ctx = (trial, name, plans[name], window)
            assert [o["count"] for o in got[name]] == [o["count"] for o in want], ctx
            for label in ("s", "a", "hi", "lo"):
                for g, w in zip(got[name], want, strict=True):
                    assert (g[label] is None) == (w[label] is None), ctx
                    assert g[label] is None or math.isclose(g[label], w[label],
                                                            rel_tol=1e-9, abs_tol=1e-9), ctx


def test_a_negation_between_pieces_resets_the_earlier_pieces_complete_counts():
    """``SEQ(A, B, !N, C, D)`` chopped as (A, B), (!N, C, D): an N between B and C
    removes the matches whose B came before it."""
    q = [Element("A"), Element("B"), Element("N", negated=True), Element("C"), Element("D")]
    stream = [{"type": t, "time": i} for i, t in enumerate("ABNBCD")]
    out = ChopConnect({"q": chop(q, [tuple(q[3:])])}, 10).run(stream)
    assert [o["count"] for o in out["q"]] == [1]                  # only A0 B3 C4 D5
    assert [o["count"] for o in SeqAggregator(SeqQuery(tuple(q), 10)).run(stream)] == [1]


def test_the_count_max_pairs_form_a_semiring():
    """MAX rides on the (count, max) semiring: sums and products of pairs, numbers as
    (k, -inf), zero where the count is."""
    a, b = CountMax(2, 5.0), CountMax(3, 7.0)
    assert ((a + b).c, (a + b).m) == (5, 7.0)
    assert ((a * b).c, (a * b).m) == (6, 7.0)
    assert ((a * 0).c, (a * 0).m) == (0, -math.inf)
    assert ((0 + a).c, (0 + a).m) == (2, 5.0) and ((3 * a).c, (3 * a).m) == (6, 5.0)
    with pytest.raises(QueryError, match="needs element.attr"):
        ChopConnect({"q": [("A", "B")]}, 5, {"q": ["MAX"]})


def test_the_plan_chosen_by_cost_shares_where_the_shared_events_dominate():
    """plan_sharing shares a sub-pattern whose later types are frequent and whose START
    and the queries' triggers are rare, not when every type is as frequent; the planned
    engine's counts equal each query's A-Seq."""
    rng = random.Random(3)
    weights = {"A": 1, "B": 20, "C": 20, "X": 1, "Y": 1, "Z": 1, "W": 1}
    types = rng.choices(list(weights), weights=list(weights.values()), k=3000)
    stream = [{"type": t, "time": i} for i, t in enumerate(types)]
    patterns = {"q": "XABCY", "r": "ZABCW", "s": "XABCW"}
    cc = ChopConnect.planned(patterns, 60, rates_of(stream[:600]))
    assert cc.plan.shared == [("A", "B", "C")]
    assert cc.plan.cost < cc.plan.cost_unshared
    got = cc.run(stream)
    for name, p in patterns.items():
        want = SeqAggregator(seq_query(", ".join(p), within=60)).run(stream)
        assert [o["count"] for o in got[name]] == [o["count"] for o in want]
    uniform = rates_of([{"type": t, "time": i} for i, t in enumerate("ABCXYZW" * 50)])
    assert plan_sharing(patterns, uniform, 60).shared == []
