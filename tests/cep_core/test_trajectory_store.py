"""The trajectory store of RC-ACEP's history: exact maps, counts that never under-count,
one entry read per lookup, and the exact history's ranking on a fold (Li and Ge, VLDB
2016, §3.2 Algorithm 2 lines 8-9, §4, §5; count-min's point query, Cormode and
Muthukrishnan 2005, §3)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import cep_core
from cep_core.approx.history import COUNT_BYTES, VECTOR_BYTES, ExactStore, History
from cep_core.approx.rc_acep import Budget, BudgetedMatcher, build_history
from cep_core.approx.trajectory_store import CellCounts, ExactCounts, TrajectoryStore
from tests.cep_core.test_filtered_sketch import _replay


def _history_stream(seed: int, n: int = 3000, vectors: int = 400) -> list[tuple]:
    """Visits (Zipf over ``vectors``, weights 1-3) and, for a tenth of them, a bundle
    bit of the visited vector: what a build writes to ℋ."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vectors + 1)
    vs = rng.choice(vectors, size=n, p=p / p.sum()).tolist()
    ws = rng.integers(1, 4, size=n).tolist()
    marks = random.Random(seed)
    out: list[tuple] = []
    for v, w in zip(vs, ws, strict=True):
        out.append(("visit", v, w))
        if marks.random() < 0.1:
            out.append(("mark", v, 1 << marks.randrange(48)))
    return out


def _score(count: int, bits: int) -> float:
    """Algorithm 2, line 9 with z = 1: ``|b|·z/c`` (0 without a count)."""
    return bits.bit_count() / count if count else 0.0


def test_a_fold_scores_every_vector_as_the_exact_history_does():
    exact = _replay(ExactStore(), _history_stream(1))
    with_map = [v for v, _, bits in exact.items() if bits]
    assert 0 < len(with_map) < exact.vectors()  # some vectors never lead to a bundle
    for counter in (ExactCounts(), CellCounts(2, 50, seed=3)):
        store = TrajectoryStore(counter)
        store.add(exact.items())
        assert store.vectors() == len(with_map)
        for v, c, bits in exact.items():
            got = store.lookup(v)
            assert got == ((c, bits) if bits else (0, 0))
            assert _score(*got) == _score(c, bits)
        assert store.rows_read == exact.vectors()  # one entry read per lookup


def test_online_with_exact_counts_every_entry_is_the_exact_history_s():
    stream = _history_stream(5)
    store = TrajectoryStore()
    exact = _replay(store, stream)
    for v, c, bits in exact.items():
        assert store.lookup(v) == ((c, bits) if bits else (0, 0))
    counted = exact.vectors() - store.vectors()  # the others: key and count only
    assert store.memory_bytes(64) == store.vectors() * 32 + counted * 24


def test_online_counts_never_under_count_and_maps_are_exact():
    stream = _history_stream(2)
    a = TrajectoryStore(CellCounts(3, 64, seed=5))
    b = TrajectoryStore(CellCounts(3, 64, seed=5))
    exact = _replay(a, stream)
    _replay(b, stream)
    cells = a.counter.cells
    visits = sum(n for op, v, n in stream if op == "visit")
    bound = math.e / cells.width * visits  # count-min: e/width of the visits (or fewer)
    over = []
    for v, c, bits in exact.items():
        got_c, got_b = a.lookup(v)
        assert (got_c, got_b) == b.lookup(v)  # deterministic
        if bits:
            assert got_b == bits and c <= got_c <= c + bound
            over.append(got_c - c)
        else:
            assert (got_c, got_b) == (0, 0)
    assert 0 < sum(o == 0 for o in over) < len(over)  # some entries exact, some over


def test_memory_is_the_entries_and_the_cells_and_a_sealed_store_is_only_read():
    exact = _replay(ExactStore(), _history_stream(3))
    store = TrajectoryStore(CellCounts(2, 40))
    store.add(exact.items())
    entry = VECTOR_BYTES + COUNT_BYTES + 8
    assert store.memory_bytes(64) == store.vectors() * entry + 80 * COUNT_BYTES
    store.seal()
    assert store.memory_bytes(64) == store.vectors() * entry < exact.memory_bytes(64)
    v = next(v for v, _, bits in exact.items() if not bits)
    with pytest.raises(ValueError, match="sealed"):
        store.visit(v)


LETTERS = "PATTERN SEQ(A a, B b, C c, D d) WITHIN 8"


def _letters(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [{"type": rng.choice("ABCDE"), "time": i, "id": i} for i in range(n)]


def _folded(hist: History) -> History:
    out = History(hist.vectors, hist.capacity, store=TrajectoryStore)
    out.primary.add(hist.primary.items())
    out.primary_bundles, out.swaps = hist.primary_bundles, 1
    return out


def test_rc_acep_with_the_store_finds_what_the_exact_history_finds_at_its_cost():
    plan = cep_core.compile(LETTERS).plan
    history = _letters(600, 1)
    test = _letters(400, 2)
    truth = BudgetedMatcher(plan, 1).run(test)
    for delta in (3.0, 6.0):
        b = Budget(delta)
        for capacity in (4, 16):  # ℋ swapped during the test (4) or not (16)
            hist, _ = build_history(plan, 1, history, capacity=capacity)
            online, _ = build_history(plan, 1, history, capacity=capacity,
                                      store=TrajectoryStore)
            assert online.primary.counter is None and online.primary.vectors() > 0
            others = [online] if capacity == 4 else [online, _folded(hist)]
            exact = BudgetedMatcher(plan, 1, "rc-acep", b, history=hist).run(test)
            assert set(exact.found) < set(truth.found)  # the budget binds
            assert (hist.swaps > 1) == (capacity == 4)
            for h in others:
                got = BudgetedMatcher(plan, 1, "rc-acep", b, history=h).run(test)
                assert got.found == exact.found and got.overhead == exact.overhead
            assert online.swaps == hist.swaps
    cells, _ = build_history(plan, 1, history, capacity=4,
                             store=lambda: TrajectoryStore(CellCounts(2, 30, seed=1)))
    free = BudgetedMatcher(plan, 1, "rc-acep", Budget(1e9), history=cells).run(test)
    assert truth.found and free.found == truth.found  # unlimited: every match
