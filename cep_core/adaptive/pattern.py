"""What the adaptive plans evaluate: ``SEQ`` and ``AND`` of single events, with negated
elements, single events under Kleene closure and a disjunction of such patterns.

Source: US 11,693,862 B2, "Notations and Terminology" (a pattern is primitive events,
operators, predicates and a window; the operators SEQ, AND, OR, negation and Kleene
closure) and Algorithm 2, whose basic form "only targets conjunction and sequence
patterns"; "support for other operators ... is implemented by either activating
transformation rules on the input pattern or applying post-processing steps on the
generated plan (e.g., to augment it with negated events)". So here:

* the plan orders the *positive* elements only; a plan may evaluate them in any order,
  and the order the pattern requires of the matched events (``SEQ``) is checked between
  every two elements it relates, whenever both are bound;
* a negated element between two neighbours in a ``SEQ`` (a :class:`Guard`) is checked
  as soon as its neighbours and the positions its predicates read are bound (the plan
  augmented with it); one at a pattern's end when the match completes (leading) or when
  its window closes (trailing), as the text-order engines do
  (:mod:`cep_core.engine.negation`);
* a Kleene element ``T+ v[]`` is one position of the plan, bound to the *last* event of
  its sequence (the anchor); the sequences ending there are enumerated when the match
  completes (:mod:`cep_core.adaptive.operators`), with the predicates that read ``v``;
* a disjunction ``(p1 OR p2 ...)`` at the top is a set of branches, each evaluated with
  a plan of its own (:mod:`cep_core.adaptive.branches`).
"""

from __future__ import annotations

from dataclasses import dataclass

from cep_core.lang import ast
from cep_core.lookup import Lookup, LookupSet, TableLookup
from cep_core.plan import NegElem, Plan, Pred

__all__ = ["Guard", "Shape", "adaptive_problem", "shape_of", "branches_of", "elements"]


def branches_of(pattern: ast.Pattern) -> tuple[ast.Pattern, ...]:
    """The branches of a disjunction at the top of a pattern (the pattern alone else)."""
    if isinstance(pattern, ast.OrPattern):
        return tuple(b for alt in pattern.alternatives for b in branches_of(alt))
    return (pattern,)


def _element_problem(node: ast.Pattern, parent: ast.Pattern | None) -> str | None:
    """Why the adaptive plans do not evaluate ``node`` inside ``parent``."""
    if isinstance(node, ast.OrPattern):
        return "OR inside a SEQ or AND (a disjunction runs adaptively at the top only)"
    if isinstance(node, ast.EventElem):
        if node.kleene and not isinstance(parent, ast.Seq):
            return "a Kleene element outside a SEQ"
        return None
    if isinstance(node, ast.Seq) and node.kleene:
        return "SEQ(..)+"
    items = node.items
    for j, item in enumerate(items):
        if isinstance(item, ast.EventElem) and item.negated:
            near = [x for x in (*items[:j][-1:], *items[j + 1:j + 2])
                    if not (isinstance(x, ast.EventElem) and x.negated)]
            if any(not isinstance(x, ast.EventElem) for x in near):
                return "NEG next to a group (its neighbours must be single elements)"
        elif (why := _element_problem(item, node)) is not None:
            return why
    return None


def adaptive_problem(plan: Plan) -> str | None:
    """Why the adaptive plans cannot evaluate ``plan`` (None when they can)."""
    remote = plan.remote
    if isinstance(remote, Lookup) and not isinstance(remote, TableLookup | LookupSet):
        return "a lookup that may answer later"
    branches = branches_of(plan.query.pattern)
    if len(branches) > 1:
        names = [x.var for b in branches for x in elements(b)]
        if len(names) != len(set(names)):
            return "OR alternatives that share a variable"
    if any(sum(x.kleene and not x.negated for x in elements(b)) > 1 for b in branches):
        return "more than one Kleene element"
    return next((why for b in branches if (why := _element_problem(b, None))), None)


def elements(node: ast.Pattern) -> list[ast.EventElem]:
    """The elements of a pattern, in text order."""
    if isinstance(node, ast.EventElem):
        return [node]
    items = node.alternatives if isinstance(node, ast.OrPattern) else node.items
    return [x for item in items for x in elements(item)]


