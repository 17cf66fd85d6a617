"""The adaptive order plan of a sequence run over batches of events with arrays
(US 11,693,862 B2, Algorithm 1, the detection-adaptation loop, with Algorithm 2's
order-based plans; **patented**, see the package).

:class:`~cep_core.adaptive.engine.AdaptiveEngine` runs the loop event by event and its
plans partial match by partial match. This engine runs the same loop over a batch at
once:

* **Statistics** per batch (:mod:`cep_core.adaptive.batch_statistics`): the arrivals of
  each type, the predicates on one position evaluated over the batch's events of its
  type, the predicates between two positions over disjoint pairs of them.
* **Checks of D** at the events where the per-event loop makes them: the first once the
  statistics window has filled (at the first event at or after the first event's time
  + window), then at the first event at or after the last check's time + ``period``
  (events of any type count; the statistics are those of the events up to the check). The
  estimates at every check of a batch are read at once; D
  (:mod:`cep_core.adaptive.decision`) is asked at each in turn, and a new plan
  (:func:`~cep_core.adaptive.planning.greedy_order`) is built when it says so.
* **The plan's evaluation** (:mod:`cep_core.adaptive.array_join`): the plan chosen at a
  check evaluates the matches whose last event comes after it, up to the next check
  that replaces it; each order a batch's plans take makes one join over all the ranges
  where it is the plan. So every
  match is evaluated once, by the plan current at its last event (the patent's
  migration needs no partial matches moved: a join keeps none between batches, only
  the window's events), and the matches are exactly the text-order plan's (a join
  finds the same matches in any order).

It runs a ``SEQ`` of single events (no ``AND``, ``NEG`` or Kleene element, which the
per-event engine runs) whose predicates :mod:`cep_core.engine.vectorize` compiles and
read no lookup, without ``COUNT(*)`` (:func:`array_problem`). Outputs are those of the
text-order engines, in the order of their last events.

The counters ``pm_created``, ``pm_extended`` and ``predicates`` and the statistics'
``pred_evaluated`` and ``pred_passed`` are tallied from the joins' levels (and the
samples): they depend on how the stream is cut into batches and on the plans, unlike
the matches, the plans and the sliding-window estimates, which do not.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cep_core.adaptive.array_join import ColumnValues, OrderJoin, WindowEvents, span_margin
from cep_core.adaptive.batch_statistics import BatchStatistics, Snapshot, adjacent_pairs
from cep_core.adaptive.decision import decision, decision_report, replan
from cep_core.adaptive.pattern import Shape, adaptive_problem, branches_of, shape_of
from cep_core.adaptive.planning import Planned, greedy_order, inputs
from cep_core.counters import Counters
from cep_core.engine.keyed_plan import parameter_tables
from cep_core.engine.matching import ANY, Statistics, match_record
from cep_core.engine.protocol import EngineBase
from cep_core.engine.state import nbytes
from cep_core.engine.vectorize import Unsupported, VectorCompiler, passes
from cep_core.errors import QueryError
from cep_core.plan import Plan

__all__ = ["ArrayOrderEngine", "ArrayState", "array_problem"]


def _compiled(plan: Plan) -> dict[int, Any]:
    """The plan's predicates compiled to numpy, by index (raises Unsupported); compiled
    once per plan, as the keyed engine's (:func:`cep_core.engine.keyed_plan.keyed_plan`);
    what it did not compile is kept as its message, raised anew each time."""
    got = getattr(plan, "_array_compiled", None)
    if got is None:
        try:
            got = _compile(plan)
        except Unsupported as ex:
            got = str(ex)
        plan._array_compiled = got
    if isinstance(got, str):
        raise Unsupported(got)
    return got


def _compile(plan: Plan) -> dict[int, Any]:
    vc = VectorCompiler(plan.variables, plan.params, parameter_tables(plan), plan.time_unit)
    out = {}
    for p in plan.preds:
        if p.mode != "plain" or p.optional or p.lookups:
            raise Unsupported(f"predicate {p.text}")
        fn, refs = vc.compile(p.node, 0)
        if any(r[0] != "attr" or r[2] != "single" for r in refs):
            raise Unsupported(f"predicate {p.text}")
        out[p.index] = fn
    return out


def array_problem(plan: Plan, output: str = "events") -> str | None:
    """Why :class:`ArrayOrderEngine` does not run ``plan`` (None when it does); the
    per-event engine runs it then."""
    why = adaptive_problem(plan)
    if why is not None or len(branches_of(plan.query.pattern)) > 1:
        return why or "a disjunction (its branches run event by event)"
    shape = shape_of(plan)
    if shape.kleene or shape.guards or plan.negs:
        return "a Kleene element or NEG"
    if any(not shape.before[q][q + 1] for q in range(shape.n - 1)):
        return "an AND (the array join orders a sequence)"
    if output == "events" and plan.returns is not None and plan.returns.count is not None:
        return "COUNT(*)"
    try:
        _compiled(plan)
    except Unsupported as ex:
        return f"a predicate numpy does not evaluate ({ex})"
    return None


@dataclass
class ArrayState:
    """What the engine keeps of the stream: the ``counters`` and ``stats``, the window's
    events (``events``, :class:`~cep_core.adaptive.array_join.WindowEvents`), the
    sliding-window statistics, the plan in use, D (None without adaptation), the report
    so far, the partition codes given so far, the time of the next check and whether a
    plan was chosen yet, and per predicate between two positions the events left
    waiting for its samples (one per partition). It pickles; :attr:`nbytes` sizes it."""

    counters: Counters
    stats: Statistics
    events: WindowEvents
    window_stats: BatchStatistics
    planned: Planned
    decide: Any
    report: dict[str, Any]
    codes: dict[Any, int] = field(default_factory=dict)
    unpaired: dict[int, Any] = field(default_factory=dict)
    next_check: Any = None
    planned_once: bool = False

    @property
    def nbytes(self) -> int:
        """The bytes it holds (:func:`~cep_core.engine.state.nbytes`)."""
        return nbytes(self)


class ArrayOrderEngine(EngineBase):
    """Runs a plan :func:`array_problem` accepts under skip-till-any-match with an
    adaptive order plan over batches of events (module doc); ``adapt`` as
    :func:`~cep_core.adaptive.engine.adapt_options` checks it (passed checked)."""

    reports = "adaptation"
    name = "adaptive-order"

    def __init__(self, plan: Plan, output: str, options: dict[str, Any]):
        why = array_problem(plan, output)
        if why is not None:
            raise QueryError(f"the array join does not apply: {why}")
        self.plan, self.output, self.options = plan, output, options
        self.policy = ANY
        self.shape: Shape = shape_of(plan)
        self.compiled = _compiled(plan)
        self.types = sorted(set(self.shape.types))
        #: per position, the predicates on it alone; per two positions, those between them
        self.unary = [[(p.index, self.compiled[p.index]) for p in self.shape.unary(q)]
                      for q in range(self.shape.n)]
        self.pairs = [(p.index, tuple(sorted(at))) for p, at in self.shape.preds
                      if len(at) == 2]
        #: the attributes the predicates read, each with the types of the positions
        #: that read it
        at = {v: q for q, v in enumerate(self.shape.vars)}
        self.attrs: dict[str, set[str]] = {}
        for p in plan.preds:
            for v, a in p.attrs:
                self.attrs.setdefault(a, set()).add(self.shape.types[at[v]])
        self.position = {v: q for q, v in enumerate(self.shape.vars)}
        #: the joins of the orders planned so far (kept with the plan, as its predicates)
        self._joins: dict[tuple, OrderJoin] = plan.__dict__.setdefault("_array_joins", {})
        self.stream_state = self.fresh_state()

    def fresh_state(self) -> ArrayState:
        """The state before any event: the text-order plan, no statistics."""
        text = Planned("order", tuple(range(self.shape.n)), ())
        return ArrayState(
            Counters(), Statistics(self.plan), WindowEvents(self.shape.n,
                                                            bool(self.plan.partition)),
            BatchStatistics(self.types, len(self.plan.preds), self.options["window"]),
            text, decision(self.options) if self.options["method"] is not None else None,
            {"checks": 0, "reoptimizations": 0, "replacements": 0, "seconds_deciding": 0.0,
             "seconds_planning": 0.0, "plans": [text.describe(self.shape.vars)]})

    @property
    def stream_state(self) -> ArrayState:
        """What the engine keeps of the stream; a fresh engine of the same compiled query
        takes one."""
        return self._state

    @stream_state.setter
    def stream_state(self, state: ArrayState) -> None:
        self._state = state

    @property
    def counters(self) -> Counters:  # type: ignore[override]
        return self._state.counters

    @property
    def stats(self) -> Statistics:
        return self._state.stats

    # ------------------------------------------------------------------ batches
    def feed_batch(self, events: Any) -> list[dict]:
        st, plan = self._state, self.plan
        if plan.stream_type is not None:
            events = [e for e in events if e["type"] == plan.stream_type]
        if not events:
            return []
        self._count(events)
        typeset = self.shape.types
        pick = [i for i, e in enumerate(events) if e["type"] in typeset]
        codes = None
        if plan.partition:
            keys = [plan.key_of(events[i]) for i in pick]
            pick = [i for i, k in zip(pick, keys, strict=True) if k is not None]
            codes = np.array([st.codes.setdefault(k, len(st.codes)) for k in keys
                              if k is not None], dtype=np.int64)
        mine = [events[i] for i in pick]
        w = st.events
        first = w.end
        times = np.array([e["time"] for e in mine], dtype=float)
        kinds = [e["type"] for e in mine]
        cols = {a: _column(mine, a, kinds, read) for a, read in self.attrs.items()}
        at = self._positions(kinds, cols, first, times)
        w.append(times, codes, cols, mine, at)
        self._sample(kinds, times, first, at)
        every = np.array([e["time"] for e in events], dtype=float)
        rows = self._evaluate(first, every, np.array(pick, dtype=np.int64))
        out = self._outputs(rows)
        now = every[-1]
        w.trim(now - span_margin(now, plan.window))
        st.window_stats.trim(now)
        return out

    def _count(self, events: list[dict]) -> None:
        """The counters and per-query statistics of a batch's events."""
        st = self._state
        st.counters.events += len(events)
        s = st.stats
        for typ, k in Counter(e["type"] for e in events).items():
            s.events_per_type[typ] = s.events_per_type.get(typ, 0) + k
        if s.first_time is None:
            s.first_time = events[0]["time"]
        s.last_time = events[-1]["time"]

    def _positions(self, kinds: list[str], cols: dict[str, np.ndarray], first: int,
                   times: np.ndarray) -> list[np.ndarray]:
        """Per position, the stream positions of the batch's events of its type that
        pass its predicates on one position (each evaluated on all of them: a sample
        of its selectivity)."""
        st = self._state
        kinds_arr = np.array(kinds, dtype=object)
        seqs = first + np.arange(times.size)
        out = []
        for q, typ in enumerate(self.shape.types):
            mask = kinds_arr == typ
            ok = mask.copy()
            for index, fn in self.unary[q]:
                values = _BatchValues(cols, mask)
                got = passes(fn(values), values.size)
                self._tally(index, values.size, int(got.sum()))
                st.window_stats.sampled(index, seqs[mask], times[mask], got)
                ok[mask] &= got
            out.append(seqs[ok])
        return out

    def _sample(self, kinds: list[str], times: np.ndarray, first: int,
                at: list[np.ndarray]) -> None:
        """The batch's arrivals per type, and samples of each predicate between two
        positions over disjoint pairs of their events (module doc)."""
        st = self._state
        w, ws = st.events, st.window_stats  # (the batch is in w already)
        kinds_arr = np.array(kinds, dtype=object)
        seqs = first + np.arange(len(kinds))
        for typ in self.types:
            mask = kinds_arr == typ
            ws.arrivals(typ, seqs[mask], times[mask])
        for index, (q, r) in self.pairs:
            a, b, st.unpaired[index] = adjacent_pairs(
                at[q], at[r], first, times, None if w.codes is None else w.codes[first - w.base:],
                st.unpaired.get(index), self.plan.window)
            if not a.size:
                continue
            rows = np.full((a.size, self.shape.n), -1, dtype=np.int64)
            rows[:, q], rows[:, r] = a, b
            got = passes(self.compiled[index](ColumnValues(w, rows, self.position)), a.size)
            st.counters.predicates += a.size
            later = np.maximum(a, b)
            ws.sampled(index, later, w.times[later - w.base], got)

    def _evaluate(self, first: int, every: np.ndarray, pick: np.ndarray) -> np.ndarray:
        """The batch's matches (rows of stream positions, by last event), each evaluated
        by the plan current at its last event; D asked at the batch's checks (``every``:
        the times of all the batch's events, ``pick``: the indexes among them of those
        the window keeps, from stream position ``first`` on)."""
        st = self._state
        checks = self._checks(every)
        # after a check, the window's events up to it: the plan applies from the next
        upto = first + np.searchsorted(pick, checks, side="right")
        snaps = st.window_stats.at(upto - 1, every[checks]) if checks.size else []
        ranges: dict[tuple, list] = {}  # per order, where it is the plan
        start = first
        for j, snap in zip(upto.tolist(), snaps, strict=True):
            order = st.planned.plan
            if self._adapt(snap) and st.planned.plan != order and j > start:
                ranges.setdefault(order, []).append((start, j))
                start = j
        ranges.setdefault(st.planned.plan, []).append((start, first + pick.size))
        parts = [self._matches(order, np.array(r, dtype=np.int64))
                 for order, r in ranges.items()]
        if len(parts) == 1:
            return parts[0]
        rows = np.concatenate(parts)  # one join per order, whatever its ranges
        return rows[np.argsort(rows[:, -1], kind="stable")]

    def _checks(self, times: np.ndarray) -> np.ndarray:
        """The indexes of the batch's events (their ``times``) at which D is asked
        (module doc)."""
        st, opts = self._state, self.options
        if st.next_check is None:
            st.next_check = times[0] + opts["window"]
        found = []
        j = 0
        while True:
            j = int(np.searchsorted(times, st.next_check, side="left"))
            if j >= times.size:
                break
            found.append(j)
            st.next_check = times[j] + opts["period"]
        return np.array(found, dtype=np.int64)

    def _adapt(self, snap: Snapshot) -> bool:
        """One step of the detection-adaptation loop (Algorithm 1) at a check: ask D,
        plan; whether a plan was built."""
        st = self._state
        planned = replan(st.decide, not st.planned_once,
                         lambda: inputs(self.shape, snap, self.plan.window),
                         lambda stats: greedy_order(self.shape, stats), st.report)
        if planned is None:
            return False
        st.planned_once = True
        rep = st.report
        if planned.plan != st.planned.plan:
            rep["replacements"] += 1
            rep["plans"].append(planned.describe(self.shape.vars))
        st.planned = planned
        return True

    def _join(self, order: tuple[int, ...]) -> OrderJoin:
        """The join of ``order``, compiled once."""
        join = self._joins.get(order)
        if join is None:
            shape = self.shape
            checks = [[(p.index, self.compiled[p.index])
                       for p in shape.checks(frozenset(order[:i]), q)]
                      for i, q in enumerate(order)]
            join = self._joins[order] = OrderJoin(order, shape.n, self.plan.window,
                                                  checks, shape.vars)
        return join

    def _matches(self, order: tuple[int, ...], ranges: np.ndarray) -> np.ndarray:
        st = self._state
        rows, made = self._join(order).matches(st.events, ranges, self._tally)
        st.counters.pm_created += made
        st.counters.pm_extended += made + rows.shape[0]
        return rows

    def _tally(self, index: int, evaluated: int, passed: int) -> None:
        st = self._state
        st.counters.predicates += evaluated
        st.stats.pred_evaluated[index] += evaluated
        st.stats.pred_passed[index] += passed

    def _outputs(self, rows: np.ndarray) -> list[dict]:
        """The records of the matches ``rows``, each at its last event's time."""
        if not rows.shape[0]:
            return []
        st = self._state
        w = st.events
        events, base, vars_ = w.events, w.base, self.shape.vars
        st.counters.outputs += rows.shape[0]
        picked = (rows - base).tolist()
        if self.output == "matches":
            return [{v: events[i]["id"] for v, i in zip(vars_, row, strict=True)}
                    for row in picked]
        return [match_record(self.plan, self.output,
                             {v: events[i] for v, i in zip(vars_, row, strict=True)},
                             events[row[-1]]["time"]) for row in picked]

    # ------------------------------------------------------------------ public
    def live_count(self) -> int:
        """No partial match lives between batches (the window's events do)."""
        return 0

    def settled(self) -> bool:
        """:meth:`flush` emits nothing (no trailing ``NEG``)."""
        return True

    def statistics(self) -> dict[str, Any]:
        return {**self.stats.as_dict(), "window": self.window_section()}

    def window_section(self) -> dict[str, Any]:
        """The statistics over the sliding window as of the last event."""
        st = self._state
        w = st.events
        texts = [p.text for p in self.plan.preds]
        if not w.times.size:
            return Snapshot(st.window_stats.window, {t: 1 / st.window_stats.window
                                                     for t in self.types},
                            [0.5] * len(texts)).as_dict(texts)
        last = np.array([w.end - 1])
        return st.window_stats.at(last, w.times[-1:])[0].as_dict(texts)

    def report(self) -> dict[str, Any]:
        """As :meth:`cep_core.adaptive.engine.AdaptiveEngine.report`."""
        st = self._state
        return {**st.report, "plan": st.planned.describe(self.shape.vars),
                **decision_report(st.decide)}


def _column(events: list[dict], attr: str, kinds: list[str], read_by: set[str]) -> np.ndarray:
    """One attribute of the events as an array; NaN for an event without it, unless its
    type is that of a position whose predicates read it (an error, as the text-order
    engines raise when they evaluate such a predicate)."""
    missing = object()
    values = [e.get(attr, missing) for e in events]
    if any(v is missing for v in values):
        bad = {k for v, k in zip(values, kinds, strict=True) if v is missing} & read_by
        if bad:
            raise QueryError(f"an event of type {sorted(bad)[0]} has no attribute "
                             f"'{attr}' that a predicate reads")
        values = [math.nan if v is missing else v for v in values]
    return np.array(values)


class _BatchValues:
    """What a predicate on one position reads: the batch's columns at ``mask``."""

    __slots__ = ("cols", "mask", "size", "deferred")

    def __init__(self, cols: dict[str, np.ndarray], mask: np.ndarray):
        self.cols, self.mask = cols, mask
        self.size = int(mask.sum())
        self.deferred = None

    def ref(self, key: tuple) -> tuple[Any, Any]:
        return self.cols[key[3]][self.mask], None


