"""Households of a chunk: appliance sets, EVs, follow-through rates and groups.

Every attribute is drawn with counter-based streams keyed by the household id
(:mod:`drsim.household.rng`), so a household is the same whatever chunk it falls in.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from drsim.household import rng
from drsim.household.appliances import Catalogue, load_catalogue
from drsim.household.behaviour_data import EVData, load_ev_data, load_follow_through
from drsim.scenario import FollowThrough, Scenario


@dataclass(frozen=True)
class Population:
    """The households ``first .. first+count-1`` of a scenario (vectorized attributes)."""

    scenario: Scenario
    first: int
    count: int

    @cached_property
    def ids(self) -> np.ndarray:
        return np.arange(self.first, self.first + self.count, dtype=np.int64)

    @cached_property
    def catalogue(self) -> Catalogue:
        ref = self.scenario.appliances.catalogue
        base = self.scenario.resolve_path(".") if ref != "default" else None
        return load_catalogue(ref, base)

    @cached_property
    def ev_data(self) -> EVData:
        ref = self.scenario.ev.data
        base = self.scenario.resolve_path(".") if ref != "default" else None
        return load_ev_data(ref, base)

    @cached_property
    def group(self) -> np.ndarray:
        """Group index of each household (Table 6.2 grouping)."""
        return self.scenario.group_of(self.ids)

    @cached_property
    def appliance_count(self) -> np.ndarray:
        """Number of catalogue appliances, uniform in [min, max] (dissertation §6.3.1: 20-25)."""
        s = self.scenario.appliances
        lo, hi = s.per_household_min, s.per_household_max
        return rng.integers(self.scenario.seed, self.ids, "appliance_count", lo, hi)

    @cached_property
    def owns(self) -> np.ndarray:
        """(count, A) bool: each household's appliances.

        Lighting is always owned; heating systems (``drawn: false``) are owned
        independently at their ownership rate; of the rest each household draws
        ``appliance_count`` distinct appliances with inclusion probabilities proportional
        to ownership (π_i = min(1, c·ownership_i), Σπ = count), by randomized systematic
        πps sampling (Madow, "On the theory of systematic sampling, II", Ann. Math. Stat.
        20(3), 1949; random order per household as in Goodman & Kish, JASA 45, 1950).
        """
        cat, seed = self.catalogue, self.scenario.seed
        a = np.arange(len(cat.names))
        drawable = cat.drawn & (cat.ownership > 0)
        k = np.minimum(self.appliance_count, drawable.sum())
        table = inclusion_probabilities(np.where(drawable, cat.ownership, 0.0), k.max())
        pi = table[k]  # (count, A)
        order = np.argsort(rng.uniform(seed, self.ids[:, None], "owns_order", a[None, :]), axis=1)
        cum = np.cumsum(np.take_along_axis(pi, order, axis=1), axis=1)
        cum[:, -1] = k  # the total is exactly the count
        u = rng.uniform(seed, self.ids, "owns_start")[:, None]
        hits = np.diff(np.floor(cum - u), axis=1, prepend=np.floor(-u)) > 0
        drawn = np.zeros_like(hits)
        np.put_along_axis(drawn, order, hits, axis=1)
        alone = ~cat.drawn & ~cat.always_owned
        owned_alone = alone & (rng.uniform(seed, self.ids[:, None], "owns", a[None, :])
                               < cat.ownership)
        return drawn | cat.always_owned | owned_alone

    @cached_property
    def has_ev(self) -> np.ndarray:
        """EV ownership at the scenario's penetration (§6.3.1: 22.48 %)."""
        u = rng.uniform(self.scenario.seed, self.ids, "ev_owner")
        return u < self.scenario.ev.penetration

    @cached_property
    def battery_kwh(self) -> np.ndarray:
        u = rng.uniform(self.scenario.seed, self.ids, "ev_battery")
        return self.ev_data.battery_kwh.quantile(u)

    @cached_property
    def charger_kw(self) -> np.ndarray:
        u = rng.uniform(self.scenario.seed, self.ids, "ev_charger")
        return self.ev_data.charger_kw.quantile(u)

    @cached_property
    def follow_through(self) -> np.ndarray:
        """θ_o per household: a randomly chosen survey response (§6.3.1), group overrides apply."""
        u = rng.uniform(self.scenario.seed, self.ids, "follow_through")
        theta = np.empty(self.count)
        for g, settings in enumerate(self._group_follow_through()):
            sel = self.group == g
            if not sel.any():
                continue
            base = None if settings.distribution == "survey" else self.scenario.resolve_path(".")
            survey = load_follow_through(settings.distribution, base)
            theta[sel] = np.clip(survey.levels.quantile(u[sel]) * settings.scale, 0.0, 1.0)
        return theta

    @cached_property
    def follow_through_drop(self) -> np.ndarray:
        """Observed drop of follow-through per household (group override or scenario's)."""
        scenario = self.scenario
        drops = np.array([scenario.effective_follow_through_drop(g)
                          for g in range(len(scenario.groups))])
        return drops[self.group]

    @cached_property
    def observed_follow_through(self) -> np.ndarray:
        """θ_red per household: θ_o × (1 − drop), the follow-through observed in the first
        event (§6.3.2)."""
        return self.follow_through * (1.0 - self.follow_through_drop)

    def _group_follow_through(self) -> list[FollowThrough]:
        scenario = self.scenario
        return [scenario.effective_follow_through(g) for g in range(len(scenario.groups))]


def inclusion_probabilities(weights: np.ndarray, max_count: int) -> np.ndarray:
    """(max_count+1, A) table: row k holds π_i = min(1, c·w_i) with Σ π_i = k.

    c is found by capping: appliances whose c·w_i reaches 1 are included surely and the
    rest share the remaining count in proportion to their weights.
    """
    w = np.asarray(weights, dtype=np.float64)
    table = np.zeros((max_count + 1, len(w)))
    for k in range(1, max_count + 1):
        sure = np.zeros(len(w), dtype=bool)
        while True:
            rest = w * ~sure
            pi = np.where(sure, 1.0, rest * (k - sure.sum()) / rest.sum())
            if not (pi[~sure] >= 1.0).any():
                break
            sure |= pi >= 1.0
        table[k] = pi
    return table
