"""What the households of a chunk would do without DR (:class:`ChunkPlan`).

Planned appliance starts and EV sessions are drawn per day from counter-based streams,
identical across passes (common random numbers); a DR event only moves planned starts
(:mod:`drsim.household.processes`). The day's common factor
(:mod:`drsim.household.day_variation`), shared by the households of a region or group,
scales the start counts of heating and lighting and shifts the activity timing.
"""

from __future__ import annotations

import numpy as np

from drsim.household import rng
from drsim.household.appliances import FLEX_ADVANCE, FLEX_COLD, FLEX_DEFERRABLE
from drsim.household.day_variation import DayVariation
from drsim.household.ev import planned_sessions
from drsim.household.population import Population
from drsim.household.starts import Batch, make_batch
from drsim.units import DAY

FIRST_DAY = -1  # the DR day is day 0; the evening of day -1 runs into it
RESPONSIVE = (FLEX_DEFERRABLE, FLEX_ADVANCE)  # classes whose starts DR can move


class ChunkPlan:
    """What the households of a chunk would do without DR, drawn once and shared by passes.

    Planned appliance starts and EV sessions are drawn per day from counter-based streams
    (common random numbers), so every pass and every replica of the decisions sees the
    same planned day (docs/decisions.md, "Passes and the observed follow-through drop").

    Parameters
    ----------
    pop : Population
        The chunk's households.
    day_offset : int, default 0
        Counter offset of the simulated day [days]: other values draw other days of the
        same households (the prior days of the ``prior_days``, ``x_of_y`` and
        ``regression`` baselines, the replicas of the threshold), with other common day
        factors.
    """

    def __init__(self, pop: Population, day_offset: int = 0):
        self.pop = pop
        self.seed = pop.scenario.seed
        self.day_offset = day_offset  # counter offset: other simulated days (baseline)
        cat = pop.catalogue
        self._cdf = np.cumsum(cat.start_pmf, axis=1)
        self._cdf[:, -1] = 1.0
        self._slots = rng.inverse_cdf(self._cdf)
        self.variation = DayVariation(pop)
        # first slot of day -1 whose starts can still run at midnight (cycle + slot width,
        # and the most the day's timing shift can move a start later)
        lead = cat.cycle_minutes + 19 + self.variation.lead_minutes
        self._late_slot = np.maximum(0, 144 - lead // 10)
        self._days: dict[tuple[int, int], Batch] = {}
        self._owned: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # flex -> _pairs

    def appliance_starts(self, flex: int, day: int) -> Batch:
        r"""Draw the planned cycle starts of one flexibility class on one day.

        A household's appliances start at random times of the day (the bottom-up model of
        §6.3.1 [1]_ after the CREST model [2]_: probabilities of starting an appliance at a
        given time of the day). drsim's reading (docs/decisions.md, "Load model data and
        its sources"): owned appliance :math:`a` of household :math:`h` starts
        :math:`N_{h,a} \sim \mathrm{Poisson}(n_a)` times a day, :math:`n_a` the
        catalogue's ``starts_per_day``, each in a ten-minute slot :math:`s` drawn from its
        start curve of the day (:mod:`drsim.household.season`) and at a uniform minute within
        it,

        .. math:: t = 1440 \cdot d + 10 \cdot s + U\{0, \dots, 9\};

        cold appliances cycle thermostatically, one cycle every :math:`1440 / n_a` minutes
        from a random phase. With a common day factor (:class:`DayVariation`) the mean
        :math:`n_a` of heating and lighting is the day's factor times the catalogue's, and
        :math:`t` moves by the day's timing shift. Of day -1 only the starts whose cycles
        can still run at midnight are drawn. Drawn once per (class, day) and cached.

        Parameters
        ----------
        flex : int
            Flexibility class, one of the ``FLEX_*`` codes of
            :mod:`drsim.household.appliances`.
        day : int
            Day relative to the DR day (-1 the evening before, 0 the DR day, ...).

        Returns
        -------
        Batch
            The planned starts [minutes since midnight of the DR day]; in time order for
            the classes DR can move (deferrable, shiftable in advance).

        References
        ----------
        .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
           dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
        .. [2] I. Richardson, M. Thomson, D. Infield, C. Clifford, "Domestic electricity use:
           A high-resolution energy demand model", Energy and Buildings 42(10), 1878-1887,
           2010.

        Examples
        --------
        >>> from drsim.scenario import scenario_from_dict
        >>> scenario = scenario_from_dict({"name": "doc", "seed": 7, "households": 4,
        ...                                "groups": [{"name": "g", "size": 4}]})
        >>> plan = ChunkPlan(Population(scenario, 0, 4))
        >>> starts = plan.appliance_starts(FLEX_DEFERRABLE, 0)
        >>> starts.t.tolist(), starts.row.tolist()
        ([454, 706, 787, 939, 940, 944, 1392], [1, 1, 2, 2, 3, 1, 2])
        >>> [plan.pop.catalogue.names[a] for a in starts.appliance[:3]]
        ['washing_machine', 'washing_machine', 'dishwasher']
        """
        if (flex, day) not in self._days:
            make = self._cold_starts if flex == FLEX_COLD else self._random_starts
            starts = make(flex, day)
            self._days[flex, day] = starts.by_time() if flex in RESPONSIVE else starts
        return self._days[flex, day]

    def forget(self, classes: tuple[int, ...]) -> None:
        """Drop the drawn days of these flexibility classes (drawn again if asked for).

        Parameters
        ----------
        classes : tuple of int
            ``FLEX_*`` codes; a simulator that keeps the committed starts of the classes DR
            never moves frees the plan's copy of them.
        """
        for key in [k for k in self._days if k[0] in classes]:
            del self._days[key]

    def _pairs(self, flex: int) -> tuple[np.ndarray, np.ndarray]:
        """Find the owned appliances of class ``flex`` that start at all.

        Returns (household rows, appliances); the same every day, found once.
        """
        if flex not in self._owned:
            cat = self.pop.catalogue
            mask = self.pop.owns & (cat.flexibility == flex)[None, :] & \
                (cat.starts_per_day > 0)
            self._owned[flex] = np.nonzero(mask)
        return self._owned[flex]

    def _random_starts(self, flex: int, day: int) -> Batch:
        """Poisson number of starts per day, times by the appliance's start-time curve.

        CREST (Richardson et al. 2010, §3) makes starts depend on the time of day through
        activity profiles; here the number of starts per day is Poisson with the
        catalogue's mean (at most one start, with that chance, for ``at_most_one``
        appliances), and each start's 10-minute slot is drawn from the appliance's
        start curve of the day, its minute uniform within the slot. Of day -1 only the late
        slots whose cycles can reach midnight are drawn (a Poisson process restricted to
        them: count with the slots' share of the mean, slots from the conditional curve).
        The common day factor scales the mean per key (region or group) and shifts the
        times (:class:`DayVariation`); the late slots reach back by the largest shift.
        """
        cat, ids = self.pop.catalogue, self.pop.ids
        rows, apps = self._pairs(flex)
        first = self._late_slot if day == FIRST_DAY else np.zeros(len(cat.names), np.int64)
        below = np.where(first > 0, self._cdf[np.arange(len(first)), first - 1], 0.0)
        share = 1.0 - below
        key = day + self.day_offset
        u = rng.uniform(self.seed, ids[rows], "start_count", apps, key)
        means = self.variation.start_means(cat.starts_per_day * share, key)  # per key
        pair = self.variation.pair_index(rows, apps)
        n = rng.poisson_table(means).sample(pair, u)
        once = cat.at_most_one[apps]  # one start at most (storage heaters: one charge a night)
        n[once] = u[once] < means[pair[once]]
        rows, apps = np.repeat(rows, n), np.repeat(apps, n)
        j = np.arange(len(rows)) - np.repeat(np.cumsum(n) - n, n)
        h = rng.hash64(self.seed, ids[rows], "start_time", apps, key, j)
        u_slot = below[apps] + share[apps] * rng.to_unit(h)
        slot = self._slots.sample(apps, u_slot)
        minute = (rng.low_bits(h, 11) * 10) >> 11  # uniform in the slot, from spare bits
        t = day * DAY + slot * 10 + minute + self.variation.start_shift(rows, apps, key)
        return make_batch(rows, t, apps, key, j)

    def _cold_starts(self, flex: int, day: int) -> Batch:
        """Thermostatic cycling: one cycle every 1440/starts_per_day minutes, random phase.

        Of day -1 only the cycles that still run at midnight are made.
        """
        cat, ids = self.pop.catalogue, self.pop.ids
        rows, apps = self._pairs(flex)
        period = DAY / cat.starts_per_day[apps]
        phase = rng.uniform(self.seed, ids[rows], "cold_phase", apps, self.day_offset) * period
        begin = day * DAY + (DAY - cat.cycle_minutes[apps] - 1 if day == FIRST_DAY else 0)
        first = np.ceil((begin - phase) / period).astype(np.int64)
        last = np.ceil(((day + 1) * DAY - phase) / period).astype(np.int64)
        n = last - first
        j = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
        k = np.repeat(first, n) + j
        t = np.floor(np.repeat(phase, n) + k * np.repeat(period, n)).astype(np.int64)
        return make_batch(np.repeat(rows, n), t, np.repeat(apps, n), day + self.day_offset, j)

    def ev_sessions(self, day: int) -> Batch:
        """Draw the planned EV charging sessions of one day.

        Sessions per day, start times and states of charge after the trial data of [2]_ as
        §6.3.1 [1]_ prescribes; :func:`drsim.household.ev.planned_sessions` draws them,
        and their plug-in times move by the day's common timing shift
        (:class:`DayVariation`). Drawn once per day and cached.

        Parameters
        ----------
        day : int
            Day relative to the DR day (-1 the evening before, 0 the DR day, ...).

        Returns
        -------
        Batch
            The sessions in time order [minutes since midnight of the DR day], with the
            energy to charge ``energy_kwh`` [kWh] and the charger power ``kw`` [kW].

        References
        ----------
        .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
           dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
        .. [2] J. Quirós-Tortós, L. F. Ochoa, T. Butler, "How electric vehicles and the grid
           work together: Lessons learned from one of the largest EV trials in the world", IEEE
           Power and Energy Magazine 16(6), 2018, pp. 64-76.

        Examples
        --------
        >>> from drsim.scenario import scenario_from_dict
        >>> scenario = scenario_from_dict({"name": "doc", "seed": 7, "households": 4,
        ...                                "groups": [{"name": "g", "size": 4}]})
        >>> sessions = ChunkPlan(Population(scenario, 0, 4)).ev_sessions(0)
        >>> sessions.row.tolist(), sessions.t.tolist(), sessions.kw.tolist()
        ([2], [467], [7.0])
        >>> sessions.energy_kwh.round(2).tolist()
        [48.61]
        """
        if (-1, day) not in self._days:
            sessions = planned_sessions(self.pop, day, self.day_offset)
            sessions.t = sessions.t + self.variation.session_shift(sessions.row,
                                                                   day + self.day_offset)
            self._days[-1, day] = sessions.by_time()
        return self._days[-1, day]
