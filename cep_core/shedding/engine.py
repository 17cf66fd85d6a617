"""The reference engine with load shedding on a modelled device (dissertation §4.2-4.3).

:class:`TracingEngine` runs a query over a historical stream and credits every partial
match (PM) with the complete matches and the work of it and its descendants, per time
slice (the retrospective Γ⁺ and Γ⁻ of Eq. 4.3 and 4.4) — the input of the offline cost
model (:mod:`cep_core.shedding.cost_model`).

:class:`SheddingEngine` runs a query on the modelled device clock
(:mod:`cep_core.shedding.clock`) with a strategy (:mod:`cep_core.shedding.strategies`):
before each event it compares the latency statistic ℓ with the bound θ (or, with a fixed
ratio, the share shed so far with the target) and lets the strategy shed; an event the
input filter drops costs nothing and changes nothing (Eq. 4.2); a PM the state filter
drops is gone with all it would have derived. Each new PM is classified when it is
created (one cost unit on the device, the classifier's lookup); while a state-shedding
set is in force, PMs of its classes are not created at all (early curbing, §4.3.4).
With ``indexing`` the live PMs are addressed by class, so choosing and dropping a
shedding set costs one unit per class cell; without, one unit per live PM scanned.

Everything is deterministic: random strategies draw from a seeded generator in stream
order, and the device clock is modelled, not measured.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from cep_core.engine.reference import PM, ReferenceEngine
from cep_core.shedding.clock import DeviceClock, LatencyWindow, work_units
from cep_core.shedding.cost_model import event_features, features_of

__all__ = ["TracedPM", "TracingEngine", "SheddingEngine"]


def pm_attributes(plan) -> dict[int, list[tuple[str, str]]]:
    """Per automaton state, the (variable, attribute) pairs of its bound variables that
    any predicate reads: the features of its partial matches' classes (§4.3.2: "the
    attributes of partial matches that appear in the query predicates"). Bound variables
    are those of the positions up to the state in pattern order."""
    read = [(v, a) for p in plan.preds for v, a in p.attrs]
    out = {}
    for q in range(len(plan.positions)):
        bound = {p.var for p in plan.positions[:q + 1]}
        out[q] = list(dict.fromkeys((v, a) for v, a in read if v in bound))
    return out


class TracedPM(PM):
    """A PM with its parent, class, birth slice, features and per-slice credit
    (``credit[:m]`` complete matches, ``credit[m:]`` work)."""

    __slots__ = ("parent", "cls", "born", "features", "credit")

    def __getstate__(self):
        return (super().__getstate__(), self.parent, self.cls, self.born, self.features,
                self.credit)

    def __setstate__(self, s):
        super().__setstate__(s[0])
        self.parent, self.cls, self.born, self.features, self.credit = s[1:]


class _Tracking(ReferenceEngine):
    """PM creation with classification and credit to PMs and their ancestors."""

    def __init__(self, plan, policy: str, slices: int, consumption: str, output="events",
                 runs: str = "every-event", model: Any = None):
        super().__init__(plan, policy, output, runs=runs)
        self._new_pm = self._make_pm
        self.m = slices
        self.slice_len = plan.window / slices if plan.window != math.inf else math.inf
        self.count_only = consumption == "count"
        self.model = model
        self.state_attrs = pm_attributes(plan)
        self._overhead = 0

    def slice_of(self, age: float) -> int:
        if self.slice_len == math.inf:
            return 0
        s = int(age / self.slice_len)
        return 0 if s < 0 else (self.m - 1 if s >= self.m else s)

    def pm_features(self, state: int, bind: dict) -> tuple[float, ...]:
        vals = []
        for v, a in self.state_attrs[state]:
            ev = bind.get(v)
            if isinstance(ev, tuple):
                ev = ev[-1] if ev else None
            vals.append(ev.get(a) if ev is not None else 0.0)
        return features_of(vals)

    def _make_pm(self, state: int, bind: dict, first_t: Any, parent: PM | None
                 ) -> TracedPM | None:
        pm = TracedPM(state, bind, first_t)
        pm.parent, pm.features = parent, self.pm_features(state, bind)
        pm.born = self.slice_of(self.now - first_t)
        pm.cls = self.model.classify(state, pm.features) if self.model is not None else 0
        return self._admit(pm)

    def _admit(self, pm: TracedPM) -> TracedPM | None:
        return pm

    def _work(self) -> int:
        c = self.counters
        return c.pm_created + c.pm_extended + (0 if self.count_only else c.predicates)

    def _advance_one(self, pm, e, out, keep, born) -> None:
        w0, o0 = self._work(), self.counters.outputs
        super()._advance_one(pm, e, out, keep, born)
        work, done = self._work() - w0, self.counters.outputs - o0
        if work or done:
            self._credit(pm, work, done)

    def _credit(self, pm: TracedPM, work: int, done: int) -> None:
        raise NotImplementedError


class TracingEngine(_Tracking):
    """Offline: every PM with its per-slice credit, and per event the PMs it created or
    extended (module doc)."""

    def __init__(self, plan, policy: str, slices: int = 4, consumption: str = "work"):
        super().__init__(plan, policy, slices, consumption)
        self.traced: list[TracedPM] = []
        self.touched: list[tuple[str, tuple, list]] = []
        self.type_in_matches: dict[str, int] = {}
        var_type = {p.var: p.type for p in plan.positions}
        attrs: dict[str, dict[str, None]] = {}
        for p in plan.preds:
            for v, a in p.attrs:
                if v in var_type:
                    attrs.setdefault(var_type[v], {})[a] = None
        self.event_attrs = {t: list(a) for t, a in attrs.items()}
        self._touch: list = []

    def process(self, e: dict, out: list) -> None:
        self._touch = []
        super().process(e, out)
        typ = e["type"]
        if typ in self.plan.types and self._touch:
            feats = event_features(e, self.event_attrs.get(typ, ()))
            self.touched.append((typ, feats, self._touch))

    def _admit(self, pm: TracedPM) -> TracedPM:
        pm.credit = [0] * (2 * self.m)
        self.traced.append(pm)
        self._touch.append(pm)
        return pm

    def _credit(self, pm: TracedPM, work: int, done: int) -> None:
        s = self.slice_of(self.now - pm.first_t)
        m = self.m
        self._touch.append(pm)
        p = pm
        while p is not None:
            p.credit[s] += done
            p.credit[m + s] += work
            p = p.parent

    def _emit(self, bind: dict, rec: dict, out: list) -> None:
        n0 = self.counters.outputs
        super()._emit(bind, rec, out)
        if self.counters.outputs > n0:
            for ev in bind.values():
                for x in (ev if isinstance(ev, tuple) else (ev,)):
                    self.type_in_matches[x["type"]] = self.type_in_matches.get(x["type"], 0) + 1


class SheddingEngine(_Tracking):
    """The reference engine on a modelled device with a shedding strategy (module doc).
    ``config``: a :class:`cep_core.shedding.SheddingConfig`."""

    name = "reference"

    def __init__(self, plan, policy: str, output: str, runs: str, config: Any):
        model = config.model
        if model is not None and config.adapt:
            model = copy.deepcopy(model)  # online adaptation changes this session's copy
        super().__init__(plan, policy, model.slices if model else config.slices,
                         model.consumption if model else "work", output, runs, model)
        self.config = config
        self.clock = DeviceClock(config.unit_cost)
        self.monitor = LatencyWindow(config.statistic, config.window)
        self.strategy = config.make_strategy(self)
        self.match_latencies: list[float] = []
        self.event_latencies_sum = 0.0
        self.events_seen = 0
        self.events_shed = 0
        self.pms_shed = 0
        self.pms_curbed = 0
        self.curbing: frozenset = frozenset()
        self.overloaded = False
        self.shedding_triggered = 0
        self._cool_until = -math.inf
        self._next_blend: float | None = None

    # ------------------------------------------------------------------ per event
    def process(self, e: dict, out: list) -> None:
        t = e["time"]
        start = self.clock.start(t)
        self.events_seen += 1
        self._overhead = 0
        self.now = t  # (timestamps do not decrease; the strategies read it first)
        if self.model is not None and self.config.adapt:
            self._adapt(t)
        self._control(t)
        if self.strategy.drop(e):
            self.events_shed += 1
            self.stats.filtered += 1
            if self._overhead:
                self.clock.serve(start, self._overhead)
            return
        u0, n0 = work_units(self.counters), len(out)
        super().process(e, out)
        finish = self.clock.serve(start, work_units(self.counters) - u0 + self._overhead)
        latency = finish - t
        self.monitor.add(latency)
        self.event_latencies_sum += latency
        if len(out) > n0:
            self.match_latencies.extend([latency] * (len(out) - n0))

    def _control(self, t: float) -> None:
        cfg, strategy = self.config, self.strategy
        if cfg.ratio is not None:
            strategy.keep_ratio(cfg.ratio)
            return
        latency = self.monitor.value()
        if latency > cfg.bound and len(self.monitor) >= cfg.min_samples:
            cap = (latency - cfg.bound) / latency
            if not self.overloaded:
                self.shedding_triggered += 1
            self.overloaded = True
            if strategy.input_level:
                strategy.filter_inputs(cap)
            if strategy.state_level and t >= self._cool_until:
                strategy.shed_state(cap)
                self._cool_until = t + (self.slice_len if self.slice_len != math.inf
                                        else 0.0)
        elif self.overloaded:
            self.overloaded = False
            strategy.stop()
            self.curbing = frozenset()

    # ------------------------------------------------------------------ PMs
    def _admit(self, pm: TracedPM) -> TracedPM | None:
        if self.model is not None:
            self._overhead += 1  # the classifier's lookup (§4.3.2)
            if self.config.adapt:
                self.model.occupy(pm.state, pm.cls, pm.born)
        if self.curbing and (pm.state, pm.cls, pm.born) in self.curbing:
            self.pms_curbed += 1
            return None
        return pm

    def _credit(self, pm: TracedPM, work: int, done: int) -> None:
        model = self.model
        if model is None or not self.config.adapt:
            return
        s = self.slice_of(self.now - pm.first_t)
        p = pm
        while p is not None:
            model.observe(p.state, p.cls, s, done, work)
            p = p.parent

    def _adapt(self, t: float) -> None:
        """At each slice end: blend the observed counts into the model (§4.3.2) and
        count the live PMs of each cell for the next slice."""
        if self.slice_len == math.inf:
            return
        if self._next_blend is None:
            self._next_blend = t + self.slice_len
            return
        if t < self._next_blend:
            return
        self.model.blend()
        for pm in self.live_pms():
            self.model.occupy(pm.state, pm.cls, self.slice_of(t - pm.first_t))
        self._next_blend = t + self.slice_len

    def live_pms(self) -> list[TracedPM]:
        return [pm for pms in self.live.values() for pm in pms]

    def cell_of(self, pm: TracedPM) -> tuple[int, int, int]:
        return (pm.state, pm.cls, self.slice_of(self.now - pm.first_t))

    def drop_pms(self, doomed) -> int:
        """Remove the live PMs for which ``doomed(pm)`` holds; their number."""
        n = 0
        for key in list(self.live):
            pms = self.live[key]
            kept = [pm for pm in pms if not doomed(pm)]
            if len(kept) != len(pms):
                n += len(pms) - len(kept)
                if kept:
                    self.live[key] = kept
                else:
                    del self.live[key]
        self.pms_shed += n
        self.counters.pm_dropped += n
        return n

    def charge(self, units: int) -> None:
        """Book shedding work on the device (it delays the event being processed)."""
        self._overhead += units

    # ------------------------------------------------------------------ results
    def report(self) -> dict[str, Any]:
        lat = np.asarray(self.match_latencies, dtype=float)
        return {
            "strategy": self.config.strategy,
            "events": self.events_seen,
            "events_shed": self.events_shed,
            "pms_created": self.counters.pm_created,
            "pms_shed": self.pms_shed,
            "pms_curbed": self.pms_curbed,
            "matches": len(lat),
            "latency_avg": float(lat.mean()) if len(lat) else 0.0,
            "latency_p95": float(np.percentile(lat, 95)) if len(lat) else 0.0,
            "event_latency_avg": (self.event_latencies_sum
                                  / max(1, self.events_seen - self.events_shed)),
            "busy": self.clock.busy,
            "unit_cost": self.config.unit_cost,
            "shedding_triggered": self.shedding_triggered,
        }
