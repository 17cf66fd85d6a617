"""γ[groupID, time]: Listing 6.2's threshold per group and test time.

docs/model.md, "The threshold"; docs/decisions.md, "The group threshold from the expected
response".

Listing 6.2 (dissertation §6.2.2) alerts a group when more than γ_user of its households
are flagged by the meter query (Listing 6.1); Table 6.2 does not give γ_user. A household
can fail Eq. 6.4 at m_user + 1 consecutive tests by chance even when it responds exactly
as expected, and the share that does grows through the event (a run, once started, lasts
while the household's cumulative load stays above its cumulative P̂). A constant ratio
cannot follow it, so the utility may instead set, per group g and test time t,

    γ[g, t] = p̂[g, t] + z · sqrt(p̂ (1 − p̂) (1 + 1/R) / N_g)

where p̂ is its estimate of the share flagged under the expected response and N_g the
group's size. p̂ comes from R replicas of the follow-through decisions per household over
the schedule its M&V method assumes (:func:`drsim.utility.baseline.expected_replica`), each tested
by the meter query against P̂ with the replica's own M&V error: the evaluated day's
decisions are never used. ``(1 + 1/R)`` makes z standard errors of the difference
between the group's realised share and the estimate (the variance of a share of N_g
households plus that of the estimate from R·N_g household replicas), so at each test an
expected group alerts with probability about Φ(−z). p̂ is Laplace's rule of succession,
(x + 1)/(n + 2) of x flagged among n = R·N_g household replicas, so that a share never
seen in the replicas still has a standard error.

A constant γ_user (as printed) is the table with the same value everywhere. The policies
and their formulas are in :mod:`drsim.utility.threshold_policy`; this module counts the
replicas' flags and builds the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drsim.household.population import Population
from drsim.household.sim import ChunkSimulator
from drsim.utility.baseline import Estimates, expected_replica, with_mv_error
from drsim.utility.day_of import day_of_adjusted
from drsim.utility.monitoring import MonitoringPlan, accumulated_kwh, meter_tier
from drsim.utility.reading_slots import reading_minutes, slot_of
from drsim.utility.readings import lost_readings
from drsim.utility.threshold_policy import (
    ThresholdPolicy,
    expected_share,
    threshold,
)

__all__ = ["Thresholds", "expected_share", "replica_flags", "threshold"]


def replica_flags(plan: MonitoringPlan, pop: Population, sim: ChunkSimulator, group: int,
                  exact: Estimates, replicas: int, before: Estimates | None = None,
                  cap: float | None = None) -> np.ndarray:
    """Count the households the meter query flags under replicas of the expected response.

    At each test time, the households flagged by the meter query (Listing 6.1, Eq. 6.4
    tested against P̂), summed over ``replicas`` replicas of the expected response
    (:func:`drsim.utility.baseline.expected_replica`), each with its own M&V error. With a
    day-of adjustment (``before``), each replica's estimates are adjusted from the
    replica's own readings before the notice, as the utility adjusts the day's
    (:func:`drsim.utility.day_of.day_of_adjusted`). The counts x are what p̂ of
    :func:`expected_share` is estimated from (drsim's reading: docs/decisions.md, "The
    group threshold from the expected response").

    The replicas run as one stream: replica r's households are keyed by their place in the
    chunk plus (r − 1)·n (n the chunk's households, so the keys are distinct and dense), so each
    keeps its own run of Listing 6.1 and the engine's fixed cost per test time is paid
    once. With lost readings (``meters.reading_loss``) each replica's meters lose readings
    under the same model with draws of their own (keyed by ``houseID + r·N``, N the
    scenario's households: the same whatever the chunk), and
    the same meter query (exact or approximate) runs over what arrives, so γ accounts for
    loss (docs/decisions.md, "Lost meter readings").

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan (test times, queries, reading interval).
    pop : drsim.household.population.Population
        The chunk's households.
    sim : drsim.household.sim.ChunkSimulator
        The chunk's simulator of the evaluated day.
    group : int
        The chunk's group.
    exact : Estimates
        The M&V method's B and P̂ of the chunk without M&V error, over the program [kW].
    replicas : int
        Replicas per household R [1].
    before : Estimates, optional
        The estimates without error over the minutes a day-of adjustment reads
        (:func:`drsim.utility.day_of.baseline_before_notice`) [kW]; None: no
        adjustment.

    Returns
    -------
    numpy.ndarray
        Household replicas flagged at each test time, shape (tests,) [households].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.4) and
       §6.2.2 (Listings 6.1-6.2).

    Examples
    --------
    Twenty households, two replicas each, tested every 5 minutes from 18:50:

    >>> from drsim.household.sim import ChunkSimulator
    >>> from drsim.scenario import Scenario
    >>> from drsim.utility.baseline import estimate_exact
    >>> s = Scenario(name="doc", seed=7, households=20, groups=[{"name": "g", "size": 20}])
    >>> plan = MonitoringPlan.of(s)
    >>> pop = Population(s, 0, 20)
    >>> sim = ChunkSimulator(pop)
    >>> exact = estimate_exact(pop, plan.t_start, plan.t_end, sim)
    >>> replica_flags(plan, pop, sim, 0, exact, 2).tolist()
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2]
    """
    times = plan.test_times
    acc, expected, keys = [], [], []
    for r in range(1, replicas + 1):
        run = expected_replica(pop, sim, r)
        acc.append(accumulated_kwh(run.load(exact.lo, exact.hi), exact.lo, times))
        est = with_mv_error(exact, pop, replica=r) if before is None else \
            day_of_adjusted(exact, pop, run.load(before.lo, before.hi), before, replica=r,
                            cap=cap)
        expected.append(accumulated_kwh(est.expected_kw, exact.lo, times))
        keys.append(np.asarray(pop.ids, dtype=np.int64) + r * pop.scenario.households)
    if not keys:
        return np.zeros(len(times), dtype=np.int64)
    every = np.concatenate(keys)
    local = np.arange(len(every), dtype=np.int64)  # replica r, household i: (r − 1)·n + i
    loss, lost = pop.scenario.meters.reading_loss, None
    if loss is not None and loss.active:
        lost = lost_readings(loss, pop.scenario.seed, every,
                             reading_minutes(plan.t_start, plan.t_end, plan.reading))
        lost = lost[:, slot_of(times, plan.t_start, plan.reading)]
    m = meter_tier(plan, local, group, np.concatenate(acc), np.concatenate(expected),
                   lost=lost, streams=replicas)
    return m.outputs


@dataclass(frozen=True)
class Thresholds:
    """γ per group and test time, and what it was made from (for reports and plots).

    Attributes
    ----------
    test_times : numpy.ndarray
        The test times, shape (tests,) [minutes since midnight].
    gamma : numpy.ndarray
        γ[groupID, time], shape (groups, tests), aligned with ``test_times`` [1].
    share : numpy.ndarray or None
        p̂, the estimated share flagged under the expected response, same shape [1];
        None for a constant γ_user.
    policy : drsim.utility.threshold_policy.ThresholdPolicy or None
        The policy that set γ; None when γ was read from a thresholds file.
    """

    test_times: np.ndarray
    gamma: np.ndarray
    share: np.ndarray | None = None
    policy: ThresholdPolicy | None = None

    @classmethod
    def of(cls, plan: MonitoringPlan, sizes: np.ndarray, flagged: np.ndarray | None = None
           ) -> Thresholds:
        """Build the plan's thresholds: constant, or from the replicas' ``flagged`` counts.

        Parameters
        ----------
        plan : drsim.utility.monitoring.MonitoringPlan
            The monitoring plan (its ``gamma_user`` and test times).
        sizes : numpy.ndarray
            Households per group N_g, shape (groups,) [households].
        flagged : numpy.ndarray, optional
            Household replicas flagged (:func:`replica_flags`), shape (groups, tests),
            summed over the chunks of each group [households]; needed when γ_user is
            estimated from the expected response.

        Returns
        -------
        Thresholds
            γ per group and test time.

        Raises
        ------
        ValueError
            If γ_user is estimated and ``flagged`` is None.

        Examples
        --------
        A constant γ_user, as printed in Listing 6.2:

        >>> from drsim.scenario import Scenario
        >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}],
        ...              monitoring={"gamma_user": 0.05})
        >>> t = Thresholds.of(MonitoringPlan.of(s), np.array([3]))
        >>> t.gamma.shape, float(t.gamma.max()), t.share is None
        ((1, 20), 0.05, True)
        """
        policy = plan.threshold
        gamma, share = policy.thresholds(sizes, len(plan.test_times), flagged)
        return cls(plan.test_times, gamma, share, policy)

    def table(self, group: int) -> dict[tuple[int, int], float]:
        """Return the lookup ``γ[groupID, time]`` of one group's leader.

        Parameters
        ----------
        group : int
            The group.

        Returns
        -------
        dict
            γ [1] by (group, test time [minutes since midnight]).
        """
        return {(group, int(t)): float(g)
                for t, g in zip(self.test_times, self.gamma[group], strict=True)}
