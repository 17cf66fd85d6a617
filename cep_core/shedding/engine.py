"""The reference engine with load shedding on a modelled device (dissertation §4.2-4.3).

:class:`TracingEngine` runs a query over a historical stream and credits every partial
match (PM) with the complete matches and the work of it and its descendants, per time
slice (the retrospective Γ⁺ and Γ⁻ of Eq. 4.3 and 4.4) — the input of the offline cost
model (:mod:`cep_core.shedding.fitting`).

:class:`SheddingEngine` runs a query on the modelled device clock
(:mod:`cep_core.shedding.clock`) with a strategy (:mod:`cep_core.shedding.strategies`):
before each event it compares the latency statistic ℓ with the bound θ and lets the
strategy shed (with a fixed ratio, state strategies decide on each PM as it is
created); an event the input filter drops costs nothing and changes nothing (Eq. 4.2);
a PM the state filter drops is gone with all it would have derived. Each new PM is
classified when it is created (one cost unit on the device, the classifier's lookup);
while a state-shedding set is in force, PMs of its classes are not created at all
(early curbing, §4.3.4).
With ``indexing`` the live PMs are addressed by class, so choosing and dropping a
shedding set costs one unit per class cell; without, one unit per live PM scanned.

Everything is deterministic: random strategies draw from a seeded generator in stream
order, and the device clock is modelled, not measured.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cep_core.engine.matching import PM
from cep_core.engine.options import MODELLED_MISSING
from cep_core.engine.reference import ReferenceEngine
from cep_core.engine.reference_state import ReferenceCall, state_field
from cep_core.expr import ExprCompiler, walk
from cep_core.lang import ast
from cep_core.shedding.clock import DeviceClock, LatencyWindow, work_units
from cep_core.shedding.features import (
    event_features,
    features_of,
    local_tests,
    test_values,
)
from cep_core.shedding.state import SheddingState

__all__ = ["TracedPM", "TracingEngine", "SheddingEngine"]


def pm_features(plan) -> dict[int, list[tuple[str, Callable[[dict], Any]]]]:
    """Per automaton state, the named features of its partial matches' classes (§4.3.2:
    "the attributes of partial matches that appear in the query predicates"):

    * each attribute of a bound variable that a predicate reads (the latest event of a
      Kleene variable);
    * each arithmetic operand of a predicate's comparison whose variables are all bound
      and that reads no lookup and no running index — the shared value a later
      predicate compares with (§4.3.4), e.g. ``a.V+b.V`` of Q1's ``a.V+b.V=c.V`` at
      the state of (a, b). A tree over the raw attributes can only approximate such a
      diagonal boundary with axis-parallel cuts; over the operand it is one cut.

    Bound variables are those of the positions up to the state in pattern order."""
    read = [(v, a) for p in plan.preds for v, a in p.attrs]
    compiler = ExprCompiler(plan.variables, plan.params, plan.lookups, plan.time_unit)
    operands = []
    for p in plan.preds:
        for node in walk(p.node):
            if not isinstance(node, ast.Compare):
                continue
            for side in (node.left, node.right):
                if isinstance(side, ast.BinOp) and not any(
                        isinstance(x, ast.Lookup) for x in walk(side)):
                    c = compiler.compile(side)
                    if not c.irefs and c.text not in {t for t, _, _ in operands}:
                        operands.append((c.text, c.vars, c.fn))
    out = {}
    for q in range(len(plan.positions)):
        bound = {p.var for p in plan.positions[:q + 1]}
        feats = [(f"{v}.{a}", _latest(v, a))
                 for v, a in dict.fromkeys((v, a) for v, a in read if v in bound)]
        feats += [(text, _operand(fn)) for text, vars_, fn in operands
                  if vars_ and vars_ <= bound]
        out[q] = feats
    return out


def _latest(var: str, attr: str) -> Callable[[dict], Any]:
    def value(bind: dict) -> Any:
        ev = bind.get(var)
        if isinstance(ev, tuple):
            ev = ev[-1] if ev else None
        return ev.get(attr) if ev is not None else 0.0
    return value


def _operand(fn: Callable) -> Callable[[dict], Any]:
    def value(bind: dict) -> Any:
        try:
            return fn(bind, None)
        except (TypeError, ValueError, ZeroDivisionError, IndexError, KeyError):
            return 0.0
    return value


class TracedPM(PM):
    """A PM with its parent, class, birth slice, features and per-slice credit
    (``credit[:m]`` complete matches, ``credit[m:]`` work)."""

    __slots__ = ("parent", "cls", "born", "features", "credit")

    def __getstate__(self):
        return (super().__getstate__(), self.parent, self.cls, self.born, self.features,
                getattr(self, "credit", None))  # (credit: only while tracing)

    def __setstate__(self, s):
        super().__setstate__(s[0])
        self.parent, self.cls, self.born, self.features, self.credit = s[1:]


class _Tracking(ReferenceEngine):
    """PM creation with classification and credit to PMs and their ancestors."""

    def __init__(self, plan, policy: str, slices: int, consumption: str, output="events",
                 runs: str = "every-event", model: Any = None,
                 max_missing: int | None = None):
        super().__init__(plan, policy, output, runs=runs, max_missing=max_missing)
        self._new_pm = self._make_pm
        self.m = slices
        self.slice_len = plan.window / slices if plan.window != math.inf else math.inf
        self.count_only = consumption == "count"
        self.model = model
        self.state_features = pm_features(plan)
        self._overhead = 0

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["state_features"]  # closures: built again from the plan
        state.pop("_advance_one", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.state_features = pm_features(self.plan)
        if not self.crediting:
            self._plain_steps()

    crediting = True  # whether work and matches are credited to PMs and ancestors

    def _plain_steps(self) -> None:
        """Nothing reads the credit: advance PMs with the reference engine's own step."""
        self.crediting = False
        self._advance_one = super()._advance_one

    def slice_of(self, age: float) -> int:
        if self.slice_len == math.inf:
            return 0
        s = int(age / self.slice_len)
        return 0 if s < 0 else (self.m - 1 if s >= self.m else s)

    def pm_features(self, state: int, bind: dict) -> tuple[float, ...]:
        return features_of(f(bind) for _, f in self.state_features[state])

    def _make_pm(self, state: int, bind: dict, first_t: Any, parent: PM | None
                 ) -> TracedPM | None:
        pm = TracedPM(state, bind, first_t)
        pm.parent = parent
        pm.born = self.slice_of(self.stream_state.now - first_t)
        if self.model is not None or self.tracing:
            pm.features = self.pm_features(state, bind)
            pm.cls = self.model.classify(state, pm.features) if self.model is not None else 0
        else:  # no model (NS, RI, RS): nothing to classify by
            pm.features, pm.cls = (), 0
        return self._admit(pm)

    def _admit(self, pm: TracedPM) -> TracedPM | None:
        return pm

    tracing = True    # whether PMs keep their features (the offline fit reads them)

    def _advance_one(self, pm, e, call: ReferenceCall, keep, born) -> None:
        """The reference engine's step, crediting its work and matches to ``pm`` and its
        ancestors (replaced by the plain step where nothing reads the credit)."""
        c = self.stream_state.counters
        p0 = 0 if self.count_only else c.predicates
        w0, o0 = c.pm_created + c.pm_extended, c.outputs
        ReferenceEngine._advance_one(self, pm, e, call, keep, born)
        work = c.pm_created + c.pm_extended - w0 + (0 if self.count_only
                                                     else c.predicates - p0)
        done = c.outputs - o0
        if work or done:
            self._credit(pm, work, done)

    def _credit(self, pm: TracedPM, work: int, done: int) -> None:
        raise NotImplementedError


