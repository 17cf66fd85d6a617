"""What every engine shares: the selection policies and start options, partial matches
(:class:`PM`) and what a state filter sees of them (:class:`PMView`), predicate checks, the
output record of a complete match, ``COUNT(*)`` merging and the statistics.

The semantics these serve are the reference engine's (:mod:`cep_core.engine.reference`;
dissertation §2.2.2, Definition 2.7 and Table 2.4).
"""

from __future__ import annotations

from typing import Any, cast

from cep_core.approx.placeholders import Placeholder
from cep_core.counters import Counters
from cep_core.engine.protocol import StepFeeding
from cep_core.errors import LostAttribute, QueryError
from cep_core.plan import Plan, ReturnSpec

__all__ = ["ANY", "NEXT", "STRICT", "POLICIES", "EVERY_EVENT", "ONE_PER_PARTITION", "RUNS",
           "OUTPUTS", "PM", "PMView", "CountMerging", "Statistics", "check_options",
           "check_predicates", "match_ids", "match_record", "merge_counts", "real_events"]

ANY, NEXT, STRICT = "skip-till-any-match", "skip-till-next-match", "strict-contiguity"
POLICIES = (ANY, NEXT, STRICT)
EVERY_EVENT, ONE_PER_PARTITION = "every-event", "one-per-partition"
RUNS = (EVERY_EVENT, ONE_PER_PARTITION)
OUTPUTS = ("events", "matches")


class PM:
    """A partial match: automaton ``state``, bindings ``bind`` (var -> event, or tuple of
    events for a Kleene variable), time of its first event, NEG candidates since it
    entered its state."""

    __slots__ = ("state", "bind", "first_t", "cands", "blocked", "err")

    def __init__(self, state: int, bind: dict, first_t: Any, parent: PM | None = None):
        self.state, self.bind, self.first_t = state, bind, first_t  # (parent: see _new_pm)
        self.cands: dict[int, list] | None = None
        self.blocked: set[int] | None = None
        self.err = 0  # elements inserted so far (approximate matching)

    def __getstate__(self):
        return (self.state, self.bind, self.first_t, self.cands, self.blocked, self.err)

    def __setstate__(self, s):
        self.state, self.bind, self.first_t, self.cands, self.blocked, self.err = s


def match_ids(bind: dict) -> dict[str, Any]:
    """The event ids of the bindings ``bind``: var -> id, or a list of ids for a Kleene
    variable."""
    return {v: [x["id"] for x in e] if isinstance(e, tuple) else e["id"]
            for v, e in bind.items()}


def real_events(bind: dict) -> dict:
    """``bind`` without placeholders (:mod:`cep_core.approx.placeholders`): a variable
    bound to one is left out, a Kleene variable keeps its real events."""
    if not any(type(x) is Placeholder for e in bind.values()
               for x in (e if isinstance(e, tuple) else (e,))):
        return bind
    out = {}
    for v, e in bind.items():
        if isinstance(e, tuple):
            out[v] = tuple(x for x in e if type(x) is not Placeholder)
        elif type(e) is not Placeholder:
            out[v] = e
    return out


def check_predicates(preds, b: dict, counters: Counters, stats: Statistics) -> bool:
    """Whether the bindings ``b`` pass every predicate of ``preds`` (in order, stopping at
    the first that fails), counting each one evaluated and passed."""
    for p in preds:
        counters.predicates += 1
        stats.pred_evaluated[p.index] += 1
        if not p.test(b):
            return False
        stats.pred_passed[p.index] += 1
    return True


def merge_counts(plan: Plan, out: list, n0: int) -> None:
    """For a ``RETURN .. COUNT(*)`` query: the outputs of one event from ``out[n0]`` on
    (one per match, counting 1) become one per output time, their counts summed."""
    field = cast(ReturnSpec, plan.returns).count  # a RETURN .. COUNT(*) query has one
    merged: dict[Any, dict] = {}
    for rec in out[n0:]:
        first = merged.setdefault(rec["time"], rec)
        if first is not rec:
            first[field] += rec[field]
    out[n0:] = list(merged.values())


