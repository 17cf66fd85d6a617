"""``AND(e1, ..., en)``: one match of each element, in any order, within the window.

Skip-till-any-match: against the brute-force oracle (tests/cep_oracle.py), and equal to
the OR of the AND's orders, each a SEQ, written out as query text with one copy of the
variables per order. Skip-till-next-match and strict contiguity: a run takes the next
event that any of its unbound elements can take (docs/decisions.md, "Conjunction"),
against the oracle's :func:`~cep_oracle.next_match`."""

from __future__ import annotations

import itertools
import random

import pytest
from cep_oracle import Elem, as_set, matches, next_match
from test_negation import random_stream

import cep_core
from cep_core.errors import QuerySemanticError

POLICIES = ["skip-till-any-match", "skip-till-next-match", "strict-contiguity"]


def reading(names: set[str], fn):
    """A predicate function that says which variables it reads (for the oracle)."""
    fn.reads = frozenset(names)
    return fn


def random_case(rng: random.Random, seq_members: bool = True):
    """(before, AND elements, after, predicates, window): elements as (type, var) lists;
    predicates as (variables, text template, function)."""
    n = 0

    def fresh(k: int) -> list[tuple[str, str]]:
        nonlocal n
        out = [(rng.choice("ABCD"), f"v{n + i}") for i in range(k)]
        n += k
        return out

    before = fresh(rng.choice([0, 0, 1]))
    members = [fresh(rng.choice([1, 1, 1, 2] if seq_members else [1]))
               for _ in range(rng.choice([2, 2, 3]))]
    after = fresh(rng.choice([0, 0, 1]))
    names = [v for _, v in before + [x for m in members for x in m] + after]
    preds = []
    for v in names:
        if rng.random() < 0.25:
            c = rng.randrange(3)
            preds.append(({v}, f"{{{v}}}.v > {c}",
                          reading({v}, lambda b, v=v, c=c: b[v]["v"] > c)))
    if rng.random() < 0.5:
        a, b_ = rng.sample(names, 2)
        preds.append(({a, b_}, f"{{{a}}}.v <= {{{b_}}}.v",
                      reading({a, b_}, lambda b, a=a, b_=b_: b[a]["v"] <= b[b_]["v"])))
    return before, members, after, preds, rng.choice([4, 6, 10])


def element(items: list[tuple[str, str]], rename=lambda v: v) -> str:
    if len(items) == 1:
        t, v = items[0]
        return f"{t} {rename(v)}"
    return "SEQ(" + ", ".join(f"{t} {rename(v)}" for t, v in items) + ")"


def query_text(before, members, after, preds, window) -> str:
    parts = [element([x]) for x in before]
    parts.append("AND(" + ", ".join(element(m) for m in members) + ")")
    parts += [element([x]) for x in after]
    where = [t.format(**{v: v for v in names}) for names, t, _ in preds]
    return (f"PATTERN SEQ({', '.join(parts)})"
            + (f" WHERE {' AND '.join(where)}" if where else "") + f" WITHIN {window}")


def expanded_text(before, members, after, preds, window) -> str:
    """The AND as the OR of its orders; the variables of order k get the suffix _k."""
    and_vars = {v for m in members for _, v in m}
    alts = []
    for k, order in enumerate(itertools.permutations(members)):
        items = [element(m, lambda v, k=k: f"{v}_{k}") for m in order]
        alts.append("SEQ(" + ", ".join(items) + ")")
    parts = [element([x]) for x in before] + ["(" + " OR ".join(alts) + ")"]
    parts += [element([x]) for x in after]
    where = []
    for names, text, _ in preds:
        if names & and_vars:
            for k in range(len(alts)):
                where.append(text.format(**{v: f"{v}_{k}" if v in and_vars else v
                                            for v in names}))
        else:
            where.append(text.format(**{v: v for v in names}))
    return (f"PATTERN SEQ({', '.join(parts)})"
            + (f" WHERE {' AND '.join(where)}" if where else "") + f" WITHIN {window}")


