"""EV charging sessions (dissertation §6.3.1, after Quirós-Tortós, Ochoa, Butler 2018).

Each EV household draws, per day, a number of home charging sessions, and for each a
plug-in time from the weekday plug-in curve, an initial and a target state of charge;
it charges at its charger's power until the target:
energy from the grid = ΔSoC × battery capacity / charger efficiency.
Distributions and their sources are in ``drsim/data/ev.yaml``.
"""

from __future__ import annotations

import numpy as np

from drsim.household import rng
from drsim.household.population import Population
from drsim.household.starts import make_batch
from drsim.units import DAY


def session_energy_kwh(initial_soc, final_soc, battery_kwh, efficiency: float) -> np.ndarray:
    r"""Compute the grid energy of EV charging sessions.

    A session charges the battery from its initial to its final state of charge; the
    energy drawn from the grid is

    .. math:: E = \max(SoC_{final} - SoC_{initial}, 0) \cdot C / \eta

    with C the battery capacity and η the charger efficiency: no charge when the final
    SoC is not above the initial one. §6.3.1 models EV charging after [2]_ without
    printing a formula; this one is drsim's, with its data and sources in
    ``drsim/data/ev.yaml`` (docs/decisions.md, "Load model data and its sources").

    Parameters
    ----------
    initial_soc : array_like
        State of charge when plugged in, a fraction of the capacity [1].
    final_soc : array_like
        Target state of charge [1].
    battery_kwh : array_like
        Battery capacity [kWh].
    efficiency : float
        Charger efficiency, grid to battery [1].

    Returns
    -------
    numpy.ndarray
        Energy drawn from the grid per session [kWh].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
    .. [2] J. Quirós-Tortós, L. F. Ochoa, T. Butler, "How electric vehicles and the grid
       work together: Lessons learned from one of the largest EV trials in the world",
       IEEE Power and Energy Magazine 16(6), 2018, pp. 64-76.

    Examples
    --------
    >>> session_energy_kwh(np.array([0.2, 0.9]), np.array([0.8, 0.5]), 40.0, 0.8)
    array([30.,  0.])
    """
    return np.maximum(final_soc - initial_soc, 0.0) * battery_kwh / efficiency


def planned_sessions(pop: Population, day: int, day_offset: int = 0):
    """Draw the planned (no-DR) charging sessions of the chunk's EVs on one day.

    Each EV household draws its number of home charging sessions from the weekday
    sessions-per-day distribution; each session a plug-in time (a ten-minute slot of the
    weekday plug-in curve, then a uniform minute in it), an initial and a target state
    of charge, and its grid energy (:func:`session_energy_kwh`); it charges at the
    household's charger power. Sessions that would draw no energy are dropped. §6.3.1
    models EV charging this way after [2]_ (the distributions of the number of charging
    procedures per day, of their start times and of the initial and final state of
    charge); the numbers and their sources are in ``drsim/data/ev.yaml``.

    Parameters
    ----------
    pop : drsim.household.population.Population
        The households of the chunk.
    day : int
        The simulated day, 0 the DR day [days].
    day_offset : int, default 0
        Shifts the day used as random-stream counter (other simulated days) [days].

    Returns
    -------
    drsim.household.starts.Batch
        One row per session, grouped by household: ``row`` (household
        row of the chunk), ``t`` (plug-in time [minutes since midnight of the DR day]),
        ``appliance`` -1, ``day`` (the stream counter ``day + day_offset``), ``j``
        (index of the session within the household's day), ``energy_kwh`` [kWh] and
        ``kw`` (charger power [kW]).

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
    .. [2] J. Quirós-Tortós, L. F. Ochoa, T. Butler, "How electric vehicles and the grid
       work together: Lessons learned from one of the largest EV trials in the world",
       IEEE Power and Energy Magazine 16(6), 2018, pp. 64-76.

    Examples
    --------
    Twenty households, all with an EV; five sessions on the DR day:

    >>> from drsim.scenario import Scenario
    >>> scenario = Scenario.model_validate({
    ...     "name": "doc", "seed": 7, "households": 20,
    ...     "groups": [{"name": "g", "size": 20}], "ev": {"penetration": 1.0}})
    >>> s = planned_sessions(Population(scenario, 0, 20), day=0)
    >>> s.row.tolist(), s.t.tolist()
    ([2, 11, 11, 11, 17], [467, 1347, 1066, 680, 972])
    >>> s.energy_kwh.round(2).tolist(), s.kw.tolist()
    ([48.61, 11.11, 18.52, 37.04, 16.67], [7.0, 7.0, 7.0, 7.0, 7.0])
    """
    data, seed = pop.ev_data, pop.scenario.seed
    key = day + day_offset
    rows = np.nonzero(pop.has_ev)[0]
    ids = pop.ids[rows]
    n = data.sessions_per_day.quantile(rng.uniform(seed, ids, "ev_sessions", key)).astype(np.int64)
    rows = np.repeat(rows, n)
    j = np.arange(len(rows)) - np.repeat(np.cumsum(n) - n, n)
    ids = pop.ids[rows]
    cdf = np.cumsum(data.plug_in_pmf)
    slot = np.minimum(
        np.searchsorted(cdf, rng.uniform(seed, ids, "ev_plug_slot", key, j) * cdf[-1],
                        side="right"), 143)
    minute = (rng.uniform(seed, ids, "ev_plug_minute", key, j) * 10).astype(np.int64)
    t = day * DAY + slot * 10 + minute
    soc0 = data.initial_soc.quantile(rng.uniform(seed, ids, "ev_soc_initial", key, j))
    soc1 = data.final_soc.quantile(rng.uniform(seed, ids, "ev_soc_final", key, j))
    energy = session_energy_kwh(soc0, soc1, pop.battery_kwh[rows], data.efficiency)
    keep = energy > 0
    charger = pop.charger_kw[rows]
    return make_batch(rows[keep], t[keep], -1, key, j[keep], energy[keep], charger[keep])
