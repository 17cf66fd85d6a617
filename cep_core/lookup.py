"""Lookups ``name[args]``: parameter tables and remote data behind one interface.

A query reads remote data elements by look-up requests ``⟨qid, p1..pn⟩`` (dissertation
§2.1.2, Definition 2.4; docs/decisions.md, "Lookups and remote data"); a fetch has a
latency, and a partial match that needs an element which has not arrived yet must wait
for it (§2.3, Definition 2.10; Ch. 5). Every lookup of a query (``REMOTE[t1.user]``,
``λ[a[i].houseID, a[i].time]``, ``GroupSize[groupID]``) goes through :class:`Lookup`:
``get(name, args)`` returns the value or :data:`NOT_YET`. A parameter table is the
trivial case that always answers; the engines keep the "not yet" path (a partial match
that needs the value stays pending and catches up once it is answered).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cep_core.errors import QueryError

__all__ = ["NOT_YET", "NotYet", "Lookup", "TableLookup", "LookupSet", "is_table"]


class _NotYetType:
    """The answer of a lookup whose value is not available yet (one instance)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_YET"

    def __bool__(self) -> bool:
        raise TypeError("NOT_YET has no truth value: compare it with `is NOT_YET`")

    def __reduce__(self):
        return (_NotYetType, ())


NOT_YET: Any = _NotYetType()


class NotYet(Exception):
    """Raised inside expression evaluation when a lookup answered :data:`NOT_YET`; the
    engine catches it and keeps the partial match pending."""

    def __init__(self, name: str, args: tuple):
        super().__init__(f"{name}{list(args)} not available yet")
        self.name, self.key = name, args


class Lookup:
    """The lookup interface. ``get(name, args)`` returns the value of ``name[args]`` or
    :data:`NOT_YET`; ``serves(name)`` says whether this lookup answers ``name`` (checked
    when compiling); ``settle()`` blocks until every value asked for so far is available
    (called at the end of a stream)."""

    def get(self, name: str, args: tuple) -> Any:
        raise NotImplementedError

    def serves(self, name: str) -> bool:
        return True

    def settle(self) -> None:
        return None

    def changed(self, name: str) -> None:
        """The table of ``name`` changed in place: forget what was built from it."""
        return None


_MISSING = object()


def is_table(obj: Any) -> bool:
    """A parameter table: a mapping (keyed by a scalar or a tuple), a pandas Series
    (a MultiIndex for several arguments), a pandas DataFrame (two arguments: the row's
    label, the column's) or a callable."""
    if isinstance(obj, Mapping) or isinstance(obj, Lookup):
        return True
    if is_series(obj) or is_frame(obj):
        return True
    return callable(obj) and not isinstance(obj, type)


def is_series(obj: Any) -> bool:
    return hasattr(obj, "index") and hasattr(obj, "items") and hasattr(obj, "dtype")


def is_frame(obj: Any) -> bool:
    """Whether ``obj`` is a pandas DataFrame: the table ``name[row, column]``."""
    return hasattr(obj, "index") and hasattr(obj, "columns") and hasattr(obj, "to_numpy") \
        and not hasattr(obj, "dtype")


def _check_table(obj: Any) -> Any:
    if isinstance(obj, Mapping) or is_series(obj) or is_frame(obj) or callable(obj):
        return obj
    raise QueryError(f"a lookup table must be a dict, a pandas Series or DataFrame or a "
                     f"callable, not {type(obj).__name__}")


def as_table(obj: Any) -> Mapping | Callable:
    """A table for per-event lookups: a Series becomes a dict (a MultiIndex gives tuple
    keys), a DataFrame a dict keyed by (row label, column label)."""
    if isinstance(obj, Mapping):
        return obj
    if is_series(obj):
        return dict(obj.items())
    if is_frame(obj):
        values = obj.to_numpy()
        return {(r, c): v for r, row in zip(obj.index.tolist(), values.tolist(), strict=True)
                for c, v in zip(obj.columns.tolist(), row, strict=True)}
    return obj


