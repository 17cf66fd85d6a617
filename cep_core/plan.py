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

from cep_core.errors import LostAttribute, QueryError, QuerySemanticError
from cep_core.events import unique_names
from cep_core.expr import (
    ExprCompiler,
    VarInfo,
    convert_time,
    index_range,
    key_getters,
    partition_key,
    walk,
)
from cep_core.lang import ast
from cep_core.lookup import Lookup, LookupSet

__all__ = ["START", "Position", "Scope", "NegElem", "Pred", "Edge", "ReturnSpec", "Plan",
           "build_plan", "reachable", "flat_sequence_problem", "TIME_UNITS"]

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

    def __reduce__(self):
        return (build_plan, (self.query, self.params, self.remote, self.time_unit,
                             self.source))

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


# --------------------------------------------------------------------------- building
class _Builder:
    def __init__(self, plan: Plan):
        self.plan = plan
        self._edge_keys: dict[tuple, Edge] = {}
        self.exit_needs: dict[int, frozenset[str]] = {}  # last states of an AND's elements

    def error(self, message: str, node: Any = None) -> QuerySemanticError:
        return QuerySemanticError(message, getattr(node, "pos", None), self.plan.source)

    def _register(self, name: str, info: VarInfo, node: Any) -> None:
        if name in self.plan.variables:
            raise self.error(f"variable '{name}' is bound twice in the pattern", node)
        self.plan.variables[name] = info

    def edge(self, src: int, dst: int, kind: str, negs: tuple[int, ...],
             fresh: frozenset[str] = frozenset()) -> None:
        negs = tuple(dict.fromkeys(negs))
        needs = self.exit_needs.get(src, frozenset())
        if any(dst in block and src in block for block in self.plan.conj_blocks):
            needs = frozenset()  # between two elements of the same AND
        key = (src, dst, kind, negs, fresh, needs)
        if key not in self._edge_keys:
            e = Edge(len(self.plan.edges), src, dst, kind, negs, fresh=fresh, needs=needs)
            self.plan.edges.append(e)
            self._edge_keys[key] = e

    def conj(self, node: ast.Conj, scope: int | None) -> tuple[list, list]:
        """``AND(p1, ..., pn)``: each element built alone; from the last state of one
        element to the first of another that is still unbound (``fresh``); out of the last
        states only with every element bound (``needs``, :attr:`exit_needs`)."""
        plan = self.plan
        if scope is not None:
            raise self.error("AND inside SEQ(..)+ is not supported", node)
        if len(node.items) < 2:
            raise self.error("AND(..) needs at least two elements", node)
        begin = len(plan.positions)
        parts = []
        for item in node.items:
            bad = next((x for x in walk(item) if isinstance(x, ast.OrPattern | ast.Conj)
                        or getattr(x, "negated", False) or getattr(x, "kleene", False)), None)
            if bad is not None:
                what = ("NEG" if getattr(bad, "negated", False) else "OR"
                        if isinstance(bad, ast.OrPattern) else "AND"
                        if isinstance(bad, ast.Conj) else "Kleene+")
                raise self.error(f"{what} inside AND(..) is not supported: its elements are "
                                 "events or SEQs of events", bad)
            start = len(plan.positions)
            first, last = self.build(item, scope)
            parts.append((first, last, range(start, len(plan.positions))))
        plan.conj_blocks.append(frozenset(range(begin, len(plan.positions))))
        names = [frozenset(plan.positions[q].var for q in span) for _, _, span in parts]
        for i, (_, last_i, _) in enumerate(parts):
            for j, (first_j, _, _) in enumerate(parts):
                if i != j:
                    for p, na in last_i:
                        for q, nb in first_j:
                            self.edge(p, q, "next", na + nb, fresh=names[j])
        every = frozenset().union(*names)
        last = [entry for _, last_i, _ in parts for entry in last_i]
        for p, _ in last:
            self.exit_needs[p] = every
        return [entry for first_i, _, _ in parts for entry in first_i], last

    def build(self, node: Any, scope: int | None) -> tuple[list, list]:
        """Returns (first, last): lists of (position, NEG ids before/after it)."""
        plan = self.plan
        if isinstance(node, ast.EventElem):
            if node.negated:
                raise self.error(f"NEG {node.type} {node.var} must be an element of a SEQ",
                                 node)
            p = Position(len(plan.positions), node.var, node.type,
                         multi=node.kleene or scope is not None, kleene=node.kleene,
                         scope=scope, pos=node.pos)
            if node.kleene:
                if scope is not None:
                    raise self.error(f"Kleene+ '{node.type}+ {node.var}[]' inside SEQ(..)+ "
                                     "is not supported (nested repetition)", node)
                s = Scope(len(plan.scopes), "kleene", (p.index,))
                plan.scopes.append(s)
                p.scope = s.index
            plan.positions.append(p)
            self._register(node.var, VarInfo(node.var, p.multi, p.scope, False, p.index), node)
            if node.kleene:
                self.edge(p.index, p.index, "take", ())
            return [(p.index, ())], [(p.index, ())]
        if isinstance(node, ast.Conj):
            return self.conj(node, scope)
        if isinstance(node, ast.OrPattern):
            if scope is not None:
                raise self.error("OR inside SEQ(..)+ is not supported", node)
            first: list = []
            last: list = []
            for alt in node.alternatives:
                f, lst = self.build(alt, scope)
                first += f
                last += lst
            return first, last
        if isinstance(node, ast.Seq):
            inner = scope
            if node.kleene:
                if scope is not None:
                    raise self.error("SEQ(..)+ inside SEQ(..)+ is not supported (nested "
                                     "repetition)", node)
                group = Scope(len(plan.scopes), "group")
                plan.scopes.append(group)
                inner = group.index
                begin = len(plan.positions)
            pending: list[int] = []
            first, last = None, None
            for item in node.items:
                if isinstance(item, ast.EventElem) and item.negated:
                    n = NegElem(len(plan.negs), item.var, item.type, item.pos, item.kleene)
                    plan.negs.append(n)
                    self._register(item.var, VarInfo(item.var, item.kleene, None, True,
                                                     n.index), item)
                    pending.append(n.index)
                    continue
                f, lst = self.build(item, inner)
                if first is None:
                    first = [(q, tuple(pending) + nb) for q, nb in f]
                else:
                    for p, na in last:
                        for q, nb in f:
                            self.edge(p, q, "next", na + tuple(pending) + nb)
                last, pending = lst, []
            if first is None:
                raise self.error("SEQ(..) needs at least one element that is not NEG", node)
            last = [(p, na + tuple(pending)) for p, na in last]
            if node.kleene:
                group.positions = tuple(range(begin, len(plan.positions)))
                for p, na in last:
                    for q, nb in first:
                        self.edge(p, q, "back", na + nb)
            return first, last
        raise self.error(f"unsupported pattern element {type(node).__name__}", node)


