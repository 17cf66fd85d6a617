"""The keyed vectorized engine against the reference engine (cep_core.engine.keyed).

Differential tests: random queries of the keyed class (flat SEQ with Kleene elements,
SAME key, numpy-compilable predicates, lookups into tables, windows) over random streams
must give the reference engine's outputs exactly, in order, under skip-till-next-match
and strict contiguity with one run per partition, fed at once or in batches, and
resumed from a pickle."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import cep_core
from cep_core.errors import QueryError

ONE = "one-per-partition"
POLICIES = ["skip-till-next-match", "strict-contiguity"]
TYPES = "ABC"


def random_stream(rng: np.random.Generator, n: int) -> list[dict]:
    times = np.cumsum(rng.integers(0, 3, n))
    out = []
    for j in range(n):
        out.append({"type": str(rng.choice(list("ABCD"), p=[.35, .3, .25, .1])),
                    "time": int(times[j]), "k": int(rng.integers(0, 4)),
                    "x": int(rng.integers(0, 5)), "y": int(rng.integers(0, 4)),
                    "z": float(rng.integers(0, 8)) / 2})
    return out


def random_query(rng: np.random.Generator, one_kleene: bool = False) -> str:
    """A query of the keyed class: 1-3 elements, each possibly Kleene (``one_kleene``:
    one Kleene element), 0-4 predicates drawn from templates that cover each reference
    kind, a window, a RETURN."""
    n = 1 if one_kleene else int(rng.integers(1, 4))
    elems, vars_ = [], []
    for j in range(n):
        v, t = "abc"[j], str(rng.choice(list(TYPES)))
        kleene = one_kleene or bool(rng.random() < 0.55)
        elems.append(f"{t}+ {v}[]" if kleene else f"{t} {v}")
        vars_.append((v, kleene))
    c = lambda: int(rng.integers(0, 4))  # noqa: E731
    preds = []
    for _ in range(int(rng.integers(0, 5))):
        j = int(rng.integers(0, n))
        v, kl = vars_[j]
        prev = vars_[j - 1] if j else None
        if kl:
            options = [f"{v}[i].x < {v}[i+1].x + {c()}", f"{v}[i].y != {c()}",
                       f"{v}[i].time + {c()} >= {v}[i+1].time",
                       f"LENGTH({v}+[]) >= {1 + c() // 2}", f"{v}[last].x >= {v}[1].x",
                       f"{v}[2].y <= {c()}", f"{v}[i].z * 2 > tab[{v}[i].k]",
                       f"({v}[i].x = 0 OR {v}[i].y / {v}[i].x < 1)",
                       f"NOT ({v}[i].x IN {{1, 3}})", f"abs({v}[i].x - {v}[i].y) <= {c()}",
                       f"{v}[i].y >= tab2[{v}[i].k, {v}[i].x]"]
        else:
            options = [f"{v}.x > {c()}", f"{v}.x + {v}.y <= {c() + 3}",
                       f"{v}.y IN {{0, 2}}", f"{v}.z >= tab[{v}.k]",
                       f"({v}.y = 1 OR {v}.x / ({v}.y - 1) > 1)",
                       f"max({v}.x, {v}.y) < {c() + 2}", f"{v}.z < tab2[{v}.k, {v}.x]"]
        if prev is not None:
            pv, pkl = prev
            if pkl:
                options.append(f"{v}{'[i]' if kl else ''}.x >= {pv}[last].x")
                options.append(f"LENGTH({pv}+[]) < {2 + c()}")
            else:
                options.append(f"{v}{'[i]' if kl else ''}.y != {pv}.y")
        preds.append(str(rng.choice(options)))
    where = " AND ".join(["SAME[k]", *preds])
    window = "" if rng.random() < 0.2 else f" WITHIN {int(rng.integers(2, 15))}"
    args = []
    for v, kl in vars_:
        if kl:
            args += [f"{v}[1].x", f"{v}[last].y", f"LENGTH({v}+[])", f"{v}[2].z AS second"]
        else:
            args += [f"{v}.x", f"{v}.time"]
    args.append(f"{vars_[0][0]}{'[1]' if vars_[0][1] else ''}.k AS key")
    return (f"PATTERN SEQ({', '.join(elems)}) WHERE {where}{window} "
            f"RETURN R({', '.join(args)})")


TABLE = pd.Series([0.5, 1.0, 1.5, 2.0], index=pd.Index([0, 1, 2, 3], name="k"))
_KX = pd.MultiIndex.from_product([range(4), range(5)], names=["k", "x"])
TABLE2 = pd.Series(np.arange(20) % 4, index=_KX)  # (k, x) -> 0..3


def both(q, events, policy):
    ref = q.start(policy, runs=ONE, engine="reference")
    fast = q.start(policy, runs=ONE)
    assert (ref.engine_name, fast.engine_name) == ("reference", "keyed-vectorized")
    return ref.run(events), ref.counters.as_dict(), fast.run(events), fast.counters.as_dict()


@pytest.mark.parametrize("seed", range(120))
def test_random_queries_match_the_reference_engine(seed):
    rng = np.random.default_rng(seed)
    text = random_query(rng)
    tables = {"tab": TABLE, "tab2": TABLE2} if seed % 2 else \
        {"tab": TABLE.to_dict(), "tab2": TABLE2.to_dict()}
    q = cep_core.compile(text, params=tables)
    why = q.refusals()["keyed-vectorized"]
    assert why is None, (text, why)
    events = random_stream(rng, int(rng.integers(40, 160)))
    for policy in POLICIES:
        ref, rc, fast, fc = both(q, events, policy)
        assert fast == ref, (text, policy)
        rc.pop("pm_dropped"), fc.pop("pm_dropped")  # window drops are counted lazily
        assert fc == rc, (text, policy)


@pytest.mark.parametrize("seed", range(20))
def test_batches_and_pickle_resume_match_one_run(seed):
    rng = np.random.default_rng(1000 + seed)
    q = cep_core.compile(random_query(rng), params={"tab": TABLE, "tab2": TABLE2})
    events = random_stream(rng, 150)
    policy = POLICIES[seed % 2]
    whole = q.run(events, policy=policy, runs=ONE, engine="reference")
    session = q.start(policy, runs=ONE)
    assert session.engine_name == "keyed-vectorized"
    cuts = sorted(rng.choice(np.arange(1, 150), 4, replace=False).tolist())
    out = []
    for lo, hi in zip([0, *cuts], [*cuts, 150], strict=True):
        out += session.feed(pd.DataFrame(events[lo:hi]) if lo % 2 else events[lo:hi])
        session = pickle.loads(pickle.dumps(session))
    out += session.flush()
    assert out == whole


def test_the_whole_batch_scan_matches_the_waves_and_the_reference(monkeypatch):
    """One Kleene element under strict contiguity (cep_core.engine.segment_scan): the
    scan's outputs and counters equal the waves' and the reference engine's, at once and
    in batches; the random queries give it enough batches to take."""
    import cep_core.engine.keyed as keyed

    scanned: list[bool] = []  # per fed batch: whether the scan took it
    scan = keyed.scan_batch

    def recorded(*args):
        scanned.append(scan(*args))
        return scanned[-1]

    monkeypatch.setattr(keyed, "scan_batch", recorded)
    took = 0
    for seed in range(80):
        rng = np.random.default_rng(5000 + seed)
        text = random_query(rng, one_kleene=True)
        q = cep_core.compile(text, params={"tab": TABLE, "tab2": TABLE2})
        events = random_stream(rng, int(rng.integers(40, 160)))
        scanned.clear()
        ref, rc, fast, fc = both(q, events, "strict-contiguity")
        took += scanned == [True]
        assert fast == ref, text
        with monkeypatch.context() as m:
            m.setattr(keyed, "scan_supported", lambda eng: False)
            session = q.start("strict-contiguity", runs=ONE)
            waves = session.run(events)
        assert waves == fast and session.counters.as_dict() == fc, text
        rc.pop("pm_dropped"), fc.pop("pm_dropped")  # window drops are counted lazily
        assert fc == rc, text
        session = q.start("strict-contiguity", runs=ONE)
        cut = len(events) // 3
        parts = [session.feed(pd.DataFrame(events[lo:hi]))
                 for lo, hi in ((0, cut), (cut, 2 * cut), (2 * cut, len(events)))]
        assert [r for part in parts for r in part] == ref, text
    assert took >= 20, f"the scan took only {took} of 80 streams"


def test_listing_61_runs_on_the_keyed_engine_and_matches():
    rng = np.random.default_rng(7)
    houses, times = 50, 1130 + 5 * np.arange(24)
    hh, tt = np.tile(np.arange(houses), len(times)), np.repeat(times, houses)
    lam_v = rng.uniform(0, 10, hh.size)
    acc = lam_v + rng.normal(0.3, 1, hh.size)
    lam = pd.Series(lam_v, index=pd.MultiIndex.from_arrays([hh, tt]))
    frame = pd.DataFrame({"type": "smartMeterEvent", "time": tt, "houseID": hh,
                          "groupID": hh % 3, "accLoad": acc})
    text = """SEQ (smartMeterEvent a+[])
