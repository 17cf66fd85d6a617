"""The reference engine (cep_core.engine.reference) and query compilation (cep_core.query).

Oracles: Table 2.4 of the dissertation (§2.2.2, Example 2.7), hand-worked
streams (Listing 6.1), and a brute-force enumerator of all index subsequences of a stream
(Definition 2.7) for skip-till-any-match.
"""

from __future__ import annotations

import itertools
import pickle
import random
import re

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from listings import FIXTURE, FUNCTION, load_listings, parse_params

import cep_core
from cep_core import CompiledQuery, QueryError, QuerySemanticError
from cep_core.lang import ast
from cep_core.lookup import NOT_YET, Lookup, TableLookup

ANY, NEXT, STRICT = "skip-till-any-match", "skip-till-next-match", "strict-contiguity"
POLICIES = (ANY, NEXT, STRICT)


def ev(spec: str, **attrs) -> dict:
    """``ev("a1")``: an event of type A at time 1 with id "a1"."""
    m = re.fullmatch(r"([a-z]+)(\d+)", spec)
    typ, t = m.group(1).upper(), int(m.group(2))
    return {"type": typ, "time": t, "id": spec, **attrs}


def stream(text: str) -> list[dict]:
    return [ev(s) for s in text.split()]


def flat(match: dict, order: str = "abc") -> str:
    """{a: "a1", b: "b2", c: "a4"} -> "a1b2a4" (variables in ``order``)."""
    parts = []
    for v in order:
        if v in match:
            x = match[v]
            parts.append("".join(x) if isinstance(x, list) else x)
    return "".join(parts)


# --------------------------------------------------------------------------- Table 2.4
TABLE_24 = "PATTERN SEQ(A a, B b, A c) WITHIN 10"
TABLE_24_STREAM = "a1 b2 b3 a4 b5 a6"
# Table 2.4, row by row: (live partial matches, complete matches emitted at this event)
TABLE_24_GREEDY = [
    ({"a1"}, set()),
    ({"a1", "a1b2"}, set()),
    ({"a1", "a1b2", "a1b3"}, set()),
    ({"a1", "a1b2", "a1b3", "a4"}, {"a1b2a4", "a1b3a4"}),
    ({"a1", "a1b2", "a1b3", "a1b5", "a4", "a4b5"}, set()),
    ({"a1", "a1b2", "a1b3", "a1b5", "a4", "a4b5", "a6"}, {"a1b2a6", "a1b3a6", "a1b5a6", "a4b5a6"}),
]
TABLE_24_NON_GREEDY = [
    ({"a1"}, set()),
    ({"a1b2"}, set()),
    ({"a1b2"}, set()),
    ({"a4"}, {"a1b2a4"}),
    ({"a4b5"}, set()),
    ({"a6"}, {"a4b5a6"}),
]


def table_24_ast() -> ast.PatternQuery:
    return ast.PatternQuery(
        pattern=ast.Seq((ast.EventElem("A", "a"), ast.EventElem("B", "b"),
                         ast.EventElem("A", "c"))),
        within=ast.Within(10))


@pytest.mark.parametrize("policy,rows", [(ANY, TABLE_24_GREEDY), (NEXT, TABLE_24_NON_GREEDY)])
@pytest.mark.parametrize("from_text", [True, False])
def test_table_2_4_row_by_row(policy, rows, from_text):
    q = cep_core.compile(TABLE_24 if from_text else table_24_ast())
    session = q.start(policy, output="matches", engine="reference")
    for e, (live, complete) in zip(stream(TABLE_24_STREAM), rows, strict=True):
        out = session.feed([e])
        assert {flat(m) for m in out} == complete, e["id"]
        assert len(out) == len(complete)
        assert {flat(m) for m in session.partial_matches()} == live, e["id"]
    assert session.flush() == []


def test_table_2_4_emission_order_and_outputs():
    q = cep_core.compile(TABLE_24)
    got = [flat(m) for m in q.matches(stream(TABLE_24_STREAM), engine="reference")]
    assert got == ["a1b2a4", "a1b3a4", "a1b2a6", "a1b3a6", "a1b5a6", "a4b5a6"]
    # the graph engine (the default here) emits the same matches at the same events
    assert sorted(flat(m) for m in q.matches(stream(TABLE_24_STREAM))) == sorted(got)
    # no RETURN: the bindings themselves
    out = q.run(stream(TABLE_24_STREAM), policy=NEXT)
    assert [(o["a"]["id"], o["b"]["id"], o["c"]["id"]) for o in out] == [
        ("a1", "b2", "a4"), ("a4", "b5", "a6")]


# --------------------------------------------------------------------------- strict contiguity
def test_strict_contiguity_table_2_4_stream():
    # a1 b2 | b3 breaks a1b2 | a4 b5 a6 is contiguous
    q = cep_core.compile(TABLE_24)
    session = q.start(STRICT, output="matches")
    assert [flat(m) for m in session.run(stream(TABLE_24_STREAM))] == ["a4b5a6"]
    assert session.counters.pm_dropped == 1  # <a1 b2> ended by b3


def test_strict_contiguity_per_partition():
    q = cep_core.compile("PATTERN SEQ(A a, B b) WHERE SAME[k] WITHIN 10")
    s = [ev("a1", k=1), ev("a2", k=2), ev("b3", k=2), ev("b4", k=1),  # other partition between
         ev("a5", k=1), ev("c6", k=1), ev("b7", k=1),                  # C of the same partition
         ev("a8", k=3), ev("c9", k=4), ev("b10", k=3)]                 # C of another partition
    assert [flat(m) for m in q.matches(s, STRICT)] == ["a2b3", "a1b4", "a8b10"]
    # skip-till-next-match skips the C
    assert [flat(m) for m in q.matches(s, NEXT)] == ["a2b3", "a1b4", "a5b7", "a8b10"]


