"""Adaptive plans for every pattern kind of US 11,693,862 B2's experiments: negation
(between neighbours, at either end, of a Kleene element), a single event under Kleene
closure (with predicates over its events, ``LENGTH`` and aggregates), a disjunction of
sequences, and claim 2's non-occurrence and aggregation (``RETURN .. COUNT(*)``). On
random patterns and random streams whose rates drift, order- and tree-based plans under
every decision method find exactly the text-order plan's outputs, at the same events,
with plans replaced in the middle of live partial matches; under the other selection
policies the text-order plan runs and finds them too."""

from __future__ import annotations

import random
from collections import Counter

import pytest

import cep_core

ANY = "skip-till-any-match"
POLICIES = (ANY, "skip-till-next-match", "strict-contiguity")


def _elems(rng: random.Random, n: int, first: int = 0) -> list[str]:
    return [f"{rng.choice('ABCD')} v{first + j}" for j in range(n)]


def negation_query(rng: random.Random) -> str:
    """A SEQ of 2-4 elements with one or two NEG elements: between two, first or last,
    sometimes of a Kleene element; predicates on the NEG and between the others."""
    n = rng.randint(2, 4)
    items = _elems(rng, n)
    where = []
    for k in range(rng.choice([1, 1, 2])):
        at = rng.randint(0, len(items))
        kleene = rng.random() < 0.2
        neg = f"NEG {rng.choice('ABCDE')}{'+' if kleene else ''} n{k}{'[]' if kleene else ''}"
        items.insert(at, neg)
        if kleene:
            where.append(f"LENGTH(n{k}[]) >= 2")
        elif rng.random() < 0.5:
            where.append(f"n{k}.x > {rng.randrange(3)}")
    if rng.random() < 0.4:
        a, b = rng.sample(range(n), 2)
        where.append(f"v{a}.x <= v{b}.x")
    return _query(f"SEQ({', '.join(items)})", where, rng)


def kleene_query(rng: random.Random) -> str:
    """A SEQ of 2-4 elements, one of them under Kleene closure, sometimes a NEG next to
    it; predicates over its events, its length or an aggregate."""
    n = rng.randint(2, 4)
    items = _elems(rng, n)
    k = rng.randrange(n)
    typ = items[k].split()[0]
    items[k] = f"{typ}+ v{k}[]"
    where = []
    pick = rng.random()
    if pick < 0.3:
        where.append(f"v{k}[i].x <= v{k}[i+1].x")
    elif pick < 0.5:
        where.append(f"LENGTH(v{k}[]) <= 2")
    elif pick < 0.7:
        other = rng.choice([j for j in range(n) if j != k])
        where.append(f"SUM(v{k}[].x) > v{other}.x")
    if rng.random() < 0.3:
        items.insert(rng.randint(0, len(items)), f"NEG {rng.choice('ABCDE')} n0")
    return _query(f"SEQ({', '.join(items)})", where, rng)


def disjunction_query(rng: random.Random) -> str:
    """Two or three sequences of 2-3 elements, each with its predicate, sometimes a NEG."""
    seqs, where, first = [], [], 0
    for _ in range(rng.randint(2, 3)):
        n = rng.randint(2, 3)
        items = _elems(rng, n, first)
        if rng.random() < 0.3:
            items.insert(rng.randint(1, n - 1), f"NEG {rng.choice('ABCDE')} n{first}")
        if rng.random() < 0.5:
            where.append(f"v{first}.x < v{first + 1}.x")
        seqs.append(f"SEQ({', '.join(items)})")
        first += n
    return _query(f"({' OR '.join(seqs)})", where, rng)


def _query(pattern: str, where: list[str], rng: random.Random) -> str:
    if rng.random() < 0.3:
        where.append("SAME[k]")
    text = f"PATTERN {pattern}"
    if where:
        text += " WHERE " + " AND ".join(where)
    text += f" WITHIN {rng.choice([3, 5, 7])}"
    return text + (" RETURN R(COUNT(*) AS n)" if rng.random() < 0.25 else "")


