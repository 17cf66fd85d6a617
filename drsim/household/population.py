"""Households of a chunk: appliance sets, EVs, follow-through rates and groups.

Every attribute is drawn with counter-based streams keyed by the household id
(:mod:`drsim.household.rng`), so a household is the same whatever chunk it falls in.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from drsim.household import rng
from drsim.household.appliances import Catalogue, load_catalogue
from drsim.household.behaviour_data import EVData, load_ev_data, load_follow_through
from drsim.household.control import is_control
from drsim.household.season import day_catalogue, load_daylight, with_ownership
from drsim.scenario import FollowThrough, Scenario


@dataclass(frozen=True)
class Population:
    """The households ``first .. first+count-1`` of a scenario (vectorized attributes).

    Each attribute is an array over the households, drawn from the counter-based streams
    of :mod:`drsim.household.rng` keyed by the household id, so a household is the same
    whatever chunk it falls in. The households follow the dissertation's §6.3.1 [1]_:
    20-25 appliances each, an EV at the penetration level, a follow-through rate from a
    survey; the groups are Table 6.2's.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario (seed, groups, appliance, EV and follow-through settings).
    first : int
        Id of the first household (0-based) [households].
    count : int
        Number of households of the id range [households].
    part : {"all", "called", "control"}, default "all"
        Which households of the range: all of them, those the utility calls, or its
        control households, which it does not (:mod:`drsim.household.control`). Without
        a control group every household is called.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1 and Table 6.2.

    Examples
    --------
    >>> from drsim.scenario import scenario_from_dict
    >>> scenario = scenario_from_dict({"name": "doc", "seed": 7, "households": 4, "groups": [
    ...     {"name": "a", "size": 2, "follow_through_drop": 0.1}, {"name": "b", "size": 2}]})
    >>> pop = Population(scenario, 0, 4)
    >>> pop.group.tolist(), pop.appliance_count.tolist(), pop.has_ev.tolist()
    ([0, 0, 1, 1], [25, 22, 21, 24], [False, False, True, False])
    >>> pop.follow_through.tolist(), pop.observed_follow_through.round(3).tolist()
    ([0.75, 0.75, 1.0, 0.5], [0.675, 0.675, 0.6, 0.3])

    A household is the same in any chunk:

    >>> Population(scenario, 2, 2).appliance_count.tolist()
    [21, 24]
    """

    scenario: Scenario
    first: int
    count: int
    part: str = "all"

    @cached_property
    def ids(self) -> np.ndarray:
        """Household ids of ``first .. first+count-1`` in :attr:`part`, (size,) int64."""
        ids = np.arange(self.first, self.first + self.count, dtype=np.int64)
        if self.part == "all":
            return ids
        control = is_control(self.scenario, ids)
        return ids[control] if self.part == "control" else ids[~control]

    @property
    def size(self) -> int:
        """Number of households [households] (``count`` unless a :attr:`part`)."""
        return len(self.ids)

    def called(self) -> Population:
        """Return the households of the range that the utility calls.

        This population itself when it has no control households (no control group:
        value for value the same).
        """
        if self.part == "called" or not is_control(self.scenario, self.ids).any():
            return self
        return Population(self.scenario, self.first, self.count, "called")

    def control(self) -> Population:
        """Return the control households of the range (:mod:`drsim.household.control`)."""
        return Population(self.scenario, self.first, self.count, "control")

    @cached_property
    def catalogue(self) -> Catalogue:
        """The scenario's appliance catalogue for its day (:func:`.season.day_catalogue`).

        The catalogue file (:func:`.appliances.load_catalogue`) with the scenario's electric
        heating ownership, its starts and start curves those of the scenario's month and
        day type.
        """
        s = self.scenario
        heating = s.appliances.electric_heating
        ref = s.appliances.catalogue
        base = str(s.resolve_path(".")) if ref != "default" else None
        return _day_catalogue(ref, base, s.month, s.day_type,
                              heating.storage_heaters, heating.direct_heaters)

    @cached_property
    def ev_data(self) -> EVData:
        """The scenario's EV charging data (:func:`.behaviour_data.load_ev_data`)."""
        ref = self.scenario.ev.data
        base = self.scenario.resolve_path(".") if ref != "default" else None
        return load_ev_data(ref, base)

    @cached_property
    def group(self) -> np.ndarray:
        """Group index of each household, (count,) int (Table 6.2, "Grouping")."""
        return self.scenario.group_of(self.ids)

    @cached_property
    def appliance_count(self) -> np.ndarray:
        """Number of drawn catalogue appliances per household, (count,) int.

        Uniform in the scenario's [min, max], both included (dissertation §6.3.1: "uniformly
        assigned from 20 to 25 different common house appliances"); lighting and the heating
        systems come on top (:attr:`owns`).
        """
        s = self.scenario.appliances
        lo, hi = s.per_household_min, s.per_household_max
        return rng.integers(self.scenario.seed, self.ids, "appliance_count", lo, hi)

    @cached_property
    def owns(self) -> np.ndarray:
        r"""Each household's appliances, (count, A) bool.

        Lighting is always owned; heating systems (``drawn: false``) are owned
        independently at their ownership rate; of the rest each household draws
        :math:`k` = :attr:`appliance_count` distinct appliances (§6.3.1 [1]_) with
        inclusion probabilities proportional to ownership (:func:`inclusion_probabilities`),
        by randomized systematic πps sampling [2]_, [3]_: in a random order of the
        appliances per household, with cumulative sums :math:`C_i` of the :math:`\pi` and
        one uniform :math:`u`, appliance :math:`i` is drawn when

        .. math:: \lfloor C_i - u \rfloor > \lfloor C_{i-1} - u \rfloor,
           \qquad \pi_i = \min(1, c \cdot \mathrm{ownership}_i), \quad \sum_i \pi_i = k

        The sampling is drsim's reading: §6.3.1 gives the number of appliances, not how
        they are chosen (the header of ``drsim/data/appliances.yaml``; docs/decisions.md,
        "Load model data and its sources").

        References
        ----------
        .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
           dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
        .. [2] Madow, "On the theory of systematic sampling, II", Ann. Math. Stat. 20(3),
           1949.
        .. [3] Goodman & Kish, JASA 45, 1950 (the random order per household).
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
        alone = np.flatnonzero(~cat.drawn & ~cat.always_owned)  # drawn on their own
        owned = drawn | cat.always_owned
        owned[:, alone] |= (rng.uniform(seed, self.ids[:, None], "owns", alone[None, :])
                            < cat.ownership[alone])
        return owned

    @cached_property
    def has_ev(self) -> np.ndarray:
        """EV ownership per household, (count,) bool.

        Each household owns an EV with the scenario's penetration as probability
        (dissertation §6.3.1: 22.48 %, the UK 2030 forecast).
        """
        u = rng.uniform(self.scenario.seed, self.ids, "ev_owner")
        return u < self.scenario.ev.penetration

    @cached_property
    def battery_kwh(self) -> np.ndarray:
        """EV battery capacity per household [kWh], (count,), drawn from the EV data.

        Drawn for every household (used only where :attr:`has_ev`), from the battery
        distribution of the scenario's EV data (``drsim/data/ev.yaml`` by default).
        """
        u = rng.uniform(self.scenario.seed, self.ids, "ev_battery")
        return self.ev_data.battery_kwh.quantile(u)

    @cached_property
    def charger_kw(self) -> np.ndarray:
        """Home charger power per household [kW], (count,), drawn from the EV data.

        Drawn for every household (used only where :attr:`has_ev`), from the charger
        distribution of the scenario's EV data (``drsim/data/ev.yaml`` by default).
        """
        u = rng.uniform(self.scenario.seed, self.ids, "ev_charger")
        return self.ev_data.charger_kw.quantile(u)

    @cached_property
    def follow_through(self) -> np.ndarray:
        """Expected follow-through rate θ_o per household [1], (count,).

        A randomly chosen survey response (dissertation §6.3.1: "the follow-through rate of
        each household is assigned to a randomly-chosen survey response", mean 0.45; the
        distribution in ``drsim/data/follow_through.yaml``), times the scale of the
        household's group or scenario, clipped to [0, 1]. One θ_o governs both the
        appliances and the EV (docs/decisions.md, "Follow-through per household").
        """
        u = rng.uniform(self.scenario.seed, self.ids, "follow_through")
        theta = np.empty(self.size)
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
        """Observed drop of follow-through per household [1], (count,).

        The group's ``follow_through_drop`` where it sets one, else the scenario's (§6.3.2:
        0.4); docs/decisions.md, "Groups differ".
        """
        scenario = self.scenario
        drops = np.array([scenario.effective_follow_through_drop(g)
                          for g in range(len(scenario.groups))])
        return drops[self.group]

    @cached_property
    def observed_follow_through(self) -> np.ndarray:
        r"""Reduced follow-through rate θ_red per household [1], (count,).

        The follow-through observed in the first event: §6.3.2 [1]_ reduces the mean rate
        by 40 %; drsim applies the drop to every household's θ_o (docs/decisions.md,
        "Passes and the observed follow-through drop"):

        .. math:: \theta_{red} = \theta_o \cdot (1 - \mathrm{drop})

        References
        ----------
        .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
           dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.2.
        """
        return self.follow_through * (1.0 - self.follow_through_drop)

    def _group_follow_through(self) -> list[FollowThrough]:
        scenario = self.scenario
        return [scenario.effective_follow_through(g) for g in range(len(scenario.groups))]


def inclusion_probabilities(weights: np.ndarray, max_count: int) -> np.ndarray:
    r"""Tabulate the inclusion probabilities of a draw of k appliances, proportional to weights.

    Row :math:`k` holds the inclusion probabilities of a πps draw of :math:`k` distinct
    appliances (:attr:`Population.owns`):

    .. math:: \pi_i = \min(1, c \cdot w_i), \qquad \sum_i \pi_i = k

    :math:`c` is found by capping: appliances whose :math:`c \cdot w_i` reaches 1 are
    included surely and the rest share the remaining count in proportion to their
    weights. drsim's reading: §6.3.1 gives the number of appliances (20 to 25), not how
    they are chosen (the header of ``drsim/data/appliances.yaml``; docs/decisions.md,
    "Load model data and its sources").

    Parameters
    ----------
    weights : numpy.ndarray
        (A,) non-negative weights, the appliances' ownership [1]; 0 excludes an
        appliance.
    max_count : int
        Largest number of appliances drawn [appliances]; at most the number of positive
        weights.

    Returns
    -------
    numpy.ndarray
        (max_count + 1, A) inclusion probabilities [1]; row k sums to k.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
    .. [2] Madow, "On the theory of systematic sampling, II", Ann. Math. Stat. 20(3), 1949.

    Examples
    --------
    >>> table = inclusion_probabilities(np.array([0.9, 0.5, 0.1, 0.5]), 3)
    >>> table[2].tolist()
    [0.9, 0.5, 0.1, 0.5]
    >>> table[3].round(3).tolist()  # the first is capped at 1, the rest share 2
    [1.0, 0.909, 0.182, 0.909]
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


@lru_cache(maxsize=16)
def _day_catalogue(ref: str, base: str | None, month: int, day_type: str, storage: float,
                   direct: float) -> Catalogue:
    """Make the day's catalogue once per process and scenario day (the tasks share it)."""
    cat = load_catalogue(ref, None if base is None else Path(base))
    cat = with_ownership(cat, {"storage_heater": storage, "other_space_heating": direct})
    return day_catalogue(cat, load_daylight(), month, day_type)
