"""The compiled plan of a pattern query: an automaton over the pattern's positions.

Execution model of the dissertation (§2.2.2, Figure 2.2): automaton states hold partial
matches; transitions carry the window guard, payload predicates and remote predicates;
accepting states emit complete matches.

Construction (position automaton, one state per positive pattern element):

* ``q0`` is the start; element ``j`` (in text order) is state ``q{j}``. A nested ``SEQ``
  is flattened; ``(p1 OR p2)`` gives one branch per alternative (every last state of an
  alternative leads to every first state of what follows).
* ``T+ v[]`` has a self-loop (``take``); ``SEQ(..)+`` a ``back`` transition from its last
  to its first element. Variables inside either are bound to the tuple of their events.
  Nesting repetitions, and ``OR`` inside ``SEQ(..)+``, are not supported.
* ``NEG T v`` is not a state: it guards every transition between its neighbours
  (``SEQ(A a, NEG B b, C c)``: ``a -> c`` unless a qualifying ``B`` came in between).
  ``NEG`` before the first element (``lead_negs``, per first state) or after the last
  (``trail_negs``, per accepting state) bounds the match's window instead
  (:mod:`cep_core.engine.negation`); ``NEG T+ v[]`` forbids a sequence of ``T`` events
  that satisfies ``v``'s predicates. The predicates of those NEG elements are all in
  ``neg_preds`` and are checked with the match's bindings.
* Each ``WHERE`` conjunct is placed at the earliest transition where all its variables
  are bound (SASE's predicate pushdown): on the transitions into the state of its latest
  variable; ``v[i]``/``v[i+1]`` predicates are checked incrementally on each new event of
  ``v``; predicates needing all of ``v``'s events (``v[last]``, ``v[1]``, ``v[m]``,
  ``LENGTH``, aggregates) on the transitions leaving ``v``'s repetition and at
  acceptance. Predicates without a lookup come first on a transition, so remote data is
  fetched only for partial matches that pass the local ones.
* ``SAME[attr]`` / ``SAME VALUE[attr]`` is the partition key; the window ``WITHIN`` is
  converted to stream time units (Definition 2.7: ``last.t − first.t ≤ τ``).

A predicate applies to the matches that bind all its variables (``SEQ(A a, (B b OR C c),
D d) WHERE b.x = d.x`` constrains only the matches through ``b``); one relating variables
that no match binds together (two ``OR`` alternatives) is an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cep_core.errors import LostAttribute, QueryError
from cep_core.expr import (
    VarInfo,
    index_range,
)
from cep_core.lang import ast
from cep_core.lookup import Lookup, LookupSet

__all__ = ["START", "Position", "Scope", "NegElem", "Pred", "Edge", "ReturnSpec", "Plan",
           "reachable", "dominators", "conjuncts_of", "flat_sequence_problem", "TIME_UNITS"]

START = -1
TIME_UNITS = ("ms", "s", "min", "h")


@dataclass
class Position:
    """A state of the automaton: the pattern element ``type var``."""

    index: int
    var: str
    type: str
    multi: bool = False
    kleene: bool = False
    scope: int | None = None
    accepting: bool = False
    pos: Any = None

    @property
    def name(self) -> str:
        return f"q{self.index + 1}"


@dataclass
class Scope:
    """A repetition: ``T+ v[]`` (``kind="kleene"``) or ``SEQ(..)+`` (``"group"``)."""

    index: int
    kind: str
    positions: tuple[int, ...] = ()


@dataclass
class NegElem:
    """``NEG type var`` (``kleene``: ``NEG type+ var[]``, no sequence of one or more such
    events that satisfies ``var``'s predicates)."""

    index: int
    var: str
    type: str
    pos: Any = None
    kleene: bool = False


@dataclass(eq=False)
class Pred:
    """A compiled ``WHERE`` conjunct. ``mode``: ``plain`` (no running index),
    ``incremental`` (``v[i..]`` checked for the newest event of ``anchor_var``) or
    ``universal`` (for every ``i``)."""

    index: int
    text: str
    fn: Callable
    irefs: tuple[tuple[str, int], ...]
    mode: str
    anchor_var: str | None
    anchor_offset: int
    vars: frozenset[str]
    attrs: tuple[tuple[str, str], ...]
    lookups: bool
    where: str = ""
    pos: Any = None
    optional: bool = False
    node: Any = None  # the conjunct's syntax tree (for engines that compile it again)

    def test(self, b: Mapping[str, Any]) -> bool:
        """Whether the bindings ``b`` satisfy the predicate. A reference past the end of a
        Kleene variable (``a[m]`` with fewer than m events), a division by zero or an
        aggregate of no values make it false; a missing attribute is an error, one that a
        placeholder event lacks makes it hold (:mod:`cep_core.approx.placeholders`). An
        ``optional`` predicate reads a variable that some paths to its transition do not
        bind (an ``OR`` alternative): it holds vacuously where that variable is unbound."""
        if self.optional and not self.vars <= b.keys():
            return True
        try:
            if self.mode == "plain":
                return bool(self.fn(b, None))
            lo, hi = index_range(self.irefs, b)
            if self.mode == "incremental":
                k = len(b[self.anchor_var]) - 1 - self.anchor_offset
                if k < lo or k > hi:
                    return True  # a[i+1] of the first event: nothing to relate yet
                return bool(self.fn(b, k))
            fn = self.fn
            for k in range(lo, hi + 1):
                if not fn(b, k):
                    return False
            return True
        except (IndexError, ZeroDivisionError):
            return False
        except LostAttribute:
            return True  # a placeholder's unknown value: taken as satisfied
        except KeyError as ex:
            raise QueryError(f"predicate {self.text}: an event has no attribute {ex}") \
                from None
        except TypeError as ex:
            raise QueryError(f"predicate {self.text}: {ex}") from None


@dataclass(eq=False)
class Edge:
    """A transition ``src -> dst`` taken by an event of ``dst``'s type; ``kind`` is
    ``begin`` (from q0), ``next``, ``take`` (Kleene self-loop) or ``back``
    (``SEQ(..)+``). ``negs`` are the guarding NEG elements, ``late`` their predicates
    that also read ``dst``'s variable; ``fresh`` and ``needs`` guard the transitions of an
    ``AND`` (:meth:`allows`)."""

    index: int
    src: int
    dst: int
    kind: str
    negs: tuple[int, ...] = ()
    preds: list[Pred] = field(default_factory=list)
    late: dict[int, list[Pred]] = field(default_factory=dict)
    fresh: frozenset[str] = frozenset()  # AND: variables still unbound (the next element's)
    needs: frozenset[str] = frozenset()  # AND: variables bound (every element's, to leave)

    def allows(self, bind: Mapping[str, Any]) -> bool:
        """Whether an ``AND`` lets a partial match with ``bind`` take this transition."""
        return not any(v in bind for v in self.fresh) and all(v in bind for v in self.needs)


@dataclass
class ReturnSpec:
    """``RETURN T(args)``: output ``type`` and ``(field name, f(bindings))`` pairs."""

    type: str
    fields: list[tuple[str, Callable]]
    texts: list[str]
    nodes: list[Any] = field(default_factory=list)  # the arguments' syntax trees
    count: str | None = None  # the field of COUNT(*): one output per completing event


class Plan:
    """The automaton of one pattern query with everything bound (see module doc)."""

    def __init__(self, query: ast.PatternQuery, params: Mapping[str, Any] | None,
                 remote: Lookup | Mapping[str, Any] | None, time_unit: str,
                 source: str):
        self.query, self.params, self.remote = query, dict(params or {}), remote
        self.time_unit, self.source = time_unit, source
        self.positions: list[Position] = []
        self.scopes: list[Scope] = []
        self.negs: list[NegElem] = []
        self.edges: list[Edge] = []
        self.preds: list[Pred] = []
        self.variables: dict[str, VarInfo] = {}
        self.accept_preds: dict[int, list[Pred]] = {}
        self.neg_early: dict[tuple[int, int], list[Pred]] = {}
        self.neg_watch: dict[int, dict[str, list[int]]] = {}
        self.neg_flag: dict[tuple[int, int], bool] = {}
        self.lead_negs: dict[int, tuple[int, ...]] = {}  # first state -> NEG ids before it
        self.trail_negs: dict[int, tuple[int, ...]] = {}  # accepting state -> NEG ids after
        self.neg_preds: dict[int, list[Pred]] = {}  # NEG id -> predicates (end or Kleene)
        self.conj_blocks: list[frozenset[int]] = []  # the positions of each AND
        self.accept_needs: dict[int, frozenset[str]] = {}  # accepting state -> AND variables
        self.out: dict[int, dict[str, list[Edge]]] = {}
        self.out_edges: dict[int, list[Edge]] = {}
        self.extendable: list[bool] = []
        self.partition: tuple[str, ...] = ()  # the SAME[..] items as text
        self.key_getters: list[Callable[[dict], Any]] = []  # an event's key, item by item
        self.window: float = math.inf
        self.returns: ReturnSpec | None = None
        self.stream_type: str | None = query.source
        self.lookups = LookupSet(self.params, remote)
        self.state_attrs: dict[int, list[tuple[str, str, str]]] = {}

    # ------------------------------------------------------------------ derived sets
    @property
    def types(self) -> frozenset[str]:
        return frozenset(p.type for p in self.positions)

    @property
    def neg_types(self) -> frozenset[str]:
        return frozenset(n.type for n in self.negs)

    @property
    def start_types(self) -> frozenset[str]:
        return frozenset(self.out[START])

    def key_of(self, e: Mapping[str, Any]) -> tuple | None:
        """The event's partition (its ``SAME[..]`` values; ``()`` without a key), or None
        when it lacks an attribute of the key (no partition takes it)."""
        getters = self.key_getters
        if not getters:
            return ()
        try:
            return tuple(get(e) for get in getters)
        except KeyError:
            return None

    # ------------------------------------------------------------------ explain
    def state_name(self, q: int) -> str:
        return "q0" if q == START else self.positions[q].name

    def explain(self, engine: str = "reference") -> str:
        """States, transitions with their predicates, the partition key, the window and
        the engine, as text."""
        w = self.query.within
        if w is None:
            window = "none (no WITHIN: partial matches never expire)"
        elif w.unit is None:
            window = f"{_fmt(self.window)} stream time units (WITHIN {_fmt(w.value)})"
        else:
            window = (f"{_fmt(self.window)} {self.time_unit} "
                      f"(WITHIN {_fmt(w.value)}{w.unit})")
        lines = [f"engine: {engine}",
                 f"window: {window}",
                 "partition key: " + (", ".join(self.partition) + " (SAME)"
                                      if self.partition else "none (one partition)")]
        if self.stream_type:
            lines.append(f"input: events of type {self.stream_type} (FROM .. STREAM)")
        lines.append("states:")
        lines.append("  q0  start")
        for p in self.positions:
            desc = f"{p.type} {p.var}" + ("+[]" if p.kleene else "")
            tags = []
            if p.kleene:
                tags.append("Kleene+")
            elif p.scope is not None:
                tags.append(f"in SEQ(..)+ #{p.scope}")
            if p.accepting:
                tags.append("accepting")
            lines.append(f"  {p.name}  {desc}" + (f"  ({', '.join(tags)})" if tags else ""))
        for n in self.negs:
            guarded = sorted({f"{self.state_name(e.src)}->{self.state_name(e.dst)}"
                              for e in self.edges if n.index in e.negs})
            roles = [f"guards {', '.join(guarded)}"] if guarded else []
            before = [self.state_name(q) for q, ids in self.lead_negs.items() if n.index in ids]
            after = [self.state_name(q) for q, ids in self.trail_negs.items() if n.index in ids]
            if before:
                roles.append(f"before {', '.join(before)}: none in [last.t - WITHIN, first.t)")
            if after:
                roles.append(f"after {', '.join(after)}: none in (last.t, first.t + WITHIN], "
                             "the match emitted when the window closes")
            what = f"NEG {n.type}+ {n.var}[]" if n.kleene else f"NEG {n.type} {n.var}"
            cond = [p.text for p in self.neg_preds.get(n.index, [])]
            lines.append(f"  {what}: {'; '.join(roles)}"
                         + (f" (with {' AND '.join(cond)})" if cond else ""))
        lines.append("transitions:")
        for e in sorted(self.edges, key=lambda e: (e.src, e.dst)):
            dst = self.positions[e.dst]
            head = (f"  {self.state_name(e.src)} -> {self.state_name(e.dst)}  on {dst.type}"
                    f"  [{e.kind}]")
            preds = [p.text + ("" if p.mode == "plain" else f" ({p.mode})") for p in e.preds]
            if e.fresh:
                preds.insert(0, f"{', '.join(sorted(e.fresh))} not yet bound (AND)")
            if e.needs:
                preds.insert(0, f"{', '.join(sorted(e.needs))} all bound (AND)")
            for nid in e.negs:
                neg = self.negs[nid]
                cond = [p.text for p in self.neg_early.get((e.src, nid), [])]
                cond += [p.text for p in e.late.get(nid, [])]
                if neg.kleene:
                    cond += [p.text for p in self.neg_preds.get(nid, [])]
                what = f"{neg.type}+ {neg.var}[]" if neg.kleene else f"{neg.type} {neg.var}"
                preds.append(f"no {what} in between"
                             + (f" with {' AND '.join(cond)}" if cond else ""))
            lines.append(head + ("  if " + "; ".join(preds) if preds else ""))
        if any(self.accept_preds.values()):
            lines.append("acceptance:")
            for q, preds in self.accept_preds.items():
                if preds:
                    lines.append(f"  {self.state_name(q)}: " + "; ".join(p.text for p in preds))
        if self.returns is not None:
            args = ", ".join(f"{n}={t}" for (n, _), t in zip(self.returns.fields,
                                                            self.returns.texts, strict=True))
            lines.append(f"return: {self.returns.type}({args})")
        else:
            lines.append("return: the bindings")
        return "\n".join(lines)


def _fmt(x: float) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def conjuncts_of(expr: Any) -> list[Any]:
    if expr is None:
        return []
    if isinstance(expr, ast.And):
        out = []
        for item in expr.items:
            out += conjuncts_of(item)
        return out
    return [expr]


def dominators(plan: Plan) -> dict[int, set[int]]:
    """``dom[q]``: the states on every path from q0 to q (q included)."""
    preds: dict[int, set[int]] = {p.index: set() for p in plan.positions}
    for e in plan.edges:
        preds[e.dst].add(e.src)
    everything = {START, *preds}
    dom = {START: {START}, **{q: set(everything) for q in preds}}
    changed = True
    while changed:
        changed = False
        for q in preds:
            incoming = [dom[p] for p in preds[q]]
            new = {q} | (set.intersection(*incoming) if incoming else set())
            if new != dom[q]:
                dom[q], changed = new, True
    return dom


def flat_sequence_problem(plan: Plan, negation: bool = False) -> str | None:
    """Why ``plan`` is not a flat ``SEQ`` of events and Kleene elements, each state
    following the one before (None when it is): what the vectorized engines run.
    ``negation``: ``NEG`` elements are allowed (they add no state)."""
    if plan.negs and not negation:
        return "NEG"
    if plan.conj_blocks:
        return "AND"
    if any(s.kind == "group" for s in plan.scopes):
        return "SEQ(..)+"
    n = len(plan.positions)
    for e in plan.edges:
        linear = (e.kind == "begin" and e.src == START and e.dst == 0) or \
            (e.kind == "next" and e.dst == e.src + 1) or (e.kind == "take" and e.dst == e.src)
        if not linear:
            return "OR (the pattern is not a flat SEQ)"
    if sum(e.kind == "begin" for e in plan.edges) != 1 or not plan.positions[n - 1].accepting \
            or any(p.accepting for p in plan.positions[:-1]):
        return "OR (the pattern is not a flat SEQ)"
    return None


def reachable(plan: Plan) -> dict[int, set[int]]:
    """``reach[p]``: the states reachable from p by one or more transitions."""
    succ: dict[int, set[int]] = {p.index: set() for p in plan.positions}
    for e in plan.edges:
        if e.src != START:
            succ[e.src].add(e.dst)
    reach = {}
    for p in succ:
        seen, todo = set(), list(succ[p])
        while todo:
            q = todo.pop()
            if q not in seen:
                seen.add(q)
                todo.extend(succ[q])
        reach[p] = seen
    return reach
