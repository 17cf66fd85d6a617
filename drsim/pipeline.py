"""The adaptive DR run: passes, tiers, the second event, results (DESIGN.md data flow).

``run_scenario`` drives the Spark stages of :mod:`spark.adaptive_job`:

1. baseline / expected / traditional passes with the meter tier in each chunk task, and
   the utility's estimates (B̂, P̂, :mod:`drsim.baseline`) with, when γ_user comes from the
   expected response, the replicas' flags (:mod:`drsim.threshold`);
2. the thresholds γ[groupID, time], then the group and utility tiers → the prediction
   ``t_nc`` of each monitored pass (the expected pass should predict nothing: a
   prediction there is a false alarm);
3. the incentive module (Eq. 6.5-6.8, :mod:`drsim.incentive`) plans the second event
   from what the utility knows at ``t_nc`` (:mod:`drsim.deficit`), announced at ``t_nc``
   (+ ``delay_detection``), starting ``second_event_delay`` minutes later, ending at
   ``t_end``;
4. the adaptive pass (DR1 at θ_red + DR2 at θ_new) and the lottery of Eq. 6.5; the pass
   replays the traditional pass up to the announcement (common random numbers: nothing
   before it depends on DR2).

Costs (reading 11) are counted as the deployed system incurs them: meters read every
``reading`` minutes until their group is latched (or the utility predicts
non-compliance), then every ``settlement`` minutes; tests, user events, λ fetches and
the engines' work stop at a group's latch (the utility's at ``t_nc``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from drsim.deficit import (
    expected_reduction_kwh,
    last_readings,
    observed_follow_through,
    reduction_goal_kwh,
    reduction_so_far,
    shortfall_kwh,
)
from drsim.incentive import ParticipantSums, monitoring_cost, plan_second_event, saved_cost
from drsim.monitoring import CHANGES, NOT_LATCHED, MonitoringPlan, check_queries
from drsim.results import check_output, clock, code_version
from drsim.scenario import ExpectedShare, Scenario

__all__ = ["run_scenario", "PASSES"]

PASSES = ("baseline", "expected", "traditional", "adaptive")
REBOUND_MINUTES = 180  # rebound is looked for in the three hours after t_end
Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _mwh(kw_minutes: float) -> float:
    return float(kw_minutes) / 60.0 / 1000.0


def scenario_hash(scenario: Scenario) -> str:
    """SHA-256 of the validated scenario (its JSON form): equal hash, equal inputs."""
    text = json.dumps(scenario.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- tiers
def _tier_outcome(plan: MonitoringPlan, rows: pd.DataFrame, name: str, n_groups: int
                  ) -> dict[str, Any]:
    """Latches, alert ticks and t_nc of one monitored pass from the tier rows."""
    mine = rows[rows["pass"] == name]
    latch: list[int] = []
    alert_ticks: list[np.ndarray] = []
    for g in range(n_groups):
        ev = mine[(mine["group"] == g) & (mine["kind"] == "event")]
        latch.append(int(ev["time"].min()) if len(ev) else NOT_LATCHED)
        alert_ticks.append(mine[(mine["group"] == g) & (mine["kind"] == "alert")]["time"]
                           .to_numpy(np.int64))
    t_nc_rows = mine[mine["kind"] == "t_nc"]["time"]
    t_nc = int(t_nc_rows.iloc[0]) if len(t_nc_rows) else NOT_LATCHED
    return {"latch": latch, "alert_ticks": alert_ticks, "t_nc": t_nc}


def _stops(plan: MonitoringPlan, latch: list[int], t_nc: int) -> np.ndarray:
    """Per group, the last minute its meters are tested at the monitoring rate: its latch,
    the utility's prediction, or the end of the program, whichever comes first."""
    end = plan.t_end - 1
    out = []
    for at in latch:
        stop = end if at == NOT_LATCHED else at
        if t_nc != NOT_LATCHED:
            stop = min(stop, t_nc)
        out.append(stop)
    return np.array(out, dtype=np.int64)


