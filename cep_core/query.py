"""Compiling a query and running it: :func:`compile` → :class:`CompiledQuery`.

A pattern query (``PATTERN SEQ(..) WHERE .. WITHIN .. RETURN ..``) compiles to an
automaton (:mod:`cep_core.plan`) run by the reference engine
(:mod:`cep_core.engine.reference`); an aggregation query (``SELECT .. FROM T STREAM ..
GROUP BY ..``, Listings 6.2/6.3 of the dissertation, §6.2.2) compiles through
``cep_core.aggregate.compile_aggregation``. Both answer the same API: ``explain``,
``run``, ``start`` (an incremental :class:`Session`, which tells its ``counters``).
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any, cast

from cep_core.adaptive.engine import (
    PLAN_KINDS,
    AdaptiveEngine,
    adapt_options,
)
from cep_core.approx.insertions import missing_problem
from cep_core.approx.placeholders import as_unknown_type
from cep_core.counters import Counters, WorkBy
from cep_core.engine.matching import (
    ANY,
    EVERY_EVENT,
    check_options,
)
from cep_core.engine.options import EngineOptions
from cep_core.engine.protocol import Engine, feed_by_value
from cep_core.engine.reference import ReferenceEngine
from cep_core.errors import QueryError, QuerySemanticError
from cep_core.events import as_events
from cep_core.lang import ast
from cep_core.lookup import Lookup, LookupSet
from cep_core.plan import TIME_UNITS, Plan
from cep_core.plan_builder import build_plan
from cep_core.registry import CHOICES, ENGINES, modelled_device

__all__ = ["compile", "CompiledQuery", "Session", "feed_by_value"]


def compile(text_or_ast: str | ast.Query, params: Mapping[str, Any] | None = None,
            remote: Lookup | Mapping[str, Any] | None = None, time_unit: str = "s",
            source: str = "<query>") -> CompiledQuery:
    """Compile a query (text or AST).

    ``params``: scalars (``t_start``, ``m_user``) and tables (a dict keyed by a scalar or
    a tuple, a pandas Series, a MultiIndex one for several arguments, or a callable) for
    lookups such as ``GroupSize[groupID]``; callables also serve as functions
    (``OVERLAP(x)``). ``remote``: lookups by name (a :class:`cep_core.lookup.Lookup`, or a
    mapping from name to a Lookup or a table) — remote data (``REMOTE[..]``, ``λ[..]``).
    ``time_unit``: the unit of the events' ``time`` (ms, s, min, h): ``WITHIN 2h`` is
    7,200 in seconds and 120 in minutes; a bare ``WITHIN`` number is in stream units.
    Unknown variables, unbound parameters or lookups and unsupported constructs raise
    :class:`QuerySemanticError` naming them.
    """
    if time_unit not in TIME_UNITS:
        raise QueryError(f"time_unit must be one of {', '.join(TIME_UNITS)}, "
                         f"not {time_unit!r}")
    query = text_or_ast
    if isinstance(query, str):
        from cep_core.lang.parser import parse

        query = parse(query, source)
    if isinstance(query, ast.PatternQuery):
        plan = build_plan(query, params, remote, time_unit, source)
        k = query.max_missing
        if k is not None and (why := missing_problem(plan, k)) is not None:
            raise QuerySemanticError(f"ALLOW {k} MISSING: {why}", query.pos, source)
        return CompiledQuery(query, plan=plan)
    if isinstance(query, ast.AggregationQuery):
        compile_aggregation = _find_compile_aggregation()
        if compile_aggregation is None:
            raise QuerySemanticError("aggregation queries need cep_core.aggregate",
                                     query.pos, source)
        tables = LookupSet(params, remote).as_tables(_lookup_names(query))
        factory = partial(compile_aggregation, query, dict(params or {}), tables)
        return CompiledQuery(query, aggregation=factory)
    raise QueryError(f"not a query: {type(query).__name__}")


def _lookup_names(node: Any) -> list[str]:
    """Names of the lookups ``name[args]`` in a query's syntax tree."""
    out: list[str] = []
    if isinstance(node, ast.Lookup):
        out.append(node.name)
    if isinstance(node, tuple):
        for x in node:
            out += _lookup_names(x)
    elif hasattr(node, "__dataclass_fields__"):
        for f in node.__dataclass_fields__:
            if f != "pos":
                out += _lookup_names(getattr(node, f))
    return list(dict.fromkeys(out))


