"""A small evaluator of query expressions for the aggregation operators.

The pattern engine compiles its predicates elsewhere; the aggregation operators need
only scalar evaluation: of a local predicate on one event (A-Seq pushes local predicates
below the counters, ``seeds/004_a810ddb1f10442b7.txt`` §3.4), of an aggregate's argument
on one event, and of a group filter or ``RETURN`` argument on a finished group
(Listings 6.2/6.3, ``specs/listings.md``).

Names resolve, in order, from the evaluation environment (group keys, select aliases),
then the compile-time parameters. Lookups ``name[args]`` read a table: a dict keyed by
the single argument or by the tuple of arguments, a pandas Series indexed by them, or a
callable ``f(*args)``. SQL's NULL rule holds: a comparison or arithmetic with ``None``
is ``None``, and a filter is true only when it evaluates to ``True``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields, is_dataclass, replace
from typing import Any

from cep_core.errors import QueryError, QuerySemanticError
from cep_core.expr import to_text
from cep_core.lang import ast

__all__ = ["Evaluator", "names_in", "lookups_in", "attrs_in", "strip_vars", "conjuncts",
           "to_text", "TIME_FACTORS", "within_value"]

#: seconds per time unit of ``WITHIN``
TIME_FACTORS = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}

_COMPARE = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}
_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "^": operator.pow}
_BUILTINS: dict[str, Callable] = {
    "sqrt": math.sqrt, "abs": abs, "min": min, "max": max, "floor": math.floor,
    "ceil": math.ceil, "round": round, "log": math.log, "exp": math.exp, "pow": pow,
}
_MISSING = object()


def within_value(within: ast.Within | None, time_unit: str | None) -> float | None:
    """``WITHIN`` in the stream's time units: a bare number is already in them; a number
    with a unit (``8ms``, ``2h``) needs ``time_unit``, the unit of the events' ``time``."""
    if within is None:
        return None
    if within.unit is None:
        return within.value
    if time_unit is None:
        raise QuerySemanticError(f"WITHIN {within.value}{within.unit}: give the stream's "
                                 "time unit (time_unit=) to convert it", within.pos)
    if within.unit not in TIME_FACTORS or time_unit not in TIME_FACTORS:
        raise QuerySemanticError(f"unknown time unit {within.unit!r} or {time_unit!r} "
                                 f"(known: {', '.join(TIME_FACTORS)})", within.pos)
    return within.value * TIME_FACTORS[within.unit] / TIME_FACTORS[time_unit]


def _children(expr: Any) -> Iterator[Any]:
    if not is_dataclass(expr):
        return
    for f in fields(expr):
        if f.name == "pos":
            continue
        v = getattr(expr, f.name)
        if isinstance(v, tuple):
            yield from (x for x in v if is_dataclass(x))
        elif is_dataclass(v):
            yield v


def _walk(expr: Any) -> Iterator[Any]:
    yield expr
    for c in _children(expr):
        yield from _walk(c)


def names_in(expr: Any) -> set[str]:
    """The bare names an expression reads (not function names, not lookup names)."""
    return {x.name for x in _walk(expr) if isinstance(x, ast.Name)}


def lookups_in(expr: Any) -> set[str]:
    """The lookup tables an expression reads."""
    return {x.name for x in _walk(expr) if isinstance(x, ast.Lookup)}


def attrs_in(expr: Any) -> list[ast.Attr]:
    """The ``var.attr`` references of an expression."""
    return [x for x in _walk(expr) if isinstance(x, ast.Attr)]


def strip_vars(expr: Any) -> Any:
    """The expression with every ``v.attr`` written ``_.attr``: a local predicate's
    identity independent of the variable's name (for prefix sharing)."""
    return ast.rewrite(expr, lambda n: replace(n, var="_") if isinstance(n, ast.Attr) else None)


def conjuncts(expr: Any) -> list[Any]:
    """The top-level conjuncts of a ``WHERE`` (nested ``AND`` flattened)."""
    if expr is None:
        return []
    if isinstance(expr, ast.And):
        return [c for item in expr.items for c in conjuncts(item)]
    return [expr]


def _table_get(name: str, table: Any, args: tuple) -> Any:
    if callable(table) and not isinstance(table, Mapping) and not hasattr(table, "loc"):
        return table(*args)
    key = args[0] if len(args) == 1 else tuple(args)
    if hasattr(table, "loc") and hasattr(table, "index"):  # pandas Series
        try:
            return table.loc[key]
        except KeyError:
            pass
    else:
        try:
            return table[key]
        except KeyError:
            if len(args) == 1 and (args[0],) in table:
                return table[(args[0],)]
        except TypeError as ex:
            raise QueryError(f"{name}[{', '.join(map(repr, args))}]: {ex}") from None
    raise QueryError(f"{name}[{', '.join(map(repr, args))}]: no such entry in the table")


