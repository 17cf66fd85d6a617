"""The cost model of hybrid load shedding (dissertation §4.2.3, §4.3.1-4.3.2).

Contribution Γ⁺ (Eq. 4.3: complete matches that extend a partial match) and consumption
Γ⁻ (Eq. 4.4: the resource cost Ω of the partial matches derived from it) per *class* of
partial matches, per automaton state and per time slice.

**Offline estimation** (:func:`fit_cost_model`, §4.3.2). The query runs over a
historical stream with tracing on; every partial match (PM) records, per time slice, the
complete matches and the work (Ω: predicates evaluated, partial matches created and
extended, its own and its descendants') credited to it in that slice. A PM's slice is
its age ``now − t_first`` over ``τ/m``, clamped to ``[0, m−1]`` (§4.3.1). Per state:

* each PM's future value from slice ``s`` on is the sum over slices ``≥ s``;
* K-means (scikit-learn) clusters the PMs on their standardised per-slice values
  (Γ⁺_0..Γ⁺_{m−1}, Γ⁻_0..Γ⁻_{m−1}), the number of clusters chosen by the gap statistic
  (Tibshirani, Walther and Hastie 2001; the text's [181]) up to ``max_classes``;
* a decision tree (max depth = number of clusters) learns the cluster from the
  attributes the state's predicates read; its predictions are the classes, and a class's
  value per slice is the 90th percentile of its members' values.

For input-based shedding, one multi-output decision tree per event type maps the
event's predicate attributes to the classes of the partial matches such events created
or extended in the history; a leaf holds the union of its events' classes (what an
event of that leaf *could* create or extend).

**Online** (§4.3.2): classification walks the fitted trees in plain Python with a memo
per attribute tuple (the dissertation's lookup tables derived from the classifiers);
observed counts per (state, class, slice) are blended into the values at each slice
end, ``Γ_new = (1 − w)·Γ_old + w·Γ_observed`` with ``w = 0.5``
(:meth:`CostModel.blend`). Chosen here: the observed value of a cell is the credit it
received during the slice over the partial matches in it (those live at the slice's
start plus those created during it), the offline per-PM scale.

A fitted model pickles (joblib, :meth:`CostModel.save`/:func:`load_cost_model`) with
the query text it was fitted for and reloads to the same decisions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

KEEP = (-1, -1)  # the label of an event that completes or may block a match

__all__ = ["KEEP", "CostModel", "TreeLookup", "fit_cost_model", "load_cost_model",
           "gap_statistic_k", "features_of", "event_features", "local_tests", "test_values"]


def features_of(values: Iterable[Any]) -> tuple[float, ...]:
    """Numeric features of attribute values (numbers as floats, anything else by a
    stable code).

    >>> features_of([3, 2.5, True])
    (3.0, 2.5, 1.0)
    """
    out = []
    for v in values:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            out.append(float(sum(ord(ch) * 31 ** i for i, ch in enumerate(str(v))) % 1e9))
    return tuple(out)


def event_features(event: dict, attrs: Iterable[str]) -> tuple[float, ...]:
    """Features of an event: its ``attrs`` (a missing one as 0).

    >>> event_features({"type": "B", "ID": 3, "V": 7}, ["V", "ID"])
    (7.0, 3.0)
    """
    return features_of(event.get(a, 0.0) for a in attrs)


def local_tests(plan: Any) -> dict[str, list[Any]]:
    """Per event type, the predicates that read only the new event of that type: its
    attributes (``v.attr`` or ``v[i].attr``), parameters and lookups, no other variable,
    no ``LENGTH`` and no other index. Whether an event passes them is a feature of the
    input side (the ψ of Eq. 4.9: which value predicates an event can satisfy), e.g.
    ``a[i].accLoad > λ[a[i].houseID, a[i].time]`` of Listing 6.1."""
    from cep_core.expr import walk
    from cep_core.lang import ast

    types = {p.var: p.type for p in plan.positions}
    out: dict[str, list[Any]] = {}
    for pred in plan.preds:
        if len(pred.vars) != 1 or pred.node is None:
            continue
        (var,) = pred.vars
        nodes = list(walk(pred.node))
        if var not in types or any(isinstance(n, ast.Length | ast.Aggregate) for n in nodes):
            continue
        if all(n.var == var and (n.index is None or n.index.kind == "i" and
                                 n.index.offset == 0)
               for n in nodes if isinstance(n, ast.Attr)):
            out.setdefault(types[var], []).append(pred)
    return out


def test_values(tests: list[Any], var_multi: dict[str, bool], event: dict
                ) -> tuple[float, ...]:
    """Whether ``event`` passes each of ``tests`` (1.0 or 0.0; a failing lookup is 0)."""
    out = []
    for pred in tests:
        (var,) = pred.vars
        try:
            ok = pred.test({var: (event,) if var_multi[var] else event})
        except Exception:  # noqa: BLE001 (a missing key of a lookup: not passed)
            ok = False
        out.append(1.0 if ok else 0.0)
    return tuple(out)


def gap_statistic_k(x: np.ndarray, max_k: int, references: int = 5, seed: int = 0) -> int:
    """The number of clusters by the gap statistic: the smallest k with
    ``Gap(k) ≥ Gap(k+1) − s_{k+1}``, ``Gap(k) = E*[log W_k] − log W_k`` over
    ``references`` uniform samples in the data's bounding box (Tibshirani et al. 2001,
    Eq. 3 and step 3).

    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(0, .1, (50, 2)), rng.normal(5, .1, (50, 2))])
    >>> gap_statistic_k(x, max_k=5)
    2
    """
    from sklearn.cluster import KMeans

    n = len(x)
    max_k = max(1, min(max_k, n - 1 if n > 1 else 1, len(np.unique(x, axis=0))))
    rng = np.random.default_rng(seed)
    lo, hi = x.min(axis=0), x.max(axis=0)

    def log_w(data: np.ndarray, k: int) -> float:
        km = KMeans(n_clusters=k, n_init=3, random_state=seed).fit(data)
        return float(np.log(max(km.inertia_, 1e-12)))

    gaps, sks = [], []
    for k in range(1, max_k + 1):
        ref = np.array([log_w(rng.uniform(lo, hi, size=x.shape), k)
                        for _ in range(references)])
        gaps.append(ref.mean() - log_w(x, k))
        sks.append(ref.std() * np.sqrt(1 + 1 / references))
    for k in range(1, len(gaps)):
        if gaps[k - 1] >= gaps[k] - sks[k]:
            return k
    return len(gaps)


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

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._memo = {}

    def leaves(self, x: np.ndarray) -> np.ndarray:
        """The leaf of every row of ``x`` (rows × features), walked level by level."""
        left, right = np.asarray(self.left), np.asarray(self.right)
        feature, threshold = np.asarray(self.feature), np.asarray(self.threshold)
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


# ------------------------------------------------------------------------ fitting
def _per_slice_future(credit: np.ndarray, born: np.ndarray, m: int) -> np.ndarray:
    """(PMs, m) future value from each slice on: suffix sums of the per-slice credit;
    slices before a PM's birth slice get its whole future."""
    future = np.cumsum(credit[:, ::-1], axis=1)[:, ::-1]
    at_birth = future[np.arange(len(future)), born]
    before = np.arange(m)[None, :] < born[:, None]
    return np.where(before, at_birth[:, None], future)


