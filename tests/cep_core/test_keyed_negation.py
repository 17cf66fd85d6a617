"""NEG on the keyed vectorized engine (cep_core.engine.keyed_negation) against the
reference engine.

Differential tests: random flat SEQs with NEG elements between elements, before the
first and after the last (with predicates relating the NEG variable to the match's
variables, before and after it), over random streams of several keys, must give the
reference engine's outputs exactly, in order, and its counters, under
skip-till-next-match and strict contiguity with one run per partition, fed at once or
in batches (resumed from a pickle) and flushed."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from test_engine_keyed import ONE, POLICIES, TABLE, random_stream

import cep_core
from cep_core.errors import QueryError

KEYED = "keyed-vectorized"


def random_neg_query(rng: np.random.Generator) -> tuple[str, str]:
    """A query of the keyed class with 1-2 NEG elements (before the first element,
    between two, after the last), and the same query without them."""
    n = int(rng.integers(1, 4))
    pos = []  # (var, type, kleene)
    for j in range(n):
        pos.append(("abc"[j], str(rng.choice(list("ABC"))), bool(rng.random() < 0.4)))
    c = lambda: int(rng.integers(0, 4))  # noqa: E731

    def one(v: str, kleene: bool, slot: str = "last") -> str:
        return f"{v}[{slot}]" if kleene else v

    between = list(range(1, n))
    slots = rng.choice(n + 1, int(rng.integers(1, 3)), replace=False).tolist()
    if between and rng.random() < 0.5:
        slots[0] = int(rng.choice(between))  # more NEGs between elements
    negs: dict[int, list[str]] = {}
    preds = []
    for j, slot in enumerate(sorted(slots)):
        v, t = f"n{j}", str(rng.choice(list("ABCD")))
        negs.setdefault(slot, []).append(f"NEG {t} {v}")
        if 0 < slot < n:  # between: may read its neighbours only
            (lv, _, lk), (rv, _, rk) = pos[slot - 1], pos[slot]
            options = [f"{v}.x > {c()}", f"{v}.x >= {one(lv, lk)}.x",
                       f"{v}.y != {one(lv, lk)}.y", f"{v}.z >= tab[{v}.k]"]
            if lk:
                options.append(f"{v}.x < LENGTH({lv}+[])")
            late = [f"{v}.y = {one(rv, rk, '1')}.y", f"{v}.x + {c() // 2} >= {one(rv, rk)}.x"]
            if rng.random() < 0.5:  # read when the element after the NEG arrives
                preds.append((v, str(rng.choice(late))))
        else:  # at an end: may read any element
            u, _, uk = pos[int(rng.integers(0, n))]
            options = [f"{v}.x > {c()}", f"{v}.x >= {one(u, uk)}.x",
                       f"{v}.y = {one(u, uk, '1')}.y", f"{v}.z >= tab[{v}.k]",
                       f"{v}.y + {one(u, uk)}.x > {c() + 2}"]
        for _ in range(int(rng.integers(0, 3))):
            preds.append((v, str(rng.choice(options))))
    for j, (v, _, kleene) in enumerate(pos):
        if rng.random() < 0.4:
            preds.append((None, f"{v}[i].x < {v}[i+1].x + {c()}" if kleene
                          else f"{v}.x > {c()}"))
        if j and rng.random() < 0.3:
            pv, _, pk = pos[j - 1]
            preds.append((None, f"{one(v, kleene, '1')}.y != {one(pv, pk)}.y"))
    window = "" if rng.random() < 0.15 else f" WITHIN {int(rng.integers(2, 12))}"
    args = []
    for v, _, kleene in pos:
        args += [f"{v}[1].x", f"LENGTH({v}+[])"] if kleene else [f"{v}.x", f"{v}.time"]
    if rng.random() < 0.2:
        args.append(f"{one(pos[-1][0], pos[-1][2])}.time AS time")

    def text(with_negs: bool) -> str:
        elems = []
        for j, (v, t, kleene) in enumerate(pos):
            elems += negs.get(j, []) if with_negs else []
            elems.append(f"{t}+ {v}[]" if kleene else f"{t} {v}")
        elems += negs.get(n, []) if with_negs else []
        where = ["SAME[k]"] + [p for owner, p in preds if with_negs or owner is None]
        return (f"PATTERN SEQ({', '.join(elems)}) WHERE {' AND '.join(where)}{window} "
                f"RETURN R({', '.join(args)})")

    return text(True), text(False)


@pytest.mark.parametrize("seed", range(8))
def test_random_neg_queries_match_the_reference_engine(seed):
    """Each query on two policies, fed at once: outputs in order, and counters (a window
    drop is counted when the key's next event arrives, so not ``pm_dropped``)."""
    affected = 0
    for case in range(25):
        rng = np.random.default_rng(seed * 1000 + case)
        text, plain = random_neg_query(rng)
        q = cep_core.compile(text, params={"tab": TABLE})
        why = q.refusals()["keyed-vectorized"]
        assert why is None, (text, why)
        events = random_stream(rng, int(rng.integers(30, 120)))
        for policy in POLICIES:
            ref_session = q.start(policy, runs=ONE, engine="reference")
            ref = ref_session.run(events)
            rc = ref_session.counters.as_dict()
            fast_session = q.start(policy, runs=ONE)
            fast = fast_session.run(events)
            assert fast_session.engine_name == KEYED
            assert fast == ref, (text, policy)
            fc = fast_session.counters.as_dict()
            rc.pop("pm_dropped"), fc.pop("pm_dropped")
            assert fc == rc, (text, policy)
            without = cep_core.compile(plain, params={"tab": TABLE}).run(
                events, policy=policy, runs=ONE)
            affected += without != ref
    assert affected >= 10, f"the NEG elements changed the outputs of {affected} runs only"


@pytest.mark.parametrize("seed", range(6))
def test_batches_pickles_and_flush_match_one_run(seed):
    """Fed in batches (lists and frames), pickled between them: the outputs of the
    batches and of flush() are the reference engine's over the whole stream."""
    for case in range(10):
        rng = np.random.default_rng(50_000 + seed * 100 + case)
        text, _ = random_neg_query(rng)
        q = cep_core.compile(text, params={"tab": TABLE})
        events = random_stream(rng, 100)
        policy = POLICIES[case % 2]
        whole = q.run(events, policy=policy, runs=ONE, engine="reference")
        session = q.start(policy, runs=ONE)
        assert session.engine_name == KEYED
        cuts = sorted(rng.choice(np.arange(1, 100), 3, replace=False).tolist())
        out = []
        for lo, hi in zip([0, *cuts], [*cuts, 100], strict=True):
            out += session.feed(pd.DataFrame(events[lo:hi]) if lo % 2 else events[lo:hi])
            session = pickle.loads(pickle.dumps(session))
        out += session.flush()
        assert out == whole, (text, policy, cuts)


def test_a_neg_between_elements_drops_the_run_and_the_next_event_starts_one():
    """Under skip-till-next-match a qualifying B between a and c ends the key's run
    (``pm_dropped``); under strict contiguity any event the run does not take ends it."""
    q = cep_core.compile("PATTERN SEQ(A a, NEG B n, C c) WHERE SAME[k] AND n.v > a.v "
                         "RETURN R(a.id AS a, c.id AS c)")
    events = [{"type": t, "time": j, "k": 0, "v": v}
              for j, (t, v) in enumerate([("A", 1), ("B", 0), ("C", 0), ("A", 1), ("B", 2),
                                          ("A", 0), ("C", 0)])]
    for engine in ("reference", None):
        session = q.start("skip-till-next-match", runs=ONE, engine=engine)
        assert session.run(events) == [
            {"type": "R", "a": 0, "c": 2, "time": 2}, {"type": "R", "a": 5, "c": 6, "time": 6}]
        assert session.engine_name == ("reference" if engine else KEYED)
        assert session.counters.pm_dropped == 1  # the run of a=3, by n=4 (2 > 1)
        assert q.run(events, policy="strict-contiguity", runs=ONE, engine=engine) == [
            {"type": "R", "a": 5, "c": 6, "time": 6}]


def test_a_neg_reading_the_next_element_keeps_candidates_until_the_run_moves():
    """``n.y = c.y`` is read when a C arrives: a B blocks only a C of its y, and a Kleene
    ``a`` taking another event clears the candidates (only later B count)."""
    q = cep_core.compile("PATTERN SEQ(A+ a[], NEG B n, C c) WHERE SAME[k] AND n.y = c.y "
                         "RETURN R(a[1].id AS first, LENGTH(a+[]) AS n, c.id AS c)")
    events = [{"type": t, "time": j, "k": 0, "y": y}
              for j, (t, y) in enumerate([("A", 0), ("B", 1), ("C", 2), ("A", 0), ("B", 1),
                                          ("C", 1), ("A", 0), ("C", 1)])]
    for engine in ("reference", None):
        session = q.start("skip-till-next-match", runs=ONE, engine=engine)
        assert session.run(events) == [
            {"type": "R", "first": 0, "n": 1, "c": 2, "time": 2},
            {"type": "R", "first": 3, "n": 2, "c": 7, "time": 7}]  # C=5 was blocked
        assert session.engine_name == ("reference" if engine else KEYED)


def test_a_trailing_match_waits_for_an_event_of_any_key_or_the_flush():
    """The DR query of docs/language.md: an alert 15 minutes after a failed test unless a
    passing test of the same house came in between; it is output at the first event
    after the window (of any house), or by flush()."""
    q = cep_core.compile("PATTERN SEQ(testReading f, NEG testReading p) WHERE SAME[houseID] "
                         "AND f.failed = 1 AND p.failed = 0 WITHIN 15min "
                         "RETURN stillFailing(f.houseID AS houseID, f.time AS failedAt)",
                         time_unit="min")
    assert q.engine_for("skip-till-next-match", ONE) == KEYED
    assert q.explain("skip-till-next-match", ONE).startswith(f"engine: {KEYED}")
    assert q.explain().startswith(f"engine: {KEYED} for skip-till-next-match")

    def reading(t, house, failed):
        return {"type": "testReading", "time": t, "houseID": house, "failed": failed}

    for engine in ("reference", None):
        session = q.start("skip-till-next-match", runs=ONE, engine=engine)
        assert session.engine_name == (engine or KEYED)
        assert session.feed([reading(0, 1, 1), reading(0, 2, 1), reading(5, 1, 0)]) == []
        assert session.feed([reading(15, 3, 0)]) == []  # 15 = 0 + 15: still open
        assert session.feed([reading(16, 3, 0), reading(20, 2, 1)]) == [
            {"type": "stillFailing", "houseID": 2, "failedAt": 0, "time": 15}]
        assert session.flush() == [
            {"type": "stillFailing", "houseID": 2, "failedAt": 20, "time": 35}]


@pytest.mark.parametrize("text", [
    "PATTERN SEQ(A a, NEG B n, C c) WHERE SAME[k] RETURN R(a.x)",
    "PATTERN SEQ(NEG B n, A a, C c) WHERE SAME[k] AND n.x > c.x WITHIN 5 RETURN R(a.x)",
    "PATTERN SEQ(A+ a[], C c, NEG B n) WHERE SAME[k] AND n.y = a[1].y WITHIN 5 "
    "RETURN R(c.x)",
])
def test_neg_queries_of_the_class_run_on_the_keyed_engine(text):
    q = cep_core.compile(text)
    assert q.refusals()["keyed-vectorized"] is None
    assert q.engine_for("strict-contiguity", ONE) == KEYED
    assert "keyed-vectorized does not apply" not in q.explain()


@pytest.mark.parametrize("text, reason", [
    ("PATTERN SEQ(A a, NEG B+ n[], C c) WHERE SAME[k] AND LENGTH(n[]) >= 2 RETURN R(a.x)",
     "NEG on a Kleene element"),
    ("PATTERN SEQ(A+ a[], NEG B n, C c) WHERE SAME[k] AND n.x > a[i].x RETURN R(c.x)",
     "over every i of a Kleene variable"),
])
def test_neg_outside_the_class_names_its_reason(text, reason):
    q = cep_core.compile(text)
    assert reason in q.refusals()["keyed-vectorized"]
    assert q.engine_for("skip-till-next-match", ONE) == "reference"
    line = q.explain().splitlines()[0]
    assert "keyed-vectorized does not apply: " in line and reason in line
    with pytest.raises(QueryError, match=reason):
        q.start("skip-till-next-match", runs=ONE, engine=KEYED)


@pytest.mark.parametrize("seed", range(4))
def test_a_settled_session_goes_on_after_a_flush_as_if_it_had_none(seed):
    """``settled()``: where it says yes, a flush in mid-stream emits nothing and the
    session's later outputs and counters are those of a session never flushed; queries
    with NEG (whose flush may finish matches) and other engines say no."""
    settled = 0
    for case in range(20):
        rng = np.random.default_rng(seed * 1000 + case)
        text, plain = random_neg_query(rng)
        events = random_stream(rng, int(rng.integers(30, 120)))
        cut = len(events) // 2
        for query, has_neg in ((text, True), (plain, False)):
            q = cep_core.compile(query, params={"tab": TABLE})
            flushed, whole = q.start(POLICIES[0], runs=ONE), q.start(POLICIES[0], runs=ONE)
            first = flushed.feed(events[:cut])
            assert flushed.settled() is not has_neg, query
            if flushed.settled():
                assert flushed.flush() == []
                settled += 1
            rest = flushed.feed(events[cut:]) + flushed.flush()
            if not has_neg:
                assert first + rest == whole.run(events), query
                assert flushed.counters.as_dict() == whole.counters.as_dict(), query
            assert not q.start(POLICIES[0], runs=ONE, engine="reference").settled()
    assert settled == 20
