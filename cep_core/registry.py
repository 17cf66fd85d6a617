"""The engines a compiled query is run by, by name (:data:`ENGINES`): each with its
class, whose ``refusal(plan, options)`` is the engine's own answer to whether it runs a
plan with these :class:`~cep_core.engine.options.EngineOptions`, and how it is built
from them. :meth:`cep_core.query.CompiledQuery.engine_for` asks the :data:`CHOICES`
in turn (the reference engine runs what none of them does),
:meth:`~cep_core.query.CompiledQuery.explain` reads each one's answer for the options
it runs (:class:`Choice`), and the modelled device's engines (load shedding, remote
data) are picked by their options (:func:`modelled_device`).

An engine that :meth:`~cep_core.query.CompiledQuery.start` may build is registered here
with one line of :data:`ENGINES`; one that it may pick by itself is a :class:`Choice`
too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cep_core.adaptive.branches import adaptive_engine
from cep_core.adaptive.engine import PLAN_KINDS, AdaptiveEngine
from cep_core.engine.graph import GraphEngine
from cep_core.engine.keyed import KEYED_POLICIES, KeyedEngine
from cep_core.engine.matching import ANY, EVERY_EVENT, ONE_PER_PARTITION
from cep_core.engine.options import EngineOptions
from cep_core.engine.protocol import Engine
from cep_core.engine.reference import ReferenceEngine
from cep_core.plan import Plan

__all__ = ["ENGINES", "CHOICES", "Choice", "modelled_device"]


@dataclass(frozen=True)
class Registered:
    """An engine ``start`` builds: its class (its ``name``, its ``refusal``) and how it
    is built from a plan and the options."""

    cls: Any
    build: Callable[[Plan, EngineOptions], Engine]


#: each engine a compiled pattern query builds, by name
ENGINES: dict[str, Registered] = {
    **{AdaptiveEngine.name_of(kind): Registered(AdaptiveEngine, lambda plan, o: adaptive_engine(
        plan, o.plan, o.output, o.adapt)) for kind in PLAN_KINDS},
    KeyedEngine.name: Registered(KeyedEngine, lambda plan, o: KeyedEngine(
        plan, o.policy, o.max_missing or None)),
    GraphEngine.name: Registered(GraphEngine, lambda plan, o: GraphEngine(
        plan, o.output, o.max_missing or None)),
    ReferenceEngine.name: Registered(ReferenceEngine, lambda plan, o: ReferenceEngine(
        plan, o.policy, o.output, o.input_filter, o.state_filter, o.state_filter_every,
        o.runs, o.max_missing or None)),
}


@dataclass(frozen=True)
class Choice:
    """An engine that a compiled query picks by itself when it runs the options: the
    options it runs (``home``, whose refusal is then about the query alone), and what
    :meth:`~cep_core.query.CompiledQuery.explain` says it runs (``runs``, with ``how``
    it does when matching is exact)."""

    cls: Any
    home: EngineOptions
    runs: str
    how: str = ""

    def refusal(self, plan: Plan, max_missing: int | None = None) -> str | None:
        """Why the engine does not run ``plan`` in the options it runs (None when it
        does), with ``max_missing`` (approximate matching) when given."""
        return self.cls.refusal(plan, EngineOptions(self.home.policy, self.home.runs,
                                                    max_missing=max_missing))


#: the engines a compiled query picks, in turn, after an adaptive plan (the reference
#: engine otherwise); ``start(engine=...)`` may name these besides the reference engine
CHOICES = (
    Choice(GraphEngine, EngineOptions(ANY, EVERY_EVENT), f"for {ANY}",
           " (a shared graph of the window's events)"),
    Choice(KeyedEngine, EngineOptions(KEYED_POLICIES[0], ONE_PER_PARTITION),
           f"for {' and '.join(KEYED_POLICIES)} with runs='{ONE_PER_PARTITION}'"),
)


def modelled_device(o: EngineOptions) -> Any:
    """The engine of the modelled device that ``o`` asks for (remote data, else load
    shedding), or None."""
    if o.remote is not None:
        from cep_core.remote.engine import RemoteEngine

        return RemoteEngine
    if o.shedding is not None:
        from cep_core.shedding.engine import SheddingEngine

        return SheddingEngine
    return None
