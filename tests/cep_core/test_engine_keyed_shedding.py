"""Load shedding on the keyed vectorized engine: an input mask over a batch and dropping
keys' runs give what the reference engine gives with the same input and state filters
(dissertation §4.2.2, Eq. 4.1-4.2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_engine_keyed import ONE, POLICIES, TABLE, TABLE2, random_query, random_stream

import cep_core
from cep_core.errors import QueryError


@pytest.mark.parametrize("seed", range(40))
def test_masks_and_dropped_runs_match_the_reference_engine_with_filters(seed):
    rng = np.random.default_rng(5000 + seed)
    q = cep_core.compile(random_query(rng), params={"tab": TABLE, "tab2": TABLE2})
    events = random_stream(rng, 160)
    keep = rng.random(len(events)) > 0.3
    policy = POLICIES[seed % 2]
    cuts = [0, 40, 80, 120, 160]
    doomed = [set(rng.choice(4, size=int(rng.integers(0, 3)), replace=False).tolist())
              for _ in cuts[1:]]
    ref = q.start(policy, runs=ONE, engine="reference",
                  input_filter=lambda e: bool(keep[e["id"]]))
    fast = q.start(policy, runs=ONE)
    assert fast.engine_name == "keyed-vectorized"
    got_ref, got_fast = [], []
    for lo, hi, keys in zip(cuts[:-1], cuts[1:], doomed, strict=True):
        got_ref += ref.feed(events[lo:hi])
        got_fast += fast.feed(pd.DataFrame(events[lo:hi]) if seed % 3 else events[lo:hi],
                              keep=keep[lo:hi])
        before = fast.engine.live_count()
        ref.engine.apply_state_filter(lambda views, ks=keys: [v for v in views
                                                               if v.partition[0] not in ks])
        dropped = fast.drop_runs(np.array(sorted(keys), dtype=np.int64))
        assert dropped == before - fast.engine.live_count()
    assert got_fast == got_ref
    rc, fc = ref.counters.as_dict(), fast.counters.as_dict()
    rc.pop("pm_dropped"), fc.pop("pm_dropped")  # window drops are counted lazily
    assert fc == rc
    assert fast.statistics["filtered"] == ref.statistics["filtered"] == int((~keep).sum())


def test_a_dropped_event_does_not_break_a_strictly_contiguous_run():
    q = cep_core.compile("PATTERN SEQ(A+ a[]) WHERE SAME[k] AND LENGTH(a+[]) >= 3 "
                         "RETURN R(a[last].time, LENGTH(a+[]))")
    stream = pd.DataFrame({"type": ["A", "B", "A", "A"], "time": [1, 2, 3, 4],
                           "k": [7, 7, 7, 7]})
    plain = q.start("strict-contiguity", runs=ONE).feed(stream)
    assert plain == []  # B breaks the run
    masked = q.start("strict-contiguity", runs=ONE).feed(stream, keep=[1, 0, 1, 1])
    assert [r["time"] for r in masked] == [4]


def test_runs_lists_live_runs_with_their_latest_attributes():
    q = cep_core.compile("PATTERN SEQ(A+ a[]) WHERE SAME[k] AND a[i].x > 0 "
                         "RETURN R(a[last].x)")
    s = q.start("strict-contiguity", runs=ONE)
    s.feed([{"type": "A", "time": 1, "k": 5, "x": 2}, {"type": "A", "time": 1, "k": 9, "x": 1},
            {"type": "A", "time": 2, "k": 5, "x": 3}, {"type": "A", "time": 2, "k": 9, "x": 0}])
    runs = s.live_runs("a.x")
    assert runs["k"].tolist() == [5]
    assert runs["length_a"].tolist() == [2] and runs["a.x"].tolist() == [3]
    assert runs["first_time"].tolist() == [1] and runs["state"].tolist() == [0]
    assert s.drop_runs(np.array([5, 9, 11])) == 1 and s.engine.live_count() == 0


def test_masks_and_run_drops_are_for_the_keyed_engine_and_checked():
    q = cep_core.compile("PATTERN SEQ(A a, B b) WHERE SAME[k] RETURN R(a.time)")
    ref = q.start("skip-till-next-match", runs=ONE, engine="reference")
    with pytest.raises(QueryError, match="keep= masks a batch"):
        ref.feed([{"type": "A", "time": 1, "k": 1}], keep=[True])
    with pytest.raises(QueryError, match="keyed vectorized engine"):
        ref.drop_runs(np.array([1]))
    fast = q.start("skip-till-next-match", runs=ONE)
    with pytest.raises(QueryError, match="one flag per event"):
        fast.feed([{"type": "A", "time": 1, "k": 1}], keep=[True, False])
