"""Shedding strategies behind one interface (dissertation §4.2.5 and the baselines of
§4.4.1), and their configuration.

A strategy is bound to a :class:`cep_core.shedding.engine.SheddingEngine` and answers:

* ``filter_inputs(cap)`` — overloaded with violation ``cap = (ℓ − θ)/ℓ``: set the input
  filter; ``drop(event)`` applies it; ``stop()`` when ℓ ≤ θ again (the input filter is
  on only while the bound is violated, §4.2.5);
* ``shed_state(cap)`` — drop partial matches (at most once per time slice: the delay j
  of §4.2.5 is one slice);
* ``keep_ratio(r)`` and ``shed_new(pm)`` — the fixed-ratio experiments (§4.4.3.1): a
  share ``r`` of the events (input strategies, ``drop``) or of the partial matches as
  they are created (state strategies: ``shed_new``; ours do not create them, early
  curbing, the baselines create and drop them).

Ours, from one cost model (:mod:`cep_core.shedding.cost_model`):

* **HyS**: the shedding set 𝔻 of Eq. 4.8 over the live (state, class, slice) cells
  (:func:`cep_core.shedding.knapsack.choose_shed_set`, the set reused for a similar
  violation while the model is unchanged); its PMs are dropped and, until the next slice,
  not created (early curbing);
* **HyI**: 𝔻 chosen the same way defines the input filter (Eq. 4.9): an event is dropped
  only if every (state, class) its kind of event could create (the event tree of the
  cost model) is wholly in 𝔻 — in 𝔻 for every slice where it has live PMs — and it can
  neither complete nor block a match; an event that can create nothing is dropped too;
* **Hybrid**: both from the same 𝔻.

Baselines: **RI** drops each event with probability ``cap`` (or ``r``); **SI** drops
events by type, lowest selectivity first (complete matches per event of the type in the
history), so that the dropped share of events is ``cap``; **RS** drops each live PM
with probability ``cap``; **SS** drops live PMs of the states with the lowest completion
rate first (type level: the state says which event types a PM holds) until a share
``cap`` of them is gone. **NS** sheds nothing (the unshed run on the same device).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cep_core.errors import QueryError
from cep_core.shedding.clock import STATISTICS
from cep_core.shedding.features import KEEP, event_features, test_values
from cep_core.shedding.knapsack import ShedSetCache, choose_shed_set

__all__ = ["SheddingConfig", "STRATEGIES", "MODEL_STRATEGIES"]

STRATEGIES = ("NS", "RI", "SI", "RS", "SS", "HyI", "HyS", "Hybrid")
MODEL_STRATEGIES = ("SI", "SS", "HyI", "HyS", "Hybrid")  # need a cost model (history)


@dataclass(frozen=True)
class SheddingConfig:
    """Load shedding of one query session.

    ``strategy``: one of :data:`STRATEGIES` (``"NS"``: none, the same device without
    shedding, needs neither bound nor ratio); ``unit_cost``: the modelled device's cost
    per unit of work [stream time units]; ``bound``: the latency bound θ [stream time
    units] on the ``statistic`` (``"avg"`` or ``"p95"``) over the latencies of the most
    recent ``window`` events that could complete a match (:mod:`cep_core.shedding.clock`);
    or ``ratio``: a fixed share to shed instead of a bound. ``model``: the fitted
    :class:`~cep_core.shedding.cost_model.CostModel` (the strategies in
    :data:`MODEL_STRATEGIES` need it). ``indexing`` and ``curbing``: the
    §4.3.4 techniques (for the ablations); ``adapt``: online blending of the model;
    ``min_samples``: latencies ℓ needs before it is judged (by default a whole window:
    fewer let a short burst after a shedding trigger a large second one)."""

    strategy: str
    unit_cost: float
    bound: float | None = None
    statistic: str = "avg"
    window: int = 64
    ratio: float | None = None
    model: Any = None
    indexing: bool = True
    curbing: bool = True
    adapt: bool = True
    seed: int = 0
    slices: int = 4
    min_samples: int = 64
    exact_limit: int = 64
    cache_step: float = 0.05

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> QueryError:
            return QueryError(f"shedding.{name}: {why}")

        if self.strategy not in STRATEGIES:
            raise bad("strategy", f"unknown {self.strategy!r}; one of {', '.join(STRATEGIES)}")
        if not (isinstance(self.unit_cost, int | float) and self.unit_cost > 0):
            raise bad("unit_cost", f"must be a positive number, not {self.unit_cost!r}")
        if self.strategy == "NS":
            if self.bound is not None or self.ratio is not None:
                raise bad("bound", "NS sheds nothing: give neither bound nor ratio")
        elif (self.bound is None) == (self.ratio is None):
            raise bad("bound", "give exactly one of bound (a latency) and ratio (a share)")
        if self.bound is not None and not self.bound > 0:
            raise bad("bound", f"must be a positive latency, not {self.bound!r}")
        if self.ratio is not None and not 0 <= self.ratio <= 1:
            raise bad("ratio", f"must be a share in [0, 1], not {self.ratio!r}")
        if self.statistic not in STATISTICS:
            raise bad("statistic", f"one of {', '.join(STATISTICS)}, not {self.statistic!r}")
        if not (isinstance(self.window, int) and self.window >= 1):
            raise bad("window", f"must be a positive number of events, not {self.window!r}")
        if self.strategy in MODEL_STRATEGIES and self.model is None:
            raise bad("model", f"{self.strategy} needs a cost model fitted on a historical "
                      "stream (cep_core.shedding.fit_cost_model)")

    def make_strategy(self, engine: Any) -> Strategy:
        return _CLASSES[self.strategy](engine, self)


class Strategy:
    """Base: nothing shed (module doc)."""

    input_level = False
    state_level = False
    curbs = False  # early curbing (§4.3.4) is part of the model-based strategies

    def __init__(self, engine: Any, config: SheddingConfig):
        self.engine, self.config = engine, config
        self.rng = np.random.default_rng(config.seed)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "engine"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.engine = None  # bound by the engine that takes it

    def filter_inputs(self, cap: float) -> None:
        pass

    def shed_state(self, cap: float) -> None:
        pass

    def stop(self) -> None:
        pass

    def drop(self, e: dict) -> bool:
        return False

    def keep_ratio(self, ratio: float) -> None:
        pass

    def shed_new(self, pm: Any) -> bool:
        """Fixed ratio, state strategies: whether the PM being created is shed."""
        return False

    def _scan_cost(self, cells: int) -> int:
        eng = self.engine
        return cells if self.config.indexing else sum(len(p) for p in eng.live.values())

    def _drop_in_order(self, groups: Iterable[list], k: int) -> None:
        """Drop ``k`` live PMs, taking ``groups`` (lists of PMs) whole in order and a
        random part of the group where ``k`` is reached."""
        ids: set[int] = set()
        for group in groups:
            need = k - len(ids)
            if need <= 0:
                break
            if len(group) <= need:
                ids.update(id(pm) for pm in group)
            else:
                pick = self.rng.choice(len(group), size=need, replace=False).tolist()
                ids.update(id(group[i]) for i in pick)
        self.engine.drop_pms(lambda pm: id(pm) in ids)


class _Ranks:
    """The rank of a utility among the most recent ``size`` ones, as a share with ties
    broken at random: shedding the items whose share is below ``r`` sheds a share ``r``
    of the least useful (the fixed-ratio experiments of §4.4.3.1)."""

    def __init__(self, rng: np.random.Generator, size: int = 1000):
        self.rng, self.size = rng, size
        self._sorted: list[float] = []
        self._recent: deque[float] = deque()

    def below(self, u: float, share: float) -> bool:
        ranks = self._sorted
        lo, hi = bisect.bisect_left(ranks, u), bisect.bisect_right(ranks, u)
        n = len(ranks)
        bisect.insort(ranks, u)
        self._recent.append(u)
        if len(self._recent) > self.size:
            del ranks[bisect.bisect_left(ranks, self._recent.popleft())]
        if not n or u == math.inf:
            return False
        return (lo + self.rng.random() * (hi - lo)) / n < share


# ------------------------------------------------------------------ baselines
class RandomInput(Strategy):
    input_level = True

    def __init__(self, engine, config):
        super().__init__(engine, config)
        self.p = 0.0

    def filter_inputs(self, cap: float) -> None:
        self.p = cap

    def stop(self) -> None:
        self.p = 0.0

    def keep_ratio(self, ratio: float) -> None:
        self.p = ratio

    def drop(self, e: dict) -> bool:
        return self.p > 0 and self.rng.random() < self.p


class SelectivityInput(RandomInput):
    def __init__(self, engine, config):
        super().__init__(engine, config)
        self.p_type: dict[str, float] = {}
        model = engine.model
        self.order = sorted(model.type_share, key=lambda t: (model.type_selectivity.get(t, 0),
                                                             -model.type_share[t], t))

    def filter_inputs(self, cap: float) -> None:
        self.p_type = _allocate(self.order, self.engine.model.type_share, cap)

    def stop(self) -> None:
        self.p_type = {}

    def keep_ratio(self, ratio: float) -> None:
        if not self.p_type:
            self.filter_inputs(ratio)

    def drop(self, e: dict) -> bool:
        p = self.p_type.get(e["type"], 0.0)
        return p > 0 and (p >= 1.0 or self.rng.random() < p)


class RandomState(Strategy):
    state_level = True

    def shed_state(self, cap: float) -> None:
        eng = self.engine
        n = sum(len(p) for p in eng.live.values())
        if not n:
            return
        doomed = self.rng.random(n) < cap
        it = iter(doomed.tolist())
        eng.drop_pms(lambda pm: next(it))
        eng.charge(n)

    def shed_new(self, pm: Any) -> bool:
        return self.rng.random() < self.config.ratio


class SelectivityState(RandomState):
    def __init__(self, engine, config):
        super().__init__(engine, config)
        states = engine.model.states
        self.order = sorted(states, key=lambda q: (states[q].completion_rate, q))
        self.p_state: dict[int, float] | None = None

    def shed_state(self, cap: float) -> None:
        eng = self.engine
        pms = eng.live_pms()
        if not pms:
            return
        by_state: dict[int, list] = {}
        for pm in pms:
            by_state.setdefault(pm.state, []).append(pm)
        self._drop_in_order((by_state[q] for q in self.order if q in by_state),
                            int(math.ceil(cap * len(pms))))
        eng.charge(len(pms))

    def shed_new(self, pm: Any) -> bool:
        if self.p_state is None:  # the lowest completion rates first, up to the ratio
            self.p_state = _allocate(self.order, self.engine.model.state_share,
                                     self.config.ratio)
        p = self.p_state.get(pm.state, 0.0)
        return p > 0 and (p >= 1.0 or self.rng.random() < p)


def _allocate(order: list, share: dict, target: float) -> dict:
    """Shedding probabilities by kind (event type or state), taking the kinds in
    ``order`` whole until ``target`` of all items (``share``: each kind's share) is
    reached, the last one in part."""
    p, acc = {}, 0.0
    for k in order:
        if acc >= target:
            break
        p[k] = min(1.0, (target - acc) / share[k]) if share.get(k, 0) > 0 else 0.0
        acc += share.get(k, 0) * p[k]
    return p


# ------------------------------------------------------------------ ours
class _ModelBased(Strategy):
    """Shedding sets from the cost model (Eq. 4.8)."""

    curbs = True

    def __init__(self, engine, config):
        super().__init__(engine, config)
        self.cache = ShedSetCache(config.cache_step)
        self._cache_epoch = None
        self.filtered: frozenset | None = None  # None: the input filter is off
        self.shed_set: frozenset = frozenset()

    def _live_cells(self) -> dict[tuple[int, int, int], int]:
        eng = self.engine
        cells: dict[tuple[int, int, int], int] = {}
        for pm in eng.live_pms():
            c = eng.cell_of(pm)
            cells[c] = cells.get(c, 0) + 1
        return cells

    def choose(self, cap: float) -> tuple[frozenset, dict]:
        """𝔻 for violation ``cap`` over the live cells (cached per violation bucket and
        model epoch)."""
        eng, model = self.engine, self.engine.model
        cells = self._live_cells()
        epoch = eng.next_blend
        if epoch != self._cache_epoch:
            self.cache.clear()
            self._cache_epoch = epoch
        got = self.cache.get(cap)
        if got is not None:
            eng.charge(len(cells) if self.config.indexing else sum(cells.values()))
            return got, cells
        items = list(cells)
        plus, minus = [], []
        for c in items:
            gp, gm = model.values(*c)
            plus.append(cells[c] * gp)
            minus.append(cells[c] * gm)
        free = [not model.contributes(*c) for c in items]
        chosen = choose_shed_set(plus, minus, cap, self.config.exact_limit, free=free)
        shed = frozenset(items[i] for i in chosen)
        self.cache.put(cap, shed)
        eng.charge(self._scan_cost(len(items)))
        return shed, cells

    def _filter_from(self, shed: frozenset, cells: dict) -> frozenset:
        """(state, class) pairs whose live cells are all in 𝔻."""
        labels: dict[tuple[int, int], bool] = {}
        for c in cells:
            key = (c[0], c[1])
            labels[key] = labels.get(key, True) and c in shed
        return frozenset(k for k, whole in labels.items() if whole)

    def _labels(self, e: dict) -> frozenset | None:
        """What ``e`` could create (:meth:`CostModel.event_labels`): the empty set for a
        type the pattern does not read, None for one the history did not show."""
        eng, model = self.engine, self.engine.model
        typ = e["type"]
        if typ not in eng.plan.types and typ not in eng.plan.neg_types:
            return frozenset()
        em = model.events.get(typ)
        if em is None:
            return None
        if em.tree is not None:
            eng.charge(1)  # the event tree's lookup
        tests = [eng.plan.preds[i] for i in em.tests]
        multi = {p.var: p.multi for p in eng.plan.positions}
        return model.event_labels(typ, event_features(e, em.attrs)
                                  + test_values(tests, multi, e))

    def _event_dropped(self, e: dict) -> bool:
        """Eq. 4.9: while the filter is on, drop ``e`` when every PM it could create is
        of a (state, class) wholly in 𝔻 and it could neither complete nor block a match
        (an event that can create nothing at all is dropped too)."""
        if self.filtered is None:
            return False
        labels = self._labels(e)
        return labels is not None and labels <= self.filtered

    def _shed_cells(self, shed: frozenset) -> None:
        eng = self.engine
        if not shed:
            return
        eng.drop_pms(lambda pm: eng.cell_of(pm) in shed)
        eng.charge(len(shed) if self.config.indexing
                   else sum(len(p) for p in eng.live.values()))
        if self.curbs and self.config.curbing:
            eng.curb(shed)


class HybridInput(_ModelBased):
    input_level = True

    def __init__(self, engine, config):
        super().__init__(engine, config)
        self._key: tuple | None = None
        self._ranks = _Ranks(self.rng)

    def filter_inputs(self, cap: float) -> None:
        key = (self.cache.bucket(cap), self.engine.next_blend)
        if key != self._key:  # a new violation bucket or a new model epoch
            self._key = key
            shed, cells = self.choose(cap)
            self.filtered = self._filter_from(shed, cells)

    def stop(self) -> None:
        self.filtered = None
        self._key = None

    def drop(self, e: dict) -> bool:
        if self.config.ratio is not None:
            return self._drop_by_rank(e, self.config.ratio)
        return self._event_dropped(e)

    def _drop_by_rank(self, e: dict, ratio: float) -> bool:
        """Fixed ratio: drop the events whose classes promise the least contribution, a
        share ``ratio`` of the recent 1,000 events."""
        model = self.engine.model
        labels = self._labels(e)
        if labels is None or KEEP in labels:
            u = math.inf
        else:
            u = max((model.states[q].expected(c, 0)[0] for q, c in labels), default=-1.0)
        return self._ranks.below(u, ratio)


class HybridState(_ModelBased):
    state_level = True
    _ranks: _Ranks | None = None

    def shed_state(self, cap: float) -> None:
        shed, _ = self.choose(cap)
        self.shed_set = shed
        self._shed_cells(shed)

    def shed_new(self, pm: Any) -> bool:
        """Fixed ratio: shed the new PMs that promise the least contribution (the mean
        of their class's members created in the same slice: 90th percentiles tie among
        small counts), a share ``ratio`` of the recent 1,000."""
        if self._ranks is None:
            self._ranks = _Ranks(self.rng)
        u = self.engine.model.states[pm.state].born(pm.cls, pm.born)
        return self._ranks.below(u, self.config.ratio)


class Hybrid(HybridState):
    input_level = True

    def filter_inputs(self, cap: float) -> None:
        if not self.shed_set:
            shed, cells = self.choose(cap)
        else:
            shed, cells = self.shed_set, self._live_cells()
        self.filtered = self._filter_from(shed, cells)

    def shed_state(self, cap: float) -> None:
        super().shed_state(cap)
        self.filtered = self._filter_from(self.shed_set, self._live_cells() | {
            c: 1 for c in self.shed_set})

    def stop(self) -> None:
        self.filtered = None
        self.shed_set = frozenset()

    def drop(self, e: dict) -> bool:
        return self._event_dropped(e)


_CLASSES: dict[str, type[Strategy]] = {
    "NS": Strategy, "RI": RandomInput, "SI": SelectivityInput, "RS": RandomState,
    "SS": SelectivityState, "HyI": HybridInput, "HyS": HybridState, "Hybrid": Hybrid,
}
