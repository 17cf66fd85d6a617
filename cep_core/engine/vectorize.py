"""Query expressions compiled to numpy: one evaluation over many partial matches at once.

The keyed vectorized engine (:mod:`cep_core.engine.keyed`) evaluates a predicate for a
whole batch of partial matches with one numpy expression. The semantics are those of
the scalar compiler (:mod:`cep_core.expr`) that the reference engine uses:

* a reference that does not exist (``a[m]`` before ``m`` events) or a division by zero
  makes the *whole* predicate false, as the reference engine's ``IndexError`` /
  ``ZeroDivisionError`` do; ``AND``/``OR`` short-circuit as in Python, so an error on
  the side that is not evaluated does not count;
* ``RETURN`` arguments that do not exist give ``None``.

A compiled expression is ``f(env) -> (values, bad)``: ``env.ref(key)`` returns the
values of one reference for the rows being evaluated and the rows where it does not
exist (or None); ``bad`` marks the rows where evaluation failed (or is None). Reference
keys are ``("attr", var, slot, attr, n)`` with ``slot`` one of ``single``, ``back0``
(the newest event of a Kleene variable, ``v[i+1]`` when the predicate also reads
``v[i]``), ``back1`` (the one before it), ``first``, ``last``, ``nth`` (``v[n]``), and
``("len", var)``.

Constructs outside the vectorized class raise :class:`Unsupported` (the caller then
runs the reference engine): aggregates, ``^``, functions other than ``abs``, ``min``,
``max``, ``floor``, ``ceil``, ``round`` and callables bound as parameters, lookups
that are not parameter tables, and references more than one event apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cep_core.errors import QueryError
from cep_core.expr import ARITH, COMPARE, TIME_FACTORS, VarInfo, convert_time
from cep_core.lang import ast
from cep_core.lookup import is_frame

__all__ = ["Unsupported", "VectorCompiler", "truth", "passes", "fields", "TableIndex"]

_ARITH = {op: ARITH[op] for op in ("+", "-", "*")}  # "/" has its own zero rule; no "^"
_FUNCS: dict[str, Callable] = {"abs": np.abs, "floor": np.floor, "ceil": np.ceil,
                               "round": np.round}


class Unsupported(Exception):
    """The expression is outside what the keyed vectorized engine evaluates."""


def _or(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def truth(values: Any) -> np.ndarray:
    """Python truthiness of each value, as a boolean array."""
    arr = np.asarray(values)
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind in "iuf":
        return arr != 0
    return np.frompyfunc(bool, 1, 1)(arr).astype(bool)


def passes(result: tuple, n: int) -> np.ndarray:
    """Where a compiled predicate's ``(values, bad)`` over ``n`` rows is true (false where
    bad)."""
    vals, bad = result
    res = np.broadcast_to(truth(vals), (n,))
    if bad is not None:
        res = res & ~np.broadcast_to(bad, (n,))
    return res


def fields(fns: list[Callable], env: Any, n: int) -> list[tuple]:
    """The ``(values, bad)`` of compiled RETURN arguments ``fns`` over ``n`` rows of
    ``env``, broadcast to ``n`` (``bad`` None where every value exists)."""
    out = []
    for fn in fns:
        vals, bad = fn(env)
        vals = np.broadcast_to(np.asarray(vals), (n,))
        if bad is not None:
            bad = np.broadcast_to(bad, (n,))
            bad = bad if bad.any() else None
        out.append((vals, bad))
    return out


class TableIndex:
    """A parameter table answering many lookups at once.

    A pandas Series (a MultiIndex for several arguments) or DataFrame (two arguments:
    row, column) is indexed per level; a dict or a callable is asked row by row. A key
    that is not in the table raises :class:`QueryError`, as the table lookup of the
    reference engine does."""

    def __init__(self, name: str, table: Any, nargs: int):
        self.name, self.table, self.nargs = name, table, nargs
        #: ``overlay(args, values) -> values``: what a batch reads in place of the
        #: table's values, while it is set (remote data served at a newer version than
        #: the table's, :class:`cep_core.remote.batch.KeyedFetcher`); None: the table's
        self.overlay: Callable[[list[np.ndarray], np.ndarray], np.ndarray] | None = None
        self.series = hasattr(table, "index") and hasattr(table, "dtype")
        #: a DataFrame: name[row label, column label], a per-level lookup and one gather
        self.frame = is_frame(table)
        if self.frame:
            if nargs != 2:
                raise Unsupported(f"table {name} is a DataFrame (two arguments: row, "
                                  f"column), the lookup gives {nargs} argument(s)")
            self.series = True  # answered from values by position, as a Series
            self.values = table.to_numpy().ravel()
            self.axes = (table.index, table.columns)
            self.luts = [_IntLevel.of(axis) for axis in self.axes]
        elif self.series:
            idx = table.index
            levels = getattr(idx, "nlevels", 1)
            if levels != nargs:
                raise Unsupported(f"table {name} has {levels} index level(s), the lookup "
                                  f"gives {nargs} argument(s)")
            self.values = table.to_numpy()
            self.index = idx
            self.grid = self._grid(idx)
            if self.grid is not None:
                self.luts = [_IntLevel.of(lv) for lv in idx.levels]

    def reload(self) -> None:
        """Re-read the values of a DataFrame table changed in place: the same rows and
        columns, new values (a table a stream fills in as it goes).

        Raises
        ------
        QueryError
            If the table is not a DataFrame or its rows or columns changed.
        """
        if not self.frame:
            raise QueryError(f"table {self.name}: only a DataFrame's values are re-read")
        if not (self.table.index.equals(self.axes[0])
                and self.table.columns.equals(self.axes[1])):
            raise QueryError(f"table {self.name} changed its rows or columns; only its "
                             "values may change")
        self.values = self.table.to_numpy().ravel()

    @staticmethod
    def _grid(idx: Any) -> np.ndarray | None:
        """For a MultiIndex whose level product is not much larger than the table: the
        row of each combination of level codes (-1 where absent), so that a lookup is a
        per-level hash lookup and one gather."""
        if getattr(idx, "nlevels", 1) < 2 or not idx.is_unique:
            return None
        shape = tuple(len(lv) for lv in idx.levels)
        if math.prod(shape) > max(4 * len(idx), 1 << 20):
            return None
        grid = np.full(math.prod(shape), -1, dtype=np.int64)
        grid[np.ravel_multi_index(tuple(np.asarray(c) for c in idx.codes), shape)] = \
            np.arange(len(idx))
        return grid

    def _positions(self, args: list[np.ndarray]) -> np.ndarray:
        import pandas as pd

        if self.frame:  # row-major position of (row, column), -1 where either is absent
            rows, cols = (lut.codes(a) if lut is not None else None for lut, a in
                          zip(self.luts, args, strict=True))
            rows = self.axes[0].get_indexer(args[0]) if rows is None else rows
            cols = self.axes[1].get_indexer(args[1]) if cols is None else cols
            flat = rows * len(self.axes[1]) + cols
            return np.where((rows < 0) | (cols < 0), -1, flat)
        idx = self.index
        if self.nargs == 1:
            return idx.get_indexer(args[0])
        if self.grid is None:
            return idx.get_indexer(pd.MultiIndex.from_arrays(args))
        codes = []
        for lv, lut, a in zip(idx.levels, self.luts, args, strict=True):
            c = lut.codes(a) if lut is not None else None
            codes.append(lv.get_indexer(a) if c is None else c)
        flat = codes[0]
        if all(c.min() >= 0 for c in codes):  # every level value is known: row-major offset
            for lv, c in zip(idx.levels[1:], codes[1:], strict=True):
                flat = flat * len(lv) + c
            return self.grid[flat]
        absent = np.zeros(len(args[0]), dtype=bool)
        for c in codes:
            absent |= c < 0
        shape = tuple(len(lv) for lv in idx.levels)
        flat = np.ravel_multi_index(tuple(np.where(absent, 0, c) for c in codes), shape)
        return np.where(absent, -1, self.grid[flat])

    def get(self, args: list[np.ndarray], deferred: np.ndarray | None = None) -> np.ndarray:
        """The values at the keys ``args``. A missing key raises, or, with ``deferred``
        (a boolean array over the keys), is marked there and left for the caller to
        raise if it needs that row. Through :attr:`overlay` while one is set."""
        values = self._get(args, deferred)
        return values if self.overlay is None else self.overlay(args, values)

    def _get(self, args: list[np.ndarray], deferred: np.ndarray | None) -> np.ndarray:
        n = len(args[0]) if args else 0
        if n == 0:
            return np.empty(0, dtype=self.values.dtype if self.series else object)
        if self.series:
            pos = self._positions(args)
            missing = pos < 0
            if missing.any():
                if deferred is None:
                    j = int(np.flatnonzero(missing)[0])
                    self._missing(tuple(a[j] for a in args))
                deferred |= missing
                pos = np.where(missing, 0, pos)
            return self.values[pos]
        if callable(self.table) and not isinstance(self.table, Mapping):
            return np.frompyfunc(self.table, self.nargs, 1)(*args)
        keys = zip(*[a.tolist() for a in args], strict=True) if self.nargs > 1 \
            else args[0].tolist()
        table, miss = self.table, object()
        out = [table.get(k, miss) for k in keys]
        absent = [j for j, v in enumerate(out) if v is miss]
        if absent:
            if deferred is None:
                self._missing(tuple(a[absent[0]] for a in args))
            stand_in = next((v for v in out if v is not miss), 0)  # never read: deferred
            for j in absent:
                deferred[j], out[j] = True, stand_in
        return np.asarray(out)

    def _missing(self, key: tuple) -> None:
        key = tuple(x.item() if isinstance(x, np.generic) else x for x in key)
        raise QueryError(f"{self.name}[{', '.join(map(repr, key))}]: no such entry in the "
                         "table")


class _IntLevel:
    """Codes of an index level of integers in a compact range, by one array lookup."""

    def __init__(self, lo: int, lut: np.ndarray):
        self.lo, self.lut = lo, lut

    @classmethod
    def of(cls, level: Any) -> _IntLevel | None:
        values = np.asarray(level)
        if values.dtype.kind not in "iu" or not values.size:
            return None
        lo, hi = int(values.min()), int(values.max())
        if hi - lo >= max(4 * values.size, 1 << 16):
            return None
        lut = np.full(hi - lo + 1, -1, dtype=np.int64)
        lut[values - lo] = np.arange(values.size)
        return cls(lo, lut)

    def codes(self, keys: np.ndarray) -> np.ndarray | None:
        """The level codes of ``keys`` (-1 where absent), or None for keys that are not
        integers (the caller asks the index itself)."""
        keys = np.asarray(keys)
        if keys.dtype.kind not in "iu":
            return None
        off = keys - self.lo
        if not off.size or (off.min() >= 0 and off.max() < self.lut.size):
            return self.lut[off]
        inside = (off >= 0) & (off < self.lut.size)
        return np.where(inside, self.lut[np.where(inside, off, 0)], -1)


class VectorCompiler:
    """Compiles expressions of a pattern query to numpy (see the module doc).
    ``tables`` maps a lookup name to its :class:`TableIndex`."""

    def __init__(self, variables: Mapping[str, VarInfo], params: Mapping[str, Any],
                 tables: Mapping[str, Any], time_unit: str):
        self.variables, self.params, self.tables = variables, params, tables
        self.time_unit = time_unit
        #: the tables' indexes, by lookup name
        self.indexes: dict[str, TableIndex] = {}

    def compile(self, node: Any, anchor_offset: int = 0) -> tuple[Callable, set]:
        """``(f, refs)``: ``f(env) -> (values, bad)`` and the reference keys it reads;
        ``anchor_offset`` is the largest ``i`` offset of the predicate (its newest event)."""
        refs: set = set()
        return self._c(node, anchor_offset, refs), refs

    # ------------------------------------------------------------------ nodes
    def _c(self, node: Any, top: int, refs: set) -> Callable:
        """``node`` compiled to ``f(env) -> (values, bad)``; the reference keys it reads
        are added to ``refs`` and ``top`` is the predicate's newest ``i`` offset."""
        if isinstance(node, ast.Num | ast.Str | ast.Name):
            return self._constant(node)
        if isinstance(node, ast.Attr | ast.Length):
            return self._reference(node, top, refs)
        if isinstance(node, ast.BinOp | ast.Neg):
            return self._arithmetic(node, top, refs)
        if isinstance(node, ast.Compare | ast.In):
            return self._comparison(node, top, refs)
        if isinstance(node, ast.And | ast.Or | ast.Not):
            return self._logic(node, top, refs)
        if isinstance(node, ast.Call):
            return self._call(node, top, refs)
        if isinstance(node, ast.Lookup):
            return self._lookup(node, top, refs)
        raise Unsupported(type(node).__name__)

    def _constant(self, node: ast.Num | ast.Str | ast.Name) -> Callable:
        """A number (times in the query's unit), a string or a parameter's value."""
        if isinstance(node, ast.Num):
            value = node.value
            if node.unit == "clock":
                value = convert_time(value, "min", self.time_unit)
            elif node.unit in TIME_FACTORS:
                value = convert_time(value, node.unit, self.time_unit)
            return lambda env, v=value: (v, None)
        if isinstance(node, ast.Str):
            return lambda env, v=node.value: (v, None)
        value = self.params.get(node.name)
        if node.name not in self.params or callable(value) or isinstance(value, Mapping):
            raise Unsupported(f"parameter {node.name}")
        return lambda env, v=value: (v, None)

    def _reference(self, node: ast.Attr | ast.Length, top: int, refs: set) -> Callable:
        """An event's attribute or a Kleene variable's length, read from ``env``."""
        key = self._attr_key(node, top) if isinstance(node, ast.Attr) else ("len", node.var)
        refs.add(key)
        return lambda env: env.ref(key)

    def _arithmetic(self, node: ast.BinOp | ast.Neg, top: int, refs: set) -> Callable:
        """``+``, ``-``, ``*``, unary minus, and ``/`` with a zero divisor making the row
        bad (the module doc)."""
        if isinstance(node, ast.Neg):
            f = self._c(node.operand, top, refs)

            def neg(env):
                x, bad = f(env)
                return -np.asarray(x), bad
            return neg
        f, g = self._c(node.left, top, refs), self._c(node.right, top, refs)
        if node.op == "/":
            def div(env):
                (x, bx), (y, by) = f(env), g(env)
                zero = np.broadcast_to(np.asarray(y) == 0, (env.size,))
                with np.errstate(divide="ignore", invalid="ignore"):
                    out = np.true_divide(x, np.where(zero, 1, y))
                return out, _or(_or(bx, by), zero if zero.any() else None)
            return div
        op = _ARITH.get(node.op)
        if op is None:
            raise Unsupported(f"operator {node.op}")
        return lambda env: _binary(op, f(env), g(env))

    def _comparison(self, node: ast.Compare | ast.In, top: int, refs: set) -> Callable:
        """A comparison, or ``[NOT] IN`` a constant set."""
        if isinstance(node, ast.Compare):
            op = COMPARE[node.op]
            f, g = self._c(node.left, top, refs), self._c(node.right, top, refs)
            return lambda env: _binary(op, f(env), g(env))
        if not isinstance(node.collection, ast.SetLit) or not all(
                isinstance(x, (ast.Num, ast.Str, ast.Name)) for x in node.collection.items):
            raise Unsupported("IN over a set that is not constant")
        items = [self._c(x, top, refs)(None)[0] for x in node.collection.items]
        f, negated = self._c(node.item, top, refs), node.negated

        def member(env):
            x, bad = f(env)
            hit = np.isin(np.asarray(x), items)
            return (~hit if negated else hit), bad
        return member

    def _logic(self, node: ast.And | ast.Or | ast.Not, top: int, refs: set) -> Callable:
        """``NOT``, and ``AND`` / ``OR`` short-circuiting as Python does: an error counts
        only on the rows where its item is evaluated (the module doc)."""
        if isinstance(node, ast.Not):
            f = self._c(node.item, top, refs)

            def negate(env):
                x, bad = f(env)
                return ~truth(x), bad
            return negate
        fs = [self._c(x, top, refs) for x in node.items]
        conj = isinstance(node, ast.And)

        def logic(env):
            acc, bad = None, None
            for f in fs:
                x, bx = f(env)
                t = truth(x)
                if acc is None:
                    acc, bad = t, bx
                    continue
                live = acc if conj else ~acc  # rows where Python evaluates this item
                if bx is not None:
                    bad = _or(bad, live & bx)
                acc = (acc & t) if conj else (acc | t)
            return acc, bad
        return logic

    def _attr_key(self, node: ast.Attr, top: int) -> tuple:
        info = self.variables[node.var]
        idx = node.index
        if not info.multi:
            return ("attr", node.var, "single", node.attr, 0)
        if info.scope is None:
            raise Unsupported("SEQ(..)+")
        if idx is None or idx.kind == "i":
            back = top - (idx.offset if idx is not None else 0)
            if back not in (0, 1):
                raise Unsupported("references more than one event apart")
            return ("attr", node.var, f"back{back}", node.attr, 0)
        if idx.kind == "last":
            return ("attr", node.var, "last", node.attr, 0)
        n = int(idx.value) if idx.kind == "const" else self.params.get(str(idx.value))
        if isinstance(n, float) and n.is_integer():
            n = int(n)
        if not isinstance(n, int) or n < 1:
            raise Unsupported("index")
        if n == 1:
            return ("attr", node.var, "first", node.attr, 0)
        return ("attr", node.var, "nth", node.attr, n)

    def _call(self, node: ast.Call, top: int, refs: set) -> Callable:
        fs = [self._c(x, top, refs) for x in node.args]
        bound = self.params.get(node.func)
        name = node.func.lower()
        if callable(bound):
            ufunc = np.frompyfunc(bound, len(fs), 1)
            func: Callable = ufunc
        elif name in ("min", "max") and len(fs) >= 2:
            pair = np.minimum if name == "min" else np.maximum

            def func(*xs):
                out = xs[0]
                for x in xs[1:]:
                    out = pair(out, x)
                return out
        elif name in _FUNCS and len(fs) == 1:
            func = _FUNCS[name]
        else:
            raise Unsupported(f"function {node.func}")

        def call(env):
            vals, bad = [], None
            for f in fs:
                x, bx = f(env)
                vals.append(np.asarray(x))
                bad = _or(bad, bx)
            return func(*vals), bad
        return call

    def _lookup(self, node: ast.Lookup, top: int, refs: set) -> Callable:
        table = self.tables.get(node.name)
        if table is None:
            raise Unsupported(f"lookup {node.name} is not a parameter table")
        index = self.indexes.get(node.name)
        if index is None:
            index = self.indexes[node.name] = TableIndex(node.name, table, len(node.args))
        if index.nargs != len(node.args):
            raise Unsupported(f"lookup {node.name} with different argument counts")
        fs = [self._c(x, top, refs) for x in node.args]

        def lookup(env):
            args, bad = [], None
            for f in fs:
                x, bx = f(env)
                args.append(np.broadcast_to(np.asarray(x), (env.size,)))
                bad = _or(bad, bx)
            deferred = getattr(env, "deferred", None)
            if bad is not None and bad.any():  # rows that cannot form the key
                ok = ~bad
                out = np.empty(env.size, dtype=object)
                if ok.any():
                    sub = None if deferred is None else np.zeros(int(ok.sum()), dtype=bool)
                    out[ok] = index.get([a[ok] for a in args], sub)
                    if sub is not None:
                        deferred[ok] |= sub
                return out, bad
            return index.get(args, deferred), None
        return lookup


def _binary(op: Callable, left: tuple, right: tuple) -> tuple:
    (x, bx), (y, by) = left, right
    return op(np.asarray(x) if not np.isscalar(x) else x, y), _or(bx, by)
