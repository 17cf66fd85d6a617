"""ACEPMATCH with explicit match nodes, one candidate at a time.

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016, §3.1, Algorithm 1 (ACEPMATCH):
a *match node* is (state, loc, err, start_win, prev link); on a letter, every node at a
state before an L-state the letter matches (``pre(σ)``) is extended, and the seed starts
new nodes; *propagate* skips L-states at one error each. Here the skips are the plan's
inserting transitions (:mod:`cep_core.approx.insertions`), so a node's ``err`` is the
number of elements inserted before its state, and a match that completes by inserting
the elements after its state is reported at once, as the reference engine does.

The unit of work is **extending one candidate** (a live node, or the seed, that the
current event can extend) with the event: :meth:`MatchNodeEngine.candidates` lists them
in Algorithm 1's order (the seed, then nodes by automaton state, oldest first), and
:meth:`MatchNodeEngine.extend` runs one; a budget may stop between two candidates
(:mod:`cep_core.approx.rc_acep`). The cost of a candidate is counted in the reference
engine's units (:func:`cep_core.shedding.clock.work_units`), counted as that engine
counts them: transitions taken from a node (``pm_extended``), nodes created
(``pm_created``), predicates evaluated, and one per event; a node costs one unit at
least (a transition without predicates is always taken), so the unbudgeted engine does
the reference engine's work, unit for unit.

Without a budget (:meth:`MatchNodeEngine.process`) the engine finds exactly the matches
of ``CompiledQuery.matches(stream, max_missing=k)`` under skip-till-any-match, each with
its least error (``"missing"``). Patterns: ``SEQ`` of single elements, ``OR``, Kleene
elements, predicates, ``WITHIN`` and ``SAME[..]``; anything else is refused with a
one-line :class:`~cep_core.errors.QueryError`. A placeholder (a lost event,
:mod:`cep_core.approx.placeholders`) is ignored, as the reference engine ignores it under
skip-till-any-match.

**Proxy matches** (``proxy=True``; §3.3, Theorem 2): per partition, state and error
level ``i = 0..k`` only the node with the latest ``start_win`` among the nodes there
with error at most ``i`` is kept, so a state holds at most ``k + 1`` nodes. Every event
that completes a match in the full algorithm completes one here too, with the same
least error, so no window holding a match is lost (Definition 5). The argument needs a
node's future to depend on its state, error and start only: predicates that read one
single element, or each event of one Kleene element alone (``a[i].v > 2``).

History hooks (§3.2, Definition 4): each node keeps ``via``, the match vector of the
node it was extended from at that time (given by the caller of :meth:`extend`), so the
vectors of a complete match's trajectory are traced back through the ``parent`` links
and handed to ``on_match`` with the match point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from cep_core.approx.insertions import Insertions, approximate_problem
from cep_core.approx.placeholders import is_lost
from cep_core.counters import Counters
from cep_core.engine.protocol import StepFeeding
from cep_core.errors import QueryError
from cep_core.plan import START, Plan, Pred

__all__ = ["MatchNode", "MatchNodeEngine", "SEED", "proxy_problem", "unsupported"]


class MatchNode:
    """A match node (§3.1): automaton ``state`` (the latest pattern element it holds),
    ``bind`` (var -> event, or tuple of events for a Kleene variable), ``err``
    (elements inserted so far), ``start`` (start_win: the time of its first event),
    ``last`` (the time of its latest event), ``parent`` (the prev link; None for a node
    the seed started), ``via`` (the parent's match vector when it was extended, or the
    seed's) and ``key`` (its partition)."""

    __slots__ = ("state", "bind", "err", "start", "last", "parent", "via", "key")

    def __init__(self, state: int, bind: dict, err: int, start: Any, last: Any,
                 parent: MatchNode | None, via: Any, key: Any):
        self.state, self.bind, self.err = state, bind, err
        self.start, self.last, self.parent, self.via, self.key = start, last, parent, via, key

    def __repr__(self) -> str:
        return f"MatchNode(q{self.state + 1}, err={self.err}, start={self.start})"


class _Seed:
    """The seed (Algorithm 1, line 1): the start state, from which every event of a
    first element's type starts new nodes."""

    state = START
    err = 0
    parent = None
    via = None

    def __repr__(self) -> str:
        return "SEED"


SEED: Any = _Seed()


def unsupported(plan: Plan) -> str | None:
    """The construct of ``plan`` the match-node engine cannot run (None when it can)."""
    if plan.negs:
        return "NEG"
    if plan.remote is not None:
        return "remote data (REMOTE[..])"
    return approximate_problem(plan)


def proxy_problem(plan: Plan) -> str | None:
    """Why proxy matches (Theorem 2) do not apply to ``plan`` (None when they do): a
    predicate that relates two events (module doc)."""
    multi = {p.var: p.multi for p in plan.positions}
    for p in plan.preds:
        if len(p.vars) != 1:
            return f"a predicate relating several elements ({p.text})"
        (v,) = p.vars
        if multi.get(v) and not (p.mode == "incremental"
                                 and all(off == 0 for _, off in p.irefs)):
            return f"a predicate over a Kleene element's sequence ({p.text})"
    return None


class _Step:
    """One transition out of a state for one event type, with its completion."""

    __slots__ = ("dst", "inserted", "preds", "var", "multi", "extendable", "finish",
                 "finish_preds")

    def __init__(self, dst: int, inserted: int, preds: list[Pred], var: str, multi: bool,
                 extendable: bool, finish: int | None, finish_preds: list[Pred]):
        self.dst, self.inserted, self.preds, self.var, self.multi = (dst, inserted, preds,
                                                                      var, multi)
        self.extendable, self.finish, self.finish_preds = extendable, finish, finish_preds


class MatchNodeEngine(StepFeeding):
    """ACEPMATCH over a plan with up to ``k`` missing elements (module doc).

    ``proxy``: keep only proxies (Theorem 2). ``on_match(vectors, t, key)``: called for
    every completion with the match vectors of its trajectory, newest first (the
    candidate's vector given to :meth:`extend`, then each ancestor's ``via``), its match
    point and partition."""

    name = "match-node"

    def __init__(self, plan: Plan, k: int, proxy: bool = False,
                 on_match: Callable[[list, Any, Any], None] | None = None):
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise QueryError(f"max_missing must be a whole number >= 0, not {k!r}")
        if (why := unsupported(plan)) is not None:
            raise QueryError(f"the match-node engine does not run a query with {why}")
        if proxy and (why := proxy_problem(plan)) is not None:
            raise QueryError(f"proxy matches do not apply to a query with {why}")
        self.plan, self.k, self.proxy, self.on_match = plan, k, proxy, on_match
        self.window = plan.window
        self.counters = Counters()
        ins = Insertions(plan, k)
        self._steps: dict[tuple[int, str], list[_Step]] = {}
        for q in (START, *(p.index for p in plan.positions)):
            types = set(plan.out.get(q, {})) | set(ins.out.get(q, {}))
            for typ in types:
                steps = [self._step(e, 0, e.preds, ins) for e in plan.out.get(q, {}).get(typ, ())]
                steps += [self._step(e, e.inserted, e.preds, ins)
                          for e in ins.out.get(q, {}).get(typ, ()) if e.inserted <= k]
                if steps:
                    self._steps[(q, typ)] = steps
        #: per event type, the states (not the start) a node must be at to extend by it
        self.pre: dict[str, list[int]] = {}
        for q, typ in sorted(self._steps, key=lambda qt: qt[0]):
            if q != START:
                self.pre.setdefault(typ, []).append(q)
        #: per (state, type), the fewest insertions its transitions need
        self._need = {qt: min(s.inserted for s in steps) for qt, steps in self._steps.items()}
        self.starts = frozenset(typ for q, typ in self._steps if q == START)
        self.types = frozenset(typ for _, typ in self._steps)
        self.live: dict[Any, dict[int, list[MatchNode]]] = {}
        self._slots: dict[Any, dict[int, list[MatchNode | None]]] = {}
        self.now: Any = None
        self._seen: dict[tuple, dict] = {}
        self._born: list[MatchNode] = []
        self._next_sweep = -math.inf
        self._key: Any = None
        self.peak_nodes = 0
        self._count = 0

    def _step(self, edge, inserted: int, preds: list[Pred], ins: Insertions) -> _Step:
        plan, dst = self.plan, edge.dst
        pos = plan.positions[dst]
        if pos.accepting:
            finish, fpreds = 0, list(plan.accept_preds.get(dst, ()))
        elif dst in ins.finish:
            cost, end, skipped = ins.finish[dst]
            finish, fpreds = cost, [*skipped, *plan.accept_preds.get(end, ())]
        else:
            finish, fpreds = None, []
        return _Step(dst, inserted, list(preds), pos.var, pos.multi, plan.extendable[dst],
                     finish, fpreds)

    # ------------------------------------------------------------------ per event
    def begin_event(self, e: dict) -> Any:
        """Start processing ``e`` (counts it, drops expired nodes); its partition, or None
        when the engine ignores it."""
        typ, t = e["type"], e["time"]
        if self.plan.stream_type is not None and typ != self.plan.stream_type:
            return None
        if is_lost(e):
            return None  # a placeholder: never taken under skip-till-any-match
        self.now = t
        self.counters.events += 1
        self._seen = {}
        self._born = []
        if t >= self._next_sweep:
            self._sweep(t)
        self._key = self.plan.key_of(e)
        return self._key

    def candidates(self, e: dict, key: Any) -> list[Any]:
        """The nodes (and the seed) ``e`` can extend, in Algorithm 1's order: the seed,
        then by automaton state, oldest first; expired nodes are dropped on the way."""
        typ, t, tau, k = e["type"], e["time"], self.window, self.k
        out: list[Any] = [SEED] if typ in self.starts else []
        part = self.live.get(key)
        if not part:
            return out
        need = self._need
        for q in self.pre.get(typ, ()):
            nodes = part.get(q)
            if not nodes:
                continue
            alive = [n for n in nodes if t - n.start <= tau]
            if len(alive) != len(nodes):
                self.counters.pm_dropped += len(nodes) - len(alive)
                self._count -= len(nodes) - len(alive)
                if not alive:
                    del part[q]
                    continue
                part[q] = nodes = alive
            room = k - need[(q, typ)]
            if room >= k:
                out.extend(nodes)
            else:
                out.extend(n for n in nodes if n.err <= room)
        return out

    def extend(self, cand: Any, e: dict, key: Any, out: list, vec: Any = None) -> None:
        """Extend one candidate (a node, or :data:`SEED`) with ``e``: every transition it
        may take creates a node (the candidate stays, skip-till-any-match) and every
        completion is reported in ``out`` (``vec``: the candidate's match vector now)."""
        c = self.counters
        steps = self._steps.get((cand.state, e["type"]))
        if not steps:
            return
        t, k = e["time"], self.k
        seed = cand is SEED
        bind0 = {} if seed else cand.bind
        err0 = cand.err
        for s in steps:
            err = err0 + s.inserted
            if err > k:
                continue
            nb = dict(bind0)
            if s.multi:
                nb[s.var] = nb.get(s.var, ()) + (e,)
            else:
                nb[s.var] = e
            if s.preds and not self._check(s.preds, nb):
                continue
            if not seed:
                c.pm_extended += 1  # (a start is counted as created only, as the
                # reference engine counts it)
            if s.finish is not None and err + s.finish <= k and (
                    not s.finish_preds or self._check(s.finish_preds, nb)):
                self._emit(nb, err + s.finish, out, cand, vec, t)
            if s.extendable:
                start = t if seed else cand.start
                if self.proxy and not self._admits(key, s.dst, err, start):
                    continue
                node = MatchNode(s.dst, nb, err, start, t, None if seed else cand, vec, key)
                c.pm_created += 1
                if self.proxy:
                    self._admit(node)
                else:
                    self._born.append(node)

    def end_event(self) -> None:
        """Finish the event: the nodes it created join the live ones."""
        for node in self._born:
            self.live.setdefault(node.key, {}).setdefault(node.state, []).append(node)
        self._count += len(self._born)
        self._born = []
        if self._count > self.peak_nodes:
            self.peak_nodes = self._count

    def process(self, e: dict, out: list, vector: Callable[[Any, Any], Any] | None = None
                ) -> None:
        """ACEPMATCH on one event, every candidate (``vector(node, t)``: its match vector,
        for the history hooks)."""
        key = self.begin_event(e)
        if key is None:
            return
        t = e["time"]
        for cand in self.candidates(e, key):
            self.extend(cand, e, key, out, vector(cand, t) if vector is not None else None)
        self.end_event()

    def run(self, events: Iterable[dict]) -> list[dict]:
        """Every match over ``events`` (``{var: id, .., "missing": err}``)."""
        out: list[dict] = []
        for e in events:
            self.process(e, out)
        return out

    # ------------------------------------------------------------------ state
    def live_count(self) -> int:
        """Live match nodes (expired ones are dropped at the next sweep)."""
        return self._count

    def nodes(self) -> list[MatchNode]:
        return [n for part in self.live.values() for nodes in part.values() for n in nodes]

    def _sweep(self, t: Any) -> None:
        tau = self.window
        if tau == math.inf:
            self._next_sweep = math.inf
            return
        for key in list(self.live):
            part = self.live[key]
            for q in list(part):
                alive = [n for n in part[q] if t - n.start <= tau]
                self.counters.pm_dropped += len(part[q]) - len(alive)
                self._count -= len(part[q]) - len(alive)
                if alive:
                    part[q] = alive
                else:
                    del part[q]
            if not part:
                del self.live[key]
                self._slots.pop(key, None)
        self._next_sweep = t + tau

    def _check(self, preds: list[Pred], b: dict) -> bool:
        """The predicates whose variables are all bound (an inserted element satisfies
        those that read it: docs/decisions.md, "Approximate matching")."""
        c = self.counters
        keys = b.keys()
        for p in preds:
            if p.vars <= keys:
                c.predicates += 1
                if not p.test(b):
                    return False
        return True

    def _emit(self, bind: dict, err: int, out: list, cand: Any, vec: Any, t: Any) -> None:
        if self.on_match is not None:
            chain = [vec]
            node = None if cand is SEED else cand
            while node is not None:
                chain.append(node.via)
                node = node.parent
            self.on_match(chain, t, cand.key if cand is not SEED else self._key)
        key = tuple(sorted((v, tuple(map(id, x)) if isinstance(x, tuple) else id(x))
                           for v, x in bind.items()))
        rec = self._seen.get(key)
        if rec is not None:
            rec["missing"] = min(rec["missing"], err)
            return
        rec = {v: [x["id"] for x in ev] if isinstance(ev, tuple) else ev["id"]
               for v, ev in bind.items()}
        rec["missing"] = err
        self._seen[key] = rec
        out.append(rec)
        self.counters.outputs += 1

    # ------------------------------------------------------------------ proxies
    def _admits(self, key: Any, state: int, err: int, start: Any) -> bool:
        """Whether a node at (``state``, ``err``) starting at ``start`` would be the proxy
        of some error level (Theorem 2: the latest start_win among errors ≤ i)."""
        slots = self._slots.get(key, {}).get(state)
        if slots is None:
            return True
        for i in range(err, self.k + 1):
            cur = slots[i]
            if cur is None or cur.start < start:
                return True
        return False

    def _admit(self, node: MatchNode) -> None:
        part = self._slots.setdefault(node.key, {})
        slots = part.get(node.state)
        if slots is None:
            slots = part[node.state] = [None] * (self.k + 1)
        tau, now = self.window, self.now
        for i in range(self.k + 1):
            cur = slots[i]
            if i >= node.err and (cur is None or cur.start < node.start):
                slots[i] = node
            elif cur is not None and now - cur.start > tau:
                slots[i] = None  # expired
        kept = sorted({id(n): n for n in slots if n is not None}.values(),
                      key=lambda n: n.start)
        live = self.live.setdefault(node.key, {})
        before = len(live.get(node.state, ()))
        live[node.state] = kept
        self._count += len(kept) - before
        if self._count > self.peak_nodes:
            self.peak_nodes = self._count
