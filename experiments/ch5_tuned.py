"""The remote-data engine with the knobs of the dissertation's sensitivity analysis
(§5.6.3): noise injected into the utility model's estimates (Figure 5.13a) and the
categories of PFetch and LzEval fixed by hand instead of chosen online (Figure 5.15).

These are instruments of the experiments, not capabilities of the engine, so they live
here: :class:`TunedEngine` is cep_core's :class:`~cep_core.remote.RemoteEngine` with
three of its decisions overridden as :class:`Tuning` says, run in an ordinary
:class:`cep_core.query.Session` (:func:`tuned_session`).

**Noise** (§5.6.3, "a noisy estimation means that an expected partial match will not
actually materialise"): at every slice end (§5.3.2) each estimate of the utility model
is, with probability ``noise``, replaced by a wrong one (:class:`NoisyUtility`):

* an element's urgent and future utility (Eq. 5.1, 5.4) is moved to an element drawn
  uniformly from ``domain`` (the model expects partial matches to need it, which do not
  materialise; those that need the true element go unseen);
* a category's live partial matches ``#P^j`` (Alg. 2, line 9; read by the lazy-evaluation
  reach of Alg. 4) is replaced by that of a category drawn uniformly from those counted.

**Fixed categories.** ``lookahead = k``: every known-key need of category ``m`` is
prefetched when a partial match enters the ``k``-th category before ``m`` (``k = 0``: at
``m`` itself, with the estimated-arrival timing; the candidates of
:mod:`cep_core.remote.needs`, closest first) instead of Alg. 3's choice from the cache-hit
matrix. ``lazy_states = k``: ``succ(j)`` is the ``k`` states after each remote
transition (never an accepting one) instead of Alg. 4's cost-gain test.

>>> u = NoisyUtility(4, {"REMOTE": 10.0}, noise=1.0, domain=[("REMOTE", (9,))], seed=1)
>>> u.close_slice(1.0, {0: 2}, [("REMOTE", (1,))], lambda d: [])
>>> dict(u.urgent)
{('REMOTE', (9,)): 1.0}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from cep_core.engine.matching import EVERY_EVENT
from cep_core.query import CompiledQuery, Session
from cep_core.remote import RemoteConfig, RemoteEngine
from cep_core.remote.engine import chain_after
from cep_core.remote.utility import UtilityModel

__all__ = ["Tuning", "NoisyUtility", "TunedEngine", "tuned_session"]


@dataclass(frozen=True)
class Tuning:
    """What :class:`TunedEngine` overrides (module doc): ``noise`` ∈ [0, 1], the share of
    estimates replaced, ``domain`` the elements a replaced utility may point at, ``seed``
    of the replacements; ``lookahead`` and ``lazy_states`` (None: chosen online)."""

    noise: float = 0.0
    domain: tuple = ()
    seed: int = 0
    lookahead: int | None = None
    lazy_states: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.noise <= 1:
            raise ValueError(f"noise must be in [0, 1], not {self.noise!r}")
        if self.noise and not self.domain:
            raise ValueError("noise needs a domain of elements to point at")
        for name in ("lookahead", "lazy_states"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise ValueError(f"{name} must be ≥ 0 or None, not {v!r}")


class NoisyUtility(UtilityModel):
    """The utility model with a share ``noise`` of its estimates replaced at each slice
    end (module doc); the draws come from a generator seeded with ``seed``, in slice
    order, so a run is deterministic."""

    def __init__(self, slices: int, mean_latency: dict[str, float], noise: float,
                 domain: Sequence[Hashable], seed: int = 0):
        super().__init__(slices, mean_latency)
        self.noise = noise
        self.domain = list(domain)
        self.rng = np.random.default_rng(seed)
        self.noisy_live: dict[int, float] | None = None

    def _moved(self, estimates: dict) -> Counter:
        """``estimates`` with a share ``noise`` of them moved to random elements."""
        keys = list(estimates)
        values = np.array([estimates[k] for k in keys], dtype=float)
        hit = self.rng.random(len(keys)) < self.noise
        decoys = self.rng.integers(0, len(self.domain), int(hit.sum()))
        out: Counter = Counter({k: v for k, v, h in zip(keys, values, hit, strict=True)
                                if not h})
        for i, v in zip(decoys, values[hit], strict=True):
            out[self.domain[i]] += float(v)
        return out

    def close_slice(self, length, live_per_state, urgent_needs, ancestors) -> None:
        """Close the slice as the model does, then replace a share of its estimates."""
        self.noisy_live = None
        super().close_slice(length, live_per_state, urgent_needs, ancestors)
        self.urgent = self._moved(self.urgent)
        self.future = dict(self._moved(self.future))
        live = super().mean_live()
        cats = sorted(live)
        hit = self.rng.random(len(cats)) < self.noise
        swap = self.rng.integers(0, max(1, len(cats)), len(cats))
        self.noisy_live = {j: live[cats[s]] if h else live[j]
                           for j, h, s in zip(cats, hit, swap, strict=True)}

    def mean_live(self) -> dict[int, float]:
        """#P^j as estimated: the replaced counts once the slice has closed."""
        return self.noisy_live if self.noisy_live is not None else super().mean_live()


class TunedEngine(RemoteEngine):
    """:class:`~cep_core.remote.RemoteEngine` with :class:`Tuning`'s overrides (module
    doc)."""

    name = "reference+remote (tuned)"

    def __init__(self, plan, policy: str, output: str, runs: str, config: RemoteConfig,
                 tuning: Tuning):
        self.tuning = tuning  # read by fresh_state, called by the engine's constructor
        super().__init__(plan, policy, output, runs, config)

    def fresh_state(self):
        """The engine's fresh state, with a :class:`NoisyUtility` when noise is asked."""
        st = super().fresh_state()
        t = self.tuning
        if t.noise:
            st.utility = NoisyUtility(self.config.slices, st.utility.mean_latency, t.noise,
                                      t.domain, t.seed)
        return st

    def _choose_triggers(self, now: float) -> None:
        k = self.tuning.lookahead
        if k is None:
            super()._choose_triggers(now)
            return
        trigger: dict[int, list[int]] = {}
        for i, need in enumerate(self.needs):
            trigger.setdefault(need.candidates[min(k, len(need.candidates) - 1)],
                               []).append(i)
        self.stream_state.trigger = trigger

    def _set_reach(self) -> None:
        k = self.tuning.lazy_states
        if k is None or not self.lazy:
            super()._set_reach()
            return
        plan = self.plan
        accepting = {p.index for p in plan.positions if p.accepting}
        for j in {need.state for need in self.needs} | self.event_key:
            reach: set[int] = set()
            for dst in self._remote_dsts.get(j, ()):
                reach |= set(chain_after(plan, dst)[:k])
            self.stream_state.reach[j] = frozenset(reach - accepting)



def tuned_session(query: CompiledQuery, policy: str, config: RemoteConfig,
                  tuning: Tuning) -> Session:
    """A session of ``query`` on a :class:`TunedEngine` (outputs: matches)."""
    engine = TunedEngine(query.plan, policy, "matches", EVERY_EVENT, config, tuning)
    return Session(engine)
