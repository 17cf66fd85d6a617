"""What the households of a chunk do, as a stream of events: appliance starts, EV plug-ins,
pauses and resumes.

The simulation (:mod:`drsim.household.sim`) commits each appliance cycle's start and each EV
charging session as rows of a :class:`drsim.household.starts.Batch`; a DR event moves planned starts
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

from drsim.household.sim import ChunkRun, session_minutes

__all__ = ["household_events"]


def household_events(run: ChunkRun, house_ids: np.ndarray, lo: int = 0,
                     hi: int = 1440) -> pd.DataFrame:
    """The events of the households of ``run`` (ids ``house_ids``, one per row of the
    chunk) in minutes [lo, hi) (module doc)."""
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
