"""Batched fetches around the keyed engine (cep_core.remote.batch): known fetch times per
strategy, the per-device LRU cache, determinism, and the keyed session's outputs kept."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cep_core
from cep_core.errors import QueryError
from cep_core.remote import LatencyModel, RemoteSource
from cep_core.remote.batch import KEYED_FETCH_STRATEGIES, BatchCache, BatchFetcher, KeyedFetcher
from cep_core.shedding import KeyedShedder

QUERY = """SEQ (R a+[]) WHERE SAME[h] AND a[i].v > L[a[i].h, a[i].time]
AND a[i].time + 1 = a[i+1].time AND LENGTH(a+[]) > 1 WITHIN 100
RETURN out(a[last].time, a[last].h)"""


def _source(latency: LatencyModel, keys: int = 6, steps: int = 6) -> RemoteSource:
    index = pd.MultiIndex.from_arrays([np.tile(np.arange(keys), steps),
                                       np.repeat(np.arange(steps), keys)])
    return RemoteSource(pd.Series(0.5, index=index), names=("L",), latency=latency,
                        element_size=16, seed=3)


def _events(t: int, keys=range(6)) -> pd.DataFrame:
    keys = np.asarray(list(keys))
    return pd.DataFrame({"type": "R", "time": t, "h": keys, "v": np.where(keys % 2, 0.0, 1.0)})


def _next(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.assign(time=rows["time"] + 1)


FIXED = LatencyModel("fixed", value=2.0)


def _fetcher(strategy: str, latency: LatencyModel = FIXED, capacity: int = 10):
    return BatchFetcher(_source(latency), "L", ("h", "time"), "h", lambda k: k // 3, 2,
                        strategy, capacity, _next)


def test_blocking_waits_for_the_last_element_and_takes_the_next_step_up_late():
    f = _fetcher("BL1")
    assert f.step(0, _events(0)).tolist() == [2.0] * 6
    # the devices are busy until 2: the step at 1 starts at 2 and waits until 4
    assert f.step(1, _events(1, [0, 1])).tolist() == [3.0, 3.0]
    assert f.stats["waited"].tolist() == [4.0, 2.0]
    assert f.stats["requests"].sum() == 8 and f.stats["bytes"].sum() == 8 * 16
    assert f.stats["hits"].sum() == 0 and f.cache.key.size == 0  # BL1 keeps nothing


def test_lazy_decides_each_event_when_its_own_element_arrives():
    latency = LatencyModel("uniform", low=1.0, high=5.0)
    lazy, blocking = _fetcher("LzEval", latency), _fetcher("BL2", latency)
    own = lazy.step(0, _events(0))
    together = blocking.step(0, _events(0))
    assert ((1.0 <= own) & (own <= 5.0)).all() and len(set(own.round(9))) == 6
    assert together.tolist() == [own[:3].max()] * 3 + [own[3:].max()] * 3
    assert lazy.stats["waited"].sum() == 0.0


def test_prefetched_elements_are_hits_at_the_next_step():
    for strategy in ("PFetch", "Hybrid"):
        f = _fetcher(strategy)
        f.prefetch(-3, _events(0)[["h", "time"]])
        assert f.step(0, _events(0)).tolist() == [0.0] * 6
        assert f.step(3, _events(1)).tolist() == [0.0] * 6  # prefetched at 0, in at 2
        assert f.stats["hits"].sum() == 12 and f.stats["misses"].sum() == 0
        assert f.stats["prefetches"].sum() == f.stats["requests"].sum() == 18


def test_a_prefetch_still_in_flight_is_waited_for_not_fetched_again():
    f = _fetcher("Hybrid", LatencyModel("fixed", value=4.0))
    f.step(0, _events(0))  # prefetches step 1's elements, in at 4
    assert f.step(1, _events(1)).tolist() == [3.0] * 6
    assert f.stats["requests"].sum() == 6 + 6 + 6  # step 0, its prefetch, step 1's


def test_an_elements_latency_does_not_depend_on_its_batch():
    latency = LatencyModel("lognormal", value=2.0, sigma=0.5)
    alone = [_fetcher("LzEval", latency).step(0, _events(0, [k]))[0] for k in range(6)]
    together = _fetcher("LzEval", latency).step(0, _events(0))
    assert np.allclose(alone, together)


def test_the_cache_evicts_the_least_recently_used_arrived_element_per_device():
    cache = BatchCache(2)
    keys = np.array([10, 20, 30], dtype=np.uint64)
    cache.add(keys[:2], np.zeros(2, np.int64), np.zeros(2), np.array([0.0, 1.0]))
    cache.touch(cache.find(keys[:1]), 2.0)  # 10 used after 20
    cache.add(keys[2:], np.zeros(1, np.int64), np.zeros(1), np.array([3.0]))
    cache.evict(np.array([5.0]))
    assert (cache.find(keys) >= 0).tolist() == [True, False, True]
    # an element in flight is never evicted, even beyond capacity
    cache.add(np.array([40, 50], dtype=np.uint64), np.zeros(2, np.int64),
              np.array([9.0, 9.0]), np.array([4.0, 4.0]))
    cache.evict(np.array([5.0]))
    assert (cache.find(np.array([40, 50], dtype=np.uint64)) >= 0).all()
    assert cache.evictions == 3


def _run(strategy: str | None, steps: int = 6, shed: bool = False):
    source = _source(LatencyModel("uniform", low=0.1, high=0.5))
    query = cep_core.compile(QUERY, remote={"L": source})
    session = query.start("strict-contiguity", runs="one-per-partition")
    if shed:
        session = KeyedShedder(session, "RI", lambda k: k // 3, np.full(2, 1.0),
                               bound=np.full(2, 0.5), min_samples=1, seed=1)
    feeder = session if strategy is None else \
        KeyedFetcher(session, source, "L", ("h", "time"), lambda k: k // 3, 2, strategy,
                     6, lambda r: r.assign(time=r["time"] + 1))
    out = pd.concat([feeder.feed(_events(t), as_frame=True) for t in range(steps)],
                    ignore_index=True)
    return out, feeder


@pytest.mark.parametrize("strategy", KEYED_FETCH_STRATEGIES)
def test_fetching_changes_when_outputs_are_decided_not_which(strategy):
    plain, _ = _run(None)
    out, fetcher = _run(strategy)
    pd.testing.assert_frame_equal(out.drop(columns="data_delay"), plain)
    assert (out["data_delay"] >= 0).all()
    assert fetcher.totals().requests >= 6 * 6 - (6 if strategy in ("PFetch", "Hybrid") else 0)
    if strategy in ("PFetch", "Hybrid"):
        assert (out["data_delay"][out["time"] > 0] == 0).all()
    else:
        assert (out["data_delay"] > 0).all()


def test_shed_events_need_no_data():
    _, fetcher = _run("BL1", shed=True)
    shedder = fetcher.session
    assert shedder.events_shed.sum() > 0
    assert fetcher.totals().requests == shedder.events.sum() - shedder.events_shed.sum()


def test_bad_configurations_get_one_line_errors():
    source = _source(LatencyModel())
    session = cep_core.compile(QUERY, remote={"L": source}).start(
        "strict-contiguity", runs="one-per-partition")
    cases = [
        (lambda: KeyedFetcher(session, source, "L", ("h", "time"), lambda k: k, 6, "BL3"),
         "not one of"),
        (lambda: KeyedFetcher(session, source, "L", (), lambda k: k, 6, "BL1"),
         "attributes"),
        (lambda: KeyedFetcher(session, _source(LatencyModel()), "L", ("h", "time"),
                              lambda k: k, 6, "BL1"), "not served"),
        (lambda: BatchCache(-1), "capacity"),
    ]
    for make, words in cases:
        with pytest.raises(QueryError, match=words) as info:
            make()
        assert "\n" not in str(info.value)
    f = KeyedFetcher(session, source, "L", ("h", "time"), lambda k: k, 2, "BL1")
    with pytest.raises(QueryError, match="devices outside"):
        f.feed(_events(0))
    mixed = pd.concat([_events(0), _events(1)], ignore_index=True)
    with pytest.raises(QueryError, match="one time"):
        KeyedFetcher(session, source, "L", ("h", "time"), lambda k: k, 6, "BL1").feed(mixed)

