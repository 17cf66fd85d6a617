"""Simulated prior non-event days of a chunk's households, simulated once and shared.

The settlement-grade M&V methods (:mod:`drsim.utility.settlement_baselines`) compute the
baseline from non-event days of the same households before the evaluated day. Prior day k
is the chunk's no-DR day at counter offset ``−k × PRIOR_DAY_STRIDE`` (the days of the
``prior_days`` method of :mod:`drsim.utility.baseline`); a day of another day type is the
same households under a copy of the scenario with that ``day_type``
(:mod:`drsim.household.season`), at offsets of its own. Only no-DR days are simulated:
the utility does not call its households on the days it builds baselines from.

A chunk's estimates are asked for over several windows (the program, the minutes before
the notice), and may be asked for by several M&V methods (scenario copies that differ in
``baseline`` only), so :func:`prior_days_of` keeps the last chunk's simulated days and
every window and method renders from them.
"""

from __future__ import annotations

import threading

import numpy as np

from drsim.household.population import Population
from drsim.household.render import micro_kw
from drsim.household.season import DAY_TYPES
from drsim.household.sim import ChunkRun, ChunkSimulator

__all__ = ["OTHER_TYPE_DAYS_FROM", "PRIOR_DAY_STRIDE", "PriorDays", "days_key", "prior_days_of"]

PRIOR_DAY_STRIDE = 1000  # counter offset between simulated prior days (days never overlap)
#: prior days of another day type t are numbered from OTHER_TYPE_DAYS_FROM × (1 + index of t)
OTHER_TYPE_DAYS_FROM = 100


def days_key(pop: Population) -> tuple:
    """Return what a chunk's prior days depend on.

    Its households (which of the range are called may depend on
    ``baseline.control_group``) and the scenario but its M&V settings (``baseline``,
    which the household simulation does not read).

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households.

    Returns
    -------
    tuple
        (scenario without ``baseline``, the households' ids as bytes), compared by
        equality.
    """
    return pop.scenario.model_copy(update={"baseline": None}), pop.ids.tobytes()


class PriorDays:
    """The simulated prior non-event days of one chunk's households (module doc).

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households on the evaluated day.

    Examples
    --------
    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}])
    >>> days = PriorDays(Population(s, 0, 3))
    >>> days.load(1, 1110, 1230).shape, days.run(1) is days.run(1)
    ((3, 120), True)
    """

    def __init__(self, pop: Population):
        self.pop = pop
        self.key = days_key(pop)
        self._runs: dict[tuple[str, int], ChunkRun] = {}
        #: results derived from the days, kept with them (e.g. a fit): name -> value
        self.memo: dict = {}

    def run(self, k: int, day_type: str | None = None) -> ChunkRun:
        """Return prior day ``k`` (≥ 1) of ``day_type`` (default the scenario's), no DR.

        Days of the scenario's day type are at offset ``−k × PRIOR_DAY_STRIDE``; day k of
        another type at that of ``OTHER_TYPE_DAYS_FROM × (1 + its index) + k``.
        """
        own = self.pop.scenario.day_type
        day_type = day_type or own
        key = (day_type, k)
        if key not in self._runs:
            pop, counter = self.pop, k
            if day_type != own:
                scenario = self.pop.scenario.model_copy(update={"day_type": day_type})
                pop = Population(scenario, self.pop.first, self.pop.count, self.pop.part)
                counter = OTHER_TYPE_DAYS_FROM * (1 + DAY_TYPES.index(day_type)) + k
            self._runs[key] = ChunkSimulator(pop, day_offset=-counter * PRIOR_DAY_STRIDE).run([])
        return self._runs[key]

    def load(self, k: int, lo: int, hi: int, day_type: str | None = None) -> np.ndarray:
        """Return the load of prior day ``k`` over minutes [lo, hi), (households, hi − lo) [kW]."""
        return self.run(k, day_type).load(lo, hi)

    def energy_micro(self, k: int, lo: int, hi: int) -> np.ndarray:
        """Return each household's energy of prior day ``k`` over [lo, hi) [µkW·min].

        Whole µkW summed exactly (:func:`drsim.household.render.micro_kw`), so that ranking
        the days is the same in any chunk.
        """
        return micro_kw(self.load(k, lo, hi)).sum(axis=1)


_LAST: list[PriorDays] = []  # the last chunk's days (one chunk at a time per process)
_LOCK = threading.Lock()


def prior_days_of(pop: Population) -> PriorDays:
    """Return the simulated prior days of ``pop``, shared by every estimate of the chunk.

    The household simulation does not read ``baseline``, so populations of scenarios that
    differ in it alone (other M&V methods of the same chunk) share the days.

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households.

    Returns
    -------
    PriorDays
        The chunk's days; a new one (the previous chunk's dropped) for other households
        or another day.

    Examples
    --------
    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}])
    >>> other = s.model_copy(update={"baseline": s.baseline.model_copy(
    ...     update={"method": "x_of_y"})})
    >>> prior_days_of(Population(s, 0, 3)) is prior_days_of(Population(other, 0, 3))
    True
    >>> prior_days_of(Population(s, 0, 3)) is prior_days_of(Population(s, 1, 2))
    False
    """
    with _LOCK:
        if not _LAST or (_LAST[0].pop is not pop and _LAST[0].key != days_key(pop)):
            _LAST[:] = [PriorDays(pop)]
        return _LAST[0]
