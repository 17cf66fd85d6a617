"""Approximate matching: matches that miss up to k pattern elements (ACEP).

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016: §2, Definition 1 (a match is a
subsequence of the stream within the window that becomes a serialization of the
pattern when at most ``k`` letters are inserted; its error is the least number of
insertions) and §3.1, Algorithm 1 (ACEPMATCH: a match node carries its error, and
*propagate* moves it past an element at the cost of one error).

cep_core's automaton has a state per pattern element. Instead of propagating match
nodes eagerly past the elements they skip, the engine follows *inserting transitions*
computed here once per plan:

* from a state ``q`` (or the start) to a later state ``r`` over ``c ≥ 1`` elements that
  are inserted (the states between, each a positive element: a Kleene element counts
  one, an ``OR`` as the cheapest alternative), taken by an event of ``r``'s type; its
  predicates are those of the plan's transitions on the way (those that read an
  inserted element are not evaluated, the others are: ``LENGTH(a[]) >= 2`` on leaving
  a Kleene element still holds when the element after it is inserted);
* from ``q`` to the end: the fewest elements to insert after ``q`` to complete the
  pattern (``finish``), so that a partial match completes with them at once.

The error of a match is the sum of the inserted elements along its way; only the
cheapest ways between two states are kept, so a match's error is its least number of
insertions. Predicates that read an inserted element are not evaluated: the inserted
element is taken to satisfy them (docs/decisions.md, "Approximate matching"). NEG
elements are never inserted; a NEG between two elements, ``AND`` and ``SEQ(..)+`` are
refused with ``max_missing`` above 0 (a NEG before the first or after the last element
bounds the window as without it).
"""

from __future__ import annotations

from dataclasses import dataclass

from cep_core.errors import QueryError
from cep_core.plan import START, Edge, Plan, Pred

__all__ = ["InsertingEdge", "Insertions", "approximate_problem", "fewest_elements",
           "missing_problem"]


@dataclass(eq=False)
class InsertingEdge(Edge):
    """A transition that inserts ``inserted`` missing elements before its state."""

    inserted: int = 1


def approximate_problem(plan: Plan) -> str | None:
    """Why ``plan`` cannot miss elements (None when it can)."""
    if any(e.negs for e in plan.edges):
        return "a NEG between two elements"
    if plan.conj_blocks:
        return "AND"
    if any(s.kind == "group" for s in plan.scopes):
        return "SEQ(..)+"
    if plan.returns is not None and plan.returns.count is not None:
        return "RETURN .. COUNT(*)"
    return None


class Insertions:
    """The inserting transitions of a plan for up to ``k`` missing elements (module
    docstring): ``out[q][type]`` from state ``q`` (``START`` for the first event) and
    ``finish[q]`` = (elements to insert after ``q``, the accepting state reached, the
    predicates of the transitions skipped on the way)."""

    def __init__(self, plan: Plan, k: int):
        if k > 0 and (why := approximate_problem(plan)) is not None:
            raise QueryError(f"max_missing above 0 does not apply to a query with {why}")
        self.k = k
        self.out: dict[int, dict[str, list[InsertingEdge]]] = {}
        self.finish: dict[int, tuple[int, int, list[Pred]]] = {}
        if k <= 0:
            return
        forward: dict[int, list[Edge]] = {}
        for e in plan.edges:
            if e.kind in ("begin", "next"):
                forward.setdefault(e.src, []).append(e)
        for q in (START, *(p.index for p in plan.positions)):
            self._from(q, plan, forward)

    def _from(self, q: int, plan: Plan, forward: dict[int, list[Edge]]) -> None:
        best: dict[tuple[int, int], tuple[int, InsertingEdge]] = {}  # (dst, edge) -> cheapest
        finish: tuple[int, int, list[Pred]] | None = None
        # (an edge into a state after q, the insertions before it, the predicates of the
        # transitions it skipped: those that read only bound elements still apply)
        frontier: list[tuple[Edge, int, list[Pred]]] = [(e, 0, []) for e in forward.get(q, ())]
        while frontier:
            edge, cost, skipped = frontier.pop()
            preds = skipped + edge.preds
            key = (edge.dst, edge.index)
            if cost and (key not in best or cost < best[key][0]):
                best[key] = (cost, InsertingEdge(edge.index, q, edge.dst, edge.kind,
                                                 preds=preds, inserted=cost))
            if cost + 1 > self.k:
                continue
            if plan.positions[edge.dst].accepting and (finish is None or cost + 1 < finish[0]):
                finish = (cost + 1, edge.dst, preds)
            frontier.extend((nxt, cost + 1, preds) for nxt in forward.get(edge.dst, ()))
        by_type: dict[str, list[InsertingEdge]] = {}
        for _, edge in sorted(best.values(), key=lambda ce: (ce[0], ce[1].index)):
            by_type.setdefault(plan.positions[edge.dst].type, []).append(edge)
        if by_type:
            self.out[q] = by_type
        if finish is not None and q != START and not plan.positions[q].accepting:
            self.finish[q] = finish  # (a match needs one event at least)


def missing_problem(plan: Plan, k: int) -> str | None:
    """Why a match of ``plan`` may not miss ``k`` elements (None when it may): more than
    the elements of the pattern's shortest match (a pattern with a Kleene element has no
    such bound: its iterations may be placeholders, :mod:`cep_core.approx.placeholders`),
    or a construct :func:`approximate_problem` names."""
    if not any(p.kleene for p in plan.positions) and k > (most := fewest_elements(plan)):
        return f"more than the {most} elements of the pattern's shortest match"
    return approximate_problem(plan) if k > 0 else None


def fewest_elements(plan: Plan) -> int:
    """The number of elements of the pattern's shortest match (a Kleene element and an
    ``OR`` count one): the most a match can miss."""
    forward: dict[int, list[int]] = {}
    for e in plan.edges:
        if e.kind in ("begin", "next"):
            forward.setdefault(e.src, []).append(e.dst)
    depth, todo = {START: 0}, [START]
    while todo:  # breadth first: the first accepting state reached is the nearest
        q = todo.pop(0)
        for r in forward.get(q, ()):
            if r not in depth:
                depth[r] = depth[q] + 1
                if plan.positions[r].accepting:
                    return depth[r]
                todo.append(r)
    return len(plan.positions)
