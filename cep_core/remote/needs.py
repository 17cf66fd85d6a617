"""Where a query needs remote data: per automaton state, the remote look-ups its
partial matches evaluate next, and whether the key is known before the event arrives.

A partial match (PM) in state ``m`` needs element ``d`` to process the next event
when a predicate of a transition out of ``m`` reads ``d`` (``D(p, k+1)``, dissertation
§2.2.2, §5.3.1). When the look-up's arguments read only variables bound up to ``m``
(Q6's ``REMOTE[a.v1]``), ``d`` is known from the PM's bindings — a *known-key* need,
which prefetching can time by lookahead (§5.4.1, Alg. 3): every state ``j`` on the way
to ``m`` from the first one that binds the key is a candidate lookahead category. When
they read the incoming event (Q5's ``REMOTE[d.v1]``), ``d`` is known only when the event
comes — an *event-key* need, which only the utility model can anticipate (§5.3.2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cep_core.expr import ExprCompiler, walk
from cep_core.lang import ast
from cep_core.plan import START, Plan, reachable

__all__ = ["Need", "remote_needs", "ancestors_of"]


@dataclass(frozen=True)
class Need:
    """A known-key need: PMs of ``state`` need ``name[key(bind)]``; ``candidates`` the
    lookahead categories, closest to ``state`` first (``state`` itself included)."""

    state: int
    name: str
    key: Callable[[dict], tuple]
    candidates: tuple[int, ...]


def ancestors_of(plan: Plan) -> dict[int, set[int]]:
    """Per state, the other states a PM passes through before reaching it."""
    reach = reachable(plan)
    return {q: {p for p, after in reach.items() if q in after and p != q} for q in reach}


def _key_fn(fns: list[Callable]) -> Callable[[dict], tuple]:
    def key(bind: dict) -> tuple:
        return tuple(f(bind, None) for f in fns)
    return key


def remote_needs(plan: Plan, served: Callable[[str], bool]) -> tuple[list[Need], set[int]]:
    """The known-key needs of ``plan`` for the look-ups ``served`` names, and the states
    with event-key needs (module doc)."""
    compiler = ExprCompiler(plan.variables, plan.params, plan.lookups, plan.time_unit)
    before = ancestors_of(plan)
    needs: list[Need] = []
    event_key: set[int] = set()
    for src, edges in plan.out_edges.items():
        if src == START:
            continue
        for edge in edges:
            for pred in edge.preds:
                if not pred.lookups or pred.node is None:
                    continue
                for node in walk(pred.node):
                    if not (isinstance(node, ast.Lookup) and served(node.name)):
                        continue
                    args = [compiler.compile(a) for a in node.args]
                    key_vars = frozenset().union(*(c.vars for c in args))
                    if any(c.irefs for c in args) or plan.positions[edge.dst].var in key_vars:
                        event_key.add(src)
                        continue
                    path = sorted(before[src] | {src}, reverse=True)
                    cands = tuple(j for j in path if key_vars <= _bound(plan, j, before))
                    needs.append(Need(src, node.name, _key_fn([c.fn for c in args]),
                                      cands))
    return needs, event_key


def _bound(plan: Plan, j: int, before: dict[int, set[int]]) -> set[Any]:
    return {plan.positions[q].var for q in before[j] | {j}}