class CountMerging(StepFeeding):
    """Base of the engines that take one event at a time: :meth:`process` runs the
    engine's ``_process`` on one event and, for a ``RETURN .. COUNT(*)`` query, merges
    that event's outputs with :func:`merge_counts`."""

    plan: Plan
    stats: Statistics
    _counting: bool  # set by :meth:`_set_counting`

    def _set_counting(self, output: str) -> None:
        ret = self.plan.returns
        self._counting = output == "events" and ret is not None and ret.count is not None

    def _process(self, e: dict, out: list) -> None:
        raise NotImplementedError

    def statistics(self) -> dict[str, Any]:
        return self.stats.as_dict()

    def process(self, e: dict, out: list) -> None:
        """Process one event; the matches it completes are appended to ``out`` (for a
        ``COUNT(*)`` query, one output with their number)."""
        n0 = len(out)
        self._process(e, out)
        if self._counting and len(out) > n0 + 1:
            merge_counts(self.plan, out, n0)


def match_record(plan: Plan, output: str, bind: dict, t: Any) -> dict:
    """The output of the complete match ``bind`` detected at time ``t``: its event ids
    (``output="matches"``), the RETURN event (with ``time`` = ``t`` unless RETURN gives
    one) or, without RETURN, the bindings. May raise NotYet if RETURN reads a lookup."""
    if output == "matches":
        return match_ids(bind)
    ret = plan.returns
    if ret is None:
        return {v: list(e) if isinstance(e, tuple) else e for v, e in bind.items()}
    rec: dict[str, Any] = {"type": ret.type}
    for name, fn in ret.fields:
        try:
            rec[name] = fn(bind)
        except LostAttribute:  # a value a placeholder does not carry
            rec[name] = None
    if "time" not in rec:
        rec["time"] = t
    return rec


class PMView:
    """What a state filter sees of a live PM: ``state`` (automaton state number, 1-based
    as in ``explain``), ``var`` (its latest pattern variable), ``age`` (now − time of its
    first event), ``values`` ({"var.attr": value} for the attributes its pending
    predicates read; the latest event of a Kleene variable), ``partition`` and
    ``bindings`` (event ids)."""

    __slots__ = ("pm", "state", "var", "age", "values", "partition")

    def __init__(self, pm: PM, plan: Plan, now: Any, partition: Any):
        self.pm, self.state, self.partition = pm, pm.state + 1, partition
        self.var = plan.positions[pm.state].var
        self.age = now - pm.first_t
        values = {}
        for label, v, a in plan.state_attrs.get(pm.state, ()):
            ev = pm.bind.get(v)
            if isinstance(ev, tuple):
                ev = ev[-1] if ev else None
            if ev is not None:
                values[label] = ev.get(a)
        self.values = values

    @property
    def bindings(self) -> dict[str, Any]:
        return match_ids(self.pm.bind)

    def __repr__(self) -> str:
        return f"PMView(q{self.state}, age={self.age}, {self.bindings})"


class Statistics:
    """Per-query statistics: events per type (and their rate over the time seen), events
    dropped by the input filter, lookups that answered "not yet", and per predicate how
    often it was evaluated and passed."""

    def __init__(self, plan: Plan):
        self.events_per_type: dict[str, int] = {}
        self.first_time: Any = None
        self.last_time: Any = None
        self.filtered = 0
        self.pending = 0
        self.pred_evaluated = [0] * len(plan.preds)
        self.pred_passed = [0] * len(plan.preds)
        self._texts = [(p.text, p.where) for p in plan.preds]

    def event(self, typ: str, t: Any) -> None:
        self.events_per_type[typ] = self.events_per_type.get(typ, 0) + 1
        if self.first_time is None:
            self.first_time = t
        self.last_time = t

    def as_dict(self) -> dict[str, Any]:
        span = (self.last_time - self.first_time) if self.first_time is not None else 0
        return {
            "events_per_type": dict(self.events_per_type),
            "rate_per_type": {k: (v / span if span else None)
                              for k, v in self.events_per_type.items()},
            "time_span": span,
            "filtered": self.filtered,
            "pending_lookups": self.pending,
            "predicates": [
                {"predicate": text, "at": where, "evaluated": n, "passed": m,
                 "pass_rate": (m / n if n else None)}
                for (text, where), n, m in zip(self._texts, self.pred_evaluated,
                                               self.pred_passed, strict=True)],
        }


def check_options(policy: str, runs: str) -> None:
    """A clear error for an unknown selection policy or ``runs`` option."""
    if policy not in POLICIES:
        raise QueryError(f"unknown selection policy {policy!r}; one of {', '.join(POLICIES)}")
    if runs not in RUNS:
        raise QueryError(f"unknown runs option {runs!r}; one of {', '.join(RUNS)}")