class TracingEngine(_Tracking):
    """Offline: every PM with its per-slice credit, and per event of the pattern the
    PMs it created (the input side of the cost model, module doc of
    :mod:`cep_core.shedding.cost_model`) and whether it completed a match or is of a
    negated type."""

    def __init__(self, plan, policy: str, slices: int = 4, consumption: str = "work",
                 runs: str = "every-event", max_missing: int | None = None):
        super().__init__(plan, policy, slices, consumption, runs=runs,
                         max_missing=max_missing)
        self.traced: list[TracedPM] = []
        #: per event of a pattern or NEG type: (type, features, PMs created, whether it
        #: completed a match or may block one)
        self.touched: list[tuple[str, tuple, list, bool]] = []
        self.type_in_matches: dict[str, int] = {}
        var_type = {p.var: p.type for p in plan.positions}
        var_type.update({n.var: n.type for n in plan.negs})
        attrs: dict[str, dict[str, None]] = {}
        for p in plan.preds:
            for v, a in p.attrs:
                if v in var_type:
                    attrs.setdefault(var_type[v], {})[a] = None
        self.event_attrs = {t: list(a) for t, a in attrs.items()}
        self.event_tests = local_tests(plan)
        self.var_multi = {p.var: p.multi for p in plan.positions}
        self._created: list = []

    def process(self, e: dict, out: list) -> None:
        self._created = []
        counters = self.stream_state.counters
        n0 = counters.outputs
        super().process(e, out)
        typ = e["type"]
        plan = self.plan
        if typ in plan.types or typ in plan.neg_types:
            feats = event_features(e, self.event_attrs.get(typ, ())) + test_values(
                self.event_tests.get(typ, []), self.var_multi, e)
            kept = counters.outputs > n0 or typ in plan.neg_types
            self.touched.append((typ, feats, self._created, kept))

    def _admit(self, pm: TracedPM) -> TracedPM:
        pm.credit = [0] * (2 * self.m)
        self.traced.append(pm)
        self._created.append(pm)
        return pm

    def _credit(self, pm: TracedPM, work: int, done: int) -> None:
        s = self.slice_of(self.stream_state.now - pm.first_t)
        m = self.m
        p = pm
        while p is not None:
            p.credit[s] += done
            p.credit[m + s] += work
            p = p.parent

    def _emit(self, bind: dict, rec: dict, call: ReferenceCall) -> None:
        counters = self.stream_state.counters
        n0 = counters.outputs
        super()._emit(bind, rec, call)
        if counters.outputs > n0:
            for ev in bind.values():
                for x in (ev if isinstance(ev, tuple) else (ev,)):
                    self.type_in_matches[x["type"]] = self.type_in_matches.get(x["type"], 0) + 1


