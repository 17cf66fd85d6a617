"""Expressions of the query language compiled to Python closures.

A compiled expression is ``f(b, k)``: ``b`` maps each bound variable to its event (a
dict) or, for a Kleene variable (``T+ v[]``, or any variable inside ``SEQ(..)+``), to the
tuple of its events; ``k`` is the running index ``i`` (0-based) of ``v[i]``, ``v[i+1]``
(dissertation §2.2.1 and the Kleene predicates of Listings 4.1 and 6.1). Parameters
are bound when compiling; lookups ``name[args]`` go through :class:`cep_core.lookup.Lookup`
and raise :class:`cep_core.lookup.NotYet` when the value has not arrived.

Each compiled expression lists its references to variables (:class:`Ref`):

* ``single``: ``v.attr`` of a variable bound to one event;
* ``i``: ``v[i+o].attr`` (an unindexed ``v.attr`` of a Kleene variable reads ``v[i]``);
* ``closing``: ``v[last]``, ``v[1]``, ``v[m]``, ``LENGTH(v+[])`` and aggregates over
  ``v``: known once ``v`` has all its events.

The plan uses them to place each predicate at the earliest state where its variables
are bound (:mod:`cep_core.plan`).

This is the one place that gives the language's operators, built-in functions and time
units their meaning: the aggregation operators compile their expressions with a
subclass (:class:`cep_core.aggregate.evaluate.ScalarCompiler`: names and attributes read
when evaluated, SQL's NULL rule). :func:`partition_key` reads the ``SAME[..]`` conjuncts
of a ``WHERE`` for the plan and for the aggregation operators alike.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from cep_core.errors import QuerySemanticError
from cep_core.lang import ast
from cep_core.lookup import NOT_YET, Lookup, NotYet

__all__ = ["Ref", "VarInfo", "CompiledExpr", "ExprCompiler", "index_range", "to_text",
           "convert_time", "TIME_FACTORS", "BUILTINS", "COMPARE", "ARITH", "children", "walk",
           "conjuncts", "partition_key", "key_getters", "numeric_attributes"]

#: seconds per time unit of ``WITHIN`` and of number literals
TIME_FACTORS = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}

BUILTINS: dict[str, Callable] = {
    "sqrt": math.sqrt, "abs": abs, "min": min, "max": max, "floor": math.floor,
    "ceil": math.ceil, "round": round, "log": math.log, "exp": math.exp, "pow": pow,
}

#: the comparison and arithmetic operators of the language (``<>``, ``≤``, ``×``, ...
#: are normalised to these by the parser)
COMPARE = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
           ">": operator.gt, ">=": operator.ge}
ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
         "^": operator.pow}


def _member(item: Any, collection: Any) -> bool:
    return item in collection


def _not_member(item: Any, collection: Any) -> bool:
    return item not in collection


def convert_time(value: float, unit: str, time_unit: str) -> float | int:
    """``value`` in ``unit`` (ms, s, min, h) expressed in ``time_unit``; integral results
    are ints (``WITHIN 2h`` is 120 in minutes, 7,200 in seconds)."""
    out = value * TIME_FACTORS[unit] / TIME_FACTORS[time_unit]
    return int(round(out)) if abs(out - round(out)) < 1e-9 else out


def index_range(irefs, b) -> tuple[int, int]:
    """The values ``k`` of the running index for which every ``v[i+o]`` of ``irefs`` (pairs
    ``(v, o)``) exists in the bindings ``b``: ``lo <= k <= hi`` (empty when ``lo > hi``)."""
    lo = max(-o for _, o in irefs)
    hi = min(len(b.get(v, ())) - 1 - o for v, o in irefs)
    return lo, hi


@dataclass(frozen=True)
class Ref:
    var: str
    kind: str  # "single" | "i" | "closing"
    offset: int = 0


@dataclass(frozen=True)
class VarInfo:
    """What the compiler knows of a pattern variable: ``multi`` (bound to a tuple of
    events), its repeat ``scope`` (None if it does not repeat), ``neg`` (a negated
    element) and its automaton ``position`` (the NEG index for negated elements)."""

    name: str
    multi: bool = False
    scope: int | None = None
    neg: bool = False
    position: int = 0


@dataclass
class CompiledExpr:
    fn: Callable[[dict, int | None], Any]
    refs: tuple[Ref, ...]
    attrs: tuple[tuple[str, str], ...]
    text: str

    @property
    def vars(self) -> frozenset[str]:
        return frozenset(r.var for r in self.refs)

    @property
    def irefs(self) -> tuple[tuple[str, int], ...]:
        return tuple(sorted({(r.var, r.offset) for r in self.refs if r.kind == "i"}))


class ExprCompiler:
    """Compiles expressions of a pattern query against its variables, parameters and
    lookups; unknown variables, unbound parameters and lookups, and unsupported
    constructs raise :class:`QuerySemanticError` with their position.

    The one compiler of the query language's expressions: the aggregation operators
    compile theirs with a subclass (:class:`cep_core.aggregate.evaluate.ScalarCompiler`)
    that reads names and attributes when evaluated and sets :attr:`null_rule`.
    ``time_unit`` None keeps number literals with a time unit as written.
    """

    #: SQL's NULL rule: a comparison, arithmetic, ``IN``, unary operator or function call
    #: with a ``None`` operand is ``None``, and ``AND``/``OR`` are three-valued (``False``
    #: and ``True`` decide, else ``None`` if any operand is ``None``).
    null_rule = False

    def __init__(self, variables: Mapping[str, VarInfo], params: Mapping[str, Any],
                 lookups: Lookup, time_unit: str | None = "s", source: str = "<query>"):
        self.variables, self.params, self.lookups = variables, params, lookups
        self.time_unit, self.source = time_unit, source

    # ------------------------------------------------------------------ helpers
    def error(self, message: str, node: Any = None, pos: Any = None) -> QuerySemanticError:
        where = getattr(node, "pos", None) or pos
        return QuerySemanticError(message, where, self.source)

    def param(self, name: str, node: Any, pos: Any) -> Any:
        if name not in self.params:
            raise self.error(f"unbound parameter '{name}' (bind it with params=)", node, pos)
        return self.params[name]

    def compile(self, expr: ast.Expr, pos: Any = None) -> CompiledExpr:
        refs: list[Ref] = []
        attrs: list[tuple[str, str]] = []
        fn = self._c(expr, refs, attrs, getattr(expr, "pos", None) or pos)
        seen: dict[Ref, None] = dict.fromkeys(refs)
        return CompiledExpr(fn, tuple(seen), tuple(dict.fromkeys(attrs)), to_text(expr))

    def _apply(self, op: Callable, *fs: Callable) -> Callable:
        """``op`` of the values of ``fs``; under the NULL rule ``None`` if one is ``None``."""
        if self.null_rule and len(fs) == 2:
            f, g = fs

            def nullable2(b, k):
                x, y = f(b, k), g(b, k)
                return None if x is None or y is None else op(x, y)
            return nullable2
        if self.null_rule:
            def nullable(b, k):
                args = [f(b, k) for f in fs]
                return None if any(a is None for a in args) else op(*args)
            return nullable
        if len(fs) == 1:
            f = fs[0]
            return lambda b, k: op(f(b, k))
        if len(fs) == 2:
            f, g = fs
            return lambda b, k: op(f(b, k), g(b, k))
        return lambda b, k: op(*[f(b, k) for f in fs])

    def _connective(self, conj: bool, fs: list[Callable]) -> Callable:
        """``AND`` (``conj``) or ``OR`` of ``fs``, evaluated left to right until one
        decides."""
        stop = not conj  # the value that decides: False for AND, True for OR
        if self.null_rule:
            def three_valued(b, k):
                out: Any = conj
                for f in fs:
                    v = f(b, k)
                    if v is stop:
                        return stop
                    if v is None:
                        out = None
                return out
            return three_valued

        def two_valued(b, k):
            for f in fs:
                if (not f(b, k)) is conj:
                    return stop
            return conj
        return two_valued

    def _is_constant(self, node: Any) -> bool:
        """Whether ``node`` has one value for the whole query (a literal or a
        parameter)."""
        return isinstance(node, (ast.Num, ast.Str, ast.Name))

    def _function(self, node: ast.Call, pos: Any) -> Callable:
        func = self.params.get(node.func)
        if not callable(func):
            func = BUILTINS.get(node.func) or BUILTINS.get(node.func.lower())
        if func is None:
            raise self.error(f"unknown function '{node.func}' (built-ins: "
                             f"{', '.join(sorted(BUILTINS))}; bind others as callables with "
                             "params=)", node, pos)
        return func

    # ------------------------------------------------------------------ nodes
    def _c(self, node: Any, refs: list[Ref], attrs: list, pos: Any) -> Callable:
        pos = getattr(node, "pos", None) or pos

        def sub(x: Any) -> Callable:
            return self._c(x, refs, attrs, pos)

        if isinstance(node, ast.Num):
            value = node.value
            if self.time_unit is not None and node.unit == "clock":
                value = convert_time(value, "min", self.time_unit)
            elif self.time_unit is not None and node.unit in TIME_FACTORS:
                value = convert_time(value, node.unit, self.time_unit)
            return lambda b, k, v=value: v
        if isinstance(node, ast.Str):
            return lambda b, k, v=node.value: v
        if isinstance(node, ast.Name):
            return self._name(node, pos)
        if isinstance(node, ast.Attr):
            return self._attr(node, refs, attrs, pos)
        if isinstance(node, ast.Length):
            return self._length(node, refs, pos)
        if isinstance(node, (ast.BinOp, ast.Compare)):
            op = (ARITH if isinstance(node, ast.BinOp) else COMPARE).get(node.op)
            if op is None:
                raise self.error(f"unsupported operator {node.op!r}", node, pos)
            return self._apply(op, sub(node.left), sub(node.right))
        if isinstance(node, ast.In):
            return self._apply(_not_member if node.negated else _member, sub(node.item),
                               sub(node.collection))
        if isinstance(node, ast.Neg):
            return self._apply(operator.neg, sub(node.operand))
        if isinstance(node, ast.Not):
            return self._apply(operator.not_, sub(node.item))
        if isinstance(node, ast.SetLit):
            fs = [sub(x) for x in node.items]
            if all(self._is_constant(x) for x in node.items):
                const = frozenset(f(None, None) for f in fs)
                return lambda b, k: const
            make = set if self.null_rule else tuple
            return lambda b, k: make(f(b, k) for f in fs)
        if isinstance(node, (ast.And, ast.Or)):
            return self._connective(isinstance(node, ast.And), [sub(x) for x in node.items])
        if isinstance(node, ast.Call):
            return self._apply(self._function(node, pos), *[sub(x) for x in node.args])
        if isinstance(node, ast.Aggregate):
            return self._aggregate(node, refs, attrs, pos)
        if isinstance(node, ast.Lookup):
            return self._lookup(node, [sub(x) for x in node.args], pos)
        if isinstance(node, ast.CountAll):
            raise self.error("COUNT(*) (the number of matches an event completes) stands "
                             "only in RETURN", node, pos)
        if isinstance(node, ast.Same):
            raise self.error(f"{to_text(node)} is not supported here: SAME must be a "
                             "top-level conjunct of WHERE", node, pos)
        raise self.error(f"unsupported expression {type(node).__name__}", node, pos)

    def _name(self, node: ast.Name, pos: Any) -> Callable:
        value = self.param(node.name, node, pos)
        return lambda b, k, v=value: v

    def _length(self, node: ast.Length, refs: list[Ref], pos: Any) -> Callable:
        info = self._var(node.var, node, pos)
        if not info.multi:
            raise self.error(f"LENGTH({node.var}) needs a Kleene variable "
                             f"({node.var}+[])", node, pos)
        refs.append(Ref(node.var, "closing"))
        v = node.var
        return lambda b, k: len(b.get(v, ()))

    def _lookup(self, node: ast.Lookup, fs: list[Callable], pos: Any) -> Callable:
        """``name[args]`` through :attr:`lookups`; "not yet" raises :class:`NotYet`."""
        if not self.lookups.serves(node.name):
            raise self.error(f"unbound lookup '{node.name}[..]' (bind it with remote= "
                             "or params=)", node, pos)
        get, name = self.lookups.get, node.name

        def lookup(b, k):
            key = tuple(f(b, k) for f in fs)
            value = get(name, key)
            if value is NOT_YET:
                raise NotYet(name, key)
            return value
        return lookup

    def _var(self, name: str, node: Any, pos: Any) -> VarInfo:
        info = self.variables.get(name)
        if info is None:
            known = ", ".join(sorted(self.variables)) or "none"
            raise self.error(f"unknown variable '{name}' (the pattern binds {known})",
                             node, pos)
        return info

    def _attr(self, node: ast.Attr, refs: list[Ref], attrs: list, pos: Any) -> Callable:
        info = self._var(node.var, node, pos)
        v, a, idx = node.var, node.attr, node.index
        attrs.append((v, a))
        if idx is None:
            if info.multi:  # v.attr of a Kleene variable reads v[i]
                refs.append(Ref(v, "i", 0))
                return lambda b, k: b[v][k][a]
            refs.append(Ref(v, "single"))
            return lambda b, k: b[v][a]
        if not info.multi:
            raise self.error(f"'{v}' is not a Kleene variable: {v}[..] needs {v}+[] or "
                             "SEQ(..)+", node, pos)
        if idx.kind == "all":  # every value: the aggregate around it runs over i
            if not self._in_aggregate:
                raise self.error(f"{v}[].{a} (every value of {v}) stands only inside an "
                                 "aggregate: AVG, SUM, MIN, MAX or COUNT", node, pos)
            refs.append(Ref(v, "i", 0))
            return lambda b, k: b[v][k][a]
        if idx.kind == "i":
            o = idx.offset
            refs.append(Ref(v, "i", o))
            return lambda b, k: b[v][k + o][a]
        refs.append(Ref(v, "closing"))
        if idx.kind == "last":
            return lambda b, k: b[v][-1][a]
        if idx.kind == "const":
            n = int(idx.value)
        elif idx.kind == "param":
            n = self.param(str(idx.value), idx, pos)
            if isinstance(n, float) and n.is_integer():
                n = int(n)
            if not isinstance(n, int) or isinstance(n, bool):
                raise self.error(f"index parameter '{idx.value}' must be an integer, "
                                 f"not {n!r}", idx, pos)
        else:
            raise self.error(f"unsupported index kind {idx.kind!r}", idx, pos)
        if n < 1:
            raise self.error(f"index {v}[{n}] must be at least 1 (indexes are 1-based)",
                             idx, pos)
        j = n - 1
        return lambda b, k: b[v][j][a]

    #: whether the expression being compiled stands inside an aggregate (``v[].x`` may)
    _in_aggregate = False

    def _aggregate(self, node: ast.Aggregate, refs: list[Ref], attrs: list,
                   pos: Any) -> Callable:
        inner: list[Ref] = []
        outer, self._in_aggregate = self._in_aggregate, True
        try:
            g = self._c(node.arg, inner, attrs, pos)
        finally:
            self._in_aggregate = outer
        for r in inner:
            multi = self.variables[r.var].multi
            refs.append(Ref(r.var, "closing") if multi else r)
        irefs = tuple(sorted({(r.var, r.offset) for r in inner if r.kind == "i"}))
        func, distinct = node.func.upper(), node.distinct
        if func not in ("AVG", "SUM", "COUNT", "MIN", "MAX"):
            raise self.error(f"unsupported aggregate {node.func}", node, pos)

        def agg(values: list) -> Any:
            if distinct:
                values = list(dict.fromkeys(values))
            if func == "COUNT":
                return len(values)
            if func == "SUM":
                return sum(values)
            if not values:
                raise IndexError(f"{func} of no values")
            if func == "AVG":
                return sum(values) / len(values)
            return min(values) if func == "MIN" else max(values)

        if irefs:
            def over(b, k):
                lo, hi = index_range(irefs, b)
                return agg([g(b, kk) for kk in range(lo, hi + 1)])
            return over
        return lambda b, k: agg([g(b, k)])


# --------------------------------------------------------------------------- printing
def _num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _index(idx: ast.Index) -> str:
    if idx.kind == "i":
        return "i" if idx.offset == 0 else f"i{idx.offset:+d}"
    if idx.kind == "last":
        return "last"
    if idx.kind == "all":
        return ""
    return str(idx.value)


def to_text(node: Any) -> str:
    """The expression as query text (for ``explain`` and error messages)."""
    t = to_text
    if isinstance(node, ast.Num):
        if node.unit == "clock":
            m = int(node.value)
            return f"{m // 60}:{m % 60:02d}"
        return _num(node.value) + (node.unit or "")
    if isinstance(node, ast.Str):
        return repr(node.value)
    if isinstance(node, ast.Name):
        return node.name
    if isinstance(node, ast.Attr):
        idx = f"[{_index(node.index)}]" if node.index is not None else ""
        return f"{node.var}{idx}.{node.attr}"
    if isinstance(node, ast.Length):
        return f"LENGTH({node.var}+[])"
    if isinstance(node, ast.BinOp):
        def side(x):
            return f"({t(x)})" if isinstance(x, ast.BinOp) else t(x)
        return f"{side(node.left)}{node.op}{side(node.right)}"
    if isinstance(node, ast.Neg):
        return f"-{t(node.operand)}"
    if isinstance(node, ast.Compare):
        return f"{t(node.left)} {node.op} {t(node.right)}"
    if isinstance(node, ast.SetLit):
        return "{" + ", ".join(t(x) for x in node.items) + "}"
    if isinstance(node, ast.In):
        return f"{t(node.item)} {'NOT IN' if node.negated else 'IN'} {t(node.collection)}"
    if isinstance(node, ast.And):
        return " AND ".join(t(x) for x in node.items)
    if isinstance(node, ast.Or):
        return "(" + " OR ".join(t(x) for x in node.items) + ")"
    if isinstance(node, ast.Not):
        return f"NOT ({t(node.item)})"
    if isinstance(node, ast.Call):
        return f"{node.func}({', '.join(t(x) for x in node.args)})"
    if isinstance(node, ast.Aggregate):
        return f"{node.func}({'DISTINCT ' if node.distinct else ''}{t(node.arg)})"
    if isinstance(node, ast.Lookup):
        return f"{node.name}[{', '.join(t(x) for x in node.args)}]"
    if isinstance(node, ast.CountAll):
        return "COUNT(*)"
    if isinstance(node, ast.Same):
        return f"SAME{' VALUE' if node.value_form else ''}[{', '.join(t(x) for x in node.attrs)}]"
    return repr(node)


# --------------------------------------------------------------------------- WHERE
def children(node: Any) -> Iterator[Any]:
    """The syntax-tree nodes directly below ``node``."""
    if not is_dataclass(node):
        return
    for f in fields(node):
        if f.name == "pos":
            continue
        v = getattr(node, f.name)
        if isinstance(v, tuple):
            yield from (x for x in v if is_dataclass(x))
        elif is_dataclass(v):
            yield v


def walk(node: Any) -> Iterator[Any]:
    """``node`` and every node below it, top-down."""
    yield node
    for c in children(node):
        yield from walk(c)


def conjuncts(expr: Any) -> list[Any]:
    """The top-level conjuncts of a ``WHERE`` (nested ``AND`` flattened)."""
    if expr is None:
        return []
    if isinstance(expr, ast.And):
        return [c for item in expr.items for c in conjuncts(item)]
    return [expr]


#: built-ins that compute with numbers (``min`` and ``max`` also order text)
NUMERIC_FUNCTIONS = frozenset({"sqrt", "abs", "floor", "ceil", "round", "log", "exp", "pow"})
_ORDERING = frozenset({"<", "<=", ">", ">="})


def numeric_attributes(query: ast.Query, params: Mapping[str, Any] | None = None
                       ) -> dict[str | None, dict[str, str]]:
    """The attributes a query computes with, per event type: what an events file must
    give as numbers.

    An attribute computes when it is an operand of arithmetic (``+ - * / ^``, a unary
    minus), of ``SUM`` or ``AVG``, of a numeric built-in (``sqrt``, ``abs``, ...), or is
    ordered (``< <= > >=``) against a number, arithmetic, ``LENGTH``, ``SUM``, ``AVG``,
    ``COUNT`` or a numeric parameter of ``params``. In a pattern an attribute ``v.x``
    belongs to the type of ``v``'s element; in a stream aggregation a name ``x`` to the
    stream's type (names that are no attribute of the events are the reader's to skip).

    Returns
    -------
    dict
        ``{type: {attribute: the text that reads it}}``.
    """
    params = params or {}
    if isinstance(query, ast.PatternQuery):
        types = {e.var: e.type for e in walk(query.pattern) if isinstance(e, ast.EventElem)}
        exprs = [query.where, *(a.expr for a in (query.returns.args if query.returns else ()))]
    else:
        types = {}
        exprs = [query.where, *(s.expr for s in query.selects),
                 *(a.expr for a in (query.returns.args if query.returns else ()))]

    def numeric(node: Any) -> bool:
        if isinstance(node, (ast.Num, ast.BinOp, ast.Neg, ast.Length)):
            return True
        if isinstance(node, ast.Aggregate):
            return node.func in ("SUM", "AVG", "COUNT")
        if isinstance(node, ast.Call):
            return node.func.lower() in NUMERIC_FUNCTIONS
        if isinstance(node, ast.Name):
            value = params.get(node.name)
            return isinstance(value, int | float) and not isinstance(value, bool)
        return False

    def operands(node: Any) -> tuple:
        if isinstance(node, ast.BinOp):
            return node.left, node.right
        if isinstance(node, ast.Neg):
            return (node.operand,)
        if isinstance(node, ast.Aggregate) and node.func in ("SUM", "AVG"):
            return (node.arg,)
        if isinstance(node, ast.Call) and node.func.lower() in NUMERIC_FUNCTIONS:
            return node.args
        if isinstance(node, ast.Compare) and node.op in _ORDERING:
            return tuple(side for side, other in ((node.left, node.right),
                                                   (node.right, node.left))
                         if numeric(other))
        return ()

    out: dict[str | None, dict[str, str]] = {}
    for expr in exprs:
        for node in walk(expr) if expr is not None else ():
            for x in operands(node):
                if isinstance(x, ast.Attr) and x.var in types:
                    out.setdefault(types[x.var], {}).setdefault(x.attr, to_text(x))
                elif isinstance(x, ast.Name) and isinstance(query, ast.AggregationQuery) \
                        and x.name not in params:
                    out.setdefault(query.source, {}).setdefault(x.name, x.name)
    return out


_CONSTRUCTS = {ast.Or: "OR", ast.Not: "NOT", ast.Compare: "a comparison", ast.In: "IN",
               ast.BinOp: "arithmetic", ast.Neg: "a unary minus", ast.Call: "a function call",
               ast.Lookup: "a lookup", ast.Aggregate: "an aggregate", ast.SetLit: "a set"}


def partition_key(where: Any, source: str = "<query>", computed: bool = False
                  ) -> tuple[str, ...]:
    """The attributes of the ``SAME[..]`` conjuncts of a ``WHERE`` (the partition key),
    in order and without repeats.

    ``SAME`` stands as a top-level conjunct of ``WHERE`` (joined to the rest by ``AND``)
    over plain attribute names, or (``computed``) a function of attributes
    (``SAME[OVERLAP(boundary)]`` of Listing 5.2, given as its text: :func:`key_getters`);
    a ``SAME`` inside ``OR``, ``NOT`` or any other expression, and a computed key where
    it is not allowed, raise :class:`QuerySemanticError` naming the construct and its
    position.
    """
    out: dict[str, None] = {}
    for c in conjuncts(where):
        if not isinstance(c, ast.Same):
            inner = next((x for x in walk(c) if isinstance(x, ast.Same)), None)
            if inner is not None:
                what = _CONSTRUCTS.get(type(c), type(c).__name__)
                raise QuerySemanticError(
                    f"{to_text(inner)} inside {what} is not supported: SAME must be a "
                    "top-level conjunct of WHERE (joined to the rest by AND)",
                    inner.pos or c.pos, source)
            continue
        for a in c.attrs:
            if isinstance(a, ast.Name):
                out[a.name] = None
            elif computed and isinstance(a, ast.Call) and a.args and all(
                    isinstance(x, ast.Name) for x in a.args):
                out[to_text(a)] = None
            else:
                raise QuerySemanticError(
                    f"{to_text(c)} is not supported: SAME takes plain attribute names "
                    f"(SAME[houseID]){' or a function of them' if computed else ''}, not "
                    f"{to_text(a)}", getattr(a, "pos", None) or c.pos, source)
    return tuple(out)


def key_getters(where: Any, params: Mapping[str, Any], source: str = "<query>"
                ) -> list[Callable[[dict], Any]]:
    """One function per item of the partition key (:func:`partition_key` with
    ``computed``): an attribute's value, or a function's value over attributes
    (``SAME[OVERLAP(boundary)]``: ``OVERLAP`` bound as a callable in ``params``). A
    missing attribute raises KeyError (the event has no partition)."""
    getters: dict[str, Callable[[dict], Any]] = {}
    for c in conjuncts(where):
        if not isinstance(c, ast.Same):
            continue
        for a in c.attrs:
            text = to_text(a)
            if isinstance(a, ast.Name):
                getters.setdefault(text, operator.itemgetter(a.name))
                continue
            func = params.get(a.func)
            if not callable(func):
                func = BUILTINS.get(a.func) or BUILTINS.get(a.func.lower())
            if func is None:
                raise QuerySemanticError(
                    f"unknown function '{a.func}' in {to_text(c)} (bind it as a callable "
                    "with params=)", a.pos or c.pos, source)
            names = tuple(x.name for x in a.args)
            getters.setdefault(text, lambda e, f=func, n=names: f(*(e[x] for x in n)))
    return list(getters.values())
