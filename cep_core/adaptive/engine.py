"""Adaptive evaluation: lazy order-based and tree-based plans, the detection-adaptation
loop and plan migration (US 11,693,862 B2, Algorithm 1; **patented**, see the package).

Both evaluations keep, per partition key, the events of each pattern position that
passed the predicates on that position alone (the *buffers*), and find exactly the
matches of the text-order plan under skip-till-any-match (a match is a set of events,
one per position, in the order the pattern requires, within the window, satisfying every
predicate). A match is output at the arrival of its last event, as the text-order engines
output it.

* **Order-based** (a lazy NFA, after Kolchinsky, Sharfman and Schuster): a partial match
  of level i holds the positions p_1..p_i of the plan's order. An event at position
  p_{i+1} extends the partial matches of level i that exist when it arrives; a partial
  match of level i extends, when it is made, with the buffered events of p_{i+1} that
  arrived before it. So each extension happens once, at the later of the two arrivals,
  and a match is made once.
* **Tree-based** (ZStream, Mei and Madden): leaves are the buffers, an inner node joins
  its children's partial matches; an event makes its leaf's new partial match, which
  joins, node by node up the tree, with what the sibling holds; what reaches the root is
  a match.

The pattern's order between two positions and its predicates are checked as soon as both
(all) their positions are bound; the window as soon as a partial match spans more.

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
that was current at its first event.
"""

from __future__ import annotations

import math
import time as _time
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

from cep_core.adaptive.decision import METHODS, decision
from cep_core.adaptive.pattern import Shape, adaptive_problem, shape_of
from cep_core.adaptive.planning import (
    PLAN_KINDS,
    Planned,
    greedy_order,
    inputs,
    zstream_tree,
)
from cep_core.adaptive.state import AdaptiveState
from cep_core.adaptive.statistics import WindowStatistics
from cep_core.counters import Counters
from cep_core.engine.matching import (
    ANY,
    EVERY_EVENT,
    OUTPUTS,
    CountMerging,
    Statistics,
    match_record,
)
from cep_core.errors import QueryError
from cep_core.plan import Plan

__all__ = ["AdaptiveEngine", "adapt_options", "adaptive_problem", "PLAN_KINDS"]

_ADAPT_KEYS = ("method", "t", "d", "K", "window", "period")


def adapt_options(adapt: dict[str, Any] | None, plan: Plan) -> dict[str, Any]:
    """The ``adapt`` option checked and completed with its defaults (one-line errors):
    ``method`` (static, unconditional, threshold, invariant; default invariant), ``t``
    (threshold, > 0, default 0.5), ``d`` (distance, ≥ 0, default 0), ``K`` (invariants
    per block, ≥ 1, default 1), ``window`` (the statistics window [stream time units],
    > 0, default 10 × the pattern's window), ``period`` (between two checks, > 0,
    default window / 4). ``None``: a static plan, built once."""
    given = dict(adapt or {})
    unknown = sorted(set(given) - set(_ADAPT_KEYS))
    if unknown:
        raise QueryError(f"adapt: unknown option(s) {', '.join(unknown)}; accepted: "
                         f"{', '.join(_ADAPT_KEYS)}")
    method = given.get("method", None if adapt is None else "invariant")
    if method is not None and method not in METHODS:
        raise QueryError(f"adapt: unknown method {method!r}; one of {', '.join(METHODS)}")
    out = {"method": method, "t": given.get("t", 0.5), "d": given.get("d", 0.0),
           "K": given.get("K", 1)}
    for name, ok, rule in (("t", lambda v: v > 0, "> 0"), ("d", lambda v: v >= 0, ">= 0")):
        v = out[name]
        if isinstance(v, bool) or not isinstance(v, int | float) or not ok(v):
            raise QueryError(f"adapt: {name} must be a number {rule}, not {v!r}")
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