WHERE SAME[houseID] AND a[i].time > t_start AND a[i].time < t_end
AND a[i].accLoad > λ[a[i].houseID, a[i].time]
AND a[i].time+5 = a[i+1].time
AND LENGTH(a+[]) > m_user
WITHIN 2h
RETURN userNonComplianceEvent(a[last].time, a[m_user].houseID, a[m_user].groupID,
                              a[m_user].accLoad)"""
    params = {"t_start": 1110, "t_end": 1230, "m_user": 3, "λ": lam}
    q = cep_core.compile(text, params=params, time_unit="min")
    assert q.explain().splitlines()[0].startswith("engine: keyed-vectorized")
    assert "engine: keyed-vectorized" in q.explain("strict-contiguity", ONE)
    assert "engine: reference" in q.explain("skip-till-any-match")
    ref, _, fast, _ = both(q, frame, "strict-contiguity")
    assert fast == ref and len(fast) > 20
    # one run per household: no duplicate (house, detection time) events
    assert len({(r["houseID"], r["time"]) for r in fast}) == len(fast)
    # every output is a streak of more than m_user consecutive failing tests
    keys = zip(hh.tolist(), tt.tolist(), strict=True)
    fail = dict(zip(keys, (acc > lam_v).tolist(), strict=True))
    for r in fast:
        assert all(fail[(r["houseID"], r["time"] - 5 * j)] for j in range(4))

    # editing the query text changes the results, on both engines alike
    edited = cep_core.compile(text.replace("LENGTH(a+[]) > m_user", "LENGTH(a+[]) > 1"),
                              params=params, time_unit="min")
    ref2, _, fast2, _ = both(edited, frame, "strict-contiguity")
    assert fast2 == ref2 and len(fast2) > len(fast)
    stricter = cep_core.compile(text.replace("a[i].accLoad > λ", "a[i].accLoad > 1 + λ"),
                                params=params, time_unit="min")
    ref3, _, fast3, _ = both(stricter, frame, "strict-contiguity")
    assert fast3 == ref3 and len(fast3) < len(fast)


@pytest.mark.parametrize("text, reason", [
    ("PATTERN SEQ(A a, B b) WHERE a.x = b.x RETURN R(a.x)", "partition"),
    ("PATTERN SEQ(A a, NEG C+ n[], B b) WHERE SAME[k] RETURN R(a.x)", "NEG on a Kleene"),
    ("PATTERN SEQ(A a, (B b OR C c)) WHERE SAME[k] RETURN R(a.x)", "OR"),
    ("PATTERN SEQ(A a, SEQ(B b, C c)+) WHERE SAME[k] RETURN R(a.x)", "SEQ(..)+"),
    ("PATTERN SEQ(A+ a[]) WHERE SAME[k] AND AVG(a[i].x) > 1 RETURN R(a[1].x)", "Aggregate"),
    ("PATTERN SEQ(A+ a[], B b) WHERE SAME[k] AND a[i].x < b.x RETURN R(b.x)", "every i"),
    ("PATTERN SEQ(A a) WHERE SAME[k] RETURN (a.x)", None),
    ("PATTERN SEQ(A a) WHERE SAME[k]", "RETURN"),
])
def test_outside_the_class_runs_on_the_reference_engine(text, reason):
    q = cep_core.compile(text)
    if reason is None:
        assert q.refusals()["keyed-vectorized"] is None
        return
    assert reason in q.refusals()["keyed-vectorized"]
    assert q.engine_for("strict-contiguity", ONE) == "reference"
    assert "does not apply" in q.explain()
    with pytest.raises(QueryError, match="does not apply"):
        q.start("strict-contiguity", runs=ONE, engine="keyed-vectorized")


@pytest.mark.parametrize("table", [TABLE2, TABLE2.to_dict()], ids=["series", "dict"])
def test_a_missing_table_entry_is_the_same_error(table):
    q = cep_core.compile("PATTERN SEQ(A+ a[]) WHERE SAME[k] AND a[i].x > 0 AND "
                         "a[i].y >= tab2[a[i].k, a[i].x] RETURN R(a[1].x)",
                         params={"tab2": table})
    ok = [{"type": "A", "time": j, "k": j % 4, "x": j % 5, "y": 2} for j in range(30)]
    # x = 0 fails the local predicate first, so k = 9 is never looked up there
    hidden = ok + [{"type": "A", "time": 30, "k": 9, "x": 0, "y": 2}]
    both(q, hidden, "strict-contiguity")
    bad = ok + [{"type": "A", "time": 30, "k": 9, "x": 1, "y": 2}]
    for engine in ("reference", None):
        with pytest.raises(QueryError, match=r"tab2\[9, 1\]: no such entry"):
            q.run(bad, policy="strict-contiguity", runs=ONE, engine=engine)


def test_one_per_partition_on_table_24_is_the_non_greedy_result():
    """Table 2.4 (dissertation §2.2.2): under skip-till-next-match, one run per
    partition gives the same matches as a run per event."""
    q = cep_core.compile("PATTERN SEQ(A a, B b, A c) WITHIN 10")
    events = [{"type": t, "time": j + 1} for j, t in enumerate("ABBABA")]
    every = q.matches(events, policy="skip-till-next-match")
    single = q.matches(events, policy="skip-till-next-match", runs=ONE)
    assert single == every == [{"a": 0, "b": 1, "c": 3}, {"a": 3, "b": 4, "c": 5}]


def test_one_per_partition_starts_only_without_a_live_run():
    q = cep_core.compile("PATTERN SEQ(A+ a[], B b) WHERE SAME[k] RETURN R(a[1].time, "
                         "LENGTH(a+[]) AS n, b.time)")
    events = [{"type": t, "time": j, "k": 0} for j, t in enumerate("AAABAB")]
    every = q.run(events, policy="skip-till-next-match")
    single = q.run(events, policy="skip-till-next-match", runs=ONE)
    assert [(r["time"], r["n"]) for r in every] == [(0, 3), (1, 2), (2, 1), (4, 1)]
    assert [(r["time"], r["n"]) for r in single] == [(0, 3), (4, 1)]


def test_bad_options_are_named():
    q = cep_core.compile("PATTERN SEQ(A a) WHERE SAME[k] RETURN R(a.x)")
    with pytest.raises(QueryError, match="runs option"):
        q.run([], policy="strict-contiguity", runs="each")
    with pytest.raises(QueryError, match="unknown engine"):
        q.run([], policy="strict-contiguity", runs=ONE, engine="fast")


def test_a_table_filled_in_as_the_stream_goes_is_read_from_the_next_batch():
    """A DataFrame table whose later columns a stream fills in place, re-read with
    ``reload_tables``, gives the outputs of a session over the whole table; a table whose
    rows or columns changed, a name that is no lookup and an engine that cannot are
    refused."""
    text = ("SEQ (A a+[]) WHERE SAME[k] AND a[i].x > T[a[i].k, a[i].time] "
            "WITHIN 100 RETURN R(a[last].time, a[last].k)")
    rng = np.random.default_rng(3)
    times, keys = np.arange(1, 9), np.arange(4)
    full = pd.DataFrame(rng.integers(0, 4, (4, 8)).astype(float), index=keys, columns=times)
    events = pd.DataFrame({"type": "A", "time": np.repeat(times, 4), "k": np.tile(keys, 8),
                           "x": rng.integers(0, 5, 32)})
    whole = cep_core.compile(text, params={"T": full}).start(POLICIES[0], runs=ONE)\
        .feed(events, as_frame=True)
    growing = full.copy()
    growing.iloc[:, 3:] = np.nan
    session = cep_core.compile(text, params={"T": growing}).start(POLICIES[0], runs=ONE)
    parts = [session.feed(events[events["time"] <= 3], as_frame=True)]
    growing.iloc[:, 3:] = full.iloc[:, 3:].to_numpy()
    session.reload_tables("T")
    parts.append(session.feed(events[events["time"] > 3], as_frame=True))
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole)
    assert len(whole)
    growing[9] = 0.0
    with pytest.raises(QueryError, match="rows or columns"):
        session.reload_tables("T")
    with pytest.raises(QueryError, match="not a lookup"):
        session.reload_tables("U")
    reference = cep_core.compile(text, params={"T": full}).start(POLICIES[0], runs=ONE,
                                                                 engine="reference")
    with pytest.raises(QueryError, match="does not re-read"):
        reference.reload_tables("T")
