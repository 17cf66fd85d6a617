"""A sharing plan for Chop-Connect chosen by cost (Qi et al., SIGMOD 2014, §4.2).

The A-Seq paper takes its plans from "a multi-query optimizer" it does not describe, and
its cost analysis (§4.2, "Cost Analysis") says only that a connect costs about what an
event costs a single A-Seq query, linear in the live STARTs. :func:`plan_sharing` makes
that concrete for :class:`cep_core.aggregate.ChopConnect`, whose work is numpy calls
over live vectors: a call costs ``call`` plus ``cell`` per live vector or tag it
touches (:data:`CALL`, :data:`CELL`, in µs; measured on cep_core, docs/aseq.md). Per
unit of time, with ``r_t`` the rate of type ``t`` [events per time unit] and ``w`` the
window [time units], so that a substring starting with type ``s`` holds ``r_s·w`` live
vectors:

* a substring computed once costs, at each event of a type at one of its later
  positions, one update of its live vectors: ``r_t · (call + cell · r_s·w)``, and one
  call per START;
* each query pays, for each piece after its first, a connect at each of the piece's
  START events: one call, and ``CONNECT`` calls over the query's live tags (``r_q·w``)
  when a new snapshot is due, at most as often as the previous piece gains a START or a
  match; for a piece no other query shares, the updates of its positions per tag; at
  each trigger a total over the last piece's vectors (``TOTAL`` calls);
* every event of the queries' types costs ``EVENT`` calls whatever the plan.

Greedy search: start with every query whole (no sharing); add the candidate sub-pattern
(a run of two or more elements found in two or more places) that lowers the estimated
cost most; repeat while one does. The plan is then the queries chopped at the chosen
sub-patterns (:func:`cep_core.aggregate.chop`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cep_core.aggregate.chop_plan import chop
from cep_core.aggregate.seqquery import Element

__all__ = ["SharingPlan", "estimate", "plan_sharing", "rates_of", "CALL", "CELL", "CONNECT",
           "TOTAL", "EVENT", "UPDATE"]

CALL = 1.0          # [µs] one numpy call on a few live vectors (2 cores, quiet)
CELL = 0.004        # [µs] per live vector or tag a call touches
UPDATE = 2          # calls' worth of one update of a piece's counters (Lemma 1)
CONNECT = 6         # numpy calls of one connect (prefix counts, a snapshot version)
TOTAL = 4           # numpy calls of a query's total at a trigger over a snapshot
EVENT = 3           # calls' worth of work per event of a query's types, whatever the plan


@dataclass(frozen=True)
class SharingPlan:
    """The chosen plan: each query's pieces (``plans``, as :class:`ChopConnect` takes
    them), the shared sub-patterns, and the estimated cost [µs per time unit] of the
    plan and of no sharing."""

    plans: dict[str, list[tuple]]
    shared: list[tuple]
    cost: float
    cost_unshared: float


def rates_of(events: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each type's rate [events per time unit] over a sample of the stream."""
    if not events:
        return {}
    span = max(float(events[-1]["time"]) - float(events[0]["time"]), 1.0)
    out: dict[str, float] = {}
    for e in events:
        out[e["type"]] = out.get(e["type"], 0.0) + 1.0
    return {t: n / span for t, n in out.items()}


def _type(x: Any) -> str:
    return x.type if isinstance(x, Element) else x


def _positives(piece: tuple) -> list[str]:
    return [_type(x) for x in piece if not (isinstance(x, Element) and x.negated)]


def estimate(plans: Mapping[str, Sequence[tuple]], rates: Mapping[str, float],
             window: float) -> float:
    """The estimated cost of a plan [µs per time unit] (module docstring)."""
    def rate(t: str) -> float:
        return rates.get(t, 0.0)

    uses: dict[tuple, int] = {}
    for pieces in plans.values():
        for p in pieces:
            uses[p] = uses.get(p, 0) + 1
    subs = {p for pieces in plans.values() for j, p in enumerate(pieces)
            if j == 0 or uses[p] > 1}
    cost = sum(rate(t) for t in {t for ps in plans.values() for p in ps
                                 for t in _positives(p)}) * EVENT * CALL
    for p in subs:
        types = _positives(p)
        live = rate(types[0]) * window
        cost += rate(types[0]) * CALL + sum(rate(t) for t in types[1:]) * (
            UPDATE * CALL + CELL * live)
    for pieces in plans.values():
        tags = rate(_positives(pieces[0])[0]) * window
        for j, p in enumerate(pieces[1:], 1):
            types, prev = _positives(p), _positives(pieces[j - 1])
            # a new snapshot only when the previous piece gained a START or a match
            fresh = min(rate(types[0]), rate(prev[0]) + rate(prev[-1]))
            cost += rate(types[0]) * CALL + fresh * CONNECT * (CALL + CELL * tags)
            if uses[p] == 1:                                     # the query's own piece
                cost += sum(rate(t) for t in types[1:]) * (UPDATE * CALL + CELL * tags)
        last = _positives(pieces[-1])
        vectors = rate(last[0]) * window if len(pieces) > 1 else 0.0
        cost += rate(last[-1]) * (TOTAL if len(pieces) > 1 else 1) * (
            CALL + CELL * (vectors + tags))
    return cost


def _candidates(patterns: Mapping[str, Sequence[Any]]) -> list[tuple]:
    """Runs of two or more elements, from a positive element to one, found in two or
    more places of the queries."""
    seen: dict[tuple, int] = {}
    for pat in patterns.values():
        pat = tuple(pat)
        pos = [i for i, x in enumerate(pat) if _positives((x,))]
        for a in range(len(pos)):
            for b in range(a + 1, len(pos)):
                run = pat[pos[a]:pos[b] + 1]
                seen[run] = seen.get(run, 0) + 1
    return [run for run, n in seen.items() if n > 1]


def plan_sharing(patterns: Mapping[str, Sequence[Any]], rates: Mapping[str, float],
                 window: float) -> SharingPlan:
    """The sharing plan of least estimated cost found greedily (module docstring).

    ``patterns``: name -> its elements (event types or
    :class:`~cep_core.aggregate.Element`); ``rates``: type -> events per time unit
    (:func:`rates_of`); ``window`` [time units].

    >>> rates = {"A": 0.01, "B": 1.0, "C": 1.0, "X": 0.01, "Y": 0.01, "Z": 0.01, "W": 0.01}
    >>> plan_sharing({"q": "XABCY", "r": "ZABCW"}, rates, 100).shared
    [('A', 'B', 'C')]
    >>> plan_sharing({"q": "XABCY", "r": "ZABCW"}, dict.fromkeys(rates, 0.1), 100).shared
    []
    """
    def plans_for(shared: list[tuple]) -> dict[str, list[tuple]]:
        return {n: chop(tuple(p), shared) for n, p in patterns.items()}

    shared: list[tuple] = []
    best = unshared = estimate(plans_for([]), rates, window)
    candidates = _candidates(patterns)
    while candidates:
        scored = [(estimate(plans_for(shared + [c]), rates, window), -len(c), i)
                  for i, c in enumerate(candidates)]
        cost, _, i = min(scored)
        if cost >= best:
            break
        best = cost
        shared.append(candidates.pop(i))
    return SharingPlan(plans_for(shared), shared, best, unshared)