def test_strict_contiguity_kleene():
    q = cep_core.compile("PATTERN SEQ(A a, B+ b[], C c) WITHIN 10")
    assert [flat(m) for m in q.matches(stream("a1 b2 b3 c4"), STRICT)] == ["a1b2b3c4"]
    assert q.matches(stream("a1 b2 d3 b4 c5"), STRICT) == []


# --------------------------------------------------------------------------- Kleene
KLEENE = "PATTERN SEQ(A a, B+ b[], C c) WITHIN 10"


def test_kleene_any_match_all_subsets_once():
    q = cep_core.compile(KLEENE)
    got = q.matches(stream("a1 b2 b3 b4 c5"))
    assert sorted(flat(m) for m in got) == sorted(
        ["a1b2c5", "a1b3c5", "a1b4c5", "a1b2b3c5", "a1b2b4c5", "a1b3b4c5", "a1b2b3b4c5"])
    assert all(isinstance(m["b"], list) for m in got)


def test_kleene_next_match_extends_greedily():
    q = cep_core.compile(KLEENE)
    assert [flat(m) for m in q.matches(stream("a1 b2 d3 b4 c5"), NEXT)] == ["a1b2b4c5"]
    # a B failing the Kleene predicate is skipped, not taken
    q = cep_core.compile("PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v < b[i+1].v WITHIN 10")
    s = [ev("a1"), ev("b2", v=1), ev("b3", v=0), ev("b4", v=5), ev("c5")]
    assert [flat(m) for m in q.matches(s, NEXT)] == ["a1b2b4c5"]
    assert sorted(flat(m) for m in q.matches(s, ANY)) == sorted(
        ["a1b2c5", "a1b3c5", "a1b4c5", "a1b2b4c5", "a1b3b4c5"])


def test_kleene_next_match_rule_take_first_and_emit_completions():
    """At a Kleene state an event that both extends the Kleene and completes the match:
    the completed match is emitted and the run keeps the Kleene extension (one run per
    start event, no completion lost)."""
    q = cep_core.compile("PATTERN SEQ(A+ a[], A b) WITHIN 10")
    got = [(m["a"], m["b"]) for m in q.matches(stream("a1 a2 a3"), NEXT)]
    assert got == [(["a1"], "a2"), (["a1", "a2"], "a3"), (["a2"], "a3")]
    s = q.start(NEXT, output="matches")
    s.feed(stream("a1 a2 a3"))
    assert sorted(flat(m, "ab") for m in s.partial_matches()) == ["a1a2a3", "a2a3", "a3"]
    # skip-till-any-match: every split
    got = sorted((tuple(m["a"]), m["b"]) for m in q.matches(stream("a1 a2 a3"), ANY))
    assert got == [(("a1",), "a2"), (("a1",), "a3"), (("a1", "a2"), "a3"), (("a2",), "a3")]


def test_kleene_next_match_rule_forward_only_when_take_fails():
    """When the next element is not accepting, the run keeps the Kleene take; it moves on
    only with an event the Kleene cannot take."""
    q = cep_core.compile("PATTERN SEQ(A+ a[], A b, C c) WHERE a[i].v = a[i+1].v WITHIN 10")
    s = [ev("a1", v=0), ev("a2", v=0), ev("a3", v=1), ev("c4")]
    # run [a1]: a2 is taken by the Kleene; a3 (v differs) can only be b; c4 completes
    got = q.matches(s, NEXT)
    assert [(m["a"], m["b"], m["c"]) for m in got] == [(["a1", "a2"], "a3", "c4"),
                                                      (["a2"], "a3", "c4")]


def test_kleene_index_predicates_last_first_param():
    q = cep_core.compile("PATTERN SEQ(A+ a[], B b) WHERE a[last].v = b.v AND a[1].v < 5 "
                         "AND a[m].v >= 0 WITHIN 10", params={"m": 2})
    s = [ev("a1", v=1), ev("a2", v=7), ev("a3", v=3), ev("b4", v=3)]
    got = sorted(flat(m, "ab") for m in q.matches(s))
    # a[last] must be a3 (v=3), a[1] in {a1, a3 if first}, a[2] must exist
    assert got == ["a1a2a3b4", "a1a3b4"]


def test_length_checked_at_acceptance():
    q = cep_core.compile("PATTERN SEQ(A+ a[]) WHERE LENGTH(a+[]) > 2 WITHIN 10")
    got = [flat(m, "a") for m in q.matches(stream("a1 a2 a3 a4"), NEXT)]
    # runs start at every A; each extension with length > 2 is emitted
    assert got == ["a1a2a3", "a1a2a3a4", "a2a3a4"]


def test_group_repetition_seq_plus():
    q = cep_core.compile("PATTERN SEQ(A a, B b)+ WHERE a.v = b.v WITHIN 10")
    s = [ev("a1", v=1), ev("b2", v=1), ev("a3", v=2), ev("b4", v=2), ev("b5", v=1)]
    got = [(m["a"], m["b"]) for m in q.matches(s, NEXT)]
    assert got == [(["a1"], ["b2"]), (["a1", "a3"], ["b2", "b4"]), (["a3"], ["b4"])]


# --------------------------------------------------------------------------- NEG
Q4 = "PATTERN SEQ(A a, NEG B b, C c) WHERE a.ID = b.ID AND a.ID = c.ID WITHIN 4ms"


