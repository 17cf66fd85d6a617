"""Hybrid load shedding at the group leaders (Listing 6.2) and the utility (Listing 6.3).

§6.3.4 bounds the latency of Listings 6.1, 6.2 and 6.3 at 50 % of their unshed latency;
the meter tier's shedding is :mod:`drsim.utility.shedding`. This module is the other two
tiers' (docs/decisions.md, "Load shedding in the monitoring (OP)").

**The devices.** Each group leader is one modelled device, the utility another, served
as the gateways are (:class:`cep_core.shedding.DeviceFleet`: one FIFO server, the backlog
carried over between arrivals). A leader's inputs are its group's user events: those of
test time T arrive at T, in household order; the utility's are the group events, one per
group latched by tick X, arriving at X in group order. Each input costs one unit, and the
rest of a tick's work (the engines' events and partial matches as
:class:`drsim.utility.group_and_utility_tiers.GroupResult` and ``UtilityResult`` count
them, less the inputs) is served after the tick's inputs. An input's latency is its
completion minus its arrival. The per-unit cost makes the unshed run keep the device busy
``utilisation`` of [t_first_test, t_end); the bound is θ = ``bound`` × the unshed run's
latency statistic (``statistic``) on the same inputs. The device's latency does not
delay the tier's outputs: only what is shed changes them.

**What is shed** (§4.2, Hybrid, with :func:`cep_core.shedding.choose_shed_set`). The tier
queries run unchanged on the inputs kept (:func:`run_on_device`: a filter in front of
them). At each arrival the device knows its backlog and the inputs that arrive, so it
knows their latencies unshed; it is overloaded when their statistic exceeds θ
(Definition 4.1), and the violation to cover is the least share of the arrival's inputs
whose shedding brings it within θ (the capacity of Eq. 4.6 on the modelled device,
:func:`cep_core.shedding.keepable`). The
cells of the cost model are (state class, time slice): an input is *above* when the count
of its test time (tick) already exceeds its threshold (γ[group, T] × GroupSize, or
γ_group × GROUPNUM), *below* otherwise; the slice is that of its arrival in ``slices``
equal parts of [t_first_test, t_end). An above input can create nothing (the alert
exists; it changes only sumAccLoad): its contribution is zero and it goes first, as
cep_core's KeyedShedder sheds events that can create nothing first. A below input's
contribution is the estimated probability that the alert it counts towards happens
(:func:`group_contribution`, :func:`utility_contribution`); when the above inputs do not
cover the violation, the below cell is shed in the share the violation still needs (the
last item of the knapsack taken in part: a cell is all the below inputs of one arrival).
Inputs are shed from the end of the arrival (the later households or groups in service
order), so a shed below input means the count of that test (tick) stays at or below its
threshold: that alert is missed, the group's run of consecutive alerts breaks and its
latch (and the utility's prediction) come later. A below cell of zero contribution is
shed whole when the device is overloaded.

**No state shedding here.** The bottom queries hold one run each (a leader's run of
consecutive alerts, the utility's). Its work is served after a tick's inputs, so
dropping it cannot bring an arrival within θ (it only shortens the next one's backlog),
and it would cost the whole run (the latch or the prediction restarts from the next
alert): the state filter of these tiers is not modelled, their runs are never dropped.

**Communication.** A leader's filter is pushed to its gateways, as a gateway's to its
meters: a user event it drops is neither sent nor evaluated; a group event the utility
drops is neither sent nor evaluated (:func:`drsim.pipeline.evaluation.costs`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from drsim.scenario import Shedding
from drsim.utility.features import is_plain_twin
from drsim.utility.group_and_utility_tiers import group_tier, utility_stream, utility_tier
from drsim.utility.leader_carry import LeaderCarry
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan
from drsim.utility.shedding import DeviceSizing, DeviceStats, statistic

__all__ = ["needed_count", "time_slices", "group_contribution", "utility_contribution",
           "predicted_latch", "serve_inputs", "kept_counts", "run_on_device", "TierRun",
           "TierShedding", "UTILITY_DEVICE"]

UTILITY_DEVICE = -1  # the utility's key among the devices' sizes (the tiers' group column)


def needed_count(threshold: np.ndarray) -> np.ndarray:
    """Return the least count that exceeds each threshold (``alertNum > threshold``).

    Parameters
    ----------
    threshold : numpy.ndarray
        γ[group, T] × GroupSize or γ_group × GROUPNUM [households or groups].

    Returns
    -------
    numpy.ndarray
        floor(threshold) + 1 [inputs].

    Examples
    --------
    >>> needed_count(np.array([0.8, 2.0, 1.2])).tolist()
    [1, 3, 2]
    """
    return np.floor(np.asarray(threshold, dtype=np.float64)).astype(np.int64) + 1


def time_slices(plan: MonitoringPlan, times: np.ndarray, slices: int) -> np.ndarray:
    """Return the cost model's time slice of each time (``slices`` equal parts of the window).

    Parameters
    ----------
    plan : MonitoringPlan
        Its t_first_test and t_end bound the window [minutes since midnight].
    times : numpy.ndarray
        Arrival times [minutes since midnight].
    slices : int
        ``monitoring.shedding.slices``.

    Returns
    -------
    numpy.ndarray
        0 .. slices − 1.

    Examples
    --------
    >>> plan = MonitoringPlan(1110, 1230, 1120, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> time_slices(plan, np.array([1120, 1174, 1175, 1229]), 2).tolist()
    [0, 0, 1, 1]
    """
    span = plan.t_end - plan.t_first_test
    at = (np.asarray(times, dtype=np.int64) - plan.t_first_test) * slices // span
    return np.clip(at, 0, slices - 1)


def _alert_chance(size: int, share: np.ndarray, need: np.ndarray) -> np.ndarray:
    """P(Binomial(size, share) ≥ need) per test time."""
    from scipy.stats import binom

    return binom.sf(np.asarray(need) - 1, size, np.clip(share, 0.0, 1.0))


def _per_slice(values: np.ndarray, at: np.ndarray, slices: int) -> np.ndarray:
    """Return the mean of ``values`` in each slice (0 for a slice without any)."""
    total = np.bincount(at, weights=values, minlength=slices)
    count = np.bincount(at, minlength=slices)
    return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def group_contribution(plan: MonitoringPlan, share: np.ndarray, gamma: np.ndarray,
                       size: int, slices: int) -> np.ndarray:
    r"""Return a group leader's contribution of a below-threshold user event per tick.

    The estimated probability that the alert of the event's test time happens, averaged
    over the test times of each time slice (§4.2.3, Eq. 4.3, with the history of §4.3.2):
    with :math:`\hat p_T` the share of the previous day's sample flagged at test T
    (:func:`drsim.utility.shedding_feature.cost_model_rows`) and :math:`k_T` the least
    count above the threshold (:func:`needed_count`),

    .. math::

        \Gamma^+_s = \frac{1}{|T_s|} \sum_{T \in T_s}
                     P\left(\mathrm{Bin}(n, \hat p_T) \ge k_T\right).

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (test times, ticks).
    share : numpy.ndarray
        (tests,) the previous day's share flagged [1].
    gamma : numpy.ndarray
        (tests,) γ[group, T] [1].
    size : int
        GroupSize [households].
    slices : int
        ``monitoring.shedding.slices``.

    Returns
    -------
    numpy.ndarray
        (ticks,) the contribution of the slice of each tick [1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §4.2.3 (Eq. 4.3), §4.3.2 and
       §6.2.2 (Listing 6.2).

    Examples
    --------
    >>> plan = MonitoringPlan(1110, 1130, 1120, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> got = group_contribution(plan, np.array([0.0, 1.0]), np.array([0.5, 0.5]), 4, 2)
    >>> got[[0, 9]].tolist()
    [0.0, 1.0]
    """
    times = plan.test_times
    chance = _alert_chance(size, share, needed_count(np.asarray(gamma) * size))
    per_slice = _per_slice(chance, time_slices(plan, times, slices), slices)
    return per_slice[time_slices(plan, plan.ticks, slices)]


def predicted_latch(plan: MonitoringPlan, share: np.ndarray, gamma: np.ndarray,
                    size: int) -> int:
    """Return the tick a group latches at by the previous day's shares, or NOT_LATCHED.

    The group is predicted to alert at test T when its alert is more likely than not
    (:func:`group_contribution`'s probability above 1/2); the alert holds until the next
    test, and the group latches at its (m_group + 1)-th consecutive alerting tick
    (Listing 6.2 bottom).

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (test times, ticks, m_group).
    share, gamma : numpy.ndarray
        (tests,) the previous day's share flagged and γ[group, T] [1].
    size : int
        GroupSize [households].

    Returns
    -------
    int
        The tick [minutes since midnight], or NOT_LATCHED.

    Examples
    --------
    >>> plan = MonitoringPlan(1110, 1130, 1120, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> predicted_latch(plan, np.array([0.0, 1.0]), np.array([0.5, 0.5]), 4)
    1126
    """
    chance = _alert_chance(size, share, needed_count(np.asarray(gamma) * size))
    at = np.searchsorted(plan.test_times, plan.ticks, side="right") - 1
    alerting = chance[at] > 0.5
    i = np.arange(len(alerting))
    last_gap = np.maximum.accumulate(np.where(alerting, -1, i))  # the latest quiet tick
    run = np.where(alerting, i - last_gap, 0)  # consecutive alerting ticks so far
    hit = np.flatnonzero(run > plan.m_group)
    return int(plan.ticks[hit[0]]) if hit.size else NOT_LATCHED


def utility_contribution(plan: MonitoringPlan, latches: Sequence[int], slices: int
                         ) -> np.ndarray:
    r"""Return the utility's contribution of a below-threshold group event per tick.

    The share of the ticks of each slice at which the groups' predicted latches
    (:func:`predicted_latch`) number more than γ_group × GROUPNUM: the estimated
    probability that the utility's alert, which a below-threshold group event counts
    towards, happens (§4.2.3, Eq. 4.3).

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (ticks, γ_group, GROUPNUM).
    latches : sequence of int
        Per group, its predicted latch or NOT_LATCHED [minutes since midnight].
    slices : int
        ``monitoring.shedding.slices``.

    Returns
    -------
    numpy.ndarray
        (ticks,) the contribution of the slice of each tick [1].

    Examples
    --------
    >>> plan = MonitoringPlan(1110, 1130, 1120, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 2)
    >>> utility_contribution(plan, [1121, 1125], 2)[[0, 9]].tolist()
    [0.8, 1.0]
    """
    ticks = plan.ticks
    at = np.array([t for t in latches if t != NOT_LATCHED], dtype=np.int64)
    count = (at[None, :] <= ticks[:, None]).sum(axis=1)
    alerting = (count > plan.gamma_group * plan.n_groups).astype(np.float64)
    sl = time_slices(plan, ticks, slices)
    return _per_slice(alerting, sl, slices)[sl]


def serve_inputs(ticks: np.ndarray, counts: np.ndarray, extra: np.ndarray,
                 unit_cost: float) -> tuple[np.ndarray, float]:
    """Serve a tier's inputs on its device (module doc): their latencies and busy time.

    Parameters
    ----------
    ticks : numpy.ndarray
        The arrival times [minutes since midnight].
    counts : numpy.ndarray
        (ticks,) inputs arriving at each tick, one cost unit each [inputs].
    extra : numpy.ndarray
        (ticks,) the rest of each tick's work, served after its inputs [cost units].
    unit_cost : float
        The device's cost per unit [minutes per cost unit].

    Returns
    -------
    latencies : numpy.ndarray
        Per input, in arrival order [minutes].
    busy : float
        The device's busy time [minutes].

    Examples
    --------
    >>> lat, busy = serve_inputs(np.array([0, 1]), np.array([2, 1]), np.array([1, 0]), 0.5)
    >>> lat.tolist(), busy
    ([0.5, 1.0, 1.0], 2.0)

    Notes
    -----
    One FIFO server (:class:`cep_core.shedding.DeviceFleet`'s, §2.3 Definition 2.9 of
    the dissertation): a tick's inputs start when the device is free, or at the tick,
    and each costs ``unit_cost``; the tick's other work follows them. Computed with
    arrays, in the order and with the operations the device's own serving uses, so the
    figures are its own to the last bit; only the device's free time is carried from
    tick to tick in a loop.
    """
    counts = np.asarray(counts, dtype=np.int64)
    extra = np.asarray(extra, dtype=np.float64)
    active = counts + extra > 0
    t, n, e = np.asarray(ticks, dtype=np.float64)[active], counts[active], extra[active]
    if not len(t):
        return np.zeros(0), 0.0
    within = np.cumsum(np.full(max(int(n.max()), 1), 1.0) * unit_cost)  # i + 1 inputs [min]
    tail = np.where(e > 0, e * unit_cost, 0.0)  # the rest of the tick, after its inputs
    last = np.where(n > 0, within[np.maximum(n, 1) - 1], 0.0)
    total = np.where(e > 0, last + tail, last)  # each tick's work [minutes]
    start = np.empty(len(t))
    free = -np.inf
    for k, (tk, wk) in enumerate(zip(t.tolist(), total.tolist(), strict=True)):
        start[k] = max(tk, free)
        free = start[k] + wk
    rank = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    latencies = (np.repeat(start, n) + within[rank]) - np.repeat(t, n)
    # busy: every cost added in service order, as the device adds them
    size = n + (e > 0)
    slot = np.cumsum(size) - size  # each tick's first cost
    costs = np.empty(int(size.sum()))
    costs[np.repeat(slot, n) + rank] = 1.0 * unit_cost
    costs[(slot + n)[e > 0]] = tail[e > 0]
    return latencies, float(np.cumsum(costs)[-1])


def kept_counts(ticks: np.ndarray, counts: np.ndarray, extra: np.ndarray, unit_cost: float,
                bound: float, needed: np.ndarray, contribution: np.ndarray,
                kind: str = "avg") -> np.ndarray:
    """Return how many of each tick's inputs the Hybrid filter keeps (module doc).

    Parameters
    ----------
    ticks : numpy.ndarray
        The arrival times [minutes since midnight].
    counts : numpy.ndarray
        (ticks,) inputs arriving at each tick [inputs].
    extra : numpy.ndarray
        (ticks,) the rest of each tick's work (estimated from the unshed run) [cost units].
    unit_cost : float
        The device's cost per unit [minutes per cost unit].
    bound : float
        θ [minutes].
    needed : numpy.ndarray
        (ticks,) the least count above the tick's threshold (:func:`needed_count`).
    contribution : numpy.ndarray
        (ticks,) a below input's contribution in the tick's slice [1].
    kind : str
        The statistic: "avg" or "p95".

    Returns
    -------
    numpy.ndarray
        (ticks,) inputs kept: the first ones of each tick in service order [inputs].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §4.2 (Definition 4.1,
       Eq. 4.6, Eq. 4.8).

    Examples
    --------
    Four inputs a tick, an alert at the third: unshed their average latency is 2.5
    units; within 1.5 units only two are kept. Above the threshold the fourth goes
    first; the below cell covers the rest unless nothing is above.

    >>> ticks = np.array([0, 10])
    >>> kept_counts(ticks, np.array([4, 4]), np.zeros(2), 1.0, 1.5, np.array([3, 3]),
    ...             np.array([0.9, 0.9])).tolist()
    [2, 2]
    >>> kept_counts(ticks, np.array([4, 4]), np.zeros(2), 1.0, 2.0, np.array([3, 3]),
    ...             np.array([0.9, 0.0])).tolist()
    [3, 0]
    """
    from cep_core.shedding import choose_shed_set, keepable

    free_at = -np.inf
    kept = np.asarray(counts, dtype=np.int64).copy()
    for i, (t, n) in enumerate(zip(ticks.tolist(), kept.tolist(), strict=True)):
        backlog = max(0.0, free_at - t)
        if n:
            keep = keepable(backlog, unit_cost, n, bound, kind)
            if keep < n:  # overloaded (Definition 4.1): cover n − keep of n (Eq. 4.6)
                above, below = max(0, n - int(needed[i])), min(n, int(needed[i]))
                cap = (n - keep - 0.5) / n
                chosen = choose_shed_set([0.0, below * contribution[i]], [above, below],
                                         cap, free=[True, contribution[i] <= 0])
                shed = above if 0 in chosen else 0
                if 1 in chosen:
                    shed = n if contribution[i] <= 0 else max(shed, n - keep)
                kept[i] = n - max(shed, 0)
        work = kept[i] + max(float(extra[i]), 0.0)
        if work > 0:
            free_at = max(free_at, t) + work * unit_cost
    return kept


@dataclass
class TierRun:
    """A tier's run on its device.

    Attributes
    ----------
    result : object
        The tier's result on the inputs kept (GroupResult or UtilityResult).
    stats : drsim.utility.shedding.DeviceStats
        What the device did.
    keep : numpy.ndarray
        Per input, whether it was kept.
    sizing : drsim.utility.shedding.DeviceSizing or None
        The device's cost per unit and bound (None: unbounded).
    """

    result: Any
    stats: DeviceStats
    keep: np.ndarray
    sizing: DeviceSizing | None = None


def run_on_device(plan: MonitoringPlan, cfg: Shedding, arrivals: np.ndarray,
                  run: Callable[[np.ndarray], tuple[Any, np.ndarray]],
                  needed: np.ndarray | None = None,
                  contribution: np.ndarray | None = None,
                  sizing: DeviceSizing | None = None) -> TierRun:
    r"""Run a tier on its modelled device, unshed or under its bound (module doc).

    The unshed run sizes the device: its work W makes the device busy ``utilisation``
    u of the window, and its inputs' latency statistic ℓ sets the bound,

    .. math::

        c = \frac{u \, (t_{end} - t_{first\_test})}{W}, \qquad
        \theta = b \cdot \ell^{unshed}.

    With ``needed`` the tier sheds (:func:`kept_counts`, with the rest of each tick's
    work taken from the unshed run), runs again on the inputs kept and serves them
    with the work that run did.

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (ticks, window).
    cfg : drsim.scenario.Shedding
        ``bound``, ``statistic``, ``utilisation``.
    arrivals : numpy.ndarray
        Per input, in service order, its arrival tick [minutes since midnight].
    run : callable
        ``run(keep)``: the tier's result on the inputs kept (a boolean mask) and its
        work per tick (processed + partial matches, aligned with ``plan.ticks``).
    needed, contribution : numpy.ndarray, optional
        (ticks,) the least count above each tick's threshold and a below input's
        contribution; None: the tier runs unshed.
    sizing : drsim.utility.shedding.DeviceSizing, optional
        The device's cost per unit and bound, sized before on the unshed run of the whole
        window (a stream's, which runs the tier over the inputs so far: each tick's kept
        inputs then depend on the ticks before it only); None: sized here.

    Returns
    -------
    TierRun
        The result, the device's figures and the mask.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §4.2 and §6.3.4.

    Examples
    --------
    A tier that works one unit per input, four inputs at each of two ticks; under a
    bound of 0.5 × its unshed latency (2.5 units on average) it keeps one of each.

    >>> from drsim.scenario import Shedding
    >>> plan = MonitoringPlan(1110, 1130, 1120, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> arrivals = np.repeat([1120, 1125], 4)
    >>> def run(keep):
    ...     return None, np.bincount(arrivals[keep] - 1120, minlength=10)
    >>> shed = run_on_device(plan, Shedding(), arrivals, run, np.full(10, 3),
    ...                      np.full(10, 0.5))
    >>> shed.keep.astype(int).tolist(), shed.stats.inputs_shed
    ([1, 0, 0, 0, 1, 0, 0, 0], 6)
    """
    ticks = plan.ticks
    span = float(plan.t_end - plan.t_first_test)
    at = np.searchsorted(ticks, arrivals)
    counts = np.bincount(at, minlength=len(ticks))
    everything = np.ones(len(arrivals), dtype=bool)
    result, work = run(everything)
    extra = np.maximum(np.asarray(work, dtype=np.int64) - counts, 0)
    unit_cost = cfg.utilisation * span / max(int(np.sum(work)), 1) if sizing is None \
        else sizing.unit_cost[0]
    latencies, busy = serve_inputs(ticks, counts, extra, unit_cost)
    unshed = (latencies, busy, int(np.sum(work)))
    if needed is None:
        return TierRun(result, DeviceStats.of_device(len(arrivals), 0, *unshed, span,
                                                     unshed[0]), everything,
                       DeviceSizing.of(unit_cost))
    bound = cfg.bound * statistic(latencies, cfg.statistic) if sizing is None \
        else sizing.bound[0]
    kept = kept_counts(ticks, counts, extra, unit_cost, bound, needed, contribution,
                       cfg.statistic)
    first = np.searchsorted(at, at, side="left")
    keep = (np.arange(len(arrivals)) - first) < kept[at]
    result, work = run(keep)
    extra = np.maximum(np.asarray(work, dtype=np.int64) - kept, 0)
    latencies, busy = serve_inputs(ticks, kept, extra, unit_cost)
    stats = DeviceStats.of_device(len(arrivals), int((~keep).sum()), latencies, busy,
                                  int(np.sum(work)), span, unshed[0], bound)
    return TierRun(result, stats, keep, DeviceSizing.of(unit_cost, bound))


def _shed_here(cfg: Shedding, tier: str, name: str) -> bool:
    """Whether ``tier`` sheds on pass ``name`` (never on a BL twin)."""
    return tier in cfg.tiers and not is_plain_twin(name)


@dataclass(frozen=True)
class TierShedding:
    """The shedding of a run's group leaders and utility (module doc).

    What :class:`drsim.utility.shedding_feature.LoadShedding` gives
    :func:`drsim.pipeline.tasks.group_leader` and :func:`drsim.pipeline.tasks.utility`;
    picklable. On a pass's BL twin (:func:`drsim.utility.features.plain_twin`) and for a
    tier not in ``cfg.tiers`` the tier runs unshed on its device.

    Attributes
    ----------
    cfg : drsim.scenario.Shedding
        ``monitoring.shedding``.
    shares : tuple of tuple of float
        Per group, per test time, the share of the previous day's sample flagged by the
        meter tier (:func:`drsim.utility.shedding_feature.cost_model_rows`) [1].
    sizes : mapping of (str, int) to drsim.utility.shedding.DeviceSizing
        (pass, group; the utility's: -1) -> the device's sizing made before (a stream's,
        docs/streaming.md); a device not in it is sized on its own unshed run.
    """

    cfg: Shedding
    shares: tuple[tuple[float, ...], ...]
    sizes: dict[tuple[str, int], DeviceSizing] = field(default_factory=dict)

    def group(self, plan: MonitoringPlan, name: str, group: int, size: int,
              events: pd.DataFrame, gamma: dict[tuple[int, int], float],
              shift: np.ndarray | None = None, carry: LeaderCarry | None = None) -> TierRun:
        """Run Listing 6.2 at the leader of ``group`` on its device.

        Parameters
        ----------
        plan : MonitoringPlan
            The monitoring.
        name : str
            The monitored pass.
        group, size : int
            The group and GroupSize [households].
        events : pandas.DataFrame
            Its user events in (time, houseID) order, as
            :func:`drsim.utility.group_and_utility_tiers.group_tier` reads them.
        gamma : dict of (int, int) to float
            γ[groupID, time] [1].
        shift : numpy.ndarray, optional
            As :func:`~drsim.utility.group_and_utility_tiers.group_tier`'s.
        carry : drsim.utility.leader_carry.LeaderCarry, optional
            A stream's runs of the leader kept between micro-batches: the unshed run's
            and the run's on the inputs kept, in the order :func:`run_on_device` makes
            them.

        Returns
        -------
        TierRun
            Its :class:`~drsim.utility.group_and_utility_tiers.GroupResult`, device
            figures and which user events it kept.
        """
        carried = iter(carry.runs) if carry is not None else None

        def run(keep: np.ndarray) -> tuple[Any, np.ndarray]:
            g = group_tier(plan, group, size, events[keep], gamma, shift,
                           None if carried is None else next(carried))
            return g, g.processed + g.partial_matches

        arrivals = events["time"].to_numpy(np.int64)
        sizing = self.sizes.get((name, group))
        if not _shed_here(self.cfg, "group", name):
            return run_on_device(plan, self.cfg, arrivals, run, sizing=sizing)
        gammas = self._gammas(plan, group, gamma)
        needed = needed_count(gammas * size)
        at = np.clip(np.searchsorted(plan.test_times, plan.ticks), 0, len(gammas) - 1)
        contribution = group_contribution(plan, np.asarray(self.shares[group]), gammas,
                                          size, self.cfg.slices)
        return run_on_device(plan, self.cfg, arrivals, run, needed[at], contribution, sizing)

    def forecast(self, plan: MonitoringPlan, group: int, size: int,
                 gamma: dict[tuple[int, int], float]) -> int:
        """Return the group's latch predicted from the previous day (:func:`predicted_latch`).

        Parameters
        ----------
        plan : MonitoringPlan
            The monitoring.
        group, size : int
            The group and GroupSize [households].
        gamma : dict of (int, int) to float
            γ[groupID, time] [1].

        Returns
        -------
        int
            The tick, or NOT_LATCHED [minutes since midnight].
        """
        return predicted_latch(plan, np.asarray(self.shares[group]),
                               self._gammas(plan, group, gamma), size)

    @staticmethod
    def _gammas(plan: MonitoringPlan, group: int, gamma: dict[tuple[int, int], float]
                ) -> np.ndarray:
        return np.array([gamma[(group, int(t))] for t in plan.test_times], dtype=np.float64)

    def utility(self, plan: MonitoringPlan, name: str, latches: dict[int, int],
                latch_loads: dict[int, float], forecasts: Sequence[int],
                carry: LeaderCarry | None = None) -> TierRun:
        """Run Listing 6.3 at the utility on its device.

        Parameters
        ----------
        plan : MonitoringPlan
            The monitoring.
        name : str
            The monitored pass.
        latches, latch_loads : dict
            As :func:`~drsim.utility.group_and_utility_tiers.utility_tier`'s.
        forecasts : sequence of int
            Per group, its latch predicted by its leader (:meth:`forecast`).
        carry : drsim.utility.leader_carry.LeaderCarry, optional
            A stream's runs of the utility kept between micro-batches
            (:meth:`~drsim.utility.leader_carry.LeaderCarry.at_utility`), as
            :meth:`group`'s.

        Returns
        -------
        TierRun
            Its :class:`~drsim.utility.group_and_utility_tiers.UtilityResult`, device
            figures and which events of
            :func:`~drsim.utility.group_and_utility_tiers.utility_stream` it kept.
        """
        carried = iter(carry.runs) if carry is not None else None

        def run(keep: np.ndarray) -> tuple[Any, np.ndarray]:
            u = utility_tier(plan, latches, latch_loads, keep,
                             None if carried is None else next(carried))
            return u, u.processed + u.partial_matches

        arrivals = utility_stream(plan, latches, latch_loads)["time"].to_numpy(np.int64)
        sizing = self.sizes.get((name, UTILITY_DEVICE))
        if not _shed_here(self.cfg, "utility", name):
            return run_on_device(plan, self.cfg, arrivals, run, sizing=sizing)
        needed = np.full(len(plan.ticks), needed_count(plan.gamma_group * plan.n_groups))
        contribution = utility_contribution(plan, forecasts, self.cfg.slices)
        return run_on_device(plan, self.cfg, arrivals, run, needed, contribution, sizing)
