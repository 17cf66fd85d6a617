"""Approximate matching (``max_missing=k``; Li and Ge, VLDB 2016, §2, Definition 1):
the paper's Example 2, the brute-force oracle (tests/acep_oracle.py) on random queries
and streams under skip-till-any-match, ``k = 0`` as exact matching under every policy,
the other policies' outputs as valid approximate matches, and the refused queries."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import pytest
from acep_oracle import Alt, Pred, approximate_matches, as_match, engine_matches

import cep_core
from cep_core import QueryError

ANY, NEXT, STRICT = "skip-till-any-match", "skip-till-next-match", "strict-contiguity"


def events(text: str, **attrs) -> list[dict]:
    """``events("a1 c10")``: an A at time 1 with id "a1", a C at time 10 with id "c10"."""
    return [{"type": s[0].upper(), "time": int(s[1:]), "id": s, **attrs}
            for s in text.split()]


# --------------------------------------------------------------------------- Example 2
EXAMPLE_2 = "PATTERN SEQ(A a, (B b OR C c), D d, B b2) WITHIN 5"
EXAMPLE_2_STREAM = "a1 e2 e3 b4 c5 e6 a7 e8 e9 c10 d11 a12 e13 b14 d15"


def test_example_2_of_the_paper():
    """p = a(b|c)db, w = 5, k = 2: a1 b4 is a match with 2 errors, c10 d11 b14 with 1."""
    found = engine_matches(cep_core.compile(EXAMPLE_2).matches(events(EXAMPLE_2_STREAM),
                                                               max_missing=2))
    assert found[frozenset({("a", "a1"), ("b", "b4")})] == 2
    assert found[frozenset({("c", "c10"), ("d", "d11"), ("b2", "b14")})] == 1


def test_example_2_against_the_oracle():
    slots = [[Alt("event", "A", "a")], [Alt("event", "B", "b"), Alt("event", "C", "c")],
             [Alt("event", "D", "d")], [Alt("event", "B", "b2")]]
    stream = events(EXAMPLE_2_STREAM)
    for k in (0, 1, 2, 3):
        found = engine_matches(cep_core.compile(EXAMPLE_2).matches(stream, max_missing=k))
        assert found == approximate_matches(slots, [], stream, 5, k), k


# --------------------------------------------------------------------------- tiny cases
def test_trailing_insertion_is_detected_at_the_last_real_event():
    """SEQ(A a, B b, C c), k = 1, stream a b: the match {a, b} with one missing, at b."""
    session = cep_core.compile("PATTERN SEQ(A a, B b, C c) WITHIN 5").start(
        output="matches", max_missing=1)
    assert session.feed(events("a1")) == []
    assert session.feed(events("b2")) == [{"a": "a1", "b": "b2", "missing": 1}]
    assert session.flush() == []


def test_leading_insertion():
    q = cep_core.compile("PATTERN SEQ(A a, B b, C c) WITHIN 5")
    assert q.matches(events("b1 c2"), max_missing=1) == [{"b": "b1", "c": "c2",
                                                          "missing": 1}]


def test_neg_before_the_first_element_bounds_the_window_as_without_max_missing():
    """x1 falls in [first.t − 5, first.t) of {a2}, {b3} and {a2, b3}; not of {a9}."""
    q = cep_core.compile("PATTERN SEQ(NEG X n, A a, B b) WITHIN 5")
    assert q.matches(events("x1 a2 b3 a9"), max_missing=1) == [{"a": "a9", "missing": 1}]


def test_neg_after_the_last_element_bounds_the_window_as_without_max_missing():
    """x3 falls in (last.t, first.t + 5] of {a1}; not of {a10}."""
    q = cep_core.compile("PATTERN SEQ(A a, B b, NEG X n) WITHIN 5")
    assert q.matches(events("a1 x3 a10"), max_missing=1) == [{"a": "a10", "missing": 1}]


@pytest.mark.parametrize("text,stream,values,expected", [
    # only {a1, a2} is long enough; B missing
    ("PATTERN SEQ(A+ a[], B b) WHERE LENGTH(a[]) >= 2 WITHIN 5", "a1 a2", [0, 0],
     {frozenset({("a", ("a1", "a2"))}): 1}),
    # d.v = 1 > a[last].v holds for [a3] and [a2, a3], not for [a2]; B missing
    ("PATTERN SEQ(D d, A+ a[], B b) WHERE d.v > a[last].v WITHIN 5", "d1 a2 a3",
     [1, 2, 0], {frozenset({("d", "d1"), ("a", ("a3",))}): 1,
                 frozenset({("d", "d1"), ("a", ("a2", "a3"))}): 1}),
    # only a1 + a2 sums above 3; B missing between the A's and c3
    ("PATTERN SEQ(A+ a[], B b, C c) WHERE SUM(a[].v) > 3 WITHIN 5", "a1 a2 c3",
     [1, 3, 0], {frozenset({("a", ("a1", "a2")), ("c", "c3")}): 1}),
], ids=["length", "last", "sum-mid"])
def test_kleene_sequence_predicate_with_the_next_element_missing(text, stream, values,
                                                                 expected):
    """A predicate that reads only present elements is evaluated, also one over a
    Kleene variable's whole sequence (LENGTH, v[last], SUM) when the element after it
    is missing (k = 1)."""
    evs = [{**e, "v": v} for e, v in zip(events(stream), values, strict=True)]
    assert engine_matches(cep_core.compile(text).matches(evs, max_missing=1)) == expected


def test_return_with_a_missing_element():
    q = cep_core.compile("PATTERN SEQ(A a, B b) WITHIN 5 RETURN R(a.v AS x, b.v AS y)")
    out = q.run(events("a1", v=3), max_missing=1)
    assert len(out) == 1
    assert (out[0]["x"], out[0]["y"], out[0]["missing"]) == (3, None, 1)


# --------------------------------------------------------------------------- refused
@pytest.mark.parametrize("text,k", [
    ("PATTERN SEQ(A a, B b, C c) WITHIN 5", -1),
    ("PATTERN SEQ(A a, B b, C c) WITHIN 5", 1.5),
    ("PATTERN SEQ(A a, B b, C c) WITHIN 5", True),
    ("PATTERN SEQ(A a, B b, C c) WITHIN 5", 4),
    (EXAMPLE_2, 5),  # four elements: the OR is one
    ("PATTERN SEQ(A a, NEG X n, B b) WITHIN 5", 1),
    ("PATTERN SEQ(X x, AND(A a, B b), Y y) WITHIN 5", 1),
    ("PATTERN SEQ(A a, B b)+ WITHIN 5", 1),
], ids=["negative", "fractional", "bool", "above-3", "above-4-or",
        "neg-between", "and", "seq-plus"])
def test_refused(text, k):
    q = cep_core.compile(text)
    with pytest.raises(QueryError) as exc:
        q.matches(events("a1 x2 b3"), max_missing=k)
    assert "\n" not in str(exc.value)


def test_k_zero_applies_to_a_neg_between_elements():
    q = cep_core.compile("PATTERN SEQ(A a, NEG X n, B b) WITHIN 5")
    stream = events("a1 b2 x3 b4")
    assert [as_match(m) for m in q.matches(stream, max_missing=0)] == \
        [as_match(m) for m in q.matches(stream)] == [frozenset({("a", "a1"), ("b", "b2")})]


# --------------------------------------------------------------------------- random cases
@dataclass
class Case:
    """A random query as text and as the oracle's slots and predicates."""

    slots: list[list[Alt]] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    where: list[tuple[str, Pred]] = field(default_factory=list)
    window: int = 5

    def text(self, key: str | None = None, returns: bool = False) -> str:
        where = [t for t, _ in self.where]
        if key:
            where.insert(0, f"SAME[{key}]")
        out = f"PATTERN SEQ({', '.join(self.items)})"
        if where:
            out += f" WHERE {' AND '.join(where)}"
        out += f" WITHIN {self.window}"
        singles = [s[0].var for s in self.slots if len(s) == 1 and s[0].kind == "event"]
        if returns and singles:
            out += f" RETURN R({', '.join(f'{v}.id AS {v}' for v in singles)})"
        return out

    @property
    def preds(self) -> list[Pred]:
        return [p for _, p in self.where]


