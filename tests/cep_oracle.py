"""A brute-force oracle of skip-till-any-match: every match of a pattern over a short
stream, found by trying every assignment of events to the pattern's elements.

It knows nothing of cep_core's automaton: a pattern is a list of :class:`Elem` (a
positive or negated element, single or Kleene, or an ``AND`` of single elements), its
predicates Python functions of the bindings, and the rules are those of the
dissertation's Definition 2.7 and docs/decisions.md ("The window bound is inclusive",
"Negation between pattern elements", "Negation at a pattern's ends and on Kleene
elements", "Conjunction"), written out directly:

* positive elements take events in stream order (a Kleene element one or more, an AND
  one per member in any order, all after the previous element's and before the next's);
* the window: ``last.t − first.t ≤ W``;
* a NEG between two elements: no event of its type strictly between them in stream
  order (after the previous element's last event, before the next element's first) that
  satisfies its predicates; a Kleene NEG: no such sequence of one or more events;
* a leading NEG: none with ``last.t − W ≤ x.t < first.t``; a trailing one: none with
  ``last.t < x.t ≤ first.t + W``;
* with a partition attribute, every event of a match, and every NEG event, shares it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

Pred = Callable[[dict], bool]


@dataclass
class Elem:
    kind: str  # "event", "kleene", "neg", "neg_kleene", "and"
    type: str = ""
    var: str = ""
    members: tuple[tuple[tuple[str, str], ...], ...] = ()  # AND: (type, var) per element
    preds: list[Pred] = field(default_factory=list)  # a NEG's, with the match's bindings


def _subsets(events: list[dict]):
    """Every non-empty subsequence of ``events`` (kept in order)."""
    for r in range(1, len(events) + 1):
        yield from itertools.combinations(events, r)


def _forbidden(elem: Elem, cands: list[dict], bind: dict) -> bool:
    if elem.kind == "neg":
        return any(all(p({**bind, elem.var: x}) for p in elem.preds) for x in cands)
    return any(all(p({**bind, elem.var: seq}) for p in elem.preds)
               for seq in _subsets(cands))


def matches(pattern: list[Elem], preds: list[Pred], stream: list[dict], window: float,
            key: str | None = None) -> set[frozenset]:
    """The matches as frozensets of ``(var, id or tuple of ids)``."""
    positives = [i for i, el in enumerate(pattern) if not el.kind.startswith("neg")]
    out: set[frozenset] = set()

    def assign(j: int, start: int, spans: list, bind: dict) -> None:
        if j == len(positives):
            check(spans, bind)
            return
        el = pattern[positives[j]]
        rest = stream[start:]
        if el.kind == "event":
            for x in rest:
                if x["type"] == el.type:
                    assign(j + 1, x["pos"] + 1, spans + [(x["pos"], x["pos"])],
                           {**bind, el.var: x})
        elif el.kind == "kleene":
            for seq in _subsets([x for x in rest if x["type"] == el.type]):
                assign(j + 1, seq[-1]["pos"] + 1, spans + [(seq[0]["pos"], seq[-1]["pos"])],
                       {**bind, el.var: seq})
        else:  # AND: each element's events in its order, the elements one after another
            for order in itertools.permutations(el.members):
                for names, end in _blocks(list(order), start):
                    ps = [x["pos"] for x in names.values()]
                    assign(j + 1, end, spans + [(min(ps), max(ps))], {**bind, **names})

    def events_of(bind: dict) -> list[dict]:
        return [x for v in bind.values() for x in (v if isinstance(v, tuple) else (v,))]

    def check(spans: list, bind: dict) -> None:
        evs = events_of(bind)
        times = [x["time"] for x in evs]
        first_t, last_t = min(times), max(times)
        if last_t - first_t > window:
            return
        if key is not None and len({x.get(key) for x in evs}) != 1:
            return
        part = evs[0].get(key) if key is not None else None
        if not all(p(bind) for p in preds):
            return
        for i, el in enumerate(pattern):
            if not el.kind.startswith("neg"):
                continue
            before = [k for k, q in enumerate(positives) if q < i]
            after = [k for k, q in enumerate(positives) if q > i]
            if before and after:
                lo, hi = spans[before[-1]][1], spans[after[0]][0]
                cands = [x for x in stream if lo < x["pos"] < hi]
                cands = [x for x in cands if x["type"] == el.type
                         and (key is None or x.get(key) == part)]
                if cands and _forbidden(el, cands, bind):
                    return
        if ends_violated(pattern, bind, stream, window, key):
            return
        out.add(frozenset((v, tuple(x["id"] for x in e) if isinstance(e, tuple) else e["id"])
                          for v, e in bind.items()))

    def _blocks(members: list, start: int):
        """Every way to match ``members`` one after another from stream position
        ``start``: (bindings, the position after the last event)."""
        if not members:
            yield {}, start
            return
        (t, v), rest_of_member = members[0][0], members[0][1:]
        for x in stream[start:]:
            if x["type"] != t:
                continue
            later = [rest_of_member] + members[1:] if rest_of_member else members[1:]
            for names, end in _blocks(later, x["pos"] + 1):
                yield {v: x, **names}, end

    for i, e in enumerate(stream):
        e["pos"] = i
    assign(0, 0, [], {})
    return out


def ends_violated(pattern: list[Elem], bind: dict, stream: list[dict], window: float,
                  key: str | None = None) -> bool:
    """Whether a NEG before the first or after the last positive element forbids the
    match ``bind``."""
    evs = [x for v in bind.values() for x in (v if isinstance(v, tuple) else (v,))]
    times = [x["time"] for x in evs]
    first_t, last_t = min(times), max(times)
    part = evs[0].get(key) if key is not None else None
    positives = [i for i, el in enumerate(pattern) if not el.kind.startswith("neg")]
    for i, el in enumerate(pattern):
        if not el.kind.startswith("neg") or positives[0] < i < positives[-1]:
            continue
        if i < positives[0]:
            cands = [x for x in stream if last_t - window <= x["time"] < first_t]
        else:
            cands = [x for x in stream if last_t < x["time"] <= first_t + window]
        cands = [x for x in cands if x["type"] == el.type
                 and (key is None or x.get(key) == part)]
        if cands and _forbidden(el, cands, bind):
            return True
    return False


def as_set(found: list[dict]) -> set[frozenset]:
    """Engine outputs of ``output="matches"`` in the oracle's form."""
    return {frozenset((v, tuple(i) if isinstance(i, list) else i) for v, i in m.items())
            for m in found}


