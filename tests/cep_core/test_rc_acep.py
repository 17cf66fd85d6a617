"""RC-ACEP (Li and Ge, "History is a mirror to the future", VLDB 2016, §3-§5):
the match-node engine against the reference engine's approximate matches, proxy matches
(Theorem 2), the greedy order of Algorithm 2 (Example 6), the history and its sketch
(Algorithms 3-4, Theorem 4), the budget, and the Q-learning update (Algorithms 5-6)."""

from __future__ import annotations

import math
import random

import pytest
from acep_oracle import engine_matches
from test_approximate import EXAMPLE_2, EXAMPLE_2_STREAM, events, random_case, random_stream

import cep_core
from cep_core import QueryError
from cep_core.approx.coverage import CoverageQueue
from cep_core.approx.history import Bundles, ExactStore, History, MatchVectors
from cep_core.approx.matchnodes import SEED, MatchNodeEngine
from cep_core.approx.qlearning import QAgents, exploration, learning_rate, setup
from cep_core.approx.rc_acep import Budget, BudgetedMatcher, build_history, match_key
from cep_core.approx.sketch import SketchStore, sketch_shape
from cep_core.plan import START
from cep_core.shedding import SheddingConfig, work_units
from cep_core.shedding.engine import SheddingEngine


def _cases(seed: int, n: int):
    rng = random.Random(seed)
    for _ in range(n):
        case, stream = random_case(rng), random_stream(rng)
        k = rng.randint(0, min(2, len(case.slots)))
        key = rng.choice([None, "k"])
        yield case.text(key), stream, k


# --------------------------------------------------------------------------- ACEPMATCH
def test_example_2_of_the_paper():
    """p = a(b|c)db, w = 5, k = 2: a1 b4 with 2 errors, c10 d11 b14 with 1."""
    out = MatchNodeEngine(cep_core.compile(EXAMPLE_2).plan, 2).run(events(EXAMPLE_2_STREAM))
    found = engine_matches(out)
    assert found[frozenset({("a", "a1"), ("b", "b4")})] == 2
    assert found[frozenset({("c", "c10"), ("d", "d11"), ("b2", "b14")})] == 1
    assert found == engine_matches(cep_core.compile(EXAMPLE_2).matches(
        events(EXAMPLE_2_STREAM), max_missing=2))


@pytest.mark.parametrize("seed", range(12))
def test_match_nodes_equal_the_reference_engine(seed):
    """Without a budget: the reference engine's matches (skip-till-any-match,
    ``max_missing=k``), each once, with the same least error."""
    for text, stream, k in _cases(seed, 25):
        q = cep_core.compile(text)
        mine = MatchNodeEngine(q.plan, k).run(stream)
        ref = q.matches(stream, max_missing=k, engine="reference")
        assert len({match_key(m) for m in mine}) == len(mine), text
        assert engine_matches(mine) == engine_matches(ref), (text, k, stream)


@pytest.mark.parametrize("seed", range(4))
def test_match_nodes_do_the_reference_engines_work(seed):
    """With k ≥ 1, the unbudgeted engine's work units are the reference engine's."""
    for text, stream, k in _cases(100 + seed, 25):
        if k == 0:
            continue
        q = cep_core.compile(text)
        session = q.start(output="matches", max_missing=k, engine="reference")
        session.feed(stream)
        eng = MatchNodeEngine(q.plan, k)
        eng.run(stream)
        assert work_units(eng.counters) == work_units(session.engine.counters), text


@pytest.mark.parametrize("text,what", [
    ("PATTERN SEQ(A a, NEG X n, B b) WITHIN 5", "NEG"),
    ("PATTERN SEQ(X x, AND(A a, B b), Y y) WITHIN 5", "AND"),
    ("PATTERN SEQ(A a, B b)+ WITHIN 5", "SEQ(..)+"),
])
def test_refused_constructs(text, what):
    with pytest.raises(QueryError) as exc:
        MatchNodeEngine(cep_core.compile(text).plan, 1)
    assert what in str(exc.value) and "\n" not in str(exc.value)