def random_case(rng: random.Random) -> Case:
    """1-4 slots (a single event, a Kleene element or an OR of two single events),
    unary predicates and at most one binary one between single variables."""
    case = Case(window=rng.randint(3, 8))
    singles: list[tuple[int, str]] = []  # (slot, var)
    for j in range(rng.randint(1, 4)):
        kind = rng.choice(["event", "event", "kleene", "or"])
        t, v = rng.choice("ABC"), f"p{j}"
        if kind == "or":
            u, w = rng.choice("ABC"), f"q{j}"
            case.slots.append([Alt("event", t, v), Alt("event", u, w)])
            case.items.append(f"({t} {v} OR {u} {w})")
            singles += [(j, v), (j, w)]
        elif kind == "kleene":
            case.slots.append([Alt("kleene", t, v)])
            case.items.append(f"{t}+ {v}[]")
        else:
            case.slots.append([Alt("event", t, v)])
            case.items.append(f"{t} {v}")
            singles.append((j, v))
    for slot in case.slots:
        for alt in slot:
            if rng.random() < 0.3:
                c = rng.randrange(3)
                if alt.kind == "kleene":
                    case.where.append((f"{alt.var}[i].v > {c}", _each_above(alt.var, c)))
                else:
                    case.where.append((f"{alt.var}.v > {c}", _above(alt.var, c)))
    pairs = [(a, b) for (i, a) in singles for (j, b) in singles if i != j]
    if pairs and rng.random() < 0.5:
        a, b = rng.choice(pairs)
        case.where.append((f"{a}.v <= {b}.v", _at_most(a, b)))
    return case