class _Runner:
    """One plan's evaluation (module doc), from event ``start`` on; ``until``: retired
    at that event (it then outputs only the matches holding an earlier one). A part of
    the engine's state: it pickles its plan and partial matches (:attr:`STATE`), and
    :meth:`bind` compiles the rest on the engine that runs it."""

    #: the fields that pickle (the rest :meth:`bind` compiles from the plan)
    STATE: tuple[str, ...] = ("planned", "start", "until", "last_old_t")

    def __init__(self, engine: AdaptiveEngine, planned: Planned, start: int):
        self.planned, self.start = planned, start
        self.until: int | None = None
        self.last_old_t: Any = None  # the time of its last event before ``until``
        self.bind(engine)

    def bind(self, engine: AdaptiveEngine) -> None:
        """Run on ``engine``: what its plan compiles to there."""
        self.engine = engine

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.STATE}

    def __setstate__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)

    def emit(self, slots: tuple, e: dict, out: list) -> None:
        """Output the match ``slots`` ((seq, t, event) per position) completed by ``e``
        (a retired plan outputs only those with an event from before it retired)."""
        if self.until is not None and min(s[0] for s in slots) >= self.until:
            return
        eng = self.engine
        bind = {eng.shape.vars[q]: s[2] for q, s in enumerate(slots)}
        out.append(match_record(eng.plan, eng.output, bind, e["time"]))
        eng.counters.outputs += 1

    def relations(self, bound: list[int], q: int) -> tuple[tuple[int, ...], ...]:
        """For an event joining the positions ``bound`` at ``q``: those whose events must
        come before it, those whose events must come after it, and those of its type
        (one event takes one position)."""
        shape = self.engine.shape
        return (tuple(r for r in bound if shape.before[r][q]),
                tuple(r for r in bound if shape.before[q][r]),
                tuple(r for r in bound if shape.types[r] == shape.types[q]))


def _drop_older(stores: dict[tuple, list], oldest: Any) -> int:
    """Drop from each list of partial matches ``(slots, lo, hi)`` those holding an event
    before ``oldest`` (and the lists left empty); how many were dropped."""
    dropped = 0
    for at, store in list(stores.items()):
        keep = [pm for pm in store if pm[1] >= oldest]
        dropped += len(store) - len(keep)
        if keep:
            store[:] = keep
        else:
            del stores[at]
    return dropped


class _Buffer:
    """The events of one position and key, in arrival order: their sequence numbers and
    times (for bisection) beside the events ``(seq, t, event)``."""

    __slots__ = ("seqs", "times", "items")

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.times: list[Any] = []
        self.items: list[tuple] = []

    def add(self, x: tuple) -> None:
        self.seqs.append(x[0])
        self.times.append(x[1])
        self.items.append(x)

    def between(self, first_seq: int, last_seq: float, t_lo: Any, t_hi: Any) -> list:
        """The events with first_seq ≤ seq < last_seq and t_lo ≤ t ≤ t_hi."""
        a = max(bisect_left(self.seqs, first_seq), bisect_left(self.times, t_lo))
        b = min(bisect_left(self.seqs, last_seq), bisect_right(self.times, t_hi))
        return self.items[a:b]

    def expire(self, oldest: Any) -> None:
        k = bisect_left(self.times, oldest)
        if k:
            del self.seqs[:k], self.times[:k], self.items[:k]

    def __bool__(self) -> bool:
        return bool(self.items)