@pytest.mark.parametrize("events,expected", [
    # a B of another ID between a and c does not count
    ([ev("a1", ID=1), ev("b2", ID=2), ev("c3", ID=1)], ["a1c3"]),
    # a qualifying B between them drops the match
    ([ev("a1", ID=1), ev("b2", ID=1), ev("c3", ID=1)], []),
    # same timestamp as a, but before a in the stream: not between
    ([ev("b1", ID=1), ev("a1", ID=1), ev("c2", ID=1)], ["a1c2"]),
    # same timestamp as a, after a in the stream: between (stream order decides)
    ([ev("a1", ID=1), ev("b1", ID=1), ev("c2", ID=1)], []),
    # same timestamp as c, after c: not between
    ([ev("a1", ID=1), ev("c2", ID=1), ev("b2", ID=1)], ["a1c2"]),
    # a later a starts a fresh match after the B
    ([ev("a1", ID=1), ev("b2", ID=1), ev("a3", ID=1), ev("c4", ID=1)], ["a3c4"]),
])
def test_neg_between_neighbours(events, expected):
    q = cep_core.compile(Q4, time_unit="ms")
    for policy in (ANY, NEXT):
        assert [flat(m) for m in q.matches(events, policy)] == expected, policy


def test_neg_late_predicate_reads_right_neighbour():
    q = cep_core.compile("PATTERN SEQ(A a, NEG B n, C c) WHERE n.x = c.x WITHIN 10")
    s = [ev("a1"), ev("b2", x=1), ev("c3", x=2), ev("c4", x=1)]
    assert [flat(m) for m in q.matches(s)] == ["a1c3"]
    assert [flat(m) for m in q.matches(s, NEXT)] == ["a1c3"]


def test_neg_after_kleene_counts_from_its_last_event():
    q = cep_core.compile("PATTERN SEQ(A+ a[], NEG B n, C c) WITHIN 10")
    got = sorted(flat(m, "ac") for m in q.matches(stream("a1 b2 a3 c4")))
    assert got == ["a1a3c4", "a3c4"]  # [a1] c4 has b2 in between


def test_neg_respects_partition():
    q = cep_core.compile("PATTERN SEQ(A a, NEG B n, C c) WHERE SAME[k] WITHIN 10")
    s = [ev("a1", k=1), ev("b2", k=2), ev("c3", k=1), ev("a4", k=2), ev("b5", k=2),
         ev("c6", k=2)]
    assert [flat(m) for m in q.matches(s)] == ["a1c3"]


# --------------------------------------------------------------------------- OR
def test_or_branches_bind_their_own_variables():
    q = cep_core.compile(
        "PATTERN SEQ(T t1, (SEQ(D d, T t2) OR SEQ(L l, T t3))) "
        "WHERE SAME VALUE[card] AND t1.v > 10 AND t2.v > 10 AND t3.v > 50 WITHIN 5min",
        time_unit="s")
    s = [{"type": "T", "time": 0, "card": 1, "v": 20, "id": "t1"},
         {"type": "D", "time": 10, "card": 1, "id": "d"},
         {"type": "L", "time": 20, "card": 1, "id": "l"},
         {"type": "T", "time": 30, "card": 1, "v": 30, "id": "tx"},   # t2 only (v <= 50)
         {"type": "T", "time": 40, "card": 1, "v": 60, "id": "ty"},   # t2 and t3
         {"type": "T", "time": 400, "card": 1, "v": 60, "id": "late"}]  # outside 5 min
    got = q.matches(s)
    assert got == [{"t1": "t1", "d": "d", "t2": "tx"}, {"t1": "t1", "d": "d", "t2": "ty"},
                   {"t1": "t1", "l": "l", "t3": "ty"}]


def test_or_predicate_applies_where_its_variables_are_bound():
    q = cep_core.compile("PATTERN SEQ(A a, (B b OR C c), D d) WHERE b.x = d.x WITHIN 10")
    s = [ev("a1"), ev("b2", x=1), ev("c3"), ev("d4", x=2), ev("d5", x=1)]
    assert [flat(m, "abcd") for m in q.matches(s)] == ["a1c3d4", "a1b2d5", "a1c3d5"]


def test_or_predicate_across_alternatives_is_an_error():
    with pytest.raises(QuerySemanticError, match="t2.*t3|t3.*t2"):
        cep_core.compile("PATTERN SEQ(T t1, (SEQ(D d, T t2) OR SEQ(L l, T t3))) "
                         "WHERE t2.v = t3.v WITHIN 5")


# --------------------------------------------------------------------------- windows
@pytest.mark.parametrize("tb,expected", [(5, 1), (5.0, 1), (5.001, 0), (6, 0)])
def test_window_boundary_is_inclusive(tb, expected):
    q = cep_core.compile("PATTERN SEQ(A a, B b) WITHIN 5")
    s = [{"type": "A", "time": 0}, {"type": "B", "time": tb}]
    for policy in POLICIES:
        assert len(q.matches(s, policy)) == expected


def test_window_units():
    text = "PATTERN SEQ(A a, B b) WITHIN 2h"
    assert cep_core.compile(text, time_unit="s").plan.window == 7200
    assert cep_core.compile(text, time_unit="min").plan.window == 120
    assert cep_core.compile(text, time_unit="ms").plan.window == 7_200_000
    assert cep_core.compile(text, time_unit="h").plan.window == 2
    assert cep_core.compile("PATTERN SEQ(A a, B b) WITHIN 50K").plan.window == 50_000
    q = cep_core.compile(text, time_unit="min")
    s = [{"type": "A", "time": 0}, {"type": "B", "time": 120}, {"type": "B", "time": 121}]
    assert len(q.matches(s)) == 1
    assert "120 min (WITHIN 2h)" in q.explain()
    with pytest.raises(QueryError, match="time_unit"):
        cep_core.compile(text, time_unit="days")