def _conjuncts(expr: Any) -> list[Any]:
    if expr is None:
        return []
    if isinstance(expr, ast.And):
        out = []
        for item in expr.items:
            out += _conjuncts(item)
        return out
    return [expr]


def _dominators(plan: Plan) -> dict[int, set[int]]:
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


def build_plan(query: ast.PatternQuery, params: Mapping[str, Any] | None = None,
               remote: Lookup | Mapping[str, Any] | None = None, time_unit: str = "s",
               source: str = "<query>") -> Plan:
    """Compile a pattern query into a :class:`Plan` (see the module doc)."""
    if time_unit not in TIME_UNITS:
        raise QueryError(f"time_unit must be one of {', '.join(TIME_UNITS)}, "
                         f"not {time_unit!r}")
    plan = Plan(query, params, remote, time_unit, source)
    b = _Builder(plan)

    # ---- automaton
    first, last = b.build(query.pattern, None)
    for q, negs in first:
        if negs:
            plan.lead_negs[q] = tuple(dict.fromkeys(plan.lead_negs.get(q, ()) + negs))
        b.edge(START, q, "begin", ())
    for p, negs in last:
        if negs:
            plan.trail_negs[p] = tuple(dict.fromkeys(plan.trail_negs.get(p, ()) + negs))
        plan.positions[p].accepting = True
        if p in b.exit_needs:
            plan.accept_needs[p] = b.exit_needs[p]
    dom = _dominators(plan)
    reach = reachable(plan)
    scope_of = {p.index: p.scope for p in plan.positions}

    def bound_at(q: int) -> set[str]:
        names = {plan.positions[x].var for x in dom[q] if x != START}
        s = scope_of.get(q)
        if s is not None:
            names |= {plan.positions[x].var for x in plan.scopes[s].positions}
        return names

    # ---- window
    if query.within is not None:
        w = query.within
        plan.window = w.value if w.unit is None else convert_time(w.value, w.unit, time_unit)
        if plan.window < 0:
            raise b.error("WITHIN must not be negative", w)

    comp = ExprCompiler(plan.variables, plan.params, plan.lookups, time_unit, source)

    # ---- WHERE
    plan.partition = partition_key(query.where, source, computed=True)  # where SAME stands
    plan.key_getters = key_getters(query.where, plan.params, source)
    for conj in _conjuncts(query.where):
        if isinstance(conj, ast.Same):
            continue
        c = comp.compile(conj)
        negvars = sorted({r.var for r in c.refs if plan.variables[r.var].neg})
        if len(negvars) > 1:
            raise b.error(f"predicate '{c.text}' relates two NEG variables "
                          f"({', '.join(negvars)})", conj)
        irefs = c.irefs
        iscopes = {plan.variables[v].scope for v, _ in irefs}
        if len(iscopes) > 1:
            raise b.error(f"predicate '{c.text}' relates the running index i of different "
                          "Kleene variables", conj)
        has_lookup = _has_lookup(conj)
        if negvars:
            _place_neg(plan, b, c, conj, negvars[0], irefs, has_lookup, bound_at)
        else:
            _place(plan, b, c, conj, irefs, has_lookup, dom, reach)

    # ---- transitions out of each state, Kleene take / back first, then in text order
    for e in plan.edges:
        e.preds.sort(key=lambda p: p.lookups)
    for q in [START, *range(len(plan.positions))]:
        outs = sorted((e for e in plan.edges if e.src == q),
                      key=lambda e: (e.kind not in ("take", "back"), e.dst))
        plan.out_edges[q] = outs
        by_type: dict[str, list[Edge]] = {}
        for e in outs:
            by_type.setdefault(plan.positions[e.dst].type, []).append(e)
        plan.out[q] = by_type
    plan.extendable = [bool(plan.out_edges[p.index]) for p in plan.positions]
    for e in plan.edges:
        for nid in e.negs:
            watch = plan.neg_watch.setdefault(e.src, {}).setdefault(plan.negs[nid].type, [])
            if nid not in watch:
                watch.append(nid)
    for src, watch in plan.neg_watch.items():
        for nids in watch.values():
            for nid in nids:
                plan.neg_flag[(src, nid)] = not plan.negs[nid].kleene and not any(
                    e.late.get(nid) for e in plan.out_edges[src] if nid in e.negs)

    # ---- attribute values a partial match's predicates read (for a state filter)
    for p in plan.positions:
        bound = bound_at(p.index)
        seen: dict[tuple[str, str], None] = {}
        preds = [pr for e in plan.out_edges[p.index] for pr in e.preds]
        preds += plan.accept_preds.get(p.index, [])
        preds += [pr for (src, _), lst in plan.neg_early.items() if src == p.index
                  for pr in lst]
        for pr in preds:
            for v, a in pr.attrs:
                if v in bound:
                    seen[(v, a)] = None
        plan.state_attrs[p.index] = [(f"{v}.{a}", v, a) for v, a in seen]

    # ---- RETURN
    if query.returns is not None:
        plan.returns = _compile_return(plan, b, comp, query.returns)
    return plan


