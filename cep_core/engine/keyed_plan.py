"""The keyed vectorized engine's plan (:mod:`cep_core.engine.keyed`): which plans it runs,
and their numpy form (:mod:`cep_core.engine.vectorize`), compiled once per plan."""

from __future__ import annotations

from typing import Any

from cep_core.engine.matching import ONE_PER_PARTITION, STRICT
from cep_core.engine.vectorize import Unsupported, VectorCompiler
from cep_core.expr import walk
from cep_core.lang import ast
from cep_core.lookup import TableLookup
from cep_core.plan import Plan, flat_sequence_problem

__all__ = ["KeyedPlan", "keyed_plan", "keyed_unsupported", "keyed_missing_problem",
           "parameter_tables"]


def parameter_tables(plan: Plan) -> dict[str, Any]:
    """The lookups of the plan that are parameter tables, by name (as given); a remote
    source's table is read directly (its fetches are modelled around the engine, by
    :class:`cep_core.remote.batch.KeyedFetcher`)."""
    from cep_core.remote.source import RemoteSource

    out: dict[str, Any] = {}
    lookups = plan.lookups
    for name, route in lookups.routes.items():
        if isinstance(route, TableLookup) and name in route.sources:
            out[name] = route.sources[name]
        elif isinstance(route, RemoteSource) and route.serves(name):
            out[name] = route.table
    return out


class KeyedPlan:
    """The numpy form of a plan: per state its transitions with compiled predicates."""

    def __init__(self, plan: Plan):
        self.plan = plan
        vc = VectorCompiler(plan.variables, plan.params, parameter_tables(plan), plan.time_unit)
        self.refs: set = set()
        self.preds: dict[int, tuple] = {}
        self.refs_of: dict[int, set] = {}
        for p in plan.preds:
            if p.optional or p.mode == "universal":
                raise Unsupported(f"predicate {p.text} over every i of a Kleene variable")
            top = p.anchor_offset if p.mode == "incremental" else 0
            fn, refs = vc.compile(p.node, top)
            lo = max((-o for _, o in p.irefs), default=0)
            self.preds[p.index] = (p, fn, lo)
            self.refs_of[p.index] = refs
            self.refs |= refs
        self.returns: list[tuple[str, Any]] = []
        #: the lookups' table indexes by name (a remote source's values may be overlaid)
        self.indexes = vc.indexes
        for (name, _), node in zip(plan.returns.fields, plan.returns.nodes, strict=True):
            fn, refs = vc.compile(node, 0)
            if any(r[0] == "attr" and r[2] in ("back0", "back1") and
                   plan.variables[r[1]].multi for r in refs):
                raise Unsupported("RETURN of v[i] (a list over all events)")
            self.returns.append((name, fn))
            self.refs |= refs
        for p in plan.preds:
            if p.mode == "incremental":
                for e in plan.edges:
                    if p in e.preds and plan.positions[e.dst].var != p.anchor_var:
                        raise Unsupported(f"predicate {p.text} placed away from its variable")
        #: predicates that read only the new event, by index: (its type, its variable);
        #: they are evaluated once per batch for every event of that type
        self.local: dict[int, tuple[str, str]] = {}
        for p in plan.preds:
            dsts = {e.dst for e in plan.edges if p in e.preds}
            if len({plan.positions[d].var for d in dsts}) != 1:
                continue
            dst = plan.positions[dsts.pop()]
            refs = self.refs_of[p.index]
            if all(r[0] == "attr" and r[1] == dst.var and r[2] in ("single", "back0", "last")
                   for r in refs):
                self.local[p.index] = (dst.type, dst.var)


def keyed_plan(plan: Plan) -> KeyedPlan:
    """The plan's numpy form, compiled once per plan."""
    got = getattr(plan, "_keyed_compiled", None)
    if got is None:
        got = KeyedPlan(plan)
        plan._keyed_compiled = got
    return got


def keyed_unsupported(plan: Plan) -> str | None:
    """Why the keyed vectorized engine cannot run ``plan`` (None when it can)."""
    if not plan.partition:
        return "no SAME[..] partition key"
    if any("(" in item for item in plan.partition):
        return "a computed partition key (SAME[f(..)])"
    if any(n.kleene for n in plan.negs):
        return "NEG on a Kleene element"
    why = flat_sequence_problem(plan, negation=True)
    if why is not None:
        return why
    if plan.returns is None:
        return "no RETURN (the bindings are output)"
    if plan.returns.count is not None:
        return "COUNT(*) in RETURN"
    try:
        keyed_plan(plan)
    except Unsupported as ex:
        return str(ex)
    return None


KEYED_POLICIES = ("skip-till-next-match", STRICT)
#: what the keyed engine runs, when a plan of its class is refused for the options
KEYED_SCOPE = (f"it runs {' and '.join(KEYED_POLICIES)} with runs='{ONE_PER_PARTITION}', "
               "events out and no filters")


def keyed_refusal(plan: Plan, options: Any) -> str | None:
    """Why the keyed engine does not run ``plan`` with these
    :class:`~cep_core.engine.options.EngineOptions` (None when it does)."""
    why = keyed_unsupported(plan) or (options.max_missing and keyed_missing_problem(plan))
    if why or options.policy not in KEYED_POLICIES or options.runs != ONE_PER_PARTITION \
            or options.output != "events" or options.filtered:
        return why or KEYED_SCOPE
    return None


def keyed_missing_problem(plan: Plan) -> str | None:
    """Why the keyed engine cannot run ``plan`` with ``max_missing`` above 0 (None when it
    can): it takes placeholders as missing iterations of one element (module doc), and
    runs no pattern whose elements an insertion could skip, and no NEG."""
    if len(plan.positions) != 1:
        return "approximate matching of more than one element"
    if plan.negs:
        return "approximate matching with NEG"
    for p in plan.preds:  # arrays read every operand; Python stops at the first that decides
        if any(isinstance(x, ast.And | ast.Or) for x in walk(p.node)):
            return f"approximate matching with AND or OR inside the predicate {p.text}"
    return None