class _OrderRunner(_Runner):
    """The lazy order-based evaluation (module doc)."""

    STATE = (*_Runner.STATE, "levels")

    def __init__(self, engine: AdaptiveEngine, planned: Planned, start: int):
        self.levels: dict[tuple, list] = {}  # (key, level) -> (slots, lo, hi)
        super().__init__(engine, planned, start)

    def bind(self, engine: AdaptiveEngine) -> None:
        super().bind(engine)
        shape = engine.shape
        self.order = self.planned.plan
        self.rank = {q: i for i, q in enumerate(self.order)}
        self.checks = [shape.checks(frozenset(self.order[:i]), q)
                       for i, q in enumerate(self.order)]
        self.related = [self.relations(list(self.order[:i]), q)
                        for i, q in enumerate(self.order)]
        #: per level, whether a position still to bind may take an event older than
        #: every bound one (none of them must come before it)
        self.takes_old = [any(not any(shape.before[b][r] for b in self.order[:i])
                              for r in self.order[i:]) for i in range(shape.n)]

    def process(self, x: tuple, positions: list[int], key: Any, out: list) -> None:
        n = self.engine.shape.n
        for q in positions:
            i = self.rank[q]
            if i == 0:
                slots = tuple(x if r == q else None for r in range(n))
                self._grow(slots, x[1], x[1], 1, key, x, out)
                continue
            if self.related[i][1]:
                continue  # a bound position must come after q: not the newest event
            level = self.levels.get((key, i))
            if level:
                for slots, lo, hi in list(level):
                    self._extend(slots, lo, hi, i, x, key, out)

    def _extend(self, slots: tuple, lo: Any, hi: Any, i: int, x: tuple, key: Any,
                out: list) -> None:
        """Offer ``x`` to the partial match ``slots`` of level i (at position p_{i+1})."""
        q = self.order[i]
        seq, t = x[0], x[1]
        if (hi if hi > t else t) - (lo if lo < t else t) > self.engine.plan.window:
            return
        earlier, later, alike = self.related[i]
        for r in earlier:
            if slots[r][0] >= seq:
                return
        for r in later:
            if slots[r][0] <= seq:
                return
        for r in alike:
            if slots[r][0] == seq:
                return
        grown = slots[:q] + (x,) + slots[q + 1:]
        checks = self.checks[i]
        if checks:
            bind = {self.engine.shape.vars[r]: s[2] for r, s in enumerate(grown)
                    if s is not None}
            if not self.engine.check(checks, bind):
                return
        self.engine.counters.pm_extended += 1
        self._grow(grown, min(lo, x[1]), max(hi, x[1]), i + 1, key, x, out)

    def _grow(self, slots: tuple, lo: Any, hi: Any, level: int, key: Any, x: tuple,
              out: list) -> None:
        """A new partial match of ``level``: output it if complete, else keep it and
        extend it with the buffered events of the next position (arrived before it)."""
        n = self.engine.shape.n
        if level == n:
            self.emit(slots, x[2], out)
            return
        new_only = self.until is not None and all(s is None or s[0] >= self.until
                                                  for s in slots)
        if new_only and not self.takes_old[level]:
            return  # retired: new events alone, and no later position may take an old one
        if not (new_only and self.related[level][1]):
            # (kept unless retired and of new events alone with no arrival to extend it:
            # its bound positions must come after the next; its buffer is read below)
            self.engine.counters.pm_created += 1
            self.levels.setdefault((key, level), []).append((slots, lo, hi))
        buffer = self.engine.stream_state.buffers.get((key, self.order[level]))
        if buffer is None:
            return
        earlier, later, _ = self.related[level]
        first = max(slots[r][0] + 1 for r in earlier) if earlier else self.start
        first = max(first, self.start)  # (a plan sees the events from its start on)
        last = min(slots[r][0] for r in later) if later else math.inf
        window = self.engine.plan.window
        for y in buffer.between(first, last, hi - window, lo + window):
            self._extend(slots, lo, hi, level, y, key, out)

    def expire(self, oldest: Any) -> int:
        return _drop_older(self.levels, oldest)

    def live(self) -> int:
        return sum(len(level) for level in self.levels.values())


