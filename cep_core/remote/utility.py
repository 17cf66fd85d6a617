"""The utility of remote data elements and the lazy-evaluation reach (dissertation §5.3,
§5.4.2; Alg. 2 and 4).

Statistics are kept per time slice (``τ/m``, §5.3.2) and read over the last ``m``
slices (a window ``τ``):

* ``tran_key[j][d]``: how often a PM of category (automaton state) ``j`` needed ``d``;
  ``tran_cat[j]``: PMs of category ``j`` created (Alg. 2, lines 3-4);
* ``#P^j``: live PMs of category ``j`` at each slice end, averaged (line 9);
* the event rate per type, per partition (the λ of Alg. 3 and 4).

Utility (Eq. 5.1-5.4) of element ``d`` with weight ``ω``::

    UU(d)  = ℓ_remote(d) · |{live p : d ∈ ρ*(D(p))}|                         (5.1)
    FÛ(d)  = ℓ_remote(d) · Σ_j Σ_{d': d ∈ ρ*(d')} #P^j · Pr(j, d')            (5.4)
    U(d)   = ω · UU(d) + (1 − ω) · FÛ(d)                                      (5.3)

with ``Pr(j, d) = tran_key[j][d] / tran_cat[j]`` (Alg. 2, line 8). Choice (the spec's
reading): FÛ is weighted by ``ℓ_remote`` like UU and without Eq. 5.4's factor
``(k' − k)``, so both terms count latency-weighted PMs at one time and share a scale.
UU counts the PMs whose next step reads an element known from their bindings
(:mod:`cep_core.remote.needs`): it is recounted from the live PMs at each slice end and
incremented as PMs are created in between (Alg. 2, line 2; the decrements of line 6
wait for the next recount). An element read with a key of the incoming event is known
to no PM before the event, so only FÛ speaks for it.

Lazy-evaluation reach (Alg. 4, Eq. 5.6): for a category ``j`` that needs remote data,
with ``λ_i`` the rate of the events that build PMs of category ``i``::

    E(j, m)     = 1 / Σ_{j < i ≤ m} λ_i
    Δ⁻ℓ_remote  = min(E(j, m), ℓ_remote)
    Δ⁺ℓ_match   = ℓ_pm · Π_{j ≤ i < m} (#P^i · λ_{i+1} · E(j, m))       (Alg. 4, l. 9)

Choices: the product runs from ``j`` itself, as in Alg. 4 (line 9: "1 ≤ i ≤ m"), not
over the intermediate categories only, as Eq. 5.6 writes it: the first factor is the
fan-out of the postponement itself (every PM of ``j`` now takes the event its remote
predicate would have refused), without which postponing one state ahead would always
look free. λ and #P are per partition (``SAME[..]``), since an event meets only the PMs
of its partition. ``succ(j)`` holds ``m`` where the gain exceeds the cost; a PM
postponed at ``j`` may advance through the consecutive states ``j+1, j+2, ..`` that are
in ``succ(j)`` (a PM cannot skip a state); accepting states are never in it (a match is
never emitted with a predicate unevaluated).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable

__all__ = ["UtilityModel", "lazy_reach"]


class UtilityModel:
    """Slice statistics and utilities (module doc). ``slices``: m, the slices of a
    window kept; ``mean_latency``: the expected ℓ_remote of each look-up name, until
    latencies are observed (:meth:`observed`; ℓ_remote(d) is then their mean)."""

    def __init__(self, slices: int, mean_latency: dict[str, float]):
        self.m = slices
        self.mean_latency = mean_latency
        self.ell_sum, self.ell_n = 0.0, 0
        self.tran_key: deque[dict[int, Counter]] = deque(maxlen=slices)
        self.tran_cat: deque[Counter] = deque(maxlen=slices)
        self.live: deque[Counter] = deque(maxlen=slices)
        self.rates: dict[str, float] = {}
        self.partitions = 1
        self.urgent: Counter = Counter()
        self.future: dict[Hashable, float] = {}
        self._open()

    def _open(self) -> None:
        self.cur_key: dict[int, Counter] = {}
        self.cur_cat: Counter = Counter()
        self.cur_types: Counter = Counter()
        self.cur_keys: set = set()

    # -------------------------------------------------------------- online counts
    def needed(self, category: int, d: Hashable) -> None:
        c = self.cur_key.get(category)
        if c is None:
            c = self.cur_key[category] = Counter()
        c[d] += 1

    def created(self, category: int) -> None:
        self.cur_cat[category] += 1

    def observed(self, ell: float) -> None:
        """A fetch drew the latency ``ell``."""
        self.ell_sum += ell
        self.ell_n += 1

    def latency(self, d: tuple) -> float:
        """ℓ_remote(d): the mean latency observed, or the expected one of ``d``'s name."""
        return self.ell_sum / self.ell_n if self.ell_n else self.mean_latency[d[0]]

    def event(self, typ: str, partition: Hashable) -> None:
        self.cur_types[typ] += 1
        self.cur_keys.add(partition)

    # -------------------------------------------------------------- per slice
    def close_slice(self, length: float, live_per_state: Counter,
                    urgent_needs: Iterable[Hashable],
                    ancestors: Callable[[Hashable], list]) -> None:
        """``live_per_state``: PMs per category at the slice end; ``urgent_needs``: the
        element each live PM with a known-key need reads next; ``ancestors(d)``: ρ*(d)
        without d."""
        self.tran_key.append(self.cur_key)
        self.tran_cat.append(self.cur_cat)
        self.live.append(live_per_state)
        parts = self.partitions = max(1, len(self.cur_keys))
        if length > 0:
            self.rates = {t: n / length / parts for t, n in self.cur_types.items()}
        self.urgent = Counter()
        for d in urgent_needs:
            self.urgent[d] += 1
            for a in ancestors(d):
                self.urgent[a] += 1
        cat: Counter = Counter()
        for c in self.tran_cat:
            cat.update(c)
        future: Counter = Counter()
        avg = self.mean_live()
        for slice_keys in self.tran_key:
            for j, keys in slice_keys.items():
                if not cat[j]:
                    continue
                w = avg.get(j, 0.0) / cat[j]
                for d, n in keys.items():
                    future[d] += w * n
                    for a in ancestors(d):
                        future[a] += w * n
        self.future = future
        self._open()

    def mean_live(self) -> dict[int, float]:
        """#P^j: live PMs per category, averaged over the window's slice ends."""
        tot: Counter = Counter()
        for c in self.live:
            tot.update(c)
        n = max(1, len(self.live))
        return {j: v / n for j, v in tot.items()}

    def utility(self, d: Hashable, omega: float) -> float:
        """U(d) of Eq. 5.3 with weight ``omega``."""
        ell = self.latency(d)
        return ell * (omega * self.urgent.get(d, 0) + (1 - omega) * self.future.get(d, 0.0))

    def ranked(self, omega: float) -> list[tuple[float, Hashable]]:
        """Elements of the window by utility, highest first; ties in a fixed order (the
        future utilities' elements as the last slice counted them, then the urgent
        ones), not a set's, which string hashing would make vary by process."""
        keys = dict.fromkeys([*self.future, *self.urgent])
        return sorted(((self.utility(d, omega), d) for d in keys),
                      key=lambda x: -x[0])


