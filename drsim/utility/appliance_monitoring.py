"""Appliance-level utility queries in the DR run, with adaptive evaluation plans.

The three tiers of the dissertation's Ch. 6 watch the households' meter readings. A
utility may also watch what the households *do* while the program runs, as events: the
appliance starts, EV plug-ins, pauses and resumes of the simulation
(:mod:`drsim.household.household_events`), the DR signals each household receives (``dr_notice``,
``dr_start``, ``dr_end`` of every event of the pass's schedule), and ``over_baseline`` at
every δ minutes of the evening, on the grid of the test times (t_first_test + kδ,
§6.2.1), when the household's load over the δ minutes before exceeds its load without DR
(the baseline pass: B under the same-day M&V of §6.3.1, "both baseline and expected
reduction are estimated" from the simulated day; the utility's own B̂ exists over the
program only, and the rebound comes after it). The rates of these events move sharply at the
notice, at the start, and in the rebound, which is where an evaluation plan that follows
the statistics (cep_core.adaptive, Schuster and Kolchinsky, US 11,693,862 B2, patented)
earns its keep; for example "a household paused its EV at the event's start and then
started a deferrable appliance before its end"::

    PATTERN SEQ(dr_start s, ev_pause p, start_wet w, dr_end e)
    WHERE SAME[houseID] WITHIN 3h

Each query (scenario key ``monitoring.appliance_queries``) runs per chunk on each
monitored pass, over the evening from two hours before the program to two hours after
it; it must be partitioned by household (``SAME[houseID]``), so that the chunks' runs add
up to the run over every household. What leaves the chunk is a row of counts per query
(:data:`COUNTS`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

import cep_core
from drsim.household.household_events import household_events
from drsim.scenario import ApplianceQuery

__all__ = ["COUNTS", "appliance_stream", "compile_appliance_queries", "run_appliance_query",
           "evening"]

#: per query, chunk and pass: outputs (alerts), events processed, partial matches
#: created, predicates evaluated, checks of D, re-optimisations, plan replacements
COUNTS = ("alerts", "events", "partial_matches", "predicates", "checks", "reoptimizations",
          "replacements")
_MARGIN = 120  # minutes of the evening before and after the program


def evening(t_start: int, t_end: int) -> tuple[int, int]:
    """The minutes [lo, hi) the appliance queries read: the program ± two hours."""
    return max(0, t_start - _MARGIN), min(1440, t_end + _MARGIN)


def compile_appliance_queries(queries: dict[str, ApplianceQuery]
                              ) -> dict[str, cep_core.CompiledQuery]:
    """Each query compiled (times in minutes), with its plan options checked; a query not
    partitioned by household is refused with one line naming it."""
    out = {}
    for name, spec in queries.items():
        source = f"monitoring.appliance_queries.{name}.query"
        q = cep_core.compile(spec.query, time_unit="min", source=source)
        if q.plan is None or tuple(q.plan.partition) != ("houseID",):
            raise cep_core.QueryError(f"{source}: an appliance query is partitioned by "
                                      "household (WHERE SAME[houseID] ...), so that each "
                                      "chunk runs it alone")
        q.engine_for("skip-till-any-match", plan=spec.plan, adapt=_adapt(spec))  # checked
        out[name] = q
    return out


def appliance_stream(run: Any, baseline: Any, house_ids: np.ndarray,
                     signals: list[tuple[int, int, int]], t_first_test: int, delta: int,
                     t_start: int, t_end: int) -> pd.DataFrame:
    """The events of one pass of a chunk (module doc), in time order (then household).

    Parameters
    ----------
    run, baseline : the pass's and the baseline pass's :class:`drsim.household.sim.ChunkRun`
    house_ids : (households,) the chunk's household ids
    signals : (announced, start, end) of each DR event of the pass [minute of the day]
    t_first_test, delta : the test grid, t_first_test + kδ [minute of the day, minutes]
    t_start, t_end : the program [minute of the day]
    """
    lo, hi = evening(t_start, t_end)
    parts = [household_events(run, house_ids, lo, hi)[["type", "time", "houseID"]]]
    n = len(house_ids)
    for announced, start, end in signals:
        for typ, t in (("dr_notice", announced), ("dr_start", start), ("dr_end", end)):
            if lo <= t < hi:
                parts.append(pd.DataFrame({"type": typ, "time": np.full(n, t, np.int64),
                                           "houseID": house_ids}))
    excess = run.load(lo, hi) - baseline.load(lo, hi)
    cum = np.concatenate([np.zeros((n, 1)), np.cumsum(excess, axis=1)], axis=1)
    first = t_first_test - ((t_first_test - lo - delta) // delta) * delta
    grid = np.arange(first, hi + 1, delta)  # readings with δ minutes behind them
    ends = grid - lo
    over = cum[:, ends] - cum[:, ends - delta] > 1e-9
    row, col = np.nonzero(over)
    parts.append(pd.DataFrame({"type": "over_baseline", "time": grid[col],
                               "houseID": np.asarray(house_ids, np.int64)[row]}))
    stream = pd.concat(parts, ignore_index=True)
    return stream.sort_values(["time", "houseID", "type"], kind="stable", ignore_index=True)


def _adapt(spec: ApplianceQuery) -> dict[str, Any] | None:
    """The adapt option of a query (none for the text-order plan)."""
    return spec.adapt if spec.plan != "text" else None


def run_appliance_query(query: cep_core.CompiledQuery, spec: ApplianceQuery,
                        stream: pd.DataFrame) -> np.ndarray:
    """The :data:`COUNTS` of one query over one chunk's stream (skip-till-any-match, one
    run per event, as the adaptive plans evaluate)."""
    session = query.start("skip-till-any-match", plan=spec.plan, adapt=_adapt(spec))
    alerts = len(session.feed(stream)) + len(session.flush())
    c = session.counters
    report = session.adaptation_report() if spec.plan != "text" and \
        session.engine_name.startswith("adaptive") else {}
    return np.array([alerts, c.events, c.pm_created, c.predicates, report.get("checks", 0),
                     report.get("reoptimizations", 0), report.get("replacements", 0)],
                    dtype=np.int64)
