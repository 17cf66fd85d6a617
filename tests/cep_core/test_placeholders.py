"""Placeholders (cep_core.approx.placeholders): events that were due at a known place of
the stream and did not arrive, taken under strict contiguity as missing elements with
``max_missing=k`` (docs/decisions.md, "Approximate matching"). The meter-tier reading of
the DR (Listing 6.1 with lost test readings): a run of m + 1 consecutive test slots whose
first and last are real failed tests, every slot between a failed test or a lost one, at
most k lost, fires at its last slot; one run per household and error level."""

from __future__ import annotations

import math
import random

import pytest

import cep_core

STRICT = "strict-contiguity"
LISTING = """SEQ (M a+[]) WHERE SAME[h] AND a[i].load > 1 AND a[i].time + 5 = a[i+1].time
AND LENGTH(a+[]) > m WITHIN 2h RETURN U(a[last].time AS time, a[last].h AS h)"""


def slots(text: str, house: int = 1, t0: int = 1000) -> list[dict]:
    """Test readings every 5 minutes: F failed (load 2), P passed (load 0), L lost (a
    placeholder: load unknown)."""
    out = []
    for j, c in enumerate(text):
        e = {"type": "M", "time": t0 + 5 * j, "h": house, "load": 2.0 if c == "F" else 0.0}
        if c == "L":
            e.update(load=math.nan, lost=True)
        out.append(e)
    return out


def windows(text: str, m: int, k: int) -> dict[int, list[int]]:
    """The oracle of the reading: for each slot j, the errors (lost slots) of the runs
    [s..j] of at least m + 1 slots with real failed first and last slots, only failed
    or lost slots between, at most k lost."""
    out: dict[int, list[int]] = {}
    for j, c in enumerate(text):
        if c != "F":
            continue
        for s in range(j - m, -1, -1):
            span = text[s:j + 1]
            if "P" in span or span.count("L") > k:
                break
            if text[s] == "F":
                out.setdefault(j, []).append(span.count("L"))
    return out


