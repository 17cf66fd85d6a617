"""What a query reads of its input events, checked against the stream it will run on.

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
from dataclasses import dataclass
from typing import Any

from cep_core.errors import QuerySemanticError
from cep_core.expr import walk
from cep_core.lang import ast
from cep_core.query import CompiledQuery

__all__ = ["Reads", "reads", "check_events"]

ALWAYS = ("type", "time")  # what every event carries


@dataclass(frozen=True)
class Reads:
    """The event types a query reads and the attributes it reads of each."""

    types: dict[str, ast.Pos]  # type -> where it is first named
    attributes: dict[tuple[str, str], ast.Pos]  # (type, attribute) -> where first read


def _nodes(*parts: Any) -> Iterator[Any]:
    """Every node of ``parts`` (syntax trees, tuples of them, None), top-down."""
    for part in parts:
        for node in part if isinstance(part, tuple) else (part,):
            yield from walk(node)


def _names(attrs: tuple) -> Iterator[ast.Name]:
    return (n for n in _nodes(attrs) if isinstance(n, ast.Name))


def reads(query: ast.Query, params: Collection[str] = ()) -> Reads:
    """What ``query`` reads (module doc); ``params``: the names bound as parameters."""
    types: dict[str, ast.Pos] = {}
    attributes: dict[tuple[str, str], ast.Pos] = {}

    def read(kind: str, attr: str, pos: ast.Pos) -> None:
        attributes.setdefault((kind, attr), pos)

    if isinstance(query, ast.PatternQuery):
        of_var: dict[str, str] = {}
        for element in (n for n in walk(query.pattern) if isinstance(n, ast.EventElem)):
            types.setdefault(element.type, element.pos)
            of_var.setdefault(element.var, element.type)
        if query.source is not None:
            types.setdefault(query.source, query.pos)
        for node in _nodes(query.where, query.returns):
            if isinstance(node, ast.Attr) and node.var in of_var:
                read(of_var[node.var], node.attr, node.pos)
            elif isinstance(node, ast.Same):
                for name in _names(node.attrs):
                    for kind in dict.fromkeys(of_var.values()):
                        read(kind, name.name, name.pos or node.pos)
        return Reads(types, attributes)
    kind = query.source
    types[kind] = query.pos
    for name in query.group_by:
        read(kind, name, query.pos)
    for node in _nodes(query.selects, query.where, query.returns):
        if isinstance(node, ast.Same):
            for name in _names(node.attrs):
                read(kind, name.name, name.pos or node.pos)
        elif isinstance(node, ast.Aggregate):
            for inner in walk(node.arg):
                if isinstance(inner, ast.Name) and inner.name != "*" \
                        and inner.name not in params:
                    read(kind, inner.name, inner.pos or node.pos)
                elif isinstance(inner, ast.Attr):
                    read(kind, inner.attr, inner.pos or node.pos)
    return Reads(types, attributes)


def _hint(name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def check_events(compiled: CompiledQuery, events: Mapping[str, Collection[str]],
                 params: Collection[str] = (), source: str = "<query>",
                 outputs: Collection[str] = ()) -> Reads:
    """What the ``compiled`` query reads (:func:`reads`), once it is checked against the
    stream it will run on: ``events`` maps each event type the stream carries to the
    attributes its events carry (``type`` and ``time`` need not be listed); ``outputs``:
    the fields that what reads the query's outputs reads of each (its outputs' fields are
    the compiled query's :attr:`~cep_core.query.CompiledQuery.output_fields`). A type or
    an attribute that the stream does not carry, or an output without one of those
    fields, raises :class:`QuerySemanticError`, one line naming the query, where, what
    and what there is."""
    query = compiled.query
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
    given = compiled.output_fields
    if missing := [f for f in outputs if f not in (given or ())]:
        raise QuerySemanticError(
            f"its outputs carry no {', '.join(repr(f) for f in missing)} (RETURN gives "
            f"{', '.join(given) if given else 'the match'}), and what reads them reads that; "
            f"name it so, e.g. RETURN T(... AS {missing[0]})",
            getattr(query.returns, "pos", None) or query.pos, source)
    return found
