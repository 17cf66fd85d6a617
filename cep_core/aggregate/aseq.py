"""A-Seq: aggregation over sequence patterns without building matches.

Source: Qi, Cao, Ray, Rundensteiner, "Complex Event Analytics: Online Aggregation of
Stream Sequence Patterns", SIGMOD 2014 (the A-Seq paper); where its text is garbled or
unclear, the readings of docs/decisions.md, "A-Seq: repeated event types", "A-Seq: window
expiry", "A-Seq: negation" and "A-Seq: SUM, AVG, MIN and MAX".

Prefix counters (Lemma 1-2, Eq. 4). For ``SEQ(E1..En)`` keep ``cnt[m]``, the number of
matches of the prefix ``(E1..Em)``. An event accepted at position ``m`` extends every
prefix match of length ``m-1``: ``cnt[m] += cnt[m-1]``. All positions an event is
accepted at read the counts from *before* the event (the same as updating positions in
descending ``m``), so with a repeated type (``SEQ(A, A, B)``) an event never pairs with
itself.

* **DPC** (no window, §3.1, Fig. 3): one counter vector per partition with
  ``cnt[0] = 1``, so a START adds one to ``cnt[1]``; O(positions) per event.
* **SEM** (window, §3.2, Fig. 5, Lemma 3-4): one vector per START event ``s``, live while
  ``exp = s.time + w >= now``. Definition (§2.1; the dissertation's Definition 2.7 and
  docs/decisions.md, "The window bound is inclusive"): a match spans
  ``last.time - first.time <= w``, so a vector is live at time ``t`` iff
  ``exp >= t`` (the paper writes ``exp > t``; its pseudocode also has the test reversed).
  The vectors are numpy arrays: for a run of events, every live vector and every START of
  the run is one column of a band ``(offset, node, vector)`` and the update runs once per
  offset over all vectors at once.
* **Negation** ``!Ei`` (§3.3, Lemma 5-6, the recounting rule): an event of the negated
  element resets the count of the prefix ending just before it, ``cnt[i-1] = 0`` (old
  prefix matches would have the negated event between them and their next element).
  The reset applies to prefix matches formed *before* the event; matches that end at the
  event itself survive (``SEQ(A, !A, B)`` counts pairs with no A in between).
* **Local predicates** filter events before the counters; **equivalence** (``SAME``,
  ``a.ID = b.ID``) hashes one prefix-counter state per value (HPC, §3.4, Fig. 8);
  ``GROUP BY`` reports per value instead of summing over partitions.
* **SUM / AVG / MIN / MAX** (§5). The paper's SUM formula is garbled; per prefix level
  keep ``S[m]``, the sum over prefix matches of the aggregated attribute (of position
  ``p``): ``S[m] += S[m-1] + cnt[m-1]*v`` when ``m = p`` (``v`` the event's value), else
  ``S[m] += S[m-1]``; AVG = SUM / COUNT. MAX: ``M[m] = max(M[m], v)`` when ``m = p``,
  ``M[m] = max(M[m], M[m-1])`` when ``m > p``, both only if ``cnt[m-1] > 0``; a negation
  reset clears ``S`` and ``M`` with ``cnt``. MIN is MAX of ``-v``.
* **PreTree** (§4.1, Fig. 9): queries sharing a START share one vector per START; a
  prefix ``(E1, .., Em)`` with the same negations after each position is one node of a
  tree, updated once per event for all queries through it.

Output semantics (the paper's, §2.1 "sliding window" and Fig. 5 step 3): at every
trigger event ``j`` (accepted at a query's last position) the query emits the aggregate
over all matches that end at or before ``j`` in stream order and lie in the window that
ends at ``j``: ``first.time >= j.time - w`` (Lemma 4: the sum over live START vectors).
Without a window it is the running aggregate of every match so far (DPC). Matches are
all combinations (skip-till-any-match); stream order decides "before" when timestamps tie.
With ``same`` but no ``GROUP BY`` the output sums over all partitions (§3.4); with
``GROUP BY`` it covers the trigger's group. COUNT of nothing is 0; SUM, AVG, MIN and MAX
of nothing are ``None`` (SQL). Counts are exact integers (int64, Python ints beyond);
sums are float64.

Input: a list of event dicts or a pandas DataFrame (``type``, ``time``, attributes), in
non-decreasing time. Output: one event per trigger, ``{type, time, trigger_id, GROUP BY
attributes, aggregates}`` (``feed``), or arrays (``feed_columns``).

Counters (:class:`~cep_core.counters.Counters`): ``pm_created`` START vectors (DPC: START
events), ``pm_extended`` prefix-counter updates (one per live vector and accepting node
per event; the PreTree saves these), ``pm_dropped`` expired vectors, ``predicates``
local-predicate evaluations, ``outputs`` emitted results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from cep_core.aggregate.engine import SeqEngine, SeqResult
from cep_core.aggregate.layout import EventBatch, QueryPlan
from cep_core.aggregate.seqquery import SeqQuery
from cep_core.counters import Counters
from cep_core.engine.protocol import EngineBase
from cep_core.events import unique_names

__all__ = ["SeqAggregator", "PreTree", "SeqResult"]


# --------------------------------------------------------------------------- public
def _dicts(eng: SeqEngine, p: QueryPlan, b: EventBatch, res: SeqResult) -> list[dict]:
    """Output events: ``{type, time, trigger_id (when events have ids), GROUP BY
    attributes.., aggregates..}``, one per trigger."""
    n = res.index.size
    keys = ["type", "time"]
    cols: list[Iterable] = [repeat(p.query.output_type, n), b.column("time", res.index)]
    if b.has("id"):
        keys.append("trigger_id")
        cols.append(b.column("id", res.index, required=False))
    if res.group is not None:
        keys += eng.group_attrs
        cols += list(zip(*res.group, strict=True)) if n else [[]] * len(eng.group_attrs)
    keys = unique_names(keys + list(res.values))         # an aggregate named "time" -> time_2
    cols += [v.tolist() for v in res.values.values()]
    return [dict(zip(keys, row, strict=False)) for row in zip(*cols, strict=False)]


class SeqAggregator(EngineBase):
    """A-Seq for one :class:`~cep_core.aggregate.seqquery.SeqQuery` (see the module
    docstring for the semantics). ``feed`` is incremental; ``run`` starts afresh."""

    name = "aseq"

    def __init__(self, query: SeqQuery, params: Mapping | None = None,
                 lookups: Mapping | None = None):
        self.query = query
        self._eng = SeqEngine([query], params, lookups)

    @property
    def counters(self) -> Counters:
        return self._eng.counters

    def reset(self) -> None:
        """Forget the stream (the counters keep counting)."""
        self._eng.reset()

    def feed_columns(self, events: Any) -> SeqResult:
        """The outputs of the next events (list of dicts or DataFrame), as arrays."""
        return self._eng.feed(events)[2][0]

    def feed_batch(self, events: Any) -> list[dict]:
        """The output events ``{type, time, trigger_id, group attrs.., aggregates..}``
        of the next events, one per trigger (:meth:`feed`)."""
        b, _, res = self._eng.feed(events)
        return _dicts(self._eng, self._eng.plans[0], b, res[0])

    def run(self, events: Any) -> list[dict]:
        """All outputs of a whole stream, from a fresh state."""
        self.reset()
        return self.feed(events)

    def explain(self) -> str:
        return _explain(self._eng)


class PreTree(EngineBase):
    """Several A-Seq queries sharing prefix counters (PreTree, §4.1): queries with the
    same START share one vector per START, and prefixes they have in common are updated
    once. Outputs are the same as evaluating each query alone; ``counters.pm_extended``
    counts the shared updates once. An :class:`~cep_core.engine.protocol.Engine`:
    ``feed`` gives the outputs of all the queries in trigger order, each naming its
    ``query``; :meth:`feed_by_query` and :meth:`run` give them per query."""

    name = "pretree"

    def __init__(self, queries: Sequence[SeqQuery], params: Mapping | None = None,
                 lookups: Mapping | None = None):
        self.queries = list(queries)
        self._eng = SeqEngine(self.queries, params, lookups)

    @property
    def counters(self) -> Counters:
        return self._eng.counters

    def reset(self) -> None:
        self._eng.reset()

    def feed_by_query(self, events: Any) -> dict[str, list[dict]]:
        """Per query name, the output events of the next events."""
        b, _, res = self._eng.feed(events)
        return {p.query.name: _dicts(self._eng, p, b, r) for p, r in
                zip(self._eng.plans, res, strict=True)}

    def feed_batch(self, events: Any) -> list[dict]:
        """The output events of the next events, each with its ``query``, in the order of
        their triggers (queries in their order at one trigger)."""
        b, _, res = self._eng.feed(events)
        tagged = [(int(i), q, {"query": p.query.name, **rec})
                  for q, (p, r) in enumerate(zip(self._eng.plans, res, strict=True))
                  for i, rec in zip(r.index, _dicts(self._eng, p, b, r), strict=True)]
        return [rec for _, _, rec in sorted(tagged, key=lambda x: x[:2])]

    def run(self, events: Any) -> dict[str, list[dict]]:
        """Per query name, the outputs of a whole stream, from a fresh state."""
        self.reset()
        return self.feed_by_query(events)

    def explain(self) -> str:
        return _explain(self._eng)


def _explain(eng: SeqEngine) -> str:
    lines = [f"A-Seq ({'SEM, window ' + str(eng.w) if eng.w is not None else 'DPC, no window'})"]
    if eng.key_attrs:
        how = ("outputs summed over partitions" if eng.combine
               else f"outputs per {', '.join(eng.group_attrs)}")
        lines.append(f"  HPC partitions by {', '.join(eng.key_attrs)}; {how}")
    for ti, tr in enumerate(eng.trees):
        lines.append(f"  prefix tree {ti}: {tr.V} nodes"
                     + (" (chain)" if tr.chain else " (shared prefixes)"))
        for v in range(tr.V):
            typ, pred = eng.tests[tr.acc_test[v]]
            negs = [eng.tests[j][0] for j in tr.neg_tests[v]]
            lines.append(f"    node {v + 1}: depth {tr.depth[v]} {typ}"
                         + (" [pred]" if pred is not None else "")
                         + f" <- node {tr.parent[v]}"
                         + (f"; reset by {', '.join(negs)}" if negs else ""))
    for p in eng.plans:
        outs = ", ".join(f"{lab}={f}" for lab, f, _ in p.outs)
        lines.append(f"  {p.query.name}: {p.query.text()} -> leaf node {p.leaf} of tree "
                     f"{p.tree}: {outs}")
    return "\n".join(lines)