def fired(text: str, m: int, k: int, runs: str) -> list[tuple[int, int]]:
    q = cep_core.compile(LISTING, params={"m": m}, time_unit="min")
    return [((r["time"] - 1000) // 5, r["missing"])
            for r in q.run(slots(text), policy=STRICT, runs=runs, max_missing=k)]


@pytest.mark.parametrize("text,k,expected", [
    ("FFLF", 1, [(3, 1)]),            # the lost slot counts toward the four
    ("FFLF", 0, []),                  # k = 0: a lost reading breaks the run
    ("FFFLF", 1, [(4, 1)]),           # nothing inserted after the last real test
    ("FLFLFF", 1, [(5, 1)]),          # the run slides past its first lost slot
    ("FLLFF", 1, []),
    ("FLLFF", 2, [(3, 2), (4, 2)]),
    ("FFPFLF", 1, []),                # a passing test breaks a run
    ("LFFF", 1, []),                  # a run never begins with a lost slot
])
def test_meter_reading(text, k, expected):
    """m = 3: four consecutive test slots."""
    assert fired(text, 3, k, "one-per-partition") == expected


@pytest.mark.parametrize("seed", range(40))
def test_one_run_per_partition_equals_the_reading(seed):
    """One run per household and error level fires at every slot some run of the reading
    ends at, once, with the least error; every run from every start fires under
    every-event."""
    rng = random.Random(seed)
    for _ in range(20):
        text = "".join(rng.choice("FFFFLLP") for _ in range(rng.randint(1, 14)))
        m, k = rng.randint(0, 4), rng.randint(0, 3)
        oracle = windows(text, m, k)
        where = f"{text} m={m} k={k}"
        assert fired(text, m, k, "one-per-partition") == \
            [(j, min(errs)) for j, errs in sorted(oracle.items())], where
        assert sorted(fired(text, m, k, "every-event")) == \
            sorted((j, e) for j, errs in oracle.items() for e in errs), where


def test_placeholder_of_a_single_element():
    """SEQ(A a, B b, C c) under strict contiguity: a placeholder B between a and c is a
    missing b; the predicate that reads b's unknown value holds, one over its known time
    is checked; the match lists only the real events."""
    q = cep_core.compile("PATTERN SEQ(A a, B b, C c) WHERE b.v > a.v AND b.time > a.time "
                         "WITHIN 10")
    stream = [{"type": "A", "time": 1, "v": 5, "id": "a1"},
              {"type": "B", "time": 2, "lost": True, "id": "b2"},
              {"type": "C", "time": 3, "id": "c3"}]
    assert q.matches(stream, policy=STRICT, max_missing=1) == \
        [{"a": "a1", "c": "c3", "missing": 1}]
    late = [dict(stream[0], time=3), dict(stream[1], time=3), dict(stream[2], time=4)]
    assert q.matches(late, policy=STRICT, max_missing=1) == []  # b.time > a.time fails
    assert q.matches(stream, policy=STRICT, max_missing=0) == []


def test_placeholders_are_ordinary_events_without_max_missing():
    q = cep_core.compile("PATTERN SEQ(A a, B b) WITHIN 10")
    stream = [{"type": "A", "time": 1, "id": 1}, {"type": "B", "time": 2, "lost": True,
                                                  "id": 2}]
    assert q.matches(stream, policy=STRICT) == [{"a": 1, "b": 2}]
    assert q.matches(stream, policy=STRICT, max_missing=1) == []  # never a last event


def test_skip_policies_never_take_a_placeholder():
    q = cep_core.compile("PATTERN SEQ(A a, B b, C c) WITHIN 10")
    stream = [{"type": "A", "time": 1, "id": 1},
              {"type": "B", "time": 2, "lost": True, "id": 2},
              {"type": "C", "time": 3, "id": 3}]
    for policy in ("skip-till-any-match", "skip-till-next-match"):
        found = q.matches(stream, policy=policy, max_missing=1)
        assert {"a": 1, "c": 3, "missing": 1} in found
        assert all(2 not in m.values() for m in found)


def test_return_field_a_placeholder_lacks_is_none():
    q = cep_core.compile("PATTERN SEQ(A a, B b, C c) WITHIN 10 "
                         "RETURN R(b.v AS v, b.time AS t)")
    stream = [{"type": "A", "time": 1}, {"type": "B", "time": 2, "lost": True},
              {"type": "C", "time": 3}]
    (out,) = q.run(stream, policy=STRICT, max_missing=1)
    assert (out["v"], out["t"], out["missing"]) == (None, 2, 1)


def test_kleene_pattern_has_no_bound_on_k():
    """A Kleene element may miss any number of iterations (placeholders); a pattern
    without one may not miss more elements than its shortest match has."""
    q = cep_core.compile(LISTING, params={"m": 3}, time_unit="min")
    assert q.run(slots("FLLLF"), policy=STRICT, runs="one-per-partition",
                 max_missing=3)[0]["missing"] == 3
    with pytest.raises(cep_core.QueryError, match="more than the 2 elements"):
        cep_core.compile("PATTERN SEQ(A a, B b) WITHIN 5").run([], max_missing=3)


# --------------------------------------------------------------------------- keyed engine
def _with_placeholders(events: list[dict], rng: random.Random, frame_like: bool
                       ) -> list[dict]:
    """Some events become placeholders: ``lost`` true, some attributes unknown (absent,
    or NaN as a DataFrame holds them)."""
    out = []
    for e in events:
        if rng.random() < 0.2:
            e = dict(e, lost=True)
            for a in ("x", "y", "z"):
                if rng.random() < 0.6:
                    if frame_like:
                        e[a] = math.nan
                    else:
                        del e[a]
        out.append(e)
    return out


@pytest.mark.parametrize("seed", range(60))
def test_keyed_engine_equals_the_reference_engine(seed):
    """The engine picked for one element with SAME, one run per partition (the keyed
    vectorized engine: one run per key and error level) gives the reference engine's
    outputs, with their errors, and counters, for streams with placeholders; fed at once
    or in batches."""
    import numpy as np
    import pandas as pd
    from test_engine_keyed import TABLE, TABLE2, random_query, random_stream

    np_rng, rng = np.random.default_rng(5000 + seed), random.Random(seed)
    text = random_query(np_rng, one_kleene=seed % 3 != 0)
    while "," in text.split("SEQ(")[1].split(")")[0]:  # one element, single or Kleene
        text = random_query(np_rng)
    q = cep_core.compile(text, params={"tab": TABLE, "tab2": TABLE2})
    kleene = "+" in text.split("SEQ(")[1].split(")")[0]
    k = 1 + seed % 2 if kleene else 1  # a single element misses nothing
    frame_like = seed % 2 == 0
    events = _with_placeholders(random_stream(np_rng, 120), rng, frame_like)
    for policy in ("strict-contiguity", "skip-till-next-match"):
        picked = q.engine_for(policy, "one-per-partition", max_missing=k)
        ref_session = q.start(policy, runs="one-per-partition", max_missing=k,
                              engine="reference")
        ref = ref_session.run(events)
        rc = ref_session.counters.as_dict()
        if picked != "keyed-vectorized":
            assert " OR " in text or " AND (" in text, (text, picked)
            continue
        session = q.start(policy, runs="one-per-partition", max_missing=k)
        got = []
        for lo in range(0, len(events), 40):
            part = events[lo:lo + 40]
            got += session.feed(pd.DataFrame(part) if frame_like else part)
        got += session.flush()
        assert got == ref, (text, policy, k)
        fc = session.counters.as_dict()
        rc.pop("pm_dropped"), fc.pop("pm_dropped")  # window drops are counted lazily
        assert fc == rc, (text, policy, k)