def _above(v: str, c: int) -> Pred:
    return Pred(frozenset({v}), lambda b: b[v]["v"] > c)


def _each_above(v: str, c: int) -> Pred:
    return Pred(frozenset({v}), lambda b: all(x["v"] > c for x in b[v]))


def _at_most(a: str, b_: str) -> Pred:
    return Pred(frozenset({a, b_}), lambda b: b[a]["v"] <= b[b_]["v"])


def random_stream(rng: random.Random) -> list[dict]:
    """6-9 events of types A-D, times not decreasing (with ties), attributes v in 0..3
    and a partition attribute k in 0..1."""
    t, out = 0, []
    for i in range(rng.randint(6, 9)):
        t += rng.choice([0, 1, 1, 2])
        out.append({"id": i, "type": rng.choice("ABCD"), "time": t, "v": rng.randrange(4),
                    "k": rng.randrange(2)})
    return out


def _describe(text: str, stream: list[dict], k: int) -> str:
    """A failing case, to reproduce it: the query, k and the stream (type, id, time)."""
    evs = " ".join(f"{e['type']}{e['id']}@{e['time']}(v={e['v']},k={e['k']})"
                   for e in stream)
    return f"{text}  max_missing={k}  stream: {evs}"


SEEDS = range(60)
CASES_PER_SEED = 10


@pytest.mark.parametrize("seed", SEEDS)
def test_any_match_equals_the_oracle(seed):
    """The matches and each one's error are the oracle's, exactly, and none comes twice."""
    rng = random.Random(seed)
    for _ in range(CASES_PER_SEED):
        case, stream = random_case(rng), random_stream(rng)
        k = rng.randint(0, min(2, len(case.slots)))
        found = cep_core.compile(case.text()).matches(stream, max_missing=k)
        where = _describe(case.text(), stream, k)
        assert len({as_match(m) for m in found}) == len(found), where
        assert engine_matches(found) == \
            approximate_matches(case.slots, case.preds, stream, case.window, k), where


@pytest.mark.parametrize("seed", range(20))
def test_k_zero_is_exact_matching(seed):
    """``max_missing=0`` gives today's outputs (plus ``"missing": 0``), event by event,
    under every policy, also one run per partition with ``SAME[k]``: the matches, and
    the RETURN events (there the keyed vectorized engine may run today's)."""
    rng = random.Random(1000 + seed)
    for _ in range(5):
        case, stream = random_case(rng), random_stream(rng)
        for policy, runs, key in [(ANY, "every-event", None),
                                  (NEXT, "every-event", None),
                                  (STRICT, "every-event", None),
                                  (NEXT, "one-per-partition", "k"),
                                  (STRICT, "one-per-partition", "k")]:
            for text, output in [(case.text(key), "matches"),
                                 (case.text(key, returns=True), "events")]:
                q = cep_core.compile(text)
                exact = _by_event(q.start(policy, runs=runs, output=output), stream)
                approx = _by_event(q.start(policy, runs=runs, output=output,
                                           max_missing=0), stream, missing=0)
                assert approx == exact, f"{_describe(text, stream, 0)}  {policy} {runs}"


def _by_event(session, stream: list[dict], missing: int | None = None) -> list[Counter]:
    """The outputs at each event and at the flush, each without its ``"missing"`` (which
    must be ``missing``), as multisets: the order among one event's outputs is the
    engine's."""
    out = []
    for batch in [*([e] for e in stream), None]:
        found = session.feed(batch) if batch is not None else session.flush()
        if missing is not None:
            assert all(m.pop("missing") == missing for m in found)
        out.append(Counter(map(_hashable, found)))
    return out


def _hashable(out: dict) -> frozenset:
    """An output (match ids, RETURN fields, or bindings to events) as a frozenset."""
    def plain(v):
        if isinstance(v, list | tuple):
            return tuple(map(plain, v))
        return v["id"] if isinstance(v, dict) else v
    return frozenset((n, plain(v)) for n, v in out.items())


@pytest.mark.parametrize("seed", range(20))
def test_other_policies_output_valid_approximate_matches(seed):
    """Under skip-till-next-match and strict contiguity with k ≥ 1, every output is an
    approximate match of skip-till-any-match (the oracle's), with its error."""
    rng = random.Random(2000 + seed)
    for _ in range(5):
        case, stream = random_case(rng), random_stream(rng)
        k = rng.randint(1, min(2, len(case.slots)))
        runs, key = rng.choice([("every-event", None), ("one-per-partition", "k")])
        valid = approximate_matches(case.slots, case.preds, stream, case.window, k, key)
        for policy in (NEXT, STRICT):
            found = cep_core.compile(case.text(key)).matches(stream, policy=policy,
                                                             runs=runs, max_missing=k)
            where = f"{_describe(case.text(key), stream, k)}  {policy} {runs}"
            for m in found:
                assert valid.get(as_match(m)) == m["missing"], (where, m)
