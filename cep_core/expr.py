"""Expressions of the query language compiled to Python closures.

A compiled expression is ``f(b, k)``: ``b`` maps each bound variable to its event (a
dict) or, for a Kleene variable (``T+ v[]``, or any variable inside ``SEQ(..)+``), to the
tuple of its events; ``k`` is the running index ``i`` (0-based) of ``v[i]``, ``v[i+1]``
(dissertation ``seeds/002_33ee9fd4d8899bf7.txt`` §2.2.1 and the Kleene predicates of
Listings 4.1 and 6.1). Parameters are bound when compiling; lookups ``name[args]`` go
through :class:`cep_core.lookup.Lookup` and raise :class:`cep_core.lookup.NotYet` when
the value has not arrived.

Each compiled expression lists its references to variables (:class:`Ref`):

* ``single``: ``v.attr`` of a variable bound to one event;
* ``i``: ``v[i+o].attr`` (an unindexed ``v.attr`` of a Kleene variable reads ``v[i]``);
* ``closing``: ``v[last]``, ``v[1]``, ``v[m]``, ``LENGTH(v+[])`` and aggregates over
  ``v``: known once ``v`` has all its events.

The plan uses them to place each predicate at the earliest state where its variables
are bound (:mod:`cep_core.plan`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cep_core.errors import QuerySemanticError
from cep_core.lang import ast
from cep_core.lookup import NOT_YET, Lookup, NotYet

__all__ = ["Ref", "VarInfo", "CompiledExpr", "ExprCompiler", "index_range", "to_text",
           "convert_time", "TIME_FACTORS", "BUILTINS"]

#: seconds per time unit of ``WITHIN`` and of number literals
TIME_FACTORS = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}

BUILTINS: dict[str, Callable] = {
    "sqrt": math.sqrt, "abs": abs, "min": min, "max": max, "floor": math.floor,
    "ceil": math.ceil, "round": round, "log": math.log, "exp": math.exp, "pow": pow,
}

_COMPARE = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}
_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "^": operator.pow}


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
    constructs raise :class:`QuerySemanticError` with their position."""

    def __init__(self, variables: Mapping[str, VarInfo], params: Mapping[str, Any],
                 lookups: Lookup, time_unit: str = "s", source: str = "<query>"):
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

    # ------------------------------------------------------------------ nodes
    def _c(self, node: Any, refs: list[Ref], attrs: list, pos: Any) -> Callable:
        pos = getattr(node, "pos", None) or pos
        if isinstance(node, ast.Num):
            value = node.value
            if node.unit == "clock":
                value = convert_time(value, "min", self.time_unit)
            elif node.unit in TIME_FACTORS:
                value = convert_time(value, node.unit, self.time_unit)
            return lambda b, k, v=value: v
        if isinstance(node, ast.Str):
            return lambda b, k, v=node.value: v
        if isinstance(node, ast.Name):
            value = self.param(node.name, node, pos)
            return lambda b, k, v=value: v
        if isinstance(node, ast.Attr):
            return self._attr(node, refs, attrs, pos)
        if isinstance(node, ast.Length):
            info = self._var(node.var, node, pos)
            if not info.multi:
                raise self.error(f"LENGTH({node.var}) needs a Kleene variable "
                                 f"({node.var}+[])", node, pos)
            refs.append(Ref(node.var, "closing"))
            v = node.var
            return lambda b, k: len(b.get(v, ()))
        if isinstance(node, ast.BinOp):
            op = _ARITH.get(node.op)
            if op is None:
                raise self.error(f"unsupported operator {node.op!r}", node, pos)
            f, g = self._c(node.left, refs, attrs, pos), self._c(node.right, refs, attrs, pos)
            return lambda b, k: op(f(b, k), g(b, k))
        if isinstance(node, ast.Neg):
            f = self._c(node.operand, refs, attrs, pos)
            return lambda b, k: -f(b, k)
        if isinstance(node, ast.Compare):
            op = _COMPARE.get(node.op)
            if op is None:
                raise self.error(f"unsupported comparison {node.op!r}", node, pos)
            f, g = self._c(node.left, refs, attrs, pos), self._c(node.right, refs, attrs, pos)
            return lambda b, k: op(f(b, k), g(b, k))
        if isinstance(node, ast.SetLit):
            fs = [self._c(x, refs, attrs, pos) for x in node.items]
            if all(isinstance(x, (ast.Num, ast.Str, ast.Name)) for x in node.items):
                const = frozenset(f(None, None) for f in fs)
                return lambda b, k: const
            return lambda b, k: tuple(f(b, k) for f in fs)
        if isinstance(node, ast.In):
            f, g = self._c(node.item, refs, attrs, pos), self._c(node.collection, refs, attrs,
                                                                  pos)
            if node.negated:
                return lambda b, k: f(b, k) not in g(b, k)
            return lambda b, k: f(b, k) in g(b, k)
        if isinstance(node, ast.And):
            fs = [self._c(x, refs, attrs, pos) for x in node.items]

            def conj(b, k):
                for f in fs:
                    if not f(b, k):
                        return False
                return True
            return conj
        if isinstance(node, ast.Or):
            fs = [self._c(x, refs, attrs, pos) for x in node.items]

            def disj(b, k):
                for f in fs:
                    if f(b, k):
                        return True
                return False
            return disj
        if isinstance(node, ast.Not):
            f = self._c(node.item, refs, attrs, pos)
            return lambda b, k: not f(b, k)
        if isinstance(node, ast.Call):
            func = self.params.get(node.func)
            if not callable(func):
                func = BUILTINS.get(node.func) or BUILTINS.get(node.func.lower())
            if func is None:
                raise self.error(f"unknown function '{node.func}' (bind a callable with "
                                 "params=)", node, pos)
            fs = [self._c(x, refs, attrs, pos) for x in node.args]
            return lambda b, k: func(*[f(b, k) for f in fs])
        if isinstance(node, ast.Aggregate):
            return self._aggregate(node, refs, attrs, pos)
        if isinstance(node, ast.Lookup):
            if not self.lookups.serves(node.name):
                raise self.error(f"unbound lookup '{node.name}[..]' (bind it with remote= "
                                 "or params=)", node, pos)
            fs = [self._c(x, refs, attrs, pos) for x in node.args]
            get, name = self.lookups.get, node.name

            def lookup(b, k):
                key = tuple(f(b, k) for f in fs)
                value = get(name, key)
                if value is NOT_YET:
                    raise NotYet(name, key)
                return value
            return lookup
        if isinstance(node, ast.Same):
            raise self.error("SAME[..] must be a top-level conjunct of WHERE", node, pos)
        raise self.error(f"unsupported expression {type(node).__name__}", node, pos)

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

    def _aggregate(self, node: ast.Aggregate, refs: list[Ref], attrs: list,
                   pos: Any) -> Callable:
        inner: list[Ref] = []
        g = self._c(node.arg, inner, attrs, pos)
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
    if isinstance(node, ast.Same):
        return f"SAME{' VALUE' if node.value_form else ''}[{', '.join(t(x) for x in node.attrs)}]"
    return repr(node)
