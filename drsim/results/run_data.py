"""What a run folder shows (:class:`RunData`), gathered from a finished run: the passes'
loads and the utility's estimates, the second event, t_nc, the tiers' outcomes and events,
the thresholds and what the monitoring features' stages before the passes made. Written
by :mod:`drsim.results.output`, drawn by :mod:`drsim.results.figures`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa

from drsim.pipeline.tasks import UTILITY
from drsim.results.summary_model import Summary
from drsim.utility.monitoring import NOT_LATCHED

if TYPE_CHECKING:
    from drsim.pipeline.stages import Monitored, Run
    from drsim.utility.threshold import Thresholds

__all__ = ["TIER_TABLES", "RunData", "run_data", "tier_tables"]

#: the tables of the group leaders' and the utility's events (tier_tables)
TIER_TABLES = ("group_alerts", "group_events", "utility_alerts")


@dataclass(frozen=True)
class RunData:
    """Everything the run folder shows, gathered once from a finished run (:func:`run_data`).

    Times are minutes since midnight, loads kW averaged over each minute."""

    name: str  # scenario name
    group_names: list[str]
    # pass -> (n_groups, 1440) kW; passes "baseline", "expected", "traditional", "adaptive"
    group_kw: dict[str, np.ndarray]
    # "baseline" (B̂), "expected" (P̂): (1440,) kW, NaN outside the program window
    estimate_kw: dict[str, np.ndarray]
    program: tuple[int, int]  # (t_start, t_end) minutes since midnight
    second_event: tuple[int, int, int] | None  # (announced, start, end) of DR2, None if none
    t_nc: int | None  # utility non-compliance prediction of the traditional pass
    test_times: np.ndarray  # household test minutes
    ticks: np.ndarray  # group/utility evaluation minutes
    # pass ("expected", "traditional") -> (n_groups, len(test_times)): share of the group's
    # households with a user event at that test
    flagged_fraction: dict[str, np.ndarray]
    group_alert_ticks: dict[str, list[np.ndarray]]  # pass -> per group, ticks with an alert
    group_latch: dict[str, list[int | None]]  # pass -> per group, latch minute (None: never)
    thresholds: Thresholds  # γ[groupID, time] of Listing 6.2 (drsim.utility.threshold)

    # name -> table with a "pass" column: TIER_TABLES (group_alerts and group_events: pass,
    # time, groupID, sumAccLoad; utility_alerts: pass, time, load), and "user_events"
    # (pass, time, houseID, groupID, accLoad) when the events were collected (the run
    # folder's writer can take them from the backend instead)
    tier_events: dict[str, pd.DataFrame]
    summary: dict  # the complete summary.json content (drsim.results.summary.build)
    # pass -> (groups,): the last minute each group's meters are tested at the monitoring
    # rate (drsim.pipeline.evaluation.stops: its latch, t_nc or the program's end)
    monitoring_stop: dict[str, np.ndarray] = field(default_factory=dict)
    households: int | None = None  # the run's households (None: not known)
    # pass -> its reduction against the simulated baseline [MWh] (summary.json's)
    reduction_mwh: dict[str, float] = field(default_factory=dict)
    # file name -> the rows of a monitoring feature's stage before the passes, which
    # drsim monitor reads in its place (load shedding's cost_models.parquet;
    # drsim.pipeline.kept)
    kept: dict[str, pa.Table] = field(default_factory=dict)


def run_data(run: Run, summary: dict, user_events: pd.DataFrame | None = None) -> RunData:
    """What the run folder of ``run`` shows (``summary``: its summary.json content;
    ``user_events``: the user events when they were collected)."""
    from drsim.pipeline.evaluation import flagged_fraction, stops

    simulation, monitored = run.simulation, run.monitored
    scenario, plan = simulation.scenario, monitored.plan
    sizes = np.array(scenario.called_group_sizes(), dtype=np.int64)
    second = run.second
    return RunData(
        name=scenario.name, group_names=[g.name for g in scenario.groups],
        group_kw=simulation.loads.group_kw, estimate_kw=simulation.loads.estimate_kw,
        program=(plan.t_start, plan.t_end),
        second_event=None if second is None else (second.announced, second.start, second.end),
        t_nc=run.t_nc if monitored.outcome["traditional"].predicted else None,
        test_times=plan.test_times, ticks=plan.ticks,
        flagged_fraction={name: flagged_fraction(monitored.meter_work[name], sizes)
                          for name in monitored.outcome},
        group_alert_ticks={n: o.alert_ticks for n, o in monitored.outcome.items()},
        group_latch={n: [None if x == NOT_LATCHED else x for x in o.latch]
                     for n, o in monitored.outcome.items()},
        thresholds=monitored.thresholds,
        tier_events={**tier_tables(monitored),
                     **({} if user_events is None else {"user_events": user_events})},
        summary=summary,
        monitoring_stop={n: stops(plan, o) for n, o in monitored.outcome.items()},
        households=simulation.households,
        reduction_mwh=dict(Summary.model_validate(summary).reduction_mwh or {}),
        kept=dict(run.kept))


def tier_tables(monitored: Monitored) -> dict[str, pd.DataFrame]:
    """The group and utility tiers' output as the run folder's event tables
    (:data:`EVENT_TABLES`; the user events stay with the backend)."""
    rows = monitored.tier_rows
    group = rows[rows["group"] != UTILITY]
    util = rows[(rows["group"] == UTILITY) & (rows["kind"] == "alert")]

    def pick(kind: str) -> pd.DataFrame:
        t = group[group["kind"] == kind]
        return pd.DataFrame({"pass": t["pass"].astype(str), "time": t["time"].astype(np.int64),
                             "groupID": t["group"].astype(np.int64),
                             "sumAccLoad": t["load"].astype(np.float64)}).reset_index(drop=True)

    return {"group_alerts": pick("alert"),  # TIER_TABLES
            "group_events": pick("event"),
            "utility_alerts": pd.DataFrame({"pass": util["pass"].astype(str),
                                            "time": util["time"].astype(np.int64),
                                            "load": util["load"].astype(np.float64)}
                                           ).reset_index(drop=True)}
