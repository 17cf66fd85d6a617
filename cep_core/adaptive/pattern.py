"""What the adaptive plans evaluate: a pattern of single events under ``SEQ`` and ``AND``.

Source: US 11,693,862 B2, "Notations and Terminology" (a pattern is primitive events,
operators, predicates and a window) and the plan algorithms, whose basic form "only
targets conjunction and sequence patterns" (Algorithm 2). A plan may evaluate the
elements in any order; the order the pattern requires of the matched events (``SEQ``)
is checked between every two elements it relates, whenever both are bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from cep_core.lang import ast
from cep_core.lookup import Lookup, LookupSet, TableLookup
from cep_core.plan import Plan, Pred

__all__ = ["Shape", "adaptive_problem", "shape_of"]


def adaptive_problem(plan: Plan) -> str | None:
    """Why the adaptive plans cannot evaluate ``plan`` (None when they can)."""
    if plan.negs:
        return "NEG"
    if plan.scopes:
        return "a Kleene element or SEQ(..)+"
    remote = plan.remote
    if isinstance(remote, Lookup) and not isinstance(remote, TableLookup | LookupSet):
        return "a lookup that may answer later"
    if plan.returns is not None and plan.returns.count is not None:
        return "RETURN .. COUNT(*)"

    def walk(node: ast.Pattern) -> str | None:
        if isinstance(node, ast.OrPattern):
            return "OR"
        if isinstance(node, ast.Seq | ast.Conj):
            return next((why for x in node.items if (why := walk(x))), None)
        return None

    return walk(plan.query.pattern)


@dataclass(frozen=True)
class Shape:
    """A pattern as the plans see it: ``n`` positions (in text order), their variables
    and types, ``before[q][r]`` when the event at ``q`` must come before the one at
    ``r``, and the predicates with the positions each reads."""

    n: int
    vars: tuple[str, ...]
    types: tuple[str, ...]
    before: tuple[tuple[bool, ...], ...]
    preds: tuple[tuple[Pred, frozenset[int]], ...]

    def unary(self, q: int) -> list[Pred]:
        """The predicates that read position ``q`` alone."""
        return [p for p, at in self.preds if at == frozenset({q})]

    def checks(self, bound: frozenset[int], new: int) -> list[Pred]:
        """The predicates to check when ``new`` joins the positions ``bound``: those
        reading ``new`` and only bound positions, not ``new`` alone."""
        have = bound | {new}
        return [p for p, at in self.preds if new in at and at <= have and len(at) > 1]

    def joins(self, left: frozenset[int], right: frozenset[int]) -> list[Pred]:
        """The predicates to check when two disjoint sets of positions join."""
        have = left | right
        return [p for p, at in self.preds
                if at <= have and not at <= left and not at <= right]


def shape_of(plan: Plan) -> Shape:
    """The :class:`Shape` of a plan :func:`adaptive_problem` accepts."""
    n = len(plan.positions)
    before = [[False] * n for _ in range(n)]
    counter = iter(range(n))

    def walk(node: ast.Pattern) -> list[int]:
        """The positions of ``node``, recording the order ``SEQ`` requires."""
        if isinstance(node, ast.EventElem):
            return [next(counter)]
        parts = [walk(x) for x in node.items]
        if isinstance(node, ast.Seq):
            for i, earlier in enumerate(parts):
                for later in parts[i + 1:]:
                    for q in earlier:
                        for r in later:
                            before[q][r] = True
        return [q for part in parts for q in part]

    walk(plan.query.pattern)
    at = {p.var: p.index for p in plan.positions}
    if next(counter, None) is not None:  # (the plan numbers the elements in text order)
        raise ValueError("the pattern's elements and the plan's positions differ")
    preds = tuple((p, frozenset(at[v] for v in p.vars)) for p in plan.preds)
    return Shape(n, tuple(p.var for p in plan.positions),
                 tuple(p.type for p in plan.positions),
                 tuple(tuple(row) for row in before), preds)
