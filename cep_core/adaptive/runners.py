"""The evaluation of one adaptive plan (US 11,693,862 B2, "Experimental Setup": the lazy
NFA with order-based plans and ZStream with tree-based ones; **patented**, see the
package).

Both evaluations keep, per partition key, the events of each pattern position that
passed the predicates on that position alone (the *buffers*, :class:`Buffer`), and find
exactly the matches of the text-order plan under skip-till-any-match (a match is a set
of events, one per position, in the order the pattern requires, within the window,
satisfying every predicate). A match is output at the arrival of its last event, as the
text-order engines output it.

* **Order-based** (:class:`OrderRunner`, a lazy NFA, after Kolchinsky, Sharfman and
  Schuster): a partial match of level i holds the positions p_1..p_i of the plan's
  order. An event at position p_{i+1} extends the partial matches of level i that exist
  when it arrives; a partial match of level i extends, when it is made, with the
  buffered events of p_{i+1} that arrived before it. So each extension happens once, at
  the later of the two arrivals, and a match is made once.
* **Tree-based** (:class:`TreeRunner`, ZStream, Mei and Madden): leaves are the
  buffers, an inner node joins its children's partial matches; an event makes its
  leaf's new partial match, which joins, node by node up the tree, with what the
  sibling holds; what reaches the root is a match.

The pattern's order between two positions and its predicates are checked as soon as
both (all) their positions are bound; the window as soon as a partial match spans more;
a negated element between two neighbours (a *guard*, :mod:`cep_core.adaptive.operators`)
as soon as its neighbours and the positions its predicates read are bound. A complete
match goes to the engine's ``complete`` (the Kleene elements expanded, the negated
elements at the ends, the output).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

from cep_core.adaptive.planning import Planned

#: the engine that runs a plan (a :class:`cep_core.adaptive.engine.AdaptiveEngine`,
#: which imports this module)
AdaptiveEngine = Any

__all__ = ["Buffer", "Runner", "OrderRunner", "TreeRunner", "RUNNERS", "left_deep"]


class Runner:
    """One plan's evaluation (module doc), from event ``start`` on; ``until``: retired
    at that event (it then outputs only the matches holding an earlier one). A part of
    the engine's state: it pickles its plan and partial matches (:attr:`STATE`), and
    :meth:`bind` compiles the rest on the engine that runs it."""

    #: the fields that pickle (the rest :meth:`bind` compiles from the plan)
    STATE: tuple[str, ...] = ("planned", "start", "until", "last_old_t")

    def __init__(self, engine: AdaptiveEngine, planned: Planned, start: int):
        self.planned, self.start = planned, start
        self.until: int | None = None
        self.last_old_t: Any = None  # the time of its last event before ``until``
        self.bind(engine)

    def bind(self, engine: AdaptiveEngine) -> None:
        """Run on ``engine``: what its plan compiles to there."""
        self.engine = engine

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.STATE}

    def __setstate__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)

    def relations(self, bound: list[int], q: int) -> tuple[tuple[int, ...], ...]:
        """For an event joining the positions ``bound`` at ``q``: those whose events must
        come before it, those whose events must come after it, and those of its type
        (one event takes one position)."""
        shape = self.engine.shape
        return (tuple(r for r in bound if shape.before[r][q]),
                tuple(r for r in bound if shape.before[q][r]),
                tuple(r for r in bound if shape.types[r] == shape.types[q]))


def _drop_older(stores: dict[tuple, list], oldest: Any) -> int:
    """Drop from each list of partial matches ``(slots, lo, hi)`` those holding an event
    before ``oldest`` (and the lists left empty); how many were dropped."""
    dropped = 0
    for at, store in list(stores.items()):
        keep = [pm for pm in store if pm[1] >= oldest]
        dropped += len(store) - len(keep)
        if keep:
            store[:] = keep
        else:
            del stores[at]
    return dropped


class Buffer:
    """The events of one position and key, in arrival order: their sequence numbers and
    times (for bisection) beside the events ``(seq, t, event)``."""

    __slots__ = ("seqs", "times", "items")

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.times: list[Any] = []
        self.items: list[tuple] = []

    def add(self, x: tuple) -> None:
        self.seqs.append(x[0])
        self.times.append(x[1])
        self.items.append(x)

    def between(self, first_seq: int, last_seq: float, t_lo: Any, t_hi: Any) -> list:
        """The events with first_seq ≤ seq < last_seq and t_lo ≤ t ≤ t_hi."""
        a = max(bisect_left(self.seqs, first_seq), bisect_left(self.times, t_lo))
        b = min(bisect_left(self.seqs, last_seq), bisect_right(self.times, t_hi))
        return self.items[a:b]

    def expire(self, oldest: Any) -> None:
        k = bisect_left(self.times, oldest)
        if k:
            del self.seqs[:k], self.times[:k], self.items[:k]

    def __bool__(self) -> bool:
        return bool(self.items)


class OrderRunner(Runner):
    """The lazy order-based evaluation (module doc)."""

    STATE = (*Runner.STATE, "levels")

    def __init__(self, engine: AdaptiveEngine, planned: Planned, start: int):
        self.levels: dict[tuple, list] = {}  # (key, level) -> (slots, lo, hi)
        super().__init__(engine, planned, start)

    def bind(self, engine: AdaptiveEngine) -> None:
        super().bind(engine)
        shape = engine.shape
        self.order = self.planned.plan
        self.rank = {q: i for i, q in enumerate(self.order)}
        self.checks = [shape.checks(frozenset(self.order[:i]), q)
                       for i, q in enumerate(self.order)]
        self.related = [self.relations(list(self.order[:i]), q)
                        for i, q in enumerate(self.order)]
        self.guards = [shape.guards_at(frozenset(self.order[:i]), q)
                       for i, q in enumerate(self.order)]
        #: per level, whether a bound Kleene element may hold events older than every
        #: bound event (none of its predecessors bound): its expansions reach back
        self.reaches_back = [any(k in self.order[:i] and not any(
            shape.before[b][k] for b in self.order[:i]) for k in shape.kleene)
            for i in range(shape.n)]
        #: per level, whether a position still to bind may take an event older than
        #: every bound one (none of them must come before it)
        self.takes_old = [any(not any(shape.before[b][r] for b in self.order[:i])
                              for r in self.order[i:]) for i in range(shape.n)]

    def process(self, x: tuple, positions: list[int], key: Any, out: list) -> None:
        n = self.engine.shape.n
        for q in positions:
            i = self.rank[q]
            if i == 0:
                slots = tuple(x if r == q else None for r in range(n))
                self._grow(slots, x[1], x[1], 1, key, x, out)
                continue
            if self.related[i][1]:
                continue  # a bound position must come after q: not the newest event
            level = self.levels.get((key, i))
            if level:
                for slots, lo, hi in list(level):
                    self._extend(slots, lo, hi, i, x, key, out)

    def _extend(self, slots: tuple, lo: Any, hi: Any, i: int, x: tuple, key: Any,
                out: list) -> None:
        """Offer ``x`` to the partial match ``slots`` of level i (at position p_{i+1})."""
        q = self.order[i]
        seq, t = x[0], x[1]
        if (hi if hi > t else t) - (lo if lo < t else t) > self.engine.plan.window:
            return
        earlier, later, alike = self.related[i]
        for r in earlier:
            if slots[r][0] >= seq:
                return
        for r in later:
            if slots[r][0] <= seq:
                return
        for r in alike:
            if slots[r][0] == seq:
                return
        grown = slots[:q] + (x,) + slots[q + 1:]
        checks = self.checks[i]
        if checks:
            bind = {self.engine.shape.vars[r]: s[2] for r, s in enumerate(grown)
                    if s is not None}
            if not self.engine.check(checks, bind):
                return
        guards = self.guards[i]
        if guards and not self.engine.guarded(guards, grown, key):
            return
        self.engine.counters.pm_extended += 1
        self._grow(grown, min(lo, x[1]), max(hi, x[1]), i + 1, key, x, out)

    def _grow(self, slots: tuple, lo: Any, hi: Any, level: int, key: Any, x: tuple,
              out: list) -> None:
        """A new partial match of ``level``: output it if complete, else keep it and
        extend it with the buffered events of the next position (arrived before it)."""
        n = self.engine.shape.n
        if level == n:
            self.engine.complete(self, slots, x, key, out)
            return
        new_only = self.until is not None and not self.reaches_back[level] and all(
            s is None or s[0] >= self.until for s in slots)
        if new_only and not self.takes_old[level]:
            return  # retired: new events alone, and no later position may take an old one
        if not (new_only and self.related[level][1]):
            # (kept unless retired and of new events alone with no arrival to extend it:
            # its bound positions must come after the next; its buffer is read below)
            self.engine.counters.pm_created += 1
            self.levels.setdefault((key, level), []).append((slots, lo, hi))
        buffer = self.engine.stream_state.buffers.get((key, self.order[level]))
        if buffer is None:
            return
        earlier, later, _ = self.related[level]
        first = max(slots[r][0] + 1 for r in earlier) if earlier else self.start
        first = max(first, self.start)  # (a plan sees the events from its start on)
        last = min(slots[r][0] for r in later) if later else math.inf
        window = self.engine.plan.window
        for y in buffer.between(first, last, hi - window, lo + window):
            self._extend(slots, lo, hi, level, y, key, out)

    def expire(self, oldest: Any) -> int:
        return _drop_older(self.levels, oldest)

    def live(self) -> int:
        return sum(len(level) for level in self.levels.values())


class TreeRunner(Runner):
    """The tree-based evaluation (module doc): nodes numbered bottom-up, each with the
    positions it spans, its parent and sibling."""

    STATE = (*Runner.STATE, "stores")

    def __init__(self, engine: AdaptiveEngine, planned: Planned, start: int):
        #: (key, inner node) -> its partial matches (slots, lo, hi); the leaves are the
        #: engine's buffers
        self.stores: dict[tuple, list] = {}
        super().__init__(engine, planned, start)

    def bind(self, engine: AdaptiveEngine) -> None:
        super().bind(engine)
        shape = engine.shape
        self.span: list[frozenset[int]] = []
        self.parent: list[int] = []
        self.leaf: dict[int, int] = {}  # position -> its leaf node

        def build(t: Any) -> int:
            if isinstance(t, int):
                node = len(self.span)
                self.span.append(frozenset({t}))
                self.parent.append(-1)
                self.leaf[t] = node
                return node
            left, right = build(t[0]), build(t[1])
            node = len(self.span)
            self.span.append(self.span[left] | self.span[right])
            self.parent.append(-1)
            self.parent[left] = self.parent[right] = node
            return node

        self.root = build(self.planned.plan)
        self.children = {self.parent[c]: [] for c in range(len(self.span))
                         if self.parent[c] >= 0}
        for c, p in enumerate(self.parent):
            if p >= 0:
                self.children[p].append(c)
        self.joins = {p: shape.joins(self.span[a], self.span[b])
                      for p, (a, b) in self.children.items()}
        self.guards = {p: shape.guards_joining(self.span[a], self.span[b])
                       for p, (a, b) in self.children.items()}
        #: per inner node and child, the pairs (q in the child, r in its sibling) whose
        #: events must come q's first, r's first, or be different events (same type)
        self.cross: dict[tuple[int, int], tuple[tuple, tuple, tuple]] = {}
        for p, (a, b) in self.children.items():
            for mine, other in ((a, b), (b, a)):
                pairs = [(q, r) for q in self.span[mine] for r in self.span[other]]
                self.cross[(p, mine)] = (
                    tuple((q, r) for q, r in pairs if shape.before[q][r]),
                    tuple((q, r) for q, r in pairs if shape.before[r][q]),
                    tuple((q, r) for q, r in pairs if shape.types[q] == shape.types[r]))

    def process(self, x: tuple, positions: list[int], key: Any, out: list) -> None:
        n = self.engine.shape.n
        for q in positions:
            node = self.leaf[q]
            fresh = [(tuple(x if r == q else None for r in range(n)), x[1], x[1])]
            while True:
                if node == self.root:
                    for slots, _, _ in fresh:
                        self.engine.complete(self, slots, x, key, out)
                    break
                if len(self.span[node]) > 1:
                    self.stores.setdefault((key, node), []).extend(fresh)
                parent = self.parent[node]
                sib = next(c for c in self.children[parent] if c != node)
                fresh = self._join(fresh, self._held(key, sib, x[1]), parent, node, key)
                if not fresh:
                    break
                node = parent
                if node != self.root:
                    self.engine.counters.pm_created += len(fresh)

    def _held(self, key: Any, node: int, t: Any) -> Any:
        """The partial matches ``node`` holds for ``key`` (a leaf: the buffered events of
        its position from this plan's start on, within the window of ``t``)."""
        if len(self.span[node]) > 1:
            return self.stores.get((key, node), ())
        (q,) = self.span[node]
        buffer = self.engine.stream_state.buffers.get((key, q))
        if buffer is None:
            return ()
        n, window = self.engine.shape.n, self.engine.plan.window
        return [(tuple(y if r == q else None for r in range(n)), y[1], y[1])
                for y in buffer.between(self.start, math.inf, t - window, t + window)]

    def _join(self, fresh: list, other: list, parent: int, node: int, key: Any) -> list:
        """The partial matches of ``parent`` made of one of ``fresh`` (at ``node``) and
        one of ``other`` (the sibling's, all older)."""
        eng = self.engine
        window, vars_ = eng.plan.window, eng.shape.vars
        joins, guards = self.joins[parent], self.guards[parent]
        mine_first, theirs_first, alike = self.cross[(parent, node)]
        made = []
        for a, alo, ahi in fresh:
            for b, blo, bhi in other:
                lo = alo if alo < blo else blo
                hi = ahi if ahi > bhi else bhi
                if hi - lo > window:
                    continue
                if any(a[q][0] >= b[r][0] for q, r in mine_first) or \
                        any(b[r][0] >= a[q][0] for q, r in theirs_first) or \
                        any(a[q][0] == b[r][0] for q, r in alike):
                    continue
                slots = tuple(s if s is not None else u for s, u in zip(a, b, strict=True))
                if joins:
                    bind = {vars_[q]: s[2] for q, s in enumerate(slots) if s is not None}
                    if not self.engine.check(joins, bind):
                        continue
                if guards and not eng.guarded(guards, slots, key):
                    continue
                eng.counters.pm_extended += 1
                made.append((slots, lo, hi))
        return made

    def expire(self, oldest: Any) -> int:
        return _drop_older(self.stores, oldest)

    def live(self) -> int:
        return sum(len(s) for s in self.stores.values())



RUNNERS: dict[str, Callable[..., Runner]] = {"order": OrderRunner, "tree": TreeRunner}


def left_deep(n: int) -> Any:
    """The text order as a left-deep tree: ((0, 1), 2), ..."""
    tree: Any = 0
    for q in range(1, n):
        tree = (tree, q)
    return tree