def test_proxy_refuses_a_predicate_relating_two_events():
    plan = cep_core.compile("PATTERN SEQ(A a, B b) WHERE a.v < b.v WITHIN 5").plan
    with pytest.raises(QueryError, match="relating several elements"):
        MatchNodeEngine(plan, 1, proxy=True)
    MatchNodeEngine(plan, 1)  # without proxies it runs


# --------------------------------------------------------------------------- proxies
@pytest.mark.parametrize("seed", range(8))
def test_proxy_matches_keep_every_match_point(seed):
    """Theorem 2: at most k + 1 nodes per partition and state, one per error level, and
    every event that completes a match completes one with proxies too, with the same
    least error (no window with a match is lost)."""
    for text, stream, k in _cases(200 + seed, 25):
        plan = cep_core.compile(text).plan
        if any(len(p.vars) > 1 for p in plan.preds):
            continue
        full, proxy = MatchNodeEngine(plan, k), MatchNodeEngine(plan, k, proxy=True)
        for e in stream:
            a, b = [], []
            full.process(e, a)
            proxy.process(e, b)
            least = lambda out: min((m["missing"] for m in out), default=None)  # noqa: E731
            assert least(a) == least(b), (text, k, e)
            for part in proxy.live.values():
                for state, nodes in part.items():
                    assert len(nodes) <= k + 1
                    slots = proxy._slots[nodes[0].key][state]
                    starts = [n.start for n in slots if n is not None]
                    assert starts == sorted(starts)  # w_0 ≤ w_1 ≤ ... ≤ w_k


def test_proxy_keeps_the_latest_start_per_error_level():
    plan = cep_core.compile("PATTERN SEQ(A a, B b, C c) WITHIN 10").plan
    eng = MatchNodeEngine(plan, 1, proxy=True)
    for e in events("a1 a2 b3 a4 b5"):
        eng.process(e, [])
    # at B: error level 0 holds a4 b5 (a2 b3 and a1 b3 start earlier), level 1 the node
    # b5 alone (A inserted), which starts later still
    assert [(n.start, n.err) for n in eng.live[()][1]] == [(4, 0), (5, 1)]
    # at A: a4, the latest start, for both levels
    assert [(n.start, n.err) for n in eng.live[()][0]] == [(4, 0)]


# --------------------------------------------------------------------------- Algorithm 2
def _bits(s: str) -> int:
    return sum(1 << i for i, ch in enumerate(s) if ch == "1")


def test_example_6_greedy_order_and_version_table():
    """Example 6: c = 168 for all, z = 168 (m = 1), maps 1000, 0110, 0111: μ3 first,
    then μ2's refreshed score 0 lets μ1 (score 1) go before it."""
    q = CoverageQueue(4, z=168)
    for name, b in (("mu1", "1000"), ("mu2", "0110"), ("mu3", "0111")):
        q.put(name, 168, _bits(b))
    first = q.pop()
    assert first == ("mu3", 3.0)
    assert q.version == 2 and q.since[0] == _bits("0111")
    assert list(q.max) == [0, 1, 1, 1]
    assert q.pop() == ("mu1", 1.0)
    assert q.since[:2] == [_bits("1111"), _bits("1000")]  # versions 1 and 2
    assert q.pop() == ("mu2", 0.0)
    assert q.refreshes == 1 and q.pop() is None


def test_multiplicity_normalises_by_the_visit_count():
    """§3.2: a vector visited 29 times against one visited 42 times (z = 42): the first
    covers its bundles 42/29 = 1.45 times."""
    q = CoverageQueue(6, z=42)
    assert q.put("v1", 29, _bits("101000")) == pytest.approx(2 * 42 / 29)
    assert q.put("v2", 42, _bits("011010")) == pytest.approx(3.0)


# --------------------------------------------------------------------------- history
def test_bundles_follow_definition_3():
    b = Bundles(window=5)
    assert [b.of(t) for t in (1, 6, 12, 13, 30)] == [0, 0, 1, 1, 2]


def test_history_swaps_when_the_secondary_maps_are_full():
    mv = MatchVectors(states=2, window=5, k=1, buckets=2)
    h = History(mv, capacity=2)
    v = mv.of_values(0, 5, 0, 0)
    for t in (1, 10, 20):  # three bundles: the third swaps the buffers
        h.visit(v)
        h.match([v], t)
    assert h.swaps == 1 and h.primary_bundles == 2
    assert h.lookup(v) == (3, 0b11)  # the first two bundles and three visits
    assert h.secondary.lookup(v) == (0, 0b1)  # the third bundle starts the new copy


