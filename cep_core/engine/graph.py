"""The graph engine: skip-till-any-match without keeping partial matches one by one.

Under skip-till-any-match (dissertation §2.2.2) a Kleene element admits every subset of
its qualifying events, so an engine that stores partial matches (the reference engine,
:mod:`cep_core.engine.reference`) keeps 2^n of them for n events. This engine keeps the
events of the window as a graph whose paths are the matches, in the spirit of CORE
(Bucchi et al., *CORE: a Complex Event Recognition Engine*, VLDB 2022):

* a **node** is an event at a pattern position; the nodes of a position are kept in
  **groups**, one per *signature*: the values of the attributes that the predicates still
  to come read of the variables bound so far (``a.ID`` and ``a.V`` of ``SEQ(A a, B b, C c)
  WHERE a.ID=c.ID AND a.V+b.V=c.V`` at ``b``; nothing when no predicate looks back). A
  predicate between a new event and a group is evaluated once for the whole group, on a
  binding built from the signature: every node of a group extends the same way;
* a new node points to the **prefixes** of its predecessor groups (the group at the
  position before, and its own for a Kleene ``take``) as they were when it arrived:
  one ``(group, length)`` pair per group, so an event costs one step per predecessor
  group, whatever the number of partial matches;
* equality predicates between the new event and what came before (``a.ID=c.ID``,
  ``a.V+b.V=c.V``, ``b[i].x=b[i+1].x``) are answered by a hash index of the predecessor
  groups on the value of the side that reads them;
* a node that completes the pattern **enumerates** its matches by walking back along
  the prefixes, newest first, skipping nodes through which no path starts inside the
  window (each node keeps the latest start of a path through it, and each group the
  running maximum of those, so a walk stops at the first node that cannot reach a match);
* nodes through which no path starts after ``now − WITHIN`` are dropped as time goes
  on, so the state grows with the events of the window, not with their subsets.

The matches, and the time each is emitted, are the reference engine's (the differential
tests in ``tests/cep_core/test_graph_engine.py``); within one event they may come in another
order. Queries outside the class (:func:`graph_unsupported` says why) run on the
reference engine: a flat ``SEQ`` of events and Kleene elements, predicates evaluated on
entering an element (over single variables and, for a Kleene element, its newest and
previous event), no ``NEG``, ``AND``, ``OR`` or ``SEQ(..)+``, no predicate over a Kleene
variable's whole sequence (``LENGTH``, aggregates, ``v[last]``), lookups that always
answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from cep_core.approx.insertions import approximate_problem
from cep_core.approx.placeholders import is_lost
from cep_core.counters import Counters
from cep_core.engine.matching import (
    ANY,
    EVERY_EVENT,
    OUTPUTS,
    CountMerging,
    Statistics,
    check_predicates,
    match_record,
)
from cep_core.errors import QueryError
from cep_core.expr import ExprCompiler
from cep_core.lang import ast
from cep_core.lookup import Lookup, LookupSet, TableLookup
from cep_core.plan import Edge, Plan, Pred, flat_sequence_problem

__all__ = ["GraphEngine", "graph_unsupported"]

_NOKEY = object()


def graph_unsupported(plan: Plan) -> str | None:
    """Why the graph engine cannot run ``plan`` (None when it can)."""
    why = flat_sequence_problem(plan)
    if why is not None:
        return why
    if any(plan.accept_preds.values()):
        return ("a predicate over a Kleene variable's whole sequence (LENGTH, aggregates, "
                "v[last], v[m])")
    remote = plan.remote
    if isinstance(remote, Lookup) and not isinstance(remote, TableLookup | LookupSet):
        return "a lookup that may answer later"
    for e in plan.edges:
        for p in e.preds:
            why = _pred_unsupported(plan, e, p)
            if why:
                return f"{why} ('{p.text}')"
    return None


def _pred_unsupported(plan: Plan, edge: Edge, p: Pred) -> str | None:
    if p.where.startswith("leave") or p.mode == "universal":
        return ("a predicate over a Kleene variable's whole sequence (LENGTH, aggregates, "
                "v[last], v[m])")
    if p.mode == "incremental":
        offsets = {o for v, o in p.irefs if v == p.anchor_var}
        if any(v != p.anchor_var for v, _ in p.irefs) or \
                not offsets <= {p.anchor_offset, p.anchor_offset - 1}:
            return "a predicate reaching further back than the previous event of a Kleene"
        return None
    multi = [v for v in p.vars if plan.variables[v].multi]
    if multi:
        return "a predicate over a Kleene variable's whole sequence"
    return None


class Group:
    """The nodes of one position that share a signature (module docstring)."""

    __slots__ = ("pos", "sig", "pseudo", "events", "begins", "preds", "start", "reach",
                 "off", "filed", "err")

    def __init__(self, pos: int, sig: tuple, pseudo: dict[str, Any], err: int = 0):
        self.pos, self.sig, self.pseudo = pos, sig, pseudo
        self.err = err  # the elements its paths miss so far (approximate matching)
        self.events: list[dict] = []  # the nodes' events, in arrival order
        self.begins: list[bool] = []  # per node: a match may start with it
        self.preds: list[tuple] = []  # per node: its predecessor prefixes (group, length)
        self.start: list[Any] = []  # per node: the latest first time of a path through it
        self.reach: list[Any] = []  # running maximum of ``start`` (never decreases)
        self.off = 0  # the absolute index of ``events[0]`` (the nodes before were dropped)
        self.filed: list[tuple[dict, tuple]] = []  # the index entries that hold it

    @property
    def size(self) -> int:
        return self.off + len(self.events)


class _Side:
    """One side of an equality predicate, as a function of a binding."""

    def __init__(self, fn: Callable, pred: Pred):
        self.fn, self.pred = fn, pred

    def __call__(self, b: dict) -> Any:
        p = self.pred
        if p.mode == "incremental":
            return self.fn(b, len(b[p.anchor_var]) - 1 - p.anchor_offset)
        return self.fn(b, None)


class _Way:
    """An edge into a position: its predicates, and the equality predicates it can look
    up in a hash index (``index``: pairs of the sides reading the predecessor and the
    new event)."""

    def __init__(self, edge: Edge, index: list[tuple[_Side, _Side]]):
        self.edge, self.index = edge, index
        self.preds = edge.preds
        # what the index does not answer (the groups it finds hold its equalities)
        looked_up = {id(old.pred) for old, _ in index}
        self.rest = [p for p in edge.preds if id(p) not in looked_up]


class MatchSet:
    """The matches one event completes, enumerated on demand (``output="sets"``):
    iterating gives them as ``output="matches"`` would ({var: event id, or list of
    ids}), :meth:`events` as ``output="events"`` would, and :meth:`count` (``len()``)
    counts them without enumerating (one step per node of the graph). Enumerate (or
    count) a set before the stream moves more than its window past the event."""

    __slots__ = ("engine", "q", "event", "begins", "prefixes", "newest_only", "missing")

    def __init__(self, engine: GraphEngine, q: int, event: dict, begins: bool,
                 prefixes: list, newest_only: bool, missing: int | None = None):
        self.engine, self.q, self.event, self.begins = engine, q, event, begins
        self.prefixes, self.newest_only = prefixes, newest_only
        self.missing = missing  # the elements each of its matches misses (or None)

    def _valid(self) -> None:
        if self.engine.now - self.event["time"] > self.engine.plan.window:
            raise QueryError("a match set is enumerated within the window of its event; "
                             "the stream has moved past it")

    def __iter__(self) -> Iterator[dict]:
        self._valid()
        return self.engine._records(self, "matches")

    def events(self) -> Iterator[dict]:
        """The output events of the matches (RETURN), as ``output="events"`` gives them."""
        self._valid()
        return self.engine._records(self, "events")

    def count(self) -> int:
        """The number of matches (may be far more than could be enumerated: 2^n - 1 for
        a Kleene element over n events)."""
        self._valid()
        return self.engine._count(self)

    def __len__(self) -> int:
        return self.count()

    def __repr__(self) -> str:
        return f"MatchSet(at event {self.event.get('id')}, {self.count()} matches)"


class GraphEngine(CountMerging):
    """Runs a :class:`~cep_core.plan.Plan` of the class :func:`graph_unsupported`
    accepts under skip-till-any-match (module docstring). ``output``: ``"events"`` or
    ``"matches"``, as :class:`~cep_core.engine.reference.ReferenceEngine`, or ``"sets"``:
    one :class:`MatchSet` per event (and signature) that completes matches. A
    ``COUNT(*)`` query's matches are counted without enumerating them."""

    name = "graph"

    def __init__(self, plan: Plan, output: str = "events", max_missing: int | None = None):
        why = graph_unsupported(plan) or (approximate_problem(plan) if max_missing else None)
        if why is not None:
            raise QueryError(f"the graph engine does not apply: {why}")
        if output not in (*OUTPUTS, "sets"):
            raise QueryError(f"output must be one of {', '.join(OUTPUTS)}, sets, not "
                             f"{output!r}")
        self.plan, self.output = plan, output
        self.policy, self.runs = ANY, EVERY_EVENT
        self.counters = Counters()
        self.stats = Statistics(plan)
        n = len(plan.positions)
        self.vars = [p.var for p in plan.positions]
        self.kleene = [p.kleene for p in plan.positions]
        self.need = _needs(plan)
        comp = ExprCompiler(plan.variables, plan.params, plan.lookups, plan.time_unit,
                            plan.source)
        self.ways: list[dict[str, _Way]] = [{} for _ in range(n)]  # position -> kind -> way
        for e in plan.edges:
            self.ways[e.dst][e.kind] = _Way(e, _index_sides(plan, comp, e))
        self.by_type: dict[str, list[int]] = {}
        for q, pos in enumerate(plan.positions):
            self.by_type.setdefault(pos.type, []).append(q)
        self.graphs: dict[Any, list[dict[tuple, Group]]] = {}  # key -> position -> sig
        self.indexes: dict[Any, dict[tuple[int, str], dict[tuple, list[Group]]]] = {}
        self.now: Any = None
        self._next_sweep = -math.inf
        self.nodes = 0  # live nodes (the state's size)
        self._set_counting(output)  # RETURN .. COUNT(*)
        #: approximate matching (module doc): the elements a match may miss, and per
        #: position the predecessor positions a node may follow by skipping elements
        self.k = max_missing or 0
        self.skips = [[(src, q - src - 1) for src in range(max(0, q - 1 - self.k), q - 1)]
                      for q in range(n)]

    def _process(self, e: dict, out: list) -> None:
        plan = self.plan
        typ, t = e["type"], e["time"]
        if plan.stream_type is not None and typ != plan.stream_type:
            return
        self.now = t
        self.counters.events += 1
        self.stats.event(typ, t)
        if t >= self._next_sweep:
            self._sweep(t)
        positions = self.by_type.get(typ)
        if not positions or (self.k and is_lost(e)):
            return  # (a placeholder is never taken under skip-till-any-match)
        key = plan.key_of(e)
        if key is None:
            return
        graph = self.graphs.get(key)
        if graph is None:
            graph = self.graphs[key] = [{} for _ in plan.positions]
            self.indexes[key] = {}
        index = self.indexes[key]
        last = len(plan.positions) - 1
        made = [(q, *node) for q in positions for node in self._targets(q, e, graph, index)]
        for q, sig, err, pseudo, begins, prefixes in made:  # every position, then append
            missing = err + last - q  # with the elements after q inserted
            if q == last and not self.kleene[q]:  # complete: nothing can follow it
                self._emit(q, e, begins, prefixes, out, missing=missing)
                continue
            group = graph[q].get(sig)
            if group is None:
                group = graph[q][sig] = Group(q, sig, pseudo, err)
                self._index(index, q, group)
            start = t if begins else -math.inf
            for g, n in prefixes:
                reach = g.reach[n - 1 - g.off]
                if reach > start:
                    start = reach
            group.events.append(e)
            group.begins.append(begins)
            group.preds.append(tuple(prefixes))
            group.start.append(start)
            group.reach.append(max(start, group.reach[-1]) if group.reach else start)
            self.nodes += 1
            self.counters.pm_created += 1
            if missing <= self.k:
                self._emit(q, e, False, [(group, group.size)], out, newest_only=True,
                           missing=missing)

    # ------------------------------------------------------------------ public
    #: what it runs, when a plan of its class is refused for the options
    scope = f"it runs {ANY} with runs='{EVERY_EVENT}' and no filters"

    @classmethod
    def refusal(cls, plan: Plan, options: Any) -> str | None:
        why = graph_unsupported(plan)
        if why or options.policy != ANY or options.runs != EVERY_EVENT or options.filtered:
            return why or cls.scope
        return None

    def partial_matches(self) -> list[dict[str, Any]]:
        raise QueryError("the graph engine keeps the window's events as a graph, not "
                         "partial matches one by one; start(..., engine='reference') "
                         "lists them")

    def flush(self) -> list[dict]:
        """The end of the stream: nothing is pending in this engine."""
        return []

    def live_count(self) -> int:
        """The nodes kept (a node per event and position and signature)."""
        return self.nodes

    # ------------------------------------------------------------------ building
    def _targets(self, q: int, e: dict, graph: list[dict[tuple, Group]],
                 index: dict) -> Iterator[tuple[tuple, int, dict, bool, list]]:
        """The nodes ``e`` makes at position ``q``: (signature, the elements its paths
        miss, pseudo-events of the signature, whether a match may start with it,
        predecessor prefixes)."""
        var, kleene = self.vars[q], self.kleene[q]
        found: dict[tuple, list] = {}  # signature -> [err, pseudo, begins, prefixes]
        t, tau = e["time"], self.plan.window

        def node(b: dict, err: int) -> list:
            sig, pseudo = self._project(q, b)
            if self.k:
                sig += (err,)
            entry = found.get(sig)
            if entry is None:
                entry = found[sig] = [err, pseudo, False, []]
            return entry

        def follow(g: Group, preds: list, take: bool, err: int) -> None:
            if not g.reach or t - g.reach[-1] > tau:
                return  # no path through it starts inside the window
            b = dict(g.pseudo)
            b[var] = b[var] + (e,) if take else (e,) if kleene else e
            if preds and not self._check(preds, b):
                return
            self.counters.pm_extended += 1
            node(b, err)[3].append((g, g.off + len(g.events)))

        entering = None
        for kind, way in self.ways[q].items():
            if kind == "begin":
                b = {var: (e,) if kleene else e}
                if self._check(way.preds, b):
                    node(b, 0)[2] = True
                continue
            if kind == "next":
                entering = way.preds
            src = q if kind == "take" else q - 1
            preds = way.rest if way.index else way.preds
            for g in self._candidates(way, src, graph, index, e):
                follow(g, preds, kind == "take", g.err)
            if self.k and way.index:  # groups the index cannot file (an element missing)
                for g in index.get((q, kind, "*"), ()):
                    follow(g, way.preds, kind == "take", g.err)
        if self.k and entering is not None:  # ACEP: the elements before q missing
            if q <= self.k:
                b = {var: (e,) if kleene else e}
                if self._check(entering, b):
                    node(b, q)[2] = True
            for src, cost in self.skips[q]:
                for g in list(graph[src].values()):
                    if g.err + cost <= self.k:
                        follow(g, entering, False, g.err + cost)
        for sig, (err, pseudo, begins, prefixes) in found.items():
            yield sig, err, pseudo, begins, prefixes

    def _candidates(self, way: _Way, src: int, graph: list[dict[tuple, Group]],
                    index: dict, e: dict) -> list[Group]:
        if not way.index:
            return list(graph[src].values())
        kleene = self.kleene[way.edge.dst]
        var = self.vars[way.edge.dst]
        b = {var: ((None, e) if way.edge.kind == "take" else (e,)) if kleene else e}
        try:
            key = tuple(new(b) for _, new in way.index)
        except (KeyError, TypeError, IndexError, ZeroDivisionError):
            return list(graph[src].values())  # let the predicates say what is wrong
        return index.get((way.edge.dst, way.edge.kind), {}).get(key, [])

    def _index(self, index: dict, q: int, group: Group) -> None:
        """File a new group under the keys of the ways that look it up."""
        for dst, kind in ((q + 1, "next"), (q, "take")):
            if dst >= len(self.ways) or kind not in self.ways[dst]:
                continue
            way = self.ways[dst][kind]
            if not way.index:
                continue
            b = dict(group.pseudo)
            v = self.vars[dst]
            if kind == "take":
                b[v] = b[v] + (None,)
            else:  # the new event's variable, as bound on entering (never read here)
                b[v] = (None,) if self.kleene[dst] else None
            if self.k and not all(old.pred.vars <= b.keys() for old, _ in way.index):
                # an element the equality reads is missing: it holds for every event
                index.setdefault((dst, kind, "*"), []).append(group)
                group.filed.append((index, (dst, kind, "*")))
                continue
            try:
                key = tuple(old(b) for old, _ in way.index)
            except (KeyError, TypeError, IndexError, ZeroDivisionError):
                continue  # the predicate fails (or raises) when checked: not found here
            entries = index.setdefault((dst, kind), {})
            entries.setdefault(key, []).append(group)
            group.filed.append((entries, key))

    def _project(self, q: int, b: dict) -> tuple[tuple, dict]:
        """The signature of a node at ``q`` with binding ``b``, and the pseudo-events
        (the attributes later predicates read) it stands for."""
        pseudo: dict[str, Any] = {}
        values: list = []
        for v, attrs, multi in self.need[q]:
            if v not in b:  # an element missing (approximate matching)
                values.append(_NOKEY)
                continue
            ev = b[v][-1] if multi else b[v]
            try:
                got = {a: ev[a] for a in attrs}
                vals = tuple(got.values())
            except KeyError:  # a missing attribute: its predicate says so when it runs
                got = {a: ev[a] for a in attrs if a in ev}
                vals = tuple([got.get(a, _NOKEY) for a in attrs])
            values.append(vals)
            pseudo[v] = (got,) if multi else got
        return tuple(values), pseudo

    def _check(self, preds: list[Pred], b: dict) -> bool:
        if self.k:  # a predicate that reads a missing element holds (approximate matching)
            preds = [p for p in preds if p.vars <= b.keys()]
        return check_predicates(preds, b, self.counters, self.stats)

    # ------------------------------------------------------------------ matches
    def _emit(self, q: int, e: dict, begins: bool, prefixes: list, out: list,
              newest_only: bool = False, missing: int = 0) -> None:
        """Every match that ``e`` at the last position completes: ``e`` alone if a match
        may start with it (``begins``), and the paths back from the prefixes
        (``newest_only``: the node of ``e`` itself, newest in its group)."""
        found = MatchSet(self, q, e, begins, prefixes, newest_only,
                         missing if self.k else None)
        if self.output == "sets":
            out.append(found)
            self.counters.outputs += 1  # a set: its matches are counted on demand
            return
        if self._counting:
            rec = match_record(self.plan, "events", {}, e["time"])  # COUNT(*): no paths
            n = self._count(found)
            if n:
                rec[self.plan.returns.count] = n
                out.append(rec)
                self.counters.outputs += n
            return
        for rec in self._records(found, self.output):
            out.append(rec)
            self.counters.outputs += 1

    def _records(self, found: MatchSet, output: str) -> Iterator[dict]:
        """The outputs of the matches of ``found``, one per path."""
        e, q, t = found.event, found.q, found.event["time"]
        var = self.vars[q]
        for path in self._paths(found.begins, found.prefixes, t, found.newest_only):
            bind: dict[str, Any] = {}
            for pos, ev in path:
                v = self.vars[pos]
                if self.kleene[pos]:
                    bind[v] = bind.get(v, ()) + (ev,)
                else:
                    bind[v] = ev
            if not found.newest_only:
                bind[var] = (e,) if self.kleene[q] else e
            rec = match_record(self.plan, output, bind, t)
            if found.missing is not None:
                rec["missing"] = found.missing
            yield rec

    def _count(self, found: MatchSet) -> int:
        """The number of paths of ``found`` without walking them: each node's count is
        the sum of its predecessor prefixes' counts, kept as running sums per group and
        filled in arrival order (a node none of whose paths starts in the window counts
        0), so each node is visited once."""
        t, tau = found.event["time"], self.plan.window
        sums: dict[int, list[int]] = {}  # id(group) -> running sums from its first node

        def prefix(g: Group, n: int) -> int:
            """The count of the nodes of ``g`` before absolute index ``n``."""
            run = sums.setdefault(id(g), [0])
            while g.off + len(run) - 1 < n:
                j = len(run) - 1
                c = 0
                if t - g.start[j] <= tau:
                    c = 1 if g.begins[j] and t - g.events[j]["time"] <= tau else 0
                    for h, m in g.preds[j]:
                        c += prefix(h, m)
                run.append(run[-1] + c)
            return run[max(0, n - g.off)]

        total = 1 if found.begins else 0
        for g, n in found.prefixes:
            total += prefix(g, n) - (prefix(g, n - 1) if found.newest_only else 0)
        return total

    def _paths(self, begins: bool, prefixes: list, t: Any, newest_only: bool
               ) -> Iterator[list[tuple[int, dict]]]:
        """The paths, first event first, that end in the prefixes (or start here, when
        ``begins``) and start within the window of ``t`` (``t − first.t ≤ WITHIN``, as
        the reference engine compares); iteratively (a Kleene path may be long)."""
        if begins:
            yield []
        tau = self.plan.window
        stack: list[tuple[Iterator, list]] = [
            (self._nodes(prefixes, t, tau, newest_only), [])]
        while stack:
            nodes, tail = stack[-1]
            node = next(nodes, None)
            if node is None:
                stack.pop()
                continue
            g, i = node
            j = i - g.off
            path = [(g.pos, g.events[j]), *tail]
            if g.begins[j] and t - g.events[j]["time"] <= tau:
                yield path
            if g.preds[j]:
                stack.append((self._nodes(g.preds[j], t, tau, False), path))

    @staticmethod
    def _nodes(prefixes, t: Any, tau: float, newest_only: bool
               ) -> Iterator[tuple[Group, int]]:
        """The nodes of the prefixes through which a path starts within ``tau`` of
        ``t``, newest first."""
        for g, n in prefixes:
            stop = n - 1 if newest_only else g.off
            for i in range(n - 1, stop - 1, -1):
                j = i - g.off
                if j < 0 or t - g.reach[j] > tau:
                    break
                if t - g.start[j] <= tau:
                    yield g, i

    # ------------------------------------------------------------------ expiry
    def _sweep(self, t: Any) -> None:
        """Drop the nodes through which no path starts after ``t − 2·WITHIN``: none of
        them is in a match to come, nor in a match set still to enumerate (a set is
        enumerated within one window of its event)."""
        tau = self.plan.window
        if tau == math.inf:
            self._next_sweep = math.inf
            return
        keep = 2 * tau
        for key, graph in list(self.graphs.items()):
            alive = False
            for groups in graph:
                for sig, g in list(groups.items()):
                    dead = 0
                    while dead < len(g.reach) and t - g.reach[dead] > keep:
                        dead += 1
                    if dead:
                        for column in (g.events, g.begins, g.preds, g.start, g.reach):
                            del column[:dead]
                        g.off += dead
                        self.nodes -= dead
                        self.counters.pm_dropped += dead
                    if not g.events:
                        del groups[sig]
                        for entries, k in g.filed:
                            entries[k].remove(g)
                            if not entries[k]:
                                del entries[k]
                    else:
                        alive = True
            if not alive:
                del self.graphs[key], self.indexes[key]
        self._next_sweep = t + tau


