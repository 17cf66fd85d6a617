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
    """Grid energy of a session: ΔSoC × capacity / efficiency (no charge if ΔSoC ≤ 0)."""
    return np.maximum(final_soc - initial_soc, 0.0) * battery_kwh / efficiency


def planned_sessions(pop: Population, day: int, day_offset: int = 0):
    """Planned (no-DR) charging sessions of the chunk's EVs on ``day`` as a sim Batch.

    ``day_offset`` shifts the day used as random-stream counter (other simulated days).
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
