"""A disjunction evaluated adaptively: each branch with a plan of its own (US 11,693,862
B2, "Notations and Terminology": OR among the operators; its fifth pattern set, "a
disjunction of three sequences"; **patented**, see the package).

``(p1 OR p2 ...)`` at the top of a pattern matches what any alternative matches. Each
alternative is compiled alone (the pattern's ``SAME``, window, and the ``WHERE``
conjuncts that read only its variables) and run by an
:class:`~cep_core.adaptive.engine.AdaptiveEngine` with its own statistics, plan and
decision D, so each branch adapts to the rates of its own types; the matches are the
union of the branches', output as the whole query's (its ``RETURN``, ``COUNT(*)`` summed
over the branches per event). The alternatives' variables are distinct
(:func:`~cep_core.adaptive.pattern.adaptive_problem`), so no match is found twice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cep_core.adaptive.array_engine import ArrayOrderEngine, array_problem
from cep_core.adaptive.engine import AdaptiveEngine, adapt_options
from cep_core.adaptive.pattern import branches_of, elements
from cep_core.counters import Counters
from cep_core.engine.matching import ANY, CountMerging, merge_counts
from cep_core.lang import ast
from cep_core.plan import Plan, conjuncts_of
from cep_core.plan_builder import build_plan

__all__ = ["BranchEngine", "adaptive_engine", "branch_plan"]

_SUMMED = ("checks", "reoptimizations", "replacements", "seconds_deciding",
           "seconds_planning")


def branch_plan(plan: Plan, branch: ast.Pattern) -> Plan:
    """The plan of one alternative of ``plan``'s top disjunction (module doc)."""
    names = {x.var for x in elements(branch)}
    same = [c for c in conjuncts_of(plan.query.where) if isinstance(c, ast.Same)]
    mine = [p.node for p in plan.preds if p.vars <= names]
    where = ast.And(tuple(same + mine)) if same or mine else None
    query = replace(plan.query, pattern=branch, where=where, returns=None)
    return build_plan(query, plan.params, plan.remote, plan.time_unit, plan.source)


def adaptive_engine(plan: Plan, kind: str, output: str = "events",
                    adapt: dict[str, Any] | None = None) -> Any:
    """The adaptive engine of ``plan``: a :class:`BranchEngine` for a disjunction at the
    top; an order plan over batches with arrays
    (:class:`~cep_core.adaptive.array_engine.ArrayOrderEngine`) where it applies and
    ``adapt``'s runner is ``"array"``; an
    :class:`~cep_core.adaptive.engine.AdaptiveEngine` otherwise."""
    if len(branches_of(plan.query.pattern)) > 1:
        return BranchEngine(plan, kind, output, adapt)
    if kind == "order" and array_problem(plan, output) is None:
        options = adapt_options(adapt, plan)
        if options["runner"] == "array":
            return ArrayOrderEngine(plan, output, options)
    return AdaptiveEngine(plan, kind, output, adapt)


class BranchEngine(CountMerging):
    """The branches of a top disjunction, each adaptive (module doc)."""

    reports = "adaptation"

    def __init__(self, plan: Plan, kind: str, output: str = "events",
                 adapt: dict[str, Any] | None = None):
        self.plan, self.kind, self.output = plan, kind, output
        self.name, self.policy = AdaptiveEngine.name_of(kind), ANY
        self.branches = [AdaptiveEngine(branch_plan(plan, b), kind, output, adapt,
                                        record_plan=plan)
                         for b in branches_of(plan.query.pattern)]
        self._set_counting(output)

    def _process(self, e: dict, out: list) -> None:
        for branch in self.branches:
            branch._process(e, out)

    def flush(self) -> list[dict]:
        out = [rec for branch in self.branches for rec in branch.flush()]
        if self._counting and len(out) > 1:
            merge_counts(self.plan, out, 0)
        return out

    @property
    def stream_state(self) -> tuple:
        """The branches' states, in the order of the alternatives."""
        return tuple(b.stream_state for b in self.branches)

    @stream_state.setter
    def stream_state(self, states: tuple) -> None:
        for branch, state in zip(self.branches, states, strict=True):
            branch.stream_state = state

    @property
    def counters(self) -> Counters:  # type: ignore[override]
        """The branches' work summed (each sees every event: ``events`` once)."""
        total = Counters()
        for branch in self.branches:
            total.add(branch.counters)
        total.events = self.branches[0].counters.events
        return total

    @property
    def stats(self) -> Any:  # type: ignore[override]
        return self.branches[0].stats

    def statistics(self) -> dict[str, Any]:
        """The first branch's statistics (every branch sees every event), with each
        branch's under ``branches``."""
        return {**self.branches[0].statistics(),
                "branches": [b.statistics() for b in self.branches]}

    def live_count(self) -> int:
        return sum(b.live_count() for b in self.branches)

    def report(self) -> dict[str, Any]:
        """The branches' reports (:meth:`AdaptiveEngine.report`) summed, their plans
        joined by ``|``, and each under ``branches``."""
        each = [b.report() for b in self.branches]
        return {**{k: sum(r[k] for r in each) for k in _SUMMED},
                "plans": [p for r in each for p in r["plans"]],
                "plan": " | ".join(r["plan"] for r in each), "branches": each}