def test_expired_partial_matches_are_dropped_in_every_partition():
    q = cep_core.compile("PATTERN SEQ(A a, B b) WHERE SAME[k] WITHIN 5")
    s = q.start(ANY, engine="reference")
    s.feed([{"type": "A", "time": t, "k": t} for t in range(10)])
    assert len(s.partial_matches()) <= 6 + 5  # at most ~2 windows of starts stay
    s.feed([{"type": "C", "time": 100}])
    assert s.partial_matches() == []
    assert s.counters.pm_dropped == 10


# --------------------------------------------------------------------------- SAME
def test_same_partitions_matches():
    q = cep_core.compile("PATTERN SEQ(A a, B b) WHERE SAME[k] WITHIN 10")
    s = [ev("a1", k=1), ev("a2", k=2), ev("b3", k=1), ev("b4", k=2), ev("b5"),  # b5: no k
         ev("b6", k=3)]
    assert sorted(flat(m) for m in q.matches(s)) == ["a1b3", "a2b4"]
    assert "partition key: k (SAME)" in q.explain()


def test_same_on_several_attributes():
    q = cep_core.compile("PATTERN SEQ(A a, B b) WHERE SAME[k, j] WITHIN 10")
    s = [ev("a1", k=1, j=1), ev("b2", k=1, j=2), ev("b3", k=1, j=1)]
    assert [flat(m) for m in q.matches(s)] == ["a1b3"]


# --------------------------------------------------------------------------- RETURN
def test_return_names_attributes_aliases_and_repeats():
    q = cep_core.compile("PATTERN SEQ(A a, B b) WITHIN 10 "
                         "RETURN Out(a.x, b.x, b.y AS z, a.x, a.x + b.x)")
    out = q.run([ev("a1", x=1), ev("b2", x=2, y=3)])
    assert out == [{"type": "Out", "x": 1, "x_2": 2, "z": 3, "x_3": 1, "arg5": 3, "time": 2}]


def test_return_listing_4_1_names_and_kleene_lists():
    q = cep_core.compile(
        "PATTERN SEQ(BikeTrip+ a[], BikeTrip b) "
        "WHERE a[i+1].bike=a[i].bike AND b.end IN {7,8,9} AND a[last].bike=b.bike "
        "AND a[i+1].start=a[i].end WITHIN 1h RETURN (a[1].start, a[i].end, b.end)",
        time_unit="min")
    trips = [{"type": "BikeTrip", "time": 0, "bike": 1, "start": 1, "end": 2},
             {"type": "BikeTrip", "time": 10, "bike": 1, "start": 2, "end": 3},
             {"type": "BikeTrip", "time": 20, "bike": 1, "start": 5, "end": 8}]
    out = q.run(trips, policy=NEXT)
    # run [t0]: t10 chains (taken); t20 does not chain but ends at 8 with the same bike: b
    assert out == [{"type": "match", "start": 1, "end": [2, 3], "end_2": 8, "time": 20},
                   {"type": "match", "start": 2, "end": [3], "end_2": 8, "time": 20}]


# --------------------------------------------------------------------------- Listing 6.1
LISTING_61 = """
SEQ (smartMeterEvent a+[])
WHERE SAME[houseID] AND a[i].time > t_start AND a[i].time < t_end
AND a[i].accLoad > λ[a[i].houseID, a[i].time]
AND a[i].time+1 = a[i+1].time
AND LENGTH(a+[]) > m_user
WITHIN 2h
RETURN userNonComplianceEvent(a[m_user].time, a[m_user].houseID,
                               a[m_user].groupID, a[m_user].accLoad)
"""


def listing_61_stream():
    """Time in minutes since midnight; λ[house, time] is 10 for house 1, 15 for house 2,
    5 for house 3."""
    loads = {1: {1110: 12, 1111: 12, 1112: 13, 1113: 14, 1114: 9, 1115: 15, 1116: 16},
             2: {t: 20 for t in range(1111, 1117)},
             3: {t: t - 1200 for t in range(1226, 1231)}}
    lam = {1: 10, 2: 15, 3: 5}
    events = sorted(({"type": "smartMeterEvent", "time": t, "houseID": h, "groupID": 1 + h // 3,
                      "accLoad": load} for h, series in loads.items()
                     for t, load in series.items()), key=lambda e: (e["time"], e["houseID"]))
    table = {(h, t): lam[h] for h, series in loads.items() for t in series}
    return events, table


# Worked by hand (t_start=1110, t_end=1230, m_user=3: a run needs > 3 consecutive minutes):
# house 1: 1110 fails time > t_start; runs start at 1111, 1112, 1113; 1114 has accLoad 9 <= 10
#   and breaks them (1115 is not 1113+1); runs from 1115 reach length 2 only: no output.
# house 2: readings 1111..1116 all above 15. Under skip-till-next-match every reading starts
#   a run; the run from s emits at each extension once its length is >= 4, with a[3] = s+2:
#   at 1114: run 1111 -> a[3]=1113; at 1115: runs 1111, 1112 -> 1113, 1114;
#   at 1116: runs 1111, 1112, 1113 -> 1113, 1114, 1115.
# house 3 (group 2): 1226..1229 pass (1230 is not < t_end): at 1229 run 1226 -> a[3]=1228
#   (accLoad 28).
LISTING_61_EXPECTED = [(1113, 2, 20), (1113, 2, 20), (1114, 2, 20), (1113, 2, 20),
                       (1114, 2, 20), (1115, 2, 20), (1228, 3, 28)]