# --------------------------------------------------------------------------- sketch
def _exact(seed: int = 0) -> ExactStore:
    rng = random.Random(seed)
    ex = ExactStore()
    for _ in range(400):
        v = rng.randrange(300)
        ex.visit(v, rng.randint(1, 50))
        if rng.random() < 0.3:
            ex.mark(v, 1 << rng.randrange(64))
    return ex


def test_sketch_never_under_counts_and_follows_algorithm_4():
    ex = _exact()
    sk = SketchStore(5, 40, seed=3)
    sk.add(ex.items())
    for v, c, bits in ex.items():
        got_c, got_b = sk.lookup(v)
        cells = sk.cells(v)
        assert got_c == min(int(sk.count[i, j]) for i, j in enumerate(cells)) >= c
        want = sk.bits[0][cells[0]]
        for i in range(1, 5):
            want &= sk.bits[i][cells[i]]
        assert got_b == want and got_b & bits == bits  # no bit lost (one-sided)
        if got_b != bits:  # Theorem 3: a false bit implies an over-count
            assert got_c > c


def test_sketch_fold_equals_algorithm_3_over_the_run():
    rng = random.Random(1)
    streamed, folded, ex = SketchStore(3, 17, 9), SketchStore(3, 17, 9), ExactStore()
    for _ in range(300):
        v = rng.randrange(100)
        streamed.visit(v)
        ex.visit(v)
        if rng.random() < 0.2:
            bit = 1 << rng.randrange(16)
            streamed.mark(v, bit)
            ex.mark(v, bit)
    folded.add(ex.items())
    assert (streamed.count == folded.count).all() and streamed.bits == folded.bits


def test_theorem_4_sizing_minimises_the_false_bit_probability():
    """For c = d·l cells, (1 − e^{−α/l})^d is least near l = α/ln 2."""
    c, alpha = 800, 20.0
    d, w = sketch_shape(c, alpha)
    assert (d, w) == (28, 28) and w == pytest.approx(alpha / math.log(2), abs=1)

    def false_bit(ll: int) -> float:
        return (1 - math.exp(-alpha / ll)) ** (c / ll)

    assert all(false_bit(w) <= false_bit(other) for other in (10, 14, 20, 40, 56, 80))


# --------------------------------------------------------------------------- budget
LETTERS = "PATTERN SEQ(A a, B b, C c, D d) WITHIN 8"


