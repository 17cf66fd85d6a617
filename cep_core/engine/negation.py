"""NEG at a pattern's ends and NEG on a Kleene element, for the reference engine.

The dissertation's language lets ``NEG T v`` stand anywhere in a ``SEQ`` (§2.2.1, Q4 of
Listing 4.2). Between two elements it guards the transition from one to the other
(:mod:`cep_core.plan`). At the ends it has one neighbour only, so the window bounds it
(docs/decisions.md, "Negation at a pattern's ends and on Kleene elements"):

* **leading** ``SEQ(NEG T v, A a, ...)``: an event ``x`` of type ``T`` that satisfies
  ``v``'s predicates (with the match's bindings) violates the match when
  ``last.t − WITHIN ≤ x.t < first.t``; it is checked when the match completes;
* **trailing** ``SEQ(..., B b, NEG T v)``: such an ``x`` violates the match when
  ``last.t < x.t ≤ first.t + WITHIN``; the match waits until the window closes and is
  emitted then, its output ``time`` being ``first.t + WITHIN`` (``flush`` emits those
  still waiting at the end of the stream);
* **Kleene** ``NEG T+ v[]``: what violates is a sequence of one or more such events, in
  stream order, that satisfies every predicate of ``v`` (``v[i]`` with ``v[i+1]``,
  ``LENGTH``, aggregates), found by a depth-first search over the candidates that
  prunes on the predicates every prefix of a sequence must pass.

With ``SAME`` only events of the match's partition count. The checks filter complete
matches, so under every selection policy the matches are those of the pattern without
its end NEG elements, minus the violated ones.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cep_core.expr import walk
from cep_core.lang import ast
from cep_core.plan import Plan, Pred

__all__ = ["EndNegation", "EndQueues", "kleene_exists", "prefix_closed"]

Check = Callable[[Sequence[Pred], dict], bool]


def prefix_closed(pred: Pred, var: str) -> bool:
    """Whether every prefix of a sequence bound to the Kleene ``var`` that satisfies
    ``pred`` satisfies it too: a predicate over each ``var[i]`` (and ``var[i+1]``) that
    reads nothing of ``var`` as a whole (``LENGTH``, aggregates, ``var[last]``, ``var[m]``)."""
    if pred.mode == "plain":
        return var not in pred.vars
    for node in walk(pred.node):
        if isinstance(node, ast.Length) and node.var == var:
            return False
        if isinstance(node, ast.Aggregate):
            return False
        if isinstance(node, ast.Attr) and node.var == var and node.index is not None \
                and node.index.kind != "i":
            return False
    return True


def kleene_exists(var: str, cands: Sequence[dict], bind: dict, preds: Sequence[Pred],
                  check: Check, last: dict | None = None) -> bool:
    """Whether a non-empty subsequence of ``cands`` (in their order), bound to ``var`` with
    the other bindings ``bind``, satisfies every predicate in ``preds`` (``last``: the
    sequence must end with this candidate, which follows all of ``cands``)."""
    closed = [p for p in preds if prefix_closed(p, var)]

    def holds(seq: tuple, which: Sequence[Pred]) -> bool:
        return check(which, {**bind, var: seq})

    def search(start: int, seq: tuple) -> bool:
        if last is not None:
            whole = seq + (last,)
            if holds(whole, closed) and holds(whole, preds):
                return True
        elif seq and holds(seq, preds):
            return True
        for j in range(start, len(cands)):
            longer = seq + (cands[j],)
            if holds(longer, closed) and search(j + 1, longer):
                return True
        return False

    return search(0, ())


def _bound_on(pred: Pred, negvar: str, bind: dict) -> bool:
    """Whether every variable of ``pred`` but the NEG one is bound in ``bind`` (one of an
    OR alternative the match did not take leaves the predicate vacuous)."""
    return all(v == negvar or v in bind for v in pred.vars)


class _Pending:
    """A match with trailing NEG elements, waiting for its window to close."""

    __slots__ = ("rec", "bind", "last_t", "deadline", "negs", "cands", "dead")

    def __init__(self, rec: dict, bind: dict, last_t: Any, deadline: float,
                 negs: tuple[int, ...]):
        self.rec, self.bind, self.last_t, self.deadline = rec, bind, last_t, deadline
        self.negs = negs
        self.cands: dict[int, list[dict]] = {}
        self.dead = False


@dataclass
class EndQueues:
    """What the leading and trailing NEG elements keep of the stream (a part of the
    reference engine's state): the recent events of the leading NEG types per partition
    (``history``), the matches waiting for their window to close per partition
    (``pending``) and by deadline (``due``; ties in the order the matches completed,
    ``order``)."""

    history: dict[Any, list[dict]] = field(default_factory=dict)
    pending: dict[Any, list[_Pending]] = field(default_factory=dict)
    due: list[tuple[float, int, _Pending]] = field(default_factory=list)
    order: int = 0


class EndNegation:
    """The leading and trailing NEG elements of one plan (module docstring); what they
    keep of the stream is an :class:`EndQueues` that each method is given."""

    def __init__(self, plan: Plan, check: Check, timed: bool):
        self.plan, self.check = plan, check
        self.timed = timed  # records carry the default output time (RETURN without time)
        self.lead_by_var = {plan.positions[q].var: ids for q, ids in plan.lead_negs.items()}
        self.trail_by_var = {plan.positions[q].var: ids for q, ids in plan.trail_negs.items()}
        # a match that misses its first (last) element (approximate matching): every
        # leading (trailing) NEG element bounds it from its first (last) event
        self.first_vars = {plan.positions[e.dst].var for e in plan.edges if e.kind == "begin"}
        self.last_vars = {p.var for p in plan.positions if p.accepting}
        self.lead_all = tuple(dict.fromkeys(n for ids in plan.lead_negs.values() for n in ids))
        self.trail_all = tuple(dict.fromkeys(n for ids in plan.trail_negs.values()
                                             for n in ids))
        self.lead_types = frozenset(plan.negs[n].type for ids in plan.lead_negs.values()
                                    for n in ids)
        self.trail_types = frozenset(plan.negs[n].type for ids in plan.trail_negs.values()
                                     for n in ids)

    # ------------------------------------------------------------------ the stream
    def release_before(self, q: EndQueues, t: Any, out: list) -> int:
        """Emit into ``out`` the waiting matches whose window closed before ``t``; their
        number."""
        return self._release(q, lambda deadline: deadline < t, out)

    def observe(self, q: EndQueues, e: dict, key: Any, since: Any) -> None:
        """Before ``e`` is processed in partition ``key``: note it as a candidate of the
        leading NEG elements (kept while a match completing at ``since`` or later could
        reach back to it) and check it against the partition's waiting matches."""
        t, typ = e["time"], e["type"]
        if typ in self.lead_types:
            kept = q.history.setdefault(key, [])
            kept.append(e)
            horizon = since - self.plan.window
            if kept[0]["time"] < horizon:
                q.history[key] = [x for x in kept if x["time"] >= horizon]
        if typ in self.trail_types:
            for p in q.pending.get(key, ()):
                if not p.dead and p.last_t < t <= p.deadline and self._violates(p, e):
                    p.dead = True
            waiting = q.pending.get(key)
            if waiting and any(p.dead for p in waiting):
                q.pending[key] = [p for p in waiting if not p.dead]

    def flush(self, q: EndQueues, out: list) -> int:
        """The end of the stream: emit every waiting match, in the order of their
        deadlines."""
        return self._release(q, lambda deadline: True, out)

    def _release(self, q: EndQueues, due: Callable[[float], bool], out: list) -> int:
        n = 0
        while q.due and due(q.due[0][0]):
            _, _, p = heapq.heappop(q.due)
            if p.dead:
                continue
            p.dead = True
            out.append(p.rec)
            n += 1
        return n

    # ------------------------------------------------------------------ a match
    def admit(self, q: EndQueues, bind: dict, rec: dict, key: Any) -> bool:
        """A complete match: False if a leading NEG element violates it or it waits for
        its trailing NEG elements (then it is kept in ``q``), True to emit it now."""
        times = [x["time"] for ev in bind.values()
                 for x in (ev if isinstance(ev, tuple) else (ev,))]
        first_t, last_t = min(times), max(times)
        lead = next((ids for var, ids in self.lead_by_var.items() if var in bind),
                    () if self.first_vars & bind.keys() else self.lead_all)
        window = self.plan.window
        for nid in lead:
            lo = last_t - window
            cands = [x for x in q.history.get(key, ())
                     if x["type"] == self.plan.negs[nid].type and lo <= x["time"] < first_t]
            if cands and self._found(nid, bind, cands):
                return False
        trail = next((ids for var, ids in self.trail_by_var.items() if var in bind),
                     () if self.last_vars & bind.keys() else self.trail_all)
        if not trail:
            return True
        deadline = first_t + window
        if self.timed:
            rec = {**rec, "time": deadline if math.isfinite(deadline) else last_t}
        p = _Pending(rec, bind, last_t, deadline, trail)
        q.pending.setdefault(key, []).append(p)
        q.order += 1
        heapq.heappush(q.due, (deadline, q.order, p))
        return False

    def _found(self, nid: int, bind: dict, cands: list[dict], last: dict | None = None
               ) -> bool:
        """Whether ``cands`` (and ``last``) hold what NEG ``nid`` forbids, with ``bind``."""
        neg = self.plan.negs[nid]
        preds = [p for p in self.plan.neg_preds.get(nid, ()) if _bound_on(p, neg.var, bind)]
        if neg.kleene:
            return kleene_exists(neg.var, cands, bind, preds, self.check, last)
        return any(self.check(preds, {**bind, neg.var: x})
                   for x in ([last] if last is not None else cands))

    def _violates(self, p: _Pending, e: dict) -> bool:
        for nid in p.negs:
            if self.plan.negs[nid].type != e["type"]:
                continue
            before = p.cands.setdefault(nid, [])
            if self._found(nid, p.bind, before, last=e):
                return True
            if self.plan.negs[nid].kleene:
                before.append(e)
        return False