@pytest.mark.parametrize("policy", [NEXT, ANY])
def test_listing_6_1_meter_query(policy):
    events, table = listing_61_stream()
    q = cep_core.compile(LISTING_61, params={"t_start": 1110, "t_end": 1230, "m_user": 3,
                                              "λ": table}, time_unit="min")
    out = q.run(events, policy=policy)
    got = [(o["time"], o["houseID"], o["accLoad"]) for o in out]
    # one reading per house and minute: any-match finds the same contiguous runs
    assert sorted(got) == sorted(LISTING_61_EXPECTED)
    if policy == NEXT:
        assert got == LISTING_61_EXPECTED
    assert all(o["type"] == "userNonComplianceEvent" for o in out)
    assert set(out[0]) == {"type", "time", "houseID", "groupID", "accLoad"}
    assert {o["groupID"] for o in out} == {1, 2}
    assert q.plan.window == 120


def test_listing_6_1_lookup_as_series_and_remote():
    events, table = listing_61_stream()
    series = pd.Series(table)  # a MultiIndex (houseID, time)
    base = {"t_start": 1110, "t_end": 1230, "m_user": 3}
    for kw in ({"params": {**base, "λ": series}},
               {"params": base, "remote": {"λ": table}},
               {"params": base, "remote": TableLookup({"λ": lambda h, t: table[(h, t)]})}):
        q = cep_core.compile(LISTING_61, time_unit="min", **kw)
        assert len(q.run(pd.DataFrame(events), policy=NEXT)) == 7


# --------------------------------------------------------------------------- brute force
def _paths(node, budget):
    """Every sequence of ('pos', var, type, multi) / ('neg', var, type) items the pattern
    can unfold to, with at most ``budget`` positive items."""
    if isinstance(node, ast.EventElem):
        if node.kleene:
            return [[("pos", node.var, node.type, True)] * k for k in range(1, budget + 1)]
        return [[("pos", node.var, node.type, False)]] if budget >= 1 else []
    if isinstance(node, ast.OrPattern):
        return [p for alt in node.alternatives for p in _paths(alt, budget)]
    assert isinstance(node, ast.Seq)
    paths = [[]]
    for item in node.items:
        if isinstance(item, ast.EventElem) and item.negated:
            paths = [p + [("neg", item.var, item.type)] for p in paths]
            continue
        paths = [p + q for p in paths
                 for q in _paths(item, budget - sum(x[0] == "pos" for x in p))]
    if not node.kleene:
        return paths
    body = [[(x[0], x[1], x[2], True) if x[0] == "pos" else x for x in p] for p in paths]
    out, frontier = [], [[]]
    while frontier:
        nxt = []
        for p in frontier:
            for b in body:
                q = p + b
                if sum(x[0] == "pos" for x in q) <= budget:
                    out.append(q)
                    nxt.append(q)
        frontier = nxt
    return out


def brute_force(pattern: ast.Pattern, events, window, where, neg=None, same=None):
    """All matches of Definition 2.7 under skip-till-any-match: every order-preserving
    choice of events that fits the pattern, spans at most ``window``, satisfies ``where``
    (a function of the bindings) and has no qualifying negated event between the
    neighbours of a NEG (``neg(var, event, bindings)``)."""
    n = len(events)
    found = set()
    for path in _paths(pattern, n):
        pos_items = [(j, x) for j, x in enumerate(path) if x[0] == "pos"]
        for idxs in itertools.combinations(range(n), len(pos_items)):
            evs = [events[i] for i in idxs]
            if any(e["type"] != x[2] for e, (_, x) in zip(evs, pos_items, strict=True)):
                continue
            if evs[-1]["time"] - evs[0]["time"] > window:
                continue
            if same and len({e.get(same) for e in evs}) != 1:
                continue
            b = {}
            for e, (_, x) in zip(evs, pos_items, strict=True):
                if x[3]:
                    b.setdefault(x[1], []).append(e)
                else:
                    b[x[1]] = e
            at = {j: i for (j, _), i in zip(pos_items, idxs, strict=True)}
            blocked = False
            for j, x in enumerate(path):
                if x[0] != "neg":
                    continue
                left = max(at[k] for k in at if k < j)
                right = min(at[k] for k in at if k > j)
                for e in events[left + 1:right]:
                    if e["type"] == x[2] and (not same or e.get(same) == evs[0].get(same)) \
                            and (neg is None or neg(x[1], e, b)):
                        blocked = True
            if blocked or not where(b):
                continue
            found.add(tuple(sorted((v, tuple(e["id"] for e in x) if isinstance(x, list)
                                    else x["id"]) for v, x in b.items())))
    return found


def canon(matches):
    return [tuple(sorted((v, tuple(x) if isinstance(x, list) else x) for v, x in m.items()))
            for m in matches]


