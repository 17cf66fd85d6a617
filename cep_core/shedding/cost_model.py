"""The cost model of hybrid load shedding (dissertation §4.2.3, §4.3.1-4.3.2).

Contribution Γ⁺ (Eq. 4.3: complete matches that extend a partial match) and consumption
Γ⁻ (Eq. 4.4: the resource cost Ω of the partial matches derived from it) per *class* of
partial matches, per automaton state and per time slice.

**Online** (§4.3.2): classification walks the fitted trees in plain Python with a memo
per attribute tuple (the dissertation's lookup tables derived from the classifiers);
observed counts per (state, class, slice) are blended into the values at each slice
end, ``Γ_new = (1 − w)·Γ_old + w·Γ_observed`` with ``w = 0.5``
(:meth:`CostModel.blend`). Chosen here: the observed value of a cell is the credit it
received during the slice over the partial matches in it (those live at the slice's
start plus those created during it), the offline per-PM scale.

A fitted model pickles (joblib, :meth:`CostModel.save`/:func:`load_cost_model`) with
the query text it was fitted for and reloads to the same decisions.

The model is fitted by :func:`cep_core.shedding.fitting.fit_cost_model`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CostModel", "TreeLookup", "StateModel", "EventModel", "load_cost_model"]


class TreeLookup:
    """A fitted scikit-learn decision tree as a plain-Python function with a memo per
    feature tuple: ``lookup(features) -> leaf index`` (the lookup table of §4.4.1)."""

    def __init__(self, tree: Any):
        t = tree.tree_
        self.left = t.children_left.tolist()
        self.right = t.children_right.tolist()
        self.feature = t.feature.tolist()
        self.threshold = t.threshold.tolist()
        self._memo: dict[tuple, int] = {}
        self._arrays: tuple[np.ndarray, ...] | None = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_memo", "_arrays")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._memo, self._arrays = {}, None

    def leaves(self, x: np.ndarray) -> np.ndarray:
        """The leaf of every row of ``x`` (rows × features), walked level by level."""
        if self._arrays is None:  # the tree as arrays, made once
            self._arrays = tuple(np.asarray(v) for v in
                                 (self.left, self.right, self.feature, self.threshold))
        left, right, feature, threshold = self._arrays
        node = np.zeros(len(x), dtype=np.int64)
        rows = np.arange(len(x))
        inner = left[node] != -1
        while inner.any():
            at = node[inner]
            go_left = x[rows[inner], feature[at]] <= threshold[at]
            node[inner] = np.where(go_left, left[at], right[at])
            inner = left[node] != -1
        return node

    def leaf(self, x: tuple[float, ...]) -> int:
        got = self._memo.get(x)
        if got is not None:
            return got
        node, left, right = 0, self.left, self.right
        while left[node] != -1:
            node = left[node] if x[self.feature[node]] <= self.threshold[node] \
                else right[node]
        if len(self._memo) < 100_000:
            self._memo[x] = node
        return node


@dataclass
class StateModel:
    """Classes of the partial matches of one automaton state."""

    attrs: list[str]  # feature names: "var.attr" and predicate operands ("a.V+b.V")
    tree: TreeLookup | None
    leaf_class: dict[int, int]
    plus: np.ndarray   # (classes, slices): Γ⁺ per PM from this slice on (90th pct.)
    minus: np.ndarray  # (classes, slices): Γ⁻ per PM from this slice on (90th pct.)
    completion_rate: float  # complete matches per PM created here (for SS)
    mean_plus: np.ndarray   # the members' mean Γ⁺: offline, then blended online
    mean_minus: np.ndarray  # the members' mean Γ⁻: offline, then blended online
    at_birth: np.ndarray = None  # mean Γ⁺ of the members created in each slice
    offline_mean: tuple[np.ndarray, np.ndarray] = field(repr=False, default=None)

    def __post_init__(self) -> None:
        if self.offline_mean is None:
            self.offline_mean = (self.mean_plus.copy(), self.mean_minus.copy())
        if self.at_birth is None:
            self.at_birth = self.mean_plus.copy()

    def contributes(self, cls: int, s: int) -> bool:
        """Whether a PM of class ``cls`` in slice ``s`` may still contribute: some member
        did (its 90th percentile may be 0 where a few do)."""
        return bool(self.mean_plus[cls, s] > 0)

    def expected(self, cls: int, s: int) -> tuple[float, float]:
        """The members' mean (Γ⁺, Γ⁻) in slice ``s`` (offline, blended online): a finer
        ranking than the 90th percentiles, which tie among small counts."""
        return float(self.mean_plus[cls, s]), float(self.mean_minus[cls, s])

    def born(self, cls: int, s: int) -> float:
        """The expected Γ⁺ of a PM of class ``cls`` created in slice ``s`` (offline):
        what shedding it at its creation costs."""
        return float(self.at_birth[cls, s])

    def values(self, cls: int, s: int) -> tuple[float, float]:
        """(Γ⁺, Γ⁻) of a PM of class ``cls`` in slice ``s``: the offline 90th
        percentiles, scaled by how far the blended mean has moved from the offline
        mean (the blended mean itself where the offline mean is 0)."""
        out = []
        for p90, now, then in ((self.plus, self.mean_plus, self.offline_mean[0]),
                               (self.minus, self.mean_minus, self.offline_mean[1])):
            base = then[cls, s]
            out.append(float(now[cls, s] * p90[cls, s] / base if base > 0 else now[cls, s]))
        return out[0], out[1]

    @property
    def classes(self) -> int:
        return len(self.plus)


@dataclass
class EventModel:
    """For input shedding: which classes an event of one type could create or extend.
    Its features: the attributes ``attrs``, then whether it passes each predicate of
    ``tests`` (by their index in the plan, :func:`local_tests`)."""

    attrs: list[str]
    tree: TreeLookup | None
    leaf_labels: dict[int, frozenset[tuple[int, int]]]
    tests: list[int] = field(default_factory=list)


@dataclass
class CostModel:
    """Per (state, class, slice) contribution and consumption (module doc)."""

    query_text: str
    window: float
    slices: int
    states: dict[int, StateModel]
    events: dict[str, EventModel]
    type_selectivity: dict[str, float]  # complete matches per event, by type (for SI)
    type_share: dict[str, float]         # share of events by type in the history
    state_share: dict[int, float]        # share of PMs by state in the history (for SS)
    consumption: str = "work"
    weight: float = 0.5
    _obs: dict = field(default_factory=dict, repr=False)

    def classify(self, state: int, values: tuple[float, ...]) -> int:
        sm = self.states.get(state)
        if sm is None or sm.tree is None:
            return 0
        return sm.leaf_class[sm.tree.leaf(values)]

    def classify_many(self, state: int, x: np.ndarray) -> np.ndarray:
        """:meth:`classify` of every row of ``x`` (PMs × the state's features)."""
        sm = self.states.get(state)
        if sm is None or sm.tree is None:
            return np.zeros(len(x), dtype=np.int64)
        leaves = sm.tree.leaves(np.asarray(x, dtype=np.float64))
        ids = np.unique(leaves)
        return np.array([sm.leaf_class[i] for i in ids.tolist()], dtype=np.int64)[
            np.searchsorted(ids, leaves)]

    def event_labels(self, typ: str, values: tuple[float, ...]
                     ) -> frozenset[tuple[int, int]] | None:
        """The (state, class) pairs an event could create, with :data:`KEEP` if it
        could complete a match or block one (a NEG type); None for a type the history
        did not show."""
        em = self.events.get(typ)
        if em is None:
            return None
        return em.leaf_labels.get(em.tree.leaf(values) if em.tree is not None else 0)

    def contributes(self, state: int, cls: int, s: int) -> bool:
        """:meth:`StateModel.contributes` of ``state`` (True for a state the history
        never reached: nothing is known of it, so it is not free to shed)."""
        sm = self.states.get(state)
        return True if sm is None else sm.contributes(cls, s)

    def values(self, state: int, cls: int, s: int) -> tuple[float, float]:
        """(Γ⁺, Γ⁻) of a PM of ``state`` and class ``cls`` in slice ``s``
        (:meth:`StateModel.values`; (0, 0) for a state the history never reached, which
        the knapsack then has no reason to shed)."""
        sm = self.states.get(state)
        return (0.0, 0.0) if sm is None else sm.values(cls, s)

    # ---------------------------------------------------------------- online adaptation
    def observe(self, state: int, cls: int, s: int, plus: float, minus: float) -> None:
        acc = self._obs.setdefault((state, cls, s), [0.0, 0.0, 0])
        acc[0] += plus
        acc[1] += minus

    def occupy(self, state: int, cls: int, s: int, n: int = 1) -> None:
        acc = self._obs.setdefault((state, cls, s), [0.0, 0.0, 0])
        acc[2] += n

    def blend(self) -> None:
        """End of a slice: blend the observed per-PM means into the model's means
        (``Γ_new = (1 − w)·Γ_old + w·Γ_observed``, w = 0.5)."""
        w = self.weight
        for (q, c, s), (plus, minus, n) in self._obs.items():
            sm = self.states.get(q)
            if sm is None or n <= 0:
                continue
            # observed credit is made *in* slice s; the model holds the future from s on
            last = s + 1 >= self.slices
            later_plus = 0.0 if last else sm.mean_plus[c, s + 1]
            later_minus = 0.0 if last else sm.mean_minus[c, s + 1]
            sm.mean_plus[c, s] = (1 - w) * sm.mean_plus[c, s] + w * (plus / n + later_plus)
            sm.mean_minus[c, s] = ((1 - w) * sm.mean_minus[c, s]
                                   + w * (minus / n + later_minus))
        self._obs = {}

    # ---------------------------------------------------------------- persistence
    def save(self, path: str) -> None:
        """Save with joblib (the query text travels with the model)."""
        import joblib

        joblib.dump({"format": "cep_core.shedding.CostModel/1", "model": self}, path)


def load_cost_model(path: str, query_text: str | None = None) -> CostModel:
    """A model saved by :meth:`CostModel.save`; with ``query_text`` (the query's
    ``explain()``), checks that the model was fitted for that query."""
    import joblib

    got = joblib.load(path)
    if not isinstance(got, dict) or got.get("format") != "cep_core.shedding.CostModel/1":
        raise ValueError(f"{path}: not a cep_core shedding cost model")
    model = got["model"]
    if query_text is not None and model.query_text != query_text:
        raise ValueError(f"{path}: the cost model was fitted for another query")
    return model