class _TreeRunner(_Runner):
    """The tree-based evaluation (module doc): nodes numbered bottom-up, each with the
    positions it spans, its parent and sibling."""

    STATE = (*_Runner.STATE, "stores")

    def __init__(self, engine: AdaptiveEngine, planned: Planned, start: int):
        #: (key, inner node) -> its partial matches (slots, lo, hi); the leaves are the
        #: engine's buffers
        self.stores: dict[tuple, list] = {}
        super().__init__(engine, planned, start)

    def bind(self, engine: AdaptiveEngine) -> None:
        super().bind(engine)
        shape = engine.shape
        self.span: list[frozenset[int]] = []
        self.parent: list[int] = []
        self.leaf: dict[int, int] = {}  # position -> its leaf node

        def build(t: Any) -> int:
            if isinstance(t, int):
                node = len(self.span)
                self.span.append(frozenset({t}))
                self.parent.append(-1)
                self.leaf[t] = node
                return node
            left, right = build(t[0]), build(t[1])
            node = len(self.span)
            self.span.append(self.span[left] | self.span[right])
            self.parent.append(-1)
            self.parent[left] = self.parent[right] = node
            return node

        self.root = build(self.planned.plan)
        self.children = {self.parent[c]: [] for c in range(len(self.span))
                         if self.parent[c] >= 0}
        for c, p in enumerate(self.parent):
            if p >= 0:
                self.children[p].append(c)
        self.joins = {p: shape.joins(self.span[a], self.span[b])
                      for p, (a, b) in self.children.items()}
        #: per inner node and child, the pairs (q in the child, r in its sibling) whose
        #: events must come q's first, r's first, or be different events (same type)
        self.cross: dict[tuple[int, int], tuple[tuple, tuple, tuple]] = {}
        for p, (a, b) in self.children.items():
            for mine, other in ((a, b), (b, a)):
                pairs = [(q, r) for q in self.span[mine] for r in self.span[other]]
                self.cross[(p, mine)] = (
                    tuple((q, r) for q, r in pairs if shape.before[q][r]),
                    tuple((q, r) for q, r in pairs if shape.before[r][q]),
                    tuple((q, r) for q, r in pairs if shape.types[q] == shape.types[r]))

    def process(self, x: tuple, positions: list[int], key: Any, out: list) -> None:
        n = self.engine.shape.n
        for q in positions:
            node = self.leaf[q]
            fresh = [(tuple(x if r == q else None for r in range(n)), x[1], x[1])]
            while True:
                if node == self.root:
                    for slots, _, _ in fresh:
                        self.emit(slots, x[2], out)
                    break
                if len(self.span[node]) > 1:
                    self.stores.setdefault((key, node), []).extend(fresh)
                parent = self.parent[node]
                sib = next(c for c in self.children[parent] if c != node)
                fresh = self._join(fresh, self._held(key, sib, x[1]), parent, node, x[1])
                if not fresh:
                    break
                node = parent
                if node != self.root:
                    self.engine.counters.pm_created += len(fresh)

    def _held(self, key: Any, node: int, t: Any) -> Any:
        """The partial matches ``node`` holds for ``key`` (a leaf: the buffered events of
        its position from this plan's start on, within the window of ``t``)."""
        if len(self.span[node]) > 1:
            return self.stores.get((key, node), ())
        (q,) = self.span[node]
        buffer = self.engine.stream_state.buffers.get((key, q))
        if buffer is None:
            return ()
        n, window = self.engine.shape.n, self.engine.plan.window
        return [(tuple(y if r == q else None for r in range(n)), y[1], y[1])
                for y in buffer.between(self.start, math.inf, t - window, t + window)]

    def _join(self, fresh: list, other: list, parent: int, node: int, t: Any) -> list:
        """The partial matches of ``parent`` made of one of ``fresh`` (at ``node``) and
        one of ``other`` (the sibling's, all older)."""
        eng = self.engine
        window, vars_ = eng.plan.window, eng.shape.vars
        joins = self.joins[parent]
        mine_first, theirs_first, alike = self.cross[(parent, node)]
        made = []
        for a, alo, ahi in fresh:
            for b, blo, bhi in other:
                lo = alo if alo < blo else blo
                hi = ahi if ahi > bhi else bhi
                if hi - lo > window:
                    continue
                if any(a[q][0] >= b[r][0] for q, r in mine_first) or \
                        any(b[r][0] >= a[q][0] for q, r in theirs_first) or \
                        any(a[q][0] == b[r][0] for q, r in alike):
                    continue
                slots = tuple(s if s is not None else u for s, u in zip(a, b, strict=True))
                if joins:
                    bind = {vars_[q]: s[2] for q, s in enumerate(slots) if s is not None}
                    if not self.engine.check(joins, bind):
                        continue
                eng.counters.pm_extended += 1
                made.append((slots, lo, hi))
        return made

    def expire(self, oldest: Any) -> int:
        return _drop_older(self.stores, oldest)

    def live(self) -> int:
        return sum(len(s) for s in self.stores.values())


