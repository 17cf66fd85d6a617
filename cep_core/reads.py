"""What a query reads of its input events, and the fields of its outputs.

A query names event types and their attributes; the stream it will run on carries some
types, each with some attributes. :func:`check_events` compares the two before any event
is fed. Unchecked, an attribute the events lack fails only when the first event reaches
the predicate that reads it (after the work done until then), gives null wherever RETURN
reads it, and a type the stream does not carry never matches: a quiet wrong answer.

What counts as an attribute read: ``var.attr`` and ``var[i].attr`` (of ``var``'s event
type), the names of ``SAME[..]`` (of every event type of the query), and in an
aggregation query the ``GROUP BY`` names and the bare names in aggregate arguments that
are not parameters (of the ``FROM`` type). ``type`` and ``time`` every event has.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from cep_core.errors import QuerySemanticError
from cep_core.events import unique_names
from cep_core.lang import ast

__all__ = ["Reads", "reads", "check_events"]

ALWAYS = ("type", "time")  # what every event carries


@dataclass(frozen=True)
class Reads:
    """The event types a query reads, the attributes it reads of each, and its outputs'
    fields (None without RETURN in a pattern query: its output is the match)."""

    types: dict[str, ast.Pos]  # type -> where it is first named
    attributes: dict[tuple[str, str], ast.Pos]  # (type, attribute) -> where first read
    outputs: tuple[str, ...] | None


def _nodes(node: Any) -> Iterator[Any]:
    """``node`` and every node below it, top-down."""
    yield node
    if isinstance(node, tuple):
        for item in node:
            yield from _nodes(item)
    elif is_dataclass(node):
        for f in fields(node):
            if f.name != "pos":
                yield from _nodes(getattr(node, f.name))


def _elements(pattern: Any) -> Iterator[ast.EventElem]:
    return (n for n in _nodes(pattern) if isinstance(n, ast.EventElem))


def _names(node: Any) -> Iterator[ast.Name]:
    return (n for n in _nodes(node) if isinstance(n, ast.Name))


def reads(query: ast.Query, params: Collection[str] = ()) -> Reads:
    """What ``query`` reads (module doc); ``params``: the names bound as parameters."""
    types: dict[str, ast.Pos] = {}
    attributes: dict[tuple[str, str], ast.Pos] = {}

    def read(kind: str, attr: str, pos: ast.Pos) -> None:
        attributes.setdefault((kind, attr), pos)

    if isinstance(query, ast.PatternQuery):
        of_var: dict[str, str] = {}
        for element in _elements(query.pattern):
            types.setdefault(element.type, element.pos)
            of_var.setdefault(element.var, element.type)
        if query.source is not None:
            types.setdefault(query.source, query.pos)
        for node in _nodes((query.where, query.returns)):
            if isinstance(node, ast.Attr) and node.var in of_var:
                read(of_var[node.var], node.attr, node.pos)
            elif isinstance(node, ast.Same):
                for name in _names(node.attrs):
                    for kind in dict.fromkeys(of_var.values()):
                        read(kind, name.name, name.pos or node.pos)
        return Reads(types, attributes, _pattern_outputs(query.returns))
    kind = query.source
    types[kind] = query.pos
    for name in query.group_by:
        read(kind, name, query.pos)
    for node in _nodes((query.selects, query.where, query.returns)):
        if isinstance(node, ast.Same):
            for name in _names(node.attrs):
                read(kind, name.name, name.pos or node.pos)
        elif isinstance(node, ast.Aggregate):
            for inner in _nodes(node.arg):
                if isinstance(inner, ast.Name) and inner.name != "*" \
                        and inner.name not in params:
                    read(kind, inner.name, inner.pos or node.pos)
                elif isinstance(inner, ast.Attr):
                    read(kind, inner.attr, inner.pos or node.pos)
    return Reads(types, attributes, _aggregation_outputs(query))


def _pattern_outputs(ret: ast.Return | None) -> tuple[str, ...] | None:
    """The fields of a pattern query's outputs (:func:`cep_core.plan_builder`'s naming)."""
    if ret is None:
        return None
    bases = []
    for n, arg in enumerate(ret.args, 1):
        e = arg.expr
        bases.append(arg.alias or ("count" if isinstance(e, ast.CountAll) else
                                   e.attr if isinstance(e, ast.Attr) else
                                   "length" if isinstance(e, ast.Length) else
                                   e.name if isinstance(e, ast.Name) else f"arg{n}"))
    return tuple(unique_names(["type", *bases])[1:])


def _label(e: ast.Aggregate) -> str:
    """An aggregate's name when the query gives none (:mod:`cep_core.aggregate.stream`)."""
    arg = e.arg
    what = arg.name if isinstance(arg, ast.Name) else \
        arg.attr if isinstance(arg, ast.Attr) else "expr"
    return f"{e.func.lower()}{'_distinct' if e.distinct else ''}_" \
           f"{'all' if what == '*' else what}"


def _aggregation_outputs(query: ast.AggregationQuery) -> tuple[str, ...]:
    """The fields of an aggregation query's outputs (:mod:`cep_core.aggregate.stream`)."""
    same = [n.name for node in _nodes(query.where) if isinstance(node, ast.Same)
            for n in _names(node.attrs)]
    keys = list(dict.fromkeys([*query.group_by, *same]))
    if query.returns is None:
        aggs = [i.alias or _label(i.expr) for i in query.selects
                if isinstance(i.expr, ast.Aggregate)]
        plain = [i.alias or i.expr.name for i in query.selects
                 if isinstance(i.expr, ast.Name)]
        return tuple(dict.fromkeys(keys + unique_names(aggs + plain)))
    names = unique_names([a.alias or (a.expr.name if isinstance(a.expr, ast.Name) else
                                      a.expr.attr if isinstance(a.expr, ast.Attr) else
                                      f"arg{i}") for i, a in enumerate(query.returns.args, 1)])
    return tuple(names + ["time"] if "time" in keys and "time" not in names else names)


def _hint(name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def check_events(query: ast.Query, events: Mapping[str, Collection[str]],
                 params: Collection[str] = (), source: str = "<query>",
                 outputs: Collection[str] = ()) -> Reads:
    """What ``query`` reads (:func:`reads`), once it is checked against the stream it
    will run on: ``events`` maps each event type the stream carries to the attributes its
    events carry (``type`` and ``time`` need not be listed); ``outputs``: the fields that
    what reads the query's outputs reads of each. A type or an attribute that the stream
    does not carry, or an output without one of those fields, raises
    :class:`QuerySemanticError`, one line naming the query, where, what and what there
    is."""
    found = reads(query, params)
    for kind, pos in found.types.items():
        if kind not in events:
            raise QuerySemanticError(
                f"event type {kind!r} is not in this stream ({_hint(kind, events)}it "
                f"carries {', '.join(events)})", pos, source)
    for (kind, attr), pos in found.attributes.items():
        carried = list(dict.fromkeys([*ALWAYS, *events[kind]]))
        if attr not in carried:
            raise QuerySemanticError(
                f"{kind} events carry no attribute {attr!r} ({_hint(attr, carried)}they "
                f"carry {', '.join(carried)})", pos, source)
    if missing := [f for f in outputs if f not in (found.outputs or ())]:
        given = ", ".join(found.outputs) if found.outputs else "the match"
        raise QuerySemanticError(
            f"its outputs carry no {', '.join(repr(f) for f in missing)} (RETURN gives "
            f"{given}), and what reads them reads that; name it so, e.g. RETURN T(... AS "
            f"{missing[0]})", getattr(query.returns, "pos", None) or query.pos, source)
    return found
