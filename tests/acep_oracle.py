"""A brute-force oracle of approximate matching (ACEP): Li and Ge, "History is a mirror
to the future", VLDB 2016, §2, Definition 1, under skip-till-any-match.

A match is a subsequence of the stream within the window (``last.t − first.t ≤ W``)
that becomes a serialization of the pattern when at most ``k`` elements are inserted;
its error is the least number of insertions. It knows nothing of cep_core's automaton:
a pattern is a list of slots, each a list of alternatives :class:`Alt` (one for a plain
element, two for an ``OR`` of single events); every slot is either missing (cost 1,
whichever its kind) or bound to one alternative, the slots' events in stream order. The
rules of docs/decisions.md ("Approximate matching"), written out directly:

* a single element takes one event of its type; a Kleene element one or more, any
  subset in stream order (skip-till-any-match);
* a match has at least one real event;
* an inserted element satisfies every predicate that reads it: a predicate is checked
  only when all the variables it reads are bound;
* with a partition attribute, every event of a match shares it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Alt:
    """One way to fill a slot: ``kind`` "event" (``T v``) or "kleene" (``T+ v[]``)."""

    kind: str
    type: str
    var: str


@dataclass(frozen=True)
class Pred:
    """A predicate: ``fn`` of the bindings ({var: event, or tuple of events for a
    Kleene variable}), checked when every variable of ``reads`` is bound."""

    reads: frozenset[str]
    fn: Callable[[dict], bool]

    def __call__(self, bind: dict) -> bool:
        return self.fn(bind)


Slot = list[Alt]
Match = frozenset  # of (var, event id or tuple of ids)


def _subsets(events: list[dict]):
    """Every non-empty subsequence of ``events`` (kept in order)."""
    for r in range(1, len(events) + 1):
        yield from itertools.combinations(events, r)


def approximate_matches(slots: list[Slot], preds: list[Pred], stream: list[dict],
                        window: float, k: int, key: str | None = None
                        ) -> dict[Match, int]:
    """Every match with at most ``k`` missing elements: {match: least error}. The
    stream's times do not decrease, so a match's first event is its earliest."""
    out: dict[Match, int] = {}
    pos = {id(x): i for i, x in enumerate(stream)}

    def assign(j: int, start: int, cost: int, bind: dict, first_t) -> None:
        if j == len(slots):
            if bind and all(p(bind) for p in preds if p.reads <= bind.keys()):
                m = frozenset((v, tuple(x["id"] for x in e) if isinstance(e, tuple)
                               else e["id"]) for v, e in bind.items())
                out[m] = min(cost, out.get(m, cost))
            return
        if cost + 1 <= k:  # the slot is missing
            assign(j + 1, start, cost + 1, bind, first_t)
        for alt in slots[j]:
            cands = [x for x in stream[start:] if x["type"] == alt.type
                     and (first_t is None or x["time"] - first_t <= window)
                     and (key is None or not bind or x.get(key) == _part(bind, key))]
            if alt.kind == "event":
                for x in cands:
                    f = x["time"] if first_t is None else first_t
                    assign(j + 1, pos[id(x)] + 1, cost, {**bind, alt.var: x}, f)
            else:
                for seq in _subsets(cands):
                    f = seq[0]["time"] if first_t is None else first_t
                    if seq[-1]["time"] - f > window or (
                            key is not None and len({x.get(key) for x in seq}) > 1):
                        continue
                    assign(j + 1, pos[id(seq[-1])] + 1, cost, {**bind, alt.var: seq}, f)

    assign(0, 0, 0, {}, None)
    return out


def _part(bind: dict, key: str):
    e = next(iter(bind.values()))
    return (e[0] if isinstance(e, tuple) else e).get(key)


def engine_matches(found: list[dict]) -> dict[Match, int]:
    """Engine outputs of ``q.matches(.., max_missing=k)`` in the oracle's form (the least
    error when a match comes twice)."""
    out: dict[Match, int] = {}
    for m in found:
        key = as_match(m)
        out[key] = min(m["missing"], out.get(key, m["missing"]))
    return out


def as_match(m: dict) -> Match:
    """One engine match without its ``"missing"``, as a frozenset."""
    return frozenset((v, tuple(i) if isinstance(i, list) else i) for v, i in m.items()
                     if v != "missing")
