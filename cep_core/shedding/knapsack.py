"""Choosing the shedding set: the knapsack of the dissertation's Eq. 4.8 (§4.2.4, §4.3.3).

Items are classes of partial matches (automaton state, class, time slice), each with a
contribution ``Δ⁺`` (Eq. 4.7) and a consumption ``Δ⁻`` (Eq. 4.5), both shares of their
totals over the live partial matches. The shedding set 𝔻 minimises ``Σ_𝔻 Δ⁺`` subject to
``Σ_𝔻 Δ⁻ > cap`` with ``cap = (ℓ(k) − θ)/ℓ(k)`` (Eq. 4.6).

* :func:`min_contribution_cover` solves it exactly by dynamic programming over integer
  weights (the consumptions on a grid of ``resolution`` steps; the grid's rounding is
  checked afterwards against the real shares, and the cheapest item by Δ⁺/Δ⁻ is added if
  rounding left the set a hair short);
* :func:`greedy_cover` takes items in ascending Γ⁺/Γ⁻ until the capacity is exceeded
  (§4.3.3's "order of their contribution and consumption ratios"; zero-contribution
  items first, the largest consumption first among them);
* :func:`choose_shed_set` uses DP up to ``exact_limit`` items and greedy beyond;
* :class:`ShedSetCache` reuses a set for a similar violation (§4.3.3): the key is the
  capacity rounded to ``step`` (chosen here: 0.05), valid until the cost model changes.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

__all__ = ["min_contribution_cover", "greedy_cover", "choose_shed_set", "ShedSetCache"]


def min_contribution_cover(values: Sequence[float], weights: Sequence[int],
                           need: int) -> list[int]:
    """Indices of a subset with ``Σ weights ≥ need`` and the least ``Σ values`` (exact
    0/1 knapsack by dynamic programming over the weight total, capped at ``need``).

    Returns all items when even all of them fall short.

    >>> min_contribution_cover([5.0, 1.0, 1.0], [4, 2, 2], need=4)
    [1, 2]
    """
    n = len(values)
    if need <= 0:
        return []
    if sum(weights) < need:
        return list(range(n))
    tables = _tables(values, weights, need)
    chosen, w = [], need
    for i in range(n - 1, -1, -1):
        if w == 0:
            break
        if tables[i + 1][w] != tables[i][w]:  # the optimum needs item i
            chosen.append(i)
            w = max(w - int(weights[i]), 0)
    return sorted(chosen)


def _tables(values: Sequence[float], weights: Sequence[int], need: int) -> list[np.ndarray]:
    """``t[i][w]``: the least value of a subset of the first ``i`` items whose weight
    reaches at least ``w`` (``w`` = 0..need); ``t[i+1][w] = min(t[i][w],
    v_i + t[i][max(w − w_i, 0)])``."""
    t = np.full(need + 1, np.inf)
    t[0] = 0.0
    out = [t]
    at = np.arange(need + 1)
    for wi, vi in zip(weights, values, strict=True):
        wi = int(wi)
        t = np.minimum(t, float(vi) + t[np.maximum(at - wi, 0)]) if wi > 0 else t
        out.append(t)
    return out


def greedy_cover(contribution: Sequence[float], consumption: Sequence[float],
                 cap: float) -> list[int]:
    """Items in ascending contribution/consumption until ``Σ consumption > cap``.

    >>> greedy_cover([0.0, 0.5, 0.5], [0.2, 0.5, 0.3], cap=0.3)
    [0, 1]
    """
    c = np.asarray(contribution, dtype=float)
    w = np.asarray(consumption, dtype=float)
    ratio = np.where(w > 0, c / np.where(w > 0, w, 1.0), np.inf)
    order = np.lexsort((-w, ratio))
    chosen, total = [], 0.0
    for i in order.tolist():
        if total > cap:
            break
        if w[i] <= 0:
            continue
        chosen.append(i)
        total += w[i]
    return sorted(chosen)


def choose_shed_set(contribution: Sequence[float], consumption: Sequence[float],
                    cap: float, exact_limit: int = 64, resolution: int = 1000,
                    free: Sequence[bool] | None = None) -> list[int]:
    """The shedding set of Eq. 4.8 as item indices: exact DP for at most ``exact_limit``
    items (consumptions on a grid of ``resolution``), greedy beyond. ``contribution``
    and ``consumption`` need not be normalised (they are divided by their totals).
    Among the sets of least contribution it takes the one that frees most: every
    ``free`` item is in it (known to contribute nothing, by default those of zero
    contribution: they cost nothing, and shedding them now spares the next violation).

    >>> choose_shed_set([0.0, 9.0, 1.0], [3.0, 3.0, 4.0], cap=0.25)
    [0]
    """
    c = np.asarray(contribution, dtype=float)
    w = np.asarray(consumption, dtype=float)
    if cap <= 0 or not len(c) or w.sum() <= 0:
        return []
    dc = c / c.sum() if c.sum() > 0 else c
    dw = w / w.sum()
    free_mask = c == 0 if free is None else np.asarray(free, dtype=bool)
    free = [i for i in range(len(c)) if free_mask[i] and dw[i] > 0]
    if len(c) > exact_limit:
        return sorted(set(greedy_cover(dc, dw, cap)) | set(free))
    weights = np.floor(dw * resolution).astype(int)
    need = int(np.floor(cap * resolution)) + 1
    chosen = min_contribution_cover(dc.tolist(), weights.tolist(), need)
    if dw[chosen].sum() <= cap:  # rounding fell short: add the cheapest per consumption
        rest = [i for i in np.argsort(np.where(dw > 0, dc / np.maximum(dw, 1e-300), np.inf))
                if i not in chosen and dw[i] > 0]
        for i in rest:
            chosen.append(int(i))
            if dw[chosen].sum() > cap:
                break
    return sorted(set(chosen) | set(free))


class ShedSetCache:
    """Shedding sets by violation (§4.3.3): ``get(cap)`` gives a set chosen for a
    capacity in the same ``step`` bucket since the last :meth:`clear`."""

    def __init__(self, step: float = 0.05):
        self.step = step
        self._sets: dict[int, frozenset[Hashable]] = {}
        self.hits = 0

    def bucket(self, cap: float) -> int:
        """The violation bucket of ``cap``: capacities in one bucket share a set."""
        return int(cap / self.step)

    def get(self, cap: float) -> frozenset[Hashable] | None:
        got = self._sets.get(self.bucket(cap))
        if got is not None:
            self.hits += 1
        return got

    def put(self, cap: float, shed: frozenset[Hashable]) -> None:
        self._sets[self.bucket(cap)] = shed

    def clear(self) -> None:
        self._sets.clear()