def _cluster_leaves(estimate: np.ndarray, weight: np.ndarray, m: int, k: int,
                    seed: int) -> np.ndarray:
    """A class per tree leaf from its estimated per-slice values (``estimate``: leaves ×
    2m, contribution first): the leaves whose PMs never contributed to a match form one
    class of their own, so that a class of zero contribution holds no PM that did
    (K-means would merge a small leaf of rare matches into it: the consumption
    dimensions dominate the distances); K-means (weighted by leaf size) splits the rest
    into ``k − 1`` classes (``k`` if every leaf contributed). Classes are numbered 0..n−1
    in order of first use."""
    from sklearn.cluster import KMeans

    zero = estimate[:, :m].max(axis=1) <= 0
    out = np.zeros(len(estimate), dtype=int)
    rest = np.flatnonzero(~zero)
    n = min(k - int(zero.any()), len(np.unique(estimate[rest], axis=0)))
    if n > 1:
        out[rest] = 1 + KMeans(n_clusters=n, n_init=3, random_state=seed).fit_predict(
            estimate[rest], sample_weight=weight[rest])
    elif len(rest):
        out[rest] = 1
    return np.unique(out, return_inverse=True)[1]


def _fit_state(x: np.ndarray, plus: np.ndarray, minus: np.ndarray, born: np.ndarray,
               completions: float, attrs: list, m: int, max_classes: int,
               seed: int, classes: int | None) -> tuple[StateModel, np.ndarray]:
    """Classes of one state's PMs. Realised contributions are small counts, so a
    decision tree over the features (a regression tree of depth ``max_classes``)
    estimates each PM's expected per-slice values; its leaves hold at least 1 % of the
    PMs (and 20), so that a leaf that never contributed did not just miss its few
    chances. K-means clusters the leaves' estimates (k by the gap statistic unless
    ``classes`` fixes it; leaves of zero contribution apart, :func:`_cluster_leaves`),
    and each leaf takes its estimate's cluster as class: the tree is the classifier,
    and its path predicates are the class predicates. A class's value per slice is the
    90th percentile of its members' realised values."""
    from sklearn.tree import DecisionTreeRegressor

    fp, fm = _per_slice_future(plus, born, m), _per_slice_future(minus, born, m)
    y = np.hstack([fp, fm])
    scale = y.std(axis=0)
    ys = y / np.where(scale > 0, scale, 1.0)
    labels = np.zeros(len(x), dtype=int)
    tree = None
    leaf_class: dict[int, int] = {0: 0}
    if x.shape[1] and len(x) > 2:
        reg = DecisionTreeRegressor(max_depth=max_classes,
                                    min_samples_leaf=max(20, len(x) // 100),
                                    random_state=seed).fit(x, ys)
        leaves = reg.apply(x)
        ids, at = np.unique(leaves, return_inverse=True)
        estimate = reg.tree_.value[ids][:, :, 0]  # (leaves, 2m)
        distinct = np.unique(estimate, axis=0)
        if classes is not None:
            k = max(1, min(classes, len(distinct)))
        elif len(distinct) > 1:
            rng = np.random.default_rng(seed)
            sample = estimate[at] if len(at) <= 2000 else \
                estimate[at[rng.choice(len(at), 2000, replace=False)]]
            k = gap_statistic_k(sample, max_classes, seed=seed)
        else:
            k = 1
        if k > 1:
            of_leaf = _cluster_leaves(estimate, np.bincount(at, minlength=len(ids)), m, k,
                                      seed)
            tree = TreeLookup(reg)
            leaf_class = dict(zip(ids.tolist(), of_leaf.tolist(), strict=True))
            labels = of_leaf[at]
    n_cls = int(labels.max()) + 1 if len(labels) else 1
    p, mi, mean_p, mean_mi = (np.zeros((n_cls, m)) for _ in range(4))
    for c in range(n_cls):
        members = labels == c
        if members.any():
            p[c] = np.percentile(fp[members], 90, axis=0)
            mi[c] = np.percentile(fm[members], 90, axis=0)
            mean_p[c], mean_mi[c] = fp[members].mean(axis=0), fm[members].mean(axis=0)
    at_birth = mean_p.copy()
    whole = fp[np.arange(len(fp)), born]
    for (c, s), value in _group_mean(labels, born, whole).items():
        at_birth[c, s] = value
    rate = completions / len(x) if len(x) else 0.0
    return StateModel(attrs, tree, leaf_class, p, mi, rate, mean_p, mean_mi,
                      at_birth), labels


def _group_mean(a: np.ndarray, b: np.ndarray, values: np.ndarray) -> dict:
    """The mean of ``values`` per pair (a, b) that occurs."""
    pairs, at = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)
    at = at.ravel()
    means = np.bincount(at, values) / np.bincount(at)
    return {(int(x), int(y)): float(v) for (x, y), v in zip(pairs, means, strict=True)}


