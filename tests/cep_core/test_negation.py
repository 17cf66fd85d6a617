"""NEG before the first element, after the last, and on Kleene elements, against the
brute-force oracle (tests/cep_oracle.py) on random queries and streams.

Skip-till-any-match: the reference engine's matches are the oracle's. Under
skip-till-next-match and strict contiguity the NEG elements at the ends filter the
matches of the pattern without them (docs/decisions.md, "Negation at a pattern's ends
and on Kleene elements"): the engine's matches are those, minus the ones the oracle's
end check forbids."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from cep_oracle import Elem, as_set, ends_violated, matches

import cep_core

TYPES = "ABCD"


@dataclass
class Case:
    """A random query as text and as the oracle's pattern."""

    items: list[tuple[str, Elem]] = field(default_factory=list)  # (text, element)
    where: list[tuple[str, object]] = field(default_factory=list)  # (text, predicate)
    window: int = 5
    key: str | None = None

    def text(self, ends: bool = True) -> str:
        items = [t for t, el in self.kept(ends)]
        where = [t for t, _ in self.where_kept(ends)]
        if self.key:
            where.insert(0, f"SAME[{self.key}]")
        return (f"PATTERN SEQ({', '.join(items)})"
                + (f" WHERE {' AND '.join(where)}" if where else "")
                + f" WITHIN {self.window}")

    def kept(self, ends: bool) -> list[tuple[str, Elem]]:
        pos = [i for i, (_, el) in enumerate(self.items) if not el.kind.startswith("neg")]
        return [(t, el) for i, (t, el) in enumerate(self.items)
                if ends or pos[0] <= i <= pos[-1]]

    def where_kept(self, ends: bool) -> list[tuple[str, object]]:
        names = {el.var for _, el in self.kept(ends)}
        return [(t, p) for t, p in self.where if p[0] <= names]

    def pattern(self, ends: bool = True) -> list[Elem]:
        return [el for _, el in self.kept(ends)]

    def preds(self, ends: bool = True) -> list:
        return [p[1] for _, p in self.where_kept(ends) if not p[2]]


def random_case(rng: random.Random) -> Case:
    case = Case(window=rng.choice([3, 5, 8]), key=rng.choice([None, None, "k"]))
    n_pos = rng.choice([1, 2, 2, 3])
    kleene_at = rng.randrange(n_pos) if rng.random() < 0.4 else None
    positives: list[Elem] = []
    for j in range(n_pos):
        t, v = rng.choice("ABC"), f"p{j}"
        if j == kleene_at:
            positives.append(Elem("kleene", t, v))
            case.items.append((f"{t}+ {v}[]", positives[-1]))
        else:
            positives.append(Elem("event", t, v))
            case.items.append((f"{t} {v}", positives[-1]))
    singles = [el.var for el in positives if el.kind == "event"]
    for n in range(rng.choice([1, 1, 2])):
        slot = rng.choice([0, n_pos] + list(range(1, n_pos)))
        t, v, kleene = rng.choice(TYPES), f"n{n}", rng.random() < 0.35
        el = Elem("neg_kleene" if kleene else "neg", t, v)
        text = f"NEG {t}+ {v}[]" if kleene else f"NEG {t} {v}"
        positions = [i for i, (_, e) in enumerate(case.items) if not e.kind.startswith("neg")]
        at = 0 if slot == 0 else positions[slot - 1] + 1
        case.items.insert(at, (text, el))
        # a NEG between elements may relate to its neighbours only (cep_core.plan)
        near = singles if slot in (0, n_pos) else \
            [p.var for p in positives[slot - 1:slot + 1] if p.kind == "event"]
        add_neg_predicates(rng, case, el, near)
    for el in positives:
        c = rng.randrange(3)
        if rng.random() < 0.4:
            if el.kind == "event":
                case.where.append((f"{el.var}.v > {c}", ({el.var}, _gt(el.var, c), False)))
            else:
                case.where.append((f"{el.var}[i].v > {c}",
                                   ({el.var}, _each_gt(el.var, c), False)))
    if len(singles) >= 2 and rng.random() < 0.4:
        a, b = rng.sample(singles, 2)
        case.where.append((f"{a}.v <= {b}.v", ({a, b}, _le(a, b), False)))
    return case


