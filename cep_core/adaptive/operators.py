"""The post-processing of an adaptive plan's matches: negated elements and Kleene
closure (US 11,693,862 B2, Algorithm 2: operators beyond SEQ and AND by "post-processing
steps on the generated plan (e.g., to augment it with negated events)"; **patented**, see
the package).

* :func:`guard_violated`: a negated element between two neighbours (a
  :class:`~cep_core.adaptive.pattern.Guard`) is violated by an event of its type, in the
  match's partition, strictly between the neighbours' events in stream order, that
  satisfies its predicates with the match's bindings (``NEG T+ v[]``: a sequence of such
  events, :func:`~cep_core.engine.negation.kleene_exists`); the reference engine's
  reading (:mod:`cep_core.engine.reference`, "NEG").
* :func:`kleene_sequences`: a Kleene element ``T+ v[]`` is bound in the plan to the last
  event of its sequence (the anchor); the sequences are every subsequence, in stream
  order, of the events of ``T`` after its predecessors' events and before the anchor,
  within the window of the match, ending with the anchor, that satisfies the predicates
  reading ``v``. Those that every prefix of a passing sequence passes
  (:func:`~cep_core.engine.negation.prefix_closed`, ``v[i]`` with ``v[i+1]``) prune the
  search as it grows, and are checked on every prefix, as the text-order engines check
  them event by event; the others (``LENGTH``, aggregates, ``v[last]``) on the whole.
* :class:`Completion`: a complete match of a plan's positions: its Kleene sequences,
  the predicates and guards that read them, the plan that owns it (migration), the
  negated elements at the pattern's ends (:class:`~cep_core.engine.negation.EndNegation`:
  a trailing one holds the match until its window closes), and its output.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from cep_core.adaptive.pattern import Guard
from cep_core.adaptive.runners import Runner
from cep_core.engine.matching import match_record
from cep_core.engine.negation import EndNegation, kleene_exists, prefix_closed
from cep_core.plan import Pred

#: the engine whose matches complete (a :class:`cep_core.adaptive.engine.AdaptiveEngine`,
#: which imports this module)
AdaptiveEngine = Any

__all__ = ["Completion", "guard_violated", "kleene_sequences"]

Check = Callable[[Sequence[Pred], dict], bool]


def guard_violated(guard: Guard, buffer: Any, lo_seq: int, hi_seq: int, bind: dict,
                   check: Check) -> bool:
    """Whether an event of ``buffer`` (the negated type's events of the partition)
    strictly between the sequence numbers ``lo_seq`` and ``hi_seq`` violates ``guard``
    (module doc)."""
    if buffer is None:
        return False
    cands = [y[2] for y in buffer.between(lo_seq + 1, hi_seq, -math.inf, math.inf)]
    if not cands:
        return False
    neg = guard.neg
    if neg.kleene:
        return kleene_exists(neg.var, cands, bind, guard.preds, check)
    return any(check(guard.preds, {**bind, neg.var: c}) for c in cands)


def kleene_sequences(var: str, cands: Sequence[tuple], anchor: tuple, bind: dict,
                     preds: Sequence[Pred], check: Check) -> list[tuple]:
    """The sequences of ``cands`` ((seq, t, event), in stream order) followed by
    ``anchor`` that, bound to ``var`` with ``bind``, satisfy ``preds`` (module doc).

    >>> from cep_core.adaptive.operators import kleene_sequences
    >>> a, b, c = (0, 0, {"x": 1}), (1, 1, {"x": 2}), (2, 2, {"x": 3})
    >>> [[s[0] for s in q] for q in kleene_sequences("v", [a, b], c, {}, [], None)]
    [[2], [0, 2], [0, 1, 2], [1, 2]]
    """
    closed = [p for p in preds if prefix_closed(p, var)]
    whole_only = [p for p in preds if not prefix_closed(p, var)]
    found: list[tuple] = []

    def holds(seq: tuple, which: Sequence[Pred]) -> bool:
        return not which or check(which, {**bind, var: tuple(x[2] for x in seq)})

    def search(start: int, seq: tuple) -> None:
        whole = seq + (anchor,)
        if holds(whole, closed) and holds(whole, whole_only):
            found.append(whole)
        for j in range(start, len(cands)):
            longer = seq + (cands[j],)
            if holds(longer, closed):
                search(j + 1, longer)

    search(0, ())
    return found


class Completion:
    """What happens to a complete match of an engine's plan (module doc)."""

    def __init__(self, engine: AdaptiveEngine, record_plan: Any):
        self.engine = engine
        shape, plan = engine.shape, engine.plan
        self.record_plan = record_plan  # the plan whose RETURN makes the output
        self.late_guards = [g for g in shape.guards if g.late]
        self.kleene = shape.kleene[0] if shape.kleene else None
        timed = engine.output == "events" and record_plan.returns is not None and all(
            name != "time" for name, _ in record_plan.returns.fields)
        self.ends = EndNegation(plan, engine.check, timed) if (
            plan.lead_negs or plan.trail_negs) else None

    def complete(self, runner: Runner, slots: tuple, x: tuple, key: Any, out: list) -> None:
        """The match ``slots`` ((seq, t, event) per position) of ``runner``'s plan,
        completed by ``x`` in partition ``key``: its outputs appended to ``out``, with the
        time of the event that arrived (a lazy plan completes a match with buffered events
        when an earlier position's event arrives, so ``x`` may be older)."""
        eng = self.engine
        shape = eng.shape
        until = runner.until
        if self.kleene is None:
            if until is not None and min(s[0] for s in slots) >= until:
                return  # a retired plan outputs only the matches of its old events
            self._output(slots, {shape.vars[q]: s[2] for q, s in enumerate(slots)}, x,
                         key, out)
            return
        k = self.kleene
        for seq in self._sequences(runner, slots, key):
            if until is not None and min(seq[0][0], *(s[0] for s in slots)) >= until:
                continue
            bind = {shape.vars[q]: s[2] for q, s in enumerate(slots) if q != k}
            bind[shape.vars[k]] = tuple(s[2] for s in seq)
            late = self.late_guards
            if late and any(self._violated(g, slots, seq, bind, key) for g in late):
                continue
            self._output(slots, bind, x, key, out)

    def _sequences(self, runner: Runner, slots: tuple, key: Any) -> list[tuple]:
        """The Kleene element's sequences that end with its anchor in ``slots``."""
        eng = self.engine
        shape, k = eng.shape, self.kleene
        anchor = slots[k]
        lo = max([runner.start, *(slots[r][0] + 1 for r in range(shape.n)
                                  if shape.before[r][k])])
        t_lo = max(s[1] for s in slots) - eng.plan.window
        taken = {s[0] for s in slots}
        buffer = eng.stream_state.buffers.get((key, k))
        cands = [] if buffer is None else [
            y for y in buffer.between(lo, anchor[0], t_lo, math.inf) if y[0] not in taken]
        bind = {shape.vars[q]: s[2] for q, s in enumerate(slots) if q != k}
        return kleene_sequences(shape.vars[k], cands, anchor, bind, shape.late, eng.check)

    def _violated(self, g: Guard, slots: tuple, seq: tuple, bind: dict, key: Any) -> bool:
        """A late guard on a match whose Kleene element holds ``seq``."""
        hi = seq[0][0] if g.hi == self.kleene else slots[g.hi][0]
        buffer = self.engine.stream_state.negs.get((key, g.neg.type))
        return guard_violated(g, buffer, slots[g.lo][0], hi, bind, self.engine.check)

    def _output(self, slots: tuple, bind: dict, x: tuple, key: Any, out: list) -> None:
        eng = self.engine
        rec = match_record(self.record_plan, eng.output, bind, eng.stats.last_time)
        if self.ends is not None and not self.ends.admit(eng.stream_state.ends, bind, rec,
                                                         key):
            return  # violated by a leading NEG, or waiting for its window to close
        out.append(rec)
        eng.counters.outputs += 1