def drifting_stream(rng: random.Random, n: int) -> list[dict]:
    """Types A-E whose frequencies change every n/3 events; times with ties."""
    t, out = 0, []
    phases = [rng.sample("ABCDE", 5) for _ in range(3)]
    for i in range(n):
        t += rng.choice([0, 1, 1, 2])
        typ = rng.choices(phases[min(2, 3 * i // n)], weights=[8, 4, 2, 1, 1])[0]
        out.append({"type": typ, "time": t, "x": rng.randrange(4), "k": rng.randrange(2),
                    "id": i})
    return out


def per_event(session, stream: list[dict]) -> list[Counter]:
    """The outputs at each event, and at the end of the stream."""
    got = [Counter(str(sorted(m.items())) for m in session.feed([e])) for e in stream]
    return got + [Counter(str(sorted(m.items())) for m in session.flush())]


ADAPTS = [{"method": "static"}, {"method": "unconditional"},
          {"method": "threshold", "t": 0.3}, {"method": "invariant"},
          {"method": "invariant", "d": 0.2, "K": 3}]
KINDS = {"negation": negation_query, "kleene": kleene_query,
         "disjunction": disjunction_query}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_plan_finds_the_text_order_outputs(kind, seed):
    rng = random.Random(f"{kind}{seed}")
    replaced = 0
    for _ in range(3):
        q = cep_core.compile(KINDS[kind](rng))
        stream = drifting_stream(rng, 70)
        output = "events" if q.plan.returns is not None else "matches"
        want = per_event(q.start(output=output, engine="reference"), stream)
        for plan in ("order", "tree"):
            for adapt in ADAPTS:
                adapt = {**adapt, "period": rng.choice([1, 3]), "window": rng.choice([4, 9])}
                s = q.start(output=output, plan=plan, adapt=adapt)
                assert s.engine_name == f"adaptive-{plan}", q.explain(plan=plan)
                assert per_event(s, stream) == want, (q.query, plan, adapt)
                replaced += s.adaptation_report()["replacements"]
    assert replaced > 10  # plans were replaced in the middle of live partial matches


@pytest.mark.parametrize("policy", POLICIES)
def test_under_every_policy_a_plan_finds_the_text_order_outputs(policy):
    """Under the other policies the text-order plan runs (explain says why); the outputs
    are the text order's under each."""
    rng = random.Random(policy)
    for make in KINDS.values():
        q = cep_core.compile(make(rng))
        stream = drifting_stream(rng, 50)
        for plan in ("order", "tree"):
            want = q.run(stream, policy, output="matches", engine="reference")
            got = q.run(stream, policy, output="matches", plan=plan)
            assert sorted(str(sorted(m.items())) for m in got) == \
                sorted(str(sorted(m.items())) for m in want), (q.query, policy)
            adaptive = q.engine_for(policy, plan=plan) == f"adaptive-{plan}"
            assert adaptive == (policy == ANY)


def test_a_trailing_negation_holds_the_match_until_its_window_closes():
    q = cep_core.compile("PATTERN SEQ(A a, B b, NEG C c) WITHIN 5")
    stream = [{"type": "A", "time": 0}, {"type": "B", "time": 1},
              {"type": "A", "time": 2}, {"type": "B", "time": 3},
              {"type": "C", "time": 6}, {"type": "D", "time": 9}]
    s = q.start(output="matches", plan="order", adapt={"window": 2, "period": 1})
    at = [s.feed([e]) for e in stream]
    assert [len(x) for x in at] == [0, 0, 0, 0, 2, 0]  # a0's when 5 passed; a2's: the C
    assert at[4] == q.matches(stream) == [{"a": 0, "b": 1}, {"a": 0, "b": 3}]


def test_a_disjunction_plans_each_branch_for_its_own_rates():
    """Two sequences; in the first, B is rare; in the second, C is: each branch's order
    starts with its rarest type, against the text order both times."""
    q = cep_core.compile("PATTERN (SEQ(A a, B b) OR SEQ(D d, C c)) WITHIN 4")
    stream = [{"type": "AAAABDDDDC"[i % 10], "time": i} for i in range(60)]
    s = q.start(output="matches", plan="order", adapt={"window": 20, "period": 5})
    assert sorted(map(str, s.feed(stream))) == sorted(map(str, q.matches(stream)))
    report = s.adaptation_report()
    assert [b["plan"] for b in report["branches"]] == ["b → a", "c → d"]
    assert report["plan"] == "b → a | c → d" and report["replacements"] == 2