def lazy_reach(j: int, chain: list[int], rates: list[float], live: dict[int, float],
               ell_remote: float, ell_pm: float, accepting: set[int]) -> frozenset[int]:
    """The states a PM postponed at ``j`` may advance through (module doc). ``chain``:
    the states after ``j`` in order, ``rates[i]``: λ of ``chain[i]`` [1/time unit];
    ``live``: #P^i per partition; ``ell_remote``, ``ell_pm`` [time units].

    >>> sorted(lazy_reach(0, [1, 2, 3], [0.01, 0.01, 0.01], {0: 1.0, 1: 1.0, 2: 1.0},
    ...                   50.0, 1.0, accepting={3}))
    [1, 2]
    >>> sorted(lazy_reach(0, [1, 2, 3], [0.01, 0.01, 0.01], {0: 80.0, 1: 1.0, 2: 1.0},
    ...                   50.0, 1.0, accepting={3}))
    []
    """
    reach: set[int] = set()
    lam = 0.0
    steps = [j] + chain
    for i, m in enumerate(chain):
        if m in accepting:
            break
        lam += rates[i]
        e = 1.0 / lam if lam > 0 else float("inf")
        gain = min(e, ell_remote)
        cost = ell_pm
        for r in range(i + 1):  # categories j, chain[0], .., the one before m
            cost *= live.get(steps[r], 0.0) * rates[r] * e
        if gain > cost:
            reach.add(m)
        else:
            break
    return frozenset(reach)
