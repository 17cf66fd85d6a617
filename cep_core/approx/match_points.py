"""Every match point of unbudgeted ACEPMATCH, at any window, from proxy matches.

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016: §3.2, Definition 3 (the *match
point* of a match trajectory: the time of its last event) and §3.3, Theorem 2 (proxy
matches: per partition, state and error level only the node with the latest start is
kept, and every event that completes a match in the full algorithm completes one with
proxies too, with the same least error; :mod:`cep_core.approx.matchnodes`).

Unbudgeted ACEPMATCH under skip-till-any-match keeps a node per partial match, so its
live nodes grow with the window (about eightfold per doubling on the reproduction's
letter stream) and a window of tens of thousands of events is out of its reach. With
proxies a state holds at most ``k + 1`` nodes per partition, so :func:`match_points`
gives the same set of match points, and each one's least error, at any window; it is
the ground truth of the fractions of match points (and of bundles, which follow from
the points) where the node-per-partial-match run cannot finish. It does not give the
matches themselves (distinct bindings): proxies drop most of them.

The argument needs a node's future to depend on its state, error and start only, so
it holds for predicates that read one element each (``proxy_problem``); a query with a
predicate relating two elements is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cep_core.approx.history import Bundles
from cep_core.approx.matchnodes import MatchNodeEngine
from cep_core.plan import Plan

__all__ = ["MatchPoints", "match_points"]


@dataclass
class MatchPoints:
    """The match points of a stream (module doc): ``points`` {time: (partition, least
    error)} in stream order, the events read and the peak of live (proxy) match nodes."""

    points: dict[Any, tuple[Any, int]] = field(default_factory=dict)
    events: int = 0
    peak_nodes: int = 0

    def bundles(self, window: float) -> dict[Any, int]:
        """The match bundle (Definition 3, per partition) of every point: {time: id}.

        >>> mp = MatchPoints({1: ((), 0), 4: ((), 1), 20: ((), 0)})
        >>> mp.bundles(window=5)
        {1: 0, 4: 0, 20: 1}
        """
        chain = Bundles(window)
        return {t: chain.of(t, key) for t, (key, _) in self.points.items()}


def match_points(plan: Plan, k: int, events: Iterable[dict]) -> MatchPoints:
    """The match points of unbudgeted ACEPMATCH with up to ``k`` missing elements over
    ``events`` (skip-till-any-match), each with its partition and least error, from a
    run with proxy matches (Theorem 2; module doc).

    >>> import cep_core
    >>> plan = cep_core.compile("PATTERN SEQ(A a, B b, C c) WITHIN 4").plan
    >>> stream = [{"type": x, "time": i, "id": i} for i, x in enumerate("ABACBC")]
    >>> match_points(plan, 1, stream).points  # A then B at 1 (C missing), ... C at 5
    {1: ((), 1), 3: ((), 0), 4: ((), 1), 5: ((), 0)}
    """
    eng = MatchNodeEngine(plan, k, proxy=True)
    found = MatchPoints()
    out: list[dict] = []
    for e in events:
        found.events += 1
        eng.process(e, out)
        if out:
            found.points[e["time"]] = (plan.key_of(e), min(m["missing"] for m in out))
            out.clear()
    found.peak_nodes = eng.peak_nodes
    return found
