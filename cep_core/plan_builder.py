"""Building a :class:`~cep_core.plan.Plan` from a parsed pattern query: the construction of
the position automaton, the placement of predicates and NEG elements, and the RETURN
(the module doc of :mod:`cep_core.plan` describes the result).

A plan pickles as the arguments it was built from (Spark ships plans to its workers): the
reduction is registered here, with the builder, so that the plan's module needs none."""

from __future__ import annotations

import copyreg
from collections.abc import Callable, Mapping
from typing import Any

from cep_core.errors import QueryError, QuerySemanticError
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
from cep_core.lookup import Lookup
from cep_core.plan import (
    START,
    TIME_UNITS,
    Edge,
    NegElem,
    Plan,
    Position,
    Pred,
    ReturnSpec,
    Scope,
    conjuncts_of,
    dominators,
    reachable,
)

__all__ = ["build_plan"]


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


def build_plan(query: ast.PatternQuery, params: Mapping[str, Any] | None = None,
               remote: Lookup | Mapping[str, Any] | None = None, time_unit: str = "s",
               source: str = "<query>") -> Plan:
    """Compile a pattern query into a :class:`Plan` (see the module doc)."""
    if time_unit not in TIME_UNITS:
        raise QueryError(f"time_unit must be one of {', '.join(TIME_UNITS)}, "
                         f"not {time_unit!r}")
    plan = Plan(query, params, remote, time_unit, source)
    b = _Builder(plan)
    _automaton(plan, b, query.pattern)
    dom = dominators(plan)
    reach = reachable(plan)
    scope_of = {p.index: p.scope for p in plan.positions}

    def bound_at(q: int) -> set[str]:
        names = {plan.positions[x].var for x in dom[q] if x != START}
        s = scope_of.get(q)
        if s is not None:
            names |= {plan.positions[x].var for x in plan.scopes[s].positions}
        return names

    if query.within is not None:
        w = query.within
        plan.window = w.value if w.unit is None else convert_time(w.value, w.unit, time_unit)
        if plan.window < 0:
            raise b.error("WITHIN must not be negative", w)
    comp = ExprCompiler(plan.variables, plan.params, plan.lookups, time_unit, source)
    _where(plan, b, comp, query.where, bound_at, dom, reach)
    _transitions(plan)
    _state_attrs(plan, bound_at)
    if query.returns is not None:
        plan.returns = _compile_return(plan, b, comp, query.returns)
    return plan


def _automaton(plan: Plan, b: _Builder, pattern: Any) -> None:
    """The position automaton of ``pattern``: its positions and edges, the edges out of
    START, the accepting positions with the NEG elements at the ends."""
    first, last = b.build(pattern, None)
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


def _where(plan: Plan, b: _Builder, comp: ExprCompiler, where: Any,
           bound_at: Callable[[int], set[str]], dom: dict[int, set[int]],
           reach: dict[int, set[int]]) -> None:
    """The WHERE clause: the partition key where SAME stands, and each other conjunct
    compiled and placed on the edges that test it (on a NEG element's watch when it
    reads one)."""
    source = plan.source
    plan.partition = partition_key(where, source, computed=True)  # where SAME stands
    plan.key_getters = key_getters(where, plan.params, source)
    for conj in conjuncts_of(where):
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


def _transitions(plan: Plan) -> None:
    """The transitions out of each state, Kleene take / back first, then in text order,
    also by event type; which states can extend; the NEG elements each state watches."""
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


def _state_attrs(plan: Plan, bound_at: Callable[[int], set[str]]) -> None:
    """The attribute values a partial match in each state keeps for the predicates it
    may still test (for a state filter)."""
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


def _reduce_plan(plan: Plan) -> tuple:
    return (build_plan, (plan.query, plan.params, plan.remote, plan.time_unit, plan.source))


copyreg.pickle(Plan, _reduce_plan)