def _needs(plan: Plan) -> list[tuple[tuple[str, tuple[str, ...], bool], ...]]:
    """Per position q, the attributes (per variable bound at q or before, and whether it
    is a Kleene variable) that the predicates of the transitions after q read, and those
    of q's own ``take``."""
    n = len(plan.positions)
    at = {p.var: p.index for p in plan.positions}
    out = []
    for q in range(n):
        wanted: dict[str, dict[str, None]] = {}
        if plan.positions[q].kleene:  # its take reads the previous event, even if nothing
            wanted[plan.positions[q].var] = {}
        for e in plan.edges:
            later = e.dst > q or (e.kind == "take" and e.dst == q)
            if not later:
                continue
            for p in e.preds:
                for v, a in p.attrs:
                    if v in at and at[v] <= q and not (v == plan.positions[e.dst].var
                                                       and e.kind != "take"):
                        wanted.setdefault(v, {})[a] = None
        out.append(tuple((v, tuple(sorted(attrs)), plan.variables[v].multi)
                         for v, attrs in sorted(wanted.items())))
    return out


def _index_sides(plan: Plan, comp: ExprCompiler, edge: Edge) -> list[tuple[_Side, _Side]]:
    """The equality predicates of ``edge`` that a hash index can answer: one side reads
    only the new event, the other only what came before it (never vacuous on this
    edge)."""
    var = plan.positions[edge.dst].var
    out = []
    for p in edge.preds:
        node = p.node
        if not isinstance(node, ast.Compare) or node.op != "=" or p.lookups:
            continue
        if p.mode == "incremental":
            offsets = {o for _, o in p.irefs}
            if edge.kind != "take" and offsets != {p.anchor_offset}:
                continue  # b[i] with b[i+1] on entering b: nothing to relate yet
        sides = []
        for side in (node.left, node.right):
            c = comp.compile(side)
            new = all(r.var == var and (r.kind == "single" or r.offset == p.anchor_offset)
                      for r in c.refs)
            old = all(r.var != var or (r.kind == "i" and r.offset == p.anchor_offset - 1)
                      for r in c.refs)
            sides.append((c, new and c.refs, old))
        (lc, l_new, l_old), (rc, r_new, r_old) = sides
        if l_new and r_old:
            out.append((_Side(rc.fn, p), _Side(lc.fn, p)))
        elif r_new and l_old:
            out.append((_Side(lc.fn, p), _Side(rc.fn, p)))
    return out