BRUTE_CASES = {
    "seq": ("PATTERN SEQ(A a, B b, C c) WHERE a.x <= c.x WITHIN 4",
            lambda b: b["a"]["x"] <= b["c"]["x"], None, None),
    "seq-same": ("PATTERN SEQ(A a, B b, A c) WHERE SAME[k] AND a.x != b.x WITHIN 5",
                 lambda b: b["a"]["x"] != b["b"]["x"], None, "k"),
    "kleene": ("PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x <= b[i+1].x AND a.x = c.x WITHIN 6",
               lambda b: b["a"]["x"] == b["c"]["x"] and all(
                   p["x"] <= q["x"] for p, q in zip(b["b"], b["b"][1:], strict=False)),
               None, None),
    "kleene-end": ("PATTERN SEQ(A+ a[]) WHERE a[i].x != 2 AND LENGTH(a+[]) >= 2 WITHIN 3",
                   lambda b: len(b["a"]) >= 2 and all(e["x"] != 2 for e in b["a"]), None, None),
    "kleene-last": ("PATTERN SEQ(A+ a[], B b) WHERE a[last].x = b.x AND a[1].x <= b.x "
                    "AND a[i].k = b.k WITHIN 5",
                    lambda b: b["a"][-1]["x"] == b["b"]["x"] and b["a"][0]["x"] <= b["b"]["x"]
                    and all(e["k"] == b["b"]["k"] for e in b["a"]), None, None),
    "neg-early": ("PATTERN SEQ(A a, NEG B n, C c) WHERE a.x = n.x WITHIN 5",
                  lambda b: True, lambda v, e, b: e["x"] == b["a"]["x"], None),
    "neg-late": ("PATTERN SEQ(A a, NEG B n, C c) WHERE n.x = c.x AND a.k = c.k WITHIN 5",
                 lambda b: b["a"]["k"] == b["c"]["k"], lambda v, e, b: e["x"] == b["c"]["x"],
                 None),
    "neg-kleene": ("PATTERN SEQ(A+ a[], NEG B n, C c) WITHIN 5", lambda b: True, None, None),
    "neg-same": ("PATTERN SEQ(A a, NEG C n, B b) WHERE SAME[k] WITHIN 4", lambda b: True,
                 None, "k"),
    "or": ("PATTERN SEQ(A a, (SEQ(B b, C c) OR SEQ(C d, B e))) WHERE a.x = b.x WITHIN 6",
           lambda b: "b" not in b or b["a"]["x"] == b["b"]["x"], None, None),
    "or-optional": ("PATTERN SEQ(A a, (B b OR C c), A d) WHERE b.x = d.x WITHIN 6",
                    lambda b: "b" not in b or b["b"]["x"] == b["d"]["x"], None, None),
    "group": ("PATTERN SEQ(SEQ(A a, B b)+, C c) WHERE a.x = b.x WITHIN 6",
              lambda b: all(p["x"] == q["x"] for p, q in zip(b["a"], b["b"], strict=True)),
              None, None),
}


@st.composite
def streams(draw, max_size=7):
    n = draw(st.integers(0, max_size))
    t, out = 0, []
    for i in range(n):
        t += draw(st.sampled_from([0, 1, 1, 2]))
        out.append({"type": draw(st.sampled_from("AABBC")), "time": t, "id": i,
                    "x": draw(st.integers(0, 2)), "k": draw(st.integers(0, 1))})
    return out


@pytest.mark.parametrize("name", sorted(BRUTE_CASES))
@settings(max_examples=60, deadline=None)
@given(events=streams())
def test_any_match_equals_brute_force(name, events):
    text, where, neg, same = BRUTE_CASES[name]
    query = cep_core.parse(text)
    q = cep_core.compile(query)
    got = canon(q.matches(events))
    assert len(got) == len(set(got)), "a binding emitted twice"
    assert set(got) == brute_force(query.pattern, events, q.plan.window, where, neg, same)


def test_brute_force_agrees_with_table_2_4():
    events = stream(TABLE_24_STREAM)
    want = brute_force(table_24_ast().pattern, events, 10, lambda b: True)
    assert {"".join(x for _, x in m) for m in want} == {
        "a1b2a4", "a1b3a4", "a1b2a6", "a1b3a6", "a1b5a6", "a4b5a6"}


# --------------------------------------------------------------------------- incremental
def _splits(draw_ints, n):
    cuts = sorted(set(c for c in draw_ints if 0 < c < n))
    return [slice(a, b) for a, b in zip([0, *cuts], [*cuts, n], strict=True)]


@pytest.mark.parametrize("name", ["kleene", "neg-late", "or", "group", "seq-same"])
@settings(max_examples=40, deadline=None)
@given(events=streams(max_size=9), cuts=st.lists(st.integers(0, 9), max_size=4),
       policy=st.sampled_from(POLICIES))
def test_feeding_in_batches_equals_one_run(name, events, cuts, policy):
    q = cep_core.compile(BRUTE_CASES[name][0])
    one = q.start(policy, output="matches")
    whole = one.run(events)
    counters = one.counters.as_dict()
    s = q.start(policy, output="matches")
    got = []
    for part in _splits(cuts, len(events)):
        got += s.feed(events[part])
    got += s.flush()
    assert got == whole
    assert s.counters.as_dict() == counters


@pytest.mark.parametrize("policy", POLICIES)
def test_session_pickles_mid_stream(policy):
    events, table = listing_61_stream()
    q = cep_core.compile(LISTING_61, params={"t_start": 1110, "t_end": 1230, "m_user": 3,
                                              "λ": table}, time_unit="min")
    whole = q.run(events, policy=policy)
    s = q.start(policy)
    first = s.feed(events[:9])
    s2 = pickle.loads(pickle.dumps(s))
    rest = s2.feed(events[9:]) + s2.flush()
    assert first + rest == whole
    # the original session continues identically too
    assert s.feed(events[9:]) + s.flush() == rest
    assert s.counters.as_dict() == s2.counters.as_dict()


# --------------------------------------------------------------------------- lookups "not yet"
class SlowLookup(Lookup):
    """Answers each key only on its third request, or after settle()."""

    def __init__(self, table):
        self.table, self.asked, self.settled = table, {}, False

    def serves(self, name):
        return name == "REMOTE"

    def get(self, name, args):
        n = self.asked[args] = self.asked.get(args, 0) + 1
        return self.table[args[0]] if self.settled or n >= 3 else NOT_YET

    def settle(self):
        self.settled = True


