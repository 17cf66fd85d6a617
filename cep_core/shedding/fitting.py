"""Fitting hybrid load shedding's cost model offline (dissertation §4.3.2).

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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cep_core.shedding.cost_model import CostModel, EventModel, StateModel, TreeLookup
from cep_core.shedding.engine import TracingEngine
from cep_core.shedding.features import KEEP, local_tests

__all__ = ["fit_cost_model", "gap_statistic_k"]


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

