"""Adaptive evaluation: lazy order-based and tree-based plans, the detection-adaptation
loop and plan migration (US 11,693,862 B2, Algorithm 1; **patented**, see the package).

The evaluation of one plan: :mod:`cep_core.adaptive.runners` (order- and tree-based);
what a complete match goes through (Kleene sequences, negated elements at the ends):
:mod:`cep_core.adaptive.operators`. The engine keeps, per partition key, the events of
each position (the buffers) and of each type negated between two neighbours.

**The loop.** Statistics (:mod:`cep_core.adaptive.statistics`) are updated with every
event, the predicates on one position evaluated on it, and disjoint pairs of events that
sample the predicates between two positions. Every ``period`` stream time units the decision
function D (:mod:`cep_core.adaptive.decision`) is asked; when it says so, the plan is
built again (:mod:`cep_core.adaptive.planning`) and, when it differs, replaces the plan.
The first plan is built, without D, once the statistics window has filled for the first
time (the text order is evaluated until then); ``adapt=None`` keeps it (a static plan).

**Migration** (the patent's deployment procedure): the plan replaced at the event with
sequence number s0 (time t0) keeps running on every later event, but outputs only the
matches that hold an event from before s0, until t0 + W when the last of those expired;
the new plan sees the events from s0 on only. So every match is output once, by the plan
that was current at its first event (a Kleene element's events included: a retired plan
keeps the partial matches whose Kleene element may still reach back before s0).
"""

from __future__ import annotations

import math
from typing import Any

from cep_core.adaptive.decision import DISTANCES, METHODS, decision, decision_report, replan
from cep_core.adaptive.operators import Completion, guard_violated
from cep_core.adaptive.pattern import Guard, Shape, adaptive_problem, branches_of, shape_of
from cep_core.adaptive.planning import (
    PLAN_KINDS,
    Planned,
    greedy_order,
    inputs,
    zstream_tree,
)
from cep_core.adaptive.runners import RUNNERS, Buffer, Runner, left_deep
from cep_core.adaptive.state import AdaptiveState
from cep_core.adaptive.statistics import WindowStatistics
from cep_core.counters import Counters
from cep_core.engine.matching import (
    ANY,
    EVERY_EVENT,
    OUTPUTS,
    CountMerging,
    Statistics,
    merge_counts,
)
from cep_core.errors import QueryError
from cep_core.plan import Plan

__all__ = ["AdaptiveEngine", "adapt_options", "adaptive_problem", "PLAN_KINDS"]

_ADAPT_KEYS = ("method", "t", "d", "K", "window", "period", "runner")
#: how an order plan is evaluated: over batches with arrays where
#: :func:`cep_core.adaptive.array_engine.array_problem` allows, or event by event
RUNNER_KINDS = ("array", "event")