def _costs(plan: MonitoringPlan, sizes: np.ndarray, meter_work: np.ndarray,
           rows: pd.DataFrame, name: str, outcome: dict) -> dict[str, Any]:
    """Communication and computation per tier (reading 11), as deployed."""
    stops = _stops(plan, outcome["latch"], outcome["t_nc"])
    tests = plan.test_times
    mine = rows[rows["pass"] == name]
    readings = 0
    for g, stop in enumerate(stops.tolist()):
        fast = len(range(plan.t_start, stop + 1, plan.reading))
        slow = len(range(stop + plan.settlement, plan.t_end, plan.settlement))
        readings += int(sizes[g]) * (fast + slow)
    counted = tests[None, :] <= stops[:, None]  # (groups, tests)
    processed, pms, outputs = (meter_work[:, j, :] for j in range(3))
    meter_computation = int(((processed + pms) * counted).sum())
    fetches = int((processed * counted).sum())
    user_events = int((outputs * counted).sum())
    group_computation = group_events = 0
    for g, stop in enumerate(stops.tolist()):
        work = mine[(mine["group"] == g) & (mine["kind"] == "work") & (mine["time"] <= stop)]
        group_computation += int((work["processed"] + work["partial_matches"]).sum())
        ev = mine[(mine["group"] == g) & (mine["kind"] == "event") & (mine["time"] <= stop)]
        group_events += len(ev)
    t_nc = outcome["t_nc"]
    last = plan.t_end if t_nc == NOT_LATCHED else t_nc
    uw = mine[(mine["group"] == -1) & (mine["kind"] == "work") & (mine["time"] <= last)]
    utility_computation = int((uw["processed"] + uw["partial_matches"]).sum())
    communication = {"meter_readings": readings, "remote_lambda_fetches": fetches,
                     "user_events": user_events, "group_events": group_events}
    computation = {"meter": meter_computation, "group": group_computation,
                   "utility": utility_computation}
    return {"communication": {**communication, "total": sum(communication.values())},
            "computation": {**computation, "total": sum(computation.values())}}


def _precision_recall(households: pd.DataFrame, plan: MonitoringPlan, name: str,
                      stops: np.ndarray) -> tuple[float | None, float | None, dict]:
    """Household predictions (flagged by the meter tier by each group's ``stops``
    minute) against realised Eq. 6.2 non-compliance (reduction below the household's
    goal)."""
    hh = households[households["pass"] == name]
    flag = hh["first_flag"].to_numpy()
    predicted = (flag != NOT_LATCHED) & (flag <= stops[hh["group"].to_numpy()])
    truth = hh["reduction_kwh"].to_numpy() < hh["goal_kwh"].to_numpy()
    tp = int((predicted & truth).sum())
    fp = int((predicted & ~truth).sum())
    fn = int((~predicted & truth).sum())
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    return precision, recall, {"true_positives": tp, "false_positives": fp,
                               "false_negatives": fn, "households": int(len(hh)),
                               "noncompliant_households": int(truth.sum())}


def _flagged_fraction(plan: MonitoringPlan, user_events: pd.DataFrame, name: str,
                      sizes: np.ndarray) -> np.ndarray:
    ev = user_events[user_events["pass"] == name]
    counts = np.zeros((len(sizes), len(plan.test_times)))
    if len(ev):
        col = np.searchsorted(plan.test_times, ev["time"].to_numpy())
        np.add.at(counts, (ev["groupID"].to_numpy(), col), 1)
    return counts / sizes[:, None]


