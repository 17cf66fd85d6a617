"""Plan generation that records its deciding conditions (US 11,693,862 B2).

Two algorithms 𝒜, each run on a snapshot of the statistics (:class:`Inputs`: the arrival
rate ``r[j]`` of each position's type and the selectivities ``sel[j][k]``):

* :func:`greedy_order`, Algorithm 2 (greedy order-based plans after Swami, adapted to CEP
  by Kolchinsky and Schuster): at step i pick, of the positions left,

      p_i = argmin_j  r_j · sel_{j,j} · Π_{k<i} sel_{p_k,j}

  A building block is "process position p_i at step i"; its deciding conditions are the
  comparisons that chose it, ``cost_i(p_i) < cost_i(j')`` for every other candidate j'.
* :func:`zstream_tree`, Algorithm 3 (ZStream's dynamic programme over join trees of the
  text order's contiguous ranges):

      Cost(leaf j) = Card(leaf j) = r_j · W · sel_{j,j}
      Card(T) = Card(L) · Card(R) · SEL(L, R),   Cost(T) = Cost(L) + Cost(R) + Card(T)

  with SEL(L, R) the product of the selectivities between L and R and W the pattern's
  window (the expected events of a type in one window). A building block is an internal
  node; its deciding conditions compare its subtree with the best tree of every other
  split of its range, as the algorithm built them. The patent keeps the cost of the
  subtrees below as constants set when the plan was built; here the costs of the two
  trees a condition compares are recomputed over their nodes (fixed shapes, a few
  products each for patterns of up to 8 elements), so that a violated condition means
  that the algorithm now prefers another tree (Theorem 1), which the constants do not
  ensure (a subtree cheaper since, outside the plan, is not seen).

Each block keeps its conditions tightest first (the smallest slack ``rhs − lhs`` when the
plan was built): :mod:`cep_core.adaptive.decision` verifies the first K of each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from cep_core.adaptive.pattern import Shape
from cep_core.adaptive.statistics import WindowStatistics

__all__ = ["Inputs", "Condition", "Planned", "inputs", "greedy_order", "zstream_tree",
           "PLAN_KINDS"]

PLAN_KINDS = ("order", "tree")


@dataclass(frozen=True)
class Inputs:
    """A snapshot of the statistics a plan is built from: per position the arrival rate
    of its type [1/time unit], and the selectivity matrix (``sel[j][j]``: the predicates
    on position j alone; ``sel[j][k]``: those between j and k)."""

    r: tuple[float, ...]
    sel: tuple[tuple[float, ...], ...]
    window: float  # the pattern's window [time units]
    #: Card of the ranges computed so far from this snapshot (:func:`_card`)
    cards: dict = field(default_factory=dict, compare=False, repr=False)

    def values(self) -> tuple[float, ...]:
        """Every statistic, for the constant-threshold method."""
        return self.r + tuple(x for row in self.sel for x in row)


def inputs(shape: Shape, stats: WindowStatistics, window: float) -> Inputs:
    """The snapshot of ``stats`` for ``shape`` (predicates over three or more positions
    do not enter the costs)."""
    stats.expire()
    n = shape.n
    sel = [[1.0] * n for _ in range(n)]
    for p, at in shape.preds:
        s = stats.selectivity(p.index)
        if len(at) == 1:
            (q,) = at
            sel[q][q] *= s
        elif len(at) == 2:
            q, r = sorted(at)
            sel[q][r] *= s
            sel[r][q] *= s
    rates = tuple(stats.rate(t) for t in shape.types)
    return Inputs(rates, tuple(tuple(row) for row in sel),
                  window if math.isfinite(window) else stats.window)


@dataclass(frozen=True)
class Condition:
    """A deciding condition ``lhs(stats) < rhs(stats)`` that held when the plan was built
    (``slack``: rhs − lhs then; ``text``: what it compares; ``tie_loses``: a tie goes to
    the other candidate, which the algorithm's tie-break prefers)."""

    lhs: Callable[[Inputs], float]
    rhs: Callable[[Inputs], float]
    slack: float
    text: str
    tie_loses: bool = False

    def violated(self, stats: Inputs, d: float = 0.0) -> bool:
        """Whether the statistics now violate it by more than the relative distance
        ``d``: ``lhs > (1 + d) · rhs`` (the patent's distance-based invariants; with
        d = 0 also a tie the other candidate wins)."""
        lhs, rhs = self.lhs(stats), self.rhs(stats)
        return lhs > (1.0 + d) * rhs or (self.tie_loses and d == 0 and lhs == rhs)


@dataclass(frozen=True)
class Planned:
    """A plan (``order``: positions in evaluation order, or ``tree``: nested pairs of
    positions) and its building blocks' deciding conditions, in verification order
    (blocks in plan order; a tree's bottom-up), each block's tightest first."""

    kind: str
    plan: Any
    blocks: tuple[tuple[Condition, ...], ...]

    def cost(self, stats: Inputs) -> float:
        """The plan's cost under ``stats``: a tree's Cost(T) (module doc); an order's
        expected partial matches per window, Σ_i Π_{j≤i} r_{p_j}·W·sel_{p_j,p_j}·
        Π_{k<j} sel_{p_k,p_j} (the lazy NFA's cost model, after Kolchinsky and
        Schuster), which Algorithm 2 minimises greedily.

        >>> ones = ((1.0,) * 2,) * 2
        >>> Planned("order", (1, 0), ()).cost(Inputs((4.0, 1.0), ones, 1.0))
        5.0
        """
        if self.kind == "tree":
            return _tree_walk(self.plan, 0, stats)[0]
        total, card = 0.0, 1.0
        for i, j in enumerate(self.plan):
            card *= stats.r[j] * stats.window * stats.sel[j][j]
            for k in self.plan[:i]:
                card *= stats.sel[k][j]
            total += card
        return total

    def describe(self, vars_: tuple[str, ...]) -> str:
        if self.kind == "order":
            return " → ".join(vars_[j] for j in self.plan)

        def show(t: Any) -> str:
            return vars_[t] if isinstance(t, int) else f"({show(t[0])} ⋈ {show(t[1])})"
        return show(self.plan)


def _order_cost(j: int, prefix: tuple[int, ...]) -> Callable[[Inputs], float]:
    """The cost of taking position ``j`` after ``prefix`` (a function of the statistics
    that pickles, as the plan it decides is a part of the engine's state)."""
    return partial(_order_cost_of, j, prefix)


def _order_cost_of(j: int, prefix: tuple[int, ...], s: Inputs) -> float:
    c = s.r[j] * s.sel[j][j]
    for p in prefix:
        c *= s.sel[p][j]
    return c


def greedy_order(shape: Shape, stats: Inputs) -> Planned:
    """Algorithm 2 (module doc); ties go to the position first in the text.

    >>> from cep_core.adaptive.pattern import Shape
    >>> shape = Shape(3, ("a", "b", "c"), ("A", "B", "C"), ((False,) * 3,) * 3, ())
    >>> ones = ((1.0,) * 3,) * 3
    >>> planned = greedy_order(shape, Inputs((5.0, 3.0, 1.0), ones, 1.0))
    >>> planned.plan, [c.text for c in planned.blocks[0]]
    ((2, 1, 0), ['cost(c | ) < cost(b | )', 'cost(c | ) < cost(a | )'])
    """
    n = shape.n
    left = list(range(n))
    order: list[int] = []
    blocks = []
    for _ in range(n):
        prefix = tuple(order)
        costs = {j: _order_cost(j, prefix) for j in left}
        values = {j: costs[j](stats) for j in left}
        best = min(left, key=lambda j: (values[j], j))
        tag = ", ".join(shape.vars[p] for p in prefix)
        conds = [Condition(costs[best], costs[j], values[j] - values[best],
                           f"cost({shape.vars[best]} | {tag}) < cost({shape.vars[j]} | {tag})",
                           j < best)
                 for j in left if j != best]
        blocks.append(tuple(sorted(conds, key=lambda c: c.slack)))
        order.append(best)
        left.remove(best)
    return Planned("order", tuple(order), tuple(blocks))


def _card(lo: int, hi: int) -> Callable[[Inputs], float]:
    """Card of the text-order range [lo, hi): expected partial matches over it (once per
    snapshot: the conditions of one check share it)."""
    return partial(_card_of, lo, hi)


def _card_of(lo: int, hi: int, s: Inputs) -> float:
    c = s.cards.get((lo, hi))
    if c is None:
        c = 1.0
        for j in range(lo, hi):
            c *= s.r[j] * s.window * s.sel[j][j]
            for k in range(lo, j):
                c *= s.sel[k][j]
        s.cards[(lo, hi)] = c
    return c


def zstream_tree(shape: Shape, stats: Inputs) -> Planned:
    """Algorithm 3 over the text order's contiguous ranges (module doc); ties go to the
    leftmost split.

    >>> from cep_core.adaptive.pattern import Shape
    >>> shape = Shape(3, ("a", "b", "c"), ("A", "B", "C"), ((False,) * 3,) * 3, ())
    >>> ones = ((1.0,) * 3,) * 3
    >>> zstream_tree(shape, Inputs((9.0, 1.0, 1.0), ones, 1.0)).plan
    (0, (1, 2))
    """
    n = shape.n
    best: dict[tuple[int, int], tuple[float, float, Any]] = {}  # range -> cost, card, tree
    conds_of: dict[tuple[int, int], tuple[Condition, ...]] = {}
    for j in range(n):
        c = _card(j, j + 1)(stats)
        best[(j, j + 1)] = (c, c, j)
    for size in range(2, n + 1):
        for lo in range(0, n - size + 1):
            hi = lo + size
            card_t = _card(lo, hi)(stats)
            options = []
            for k in range(lo + 1, hi):
                value = best[(lo, k)][0] + best[(k, hi)][0]
                options.append((value, k))
            value, k = min(options)
            tree_k = (best[(lo, k)][2], best[(k, hi)][2])
            best[(lo, hi)] = (value + card_t, card_t, tree_k)
            chosen = _tree_cost(tree_k, lo)
            conds = [Condition(chosen, _tree_cost((best[(lo, k2)][2], best[(k2, hi)][2]), lo),
                               v2 - value, f"split {shape.vars[lo]}..{shape.vars[hi - 1]} "
                               f"at {shape.vars[k]} < at {shape.vars[k2]}", k2 < k)
                     for v2, k2 in options if k2 != k]
            conds_of[(lo, hi)] = tuple(sorted(conds, key=lambda c: c.slack))
    tree = best[(0, n)][2]
    blocks: list[tuple[Condition, ...]] = []

    def bottom_up(t: Any, lo: int) -> int:
        """Append the blocks of subtree ``t`` (spanning from ``lo``); its end."""
        if isinstance(t, int):
            return lo + 1
        mid = bottom_up(t[0], lo)
        hi = bottom_up(t[1], mid)
        blocks.append(conds_of[(lo, hi)])
        return hi

    bottom_up(tree, 0)
    return Planned("tree", tree, tuple(blocks))


def _tree_cost(tree: Any, lo: int) -> Callable[[Inputs], float]:
    """Cost(T) of a tree over the text-order range starting at ``lo`` (module doc)."""
    return partial(_tree_cost_of, tree, lo)


def _tree_cost_of(tree: Any, lo: int, s: Inputs) -> float:
    return _tree_walk(tree, lo, s)[0]


def _tree_walk(t: Any, at: int, s: Inputs) -> tuple[float, int]:
    if isinstance(t, int):
        return _card_of(t, t + 1, s), t + 1
    left, mid = _tree_walk(t[0], at, s)
    right, hi = _tree_walk(t[1], mid, s)
    return left + right + _card_of(at, hi, s), hi
