"""The set-ups of the Ch. 5 reproduction (``scripts/reproduce_ch5.py --setup``): what the
dissertation's text says (§5.6.1-5.6.2, Table 5.1, Listing 5.1) read literally, and the
``paper`` set-up, the source's as far as it is stated plus what the authors' released
implementation does where the text is silent.

A :class:`Setup` fixes the data (value range, IDs, event rate, stream lengths and
windows per query and selection policy), the remote keys, the cache, the engine
semantics (options of :class:`cep_core.remote.RemoteConfig`) and how the device's unit
cost is chosen. :data:`LITERAL` is the reading of ``experiments/ch5_data.py``;
:data:`PAPER` differs from it in the changes of :data:`CHANGES`, each of which can be
applied alone (:func:`with_changes`, for the ablation):

* ``blocking``: a partial match blocks for its own fetch and the waits of one event add
  up (``blocking="match"``), as the released code's matcher fetches inside each partial
  match's transition, where the literal reading sends one event's fetches together
  (Definition 2.10);
* ``bl1_cache``: BL1 keeps the last element it fetched (a one-element cache, as the
  released code's baseline), where the literal reading forgets it after the event;
* ``closed_loop``: a match's latency runs from the start of its last event's processing
  (the released code reads the next event when the previous one is done and stamps it
  then), not from its arrival (Eq. 2.4 with queueing);
* ``match_time``: a match's latency ends when its accepting step is taken, as the
  released code stamps it in the transition into the accepting state, not when the
  device has finished the whole event (``latency_to="match"``);
* ``unit_cost``: the device's cost per unit of work makes Hybrid's median latency of Q5
  over DS3 under non-greedy selection 10 µs, as in §5.6.2 (Figure 5.8a), where the
  literal reading makes a run with a local table busy 5 % of the time;
* ``keys``: remote elements are keyed by both values, ``REMOTE[x.v1, x.v2]`` (§5.6.1:
  "remote data elements are also referenced by v1 and v2"): 100 × 100 = 10,000 keys,
  where the literal reading keys them by one value of 1..100. The record of ``(x, y)``
  holds ``x``, so the predicates select as the listing's do;
* ``cache``: the cache holds 2,000 elements (20 % of the keys; §5.6.2: 10 % of the key
  range, 10,000 items) instead of 10;
* ``data``: windows of 4,000-5,000 events and an event rate of 1 per µs (the released
  generator stamps event ``k`` at ``k`` µs and the queries use ``WITHIN 4ms``), with IDs
  of 1..10 for the non-greedy queries as in the released generator (Table 5.1 says
  1..100, with which Q5 finds almost no match within 4,000 events);
* ``q5_key``: Q5 reads ``REMOTE[a.v1, ..]`` (compared with ``d.v1``), known when ``a``
  is bound and so prefetchable, as the released query compares ``a.v1`` with ``d.v1``;
  the listing's ``REMOTE[d.v1]`` is run beside it (query ``Q5L``);
* ``first_event``: under non-greedy selection the first event of the type that reads
  remote data decides, as in the released matcher, which under non-greedy selection
  takes a partial match out of its state at the first event of the next type and drops
  it when the remote predicate fails (so each partial match reads its element once);
  its remote predicate passes about half the time (``payload ≤ 5000`` over keys of
  1..10,000). Written in the query language: ``NEG`` of that type before the element
  (no event of the type between the previous element and it) and ``<=`` for ``=``
  (:func:`query_text`). Without it a partial match that fails the predicate tests the
  same element again at every later event of the type, and the cache answers it;
* ``state_order``: the partial matches of an ID take an event in the order of their
  states, earlier states first (``order="state"``), as the released matcher checks its
  transitions in the order of their source state; a match accepted at an event then
  waits for the blocking fetches of the partial matches that event extends at earlier
  states;
* ``last_event``: a match's latency counts only its last event's processing (up to its
  accepting step), not the waits of its earlier steps (``carry_waits=False``): the
  released code stamps the time an event is read and the time of the accepting
  transition, and a match's latency is the difference;
* ``q5_pattern``: non-greedy Q5 has the pattern of the query the released scripts run
  for it, ``SEQ(A a, B b, C c, D d, A e, B f, C g, D h) WHERE SAME[ID]`` with the
  remote predicate at ``d`` (its second half repeats the first, without the listing's
  ``a.v2=h.v2``): the D that completes a match is the ``d`` of the partial matches its
  own ``e`` (and any A of the ID before ``f``) started, so under blocking evaluation the
  match waits for their fetches. Greedy Q5 keeps the listing's pattern
  (skip-till-any-match over the released one makes more matches than the engine can
  hold);
* ``timer_slack`` (an assumption): a fetch takes U(60, 150) µs, not U(10, 100). The
  released code waits for a fetch by sleeping 10, 20, .., 100 µs (its scripts' ``-L
  10``), and on Linux a sleep that short lasts about the thread's timer slack longer
  (50 µs by default, prctl(2) ``PR_SET_TIMERSLACK``); if the source measured on such a
  system, its waits were about 50 µs longer than the fetch latency the text states. The
  source does not say, so this is a fit to the text's baseline medians (docs/
  remote_data.md, "The sleep").

What cannot be as stated, kept from the literal reading: values of 1..100, not
1..100,000 (with 100,000 the equality predicates of Listing 5.1 leave no match in a
stream a Python engine can run); greedy Q6's window of 200 events and greedy Q5's IDs of
1..100 (skip-till-any-match over 4,000 events of 10 IDs makes more partial matches than
the engine can hold).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from cep_core.remote import LatencyModel

__all__ = ["Setup", "LITERAL", "PAPER", "CHANGES", "SETUPS", "with_changes", "query_text",
           "record", "CONFIG_KEYS"]

#: (query, selection) pairs of §5.6.2
CONFIG_KEYS = (("Q5", "non-greedy"), ("Q5", "greedy"), ("Q6", "non-greedy"),
               ("Q6", "greedy"))

_Q5 = ("PATTERN SEQ(A a, B b, C c, {neg1}D d, B e, C f, A g, D h) "
       "WHERE SAME[ID] AND {remote} AND a.v2=h.v2 WITHIN {window}")
#: the released scripts' Q5 (module doc, ``q5_pattern``)
_Q5_RELEASED = ("PATTERN SEQ(A a, B b, C c, {neg1}D d, A e, B f, C g, D h) "
                "WHERE SAME[ID] AND {remote} WITHIN {window}")
_Q6 = ("PATTERN SEQ(A a, (SEQ(B b, {neg1}C d, D f) OR SEQ({neg2}C c, B e))) "
       "WHERE a.v1=b.v1 AND a.v2=e.v1 AND d.v1{op}REMOTE[{k1}] AND c.v2{op}REMOTE[{k2}] "
       "WITHIN {window}")


@dataclass(frozen=True)
class Setup:
    """One set-up of the reproduction (module doc). Windows and stream lengths are in
    events per (query, selection); ``events`` gives (quick, full) lengths; ``ids`` the
    ID range per (query, selection); ``rate`` [events per µs]; ``key_args`` 1 or 2
    (``REMOTE[x.v1]`` or ``REMOTE[x.v1, x.v2]``); ``q5_key`` ``"d"`` (the listing) or
    ``"a"``; ``capacity`` [elements]; ``options`` of RemoteConfig; ``cost``
    ``("utilisation", u)`` (a run with a local table busy ``u`` of the time, per query
    and selection) or ``("hybrid_p50", µs)`` (one unit cost for all, Hybrid's median on
    Q5 over DS3, non-greedy, cost-based cache); ``first_event`` the released matcher's
    non-greedy selection; ``q5_pattern`` ``"listing"`` or ``"released"`` (non-greedy Q5
    as the released scripts run it; module doc)."""

    name: str
    windows: dict
    events: dict
    ids: dict
    rate: float
    key_args: int
    q5_key: str
    capacity: int
    options: dict = field(default_factory=dict)
    cost: tuple = ("utilisation", 0.05)
    values: int = 100
    latency: LatencyModel = LatencyModel("uniform", low=10.0, high=100.0)
    first_event: bool = False
    q5_pattern: str = "listing"

    def queries(self, selection: str = "greedy") -> dict[str, str]:
        """The query texts by name (``Q5``, ``Q6``, and with ``q5_key="a"`` the
        listing's ``Q5L`` beside them) under ``selection`` (``"greedy"`` or
        ``"non-greedy"``; module doc, ``first_event``), a ``{window}`` left to fill."""
        first = self.first_event and selection == "non-greedy"
        pattern = self.q5_pattern if selection == "non-greedy" else "listing"
        out = {"Q5": query_text("Q5", self.key_args, self.q5_key, first, pattern),
               "Q6": query_text("Q6", self.key_args, self.q5_key, first)}
        if self.q5_key == "a":
            out["Q5L"] = query_text("Q5", self.key_args, "d", first)
        return out


def query_text(query: str, key_args: int, q5_key: str, first_event: bool = False,
               pattern: str = "listing") -> str:
    """Q5 or Q6 of Listing 5.1 with remote keys of one value or both, Q5's read at
    ``a`` or ``d``, with ``first_event`` the first event of the type that reads remote
    data deciding, Q5's pattern the listing's or the released scripts' (module doc),
    ``{window}`` left to fill.

    >>> query_text("Q5", 2, "a").split("AND")[1].strip()
    'd.v1=REMOTE[a.v1, a.v2]'
    >>> text = query_text("Q5", 2, "a", first_event=True)
    >>> text.split("AND")[1].strip(), "C c, NEG D n1, D d" in text
    ('d.v1<=REMOTE[a.v1, a.v2]', True)
    >>> query_text("Q5", 2, "a", pattern="released").split("WHERE")[0]
    'PATTERN SEQ(A a, B b, C c, D d, A e, B f, C g, D h) '
    """
    def key(var: str, first: str, second: str) -> str:
        return f"{var}.{first}" if key_args == 1 else f"{var}.{first}, {var}.{second}"
    op = "<=" if first_event else "="
    neg = {"Q5": ("NEG D n1, ", ""), "Q6": ("NEG C n1, ", "NEG C n2, ")}[query]
    q5 = _Q5_RELEASED if pattern == "released" else _Q5
    text = (q5 if query == "Q5" else _Q6).replace("{op}", op)
    if first_event:
        text = text.replace("{neg1}", neg[0]).replace("{neg2}", neg[1])
    else:
        text = text.replace("{neg1}", "").replace("{neg2}", "")
    if query == "Q5":
        remote = (f"a.v1{op}REMOTE[{key('d', 'v1', 'v2')}]" if q5_key == "d"
                  else f"d.v1{op}REMOTE[{key('a', 'v1', 'v2')}]")
        return text.replace("{remote}", remote)
    return text.replace("{k1}", key("a", "v1", "v2")).replace("{k2}", key("a", "v2", "v1"))


def record(*key: Any) -> Any:
    """The remote record of a key: its first value (module doc, ``keys``).

    >>> record(7), record(7, 3)
    (7, 7)
    """
    return key[0]


LITERAL = Setup(
    name="literal",
    windows={("Q5", "non-greedy"): 20_000, ("Q5", "greedy"): 5_000,
             ("Q6", "non-greedy"): 500, ("Q6", "greedy"): 150},
    events={("Q5", "non-greedy"): (15_000, 40_000), ("Q5", "greedy"): (5_000, 8_000),
            ("Q6", "non-greedy"): (3_000, 6_000), ("Q6", "greedy"): (3_000, 8_000)},
    ids=dict.fromkeys(CONFIG_KEYS, 100), rate=0.01, key_args=1, q5_key="d", capacity=10)

#: each change of the paper set-up: the fields it sets (module doc)
CHANGES: dict[str, dict[str, Any]] = {
    "blocking": {"options": {"blocking": "match"}},
    "bl1_cache": {"options": {"bl1_capacity": 1}},
    "closed_loop": {"options": {"latency_from": "start"}},
    "match_time": {"options": {"latency_to": "match"}},
    "unit_cost": {"cost": ("hybrid_p50", 10.0)},
    "keys": {"key_args": 2},
    "cache": {"capacity": 2_000},
    "data": {"windows": {("Q5", "non-greedy"): 4_000, ("Q5", "greedy"): 5_000,
                         ("Q6", "non-greedy"): 4_000, ("Q6", "greedy"): 200},
             "events": {("Q5", "non-greedy"): (6_000, 24_000),
                        ("Q5", "greedy"): (6_000, 20_000),
                        ("Q6", "non-greedy"): (5_000, 20_000),
                        ("Q6", "greedy"): (3_000, 8_000)},
             "ids": {("Q5", "non-greedy"): 10, ("Q5", "greedy"): 100,
                     ("Q6", "non-greedy"): 10, ("Q6", "greedy"): 100},
             "rate": 1.0},
    "q5_key": {"q5_key": "a"},
    "first_event": {"first_event": True},
    "state_order": {"options": {"order": "state"}},
    "last_event": {"options": {"carry_waits": False}},
    "q5_pattern": {"q5_pattern": "released"},
    "timer_slack": {"latency": LatencyModel("uniform", low=60.0, high=150.0)},
}


def with_changes(base: Setup, names: list[str] | tuple[str, ...], name: str) -> Setup:
    """``base`` with the changes ``names`` of :data:`CHANGES` applied (options merged)."""
    fields: dict[str, Any] = {"name": name, "options": dict(base.options)}
    for n in names:
        for k, v in CHANGES[n].items():
            if k == "options":
                fields["options"].update(v)
            else:
                fields[k] = v
    return replace(base, **fields)


PAPER = with_changes(LITERAL, list(CHANGES), "paper")
SETUPS = {"literal": LITERAL, "paper": PAPER}
