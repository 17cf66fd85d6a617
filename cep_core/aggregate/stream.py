"""Stream aggregation: ``SELECT aggs FROM T STREAM [WHERE ..] [GROUP BY ..] RETURN R(..)``.

The group and utility tiers of the DR application (dissertation §6.2.2, Listings 6.2 and
6.3, top; docs/decisions.md, "Stream aggregation queries") count the distinct households
(groups) that raised an alert at each time and sum their loads::

    SELECT COUNT(DISTINCT houseID) AS alertNum, SUM(accLoad) AS sumAccLoad
    FROM userNonComplianceEvent STREAM
    WHERE SAME[groupID] AND alertNum > γ_user × GroupSize[groupID]
    GROUP BY time
    RETURN groupAlertEvent(time, groupID, sumAccLoad)

Chosen readings:

* **Groups.** The events of type ``T`` are grouped by the ``GROUP BY`` attributes and the
  ``SAME[..]`` attributes (``SAME[groupID]`` makes groupID constant in a group, so the
  filter and ``RETURN`` may read it).
* **Completion.** Events arrive in time order (ties allowed). With ``time`` among the
  grouping attributes a group is complete once the stream time (the time of the latest
  event of any type) passes its ``time``: events with equal times belong to the same
  group, so a group closes at the first later event, or at :meth:`StreamAggregation.flush`
  (end of input). Without ``time`` groups close only at ``flush``. Closed groups are
  emitted in order of time, then of first appearance.
* **WHERE** is a filter on finished groups (SQL ``HAVING``): each conjunct may read the
  select aliases, the grouping attributes, parameters and lookups; aggregates written
  inline (``COUNT(x) > 3``) are computed as hidden aggregates. Any other name is an error
  (:class:`~cep_core.errors.QuerySemanticError` naming it).
* **Aggregates** (SQL): ``COUNT(x)`` counts non-null ``x`` (``COUNT(*)`` every event),
  ``DISTINCT`` aggregates the set of distinct non-null values, SUM/AVG/MIN/MAX skip nulls
  (``None``, NaN) and are ``None`` when nothing is left; a comparison with ``None`` is
  false. Aggregate arguments read the event's attributes by bare name (then parameters).
* **Output** events: ``{"type": R, field: value, ..}``, fields named by their alias, the
  name or attribute read, else ``argN`` (N the 1-based position); a repeated name gets
  ``_2``, ``_3``. When the group has a ``time`` and no field is called ``time``, the
  group's time is added (downstream engines need a timestamp). Without ``RETURN`` the
  output holds the grouping attributes and the select items, type ``<T>Aggregate``.

Counters: ``pm_created`` groups opened, ``pm_extended`` events aggregated,
``pm_dropped`` groups rejected by the filter, ``predicates`` filter conjuncts evaluated,
``outputs`` events emitted.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from cep_core.aggregate.evaluate import Evaluator, lookups_in, names_in, to_text
from cep_core.counters import Counters
from cep_core.engine.protocol import EngineBase
from cep_core.errors import QueryError, QuerySemanticError
from cep_core.events import unique_names
from cep_core.expr import conjuncts, partition_key
from cep_core.lang import ast

__all__ = ["compile_aggregation", "StreamAggregation"]

_FUNCS = ("COUNT", "SUM", "AVG", "MIN", "MAX")
_MISSING = object()


@dataclass(frozen=True)
class _Agg:
    label: str
    func: str
    distinct: bool
    arg: Any            # expression, or None for COUNT(*)
    attr: str | None    # the argument when it is a bare attribute name (fast path)


def _is_null(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _replace_aggs(expr: Any, found: dict[Any, str], fresh) -> Any:
    """The expression with every aggregate replaced by a name (``found`` maps each
    aggregate to its label; ``fresh(agg)`` names a new one)."""
    def name_of(node: Any) -> ast.Name | None:
        if not isinstance(node, ast.Aggregate):
            return None
        key = replace(node, pos=None)
        if key not in found:
            found[key] = fresh(node)
        return ast.Name(found[key], node.pos)

    return ast.rewrite(expr, name_of)




def compile_aggregation(query: ast.AggregationQuery, params: Mapping[str, Any] | None = None,
                        lookups: Mapping[str, Any] | None = None) -> StreamAggregation:
    """Checks and compiles an aggregation query (Listings 6.2/6.3, top).

    ``params`` binds bare names (``γ_user``, ``GROUPNUM``); ``lookups`` binds tables read
    as ``name[args]`` (``GroupSize[groupID]``): dicts keyed by the argument or the tuple
    of arguments, pandas Series indexed by them, or callables.
    """
    if not isinstance(query, ast.AggregationQuery):
        raise QuerySemanticError("not an aggregation query (SELECT .. FROM T STREAM ..)",
                                 getattr(query, "pos", None))
    ev = Evaluator(params, lookups)
    same = partition_key(query.where)
    filters = [c for c in conjuncts(query.where) if not isinstance(c, ast.Same)]
    keys = tuple(dict.fromkeys(tuple(query.group_by) + same))
    aggs: list[tuple[str | None, ast.Aggregate]] = []
    plain: list[tuple[str, str]] = []               # (label, key attribute)
    for item in query.selects:
        e = item.expr
        if isinstance(e, ast.Aggregate):
            aggs.append((item.alias, e))
        elif isinstance(e, ast.Name) and e.name in keys:
            plain.append((item.alias or e.name, e.name))
        else:
            raise QuerySemanticError(f"SELECT {to_text(e)}: neither an aggregate nor a "
                                     f"grouping attribute ({', '.join(keys) or 'none'})",
                                     item.pos or getattr(e, "pos", None))
    labels = unique_names([a or _agg_label(e) for a, e in aggs] + [lab for lab, _ in plain])
    plain = [(lab, attr) for lab, (_, attr) in zip(labels[len(aggs):], plain, strict=True)]
    labels = labels[:len(aggs)]
    found: dict[Any, str] = {replace(e, pos=None): lab
                             for lab, (_, e) in zip(labels, aggs, strict=True)}
    hidden: list[tuple[str, ast.Aggregate]] = []

    def fresh(e: ast.Aggregate) -> str:
        lab = f"_agg{len(hidden) + 1}"
        hidden.append((lab, e))
        return lab

    filters = [_replace_aggs(f, found, fresh) for f in filters]
    ret = query.returns
    ret_args = [] if ret is None else [(_replace_aggs(a.expr, found, fresh), a) for a in ret.args]
    agg_specs = [_agg_spec(lab, e) for lab, (_, e) in zip(labels, aggs, strict=True)] + \
        [_agg_spec(lab, e) for lab, e in hidden]
    visible = labels + [lab for lab, _ in plain]
    allowed = set(keys) | {s.label for s in agg_specs} | {lab for lab in visible}
    out_fields: list[tuple[str, Any]] = []
    if ret is None:
        out_fields = [(k, ast.Name(k)) for k in dict.fromkeys(list(keys) + visible)]
        out_type = f"{query.source}Aggregate"
    else:
        names = []
        for i, (_, a) in enumerate(ret_args, 1):
            names.append(a.alias or (a.expr.name if isinstance(a.expr, ast.Name) else
                                     a.expr.attr if isinstance(a.expr, ast.Attr) else f"arg{i}"))
        out_fields = list(zip(unique_names(names), [e for e, _ in ret_args], strict=True))
        out_type = ret.type or f"{query.source}Aggregate"
    ev.check(filters + [e for e, _ in ret_args], allowed,
             "a select alias or grouping attribute")
    for spec in agg_specs:  # an argument read from each event: compiled now, for its errors
        if spec.arg is not None and spec.attr is None:
            ev.compile(spec.arg)
    plain_map = dict(plain)
    return StreamAggregation(query, ev, keys, agg_specs, plain_map, filters, out_type,
                             out_fields)


def _agg_label(e: ast.Aggregate) -> str:
    arg = e.arg
    what = (arg.name if isinstance(arg, ast.Name) else
            arg.attr if isinstance(arg, ast.Attr) else "expr")
    what = "all" if what == "*" else what
    return f"{e.func.lower()}{'_distinct' if e.distinct else ''}_{what}"


def _agg_spec(label: str, e: ast.Aggregate) -> _Agg:
    if e.func not in _FUNCS:
        raise QuerySemanticError(f"unknown aggregate {e.func} ({', '.join(_FUNCS)})", e.pos)
    arg = e.arg
    if isinstance(arg, ast.Name) and arg.name == "*":
        if e.func != "COUNT" or e.distinct:
            raise QuerySemanticError(f"{e.func}(*): only COUNT(*) counts events", e.pos)
        return _Agg(label, "COUNT", False, None, None)
    if isinstance(arg, ast.Aggregate):
        raise QuerySemanticError(f"{to_text(e)}: nested aggregate", e.pos)
    attr = arg.name if isinstance(arg, ast.Name) else (
        arg.attr if isinstance(arg, ast.Attr) and arg.index is None else None)
    return _Agg(label, e.func, e.distinct, arg, attr)


class StreamAggregation(EngineBase):
    """A compiled aggregation query: :meth:`feed` events incrementally (closed groups are
    returned), :meth:`flush` at the end of input, or :meth:`run` a whole stream. Picklable
    with its state (when its lookup tables are)."""

    name = "aggregate"

    @classmethod
    def refusal(cls, plan: Any, options: Any) -> str | None:
        if options.filtered or options.output != "events":
            return "aggregation queries take no filters and output events"
        return None

    def __init__(self, query: ast.AggregationQuery, ev: Evaluator, keys: tuple[str, ...],
                 aggs: list[_Agg], plain: dict[str, str], filters: list[Any], out_type: str,
                 out_fields: list[tuple[str, Any]]):
        self.query = query
        self.source = query.source
        self._ev = ev
        self.keys = keys
        self._aggs = aggs
        self._plain = plain
        self._filters = filters
        self._out_type = out_type
        self._out_fields = out_fields
        self._time_pos = keys.index("time") if "time" in keys else None
        self._add_time = self._time_pos is not None and all(n != "time" for n, _ in out_fields)
        self.counters = Counters()
        self.reset()

    @property
    def output_fields(self) -> tuple[str, ...]:
        """The fields of its output events (the group's time added when RETURN omits it)."""
        names = tuple(name for name, _ in self._out_fields)
        return (*names, "time") if self._add_time else names

    def reset(self) -> None:
        """Forget the open groups and the stream time (the counters keep counting)."""
        self._groups: dict[tuple, list] = {}
        self._now: Any = None

    # ------------------------------------------------------------------ feeding
    def reads_frame(self, events: Any) -> bool:
        return hasattr(events, "columns") and self.reads_columns(events)

    def feed_batch(self, events: Iterable[Mapping[str, Any]] | Any) -> list[dict]:
        """Aggregates the next events (in time order); returns the groups they closed
        (:meth:`feed` gives them as dicts or as a DataFrame).

        A pandas DataFrame is read column by column when every column the query reads
        holds numpy data (:meth:`_feed_columns`), else row by row as dicts; both give the
        same outputs and counters."""
        if hasattr(events, "columns") and hasattr(events, "to_dict"):
            if self.reads_columns(events):
                return self._feed_columns(events)
            events = events.to_dict("records")
        out: list[dict] = []
        c = self.counters
        groups, keys, src, aggs = self._groups, self.keys, self.source, self._aggs
        timed = self._time_pos is not None
        for n, e in enumerate(events):
            c.events += 1
            try:
                t = e["time"]
            except KeyError:
                raise QueryError(f"event {n}: needs a 'time'") from None
            if self._now is None or t > self._now:
                self._now = t
                if timed and groups:
                    out += self._close(lambda g, t=t: g[self._time_pos] < t)
            elif t < self._now:
                raise QueryError(f"event {n}: time {t} before the previous {self._now}; a "
                                 "stream has non-decreasing timestamps")
            if e.get("type") != src:
                continue
            try:
                key = tuple(e[k] for k in keys)
            except KeyError:
                miss = next(k for k in keys if k not in e)
                raise QueryError(f"event {n} ({src}): no attribute {miss!r} to group by") \
                    from None
            acc = groups.get(key)
            if acc is None:
                acc = groups[key] = [_start(a) for a in aggs]
                c.pm_created += 1
            c.pm_extended += 1
            for a, st in zip(aggs, acc, strict=True):
                if a.arg is None:
                    st[0] += 1
                    continue
                if a.attr is not None:
                    v = e.get(a.attr, _MISSING)
                    if v is _MISSING:
                        v = self._ev.params.get(a.attr, _MISSING)
                        if v is _MISSING:
                            raise QueryError(f"event {n} ({src}): no attribute {a.attr!r} "
                                             f"for {a.label}")
                else:
                    v = self._ev.eval(a.arg, e, e)
                if _is_null(v):
                    continue
                if a.distinct:
                    st.add(v)
                elif a.func == "COUNT":
                    st[0] += 1
                elif a.func in ("SUM", "AVG"):
                    st[0] += v
                    st[1] += 1
                elif a.func == "MIN":
                    if st[0] is None or v < st[0]:
                        st[0] = v
                elif st[0] is None or v > st[0]:
                    st[0] = v
        return out

    def reads_columns(self, frame: Any) -> bool:
        """Whether :meth:`_feed_columns` can read ``frame``: the type, time, grouping and
        aggregated columns are there as numpy numbers or objects (which ``tolist`` gives
        as ``to_dict`` does), and every aggregate reads a bare attribute."""
        needed = {"type", "time", *self.keys}
        for a in self._aggs:
            if a.arg is not None:
                if a.attr is None:
                    return False
                needed.add(a.attr)
        if not needed <= set(frame.columns):
            return False
        return all(isinstance(frame[c].dtype, np.dtype) and frame[c].dtype.kind in "biufO"
                   for c in needed - {"type"})

    def _feed_columns(self, frame: Any) -> list[dict]:
        """:meth:`feed` over a frame's columns: the rows of each distinct time at once,
        each group's rows in stream order (so sums add up in the same order as row by
        row). A time out of order raises before any row is aggregated."""
        n = len(frame)
        if not n:
            return []
        times = frame["time"].to_numpy()
        back = np.flatnonzero(np.diff(times) < 0)
        if back.size or (self._now is not None and times[0] < self._now):
            j = int(back[0]) + 1 if back.size else 0
            before = times[j - 1] if j else self._now
            raise QueryError(f"event {j}: time {times[j]} before the previous {before}; a "
                             "stream has non-decreasing timestamps")
        c = self.counters
        c.events += n
        ours = (frame["type"] == self.source).to_numpy(dtype=bool)
        keys = [frame[k].to_numpy() for k in self.keys]
        values = {a.attr: frame[a.attr].to_numpy() for a in self._aggs if a.attr is not None}
        timed = self._time_pos is not None
        out: list[dict] = []
        _, starts = np.unique(times, return_index=True)
        for lo, hi in zip(starts.tolist(), [*starts[1:].tolist(), n], strict=True):
            t = times[lo].item()
            if self._now is None or t > self._now:
                self._now = t
                if timed and self._groups:
                    out += self._close(lambda g, t=t: g[self._time_pos] < t)
            rows = lo + np.flatnonzero(ours[lo:hi])
            for at in _members(keys, rows):
                key = tuple(k[at[:1]].tolist()[0] for k in keys)
                self._aggregate(key, at, values)
        return out

    def _aggregate(self, key: tuple, rows: np.ndarray, values: dict[str, np.ndarray]
                   ) -> None:
        """Rows ``rows`` (stream order) into the group ``key``, as :meth:`feed` does one by
        one."""
        c = self.counters
        acc = self._groups.get(key)
        if acc is None:
            acc = self._groups[key] = [_start(a) for a in self._aggs]
            c.pm_created += 1
        c.pm_extended += len(rows)
        for a, st in zip(self._aggs, acc, strict=True):
            if a.arg is None:
                st[0] += len(rows)
                continue
            given = values[a.attr][rows]
            floats = given.dtype.kind == "f"
            if floats:  # (NaN is null; a float column has no other)
                given = given[~np.isnan(given)]
            vals = given.tolist() if floats or given.dtype.kind in "biu" else \
                [v for v in given.tolist() if not _is_null(v)]
            if a.distinct:
                st.update(vals)
            elif a.func == "COUNT":
                st[0] += len(vals)
            elif a.func in ("SUM", "AVG"):
                if floats and len(vals):  # in stream order, as row by row: a running sum
                    st[0] = np.cumsum(np.r_[st[0], given])[-1].item()
                else:
                    for v in vals:
                        st[0] += v
                st[1] += len(vals)
            elif vals and a.func == "MIN":
                st[0] = min(vals) if st[0] is None else min(st[0], min(vals))
            elif vals:
                st[0] = max(vals) if st[0] is None else max(st[0], max(vals))

    def flush(self) -> list[dict]:
        """Closes every open group (end of input)."""
        return self._close(lambda g: True)

    def ending(self) -> StreamAggregation:
        """Return a copy to :meth:`flush` now that leaves this aggregation as it is.

        The engine's :meth:`~cep_core.engine.protocol.Engine.ending`, copying only what
        a flush changes. A flush closes every open group: it takes them out of the
        copy's own dict of groups and counts into the copy's own counters, reading each
        group's accumulators, which both share (a flush does not change them), as they
        share the compiled query. The copy is meant for a flush right away: feeding this
        aggregation changes the accumulators it shares.

        Returns
        -------
        StreamAggregation
            The copy.
        """
        twin = copy.copy(self)
        twin._groups, twin.counters = dict(self._groups), copy.copy(self.counters)
        return twin

    def run(self, events: Iterable[Mapping[str, Any]] | Any) -> list[dict]:
        """The outputs of a whole stream, from a fresh state."""
        self.reset()
        return self.feed(events) + self.flush()

    def _close(self, done) -> list[dict]:
        # groups are kept in order of first appearance, which is time order
        gone = [k for k in self._groups if done(k)]
        out = []
        for k in gone:
            out.extend(self._finish(k, self._groups.pop(k)))
        return out

    def _finish(self, key: tuple, acc: list) -> list[dict]:
        env: dict[str, Any] = dict(zip(self.keys, key, strict=True))
        for a, st in zip(self._aggs, acc, strict=True):
            env[a.label] = _final(a, st)
        for label, attr in self._plain.items():
            env[label] = env[attr]
        c = self.counters
        for f in self._filters:
            c.predicates += 1
            if not self._ev.truth(f, env):
                c.pm_dropped += 1
                return []
        out: dict[str, Any] = {"type": self._out_type}
        for name, expr in self._out_fields:
            out[name] = self._ev.eval(expr, env)
        if self._add_time:
            out["time"] = key[self._time_pos]
        c.outputs += 1
        return [out]

    # ------------------------------------------------------------------ explain
    def explain(self) -> str:
        q = self.query
        lines = [f"stream aggregation over {q.source} events",
                 f"  group by {', '.join(self.keys) or '(one group)'}; "
                 + ("a group closes when the stream time passes its time"
                    if self._time_pos is not None else "groups close at flush()")]
        for a in self._aggs:
            arg = "*" if a.arg is None else to_text(a.arg)
            lines.append(f"  {a.label} = {a.func}({'DISTINCT ' if a.distinct else ''}{arg})")
        for f in self._filters:
            lines.append(f"  keep a group if {to_text(f)}")
        params = sorted(set().union(*(names_in(f) for f in self._filters), set())
                        & set(self._ev.params))
        tables = sorted(set().union(*(lookups_in(f) for f in self._filters), set()))
        if params:
            lines.append("  parameters: " + ", ".join(f"{p}={self._ev.params[p]!r}"
                                                       for p in params))
        if tables:
            lines.append("  lookups: " + ", ".join(tables))
        lines.append(f"  emit {self._out_type}("
                     + ", ".join(f"{n}={to_text(e)}" for n, e in self._out_fields) + ")"
                     + (" + time" if self._add_time else ""))
        return "\n".join(lines)


def _members(keys: list[np.ndarray], rows: np.ndarray) -> list[np.ndarray]:
    """The rows of each group (the values of ``keys`` at them), groups in the order they
    first appear, each group's rows in stream order; one group without keys."""
    if not keys or not rows.size:
        return [rows] if rows.size else []
    codes = np.zeros(rows.size, dtype=np.int64)
    for k in keys:
        more, uniques = pd.factorize(k[rows], use_na_sentinel=False)
        codes = codes * len(uniques) + more
    groups, _ = pd.factorize(codes)
    if groups.max() == 0:
        return [rows]
    order = np.argsort(groups, kind="stable")
    return np.split(rows[order], np.flatnonzero(np.diff(groups[order])) + 1)


def _start(a: _Agg) -> Any:
    if a.distinct:
        return set()
    if a.func in ("SUM", "AVG"):
        return [0, 0]
    return [0] if a.func == "COUNT" else [None]


def _final(a: _Agg, st: Any) -> Any:
    if a.distinct:
        vals = st
        if a.func == "COUNT":
            return len(vals)
        if not vals:
            return None
        if a.func == "SUM":
            return sum(vals)
        if a.func == "AVG":
            return sum(vals) / len(vals)
        return min(vals) if a.func == "MIN" else max(vals)
    if a.func == "COUNT":
        return st[0]
    if a.func in ("SUM", "AVG"):
        if st[1] == 0:
            return None
        return st[0] if a.func == "SUM" else st[0] / st[1]
    return st[0]
