"""A-Seq's Chop-Connect (§4.2): shared substrings computed once, connected by snapshots
and multi-connect, give each query's own A-Seq counts (and the brute-force counts) at
every trigger, with the window's expiry exact."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from cep_core.aggregate import SeqAggregator, seq_query
from cep_core.aggregate.chop_connect import ChopConnect, chop
from cep_core.errors import QueryError


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
