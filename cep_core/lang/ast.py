"""Abstract syntax of the query language (dissertation Ch. 2 and the listings of Ch. 4-6).

The language is SASE+-like; the text has no formal grammar (§2.2.1; docs/decisions.md,
"The query language has no printed grammar"), so this module and ``grammar.lark`` are
ours. Every node is an immutable dataclass; ``pos``
(line, column) points into the query text for error messages and is left out of
equality.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

Pos = tuple[int, int] | None


def _pos() -> Pos:
    return field(default=None, compare=False, repr=False)


# --------------------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Num:
    """A number; ``10k``/``50K`` are 10,000/50,000; ``6:00`` is a clock time in minutes
    (``unit="clock"``); ``46.51°C`` keeps its unit (``"°C"``)."""

    value: float | int
    unit: str | None = None
    pos: Pos = _pos()


@dataclass(frozen=True)
class Str:
    """A quoted string literal."""

    value: str
    pos: Pos = _pos()


@dataclass(frozen=True)
class Name:
    """A bare identifier: a parameter bound at compile time (``t_start``, ``γ_user``,
    ``GROUPNUM``), an attribute of the grouped event in an aggregation query (``time``,
    ``houseID``), a select alias (``alertNum``), or a symbolic constant (``high``)."""

    name: str
    pos: Pos = _pos()


@dataclass(frozen=True)
class Index:
    """Position in a Kleene variable's events.

    ``kind``: ``"i"`` (the running index, ``offset`` 0 for ``a[i]``, +1 for ``a[i+1]``,
    -1 for ``a[i-1]``), ``"last"``, ``"const"`` (``a[1]`` is ``value=1``, 1-based),
    ``"param"`` (``a[m_user]``: ``value`` is the parameter name) or ``"all"`` (``a[].x``,
    every value, inside an aggregate: ``AVG(a[].x)``).
    """

    kind: str
    offset: int = 0
    value: int | str | None = None
    pos: Pos = _pos()


@dataclass(frozen=True)
class Attr:
    """``var.attr`` or ``var[index].attr``."""

    var: str
    attr: str
    index: Index | None = None
    pos: Pos = _pos()


@dataclass(frozen=True)
class Length:
    """``LENGTH(var+[])``: the number of events bound to a Kleene variable."""

    var: str
    pos: Pos = _pos()


@dataclass(frozen=True)
class BinOp:
    """Arithmetic: ``op`` in ``+ - * / ^`` (``×`` is ``*``)."""

    op: str
    left: Expr
    right: Expr
    pos: Pos = _pos()


@dataclass(frozen=True)
class Neg:
    """Unary minus."""

    operand: Expr
    pos: Pos = _pos()


@dataclass(frozen=True)
class Compare:
    """``op`` in ``= != < <= > >=`` (``<>``, ``≠``, ``≤``, ``≥`` normalised)."""

    op: str
    left: Expr
    right: Expr
    pos: Pos = _pos()


@dataclass(frozen=True)
class SetLit:
    """``{7, 8, 9}``."""

    items: tuple[Expr, ...]
    pos: Pos = _pos()


@dataclass(frozen=True)
class In:
    """``item IN collection`` (``∈``), or ``NOT IN`` when ``negated``."""

    item: Expr
    collection: Expr  # SetLit or Lookup
    negated: bool = False
    pos: Pos = _pos()


@dataclass(frozen=True)
class And:
    items: tuple[Expr, ...]
    pos: Pos = _pos()


@dataclass(frozen=True)
class Or:
    items: tuple[Expr, ...]
    pos: Pos = _pos()


@dataclass(frozen=True)
class Not:
    item: Expr
    pos: Pos = _pos()


@dataclass(frozen=True)
class Call:
    """A function call ``f(args)``: built-ins (``sqrt``, ``abs``, ...) or user functions
    (``OVERLAP``)."""

    func: str
    args: tuple[Expr, ...]
    pos: Pos = _pos()


@dataclass(frozen=True)
class Aggregate:
    """``AVG/SUM/MIN/MAX/COUNT(expr)``, ``COUNT(DISTINCT expr)``; ``func`` upper-case."""

    func: str
    arg: Expr
    distinct: bool = False
    pos: Pos = _pos()


@dataclass(frozen=True)
class CountAll:
    """``COUNT(*)`` in RETURN: the number of matches an event completes."""

    pos: Pos = _pos()


@dataclass(frozen=True)
class Lookup:
    """``name[args]``: a parameter table (``GroupSize[groupID]``) or remote data
    (``REMOTE[t1.user]``, ``λ[a[i].houseID, a[i].time]``), bound when compiling."""

    name: str
    args: tuple[Expr, ...]
    pos: Pos = _pos()


@dataclass(frozen=True)
class Same:
    """``SAME[attrs]`` / ``SAME VALUE[attrs]``: all events of a match agree on the attrs
    (the partition key)."""

    attrs: tuple[Expr, ...]  # Name for a plain attribute, Call for SAME[OVERLAP(x)]
    value_form: bool = False
    pos: Pos = _pos()


Expr = (Num | Str | Name | Attr | Length | BinOp | Neg | Compare | SetLit | In | And | Or | Not
        | Call | Aggregate | Lookup | Same)


# --------------------------------------------------------------------------- patterns
@dataclass(frozen=True)
class EventElem:
    """``Type var`` in a pattern; ``Type+ var[]`` / ``Type var+[]`` is Kleene+;
    ``NEG Type var`` is a negated element."""

    type: str
    var: str
    kleene: bool = False
    negated: bool = False
    pos: Pos = _pos()


@dataclass(frozen=True)
class Seq:
    """``SEQ(items)``; ``SEQ(..)+`` when ``kleene``."""

    items: tuple[Pattern, ...]
    kleene: bool = False
    pos: Pos = _pos()


@dataclass(frozen=True)
class OrPattern:
    """``(p1 OR p2 ...)`` between sub-patterns."""

    alternatives: tuple[Pattern, ...]
    pos: Pos = _pos()


@dataclass(frozen=True)
class Conj:
    """``AND(items)``: one match of each item, the items in any order."""

    items: tuple[Pattern, ...]
    pos: Pos = _pos()


Pattern = EventElem | Seq | OrPattern | Conj


# --------------------------------------------------------------------------- queries
@dataclass(frozen=True)
class Within:
    """``WITHIN value unit``; ``unit`` in ``ms s min h`` or None (stream time units)."""

    value: float | int
    unit: str | None = None
    pos: Pos = _pos()


@dataclass(frozen=True)
class ReturnArg:
    expr: Expr
    alias: str | None = None
    pos: Pos = _pos()


@dataclass(frozen=True)
class Return:
    """``RETURN T(args)`` (``type`` T) or ``RETURN (args)`` (``type`` None)."""

    type: str | None
    args: tuple[ReturnArg, ...]
    pos: Pos = _pos()


@dataclass(frozen=True)
class PatternQuery:
    """``[PATTERN] SEQ(..) [FROM T STREAM] [WHERE ..] [WITHIN ..] [ALLOW k MISSING]
    [RETURN ..]`` (``max_missing``: the ``k`` of ``ALLOW k MISSING``)."""

    pattern: Pattern
    source: str | None = None
    where: Expr | None = None
    within: Within | None = None
    returns: Return | None = None
    max_missing: int | None = None
    pos: Pos = _pos()


@dataclass(frozen=True)
class SelectItem:
    expr: Expr
    alias: str | None = None
    pos: Pos = _pos()


@dataclass(frozen=True)
class AggregationQuery:
    """``SELECT items FROM T STREAM [WHERE ..] [GROUP BY names] [RETURN ..]``."""

    selects: tuple[SelectItem, ...]
    source: str
    where: Expr | None = None
    group_by: tuple[str, ...] = ()
    returns: Return | None = None
    pos: Pos = _pos()


Query = PatternQuery | AggregationQuery


def rewrite(node: Any, fn: Callable[[Any], Any]) -> Any:
    """The tree with ``fn`` applied top-down: where ``fn(n)`` returns a node other than
    None it replaces ``n`` (and is not descended into); elsewhere the children are
    rewritten and the node rebuilt."""
    new = fn(node)
    if new is not None:
        return new
    if not is_dataclass(node):
        return node
    changes = {}
    for f in fields(node):
        v = getattr(node, f.name)
        if isinstance(v, tuple):
            changes[f.name] = tuple(rewrite(x, fn) for x in v)
        elif is_dataclass(v):
            changes[f.name] = rewrite(v, fn)
    return replace(node, **changes)
