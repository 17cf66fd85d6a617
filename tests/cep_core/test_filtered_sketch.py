"""The filtered history sketch of RC-ACEP: Space-Saving's guarantees (Metwally et al.,
ICDT 2005, Lemmas 3.3-3.5), the store's one-sided errors and determinism, and RC-ACEP on
it (Li and Ge, VLDB 2016, §3.2 Algorithm 2, §4)."""

from __future__ import annotations

import random

import numpy as np

import cep_core
from cep_core.approx.filtered_sketch import FilteredSketch, filtered_shape
from cep_core.approx.heavy_hitters import SpaceSaving
from cep_core.approx.history import ExactStore, History
from cep_core.approx.rc_acep import Budget, BudgetedMatcher, build_history
from cep_core.approx.sketch import SketchStore


def _zipf_stream(n: int, items: int, seed: int) -> list[tuple[int, int]]:
    """(item, weight) pairs: items by a Zipf law, weights 1-3."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, items + 1)
    v = rng.choice(items, size=n, p=p / p.sum())
    w = rng.integers(1, 4, size=n)
    return list(zip(v.tolist(), w.tolist(), strict=True))


def test_space_saving_counts_within_its_error_bound():
    stream = _zipf_stream(3000, 200, seed=1)
    ss = SpaceSaving(20)
    true: dict[int, int] = {}
    for v, n in stream:
        ss.add(v, n)
        true[v] = true.get(v, 0) + n
    total = sum(true.values())
    assert ss.total == total == int(ss.count.sum())  # Lemma 3.3: the counts sum to N
    assert 0 < ss.bound() <= total / ss.slots
    for v, f in true.items():
        got = ss.estimate(v)
        if got is None:
            assert f <= ss.bound()
        else:
            count, error = got
            assert count - error <= f <= count  # Lemma 3.4
        if f > total / ss.slots:
            assert got is not None  # Lemma 3.5
    again = SpaceSaving(20)
    for v, n in stream:
        again.add(v, n)
    assert again.items == ss.items and (again.count == ss.count).all()  # deterministic


def test_space_saving_of_exact_counts_keeps_the_largest():
    counts = [(v, c) for v, c in enumerate([5, 50, 7, 50, 1, 30])]
    ss = SpaceSaving.of_counts(counts, 3)
    assert sorted(ss.items) == [1, 3, 5] and ss.estimate(5) == (30, 0)
    assert ss.bound() == 30 and ss.total == 143


def _history_stream(seed: int) -> list[tuple[str, int, int]]:
    """Visits (Zipf over 300 vectors) and bundle marks of a few vectors."""
    rng = random.Random(seed)
    out = []
    for v, n in _zipf_stream(2000, 300, seed):
        out.append(("visit", v, n))
        if rng.random() < 0.1:
            out.append(("mark", v, 1 << rng.randrange(32)))
    return out


def _replay(store, stream) -> ExactStore:
    exact = ExactStore()
    for op, v, x in stream:
        getattr(store, op)(v, x)
        getattr(exact, op)(v, x)
    return exact


def test_filtered_sketch_errs_upwards_only_and_is_deterministic():
    stream = _history_stream(3)
    a, b = FilteredSketch(16, 4, 25, seed=5), FilteredSketch(16, 4, 25, seed=5)
    exact = _replay(a, stream)
    _replay(b, stream)
    for v, c, bits in exact.items():
        got_c, got_b = a.lookup(v)
        assert got_c >= c and got_b & bits == bits
        assert (got_c, got_b) == b.lookup(v)
    assert len(a.heavy) == 16
    true = {v: c for v, c, _ in exact.items()}
    for v, c in true.items():  # outside the slots: at most the least slot's count
        s = a.heavy.slot_of.get(v)
        if s is None:
            assert c <= a.heavy.bound()
        else:
            assert int(a.heavy.count[s] - a.heavy.error[s]) <= c <= int(a.heavy.count[s])
    top = sorted(true, key=lambda v: -true[v])[:4]
    assert all(v in a.heavy.slot_of for v in top)


def test_filtered_sketch_fold_keeps_the_most_visited_exactly():
    exact = _replay(ExactStore(), _history_stream(4))
    items = list(exact.items())
    d, w = filtered_shape(items, 24, 200)
    fs = FilteredSketch(24, d, w, seed=1)
    fs.add(items)
    ranked = sorted(items, key=lambda x: (-x[1], x[0]))
    for v, c, bits in ranked[:24]:
        assert fs.lookup(v) == (c, bits) and fs.heavy.estimate(v) == (c, 0)
    cells = SketchStore(d, w, seed=1, conservative=True)
    cells.add(ranked[24:])
    for v, c, bits in ranked[24:]:
        got_c, got_b = fs.lookup(v)
        assert c <= got_c <= min(cells.lookup(v)[0], fs.heavy.bound())
        assert got_b == cells.lookup(v)[1] and got_b & bits == bits
    reads = fs.rows_read
    fs.lookup(ranked[0][0])
    fs.lookup(ranked[-1][0])
    assert fs.rows_read - reads == 1 + 1 + d  # a slot: one read; the cells: one per row


def test_conservative_update_never_under_counts_and_counts_less():
    stream = _zipf_stream(1500, 120, seed=2)
    plain, cons = SketchStore(3, 20, seed=1), SketchStore(3, 20, seed=1, conservative=True)
    true: dict[int, int] = {}
    for v, n in stream:
        plain.visit(v, n)
        cons.visit(v, n)
        true[v] = true.get(v, 0) + n
    assert all(f <= cons.estimate(v) <= plain.estimate(v) for v, f in true.items())
    assert sum(cons.estimate(v) for v in true) < sum(plain.estimate(v) for v in true)


LETTERS = "PATTERN SEQ(A a, B b, C c, D d) WITHIN 8"


def _letters(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [{"type": rng.choice("ABCDE"), "time": i, "id": i} for i in range(n)]


def _filtered(hist: History, slots: int = 8) -> History:
    items = list(hist.primary.items())
    d, w = filtered_shape(items, slots, 60)
    out = History(hist.vectors, hist.capacity,
                  store=lambda: FilteredSketch(slots, d, w, seed=2))
    out.primary.add(items)
    out.primary_bundles, out.swaps = hist.primary_bundles, 1
    return out


def test_rc_acep_with_the_filtered_sketch_on_a_small_stream():
    plan = cep_core.compile(LETTERS).plan
    hist, _ = build_history(plan, 1, _letters(600, 1), capacity=16)
    test = _letters(300, 2)
    truth = BudgetedMatcher(plan, 1).run(test)
    got = BudgetedMatcher(plan, 1, "rc-acep", Budget(1e9), history=_filtered(hist)).run(test)
    assert truth.found and got.found == truth.found  # unlimited: every match
    tight = [BudgetedMatcher(plan, 1, "rc-acep", Budget(4.0), history=h).run(test)
             for h in (hist, _filtered(hist), _filtered(hist))]
    assert all(set(r.found) < set(truth.found) for r in tight)
    assert tight[1].found == tight[2].found  # deterministic
    per_candidate = [r.overhead / max(1, r.candidates) for r in tight[:2]]
    assert per_candidate[1] > per_candidate[0]  # a lookup in the cells reads every row