class SheddingEngine(_Tracking):
    """The reference engine on a modelled device with a shedding strategy (module doc).
    ``config``: a :class:`cep_core.shedding.SheddingConfig`; ``max_missing``:
    approximate matching (the reference engine's), for a baseline of RC-ACEP
    (:mod:`cep_core.approx.rc_acep`; ``CompiledQuery.start`` does not combine the two)."""

    name = "reference"
    reports = "shedding"
    (clock, monitor, match_latencies, event_latencies_sum, events_seen, events_shed,
     pms_shed, pms_curbed, overloaded, shedding_triggered, cool_until, judge_from, curbing,
     curb_until, doomed, next_blend, model, strategy) = (state_field(f) for f in (
        "clock", "monitor", "match_latencies", "event_latencies_sum", "events_seen",
        "events_shed", "pms_shed", "pms_curbed", "overloaded", "shedding_triggered",
        "cool_until", "judge_from", "curbing", "curb_until", "doomed", "next_blend",
        "model", "strategy"))

    @classmethod
    def refusal(cls, plan: Any, options: Any) -> str | None:
        if options.max_missing is not None:
            return MODELLED_MISSING
        if plan is None or options.filtered:
            return ("load shedding applies to pattern queries without input or state "
                    "filters of their own")
        return None

    def __init__(self, plan, policy: str, output: str, runs: str, config: Any,
                 max_missing: int | None = None):
        model = config.model
        if model is not None and config.adapt:
            model = copy.deepcopy(model)  # online adaptation changes this session's copy
        self.config = config  # (read by fresh_state)
        super().__init__(plan, policy, model.slices if model else config.slices,
                         model.consumption if model else "work", output, runs, model,
                         max_missing)
        if model is None or not config.adapt:
            self._plain_steps()
        self.tracing = False
        self.strategy = config.make_strategy(self)
        if model is None and not self.strategy.state_level:
            self._new_pm = PM  # nothing reads a PM's class, slice or parent (NS, RI)
        self._final_types = {p.type for p in plan.positions if p.accepting}
        # fixed ratio, state strategies: shed PMs as they are created (§4.4.3.1), with
        # early curbing (not created at all) for the model-based ones, §4.3.4
        self._sheds_new = config.ratio is not None and self.strategy.state_level
        self._curbs = config.curbing and self.strategy.curbs

    def fresh_state(self) -> SheddingState:
        """The state before any event: an idle device, an empty latency window."""
        cfg, st = self.config, SheddingState.fresh(self.plan)
        st.clock = DeviceClock(cfg.unit_cost)
        st.monitor = LatencyWindow(cfg.statistic, cfg.window)
        return st

    # ------------------------------------------------------------------ per event
    def process(self, e: dict, out: list) -> None:
        t, st = e["time"], self.stream_state
        if st.strategy.engine is not self:  # a state taken from another engine
            st.strategy.engine = self
        start = self.clock.start(t)
        self.events_seen += 1
        self._overhead = 0
        st.now = t  # (timestamps do not decrease; the strategies read it first)
        if self.model is not None and self.config.adapt:
            self._adapt(t)
        self._control(t)
        if self.strategy.drop(e):
            self.events_shed += 1
            st.stats.filtered += 1
            if self._overhead:
                self.clock.serve(start, self._overhead)
            return
        u0, n0 = work_units(st.counters), len(out)
        super().process(e, out)
        finish = self.clock.serve(start, work_units(st.counters) - u0 + self._overhead)
        latency = finish - t
        self.event_latencies_sum += latency
        if len(out) > n0:
            self.match_latencies.extend([latency] * (len(out) - n0))
        if e["type"] in self._final_types and t >= self.judge_from:
            self.monitor.add(latency)

    def _control(self, t: float) -> None:
        cfg, strategy = self.config, self.strategy
        if t >= self.curb_until:
            self.curbing = frozenset()
        if cfg.ratio is not None:
            if self.doomed:
                doomed = {id(pm) for pm in self.doomed}
                self.drop_pms(lambda pm: id(pm) in doomed)
                self.doomed = []
            strategy.keep_ratio(cfg.ratio)
            return
        if cfg.bound is None:
            return  # NS
        if len(self.monitor) < cfg.min_samples:
            return  # too few latencies since the last state shedding to judge by
        latency = self.monitor.value()
        if latency > cfg.bound:
            cap = (latency - cfg.bound) / latency
            if not self.overloaded:
                self.shedding_triggered += 1
            self.overloaded = True
            if strategy.input_level:
                strategy.filter_inputs(cap)
            if strategy.state_level and t >= self.cool_until:
                strategy.shed_state(cap)
                self.cool_until = t + (self.slice_len if self.slice_len != math.inf
                                        else 0.0)
                # judge this shedding by the matches of events that arrive after it
                # (those queued now wait for work done before it)
                self.monitor.clear()
                self.judge_from = self.clock.start(t)
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
        if self._sheds_new and self.strategy.shed_new(pm):
            if self._curbs:
                self.pms_curbed += 1
                return None
            self.doomed.append(pm)  # created, and dropped before the next event
        return pm

    def _credit(self, pm: TracedPM, work: int, done: int) -> None:
        model = self.model
        s = self.slice_of(self.stream_state.now - pm.first_t)
        p = pm
        while p is not None:
            model.observe(p.state, p.cls, s, done, work)
            p = p.parent

    def _adapt(self, t: float) -> None:
        """At each slice end: blend the observed counts into the model (§4.3.2) and
        count the live PMs of each cell for the next slice."""
        if self.slice_len == math.inf:
            return
        if self.next_blend is None:
            self.next_blend = t + self.slice_len
            return
        if t < self.next_blend:
            return
        self.model.blend()
        for pm in self.live_pms():
            self.model.occupy(pm.state, pm.cls, self.slice_of(t - pm.first_t))
        self.next_blend = t + self.slice_len

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

    def curb(self, cells: frozenset) -> None:
        """Early curbing (§4.3.4): PMs of these (state, class, slice) cells are not
        created until the next slice (the delay j of §4.2.5) or the end of the overload."""
        self.curbing = cells
        self.curb_until = self.now + (self.slice_len if self.slice_len != math.inf
                                       else 0.0)

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