def _has_lookup(node: Any) -> bool:
    if isinstance(node, ast.Lookup):
        return True
    if isinstance(node, tuple):
        return any(_has_lookup(x) for x in node)
    if hasattr(node, "__dataclass_fields__"):
        return any(_has_lookup(getattr(node, f)) for f in node.__dataclass_fields__
                   if f != "pos")
    return False


def _new_pred(plan: Plan, c, conj, irefs, mode, anchor_var, anchor_offset, has_lookup,
              where) -> Pred:
    p = Pred(len(plan.preds), c.text, c.fn, irefs, mode, anchor_var, anchor_offset, c.vars,
             c.attrs, has_lookup, where, getattr(conj, "pos", None), node=conj)
    plan.preds.append(p)
    return p


def _place(plan: Plan, b: _Builder, c, conj, irefs, has_lookup, dom, reach) -> None:
    """Put a predicate on the transitions where its latest variable is bound."""
    V = plan.variables
    scopes = plan.scopes
    if not c.refs:
        pred = _new_pred(plan, c, conj, (), "plain", None, 0, has_lookup, "begin")
        for e in plan.edges:
            if e.src == START:
                e.preds.append(pred)
        return

    def key(r):
        info = V[r.var]
        if r.kind == "closing":
            return (max(scopes[info.scope].positions), 1)
        return (info.position, 0)

    best = max(c.refs, key=key)
    info = V[best.var]
    if best.kind == "closing":
        kind, scope = "close", info.scope
        anchor_pos = max(scopes[scope].positions)
        anchor_var, anchor_off = None, 0
        mode = "universal" if irefs else "plain"
    elif best.kind == "i":
        (anchor_off, anchor_pos), anchor_var = max(
            ((o, V[v].position), v) for v, o in irefs)
        kind, scope, mode = "enter", info.scope, "incremental"
    else:
        kind, scope, anchor_pos = "enter", None, info.position
        anchor_var, anchor_off = None, 0
        mode = "universal" if irefs else "plain"
    anchor_scope = plan.positions[anchor_pos].scope
    optional = False
    for r in c.refs:
        ri = V[r.var]
        if ri.scope is not None and ri.scope == anchor_scope:
            continue
        if ri.position not in dom[anchor_pos]:
            if anchor_pos in reach[ri.position]:
                optional = True  # bound on some paths only
                continue
            other = plan.positions[anchor_pos].var
            raise b.error(f"predicate '{c.text}' relates '{r.var}' and '{other}', which no "
                          "match binds together (different OR alternatives?)", conj)
    if kind == "enter":
        where = f"enter {plan.positions[anchor_pos].name}"
        targets = {anchor_pos}
        block = next((bk for bk in plan.conj_blocks if anchor_pos in bk), None)
        if block is not None:  # an AND binds its elements in any order: check at each
            targets |= {V[r.var].position for r in c.refs if V[r.var].position in block}
            optional = optional or len(targets) > 1
        pred = _new_pred(plan, c, conj, irefs, mode, anchor_var, anchor_off, has_lookup,
                         where)
        pred.optional = optional
        for e in plan.edges:
            if e.dst in targets and not (e.src == START and mode == "incremental"
                                         and _vacuous_at_begin(pred)):
                e.preds.append(pred)
        return
    members = set(scopes[scope].positions)
    pred = _new_pred(plan, c, conj, irefs, mode, None, 0, has_lookup,
                     f"leave {plan.positions[anchor_pos].var}")
    pred.optional = optional
    for e in plan.edges:
        if e.src in members and e.dst not in members:
            e.preds.append(pred)
    for q in members:
        if plan.positions[q].accepting:
            plan.accept_preds.setdefault(q, []).append(pred)