def _deficit_at(plan: MonitoringPlan, loads, latch: list[int], t_nc: int,
                theta_o_mean: float, goal_kwh: float, total_kwh: float) -> dict[str, Any]:
    """What the utility knows at t_nc (drsim.deficit): the reduction realised and
    expected so far, the θ̄_red it reads from them and the projected shortfall against
    the goal (``total_kwh``: the estimated expected reduction of the program)."""
    known = last_readings(plan.t_start, t_nc, np.array(latch), plan.reading, plan.settlement)
    est = loads.estimate_group_kw
    realised, expected = reduction_so_far(loads.group_kw["traditional"], est["baseline"],
                                          est["expected"], plan.t_start, known)
    return {"readings_until": [clock(int(t)) for t in known],
            "realised_reduction_kwh": realised, "expected_reduction_kwh": expected,
            "share_of_expected": realised / expected if expected > 0 else None,
            "theta_o_mean": theta_o_mean,
            "theta_red_mean_observed": observed_follow_through(theta_o_mean, realised,
                                                               expected),
            "shortfall_kwh": shortfall_kwh(goal_kwh, total_kwh, realised, expected)}


# --------------------------------------------------------------------------- the run
def run_scenario(scenario: Scenario, out_dir: str | Path | None, *, master: str | None = None,
                 delay_detection: int = 0, chunk_size: int | None = None,
                 overwrite: bool = False, progress: Progress | None = None
                 ) -> dict[str, Any]:
    """Run the adaptive DR scenario; write the run folder to ``out_dir`` (unless None)
    and return the summary. ``delay_detection`` shifts the second event later (Figure
    6.12)."""
    from pyspark.sql import SparkSession

    from spark.adaptive_job import run_adaptive, run_monitored
    from spark.session import get_spark

    if delay_detection < 0:
        raise ValueError(f"delay_detection must be >= 0 minutes, not {delay_detection}")
    started = time.perf_counter()
    plan = MonitoringPlan.of(scenario)
    check_queries(plan)
    if out_dir is not None:
        check_output(out_dir, overwrite)
    timings: dict[str, float] = {}
    own = SparkSession.getActiveSession() is None
    t0 = time.perf_counter()
    spark = get_spark(master)
    timings["spark_start_seconds"] = time.perf_counter() - t0
    try:
        def stage(name):
            return None if progress is None else (lambda d, t: progress(name, d, t))

        mon = run_monitored(spark, scenario, plan, chunk_size, stage("passes + meter tier"))
        timings.update(mon.timings)
        n_groups = len(scenario.groups)
        sizes = np.array([hi - lo for lo, hi in scenario.group_ranges()], dtype=np.int64)
        outcome = {name: _tier_outcome(plan, mon.tier_rows, name, n_groups)
                   for name in ("expected", "traditional")}
        trad = outcome["traditional"]
        t_nc = trad["t_nc"]

        # ---- incentive module (Eq. 6.5-6.8), with what the utility knows at t_nc
        costs = _costs(plan, sizes, mon.meter_work["traditional"], mon.tier_rows,
                       "traditional", trad)
        sums = sum((ParticipantSums(p["count"], p["theta_o_sum"], p["theta_red_sum"],
                                    tuple(tuple(x) for x in p["u_counts"]))
                    for p in mon.participants), ParticipantSums())
        loads = mon.loads
        expected_kwh = expected_reduction_kwh(loads.estimate_kw["baseline"],
                                              loads.estimate_kw["expected"], plan.t_start,
                                              plan.t_end)
        goal_kwh = reduction_goal_kwh(scenario.dr_program.reduction_goal_kwh, expected_kwh)
        deficit = None
        incentive = None
        second = None
        note = None
        adaptive_kw = loads.group_kw["traditional"]
        if t_nc == NOT_LATCHED:
            note = "no utility non-compliance predicted: no second event"
        else:
            deficit = _deficit_at(plan, loads, trad["latch"], t_nc, sums.theta_o_mean,
                                  goal_kwh, expected_kwh)
            inc = scenario.incentive
            mon_cost = monitoring_cost(
                costs["communication"]["total"], costs["computation"]["total"],
                cost_per_transmitted_event=inc.cost_per_transmitted_event,
                cost_per_processed_event=inc.cost_per_processed_event)
            incentive = plan_second_event(
                inc, scenario.dr_program.incentive, sums, monitoring_cost=mon_cost,
                c_saved=saved_cost(deficit["shortfall_kwh"], inc.saved_cost_per_kwh),
                theta_red_mean=deficit["theta_red_mean_observed"])
            announce = t_nc + delay_detection
            start = announce + inc.second_event_delay_minutes
            if not incentive.scheduled:
                note = incentive.note
            elif start >= plan.t_end:
                note = (f"the second event would start at {clock(start)}, not before the "
                        f"program ends ({clock(plan.t_end)})")
            else:
                second = (announce, start, plan.t_end)
                t4 = time.perf_counter()
                adaptive = run_adaptive(spark, scenario, second, incentive, chunk_size,
                                        stage("adaptive pass"))
                timings["adaptive_pass_seconds"] = time.perf_counter() - t4
                adaptive_kw = adaptive.loads.group_kw["adaptive"]
                incentive = incentive.with_response(ParticipantSums(
                    sums.count, sums.theta_o_sum, sums.theta_red_sum, sums.u_counts,
                    adaptive.theta_new_sum)).with_lottery(adaptive.winners, adaptive.compliant)
        app_id = spark.sparkContext.applicationId
    finally:
        if own:
            spark.stop()

    group_kw = {**loads.group_kw, "adaptive": adaptive_kw}
    system = {name: kw.sum(axis=0) for name, kw in group_kw.items()}
    summary = _summary(scenario, plan, loads, system, outcome, costs, incentive, second, note,
                       mon, sizes, delay_detection, master or "local[*]", app_id, goal_kwh,
                       expected_kwh, deficit)
    timings["total_seconds"] = time.perf_counter() - started
    summary["timings"] = timings
    if out_dir is not None:
        from drsim.results import RunData, write_run

        data = RunData(
            name=scenario.name, group_names=[g.name for g in scenario.groups],
            group_kw=group_kw, estimate_kw=loads.estimate_kw,
            program=(plan.t_start, plan.t_end), second_event=second,
            t_nc=None if t_nc == NOT_LATCHED else t_nc, test_times=plan.test_times,
            ticks=plan.ticks,
            flagged_fraction={n: _flagged_fraction(plan, mon.user_events, n, sizes)
                              for n in ("expected", "traditional")},
            group_alert_ticks={n: o["alert_ticks"] for n, o in outcome.items()},
            group_latch={n: [None if x == NOT_LATCHED else x for x in o["latch"]]
                         for n, o in outcome.items()},
            thresholds=mon.thresholds, tier_events=_tier_tables(mon),
            summary=summary)
        write_run(data, out_dir, overwrite=overwrite)
    return summary