def _letters(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [{"type": rng.choice("ABCDE"), "time": i, "id": i} for i in range(n)]


def test_rc_acep_with_an_unlimited_budget_finds_every_match():
    plan = cep_core.compile(LETTERS).plan
    hist, _ = build_history(plan, 1, _letters(600, 1), capacity=16)
    test = _letters(300, 2)
    truth = BudgetedMatcher(plan, 1).run(test)
    got = BudgetedMatcher(plan, 1, "rc-acep", Budget(1e9), history=hist).run(test)
    assert truth.found and got.found == truth.found
    assert got.processed == got.candidates == truth.candidates


def test_a_tight_budget_finds_a_subset_and_charges_selection():
    plan = cep_core.compile(LETTERS).plan
    hist, _ = build_history(plan, 1, _letters(600, 1), capacity=16)
    test = _letters(300, 2)
    truth = BudgetedMatcher(plan, 1).run(test).found
    for order in ("timeout", "rc-acep"):
        rep = BudgetedMatcher(plan, 1, order, Budget(3.0),
                              history=hist if order == "rc-acep" else None).run(test)
        assert set(rep.found) < set(truth) and rep.processed < rep.candidates
        assert all(rep.found[m][1] >= truth[m][1] for m in rep.found)
        assert (rep.overhead > 0) == (order == "rc-acep")
        assert rep.busy <= 3.0 * len(test) + rep.work  # never more than Δ per letter + 1
    nothing = BudgetedMatcher(plan, 1, "timeout", Budget(0.5)).run(test)
    assert not nothing.found and nothing.skipped > 0


def test_timeout_order_is_algorithm_1s():
    """The seed first, then nodes by automaton state, oldest first."""
    plan = cep_core.compile("PATTERN SEQ(A a, A b, A c) WITHIN 10").plan
    eng = MatchNodeEngine(plan, 0)
    for e in events("a1 a2"):
        eng.process(e, [])
    e = events("a3")[0]
    cands = eng.candidates(e, eng.begin_event(e))
    assert cands[0] is SEED
    assert [(n.state, n.start) for n in cands[1:]] == [(0, 1), (0, 2), (1, 1)]


# --------------------------------------------------------------------------- Q-learning
def test_algorithm_5_post_and_dist():
    plan = cep_core.compile("PATTERN SEQ(A a, (B b OR C c), D d) WITHIN 5").plan
    post, dist = setup(plan)
    assert post[START] == [0] and sorted(post[0]) == [1, 2] and post[1] == [3]
    assert dist == {START: 3, 0: 2, 1: 1, 2: 1, 3: 0}


def test_q_update_formula_on_a_tiny_case():
    """Q ← Q + α(n)(r + γ max Q' − Q), α(n) = 60/(59 + n); f = ∞ while n < 5."""
    assert learning_rate(1) == 1.0 and learning_rate(61) == pytest.approx(0.5)
    assert exploration(0.3, 4) == math.inf and exploration(0.3, 5) == 0.3
    plan = cep_core.compile("PATTERN SEQ(A a, B b) WITHIN 5").plan
    ag = QAgents(plan, 1, gamma=0.5)
    sa = (("s",), ("adv", 1))
    ag.update((sa[0], sa[1], 0.25), future=1.0)  # n = 1: α = 1, Q = 0.25 + 0.5·1
    assert ag.Q[sa] == pytest.approx(0.75) and ag.n[sa] == 1
    ag.update((sa[0], sa[1], 0.0), future=0.0)  # n = 2: α = 60/61
    assert ag.Q[sa] == pytest.approx(0.75 - 60 / 61 * 0.75)


def test_agents_follow_one_trajectory_and_report_real_matches():
    plan = cep_core.compile(LETTERS).plan
    hist, _ = build_history(plan, 1, _letters(600, 1), capacity=16)
    test = _letters(2000, 3)
    truth = BudgetedMatcher(plan, 1).run(test).found
    agents = QAgents(plan, 1, max_agents=4)
    rep = BudgetedMatcher(plan, 1, "rc-acep", Budget(2.0), history=hist,
                          agents=agents).run(test)
    assert agents.spawned > 0 and agents.matches > 0
    assert set(rep.found) <= set(truth)
    assert len(agents.agents) <= 4


# --------------------------------------------------------------------------- shedding
def test_hybrid_shedding_engine_runs_approximate_matching():
    """The baseline: the shedding engine with max_missing and nothing shed finds the
    reference engine's approximate matches."""
    q = cep_core.compile(LETTERS)
    stream = _letters(200, 4)
    eng = SheddingEngine(q.plan, "skip-till-any-match", "matches", "every-event",
                         SheddingConfig("NS", unit_cost=1.0), max_missing=1)
    out: list[dict] = []
    for e in stream:
        eng.process(e, out)
    assert engine_matches(out) == engine_matches(q.matches(stream, max_missing=1))


def test_a_state_the_cost_model_never_saw_is_kept():
    """With max_missing, a deep state may first appear after the cost model's history:
    it has no values and is not free to shed (it was a KeyError)."""
    from cep_core.shedding import fit_cost_model

    q = cep_core.compile(LETTERS)
    model = fit_cost_model(q, _letters(12, 5), max_missing=1)
    unseen = next(p.index for p in q.plan.positions if p.index not in model.states)
    assert model.values(unseen, 0, 0) == (0.0, 0.0) and model.contributes(unseen, 0, 0)


def test_a_placeholder_is_ignored_as_by_the_reference_engine():
    q = cep_core.compile("PATTERN SEQ(A a, B b, C c) WITHIN 5")
    stream = events("a1 b2 c3")
    stream[1]["lost"] = True
    mine = MatchNodeEngine(q.plan, 1).run(stream)
    assert engine_matches(mine) == engine_matches(q.matches(stream, max_missing=1)) == {
        frozenset({("a", "a1"), ("c", "c3")}): 1}