@pytest.mark.parametrize("policy", POLICIES)
def test_pending_lookup_catches_up_to_instant_answers(policy):
    text = ("PATTERN SEQ(A a, B+ b[], C c) WHERE SAME[k] AND b[i].x > REMOTE[a.x] "
            "AND c.x = REMOTE[b[last].x] WITHIN 8")
    table = {0: 0, 1: 1, 2: 0}
    events = [{"type": "ABBCABC"[i % 7], "time": i, "id": i, "x": (i * 7) % 3, "k": i % 2}
              for i in range(30)]
    instant = cep_core.compile(text, remote={"REMOTE": table}).matches(events, policy)
    slow = cep_core.compile(text, remote=SlowLookup(table))
    s = slow.start(policy, output="matches")
    got = []
    for e in events:
        got += s.feed([e])
    got += s.flush()
    assert sorted(canon(got)) == sorted(canon(instant))
    assert s.statistics["pending_lookups"] > 0


def test_unanswered_lookup_at_flush_is_an_error():
    class Never(Lookup):
        def get(self, name, args):
            return NOT_YET

    q = cep_core.compile("PATTERN SEQ(A a, B b) WHERE b.x > REMOTE[a.x] WITHIN 5",
                         remote=Never())
    s = q.start()
    assert s.feed([ev("a1", x=1), ev("b2", x=2)]) == []
    with pytest.raises(QueryError, match="wait for a lookup"):
        s.flush()


def test_missing_table_entry_names_the_key():
    q = cep_core.compile("PATTERN SEQ(A a, B b) WHERE b.x > G[a.g] WITHIN 5",
                         params={"G": {1: 0}})
    with pytest.raises(QueryError, match=r"G\[7\]"):
        q.run([ev("a1", g=7), ev("b2", x=1)])


# --------------------------------------------------------------------------- counters etc.
def test_counters_and_statistics_move():
    q = cep_core.compile("PATTERN SEQ(A a, B b, C c) WHERE a.x = b.x WITHIN 10")
    s = [ev("a1", x=1), ev("b2", x=1), ev("b3", x=2), ev("c4"), ev("d5")]
    session = q.start(engine="reference")
    out = session.run(s)
    c = session.counters
    assert (c.events, c.outputs, len(out)) == (5, 1, 1)
    assert c.pm_created == 2 and c.pm_extended == 2 and c.predicates == 2
    stats = session.statistics
    assert stats["events_per_type"] == {"A": 1, "B": 2, "C": 1, "D": 1}
    (pred,) = stats["predicates"]
    assert (pred["predicate"], pred["evaluated"], pred["passed"]) == ("a.x = b.x", 2, 1)
    assert pred["pass_rate"] == 0.5


def test_input_filter_drops_events():
    q = cep_core.compile(TABLE_24)
    session = q.start(output="matches", input_filter=lambda e: e["id"] != "b2")
    got = session.run(stream(TABLE_24_STREAM))
    assert sorted(flat(m) for m in got) == sorted(["a1b3a4", "a1b3a6", "a1b5a6", "a4b5a6"])
    assert session.statistics["filtered"] == 1 and session.counters.events == 5


def test_state_filter_sees_state_age_values_and_sheds():
    q = cep_core.compile("PATTERN SEQ(A a, B b, C c) WHERE a.x = c.x WITHIN 10")
    seen = []

    def young_only(views):
        seen.extend(views)
        return [v for v in views if v.age <= 2]

    s = [ev("a1", x=1), ev("b2"), ev("a3", x=1), ev("b4"), ev("c5", x=1)]
    session = q.start(output="matches", state_filter=young_only)
    got = session.run(s)
    assert sorted(flat(m) for m in got) == ["a3b4c5"]  # <a1 ..> shed at age 3
    assert session.counters.pm_dropped >= 1
    v = next(v for v in seen if v.bindings == {"a": "a1", "b": "b2"})
    assert (v.state, v.var, v.values) == (2, "b", {"a.x": 1})
    assert sorted(flat(m) for m in q.matches(s)) == ["a1b2c5", "a1b4c5", "a3b4c5"]


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("text,params,needle", [
    ("PATTERN SEQ(A a, B b) WHERE z.x = 1 WITHIN 5", {}, "unknown variable 'z'"),
    ("PATTERN SEQ(A a, B b) WHERE a.x > t_start WITHIN 5", {}, "unbound parameter 't_start'"),
    ("PATTERN SEQ(A a, B b) WHERE a.x > REMOTE[b.y] WITHIN 5", {}, "unbound lookup 'REMOTE"),
    ("PATTERN SEQ(A+ a[]) WHERE a[m].x > 1 WITHIN 5", {}, "unbound parameter 'm'"),
    ("PATTERN SEQ(A a, B b) WHERE a[i].x > 1 WITHIN 5", {}, "'a' is not a Kleene variable"),
    ("PATTERN SEQ(A a, B b) WHERE SAME[OVERLAP(boundary)] WITHIN 5", {}, "OVERLAP"),
    ("PATTERN SEQ(A a, A a) WITHIN 5", {}, "variable 'a' is bound twice"),
    ("PATTERN SEQ(SEQ(A+ a[], B b)+) WITHIN 5", {}, "nested repetition"),
    ("PATTERN SEQ(A a, B b) WHERE FOO(a.x) > 1 WITHIN 5", {}, "unknown function 'FOO'"),
    ("PATTERN SEQ(A a, B b) WITHIN 5 RETURN T(c.x)", {}, "unknown variable 'c'"),
])
def test_semantic_errors_name_the_unknown_thing(text, params, needle):
    with pytest.raises(QuerySemanticError) as info:
        cep_core.compile(text, params=params)
    assert needle in str(info.value)
    assert info.value.pos is not None


