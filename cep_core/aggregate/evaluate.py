"""Evaluation of query expressions for the aggregation operators.

The aggregation operators need scalar evaluation only: of a local predicate on one
event (A-Seq pushes local predicates below the counters, Qi et al., SIGMOD 2014, §3.4),
of an aggregate's argument on one event, and of a group filter or ``RETURN`` argument on
a finished group (the dissertation's Listings 6.2/6.3; docs/decisions.md, "Stream
aggregation queries"). Each expression
is compiled once to a closure by :class:`ScalarCompiler`, a subclass of the language's
one expression compiler (:class:`cep_core.expr.ExprCompiler`: the same operators,
built-ins and lookups as the pattern plan).

Names resolve at evaluation time, in order, from the evaluation environment (group keys,
select aliases; the event itself for a local predicate), then the compile-time
parameters. ``v.attr`` reads the event whatever the variable is called. Lookups
``name[args]`` read a table through :class:`cep_core.lookup.TableLookup`: a dict keyed by
the single argument or by the tuple of arguments, a pandas Series indexed by them, or a
callable ``f(*args)``. SQL's NULL rule holds: a comparison or arithmetic with ``None``
is ``None``, and a filter is true only when it evaluates to ``True``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from cep_core.errors import QueryError, QuerySemanticError
from cep_core.expr import TIME_FACTORS, ExprCompiler, to_text, walk
from cep_core.lang import ast
from cep_core.lookup import TableLookup

__all__ = ["Evaluator", "ScalarCompiler", "names_in", "lookups_in", "attrs_in", "strip_vars",
           "to_text", "TIME_FACTORS", "within_value"]

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


def names_in(expr: Any) -> set[str]:
    """The bare names an expression reads (not function names, not lookup names)."""
    return {x.name for x in walk(expr) if isinstance(x, ast.Name)}


def lookups_in(expr: Any) -> set[str]:
    """The lookup tables an expression reads."""
    return {x.name for x in walk(expr) if isinstance(x, ast.Lookup)}


def attrs_in(expr: Any) -> list[ast.Attr]:
    """The ``var.attr`` references of an expression."""
    return [x for x in walk(expr) if isinstance(x, ast.Attr)]


def strip_vars(expr: Any) -> Any:
    """The expression with every ``v.attr`` written ``_.attr``: a local predicate's
    identity independent of the variable's name (for prefix sharing)."""
    return ast.rewrite(expr, lambda n: replace(n, var="_") if isinstance(n, ast.Attr) else None)


class ScalarCompiler(ExprCompiler):
    """:class:`ExprCompiler` for expressions on one event or one group: a compiled
    expression is ``f(env, event)``; a bare name reads ``env``, then the parameters, when
    evaluated; ``v.attr`` reads ``event`` whatever ``v`` is; the NULL rule holds; number
    literals keep their time unit as written. Kleene indexes, ``LENGTH`` and aggregates
    have no meaning here."""

    null_rule = True

    def __init__(self, params: Mapping[str, Any], lookups: TableLookup):
        super().__init__({}, params, lookups, time_unit=None)

    def _is_constant(self, node: Any) -> bool:
        return isinstance(node, (ast.Num, ast.Str))  # a name may be read from env

    def _name(self, node: ast.Name, pos: Any) -> Callable:
        params, name = self.params, node.name

        def read(env, event):
            v = env.get(name, _MISSING)
            if v is _MISSING:
                v = params.get(name, _MISSING)
            if v is _MISSING:
                raise QuerySemanticError(f"unknown name {name}", node.pos)
            return v
        return read

    def _attr(self, node: ast.Attr, refs: list, attrs: list, pos: Any) -> Callable:
        if node.index is not None:
            raise self.error(f"{to_text(node)}: indexed variables are not supported here",
                             node, pos)
        a, text = node.attr, to_text(node)

        def read(env, event):
            if event is None or a not in event:
                raise QueryError(f"{text}: the event has no attribute {a!r}")
            return event[a]
        return read

    def _length(self, node: ast.Length, refs: list, pos: Any) -> Callable:
        raise self.error(f"`{to_text(node)}` cannot be evaluated here", node, pos)

    def _aggregate(self, node: ast.Aggregate, refs: list, attrs: list, pos: Any) -> Callable:
        raise self.error(f"`{to_text(node)}` cannot be evaluated here", node, pos)


class Evaluator:
    """Evaluates expressions with parameters and lookup tables bound at compile time.

    ``eval(expr, env, event)``: ``env`` maps bare names (group keys, aliases; a local
    predicate passes its event); ``event`` is the dict read by ``v.attr`` (a local
    predicate reads its own event whatever the variable is called). Each expression is
    compiled by a :class:`ScalarCompiler` on first use (or by :meth:`check`) and kept.
    """

    def __init__(self, params: Mapping[str, Any] | None = None,
                 lookups: Mapping[str, Any] | None = None):
        self.params = dict(params or {})
        self.lookups = dict(lookups or {})
        self._compiler = ScalarCompiler(self.params, TableLookup(self.lookups))
        self._compiled: dict[int, tuple[Any, Callable]] = {}

    def check(self, expr: Any, allowed: set[str], what: str) -> None:
        """Raises :class:`QuerySemanticError` naming every name of ``expr`` (one
        expression or a list) that is not in ``allowed`` or the parameters, and every
        lookup that is not bound; then compiles each expression (which raises for what
        cannot be evaluated here)."""
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
        for e in exprs:  # unknown functions, Kleene indexes, ...: now, not when evaluated
            self.compile(e)

    def truth(self, expr: Any, env: Mapping[str, Any], event: Mapping | None = None) -> bool:
        """A filter: true only when the expression is ``True`` (NULL is false)."""
        v = self.compile(expr)(env, event)
        return bool(v) if v is not None else False

    def eval(self, expr: Any, env: Mapping[str, Any], event: Mapping | None = None) -> Any:
        """The value of ``expr`` with the names of ``env`` and the attributes of
        ``event``."""
        return self.compile(expr)(env, event)

    def compile(self, expr: Any) -> Callable[[Mapping[str, Any], Mapping | None], Any]:
        """``expr`` as a function ``f(env, event)``, compiled once per expression."""
        hit = self._compiled.get(id(expr))
        if hit is None:  # the entry keeps ``expr`` alive, so its id stays its own
            hit = self._compiled[id(expr)] = (expr, self._compiler.compile(expr).fn)
        return hit[1]

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_compiled": {}}  # closures do not pickle; compile again