def _vacuous_at_begin(pred: Pred) -> bool:
    """On a begin transition only the first event of the anchor variable is bound, so an
    incremental predicate that relates it to another event (``a[i+1]`` with ``a[i]``)
    has nothing to check there."""
    return any(v != pred.anchor_var or o != pred.anchor_offset for v, o in pred.irefs)


def _place_neg(plan: Plan, b: _Builder, c, conj, negvar, irefs, has_lookup,
               bound_at) -> None:
    """A predicate on a NEG variable: *early* when all its other variables are bound at
    the guarded transition's source (a qualifying event blocks as it arrives), *late*
    when it also reads the transition's target (checked when the target arrives)."""
    nid = plan.variables[negvar].position
    others = {r.var for r in c.refs} - {negvar}
    mode = "universal" if irefs else "plain"
    pred = _new_pred(plan, c, conj, irefs, mode, None, 0, has_lookup, f"NEG {negvar}")
    at_end = any(nid in negs for negs in (*plan.lead_negs.values(),
                                          *plan.trail_negs.values()))
    if at_end or plan.negs[nid].kleene:  # checked with the whole match's bindings
        plan.neg_preds.setdefault(nid, []).append(pred)
        if plan.negs[nid].kleene:
            return
    applied = at_end
    guarded = [e for e in plan.edges if nid in e.negs]
    for src in dict.fromkeys(e.src for e in guarded):
        bound = bound_at(src)
        if others <= bound:
            plan.neg_early.setdefault((src, nid), []).append(pred)
            applied = True
            continue
        for e in guarded:
            if e.src == src and others <= bound | {plan.positions[e.dst].var}:
                e.late.setdefault(nid, []).append(pred)
                applied = True
    if not applied:
        raise b.error(f"predicate '{c.text}' on NEG {negvar} reads variables that are not "
                      f"bound next to {negvar} ({', '.join(sorted(others))})", conj)


