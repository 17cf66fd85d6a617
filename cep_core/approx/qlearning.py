"""Q-learning agents that explore beside RC-ACEP and write what they find into ℋ.

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016, §5, Algorithms 5 and 6, after
Russell and Norvig's Q-learning agent with an exploration function.

* Algorithm 5 (:func:`setup`): per automaton state σ, ``post(σ)`` (the states one
  forward transition away; Kleene self-loops are the back edges left out) and
  ``dist(σ)``, the fewest transitions to an accepting state. cep_core's automaton has a
  state per element, so every state is an L-state.
* A Q-learning state is (σ, err, remaining_w bucket, next letter), the letter being
  the event's type when a state of ``post(σ)`` has it and ``"others"`` otherwise. The
  actions are "advance to φ" (legal when φ has the letter's type and its transition's
  predicates hold), "skip to φ" (one more error, legal up to ``k`` and when φ does not
  have the letter's type: Algorithm 5, line 21) and "stay".
* Algorithm 6 (:meth:`QAgents.step`): a node that the seed starts becomes an agent
  (at most ``max_agents`` live); on each event of its partition an agent picks
  ``argmax_a f(Q[qs, a], n[qs, a])`` with ``f = ∞`` while ``n < 5`` and ``Q`` after
  (ties: advance, skip, stay, in that order); a move to a new state earns
  ``r = R / 2^dist(σ)``; the previous step's value is updated with
  ``Q ← Q + α(n)·(r + γ·max_a Q[qs, a] − Q)``, ``α(n) = 60 / (59 + n)``.
* An agent never branches; it dies when its window closes, and when it reaches an
  accepting state it reports its match. Its visits and trajectory go into ℋ's
  secondary buffer like RC-ACEP's own (§5: "the trajectory of an RL agent is also
  written in ℋ"), so new paths to matches reach ℋ when the buffers swap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from cep_core.plan import START, Plan, Pred

__all__ = ["setup", "QAgents", "learning_rate", "exploration", "STAY", "OTHERS"]

STAY = ("stay", None)
OTHERS = "others"
TRIES = 5  # f(Q, n) = ∞ while n < 5 (§5: "trying each action-state pair at least five times")


def learning_rate(n: int) -> float:
    """α(n) = 60 / (59 + n) (§5).

    >>> learning_rate(1)
    1.0
    """
    return 60.0 / (59.0 + n)


def exploration(q: float, n: int) -> float:
    """f(Q, n): ∞ for an action tried fewer than five times, Q after (§5)."""
    return math.inf if n < TRIES else q


def setup(plan: Plan) -> tuple[dict[int, list[int]], dict[int, float]]:
    """Algorithm 5, lines 1-12: ``post`` and ``dist`` of every state (``START`` too)."""
    post: dict[int, list[int]] = {}
    for e in plan.edges:
        if e.kind in ("begin", "next"):
            post.setdefault(e.src, [])
            if e.dst not in post[e.src]:
                post[e.src].append(e.dst)
    dist: dict[int, float] = {p.index: (0.0 if p.accepting else math.inf)
                              for p in plan.positions}
    dist[START] = math.inf
    changed = True
    while changed:  # (shortest paths over the forward DAG)
        changed = False
        for q, nxt in post.items():
            d = min((dist[r] + 1 for r in nxt), default=math.inf)
            if d < dist[q]:
                dist[q], changed = d, True
    return post, dist


@dataclass
class _Agent:
    state: int
    bind: dict
    err: int
    start: Any
    last: Any
    key: Any
    chain: list = field(default_factory=list)
    prev: tuple | None = None  # (qs', a', r') of Algorithm 6


class QAgents:
    """The Q-learning agents of one session (module doc). ``reward`` is R, ``gamma``
    the discount γ. Charged on the matcher's device: a Q lookup and update per step
    (the matcher's lookup and update costs), one unit per move, the writes to ℋ."""

    def __init__(self, plan: Plan, k: int, max_agents: int = 8, reward: float = 1.0,
                 gamma: float = 0.9):
        self.plan, self.k, self.max_agents = plan, k, max_agents
        self.reward, self.gamma = reward, gamma
        self.post, self.dist = setup(plan)
        self.edge: dict[tuple[int, int], list[Pred]] = {}
        for e in plan.edges:
            if e.kind in ("begin", "next"):
                self.edge[(e.src, e.dst)] = e.preds
        self.post_types = {q: {plan.positions[r].type for r in nxt}
                           for q, nxt in self.post.items()}
        self.letters = plan.types
        self.Q: dict[tuple, float] = {}
        self.n: dict[tuple, int] = {}
        self.agents: list[_Agent] = []
        self.matches = 0
        self.spawned = 0

    # ------------------------------------------------------------------ learning
    def qstate(self, a: _Agent, typ: str, t: Any, buckets: int, window: float) -> tuple:
        letter = typ if typ in self.post_types.get(a.state, ()) else OTHERS
        rem = window - (t - a.start)
        rw = min(buckets - 1, max(0, int(rem * buckets / window)))
        return (a.state, a.err, rw, letter)

    def legal(self, a: _Agent, e: dict) -> list[tuple]:
        """The legal actions of ``a`` on ``e``: advances, skips, stay."""
        typ, pos = e["type"], self.plan.positions
        adv, skip = [], []
        for r in self.post.get(a.state, ()):
            if pos[r].type == typ:
                nb = _bound(a.bind, pos[r], e)
                if _holds(self.edge[(a.state, r)], nb):
                    adv.append(("adv", r))
            elif a.err < self.k and _holds(self.edge[(a.state, r)], a.bind):
                skip.append(("skip", r))
        return [*adv, *skip, STAY]

    def choose(self, qs: tuple, actions: list[tuple]) -> tuple:
        """argmax_a f(Q[qs, a], n[qs, a]) (Algorithm 6, line 6; the first on ties)."""
        best, best_f = actions[0], -math.inf
        for act in actions:
            f = exploration(self.Q.get((qs, act), 0.0), self.n.get((qs, act), 0))
            if f > best_f:
                best, best_f = act, f
        return best

    def update(self, prev: tuple, future: float) -> None:
        """Algorithm 6, lines 12-13, for the previous step ``prev`` = (qs', a', r')."""
        qs, act, r = prev
        sa = (qs, act)
        n = self.n.get(sa, 0) + 1
        self.n[sa] = n
        q = self.Q.get(sa, 0.0)
        self.Q[sa] = q + learning_rate(n) * (r + self.gamma * future - q)

    def value(self, qs: tuple, actions: list[tuple]) -> float:
        return max(self.Q.get((qs, act), 0.0) for act in actions)

    # ------------------------------------------------------------------ per event
    def step(self, e: dict, key: Any, matcher: Any) -> None:
        """Algorithm 6 on one event for the agents of its partition, then new agents
        from the seed (``matcher``: a :class:`~cep_core.approx.rc_acep.BudgetedMatcher`,
        whose device and history the agents use)."""
        plan, t = self.plan, e["time"]
        if e["type"] not in self.letters:
            return  # agents act on matching letters only (Algorithm 6, line 1)
        vectors, hist, cost = matcher.vectors, matcher.history, matcher.cost
        window, buckets = vectors.window, vectors.buckets
        keep = []
        for a in self.agents:
            if t - a.start > window:  # its window closed: a last update, no future
                if a.prev is not None:
                    self.update(a.prev, 0.0)
                continue
            if a.key != key:
                keep.append(a)
                continue
            qs = self.qstate(a, e["type"], t, buckets, window)
            actions = self.legal(a, e)
            if a.prev is not None:
                self.update(a.prev, self.value(qs, actions))
            act = self.choose(qs, actions)
            matcher.charge(cost.lookup + cost.update)
            r = 0.0
            if act is not STAY:
                kind, dst = act
                if kind == "adv":
                    a.bind = _bound(a.bind, plan.positions[dst], e)
                    a.last = t
                else:
                    a.err += 1
                a.state = dst
                r = self.reward / 2 ** self.dist[dst]
                matcher.charge(1.0)
            vec = vectors.of_values(a.state, window - (t - a.start), a.err, t - a.last)
            hist.visit(vec)
            a.chain.append(vec)
            matcher.charge(cost.update)
            a.prev = (qs, act, r)
            if plan.positions[a.state].accepting and _holds(
                    plan.accept_preds.get(a.state, ()), a.bind):
                self.update(a.prev, 0.0)
                self._report(a, matcher)
                continue
            keep.append(a)
        self.agents = keep
        self._spawn(e, key, matcher)

    def _spawn(self, e: dict, key: Any, matcher: Any) -> None:
        if len(self.agents) >= self.max_agents:
            return
        pos, t = self.plan.positions, e["time"]
        for r in self.post.get(START, ()):
            if pos[r].type == e["type"]:
                bind = _bound({}, pos[r], e)
                if _holds(self.edge[(START, r)], bind):
                    a = _Agent(r, bind, 0, t, t, key)
                    vec = matcher.vectors.of_values(r, matcher.vectors.window, 0, 0)
                    matcher.history.visit(vec)
                    a.chain.append(vec)
                    self.agents.append(a)
                    self.spawned += 1
                    matcher.charge(1.0 + matcher.cost.update)
                    return

    def _report(self, a: _Agent, matcher: Any) -> None:
        """An agent's complete match: into ℋ (its trajectory, match point = its last
        event) and the matcher's findings."""
        from cep_core.approx.rc_acep import match_key

        chain = list(reversed(a.chain))
        matcher.history.match(chain, a.last, a.key)
        matcher.charge(matcher.cost.update * len(chain))
        rec = {v: [x["id"] for x in ev] if isinstance(ev, tuple) else ev["id"]
               for v, ev in a.bind.items()}
        m = match_key(rec)
        got = matcher.run_report.found.get(m)
        if got is None or a.err < got[1]:
            matcher.run_report.found[m] = (a.last, a.err)
        matcher.run_report.agent_matches += 1
        self.matches += 1


def _bound(bind: dict, pos: Any, e: dict) -> dict:
    nb = dict(bind)
    nb[pos.var] = nb.get(pos.var, ()) + (e,) if pos.multi else e
    return nb


def _holds(preds: Any, b: dict) -> bool:
    """The predicates whose variables are bound (an inserted element satisfies the
    others, as in ACEPMATCH)."""
    keys = b.keys()
    return all(p.test(b) for p in preds if p.vars <= keys)
