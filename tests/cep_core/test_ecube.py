"""The ECube baseline of the A-Seq paper's Fig. 15 (experiments/ecube.py): substring
matches constructed once and shared, each query's matches constructed and counted, give
each query's A-Seq counts at every trigger."""

from __future__ import annotations

import random

import pytest

from cep_core.aggregate import SeqAggregator, chop, seq_query
from experiments.ecube import ECube


@pytest.mark.parametrize("seed", range(4))
def test_ecube_counts_equal_a_seq(seed):
    rng = random.Random(seed)
    for _ in range(10):
        stream = [{"type": rng.choice("ABCD"), "time": t // rng.choice([1, 2])}
                  for t in range(80)]
        stream.sort(key=lambda e: e["time"])
        window = rng.choice([3, 8, 20])
        shared = "".join(rng.choice("ABCD") for _ in range(2))
        queries = {f"q{k}": "".join(rng.choice("ABCD") for _ in range(rng.randint(1, 2)))
                   + shared + rng.choice(["", "A", "BC"]) for k in range(3)}
        ecube = ECube({n: chop(p, [shared]) for n, p in queries.items()}, window)
        got = ecube.run(stream)
        for name, p in queries.items():
            want = SeqAggregator(seq_query(", ".join(p), within=window)).run(stream)
            assert got[name] == [o["count"] for o in want], (name, p, window)


def test_the_shared_substring_is_constructed_once():
    """Two queries holding ``(B, C)``: its matches are built once, at each C."""
    stream = [{"type": t, "time": i} for i, t in enumerate("ABCBCD")]
    ecube = ECube({"q": [("A",), ("B", "C"), ("D",)], "r": [("B", "C"), ("D",)]}, 10)
    assert ecube.shared == {("B", "C")}
    out = ecube.run(stream)
    assert out == {"q": [3], "r": [3]}                 # A(BC)D: 3; (BC)D: 3
    assert ecube.constructed == 3 + 3 + 3              # BC matches, then each query's