@dataclass(frozen=True)
class Guard:
    """A negated element between the positions ``lo`` and ``hi`` of a ``SEQ``: no event of
    its ``neg``'s type, in the match's partition, strictly between their events in stream
    order (after ``lo``'s last event, before ``hi``'s first) that satisfies ``preds``
    (with the match's bindings). ``at``: the positions it reads; ``late``: checked when
    the match completes, since ``hi`` or a position it reads is a Kleene element."""

    neg: NegElem
    lo: int
    hi: int
    preds: tuple[Pred, ...]
    at: frozenset[int]
    late: bool


@dataclass(frozen=True)
class Shape:
    """A pattern as the plans see it: ``n`` positions (its positive elements, in text
    order), their variables and types, ``before[q][r]`` when the event at ``q`` must come
    before the one at ``r``, the predicates with the positions each reads (those of the
    plan: none reads a Kleene or a negated element), the Kleene positions (``kleene``),
    the predicates that read a Kleene element (``late``) and the :class:`Guard` s."""

    n: int
    vars: tuple[str, ...]
    types: tuple[str, ...]
    before: tuple[tuple[bool, ...], ...]
    preds: tuple[tuple[Pred, frozenset[int]], ...]
    kleene: tuple[int, ...] = ()
    late: tuple[Pred, ...] = ()
    guards: tuple[Guard, ...] = ()

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

    def guards_at(self, bound: frozenset[int], new: int) -> list[Guard]:
        """The guards to check when ``new`` joins the positions ``bound``."""
        have = bound | {new}
        return [g for g in self.guards if not g.late and new in g.at and g.at <= have]

    def guards_joining(self, left: frozenset[int], right: frozenset[int]) -> list[Guard]:
        """The guards to check when two disjoint sets of positions join."""
        have = left | right
        return [g for g in self.guards if not g.late and g.at <= have
                and not g.at <= left and not g.at <= right]


def shape_of(plan: Plan) -> Shape:
    """The :class:`Shape` of a plan :func:`adaptive_problem` accepts, with one branch
    (:func:`branches_of`)."""
    n = len(plan.positions)
    before = [[False] * n for _ in range(n)]
    counter = iter(range(n))
    guards: list[tuple[str, int, int]] = []  # (NEG variable, lo, hi)

    def walk(node: ast.Pattern) -> list[int]:
        """The positions of ``node``, recording the order ``SEQ`` requires and the
        negated elements between two neighbours."""
        if isinstance(node, ast.EventElem):
            return [] if node.negated else [next(counter)]
        parts = [walk(x) for x in node.items]
        if isinstance(node, ast.Seq):
            for i, earlier in enumerate(parts):
                for later in parts[i + 1:]:
                    for q in earlier:
                        for r in later:
                            before[q][r] = True
            for j, item in enumerate(node.items):
                if isinstance(item, ast.EventElem) and item.negated:
                    lo = [p[-1] for p in parts[:j] if p][-1:]
                    hi = [p[0] for p in parts[j + 1:] if p][:1]
                    if lo and hi:
                        guards.append((item.var, lo[0], hi[0]))
        return [q for part in parts for q in part]

    walk(plan.query.pattern)
    if next(counter, None) is not None:  # (the plan numbers the elements in text order)
        raise ValueError("the pattern's elements and the plan's positions differ")
    at = {p.var: p.index for p in plan.positions}
    kleene = tuple(p.index for p in plan.positions if p.kleene)
    kvars = {plan.positions[k].var for k in kleene}
    negs = {x.var: x for x in plan.negs}
    plain = [p for p in plan.preds if not p.vars & negs.keys()]
    made = []
    for var, lo, hi in guards:
        preds = tuple(p for p in plan.preds if var in p.vars)
        reads = frozenset(at[v] for p in preds for v in p.vars if v != var)
        where = reads | {lo, hi}
        made.append(Guard(negs[var], lo, hi, preds, where,
                          hi in kleene or bool(reads & set(kleene))))
    return Shape(n, tuple(p.var for p in plan.positions),
                 tuple(p.type for p in plan.positions),
                 tuple(tuple(row) for row in before),
                 tuple((p, frozenset(at[v] for v in p.vars)) for p in plain
                       if not p.vars & kvars),
                 kleene, tuple(p for p in plain if p.vars & kvars), tuple(made))