def add_neg_predicates(rng: random.Random, case: Case, el: Elem, singles: list[str]) -> None:
    v = el.var
    options = ["none", "unary"]
    if singles:
        options.append("relate")
    if el.kind == "neg_kleene":
        options += ["length", "rising"]
    choice = rng.choice(options)
    if choice == "unary":
        c = rng.randrange(3)
        text = f"{v}[i].v > {c}" if el.kind == "neg_kleene" else f"{v}.v > {c}"
        pred = _each_gt(v, c) if el.kind == "neg_kleene" else _gt(v, c)
    elif choice == "relate":
        s = rng.choice(singles)
        text = f"{v}[i].v = {s}.v" if el.kind == "neg_kleene" else f"{v}.v = {s}.v"
        pred = (lambda b, v=v, s=s: all(x["v"] == b[s]["v"] for x in b[v])) \
            if el.kind == "neg_kleene" else (lambda b, v=v, s=s: b[v]["v"] == b[s]["v"])
    elif choice == "length":
        text, pred = f"LENGTH({v}[]) >= 2", (lambda b, v=v: len(b[v]) >= 2)
    elif choice == "rising":
        text = f"{v}[i].v < {v}[i+1].v"

        def pred(b, v=v):
            return all(x["v"] < y["v"] for x, y in zip(b[v], b[v][1:], strict=False))
    else:
        return
    el.preds.append(pred)
    names = {v} | ({s} if choice == "relate" else set())
    case.where.append((text, (names, pred, True)))


def _gt(v, c):
    return lambda b: b[v]["v"] > c


def _each_gt(v, c):
    return lambda b: all(x["v"] > c for x in b[v])


def _le(a, b_):
    return lambda b: b[a]["v"] <= b[b_]["v"]


def random_stream(rng: random.Random, n: int = 8) -> list[dict]:
    t, out = 0, []
    for i in range(n):
        t += rng.choice([0, 1, 1, 2])
        out.append({"id": i, "type": rng.choice(TYPES), "time": t, "v": rng.randrange(4),
                    "k": rng.randrange(2)})
    return out


CASES = 400