_RUNNERS: dict[str, Callable[..., _Runner]] = {"order": _OrderRunner, "tree": _TreeRunner}
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
                 adapt: dict[str, Any] | None = None):
        why = adaptive_problem(plan)
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
        self.algorithm = _ALGORITHMS[kind]
        self._set_counting(output)
        self.stream_state = self.fresh_state()

    def fresh_state(self) -> AdaptiveState:
        """The state before any event: the text-order plan, no statistics."""
        plan, kind = self.plan, self.kind
        text = Planned(kind, tuple(range(self.shape.n)) if kind == "order"
                       else _left_deep(self.shape.n), ())
        return AdaptiveState(
            Counters(), Statistics(plan),
            WindowStatistics(sorted(set(self.shape.types)), len(plan.preds),
                             self.options["window"]),
            [_RUNNERS[kind](self, text, 0)],
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
        positions = self.by_type.get(typ)
        if positions:
            key = plan.key_of(e)
            if key is not None:
                x = (seq, t, e)
                fit = [q for q in positions
                       if self.check(self.unary[q], {self.shape.vars[q]: e}, t)]
                if fit:
                    for q in fit:
                        self._sample_pairs(q, x, key)
                    for runner in st.runners:
                        runner.process(x, fit, key, out)
                    for q in fit:
                        buffer = st.buffers.get((key, q))
                        if buffer is None:
                            buffer = st.buffers[(key, q)] = _Buffer()
                        buffer.add(x)
        if t >= st.next_sweep:
            self._sweep(t)
        if t >= st.next_check:
            st.next_check = t + self.options["period"]
            self._adapt(seq, t)

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
        for at, buffer in list(st.buffers.items()):
            buffer.expire(oldest)
            if not buffer:
                del st.buffers[at]
        for runner in st.runners:
            st.counters.pm_dropped += runner.expire(oldest)
        st.runners = [r for r in st.runners if r.until is None or t - r.last_old_t <= window]

    # ------------------------------------------------------------------ adaptation
    def _adapt(self, seq: int, t: Any) -> None:
        """The detection-adaptation loop's step (Algorithm 1): ask D, plan, deploy."""
        st = self._state
        rep = st.report
        rep["checks"] += 1
        t0 = _time.perf_counter()
        stats = inputs(self.shape, st.window_stats, self.plan.window)
        first = not st.planned_once
        decide = first or (st.decide is not None and st.decide.check(stats))
        t1 = _time.perf_counter()
        rep["seconds_deciding"] += t1 - t0
        if not decide:
            return
        planned = self.algorithm(self.shape, stats)
        if st.decide is not None:
            st.decide.planned(planned, stats)
        st.planned_once = True
        rep["seconds_planning"] += _time.perf_counter() - t1
        rep["reoptimizations"] += not first
        current = st.runners[-1]
        if planned.plan == current.planned.plan:
            current.planned = planned
            return
        rep["replacements"] += 1
        rep["plans"].append(planned.describe(self.shape.vars))
        current.until, current.last_old_t = seq + 1, t
        st.runners.append(_RUNNERS[self.kind](self, planned, seq + 1))

    # ------------------------------------------------------------------ public
    def flush(self) -> list[dict]:
        return []

    def live_count(self) -> int:
        return sum(r.live() for r in self._state.runners)

    def statistics(self) -> dict[str, Any]:
        return {**self.stats.as_dict(), "window": self.window_section()}

    def window_section(self) -> dict[str, Any]:
        """The statistics over the sliding window (``session.statistics["window"]``)."""
        return self._state.window_stats.as_dict([p.text for p in self.plan.preds])

    def report(self) -> dict[str, Any]:
        """The plan in use, checks of D, re-optimisations, plan replacements, the
        seconds spent in D and in planning, and the plans deployed in turn."""
        st = self._state
        return {**st.report, "plan": st.runners[-1].planned.describe(self.shape.vars)}


def _left_deep(n: int) -> Any:
    """The text order as a left-deep tree: ((0, 1), 2), ..."""
    tree: Any = 0
    for q in range(1, n):
        tree = (tree, q)
    return tree
