"""What the households of a chunk do, as a stream of events.

The events are appliance starts, EV plug-ins, pauses and resumes. The simulation
(:mod:`drsim.household.sim`) commits each appliance cycle's start and each EV charging
session as rows of a :class:`drsim.household.starts.Batch`; a DR event moves planned starts
(their ``gen`` counts the moves) and pauses EV sessions in progress at its start, which
resume after it (the paused session ends, its rest starts again with ``gen`` + 1). Read
back as events (§6.3.1 of the dissertation simulates the households bottom-up; this is
the view an appliance-level monitoring would have of them):

* ``start_<category>``: a cycle of an appliance of that load category starts
  (``cold``, ``wet``, ``cooking``, ``water_heating``, ``space_heating``, ...);
* ``ev_plug``: a charging session's first start; ``ev_pause``: a session stops before
  its energy is in (its rest was moved); ``ev_resume``: the rest starts.

Columns: ``type``, ``time`` [minute of the day], ``houseID``, ``appliance`` (name, or
``ev``), ``moved`` (how often DR moved it); time order, then household, then type.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from drsim.household.render import session_minutes
from drsim.household.sim import ChunkRun

__all__ = ["household_events"]


def household_events(run: ChunkRun, house_ids: np.ndarray, lo: int = 0,
                     hi: int = 1440) -> pd.DataFrame:
    """Read a chunk's simulated day back as the events of its households.

    Every committed appliance start becomes a ``start_<category>`` event; each planned
    EV charging session an ``ev_plug`` at its first start, and, where a DR event paused
    it, an ``ev_pause`` when a part ends before the session's energy is in and an
    ``ev_resume`` when its rest starts (see the module doc). §6.3.1 simulates the
    households bottom-up; this is the view an appliance-level monitoring would have of
    them (:mod:`drsim.utility.appliance_monitoring`). No equation in the source.

    Parameters
    ----------
    run : drsim.household.sim.ChunkRun
        The committed starts and sessions of one schedule for one chunk.
    house_ids : numpy.ndarray
        The household id of each row of the chunk.
    lo, hi : int, default 0 and 1440
        The time range kept, end excluded [minutes since midnight of the DR day].

    Returns
    -------
    pandas.DataFrame
        Columns ``type``, ``time`` [minutes since midnight], ``houseID``, ``appliance``
        (the appliance's name, or ``ev``) and ``moved`` (how often DR moved the
        start); sorted by time, then household, then type.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.

    Examples
    --------
    Twenty households, all with an EV, all following through an event from 18:30 to
    20:30: a storage water heater runs before it (pre-heating), a dishwasher after it,
    and two EVs charging at 18:30 pause and resume after it:

    >>> from drsim.household.dr import DREvent
    >>> from drsim.household.population import Population
    >>> from drsim.household.sim import ChunkSimulator
    >>> from drsim.scenario import Scenario
    >>> scenario = Scenario.model_validate({
    ...     "name": "doc", "seed": 7, "households": 20,
    ...     "groups": [{"name": "g", "size": 20}], "ev": {"penetration": 1.0}})
    >>> pop = Population(scenario, 0, 20)
    >>> run = ChunkSimulator(pop).run([DREvent("18:30", "20:30", follow_through=np.ones_like)])
    >>> events = household_events(run, pop.ids, 18 * 60, 22 * 60)
    >>> print(events[(events["moved"] > 0) | (events["appliance"] == "ev")].to_string())
                        type  time  houseID             appliance  moved
    8    start_water_heating  1084        1  storage_water_heater      1
    75              ev_pause  1110       11                    ev      0
    76              ev_pause  1110       17                    ev      0
    539            start_wet  1260        7            dishwasher      1
    599            ev_resume  1280       17                    ev      1
    617            ev_resume  1287       11                    ev      1
    """
    cat = run.pop.catalogue
    apps = run.appliances
    parts = [pd.DataFrame({"type": "start_" + cat.category[apps.appliance],
                           "time": apps.t, "row": apps.row,
                           "appliance": np.asarray(cat.names, dtype=object)[apps.appliance],
                           "moved": apps.gen})]
    ev = run.ev
    if len(ev):
        key = (ev.row * 1_000_003 + ev.day) * 1_009 + ev.j  # one planned session
        order = np.lexsort((ev.gen, key))
        k, gen = key[order], ev.gen[order]
        first = np.r_[True, k[1:] != k[:-1]]
        paused = np.r_[k[1:] == k[:-1], False]  # a later part of the session follows
        t = ev.t[order]
        end = t + session_minutes(ev.take(order))
        rows = ev.row[order]
        for typ, sel, when in (("ev_plug", first, t), ("ev_resume", ~first, t),
                               ("ev_pause", paused, end)):
            parts.append(pd.DataFrame({"type": typ, "time": when[sel], "row": rows[sel],
                                       "appliance": "ev", "moved": gen[sel]}))
    out = pd.concat(parts, ignore_index=True)
    out = out[(out["time"] >= lo) & (out["time"] < hi)]
    out["houseID"] = np.asarray(house_ids, dtype=np.int64)[out["row"].to_numpy()]
    out = out.sort_values(["time", "houseID", "type"], kind="stable", ignore_index=True)
    return out[["type", "time", "houseID", "appliance", "moved"]].astype(
        {"time": np.int64, "moved": np.int64})
