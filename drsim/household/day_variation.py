"""The common day factor: day-to-day variation that the households of a region share.

Without it every household draws its day independently (§6.3.1 of the dissertation), so
the day-to-day variation of an aggregate shrinks as 1/√N. Weather and the calendar move
every household at once; the common day factor (``Scenario.day_variation``, docs/model.md,
"Day-to-day variation") models that with two draws per simulated day, shared by every
household of the region (or of each group):

- a **level** factor, lognormal with mean 1 and coefficient of variation ``cv``, on the
  day's start counts of space heating and lighting (temperature- and daylight-like);
- a **timing** shift, normal with standard deviation ``timing_minutes`` (cut at
  :data:`CUT` standard deviations, whole minutes), of the activity-driven appliance starts
  and the EV plug-ins.

Both are drawn from the counter-based streams (:mod:`drsim.household.rng`) keyed on
(scenario seed, group index or the region's 0, stream, the simulated day's counter
``day + day_offset``), so every household of a region or group gets the same factor on a
day, other simulated days (prior days, replicas) get other factors, and no draw depends
on the chunk. With ``cv`` 0 the level is exactly 1 and the shift 0, and every draw of the
plan is unchanged.
"""

from __future__ import annotations

import math

import numpy as np

from drsim.household import rng
from drsim.household.population import Population

SCALED_CATEGORIES = ("space_heating", "lighting")  # catalogue categories the level scales
CUT = 4.0  # the timing shift's normal draw is cut at ±CUT standard deviations


class DayVariation:
    r"""The common day factor of a chunk's households (``Scenario.day_variation``).

    On the simulated day with counter :math:`c` (``day + day_offset``), the households of
    key :math:`k` (their group's index with ``by_group``, else the region's 0) share

    .. math:: f_{k,c} = \exp(\sigma z_{k,c} - \sigma^2/2), \quad
              \sigma^2 = \ln(1 + cv^2), \qquad
              \Delta_{k,c} = \mathrm{round}(s \cdot \max(-4, \min(4, z'_{k,c})))

    with :math:`z, z'` standard normal from the streams ``day_level`` and ``day_timing``
    and :math:`s` = ``timing_minutes``: the mean start count :math:`n_a` of a space
    heating or lighting appliance becomes :math:`f_{k,c} \cdot n_a`, and every
    activity-driven start and EV plug-in moves by :math:`\Delta_{k,c}` minutes. The
    factor is drsim's (the dissertation simulates independent households, §6.3.1 [1]_);
    its defaults: docs/model.md, "Day-to-day variation".

    Parameters
    ----------
    pop : Population
        The chunk's households.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.

    Examples
    --------
    >>> from drsim.scenario import scenario_from_dict
    >>> s = scenario_from_dict({"name": "doc", "seed": 7, "households": 4,
    ...                         "groups": [{"name": "g", "size": 4}],
    ...                         "day_variation": {"cv": 0.2, "timing_minutes": 20}})
    >>> day = DayVariation(Population(s, 0, 4))
    >>> day.level(0).round(3).tolist(), day.shift(0).tolist(), day.shift(-1000).tolist()
    ([1.297], [28], [-2])

    Off (``cv`` 0), the level is 1 and the shift 0, whatever the timing says:

    >>> s = scenario_from_dict({"name": "doc", "seed": 7, "households": 4,
    ...                         "groups": [{"name": "g", "size": 4}],
    ...                         "day_variation": {"timing_minutes": 20}})
    >>> off = DayVariation(Population(s, 0, 4))
    >>> off.level(0).tolist(), off.shift(0).tolist(), off.lead_minutes
    ([1.0], [0], 0)
    """

    def __init__(self, pop: Population):
        settings = pop.scenario.day_variation
        self.seed, self.cv = pop.scenario.seed, settings.cv
        self.timing = settings.timing_minutes if settings.active else 0.0
        keys = pop.group if settings.by_group else np.zeros(pop.size, dtype=np.int64)
        self.keys, self.key_of_row = np.unique(keys, return_inverse=True)
        cat = pop.catalogue
        self.apps = len(cat.names)
        self.scaled = np.isin(cat.category, SCALED_CATEGORIES)
        self.shifted = ~cat.at_most_one  # a storage heater charges on the tariff's timer
        #: the most a start can move [minutes]
        self.lead_minutes = math.ceil(CUT * self.timing)

    def level(self, counter: int) -> np.ndarray:
        """Return the day's level factor of each key.

        Parameters
        ----------
        counter : int
            The simulated day's counter, ``day + day_offset`` [days].

        Returns
        -------
        numpy.ndarray
            (keys,) lognormal factors with mean 1 [1]; exactly 1 when ``cv`` is 0.
        """
        if self.cv == 0.0:
            return np.ones(len(self.keys))
        z = rng.normal(self.seed, self.keys, "day_level", counter)
        return rng.lognormal_factor(z, self.cv)

    def shift(self, counter: int) -> np.ndarray:
        """Return the day's timing shift of each key.

        Parameters
        ----------
        counter : int
            The simulated day's counter, ``day + day_offset`` [days].

        Returns
        -------
        numpy.ndarray
            (keys,) int64 shifts [minutes]; 0 when off.
        """
        if self.timing == 0.0:
            return np.zeros(len(self.keys), dtype=np.int64)
        z = np.clip(rng.normal(self.seed, self.keys, "day_timing", counter), -CUT, CUT)
        return np.rint(self.timing * z).astype(np.int64)

    def start_means(self, mean: np.ndarray, counter: int) -> np.ndarray:
        """Scale the appliances' mean start counts by the day's level, per key.

        Parameters
        ----------
        mean : numpy.ndarray
            (A,) mean starts of each appliance on the day [starts].
        counter : int
            The simulated day's counter [days].

        Returns
        -------
        numpy.ndarray
            (keys · A,) the means of key k at ``k * A + a`` (:meth:`pair_index`)
            [starts]; ``mean`` itself, value for value, when off.
        """
        factor = np.where(self.scaled[None, :], self.level(counter)[:, None], 1.0)
        return (mean[None, :] * factor).ravel()

    def pair_index(self, rows: np.ndarray, apps: np.ndarray) -> np.ndarray:
        """Return the index into :meth:`start_means` of (household row, appliance) pairs.

        Parameters
        ----------
        rows, apps : numpy.ndarray
            Household rows of the chunk and appliance indices, same shape.

        Returns
        -------
        numpy.ndarray
            int64 indices; ``apps`` when there is one key.
        """
        return self.key_of_row[rows] * self.apps + apps

    def start_shift(self, rows: np.ndarray, apps: np.ndarray, counter: int) -> np.ndarray:
        """Return the day's shift of appliance starts [minutes] (0 for timer-driven ones).

        Parameters
        ----------
        rows, apps : numpy.ndarray
            Household rows and appliances of the starts.
        counter : int
            The simulated day's counter [days].

        Returns
        -------
        numpy.ndarray
            int64 shifts [minutes], shape of ``rows``.
        """
        return self.shift(counter)[self.key_of_row[rows]] * self.shifted[apps]

    def session_shift(self, rows: np.ndarray, counter: int) -> np.ndarray:
        """Return the day's shift of EV plug-ins [minutes] (arrivals home move with it).

        Parameters
        ----------
        rows : numpy.ndarray
            Household rows of the sessions.
        counter : int
            The simulated day's counter [days].

        Returns
        -------
        numpy.ndarray
            int64 shifts [minutes], shape of ``rows``.
        """
        return self.shift(counter)[self.key_of_row[rows]]