def test_listing_5_2_partitions_by_a_function_of_an_attribute():
    """SAME[OVERLAP(boundary)]: events whose OVERLAP(boundary) is equal share a partition
    (docs/decisions.md, "A partition key computed by a function")."""
    text = _listing_blocks()["listing-5.2"][1]
    region = {"north-1": "N", "north-2": "N", "south-1": "S"}
    q = cep_core.compile(text, time_unit="min", params={
        "high": "high", "UDF1": lambda a, b: "high", "OVERLAP": lambda x: region[x]},
        remote={"REMOTE": {(1,): 50.0, (2,): 20.0}})
    assert "partition key: OVERLAP(boundary) (SAME)" in q.explain()

    def sat(t, channel, boundary, **rest):
        return {"type": "Satellite", "time": t, "channel": channel, "boundary": boundary,
                "level": "high", "temperature": 1, "humidity": 2, **rest}

    # a in the north, b in the south (another partition), c in the north
    stream = [sat(400, 7, "north-1"), sat(410, 14, "south-1"), sat(420, 16, "north-2")]
    assert q.matches(stream) == []
    stream[1]["boundary"] = "north-2"  # now the three overlap
    assert q.matches(stream) == [{"a": [0], "b": [1], "c": [2]}]


# --------------------------------------------------------------------------- listings
def _listing_blocks() -> dict[str, tuple[str, str, str]]:
    """{name: (kind, query text, params text)} from tests/fixtures/listings.md."""
    return {name: (kind, body, params) for kind, name, params, body in load_listings(FIXTURE)}


def _listing_params(params_text: str) -> dict:
    """Scalars as given; a bare name (REMOTE, λ, GroupSize) is bound to a dummy table, a
    function (OVERLAP()) to one that returns its first argument."""
    return {k: ({} if v is None else (lambda x, *_: x) if v == FUNCTION else v)
            for k, v in parse_params(params_text).items()}


def _has_aggregate() -> bool:
    from cep_core.query import _find_compile_aggregation

    return _find_compile_aggregation() is not None


def test_every_compile_listing_compiles():
    blocks = _listing_blocks()
    assert len([b for b in blocks.values() if b[0] == "compile"]) >= 14
    for name, (kind, body, rest) in blocks.items():
        if kind != "compile":
            continue
        query = cep_core.parse(body)
        params = _listing_params(rest)
        if isinstance(query, ast.AggregationQuery) and not _has_aggregate():
            with pytest.raises(QuerySemanticError, match="need cep_core.aggregate"):
                cep_core.compile(body, params=params, time_unit="min")
            continue
        q = cep_core.compile(body, params=params, time_unit="min")
        assert isinstance(q, CompiledQuery), name
        text = q.explain()
        assert q.engine in text or isinstance(query, ast.AggregationQuery), name


class _One(int):
    """1, that is also the set {1} (a lookup read by both ``>`` and ``NOT IN``)."""

    def __new__(cls):
        return super().__new__(cls, 1)

    def __contains__(self, x) -> bool:
        return x == 1


def test_every_listing_runs():
    """Each listing of Ch. 2-6 runs over a random stream of its event types (lookups bound
    to functions that answer 1), and some of them find matches there."""
    found = {}
    for name, (_, body, rest) in _listing_blocks().items():
        params = {k: ((lambda *a: _One()) if v is None else (lambda x, *_: x)
                      if v == FUNCTION else v) for k, v in parse_params(rest).items()}
        q = cep_core.compile(body, params=params, time_unit="min")
        rng = random.Random(name)
        if q.plan is None:  # a stream aggregation (Listings 6.2, 6.3, top)
            types = [cep_core.parse(body).source]
            attrs = {"houseID", "groupID", "accLoad", "sumAccLoad"}
        else:
            types = sorted(q.plan.types | q.plan.neg_types)
            attrs = {a for p in q.plan.preds for _, a in p.attrs} | {
                "ID", "task_id", "creditCard", "houseID", "groupID", "boundary"}
        events = [{**{a: rng.randrange(3) for a in sorted(attrs)}, "type": rng.choice(types),
                   "time": 1111 + i} for i in range(60)]
        found[name] = len(q.run(events, policy="skip-till-next-match"))
    assert len(found) == 16
    assert sum(n > 0 for n in found.values()) >= 4, found


def test_aggregation_queries_dispatch():
    body, rest = _listing_blocks()["listing-6.2-alert"][1:]
    params = _listing_params(rest)
    if not _has_aggregate():
        with pytest.raises(QuerySemanticError, match="aggregation queries need"):
            cep_core.compile(body, params=params)
        return
    params["GroupSize"] = {1: 2}
    q = cep_core.compile(body, params=params, time_unit="min")
    assert q.is_aggregation and q.explain()
    events = [{"type": "userNonComplianceEvent", "time": 1140, "houseID": h, "groupID": 1,
               "accLoad": 1.0} for h in (1, 2)]
    out = q.run(events)
    s = q.start()
    assert s.feed(events) + s.flush() == out
    with pytest.raises(QueryError):
        q.matches(events)


def test_explain_shows_states_transitions_predicates_partition_window_engine():
    q = cep_core.compile(LISTING_61, params={"t_start": 1110, "t_end": 1230, "m_user": 3,
                                              "λ": {}}, time_unit="min")
    text = q.explain()
    for needle in ("engine: keyed-vectorized for skip-till-next-match and strict-contiguity",
                   "reference otherwise", "window: 120 min", "partition key: houseID",
                   "q1  smartMeterEvent a+[]  (Kleene+, accepting)", "q1 -> q1",
                   "a[i].time+1 = a[i+1].time (incremental)", "LENGTH(a+[]) > m_user",
                   "return: userNonComplianceEvent(time=a[m_user].time"):
        assert needle in text, needle
    assert q.engine == "reference"
    q = cep_core.compile(Q4, time_unit="ms")
    assert "no B b in between with a.ID = b.ID" in q.explain()