def _find_compile_aggregation() -> Callable | None:
    """``compile_aggregation`` from ``cep_core.aggregate`` (or its ``stream`` module)."""
    for name in ("cep_core.aggregate", "cep_core.aggregate.stream"):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as ex:
            if ex.name is not None and name.startswith(ex.name):
                continue
            raise
        fn = getattr(module, "compile_aggregation", None)
        if fn is not None:
            return fn
    return None


class Session:
    """An incremental run: ``feed(events) -> outputs`` batch by batch, then ``flush()``.
    Pickles mid-stream (with the query, recompiled on load; parameters, lookups and
    filters must pickle) and resumes exactly where it was. Event ids continue across
    batches; timestamps must not decrease across batches. The engine is any
    :class:`~cep_core.engine.protocol.Engine`; the session keeps the stream's ids and
    time order and hands it each batch."""

    def __init__(self, engine: Engine, none_missing: bool = False):
        self.engine = engine
        self.events_fed = 0
        self.last_time: Any = None
        #: ``max_missing=0``: exact matching, where a placeholder is an event no element
        #: takes, and every output says ``"missing": 0``
        self.none_missing = none_missing
        #: the work of the last batch fed with ``work_by``, per value of that column
        self.work: WorkBy | None = None

    def feed(self, events: Iterable[dict] | Any, as_frame: bool = False,
             keep: Any = None, work_by: str | None = None) -> list[dict] | Any:
        """The outputs of one batch, as dicts or (``as_frame``) as a pandas DataFrame.
        ``keep`` (keyed engine): the input filter as a mask over the batch
        (:meth:`KeyedEngine.feed`). ``work_by``: a column of the events (``"time"``, say);
        the batch's work per value of it is then in :attr:`work`
        (:class:`~cep_core.counters.WorkBy`), the same as feeding the events of each
        value as a batch of its own and reading the counters in between."""
        self.work = None
        if self.none_missing:
            events = as_unknown_type(events)
        if self.engine.reads_frame(events):  # a DataFrame read by its columns
            frame: Any = events
            n = len(frame)
            first, last = (frame["time"].iloc[0], frame["time"].iloc[-1]) if n and \
                "time" in frame.columns else (None, None)
        else:
            events = as_events(events, first_id=self.events_fed)
            n = len(events)
            first, last = (events[0]["time"], events[-1]["time"]) if n else (None, None)
        if first is not None and self.last_time is not None and first < self.last_time:
            raise QueryError(f"event time {first} before the previous batch's last "
                             f"{self.last_time}; a stream has non-decreasing timestamps")
        out = self.engine.feed(events, as_frame, keep=keep, work_by=work_by,
                               first_id=self.events_fed)
        self.events_fed += n
        if n:
            self.last_time = last
        if work_by is not None:
            self.work = self.engine.work
        return _zero_missing(out) if self.none_missing else out

    @property
    def engine_name(self) -> str:
        """The name of the engine the session runs (``reference``, ``keyed``, ...)."""
        return self.engine.name

    def flush(self) -> list[dict]:
        """The outputs at the end of the stream so far (what the end of the stream
        completes), as dicts; :meth:`run` is :meth:`feed` then this."""
        out = list(self.engine.flush())
        return _zero_missing(out) if self.none_missing else out

    def settled(self) -> bool:
        """Whether :meth:`flush` would now emit nothing and change nothing.

        Then the stream can go on after a flush as if it had not been called: what a
        run over the events so far gives can be read without ending the session (or a
        copy of it). Engines that cannot tell say no.
        """
        return self.engine.settled()

    def ending(self) -> Session:
        """Return a session to :meth:`flush` now that leaves this one as it is.

        This session where it is :meth:`settled`; else a copy of it with the engine's
        copy for a flush (:meth:`~cep_core.engine.protocol.Engine.ending`: a deep copy,
        or an aggregation's of only what its flush changes). Flushed right away, the
        copy gives what flushing this session would, and this one goes on as if it had
        not been flushed.

        Returns
        -------
        Session
            This session, or the copy.
        """
        if self.settled():
            return self
        twin = copy.copy(self)
        twin.engine = self.engine.ending()
        return twin

    def reload_tables(self, *names: str) -> None:
        """Re-read lookup tables that changed in place since the session started.

        A table a stream fills in as it goes: a pandas DataFrame given when the query was
        compiled (a parameter table or a remote source's), with the same rows and
        columns and new values; lookups from the next batch on read them. The keyed
        vectorized engine (and what steps one: load shedding, remote data) only.

        Parameters
        ----------
        *names : str
            The lookups whose tables changed.

        Raises
        ------
        QueryError
            If the engine cannot, a name is not a lookup of the query, or a table's
            rows or columns changed.
        """
        self.engine.reload_tables(*names)

    def run(self, events: Iterable[dict] | Any, as_frame: bool = False) -> Any:
        """The outputs of ``events`` and of the end of the stream (:meth:`feed`, then
        :meth:`flush`), as dicts or one DataFrame."""
        if not as_frame:
            return self.feed(events) + self.flush()
        import pandas as pd

        out, rest = self.feed(events, as_frame=True), self.flush()
        return pd.concat([out, pd.DataFrame(rest)], ignore_index=True) if rest else out

    @property
    def counters(self) -> Counters:
        """The engine's work so far (:class:`~cep_core.counters.Counters`)."""
        return self.engine.counters

    @property
    def statistics(self) -> dict[str, Any]:
        """The engine's per-query statistics (events per type, predicates evaluated and
        passed, ...)."""
        return self.engine.statistics()

    def _report(self, kind: str, refusal: str) -> dict[str, Any]:
        if self.engine.reports != kind:
            raise QueryError(refusal)
        return self.engine.report()

    def adaptation_report(self) -> dict[str, Any]:
        """The plan in use, checks, re-optimisations, plan replacements and the time spent
        deciding and planning (sessions started with ``plan="order"`` or ``"tree"`` that an
        adaptive plan runs: :meth:`cep_core.adaptive.engine.AdaptiveEngine.report`)."""
        return self._report("adaptation", "this session runs the text-order plan (start "
                            "with plan='order' or 'tree'; explain() says when those apply)")

    @property
    def policy(self) -> str | None:
        """The selection policy the session runs (None: an aggregation query's)."""
        return self.engine.policy

    def partial_matches(self) -> list[dict[str, Any]]:
        """Live partial matches as {var: event id or [ids]} (pattern queries)."""
        return self.engine.partial_matches()

    def live_runs(self, *attrs: str) -> dict[str, Any]:
        """The live runs as columns (keyed engine, :meth:`KeyedEngine.live_runs`)."""
        return self.engine.live_runs(*attrs)

    def drop_runs(self, *keys: Any) -> int:
        """Drop the live runs of these partition keys (keyed engine, the state filter:
        :meth:`KeyedEngine.drop_runs`); the number dropped."""
        return self.engine.drop_runs(*keys)

    def remote_report(self) -> dict[str, Any]:
        """Latencies and fetches of a session started with ``remote=``."""
        return self._report("remote", "this session runs without remote data on a "
                            "modelled device")

    def shedding_report(self) -> dict[str, Any]:
        """Latencies on the modelled device and what was shed (sessions started with
        ``shedding=``)."""
        return self._report("shedding", "this session runs without load shedding")