def next_match(slots: list[list[tuple[str, str]]], preds: list[Pred], stream: list[dict],
               window: float, strict: bool = False) -> list[frozenset]:
    """Skip-till-next-match (``strict``: strict contiguity) over a sequence of slots, each
    one event ``[(type, var)]`` or an AND of single events (any order), by the rule of
    docs/decisions.md ("Kleene closure under skip-till-next-match", "Conjunction"): every
    event that can take a first element starts a run; a run offers each later event to
    the elements it may take next (an AND's unbound ones, in pattern order); every
    continuation that completes the pattern is emitted, and the run goes on with the
    first continuation that does not, else it ends if one completed; an event no
    element can take is skipped (strict contiguity: ends the run). A predicate holds
    once all its variables are bound."""

    def ok(bind: dict) -> bool:
        return all(p(bind) for p in preds if _reads(p) <= bind.keys())

    out: list[frozenset] = []

    def candidates(bind: dict) -> list[tuple[str, str]]:
        for slot in slots:
            unbound = [(t, v) for t, v in slot if v not in bind]
            if unbound:
                return unbound
        return []

    def complete(bind: dict) -> bool:
        return all(v in bind for slot in slots for _, v in slot)

    for s, first in enumerate(stream):
        for t0, v0 in slots[0]:
            if first["type"] != t0 or not ok({v0: first}):
                continue
            bind = {v0: first}
            if complete(bind):
                out.append(_ids(bind))
                continue
            for e in stream[s + 1:]:
                if e["time"] - first["time"] > window:
                    break
                conts = [{**bind, v: e} for t, v in candidates(bind)
                         if e["type"] == t and ok({**bind, v: e})]
                done = [c for c in conts if complete(c)]
                out.extend(_ids(c) for c in done)
                going = [c for c in conts if not complete(c)]
                if going:
                    bind = going[0]
                elif done or strict:
                    break
    return out


def _ids(bind: dict) -> frozenset:
    return frozenset((v, e["id"]) for v, e in bind.items())


def _reads(pred: Pred) -> set[str]:
    """The variables a predicate reads (declared as ``pred.reads``)."""
    return set(pred.reads)