class Evaluator:
    """Evaluates expressions with parameters and lookup tables bound at compile time.

    ``eval(expr, env, event)``: ``env`` maps bare names (group keys, aliases); ``event``
    is the dict read by ``v.attr`` (a local predicate reads its own event whatever the
    variable is called) and, when ``bare_attrs``, by bare names too.
    """

    def __init__(self, params: Mapping[str, Any] | None = None,
                 lookups: Mapping[str, Any] | None = None):
        self.params = dict(params or {})
        self.lookups = dict(lookups or {})

    def check(self, expr: Any, allowed: set[str], what: str) -> None:
        """Raises :class:`QuerySemanticError` naming every name of ``expr`` (one
        expression or a list) that is not in ``allowed`` or the parameters, and every
        lookup that is not bound."""
        exprs = expr if isinstance(expr, list) else [expr]
        unknown = sorted({n for e in exprs for n in names_in(e)
                          if n not in allowed and n not in self.params})
        missing = sorted({n for e in exprs for n in lookups_in(e) if n not in self.lookups})
        parts = []
        if unknown:
            parts.append(f"unknown name{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(unknown)} (not {what} or a parameter)")
        if missing:
            parts.append(f"unbound lookup{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)} (pass them in lookups=)")
        if parts:
            bad = [e for e in exprs if (names_in(e) - allowed - set(self.params))
                   or (lookups_in(e) - set(self.lookups))]
            raise QuerySemanticError(f"in `{' AND '.join(to_text(e) for e in bad)}`: "
                                     + "; ".join(parts), getattr(bad[0], "pos", None))

    def truth(self, expr: Any, env: Mapping[str, Any], event: Mapping | None = None) -> bool:
        """A filter: true only when the expression is ``True`` (NULL is false)."""
        v = self.eval(expr, env, event)
        return bool(v) if v is not None else False

    def eval(self, e: Any, env: Mapping[str, Any], event: Mapping | None = None) -> Any:
        if isinstance(e, ast.Num | ast.Str):
            return e.value
        if isinstance(e, ast.Name):
            v = env.get(e.name, _MISSING)
            if v is _MISSING:
                v = self.params.get(e.name, _MISSING)
            if v is _MISSING:
                raise QuerySemanticError(f"unknown name {e.name}", e.pos)
            return v
        if isinstance(e, ast.Attr):
            if e.index is not None:
                raise QuerySemanticError(f"{to_text(e)}: indexed variables are not "
                                         "supported here", e.pos)
            if event is None or e.attr not in event:
                raise QueryError(f"{to_text(e)}: the event has no attribute {e.attr!r}")
            return event[e.attr]
        if isinstance(e, ast.Compare):
            a, b = self.eval(e.left, env, event), self.eval(e.right, env, event)
            if a is None or b is None:
                return None
            return _COMPARE[e.op](a, b)
        if isinstance(e, ast.BinOp):
            a, b = self.eval(e.left, env, event), self.eval(e.right, env, event)
            if a is None or b is None:
                return None
            return _ARITH[e.op](a, b)
        if isinstance(e, ast.Neg):
            v = self.eval(e.operand, env, event)
            return None if v is None else -v
        if isinstance(e, ast.And):
            out: Any = True
            for item in e.items:
                v = self.eval(item, env, event)
                if v is False:
                    return False
                if v is None:
                    out = None
            return out
        if isinstance(e, ast.Or):
            out = False
            for item in e.items:
                v = self.eval(item, env, event)
                if v is True:
                    return True
                if v is None:
                    out = None
            return out
        if isinstance(e, ast.Not):
            v = self.eval(e.item, env, event)
            return None if v is None else not v
        if isinstance(e, ast.SetLit):
            return {self.eval(x, env, event) for x in e.items}
        if isinstance(e, ast.In):
            item = self.eval(e.item, env, event)
            coll = self.eval(e.collection, env, event)
            if item is None or coll is None:
                return None
            return (item not in coll) if e.negated else (item in coll)
        if isinstance(e, ast.Lookup):
            if e.name not in self.lookups:
                raise QuerySemanticError(f"unbound lookup {e.name}", e.pos)
            args = tuple(self.eval(a, env, event) for a in e.args)
            return _table_get(e.name, self.lookups[e.name], args)
        if isinstance(e, ast.Call):
            f = _BUILTINS.get(e.func.lower())
            if f is None:
                f = self.params.get(e.func)
            if f is None or not callable(f):
                raise QuerySemanticError(f"unknown function {e.func} (built-ins: "
                                         f"{', '.join(sorted(_BUILTINS))}; others are "
                                         "passed as parameters)", e.pos)
            args = [self.eval(a, env, event) for a in e.args]
            return None if any(a is None for a in args) else f(*args)
        raise QuerySemanticError(f"`{to_text(e)}` cannot be evaluated here",
                                 getattr(e, "pos", None))
