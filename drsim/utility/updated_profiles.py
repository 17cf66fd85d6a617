"""The profiles the utility publishes while the program runs, for one chunk and for the groups.

:mod:`drsim.utility.profile_updates` is the rule (when, from which readings, which
elements get a new version); this module applies it to the run's estimates
(``monitoring.remote.updates``; docs/decisions.md, "Profiles the utility keeps
updating"):

* per chunk (:func:`chunk_updates`, where the chunk is simulated): each household's
  re-estimated profile is the day-of adjustment of the M&V estimates
  (:func:`drsim.utility.day_of.day_of_adjusted`) with the updates' window and cap, so
  that an error it undoes cancels exactly (Eq. 6.4 compares with ``>``); the versions of
  ``λ[houseID, time]`` whose value changed, and the threshold's replicas' flags under
  profiles re-estimated the same way (:func:`drsim.utility.threshold.replica_flags`);
* for the groups (:func:`gamma_versions`, on the driver): the versions of
  ``γ[groupID, time]`` from the re-estimated replicas' flags.

The re-estimate starts from the M&V estimates, not from what
``baseline.day_of_adjustment`` made of them: with both set to the same window and cap the
update computes the profile already published and publishes nothing (the replicas are not
run again); with another window or cap the update's replaces the adjustment's for the
monitoring that fetches it (OP), never two capped ratios composed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cep_core.remote import Versions
from drsim.scenario import ProfileUpdates
from drsim.utility.day_of import adjustment_minutes, baseline_before_notice, day_of_adjusted
from drsim.utility.monitoring import MonitoringPlan, accumulated_kwh
from drsim.utility.profile_updates import evidence_ends, published, update_times
from drsim.utility.threshold import replica_flags

__all__ = ["ChunkUpdates", "chunk_updates", "gamma_versions", "mv_is_exact", "schedule"]


@dataclass(frozen=True)
class ChunkUpdates:
    """What the utility's updates make of one chunk's profiles.

    Attributes
    ----------
    lam : cep_core.remote.Versions
        The versions of the chunk's ``λ[houseID, time]`` published [kWh].
    flags : numpy.ndarray or None
        (tests,) the threshold's replicas flagged under the re-estimated profiles
        [households]; None when γ reads no replicas or the re-estimate is the published
        profile.
    """

    lam: Versions
    flags: np.ndarray | None


def schedule(plan: MonitoringPlan, cfg: ProfileUpdates, notice: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """Return the update times and their evidence ends (module doc).

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring (test times, δ).
    cfg : drsim.scenario.ProfileUpdates
        ``monitoring.remote.updates``.
    notice : int
        The announcement [minutes since midnight].

    Returns
    -------
    times, ends : numpy.ndarray of int64
        :func:`drsim.utility.profile_updates.update_times` (every δ by default) and
        :func:`drsim.utility.profile_updates.evidence_ends` [minutes since midnight].

    Examples
    --------
    >>> plan = MonitoringPlan(1110, 1140, 1130, 5, 3, 3, 3, 0.5, 0.4, 1, 15, 1)
    >>> times, ends = schedule(plan, ProfileUpdates(every_minutes=30), 1050)
    >>> times.tolist(), ends.tolist()
    ([1050, 1080, 1110], [1050, 1050, 1050])
    """
    every = plan.delta if cfg.every_minutes is None else cfg.every_minutes
    last = int(plan.test_times[-1]) if len(plan.test_times) else notice
    times = update_times(notice, last, every)
    return times, evidence_ends(times, notice)


def mv_is_exact(scenario: Any) -> bool:
    """Return whether the M&V estimates are the simulator's counterfactual without error.

    The readings before the notice then equal the estimated baseline there, every ratio
    is exactly 1 (:func:`drsim.utility.day_of.day_of_ratio`) and the re-estimate is the
    published estimate, for the households and the threshold's replicas alike.
    """
    mv = scenario.baseline
    return mv.method == "same_day" and not mv.error and not mv.error_per_minute


def _published_already(scenario: Any, cfg: ProfileUpdates) -> bool:
    """Whether ``baseline.day_of_adjustment`` already published the update's re-estimate."""
    adjust = scenario.baseline.day_of_adjustment
    return adjust is not None and (adjust.window_minutes, adjust.cap) == \
        (cfg.window_minutes, cfg.cap)