def fit_cost_model(query: Any, history: Any, policy: str = "skip-till-any-match",
                   slices: int = 4, max_classes: int = 10, consumption: str = "work",
                   seed: int = 0, classes: int | None = None,
                   runs: str = "every-event", max_missing: int | None = None) -> CostModel:
    """Fit the cost model of a compiled pattern query over a historical stream
    (``history``: event dicts or a DataFrame). ``classes`` fixes the number of clusters
    per state instead of the gap statistic (the dissertation's 10 for Q1, 4 for Q3).
    ``consumption``: ``"work"`` (Ω = cost units) or ``"count"`` (Ω = 1 per partial
    match; the ablation without explicit resource cost of §4.4.3.3). ``policy`` and
    ``runs``: the session options the query will run with; ``max_missing``: approximate
    matching, as the session will run (:class:`~cep_core.shedding.engine.SheddingEngine`)."""
    from sklearn.tree import DecisionTreeClassifier

    from cep_core.events import as_events
    from cep_core.shedding.engine import TracingEngine

    if consumption not in ("work", "count"):
        raise ValueError(f"consumption must be 'work' or 'count', not {consumption!r}")
    if slices < 1:
        raise ValueError("slices must be ≥ 1")
    plan = query.plan
    if plan is None:
        raise ValueError("load shedding applies to pattern queries")
    engine = TracingEngine(plan, policy, slices, consumption, runs, max_missing)
    events = as_events(history)
    out: list = []
    for e in events:
        engine.process(e, out)
    m = slices
    states: dict[int, StateModel] = {}
    label_of: dict[int, int] = {}
    by_state: dict[int, list] = {}
    for pm in engine.traced:
        by_state.setdefault(pm.state, []).append(pm)
    for q, pms in sorted(by_state.items()):
        attrs = [name for name, _ in engine.state_features[q]]
        x = np.array([pm.features for pm in pms], dtype=float).reshape(len(pms), len(attrs))
        credit = np.array([pm.credit for pm in pms], dtype=float)
        born = np.array([pm.born for pm in pms], dtype=int)
        done = float(credit[:, :m].sum())
        sm, labels = _fit_state(x, credit[:, :m], credit[:, m:], born, done, attrs, m,
                                max_classes, seed, classes)
        states[q] = sm
        for pm, c in zip(pms, labels.tolist(), strict=True):
            label_of[id(pm)] = c
    # input side: per event type, the classes its events created, and KEEP for an
    # event that completed a match or is of a negated type (never shed by the filter)
    event_models: dict[str, EventModel] = {}
    per_type: dict[str, list] = {}
    for typ, feats, created, kept in engine.touched:
        labels = {(pm.state, label_of[id(pm)]) for pm in created}
        per_type.setdefault(typ, []).append((feats, frozenset(labels | ({KEEP} if kept
                                                                      else set()))))
    tests = local_tests(plan)
    for typ, rows in per_type.items():
        attrs = engine.event_attrs.get(typ, [])
        indices = [p.index for p in tests.get(typ, [])]
        universe = sorted({lab for _, labs in rows for lab in labs})
        if not attrs and not indices or len({labs for _, labs in rows}) == 1:
            event_models[typ] = EventModel(attrs, None, {0: frozenset(universe)})
            continue
        x = np.array([f for f, _ in rows], dtype=float).reshape(len(rows),
                                                                len(attrs) + len(indices))
        ybin = np.array([[lab in labs for lab in universe] for _, labs in rows], dtype=int)
        depth = max(2, min(10, len(universe)))
        clf = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(x, ybin)
        leaves = clf.apply(x)
        leaf_labels: dict[int, set] = {}
        for lf, (_, labs) in zip(leaves.tolist(), rows, strict=True):
            leaf_labels.setdefault(lf, set()).update(labs)
        event_models[typ] = EventModel(attrs, TreeLookup(clf),
                                       {k: frozenset(v) for k, v in leaf_labels.items()},
                                       indices)
    n = max(1, len(events))
    counts: dict[str, int] = {}
    for e in events:
        counts[e["type"]] = counts.get(e["type"], 0) + 1
    in_matches = engine.type_in_matches
    selectivity = {t: in_matches.get(t, 0) / c for t, c in counts.items()}
    share = {t: c / n for t, c in counts.items()}
    created = {q: len(pms) / max(1, len(engine.traced)) for q, pms in by_state.items()}
    return CostModel(query.explain(), plan.window, m, states, event_models, selectivity,
                     share, created, consumption)