def _zero_missing(out: Any) -> Any:
    """Outputs of exact matching with ``max_missing=0``: each says ``"missing": 0``."""
    if hasattr(out, "columns"):
        out["missing"] = 0
        return out
    for rec in out:
        rec["missing"] = 0
    return out


def _refuse(why: str | None) -> None:
    if why is not None:
        raise QueryError(why)


class CompiledQuery:
    """A compiled query: ``explain()``, ``run(events, policy)``, ``matches(events,
    policy)``, ``start(policy)`` (a :class:`Session`, which tells its ``counters`` and
    ``statistics``); ``engine`` names the engine of the default options."""

    def __init__(self, query: ast.Query, plan: Plan | None = None,
                 aggregation: Callable[[], Any] | None = None):
        self.query, self.plan, self._aggregation = query, plan, aggregation
        self._agg_explain: Any = None
        if aggregation is not None:
            self._agg_explain = aggregation()  # compile now: errors surface here

    @property
    def output_fields(self) -> tuple[str, ...] | None:
        """The fields of its output events, as its RETURN names them (None: a pattern
        query without RETURN, whose outputs are the matches)."""
        if self.plan is None:
            return self._agg_explain.output_fields
        returns = self.plan.returns
        return None if returns is None else tuple(name for name, _ in returns.fields)

    @property
    def engine(self) -> str:
        """The engine of ``run``/``start`` with the default options (:meth:`engine_for`;
        a session's is its ``engine_name``)."""
        return self.engine_for(ANY)

    def engine_for(self, policy: str = ANY, runs: str = EVERY_EVENT, **options: Any) -> str:
        """The engine that ``run``/``start`` with these options uses, the one place that
        decides, in turn by each engine's own ``refusal``: an adaptive plan when one is
        asked for and applies; the keyed vectorized engine when the query is of its class
        (:mod:`cep_core.engine.keyed`), the policy is skip-till-next-match or strict
        contiguity, ``runs="one-per-partition"``, the output is events and there are no
        filters; the graph engine (:mod:`cep_core.engine.graph`) for skip-till-any-match
        with ``runs="every-event"`` and no filters when the query is of its class; the
        reference engine otherwise."""
        if self.plan is None:
            return self._agg_explain.name
        check_options(policy, runs)
        o = EngineOptions(policy, runs, **options)
        missing = self._max_missing(o.max_missing)  # 0: exact matching
        if self._plan_kind(o) != "text" and AdaptiveEngine.refusal(self.plan, o) is None:
            return AdaptiveEngine.name_of(o.plan)
        o = replace(o, max_missing=missing)
        return next((c.cls.name for c in CHOICES if c.cls.refusal(self.plan, o) is None),
                    ReferenceEngine.name)

    def _plan_kind(self, o: EngineOptions) -> str:
        """The ``plan`` option, checked (with ``adapt``)."""
        kind = o.plan or "text"
        if kind != "text" and kind not in PLAN_KINDS:
            raise QueryError(f"plan must be one of text, {', '.join(PLAN_KINDS)}, "
                             f"not {kind!r}")
        if o.adapt is not None:
            if kind == "text":
                raise QueryError("adapt applies to plan='order' or plan='tree', not to "
                                 "the text-order plan")
            if not isinstance(o.adapt, dict):
                raise QueryError(f"adapt must be a dict of options, not {o.adapt!r}")
        if kind != "text" and self.plan is not None:
            adapt_options(o.adapt, self.plan)  # one-line errors before any work
        return kind

    def _max_missing(self, given: Any) -> int | None:
        """The number of elements a match may miss: ``given``, else the query's
        ``ALLOW k MISSING``, else None (exact matching); checked."""
        k = given if given is not None else getattr(self.query, "max_missing", None)
        if k is None:
            return None
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise QueryError(f"max_missing must be a whole number >= 0, not {k!r}")
        if self.plan is None:
            raise QueryError("max_missing applies to pattern queries, not aggregations")
        if (why := missing_problem(self.plan, k)) is not None:
            raise QueryError(f"max_missing {k}: {why}")
        return k

    @property
    def is_aggregation(self) -> bool:
        """Whether it is a stream aggregation query (``SELECT .. FROM T STREAM ..``), not
        a pattern query."""
        return self.plan is None

    def _pick(self, o: EngineOptions) -> str:
        """The engine for ``o`` (``max_missing`` resolved): :meth:`engine_for`'s, or the
        one ``o.engine`` names when it runs them (the reference engine always does)."""
        options = {f: getattr(o, f) for f in ("output", "input_filter", "state_filter",
                                              "max_missing", "plan", "adapt")}
        auto = self.engine_for(o.policy, o.runs, **options)
        if o.engine is None or o.engine == auto or o.engine == ReferenceEngine.name:
            return auto if o.engine is None else o.engine
        chosen = next((c.cls for c in CHOICES if c.cls.name == o.engine), None)
        if chosen is None:
            names = ", ".join([ReferenceEngine.name, *(c.cls.name for c in CHOICES)])
            raise QueryError(f"unknown engine {o.engine!r}; one of {names}")
        why = chosen.refusal(self.plan, o) or chosen.scope
        raise QueryError(f"the {o.engine} engine does not apply: {why}")

    def explain(self, policy: str | None = None, runs: str = EVERY_EVENT,
                plan: str = "text") -> str:
        """The plan as text; its first line names the engine that runs it (for
        ``policy`` and ``runs`` when given, else for every choice; with ``plan="order"``
        or ``"tree"``, whether an adaptive plan runs and why not)."""
        if self.plan is None:
            return self._agg_explain.explain()
        k = self._max_missing(None)
        if self._plan_kind(EngineOptions(plan=plan)) != "text":
            why = AdaptiveEngine.refusal(self.plan, EngineOptions(policy or ANY, runs))
            engine = AdaptiveEngine.name_of(plan) + (
                " (buffers per position, evaluation in an order chosen from sliding-window "
                "statistics)" if plan == "order" else " (a join tree chosen from "
                "sliding-window statistics)") if why is None else \
                f"the text-order plan ({plan} plan does not apply: {why}): " + \
                self.engine_for(policy or ANY, runs)
        elif policy is not None and not k:
            engine = self.engine_for(policy, runs)
        else:
            engine = self._choices(k)
        return self.plan.explain(engine)

    def refusals(self, max_missing: int | None = None) -> dict[str, str | None]:
        """Per engine that a compiled pattern query picks by itself
        (:data:`cep_core.registry.CHOICES`), why it does not run this query in the
        options it runs (None when it does), with ``max_missing`` when given: the
        engine's own ``refusal``."""
        if self.plan is None:
            return {c.cls.name: "an aggregation query" for c in CHOICES}
        return {c.cls.name: c.refusal(self.plan, max_missing) for c in CHOICES}

    def _choices(self, k: int | None) -> str:
        """What :meth:`explain` says of the engines for every choice of options: each
        engine that runs this query and for what (with ``k``, approximate matching), the
        reference engine otherwise, and why the others do not apply."""
        refusals = self.refusals(k or None)
        parts = [f"{c.cls.name} {c.runs}{'' if k else c.how}" for c in CHOICES
                 if refusals[c.cls.name] is None]
        why = [f"{name} does not apply: {reason}" for name, reason in refusals.items()
               if reason is not None]
        engine = "; ".join(parts + [ReferenceEngine.name + (" otherwise" if parts else "")
                                    + (f" ({'; '.join(why)})" if why else "")])
        return engine + (f"; approximate matching: ALLOW {k} MISSING" if k else "")

    def start(self, policy: str | EngineOptions = ANY, **options: Any) -> Session:
        """A :class:`Session` for incremental feeding, with the options of one
        :class:`~cep_core.engine.options.EngineOptions` (given, or its fields as keywords,
        with the policy first). ``runs``: ``"every-event"`` or ``"one-per-partition"``
        (see :mod:`cep_core.engine.reference`). ``output``: ``"events"`` (RETURN events)
        or ``"matches"`` (bindings as event ids). ``"sets"``: one
        :class:`~cep_core.engine.graph.MatchSet` per event that completes matches,
        enumerated (or counted) on demand (the graph engine only). ``input_filter`` and
        ``state_filter``: see :mod:`cep_core.engine.reference`; ``state_filter_every``:
        ``"event"`` or ``"batch"`` (after each ``feed``). The engine is chosen by
        :meth:`engine_for` unless ``engine`` names one (``"reference"`` always applies).
        ``shedding``: a :class:`cep_core.shedding.SheddingConfig` runs the reference
        engine on a modelled device with load shedding (:mod:`cep_core.shedding`);
        ``session.shedding_report()`` gives latencies and what was shed. ``remote``: a
        :class:`cep_core.remote.RemoteConfig` runs the reference engine on a modelled
        device that fetches remote data (:mod:`cep_core.remote`);
        ``session.remote_report()`` gives latencies and fetches. ``max_missing``:
        approximate matching (:mod:`cep_core.approx.insertions`), matches that miss up
        to that many elements, each output with its number of missing elements under
        ``"missing"`` (the query's ``ALLOW k MISSING`` unless given; 0 gives the exact
        matches). ``plan``: ``"text"`` (the pattern's order), ``"order"`` (a lazy
        order-based plan) or ``"tree"`` (a ZStream tree), chosen from sliding-window
        statistics and adapted as ``adapt`` says (:mod:`cep_core.adaptive`: ``{"method":
        "unconditional" | "threshold" | "invariant", "t", "d", "K", "window",
        "period", "runner"}``; an order plan of a sequence runs over batches with arrays,
        ``"runner": "event"`` event by event); the same matches as the text order, under
        skip-till-any-match (elsewhere the text order runs: :meth:`explain` says why).
        ``session.adaptation_report()`` gives the plans, checks and replacements. Each
        engine answers whether it runs the options (its ``refusal``)."""
        o = policy if isinstance(policy, EngineOptions) else EngineOptions(policy)
        o = replace(o, **options) if options else o
        o = replace(o, max_missing=self._max_missing(o.max_missing))
        device = modelled_device(o)
        if device is not None:
            _refuse(device.refusal(self.plan, o))
            engine: Engine = device(self.plan, o.policy, o.output, o.runs,
                                    o.remote if o.remote is not None else o.shedding)
        elif o.max_missing is not None and o.output == "sets":
            raise QueryError("output='sets' gives match sets, which do not carry the "
                             "number of missing elements; start without max_missing")
        elif self.plan is None:
            _refuse(type(self._agg_explain).refusal(None, o))
            engine = cast("Callable[[], Engine]", self._aggregation)()  # plan None: given
        else:
            chosen = ENGINES[self._pick(o)]
            _refuse(chosen.cls.refusal(self.plan, o))
            engine = chosen.build(self.plan, o)
        return Session(engine, none_missing=o.max_missing == 0)

    def run(self, events: Iterable[dict] | Any, policy: str = ANY, **options: Any
            ) -> list[dict]:
        """All outputs over ``events`` (dicts, or a DataFrame with ``type`` and ``time``):
        RETURN events (``type`` = the RETURN type, or ``"match"`` for ``RETURN (..)``; one
        field per argument named after its attribute or alias, repeats as ``end_2``; a
        ``time`` field with the detection time unless RETURN gives one), or the bindings
        ({var: event or [events]}) without RETURN. ``output="frame"``: the output events
        as a pandas DataFrame (the keyed vectorized engine builds it from its arrays).
        The run's counters are its session's: ``session = start(..)``, then
        ``session.run(events)`` and ``session.counters``."""
        as_frame = options.get("output") == "frame"
        if as_frame:
            options["output"] = "events"
        if self.plan is None and not options:
            aggregation = cast("Callable[[], Any]", self._aggregation)  # plan None: given
            return list(aggregation().run(as_events(events)))
        return self.start(policy, **options).run(events, as_frame)

    def matches(self, events: Iterable[dict] | Any, policy: str = ANY, **options: Any
                ) -> list[dict[str, Any]]:
        """The complete matches as {var: event id, or list of ids for a Kleene
        variable}, in detection order."""
        if self.plan is None:
            raise QueryError("an aggregation query has no pattern matches; use run()")
        return self.start(policy, output="matches", **options).run(events)

    def __repr__(self) -> str:
        kind = "aggregation" if self.plan is None else "pattern"
        return f"CompiledQuery({kind}, engine={self.engine!r})"
