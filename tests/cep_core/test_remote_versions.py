"""Versioned remote elements (cep_core.remote.versions, cep_core.remote.batch module doc
6-7): no event reads a version whose successor's invalidation had reached its device,
nor one published after its decision, for every strategy and cache size; an empty
schedule changes nothing; a worked example; a keyed session reads the served version."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cep_core
from cep_core.errors import QueryError
from cep_core.remote import LatencyModel, RemoteSource, Versions
from cep_core.remote.batch import KEYED_FETCH_STRATEGIES, BatchFetcher, KeyedFetcher
from cep_core.remote.hashing import element_hash
from cep_core.shedding import KeyedShedder


def _source(latency: LatencyModel, keys: int = 6, slots: int = 3) -> RemoteSource:
    index = pd.MultiIndex.from_arrays([np.repeat(np.arange(keys), slots),
                                       np.tile(np.arange(slots), keys)])
    return RemoteSource(pd.Series(0.5, index=index), names=("L",), latency=latency,
                        element_size=8, seed=7)


def _versions(pubs: list[tuple[int, int, float, float]]) -> Versions:
    key, slot, when, value = (np.array(c) for c in zip(*pubs, strict=True)) if pubs \
        else (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    return Versions("L", [key.astype(np.int64), slot.astype(np.int64)], when, value)


def _fetcher(strategy: str, latency: LatencyModel, capacity: int, devices: int,
             versions: Versions | None, slots: int = 3) -> BatchFetcher:
    return BatchFetcher(_source(latency, slots=slots), "L", ("h", "s"), "h",
                        lambda k: k % devices, devices, strategy, capacity,
                        lambda r: r.assign(s=(r["s"] + 1) % slots), versions=versions)


def _step_events(pairs: list[tuple[int, int]]) -> pd.DataFrame:
    return pd.DataFrame({"h": np.array([k for k, _ in pairs], dtype=np.int64),
                         "s": np.array([s for _, s in pairs], dtype=np.int64)})


@st.composite
def _schedules(draw):
    keys, slots = draw(st.integers(1, 6)), draw(st.integers(1, 3))
    pubs = draw(st.lists(st.tuples(st.integers(0, keys - 1), st.integers(0, slots - 1),
                                   st.integers(-10, 80).map(lambda x: x / 2),
                                   st.floats(0, 1)), max_size=30))
    gaps = draw(st.lists(st.integers(0, 8).map(lambda x: x / 2), min_size=1, max_size=10))
    steps = [draw(st.lists(st.tuples(st.integers(0, keys - 1), st.integers(0, slots - 1)),
                           max_size=8)) for _ in gaps]
    low = draw(st.sampled_from([0.0, 0.5, 2.0]))
    spread = draw(st.sampled_from([0.0, 1.0, 5.0, 12.0]))
    latency = LatencyModel("uniform", low=low, high=low + spread)
    return dict(pubs=pubs, times=np.cumsum(gaps), steps=steps, latency=latency,
                slots=slots, devices=draw(st.integers(1, 3)),
                capacity=draw(st.sampled_from([0, 1, 2, 5, 50])))


def _check_guarantee(f: BatchFetcher, case: dict, decided: list[tuple]) -> None:
    """Per event decided at t with version v of e: no version k > v with p_k + ℓ(e, k) <= t
    (module doc 6), and no version published after t."""
    pubs = case["pubs"]
    for (key, slot), t, v in decided:
        mine = [p[2] for p in pubs if p[0] == key and p[1] == slot]
        times = np.sort(np.array(mine, dtype=float), kind="stable")
        assert 0 <= v <= int((times <= t).sum()), "read a version published after its decision"
        later = np.arange(v + 1, len(times) + 1)
        if len(later):
            h = element_hash("L", [np.full(len(later), key), np.full(len(later), slot)])
            arrives = times[later - 1] + f._latency(h, later)
            assert (arrives > t).all(), "read a version whose successor's invalidation was in"


@pytest.mark.parametrize("strategy", KEYED_FETCH_STRATEGIES)
@settings(max_examples=60, deadline=None, derandomize=True)
@given(case=_schedules())
def test_no_event_reads_a_version_invalidated_before_its_decision(strategy, case):
    f = _fetcher(strategy, case["latency"], case["capacity"], case["devices"],
                 _versions(case["pubs"]), case["slots"])
    if strategy in ("PFetch", "Hybrid"):
        f.prefetch(-5.0, _step_events([(k, 0) for k in range(6)]))
    decided = []
    for t, pairs in zip(case["times"].tolist(), case["steps"], strict=True):
        delay = f.step(t, _step_events(pairs))
        assert (delay >= 0).all()
        decided += [(p, t + d) for p, d in zip(pairs, delay.tolist(), strict=True)]
    versions = f.report()["versions"]
    assert len(versions) == len(decided)
    _check_guarantee(f, case, [(p, t, int(v)) for (p, t), v in zip(decided, versions,
                                                                   strict=True)])
    total = f.totals()
    assert total.refetches <= total.invalidations and total.refetches <= total.requests


@pytest.mark.parametrize("strategy", KEYED_FETCH_STRATEGIES)
def test_an_empty_schedule_changes_no_number(strategy):
    rng = np.random.default_rng(5)
    latency = LatencyModel("lognormal", value=1.0, sigma=0.7)
    plain, empty = (_fetcher(strategy, latency, 3, 2, v) for v in (None, _versions([])))
    for t in np.cumsum(rng.integers(0, 3, 12)).tolist():
        pairs = list(zip(rng.integers(0, 6, 5).tolist(), rng.integers(0, 3, 5).tolist(),
                         strict=True))
        assert plain.step(t, _step_events(pairs)).tolist() == \
            empty.step(t, _step_events(pairs)).tolist()
    a, b = plain.report(), empty.report()
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    assert plain.totals() == empty.totals() and plain.sent == empty.sent
    assert a["requests"].sum() > 0 and a["refetches"].sum() == a["invalidations"].sum() == 0


def test_worked_example_versions_served_and_refetches():
    # L[0, 0]: version 1 published at 5, version 2 at 20; every latency 2, so their
    # invalidations arrive at 7 and 22
    versions = _versions([(0, 0, 20.0, 0.7), (0, 0, 5.0, 0.9)])
    f = _fetcher("BL2", LatencyModel("fixed", value=2.0), 10, 1, versions)
    one = _step_events([(0, 0)])
    delays = [f.step(t, one)[0] for t in (0.0, 6.0, 8.0, 25.0)]
    # 0: fetched, v0 in at 2; 6: cached v0 still valid (v1's invalidation comes at 7);
    # 8: dropped at 7, fetched again: v1 in at 10; 25: dropped at 22, v2 in at 27
    assert delays == [2.0, 0.0, 2.0, 2.0]
    rep = f.report()
    assert rep["versions"].tolist() == [0, 0, 1, 2]
    assert (rep["requests"][0], rep["hits"][0], rep["misses"][0]) == (3, 1, 3)
    assert (rep["refetches"][0], rep["invalidations"][0]) == (2, 2)
    assert f.totals().refetches == 2 and f.totals().invalidations == 2


def test_a_copy_invalidated_while_its_device_waits_is_fetched_again():
    # A = L[0, 0] gets version 1 at 9 (its invalidation arrives at 11); at step 10 the
    # device needs A (cached) and B = L[0, 1] (in at 12)
    versions = _versions([(0, 0, 9.0, 0.9)])
    out = {}
    for strategy in ("BL2", "LzEval"):
        f = _fetcher(strategy, LatencyModel("fixed", value=2.0), 10, 1, versions)
        f.step(0.0, _step_events([(0, 0)]))
        out[strategy] = (f.step(10.0, _step_events([(0, 0), (0, 1)])).tolist(),
                         f.report()["versions"][1:].tolist(), f.totals().refetches)
    # blocking: decided at 12 > 11, so A is fetched again at 11 (v1, in at 13)
    assert out["BL2"] == ([3.0, 3.0], [1, 0], 1)
    # lazy: A's event is decided at 10, before the invalidation
    assert out["LzEval"] == ([0.0, 2.0], [0, 0], 0)


def test_versions_schedule_lookups():
    v = _versions([(1, 0, 3.0, 0.1), (1, 0, 1.0, 0.2), (2, 2, 0.0, 0.3)])
    h = element_hash("L", [np.array([1, 1, 1, 2, 2, 0]), np.array([0, 0, 0, 2, 2, 0])])
    at = np.array([0.5, 1.0, 3.0, -1.0, 0.0, 9.0])
    assert v.version_at(h, at).tolist() == [0, 1, 2, 0, 1, 0]
    rows = v.value_row(h, v.version_at(h, at))
    assert [None if r < 0 else float(v.values[r]) for r in rows] == \
        [None, 0.2, 0.1, None, 0.3, None]
    table = v.invalidation_table(lambda h, k: np.where(k == 1, 5.0, 0.5))
    # element (1, 0): v1 at 1 (+5 = 6), v2 at 3 (+0.5 = 3.5): a copy of v0 expires at 3.5
    assert v.expiry(h[:3], np.array([0, 1, 2]), table).tolist() == [3.5, 3.5, np.inf]
    with pytest.raises(QueryError, match="one length"):
        Versions("L", [np.arange(2)], np.zeros(3), np.zeros(3))


QUERY = """SEQ (R a+[]) WHERE SAME[h] AND a[i].v > L[a[i].h, a[i].s]
AND a[i].time + 1 = a[i+1].time AND LENGTH(a+[]) > 1 WITHIN 100
RETURN out(a[last].time, a[last].h)"""


def _events(t: int) -> pd.DataFrame:
    keys = np.arange(6)
    return pd.DataFrame({"type": "R", "time": t, "h": keys, "s": 0,
                         "v": np.where(keys % 2, 0.0, 1.0)})


def _run(strategy: str, versions: Versions | None, shed: bool = False):
    source = _source(LatencyModel("fixed", value=1.0), slots=1)
    session = cep_core.compile(QUERY, remote={"L": source}).start(
        "strict-contiguity", runs="one-per-partition")
    if shed:
        session = KeyedShedder(session, "RI", lambda k: k // 3, np.full(2, 1.0),
                               bound=np.full(2, 0.5), min_samples=1, seed=1)
    fetcher = KeyedFetcher(session, source, "L", ("h", "s"), lambda k: k // 3, 2,
                           strategy, 6, lambda r: r, versions=versions)
    out = pd.concat([fetcher.feed(_events(t), as_frame=True) for t in range(6)],
                    ignore_index=True)
    return out, fetcher


@pytest.mark.parametrize("strategy", ["BL2", "LzEval"])
def test_the_predicate_reads_the_new_value_once_the_invalidation_is_in(strategy):
    # L[0, 0] = 5.0 from 2 (its invalidation in at 3): key 0's events (v = 1) pass
    # v > L while they read 0.5 and fail once they read 5.0
    plain, _ = _run(strategy, None)
    out, fetcher = _run(strategy, _versions([(0, 0, 2.0, 5.0)]))
    read = fetcher.report()["versions"].reshape(6, 6)[:, 0]
    assert read.tolist() == [0, 0, 0, 1, 1, 1]  # the copy of v0 holds until 3
    assert fetcher.totals().refetches == 1 and fetcher.totals().invalidations == 1
    assert set(plain.loc[plain["h"] == 0, "time"]) == {1, 2, 3, 4, 5}
    assert set(out.loc[out["h"] == 0, "time"]) == {1, 2}  # read 0.5 at 1 and 2
    others = out[out["h"] != 0].drop(columns="data_delay").reset_index(drop=True)
    pd.testing.assert_frame_equal(
        others, plain[plain["h"] != 0].drop(columns="data_delay").reset_index(drop=True))


@pytest.mark.parametrize("shed", [False, True])
@pytest.mark.parametrize("strategy", KEYED_FETCH_STRATEGIES)
def test_a_keyed_session_with_an_empty_schedule_is_the_unversioned_run(strategy, shed):
    plain, a = _run(strategy, None, shed)
    out, b = _run(strategy, _versions([]), shed)
    pd.testing.assert_frame_equal(out, plain)
    ra, rb = a.report(), b.report()
    assert all(np.array_equal(ra[k], rb[k]) for k in ra) and a.totals() == b.totals()


def test_a_shedders_input_tests_read_the_version_current_at_the_step():
    # before the shedder has chosen a step's events nothing is fetched for them: its input
    # tests read the latest version published by the step's time, then the events the
    # version they were served
    source = _source(LatencyModel("fixed", value=1.0), slots=1)
    session = KeyedShedder(cep_core.compile(QUERY, remote={"L": source}).start(
        "strict-contiguity", runs="one-per-partition"), "RI", lambda k: k // 3,
        np.full(2, 1.0), bound=np.full(2, 0.5), min_samples=1, seed=1)
    fetcher = KeyedFetcher(session, source, "L", ("h", "s"), lambda k: k // 3, 2, "BL2", 6,
                           versions=_versions([(0, 0, 2.0, 5.0), (1, 0, 9.0, 7.0)]))
    args = [np.array([0, 1, 2]), np.array([0, 0, 0])]
    table = np.full(3, 0.5)
    assert fetcher._overlay(args, table).tolist() == [0.5, 0.5, 0.5]  # outside a step
    fetcher._pending, session.kept = (3.0, _events(3)), None
    assert fetcher._overlay(args, table).tolist() == [5.0, 0.5, 0.5]
    fetcher._pending = (9.0, _events(9))
    assert fetcher._overlay(args, table).tolist() == [5.0, 7.0, 0.5]


def test_one_element_served_at_two_versions_in_a_step_is_refused():
    # L[0, 0] is needed by keys 0 and 3 (two devices): one holds v0, the other fetches v1
    source = _source(LatencyModel("fixed", value=1.0), slots=1)
    session = cep_core.compile(QUERY.replace("L[a[i].h, a[i].s]", "L[a[i].s, a[i].s]"),
                               remote={"L": source}).start(
        "strict-contiguity", runs="one-per-partition")
    f = KeyedFetcher(session, source, "L", ("s", "s"), lambda k: k // 3, 2, "BL2", 6,
                     versions=Versions("L", [np.array([0]), np.array([0])],
                                       np.array([0.5]), np.array([5.0])))
    first = _events(0)
    f.feed(first[first["h"] == 0])
    with pytest.raises(QueryError, match="two versions"):
        f.feed(_events(1).iloc[[0, 3]])


@st.composite
def _keyed_cases(draw):
    pubs = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2),
                                   st.integers(-4, 16).map(lambda x: x / 2),
                                   st.integers(1, 9).map(lambda x: x / 10)), max_size=20))
    slots = draw(st.lists(st.lists(st.integers(0, 2), min_size=6, max_size=6),
                          min_size=2, max_size=6))
    spread = draw(st.sampled_from([0.0, 0.5, 3.0]))
    return dict(pubs=pubs, slots=np.array(slots), capacity=draw(st.sampled_from([1, 3, 20])),
                latency=LatencyModel("uniform", low=0.2, high=0.2 + spread))


def _version_value(pubs: list[tuple], key: int, slot: int, v: int) -> float:
    if v == 0:
        return 0.5
    mine = [p for p in pubs if p[0] == key and p[1] == slot]
    order = np.argsort([p[2] for p in mine], kind="stable")
    return mine[order[v - 1]][3]


@pytest.mark.parametrize("strategy", KEYED_FETCH_STRATEGIES)
@settings(max_examples=20, deadline=None, derandomize=True)
@given(case=_keyed_cases())
def test_a_keyed_session_reads_the_value_of_the_version_served(strategy, case):
    source = _source(case["latency"])
    query = QUERY.replace("RETURN out(a[last].time, a[last].h)",
                          "RETURN out(a[last].time, a[last].h, L[a[last].h, a[last].s] AS x)")
    session = cep_core.compile(query, remote={"L": source}).start(
        "strict-contiguity", runs="one-per-partition")
    f = KeyedFetcher(session, source, "L", ("h", "s"), lambda k: k // 3, 2, strategy,
                     case["capacity"], lambda r: r.assign(s=(r["s"] + 1) % 3),
                     versions=_versions(case["pubs"]))
    slots = case["slots"]
    out = pd.concat([f.feed(_events(t).assign(s=slots[t]), as_frame=True)
                     for t in range(len(slots))], ignore_index=True)
    served = f.report()["versions"].reshape(len(slots), 6)
    expected = [_version_value(case["pubs"], h, slots[t, h], served[t, h])
                for t, h in zip(out["time"], out["h"], strict=True)]
    assert out["x"].tolist() == expected


def test_a_versions_latency_depends_on_the_element_and_the_version_only():
    latency = LatencyModel("uniform", low=1.0, high=9.0)
    a, b = (_fetcher("BL2", latency, 5, 1, _versions([])) for _ in range(2))
    h = element_hash("L", [np.zeros(3, np.int64), np.zeros(3, np.int64)])
    versions = np.arange(3)
    assert a._latency(h, versions).tolist() == b._latency(h, versions).tolist()
    assert len(set(a._latency(h, versions).tolist())) == 3
    assert a._latency(h[:1], versions[:1])[0] == a._latency(h[:1])[0]  # version 0: as before