def _tier_tables(mon) -> dict[str, pd.DataFrame]:
    rows = mon.tier_rows
    group = rows[rows["group"] >= 0]
    util = rows[(rows["group"] < 0) & (rows["kind"] == "alert")]

    def pick(kind: str) -> pd.DataFrame:
        t = group[group["kind"] == kind]
        return pd.DataFrame({"pass": t["pass"].astype(str), "time": t["time"].astype(np.int64),
                             "groupID": t["group"].astype(np.int64),
                             "sumAccLoad": t["load"].astype(np.float64)}).reset_index(drop=True)

    return {"user_events": mon.user_events, "group_alerts": pick("alert"),
            "group_events": pick("event"),
            "utility_alerts": pd.DataFrame({"pass": util["pass"].astype(str),
                                            "time": util["time"].astype(np.int64),
                                            "load": util["load"].astype(np.float64)}
                                           ).reset_index(drop=True)}


def _summary(scenario, plan, loads, system, outcome, costs, incentive, second, note, mon,
             sizes, delay_detection, master, app_id, goal_kwh, expected_kwh, deficit
             ) -> dict[str, Any]:
    start, end = plan.t_start, plan.t_end
    base = system["baseline"]
    reduction = {name: _mwh((base[start:end] - system[name][start:end]).sum())
                 for name in ("expected", "traditional", "adaptive")}
    share = {name: reduction[name] / reduction["expected"] if reduction["expected"] else None
             for name in ("traditional", "adaptive")}
    trad = outcome["traditional"]
    t_nc = trad["t_nc"]
    names = [g.name for g in scenario.groups]
    stops = _stops(plan, trad["latch"], t_nc)
    precision, recall, confusion = _precision_recall(mon.households, plan, "traditional",
                                                     stops)
    whole = np.full(len(stops), plan.t_end - 1)  # had every meter been tested to the end
    precision_all, recall_all, _ = _precision_recall(mon.households, plan, "traditional",
                                                     whole)
    compliant = None
    if t_nc != NOT_LATCHED:
        compliant = sum(1 for x in trad["latch"] if x == NOT_LATCHED or x > t_nc)
    exp_t = outcome["expected"]["t_nc"]
    after = slice(end, min(end + REBOUND_MINUTES, len(base)))
    return {
        "scenario": {"name": scenario.name, "hash": scenario_hash(scenario),
                     "households": loads.households, "ev_households": loads.ev_households,
                     "groups": dict(zip(names, sizes.tolist(), strict=True))},
        "code_version": code_version(),
        "seeds": {"scenario": scenario.seed},
        "reduction_goal_mwh": goal_kwh / 1000.0,
        "reduction_goal": "expected" if scenario.dr_program.reduction_goal_kwh == "expected"
        else "given",
        "reduction_mwh": reduction,
        "reduction_share_of_expected": share,
        "baseline": {**scenario.baseline.model_dump(mode="json"),
                     "expected_reduction_mwh": expected_kwh / 1000.0},
        "prediction": {
            "predicted": t_nc != NOT_LATCHED,
            "utility_noncompliance_time": None if t_nc == NOT_LATCHED else clock(t_nc),
            "detection_delay_minutes": None if t_nc == NOT_LATCHED
            else t_nc - plan.t_first_test,
            "groups_compliant_at_prediction": compliant,
            "group_noncompliance_times": {
                n: None if x == NOT_LATCHED else clock(x)
                for n, x in zip(names, trad["latch"], strict=True)},
            "household_precision": precision,
            "household_recall": recall,
            "household_confusion": confusion,
            "household_precision_whole_program": precision_all,
            "household_recall_whole_program": recall_all,
            "expected_pass_noncompliance_time": None if exp_t == NOT_LATCHED
            else clock(exp_t),
            "expected_pass_group_noncompliance_times": {
                n: None if x == NOT_LATCHED else clock(x)
                for n, x in zip(names, outcome["expected"]["latch"], strict=True)},
            "expected_pass_groups_latched": sum(
                1 for x in outcome["expected"]["latch"] if x != NOT_LATCHED),
            "gamma_user": _gamma_summary(plan),
        },
        "deficit_at_prediction": deficit,
        "second_event": None if second is None else {
            "announced": clock(second[0]), "start": clock(second[1]), "end": clock(second[2]),
            "delay_detection_minutes": delay_detection},
        "second_event_note": note,
        "incentive": None if incentive is None else incentive.as_dict(),
        "peaks": {
            "daily_peak_mw": {n: float(c.max()) / 1000.0 for n, c in system.items()},
            "rebound_peak_mw": {n: float(system[n][after].max()) / 1000.0
                                for n in ("traditional", "adaptive")},
            "rebound_mwh": {n: _mwh(np.clip(system[n][after] - base[after], 0, None).sum())
                            for n in ("traditional", "adaptive")},
        },
        "cost": costs,
        "monitoring": {"test_times": [clock(t) for t in plan.test_times.tolist()],
                       "changes_from_printed_listings": CHANGES,
                       "queries_overridden": sorted(scenario.monitoring.queries)},
        "spark": {"master": master, "app_id": app_id, "partitions": loads.partitions,
                  "tasks": loads.tasks},
        "reference": None if scenario.reference is None
        else scenario.reference.model_dump(mode="json"),
    }


def _gamma_summary(plan: MonitoringPlan) -> dict[str, Any]:
    """How Listing 6.2's threshold was set (the values: thresholds.parquet)."""
    if isinstance(plan.gamma_user, ExpectedShare):
        return plan.gamma_user.model_dump(mode="json")
    return {"method": "constant", "value": plan.gamma_user}