def unsuffixed(found: list[dict]) -> list[str]:
    return sorted(str(sorted((v.split("_")[0], i) for v, i in m.items())) for m in found)


CASES = 300


@pytest.mark.parametrize("seed", range(3))
def test_any_match_equals_the_brute_force_oracle(seed):
    rng = random.Random(100 + seed)
    for n in range(CASES // 3):
        before, members, after, preds, window = case = random_case(rng)
        stream = random_stream(rng, 7)
        pattern = ([Elem("event", t, v) for t, v in before]
                   + [Elem("and", members=tuple(tuple(m) for m in members))]
                   + [Elem("event", t, v) for t, v in after])
        want = matches(pattern, [p for _, _, p in preds], [dict(e) for e in stream], window)
        got = as_set(cep_core.compile(query_text(*case)).matches([dict(e) for e in stream]))
        assert got == want, (n, query_text(*case), stream)


def test_under_any_match_an_and_is_the_or_of_its_orders():
    rng = random.Random(5)
    for n in range(CASES // 3):
        case = random_case(rng)
        stream = random_stream(rng, 7)
        got = cep_core.compile(query_text(*case)).matches([dict(e) for e in stream])
        want = cep_core.compile(expanded_text(*case)).matches([dict(e) for e in stream])
        assert unsuffixed(got) == unsuffixed(want), (n, query_text(*case), stream)


@pytest.mark.parametrize("policy", POLICIES[1:])
def test_next_match_and_strict_contiguity_take_the_next_event_an_element_can_take(policy):
    rng = random.Random(policy)
    for n in range(CASES // 2):
        before, members, after, preds, window = case = random_case(rng, seq_members=False)
        stream = random_stream(rng, 7)
        slots = [[x] for x in before] + [[m[0] for m in members]] + [[x] for x in after]
        want = next_match(slots, [p for _, _, p in preds], stream, window,
                          strict=policy == "strict-contiguity")
        got = cep_core.compile(query_text(*case)).matches([dict(e) for e in stream],
                                                          policy=policy)
        assert sorted(map(sorted, as_set(got))) == sorted(map(sorted, set(want))), \
            (n, query_text(*case), stream)
        assert len(got) == len(want)


def test_and_of_single_events_in_any_order():
    q = cep_core.compile("PATTERN AND(A a, B b, C c) WITHIN 5 RETURN T(a.id AS a, b.id AS b, "
                         "c.id AS c)")
    stream = [{"type": t, "time": i} for i, t in enumerate("CABXB")]
    assert q.run(stream) == [{"type": "T", "a": 1, "b": 2, "c": 0, "time": 2},
                             {"type": "T", "a": 1, "b": 4, "c": 0, "time": 4}]
    assert q.run(stream, policy="skip-till-next-match") == [
        {"type": "T", "a": 1, "b": 2, "c": 0, "time": 2}]


@pytest.mark.parametrize("text, what", [
    ("PATTERN AND(A a, NEG B b, C c) WITHIN 5", "NEG inside AND(..) is not supported"),
    ("PATTERN AND(A a, B+ b[]) WITHIN 5", "Kleene+ inside AND(..) is not supported"),
    ("PATTERN AND(A a, (B b OR C c)) WITHIN 5", "OR inside AND(..) is not supported"),
    ("PATTERN SEQ(AND(A a, B b), C c)+ WITHIN 5", "AND inside SEQ(..)+ is not supported"),
    ("PATTERN AND(A a) WITHIN 5", "AND(..) needs at least two elements"),
])
def test_what_and_does_not_hold_is_one_line_error(text, what):
    with pytest.raises(QuerySemanticError) as info:
        cep_core.compile(text)
    assert what in str(info.value) and "\n" not in str(info.value)
    assert info.value.pos is not None
