"""The match-point ground truth from proxy matches (Li and Ge, "History is a mirror to
the future", VLDB 2016, §3.3, Theorem 2) against the node-per-partial-match run of
unbudgeted ACEPMATCH: the same match points, each with the same least error and
partition, on small random queries, streams and windows."""

from __future__ import annotations

import random

import pytest
from test_approximate import random_case, random_stream

import cep_core
from cep_core import QueryError
from cep_core.approx.history import Bundles
from cep_core.approx.match_points import match_points
from cep_core.approx.matchnodes import MatchNodeEngine


def _full_run(plan, k: int, stream: list[dict]) -> dict:
    """{time: (partition, least error)} of the events at which the node-per-partial-match
    run completes a match."""
    eng, points = MatchNodeEngine(plan, k), {}
    for e in stream:
        out: list[dict] = []
        eng.process(e, out)
        if out:
            points[e["time"]] = (plan.key_of(e), min(m["missing"] for m in out))
    return points


@pytest.mark.parametrize("k", [0, 1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_proxy_match_points_equal_the_full_runs(seed, k):
    """Every case with a stream long enough for windows to matter (12-40 events) and a
    window of 2-12 time units; cases with a predicate relating two events are refused."""
    rng = random.Random(1000 * k + seed)
    compared = with_points = 0
    for _ in range(20):
        case = random_case(rng)
        case.window = rng.randint(2, 12)
        stream = [e for _ in range(rng.randint(2, 5)) for e in random_stream(rng)]
        t = 0
        for e in stream:  # one stream of several, times still not decreasing
            t += rng.choice([0, 1, 1, 2])
            e["time"] = t
        text = case.text(rng.choice([None, "k"]))
        plan = cep_core.compile(text).plan
        if any(len(p.vars) > 1 for p in plan.preds):
            with pytest.raises(QueryError, match="relating several elements"):
                match_points(plan, k, stream)
            continue
        got = match_points(plan, k, stream)
        want = _full_run(plan, k, stream)
        assert got.points == want, (text, k)
        assert list(got.points) == sorted(got.points)
        assert got.events == len(stream)
        chain = Bundles(plan.window)
        assert got.bundles(plan.window) == {t: chain.of(t, key)
                                             for t, (key, _) in want.items()}
        compared += 1
        with_points += bool(want)
    assert compared >= 5 and with_points >= 3, (compared, with_points)


def test_proxies_keep_few_nodes_where_the_full_run_keeps_many():
    """SEQ(A, B, C) over 200 events of A and B (no C) with k = 1: the full run keeps a
    node per partial match (pairs of an A and a later B within the window), the proxy
    run at most k + 1 per state, with the same match points."""
    plan = cep_core.compile("PATTERN SEQ(A a, B b, C c) WITHIN 100").plan
    rng = random.Random(3)
    stream = [{"type": rng.choice("AB"), "time": i, "id": i} for i in range(200)]
    full = MatchNodeEngine(plan, 1)
    full.run(stream)
    got = match_points(plan, 1, stream)
    assert got.points == _full_run(plan, 1, stream)
    assert got.peak_nodes <= 2 * (1 + 1) < full.peak_nodes