def adapt_options(adapt: dict[str, Any] | None, plan: Plan) -> dict[str, Any]:
    """The ``adapt`` option checked and completed with its defaults (one-line errors):
    ``method`` (static, unconditional, threshold, invariant; default invariant), ``t``
    (threshold, > 0, default 0.5), ``d`` (distance, ≥ 0, or ``"avg"`` / ``"meta"``:
    chosen from the statistics, :mod:`cep_core.adaptive.decision`; default 0), ``K``
    (invariants per block, ≥ 1, default 1), ``window`` (the statistics window [stream time units],
    > 0, default 10 × the pattern's window), ``period`` (between two checks, > 0,
    default window / 4), ``runner`` (an order plan's evaluation, one of
    :data:`RUNNER_KINDS`, default array). ``None``: a static plan, built once."""
    given = dict(adapt or {})
    unknown = sorted(set(given) - set(_ADAPT_KEYS))
    if unknown:
        raise QueryError(f"adapt: unknown option(s) {', '.join(unknown)}; accepted: "
                         f"{', '.join(_ADAPT_KEYS)}")
    method = given.get("method", None if adapt is None else "invariant")
    if method is not None and method not in METHODS:
        raise QueryError(f"adapt: unknown method {method!r}; one of {', '.join(METHODS)}")
    out = {"method": method, "t": given.get("t", 0.5), "d": given.get("d", 0.0),
           "K": given.get("K", 1), "runner": given.get("runner", RUNNER_KINDS[0])}
    if out["runner"] not in RUNNER_KINDS:
        raise QueryError(f"adapt: unknown runner {out['runner']!r}; one of "
                         f"{', '.join(RUNNER_KINDS)}")
    for name, ok, rule in (("t", lambda v: v > 0, "> 0"), ("d", lambda v: v >= 0, ">= 0")):
        v = out[name]
        if name == "d" and v in DISTANCES:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not ok(v):
            raise QueryError(f"adapt: {name} must be a number {rule}"
                             + (f" or one of {', '.join(DISTANCES)}" if name == "d" else "")
                             + f", not {v!r}")
    k = out["K"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise QueryError(f"adapt: K must be a whole number >= 1, not {k!r}")
    window = given.get("window")
    if window is None:
        if not math.isfinite(plan.window):
            raise QueryError("adapt: the pattern has no WITHIN; give the statistics "
                             "window (adapt={'window': ...})")
        window = 10 * plan.window
    if isinstance(window, bool) or not isinstance(window, int | float) or not window > 0:
        raise QueryError(f"adapt: window must be a positive number, not {window!r}")
    period = given.get("period", window / 4)
    if isinstance(period, bool) or not isinstance(period, int | float) or not period > 0:
        raise QueryError(f"adapt: period must be a positive number, not {period!r}")
    out.update(window=float(window), period=float(period))
    return out


_ALGORITHMS = {"order": greedy_order, "tree": zstream_tree}


class AdaptiveEngine(CountMerging):
    """Runs a plan :func:`adaptive_problem` accepts under skip-till-any-match with an
    order-based or tree-based plan (``kind``), adapted as ``adapt`` says (module doc).
    The engine is the compiled query; what it keeps of the stream is
    :attr:`stream_state` (a :class:`~cep_core.adaptive.state.AdaptiveState`)."""

    reports = "adaptation"

    @classmethod
    def refusal(cls, plan: Plan | None, options: Any) -> str | None:
        """Why an adaptive plan does not run with these options (None when it does):
        the text-order plan runs instead."""
        if plan is None:
            return "an aggregation query"
        if options.policy != ANY or options.runs != EVERY_EVENT:
            return (f"a plan may change the order only under {ANY} with "
                    f"runs='{EVERY_EVENT}' (skip-till-next-match depends on the order in "
                    "which events are consumed; under strict contiguity the stream's order "
                    "is the plan)")
        if options.filtered or any(x is not None for x in (
                options.max_missing, options.shedding, options.remote)):
            return "filters, approximate matching, load shedding and remote data run on " \
                "the text-order plan"
        if options.output not in OUTPUTS:
            return f"output={options.output!r}"
        return adaptive_problem(plan)

    def __init__(self, plan: Plan, kind: str, output: str = "events",
                 adapt: dict[str, Any] | None = None, record_plan: Plan | None = None):
        why = adaptive_problem(plan)
        if why is None and len(branches_of(plan.query.pattern)) > 1:
            why = "a disjunction runs on cep_core.adaptive.branches.adaptive_engine"
        if why is not None:
            raise QueryError(f"an adaptive plan does not apply: {why}")
        if kind not in PLAN_KINDS:
            raise QueryError(f"plan must be one of text, {', '.join(PLAN_KINDS)}, "
                             f"not {kind!r}")
        self.name = self.name_of(kind)
        self.plan, self.kind, self.output = plan, kind, output
        self.policy = ANY
        self.options = adapt_options(adapt, plan)
        self.shape: Shape = shape_of(plan)
        self.by_type: dict[str, list[int]] = {}
        for q, typ in enumerate(self.shape.types):
            self.by_type.setdefault(typ, []).append(q)
        self.unary = [self.shape.unary(q) for q in range(self.shape.n)]
        #: per position q, the predicates between q and one other position r: (p, r)
        self.pairs: list[list[tuple]] = [
            [(p, next(iter(at - {q}))) for p, at in self.shape.preds if q in at and len(at) == 2]
            for q in range(self.shape.n)]
        #: the types negated between two neighbours (their events are kept per key)
        self.guard_types = frozenset(g.neg.type for g in self.shape.guards)
        self.algorithm = _ALGORITHMS[kind]
        self.completion = Completion(self, record_plan or plan)
        self._set_counting(output)
        self.stream_state = self.fresh_state()

    def fresh_state(self) -> AdaptiveState:
        """The state before any event: the text-order plan, no statistics."""
        plan, kind = self.plan, self.kind
        text = Planned(kind, tuple(range(self.shape.n)) if kind == "order"
                       else left_deep(self.shape.n), ())
        return AdaptiveState(
            Counters(), Statistics(plan),
            WindowStatistics(sorted(set(self.shape.types)), len(plan.preds),
                             self.options["window"]),
            [RUNNERS[kind](self, text, 0)],
            decision(self.options) if self.options["method"] is not None else None,
            {"checks": 0, "reoptimizations": 0, "replacements": 0, "seconds_deciding": 0.0,
             "seconds_planning": 0.0, "plans": [text.describe(self.shape.vars)]})

    @property
    def stream_state(self) -> AdaptiveState:
        """What the engine keeps of the stream; a fresh engine of the same compiled query
        takes one (its plans' evaluations then run on this engine)."""
        return self._state

    @stream_state.setter
    def stream_state(self, state: AdaptiveState) -> None:
        for runner in state.runners:
            if runner.__dict__.get("engine") is not self:
                runner.bind(self)
        self._state = state

    def __setstate__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)
        self.stream_state = fields["_state"]

    @property
    def counters(self) -> Counters:  # type: ignore[override]
        return self._state.counters

    @property
    def stats(self) -> Statistics:  # type: ignore[override]
        return self._state.stats

    @staticmethod
    def name_of(kind: str) -> str:
        """The engine's name with a plan of ``kind``."""
        return f"adaptive-{kind}"

    # ------------------------------------------------------------------ events
    def _process(self, e: dict, out: list) -> None:
        plan = self.plan
        typ, t = e["type"], e["time"]
        if plan.stream_type is not None and typ != plan.stream_type:
            return
        st = self._state
        st.counters.events += 1
        st.stats.event(typ, t)
        st.window_stats.event(typ, t)
        seq = st.seq
        st.seq += 1
        if st.next_check is None:  # the first check once the statistics window is full
            st.next_check = t + self.options["window"]
            st.next_sweep = t + plan.window
        ends = self.completion.ends
        if ends is not None:
            st.counters.outputs += ends.release_before(st.ends, t, out)
        positions = self.by_type.get(typ)
        if positions or ends is not None or typ in self.guard_types:
            key = plan.key_of(e)
            if key is not None:
                if ends is not None:
                    ends.observe(st.ends, e, key, t)
                self._place((seq, t, e), positions or (), key, out)
        if t >= st.next_sweep:
            self._sweep(t)
        if t >= st.next_check:
            st.next_check = t + self.options["period"]
            self._adapt(seq, t)

    def _place(self, x: tuple, positions: Any, key: Any, out: list) -> None:
        """The event ``x`` (seq, t, event) of partition ``key``: offered to every plan at
        the positions whose own predicates it passes, then buffered there (and kept for
        the guards when its type is negated between two neighbours)."""
        st, e = self._state, x[2]
        fit = [q for q in positions
               if self.check(self.unary[q], {self.shape.vars[q]: e}, x[1])]
        if fit:
            for q in fit:
                self._sample_pairs(q, x, key)
            for runner in st.runners:
                runner.process(x, fit, key, out)
            for q in fit:
                buffer = st.buffers.get((key, q))
                if buffer is None:
                    buffer = st.buffers[(key, q)] = Buffer()
                buffer.add(x)
        if e["type"] in self.guard_types:
            buffer = st.negs.get((key, e["type"]))
            if buffer is None:
                buffer = st.negs[(key, e["type"])] = Buffer()
            buffer.add(x)

    def complete(self, runner: Runner, slots: tuple, x: tuple, key: Any, out: list) -> None:
        """A runner's complete match (:meth:`cep_core.adaptive.operators.Completion.
        complete`)."""
        self.completion.complete(runner, slots, x, key, out)

    def guarded(self, guards: list[Guard], slots: tuple, key: Any) -> bool:
        """Whether no guard is violated on the bound ``slots`` (partition ``key``)."""
        vars_ = self.shape.vars
        bind = {vars_[q]: s[2] for q, s in enumerate(slots) if s is not None}
        negs = self._state.negs
        return not any(guard_violated(g, negs.get((key, g.neg.type)), slots[g.lo][0],
                                      slots[g.hi][0], bind, self.check) for g in guards)

    def check(self, preds, bind: dict, sample_at: Any = None) -> bool:
        """Whether the bindings pass the predicates (counted; with ``sample_at``, the
        time, each outcome is also a sample of the predicate's selectivity)."""
        st = self._state
        for p in preds:
            st.counters.predicates += 1
            st.stats.pred_evaluated[p.index] += 1
            ok = p.test(bind)
            if sample_at is not None:
                st.window_stats.predicate(p.index, ok, sample_at)
            if not ok:
                return False
            st.stats.pred_passed[p.index] += 1
        return True

    def _sample_pairs(self, q: int, x: tuple, key: Any) -> None:
        """Samples of the selectivity of each predicate between position q and another
        position r: the event ``x`` (seq, t, event) is paired with the event of r of its
        partition that waits for a partner within the pattern's window, or waits itself.
        Each event is in one pair at most, so the pairs are independent samples
        (statistics module doc)."""
        vars_, window, st = self.shape.vars, self.plan.window, self._state
        seq, t, e = x
        for p, r in self.pairs[q]:
            slot = (p.index, key)
            waiting = st.unpaired.get(slot)
            if waiting is None or waiting[0] != r or waiting[1][0] == seq \
                    or waiting[1][1] < t - window:
                st.unpaired[slot] = (q, x)
                continue
            del st.unpaired[slot]
            st.counters.predicates += 1
            ok = p.test({vars_[q]: e, vars_[r]: waiting[1][2]})
            st.window_stats.predicate(p.index, ok, t)

    def _sweep(self, t: Any) -> None:
        """Expire partial matches and buffers; drop retired plans whose old events have
        all left the window."""
        window, st = self.plan.window, self._state
        st.next_sweep = t + (window if math.isfinite(window) else math.inf)
        oldest = t - window
        for slot, (_, x) in list(st.unpaired.items()):
            if x[1] < oldest:
                del st.unpaired[slot]
        for buffers in (st.buffers, st.negs):
            for at, buffer in list(buffers.items()):
                buffer.expire(oldest)
                if not buffer:
                    del buffers[at]
        for runner in st.runners:
            st.counters.pm_dropped += runner.expire(oldest)
        st.runners = [r for r in st.runners if r.until is None or t - r.last_old_t <= window]

    # ------------------------------------------------------------------ adaptation
    def _adapt(self, seq: int, t: Any) -> None:
        """The detection-adaptation loop's step (Algorithm 1): ask D, plan, deploy."""
        st = self._state
        planned = replan(st.decide, not st.planned_once,
                         lambda: inputs(self.shape, st.window_stats, self.plan.window),
                         lambda stats: self.algorithm(self.shape, stats), st.report)
        if planned is None:
            return
        st.planned_once = True
        rep = st.report
        current = st.runners[-1]
        if planned.plan == current.planned.plan:
            current.planned = planned
            return
        rep["replacements"] += 1
        rep["plans"].append(planned.describe(self.shape.vars))
        current.until, current.last_old_t = seq + 1, t
        st.runners.append(RUNNERS[self.kind](self, planned, seq + 1))

    # ------------------------------------------------------------------ public
    def flush(self) -> list[dict]:
        """The end of the stream: the matches still waiting for a trailing NEG's window
        to close."""
        out: list[dict] = []
        ends = self.completion.ends
        if ends is not None:
            self.counters.outputs += ends.flush(self._state.ends, out)
        if self._counting and len(out) > 1:
            merge_counts(self.plan, out, 0)
        return out

    def live_count(self) -> int:
        return sum(r.live() for r in self._state.runners)

    def statistics(self) -> dict[str, Any]:
        return {**self.stats.as_dict(), "window": self.window_section()}

    def window_section(self) -> dict[str, Any]:
        """The statistics over the sliding window (``session.statistics["window"]``)."""
        return self._state.window_stats.as_dict([p.text for p in self.plan.preds])

    def report(self) -> dict[str, Any]:
        """The plan in use, checks of D, re-optimisations, plan replacements, the
        seconds spent in D and in planning, the plans deployed in turn, and with
        invariants the distance d (``d``; d_avg with ``"avg"`` and ``"meta"``), its values
        in turn (``d_history``: d_avg, then each meta-adaptive change) and the
        meta-adaptive distances of the invariants tuned so far (``d_own``, by text)."""
        st = self._state
        return {**st.report, "plan": st.runners[-1].planned.describe(self.shape.vars),
                **decision_report(st.decide)}