def _compile_return(plan: Plan, b: _Builder, comp: ExprCompiler, ret: ast.Return
                    ) -> ReturnSpec:
    bases: list[str] = []
    fns: list[Callable] = []
    texts: list[str] = []
    counting = any(isinstance(a.expr, ast.CountAll) for a in ret.args)
    for n, arg in enumerate(ret.args, 1):
        if isinstance(arg.expr, ast.CountAll):  # each match counts 1; summed per event
            bases.append(arg.alias or "count")
            fns.append(lambda bind: 1)
            texts.append("COUNT(*)")
            continue
        c = comp.compile(arg.expr, arg.pos)
        if counting and c.refs:
            raise b.error("with COUNT(*), RETURN gives one output per event that completes "
                          "matches: its other fields may not read the pattern's variables "
                          f"({c.text})",
                          arg)
        for r in c.refs:
            if plan.variables[r.var].neg:
                raise b.error(f"RETURN reads NEG variable '{r.var}'", arg)
        e = arg.expr
        if arg.alias:
            bases.append(arg.alias)
        elif isinstance(e, ast.Attr):
            bases.append(e.attr)
        elif isinstance(e, ast.Length):
            bases.append("length")
        elif isinstance(e, ast.Name):
            bases.append(e.name)
        else:
            bases.append(f"arg{n}")
        fns.append(_return_fn(c))
        texts.append(c.text)
    names = unique_names(["type", *bases])[1:]  # "type" is the output event's own field
    fields = list(zip(names, fns, strict=True))
    count = next((name for name, a in zip(names, ret.args, strict=True)
                  if isinstance(a.expr, ast.CountAll)), None)
    return ReturnSpec(ret.type or "match", fields, texts, [a.expr for a in ret.args], count)


def _return_fn(c) -> Callable:
    """``v[i]`` (or an unindexed Kleene ``v``) in RETURN gives the list over all i; a
    value that does not exist (``a[m]`` past the end, a variable of another OR branch)
    is None."""
    fn, irefs = c.fn, c.irefs
    if irefs:
        def listed(b):
            lo, hi = index_range(irefs, b)
            out = []
            for k in range(lo, hi + 1):
                try:
                    out.append(fn(b, k))
                except (IndexError, KeyError, ZeroDivisionError, TypeError):
                    out.append(None)
            return out
        return listed

    def single(b):
        try:
            return fn(b, None)
        except (IndexError, KeyError, ZeroDivisionError, TypeError):
            return None
    return single
