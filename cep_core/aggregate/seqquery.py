"""Sequence aggregation queries for A-Seq (Qi et al., SIGMOD 2014, §2.1).

``PATTERN SEQ(E1, .., !Ei, .., En) [WHERE local and equivalence predicates] [GROUP BY]
AGG COUNT|SUM|AVG|MIN|MAX WITHIN w``: built by hand (:func:`seq_query`) or from a parsed
:class:`~cep_core.lang.ast.PatternQuery` (:func:`seq_query_from_ast`), which supplies the
pattern, the window and the ``WHERE``; the aggregates and ``GROUP BY`` are arguments,
as the query language has no ``AGG`` clause.

What A-Seq can push into its counters (§3.3-3.4) and so what a query may hold: positive
elements and negated elements strictly between two positive ones; local predicates (on
one element's attributes, parameters and lookups); one equivalence attribute shared by
every element (``SAME[ID]`` or ``a.ID = b.ID = ...``: hashed prefix counters). Anything
else (Kleene, ``OR``, predicates relating two events) raises
:class:`~cep_core.errors.QuerySemanticError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cep_core.aggregate.evaluate import (
    Evaluator,
    attrs_in,
    to_text,
    within_value,
)
from cep_core.errors import QuerySemanticError
from cep_core.expr import conjuncts, partition_key
from cep_core.lang import ast

__all__ = ["Element", "SeqAgg", "SeqQuery", "seq_query", "seq_query_from_ast", "parse_aggregate",
           "AGG_FUNCS"]

AGG_FUNCS = ("COUNT", "SUM", "AVG", "MIN", "MAX")


@dataclass(frozen=True)
class Element:
    """One pattern element: an event type, its variable, whether it is negated (``!E``),
    and a local predicate over its attributes (an AST expression, ``v.attr`` or bare
    attribute names are read from the event)."""

    type: str
    var: str | None = None
    negated: bool = False
    where: Any = None


@dataclass(frozen=True)
class SeqAgg:
    """``COUNT`` or ``FUNC(element.attr)``: ``element`` is a variable name or the 1-based
    position among the positive elements."""

    func: str
    element: str | int | None = None
    attr: str | None = None
    name: str | None = None

    def label(self) -> str:
        if self.name:
            return self.name
        return "count" if self.func == "COUNT" else f"{self.func.lower()}_{self.attr}"


@dataclass(frozen=True)
class SeqQuery:
    """A compiled-to-data sequence aggregation query.

    ``within``: the window in the events' time units (``None``: no window, DPC);
    ``same``: equivalence attributes (every event of a match agrees on them; one prefix
    counter state per value, HPC); ``group_by``: attributes whose value labels each
    output (the output aggregates only the matches of the trigger's group).
    """

    elements: tuple[Element, ...]
    within: float | None = None
    aggregates: tuple[SeqAgg, ...] = (SeqAgg("COUNT"),)
    same: tuple[str, ...] = ()
    group_by: tuple[str, ...] = ()
    name: str = "seq"
    output_type: str = "SeqAggregate"

    def __post_init__(self):
        pos = self.positives()
        if not pos:
            raise QuerySemanticError(f"{self.name}: a pattern needs a positive element")
        els = self.elements
        if els[0].negated or els[-1].negated:
            raise QuerySemanticError(f"{self.name}: a negated element must stand between "
                                     "two positive ones (A-Seq §3.3)")
        if self.within is not None and not self.within >= 0:
            raise QuerySemanticError(f"{self.name}: WITHIN must be >= 0, not {self.within}")
        if not self.aggregates:
            raise QuerySemanticError(f"{self.name}: no aggregate")
        for a in self.aggregates:
            if a.func not in AGG_FUNCS:
                raise QuerySemanticError(f"{self.name}: unknown aggregate {a.func} "
                                         f"(A-Seq §5: {', '.join(AGG_FUNCS)})")
            if a.func != "COUNT":
                if a.attr is None or a.element is None:
                    raise QuerySemanticError(f"{self.name}: {a.func} needs element.attr")
                self.position_of(a.element)

    def positives(self) -> list[Element]:
        return [e for e in self.elements if not e.negated]

    def position_of(self, element: str | int) -> int:
        """The 1-based position among the positive elements."""
        pos = self.positives()
        if isinstance(element, int):
            if 1 <= element <= len(pos):
                return element
        else:
            for i, e in enumerate(pos, 1):
                if e.var == element:
                    return i
            if any(e.var == element for e in self.elements if e.negated):
                raise QuerySemanticError(f"{self.name}: {element} is negated; an aggregate "
                                         "reads a positive element")
        raise QuerySemanticError(f"{self.name}: no positive element {element!r} "
                                 f"(elements: {[e.var or e.type for e in pos]})")

    def gaps(self) -> list[tuple[Element, ...]]:
        """``gaps()[m-1]``: the negated elements between positive positions m and m+1."""
        out: list[list[Element]] = []
        for e in self.elements:
            if e.negated:
                out[-1].append(e)
            else:
                out.append([])
        return [tuple(g) for g in out]

    def text(self) -> str:
        els = ", ".join(("!" if e.negated else "") + e.type + (f" {e.var}" if e.var else "")
                        + (f" [{to_text(e.where)}]" if e.where is not None else "")
                        for e in self.elements)
        aggs = ", ".join(a.func if a.func == "COUNT" else f"{a.func}({a.element}.{a.attr})"
                         for a in self.aggregates)
        parts = [f"SEQ({els})"]
        if self.same:
            parts.append(f"SAME[{', '.join(self.same)}]")
        if self.group_by:
            parts.append(f"GROUP BY {', '.join(self.group_by)}")
        parts.append(f"AGG {aggs}")
        if self.within is not None:
            parts.append(f"WITHIN {self.within}")
        return " ".join(parts)


_ELEM_RE = re.compile(r"^\s*(!|NEG\s+)?\s*([A-Za-z_]\w*)\s*([A-Za-z_]\w*)?\s*$")
_AGG_RE = re.compile(r"^\s*(\w+)\s*(?:\(\s*(?:([\w]+)\s*\.\s*(\w+))?\s*\))?"
                     r"(?:\s+AS\s+(\w+))?\s*$", re.IGNORECASE)


def _element(x: str | Element) -> Element:
    if isinstance(x, Element):
        return x
    m = _ELEM_RE.match(x)
    if not m:
        raise QuerySemanticError(f"cannot read pattern element {x!r} (write `A`, `A a`, "
                                 "`!B` or `NEG B b`)")
    return Element(m.group(2), m.group(3), negated=bool(m.group(1)))


def parse_aggregate(x: str | SeqAgg) -> SeqAgg:
    """``COUNT``, ``SUM(c.w)``, ``MAX(2.v) AS top`` (or a :class:`SeqAgg`) as a :class:`SeqAgg`."""
    if isinstance(x, SeqAgg):
        return x
    m = _AGG_RE.match(x)
    if not m:
        raise QuerySemanticError(f"cannot read aggregate {x!r} (write `COUNT`, "
                                 "`SUM(c.w)`, `MAX(2.v) AS top`)")
    func, el, attr, name = m.group(1).upper(), m.group(2), m.group(3), m.group(4)
    element: str | int | None = int(el) if el is not None and el.isdigit() else el
    return SeqAgg(func, element, attr, name)


def seq_query(pattern: str | Sequence[str | Element], within: float | None = None,
              aggregates: Iterable[str | SeqAgg] = ("COUNT",), same: Iterable[str] = (),
              group_by: Iterable[str] = (), name: str = "seq",
              output_type: str = "SeqAggregate") -> SeqQuery:
    """A query from short text: ``seq_query("A a, !B, C c", within=10,
    aggregates=["COUNT", "SUM(c.w) AS total"], group_by=["id"])``."""
    items = pattern.split(",") if isinstance(pattern, str) else list(pattern)
    return SeqQuery(tuple(_element(x) for x in items), within,
                    tuple(parse_aggregate(a) for a in aggregates), tuple(same), tuple(group_by),
                    name, output_type)


def seq_query_from_ast(query: ast.PatternQuery, aggregates: Iterable[str | SeqAgg] = ("COUNT",),
                       group_by: Iterable[str] = (), params: Mapping[str, Any] | None = None,
                       lookups: Mapping[str, Any] | None = None, time_unit: str | None = None,
                       name: str = "seq", output_type: str | None = None) -> SeqQuery:
    """A :class:`SeqQuery` from a parsed ``PATTERN SEQ(..) WHERE .. WITHIN ..``.

    ``WHERE`` conjuncts are sorted into ``SAME[attr]`` / ``a.attr = b.attr`` equalities
    (one attribute joining every element: HPC, §3.4) and local predicates (one variable,
    parameters, lookups: evaluated on each event before it reaches the counters, §3.4).
    ``time_unit`` converts ``WITHIN 8ms`` into the events' time units.
    """
    if not isinstance(query, ast.PatternQuery):
        raise QuerySemanticError("A-Seq aggregates a PATTERN query", getattr(query, "pos", None))
    pat = query.pattern
    if isinstance(pat, ast.EventElem):
        pat = ast.Seq((pat,))
    if not isinstance(pat, ast.Seq) or pat.kleene:
        raise QuerySemanticError("A-Seq aggregates a flat SEQ(..) (no Kleene, no OR)",
                                 getattr(pat, "pos", None))
    elems: list[ast.EventElem] = []
    for it in pat.items:
        if not isinstance(it, ast.EventElem) or it.kleene:
            raise QuerySemanticError(f"A-Seq: `{type(it).__name__}` in SEQ is not supported "
                                     "(flat SEQ of single events only)", getattr(it, "pos", None))
        elems.append(it)
    varnames = [e.var for e in elems]
    if len(set(varnames)) != len(varnames):
        raise QuerySemanticError("A-Seq: each element needs its own variable", pat.pos)
    ev = Evaluator(params, lookups)
    same = list(partition_key(query.where))
    eq_edges: dict[str, set[frozenset[str]]] = {}
    local: dict[str, list[Any]] = {v: [] for v in varnames}
    for c in conjuncts(query.where):
        if isinstance(c, ast.Same):
            continue
        refs = attrs_in(c)
        for r in refs:
            if r.var not in local:
                raise QuerySemanticError(f"unknown variable {r.var} in `{to_text(c)}`", r.pos)
        vars_ = {r.var for r in refs}
        if (isinstance(c, ast.Compare) and c.op == "=" and isinstance(c.left, ast.Attr)
                and isinstance(c.right, ast.Attr) and c.left.attr == c.right.attr
                and c.left.var != c.right.var and c.left.index is None
                and c.right.index is None):
            eq_edges.setdefault(c.left.attr, set()).add(frozenset((c.left.var, c.right.var)))
            continue
        if len(vars_) == 1:
            ev.check(c, set(), "an attribute")
            local[vars_.pop()].append(c)
            continue
        raise QuerySemanticError(f"A-Seq pushes local and equivalence predicates only "
                                 f"(§3.4); `{to_text(c)}` relates "
                                 f"{len(vars_) or 'no'} variables", getattr(c, "pos", None))
    for attr, edges in eq_edges.items():
        if not _connects(edges, set(varnames)):
            raise QuerySemanticError(f"A-Seq: the equalities on {attr} must join every "
                                     f"element (equivalence on one attribute, HPC §3.4)",
                                     query.where.pos if query.where is not None else None)
        same.append(attr)
    elements = tuple(
        Element(e.type, e.var, e.negated,
                None if not local[e.var] else
                (local[e.var][0] if len(local[e.var]) == 1 else ast.And(tuple(local[e.var]))))
        for e in elems)
    within = within_value(query.within, time_unit)
    kw = {"output_type": output_type} if output_type else {}
    return SeqQuery(elements, within, tuple(parse_aggregate(a) for a in aggregates),
                    tuple(dict.fromkeys(same)), tuple(group_by), name, **kw)


def _connects(edges: set[frozenset[str]], nodes: set[str]) -> bool:
    if len(nodes) == 1:
        return True
    seen = {next(iter(nodes))}
    changed = True
    while changed:
        changed = False
        for e in edges:
            if e & seen and not e <= seen:
                seen |= e
                changed = True
    return seen == nodes