@pytest.mark.parametrize("seed", range(4))
def test_any_match_equals_the_brute_force_oracle(seed):
    rng = random.Random(seed)
    for n in range(CASES // 4):
        case, stream = random_case(rng), random_stream(rng)
        query = cep_core.compile(case.text())
        got = as_set(query.matches([dict(e) for e in stream]))
        want = matches(case.pattern(), case.preds(), [dict(e) for e in stream], case.window,
                       case.key)
        assert got == want, (n, case.text(), stream)


@pytest.mark.parametrize("policy", ["skip-till-next-match", "strict-contiguity"])
def test_end_negation_filters_the_matches_of_every_policy(policy):
    rng = random.Random(policy)
    for n in range(CASES // 2):
        case, stream = random_case(rng), random_stream(rng)
        with_ends = cep_core.compile(case.text()).matches([dict(e) for e in stream],
                                                          policy=policy)
        without = cep_core.compile(case.text(ends=False)).matches(
            [dict(e) for e in stream], policy=policy)
        by_id = {e["id"]: e for e in stream}
        ends = case.pattern()

        def bindings(m: dict, by_id=by_id) -> dict:
            return {v: tuple(by_id[i] for i in x) if isinstance(x, list) else by_id[x]
                    for v, x in m.items()}

        kept = [m for m in without
                if not ends_violated(ends, bindings(m), stream, case.window, case.key)]
        assert sorted(map(str, with_ends)) == sorted(map(str, kept)), (n, case.text(), stream)


def test_a_trailing_match_is_emitted_when_its_window_closes():
    q = cep_core.compile("PATTERN SEQ(A a, B b, NEG C c) WITHIN 10 "
                         "RETURN R(a.id AS a, b.id AS b)")
    session = q.start()
    assert session.feed([{"type": "A", "time": 1}, {"type": "B", "time": 2}]) == []
    assert session.feed([{"type": "X", "time": 11}]) == []  # 11 = 1 + 10: still open
    assert session.feed([{"type": "X", "time": 12}]) == [
        {"type": "R", "a": 0, "b": 1, "time": 11}]  # its output time says when it closed
    session.feed([{"type": "A", "time": 20}, {"type": "B", "time": 21}])
    assert session.flush() == [{"type": "R", "a": 4, "b": 5, "time": 30}]  # at the end


def test_bounds_are_exact():
    lead = cep_core.compile("PATTERN SEQ(NEG C c, A a, B b) WITHIN 10")
    # C at last.t - W = 2 violates; at 1 it does not; at first.t it does not
    for c_time, violated in ((1, False), (2, True), (5, False)):
        stream = [{"type": "C", "time": c_time}, {"type": "A", "time": 5},
                  {"type": "B", "time": 12}]
        stream.sort(key=lambda e: e["time"])
        assert (lead.matches(stream) == []) is violated, c_time
    trail = cep_core.compile("PATTERN SEQ(A a, B b, NEG C c) WITHIN 10")
    for c_time, violated in ((3, False), (4, True), (11, True), (12, False)):
        stream = sorted([{"type": "A", "time": 1}, {"type": "B", "time": 3},
                         {"type": "C", "time": c_time}], key=lambda e: (e["time"], e["type"]))
        assert (trail.matches(stream) == []) is violated, c_time


def test_a_kleene_neg_forbids_a_sequence_not_a_single_event():
    q = cep_core.compile("PATTERN SEQ(A a, NEG B+ b[], C c) "
                         "WHERE b[i].v < b[i+1].v AND LENGTH(b[]) >= 3 WITHIN 100")
    def stream(*vs):
        return ([{"type": "A", "time": 0}]
                + [{"type": "B", "time": i + 1, "v": v} for i, v in enumerate(vs)]
                + [{"type": "C", "time": 50}])
    assert q.matches(stream(3, 2, 1, 0)) != []  # no rising run of three
    assert q.matches(stream(1, 0, 2, 0, 3)) == []  # 1 < 2 < 3, not contiguous
    assert q.matches(stream(5, 1)) != []


@pytest.mark.parametrize("policy", ["skip-till-any-match", "skip-till-next-match",
                                    "strict-contiguity"])
def test_a_kleene_neg_of_per_event_predicates_is_a_plain_neg(policy):
    rng = random.Random(7)
    kleene = cep_core.compile("PATTERN SEQ(A a, NEG B+ n[], C c) WHERE n[i].v > 1 "
                              "WITHIN 6")
    plain = cep_core.compile("PATTERN SEQ(A a, NEG B n, C c) WHERE n.v > 1 WITHIN 6")
    for _ in range(200):
        stream = random_stream(rng)
        assert kleene.matches(stream, policy=policy) == plain.matches(stream, policy=policy)


def test_a_failed_test_and_no_passing_test_within_15_minutes():
    """The DR's use of a trailing NEG (docs/language.md): per household, an alert 15
    minutes after a failed test unless a passing test came in between."""
    q = cep_core.compile("PATTERN SEQ(testReading f, NEG testReading p) WHERE SAME[houseID] "
                         "AND f.failed = 1 AND p.failed = 0 WITHIN 15min "
                         "RETURN stillFailing(f.houseID AS houseID, f.time AS failedAt)",
                         time_unit="min")
    tests = [(0, 1, 1), (0, 2, 1), (5, 1, 0), (10, 2, 1), (40, 1, 1)]
    stream = [{"type": "testReading", "time": t, "houseID": h, "failed": f}
              for t, h, f in tests]
    alerts = q.run(stream, policy="skip-till-next-match", runs="one-per-partition")
    assert [(a["houseID"], a["failedAt"], a["time"]) for a in alerts] == [
        (2, 0, 15), (2, 10, 25), (1, 40, 55)]  # house 1 passed at 5: no alert for 0