class TableLookup(Lookup):
    """Tables that always answer: ``tables`` maps a lookup name to a dict (keyed by the
    single argument or by the tuple of arguments), a pandas Series or a callable
    ``f(*args)``. A key missing from a dict raises :class:`QueryError` unless a
    ``default`` is given."""

    def __init__(self, tables: Mapping[str, Any], default: Any = _MISSING):
        # as given (a Series stays one, for bulk lookups); turned into per-event tables on
        # first use, so an engine that only reads in bulk never builds the dict
        self.sources = {name: _check_table(t) for name, t in tables.items()}
        self._tables: dict[str, Mapping | Callable] = {}
        self.default = default

    def serves(self, name: str) -> bool:
        return name in self.sources

    def changed(self, name: str) -> None:
        self._tables.pop(name, None)

    def _table(self, name: str) -> Mapping | Callable:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = as_table(self.sources[name])
        return table

    def get(self, name: str, args: tuple) -> Any:
        table = self._table(name)
        if not isinstance(table, Mapping):
            return table(*args)
        key = args[0] if len(args) == 1 else tuple(args)
        try:
            return table[key]
        except KeyError:
            pass
        except TypeError as ex:
            raise QueryError(f"{name}[{', '.join(map(repr, args))}]: {ex}") from None
        if len(args) == 1 and (args[0],) in table:
            return table[(args[0],)]
        if self.default is not _MISSING:
            return self.default
        raise QueryError(f"{name}[{', '.join(map(repr, args))}]: no such entry in the table")

    def __repr__(self) -> str:
        return f"TableLookup({sorted(self.sources)})"


class LookupSet(Lookup):
    """One lookup for a query: routes each name to the lookup that serves it.

    ``remote`` is a :class:`Lookup` (serving every name it ``serves``) or a mapping from
    name to a :class:`Lookup` or a table; parameter tables in ``params`` serve the names
    ``remote`` does not.
    """

    def __init__(self, params: Mapping[str, Any] | None = None,
                 remote: Lookup | Mapping[str, Any] | None = None):
        self.routes: dict[str, Lookup] = {}
        self.fallback: Lookup | None = None
        if isinstance(remote, Lookup):
            self.fallback = remote
        elif remote is not None:
            for name, value in remote.items():
                self.routes[name] = value if isinstance(value, Lookup) \
                    else TableLookup({name: value})
        for name, value in (params or {}).items():
            if name not in self.routes and is_table(value):
                self.routes[name] = value if isinstance(value, Lookup) \
                    else TableLookup({name: value})

    def _route(self, name: str) -> Lookup | None:
        lk = self.routes.get(name)
        if lk is None and self.fallback is not None and self.fallback.serves(name):
            return self.fallback
        return lk

    def serves(self, name: str) -> bool:
        return self._route(name) is not None

    def get(self, name: str, args: tuple) -> Any:
        lk = self._route(name)
        if lk is None:
            raise QueryError(f"no lookup serves {name}[..]")
        return lk.get(name, args)

    def settle(self) -> None:
        for lk in self._distinct():
            lk.settle()

    def as_tables(self, names: Iterable[str]) -> dict[str, Callable]:
        """The served ``names`` as tables ``f(*args)`` (for operators that need an answer
        at once, such as the aggregation queries)."""
        return {n: _LookupTable(self, n) for n in names if self.serves(n)}

    def _distinct(self) -> Iterable[Lookup]:
        seen: list[Lookup] = []
        for lk in [*self.routes.values(), self.fallback]:
            if lk is not None and all(lk is not s for s in seen):
                seen.append(lk)
        return seen


class _LookupTable:
    """``name[args]`` of a :class:`Lookup` as a callable table; "not yet" is an error."""

    def __init__(self, lookup: Lookup, name: str):
        self.lookup, self.name = lookup, name

    def __call__(self, *args: Any) -> Any:
        value = self.lookup.get(self.name, args)
        if value is NOT_YET:
            raise QueryError(f"{self.name}{list(args)}: not available yet, and this operator "
                             "needs lookups that answer at once")
        return value