def chunk_updates(plan: MonitoringPlan, cfg: ProfileUpdates, notice: int,
                  result: Any) -> ChunkUpdates:
    """Re-estimate one chunk's profiles as the utility updates them (module doc).

    Every update is at or after the notice, so each reads the ``window_minutes`` before
    the notice (:func:`drsim.utility.profile_updates.evidence_ends`) and the re-estimate
    is computed once.

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan.
    cfg : drsim.scenario.ProfileUpdates
        ``monitoring.remote.updates``.
    notice : int
        The announcement [minutes since midnight].
    result : drsim.pipeline.passes.ChunkResult
        The chunk's simulation: its population, simulator, M&V estimates without error
        and as published, and the runs of its baseline and traditional passes (whose
        loads before the notice are the readings there).

    Returns
    -------
    ChunkUpdates
        The ``λ`` versions and the re-estimated replicas' flags.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.4), §6.2.2
       (Listings 6.1-6.2) and §6.3.4.
    """
    pop, sim = result.population, result.simulator
    times, ends = schedule(plan, cfg, notice)
    table = accumulated_kwh(result.estimate_window_kw["expected"], plan.t_start,
                            plan.test_times)
    if mv_is_exact(pop.scenario) or _published_already(pop.scenario, cfg):
        return ChunkUpdates(published("λ", pop.ids, plan.test_times, times, ends,
                                      lambda end: table, table), None)
    lo, hi = adjustment_minutes(pop.scenario, cfg.window_minutes)
    before = baseline_before_notice(pop, sim, result.runs["baseline"].load(lo, hi),
                                    cfg.window_minutes)
    adjusted = day_of_adjusted(result.estimate_exact, pop,
                               result.runs["traditional"].load(lo, hi), before, cap=cfg.cap)
    new = accumulated_kwh(adjusted.expected_kw, plan.t_start, plan.test_times)
    lam = published("λ", pop.ids, plan.test_times, times, ends, lambda end: new, table)
    policy = plan.threshold
    flags = None if not policy.needs_replicas else replica_flags(
        plan, pop, sim, result.chunk.group, result.estimate_exact, policy.replicas, before,
        cfg.cap)
    return ChunkUpdates(lam, flags)


def gamma_versions(plan: MonitoringPlan, cfg: ProfileUpdates, notice: int,
                   gamma: np.ndarray, updated: np.ndarray | None) -> Versions:
    """Return the versions of ``γ[groupID, time]`` the utility publishes (module doc).

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan.
    cfg : drsim.scenario.ProfileUpdates
        ``monitoring.remote.updates``.
    notice : int
        The announcement [minutes since midnight].
    gamma : numpy.ndarray
        (groups, tests) γ as first published (:class:`drsim.utility.threshold.Thresholds`)
        [1].
    updated : numpy.ndarray or None
        (groups, tests) γ from the re-estimated replicas' flags [1]; None: unchanged.

    Returns
    -------
    cep_core.remote.Versions
        The γ versions published.

    Examples
    --------
    >>> plan = MonitoringPlan(1110, 1140, 1130, 5, 3, 3, 3, 0.5, 0.4, 1, 15, 2)
    >>> g = np.full((2, 2), 0.1)
    >>> v = gamma_versions(plan, ProfileUpdates(), 1050, g, g + [[0.0], [0.05]])
    >>> len(v), v.times.tolist()
    (2, [1050.0, 1050.0])
    """
    times, ends = schedule(plan, cfg, notice)
    new = gamma if updated is None else updated
    return published("γ", np.arange(len(gamma), dtype=np.int64), plan.test_times, times,
                     ends, lambda end: new, gamma)
