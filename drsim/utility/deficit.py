"""What the utility knows of the first event's deficit when it predicts non-compliance.

At t_nc the utility plans the second event (§6.2.3, Eq. 6.5-6.8) from what its meters
have reported so far, not from the simulation's inputs (docs/decisions.md, "What the
utility knows at the prediction"). Each group's meters read every
``reading`` minutes until the group is latched, then at the settlement rate (§6.2.2), so
a group's cumulative energy is known up to its last reading at or before t_nc
(:func:`last_readings`). Against the utility's estimates B̂ and P̂ (drsim.utility.baseline) that
gives the reduction realised so far and the reduction expected so far; their ratio ρ is
the share of the expected response delivered (:func:`reduction_so_far`). Since the
expected reduction of a household grows with its follow-through (B − P̂ = θ_o·(B − F)
with the same-day estimates), the utility reads

    θ̄_red ≈ ρ · θ̄_o                                   (:func:`observed_follow_through`)

and projects the first event's reduction as ρ times its estimated expected reduction,
the shortfall against the goal being what the second event is to recover (C_saved of
Eq. 6.5, :func:`shortfall_kwh`).

With lost readings (``meters.reading_loss``) a household's energy up to its group's last
reading is known only when that reading arrived. The utility then reads each group's
realised reduction from the households it sees and scales it to the group by their
expected reduction (a ratio estimator, :func:`reduction_seen`; docs/decisions.md, "Lost
meter readings"): the seen households' share of their expected reduction, times the
group's expected reduction so far.
"""

from __future__ import annotations

import numpy as np

__all__ = ["expected_reduction_kwh", "last_readings", "observed_follow_through",
           "reduction_goal_kwh", "reduction_so_far", "reduction_seen", "shortfall_kwh"]


def expected_reduction_kwh(baseline_kw: np.ndarray, expected_kw: np.ndarray, t_start: int,
                           t_end: int) -> float:
    """The utility's estimate of the complete response over the program, Σ (B̂ − P̂), kWh.

    Parameters
    ----------
    baseline_kw, expected_kw : (minutes of the day,) B̂ and P̂ summed over the
        participants [kW]
    t_start, t_end : the program [minutes since midnight]

    Examples
    --------
    >>> expected_reduction_kwh(np.full(1440, 10.0), np.full(1440, 7.0), 1110, 1230)
    6.0
    """
    window = slice(t_start, t_end)
    return float((baseline_kw[window] - expected_kw[window]).sum()) / 60.0


def reduction_goal_kwh(goal: float | str, expected_kwh: float) -> float:
    """λ of Eq. 6.1 in kWh: a given goal, or for ``"expected"`` the utility's estimate of
    the complete response ``expected_kwh`` (:func:`expected_reduction_kwh`), as in the
    dissertation, whose goal equals its expected reduction (Table 6.2, §6.3.2)."""
    return float(expected_kwh) if goal == "expected" else float(goal)


def last_readings(t_start: int, t_nc: int, latch: np.ndarray, reading: int,
                  settlement: int) -> np.ndarray:
    """Per group, the minute of its last meter reading at or before ``t_nc``.

    Readings fall at ``t_start + k·reading`` until the group's latch and at
    ``latch + k·settlement`` after it (§6.2.2); a group not latched before t_nc (``latch``
    < 0 for never) is read at the monitoring rate throughout.

    Parameters
    ----------
    t_start, t_nc : program start and prediction [minutes since midnight]
    latch : (groups,) latch minute of each group, negative for none
    reading, settlement : reading intervals before and after a latch [minutes]

    Examples
    --------
    >>> last_readings(1110, 1151, np.array([-1, 1148, 1120]), 1, 15)
    array([1151, 1148, 1150])
    """
    latch = np.asarray(latch, dtype=np.int64)
    fast = t_start + (t_nc - t_start) // reading * reading
    latched = (latch >= 0) & (latch < t_nc)
    at = np.where(latched, latch, t_start)
    slow = at + (t_nc - at) // settlement * settlement
    return np.where(latched, slow, fast)


def reduction_so_far(load_kw: np.ndarray, baseline_kw: np.ndarray, expected_kw: np.ndarray,
                     t_start: int, known: np.ndarray) -> tuple[float, float]:
    """(realised, expected) reduction in kWh from ``t_start`` up to (not including) each
    group's ``known`` minute, summed over the groups: Σ (B̂ − P) and Σ (B̂ − P̂).

    Parameters
    ----------
    load_kw, baseline_kw, expected_kw : (groups, minutes of the day) the metered load P and
        the utility's estimates B̂ and P̂, summed over each group's households [kW]
    t_start : program start [minutes since midnight]
    known : (groups,) minute up to which each group's energy is known

    Examples
    --------
    >>> p, b, e = np.full((1, 1440), 8.0), np.full((1, 1440), 10.0), np.full((1, 1440), 6.0)
    >>> reduction_so_far(p, b, e, 1110, np.array([1140]))
    (1.0, 2.0)
    """
    minutes = np.arange(load_kw.shape[1])[None, :]
    inside = (minutes >= t_start) & (minutes < np.asarray(known)[:, None])
    realised = float(np.where(inside, baseline_kw - load_kw, 0.0).sum()) / 60.0
    expected = float(np.where(inside, baseline_kw - expected_kw, 0.0).sum()) / 60.0
    return realised, expected


def observed_follow_through(theta_o_mean: float, realised_kwh: float,
                            expected_kwh: float) -> float:
    """θ̄_red ≈ ρ·θ̄_o with ρ = realised / expected reduction so far, within [0, 1]; θ̄_o
    itself when nothing was expected yet (no information).

    Examples
    --------
    >>> observed_follow_through(0.45, 30.0, 50.0)
    0.27
    """
    if expected_kwh <= 0.0:
        return float(theta_o_mean)
    return float(np.clip(theta_o_mean * realised_kwh / expected_kwh, 0.0, 1.0))


def shortfall_kwh(goal_kwh: float, expected_total_kwh: float, realised_kwh: float,
                  expected_kwh: float) -> float:
    """The first event's projected shortfall against the goal: ``max(0, goal − ρ·E)`` with
    E the estimated expected reduction of the whole program and ρ = realised / expected
    reduction so far (1 when nothing was expected yet).

    Examples
    --------
    >>> shortfall_kwh(100.0, 100.0, 30.0, 50.0)
    40.0
    """
    share = realised_kwh / expected_kwh if expected_kwh > 0.0 else 1.0
    return max(0.0, float(goal_kwh) - share * float(expected_total_kwh))


def reduction_seen(seen: np.ndarray, expected_group_kwh: np.ndarray, sizes: np.ndarray,
                   t_start: int, known: np.ndarray) -> tuple[float, float, np.ndarray]:
    """(realised, expected) reduction so far in kWh, summed over the groups, when only
    some readings arrived, and (groups,) the households seen.

    For group g with known minute k_g: of the households whose reading at k_g arrived
    (n_g), the realised reduction R_g and expected reduction X_g up to k_g; the group's
    expected reduction up to k_g over all its households is E_g (the utility's estimates
    need no reading). The group's realised reduction is read as (R_g / X_g)·E_g, or, when
    its seen households expected nothing yet, R_g·N_g / n_g; a group with no household
    seen adds to neither sum (the others' share stands for it).

    Parameters
    ----------
    seen : (groups, 3, program minutes) per minute from ``t_start``: households whose
        reading there arrived, and their Σ (B̂ − P) and Σ (B̂ − P̂) before it [whole
        µkW·min] (drsim.pipeline.tasks.seen_reduction)
    expected_group_kwh : (groups,) E_g [kWh]
    sizes : (groups,) households per group N_g
    t_start : program start [minutes since midnight]
    known : (groups,) minute of each group's last reading at or before t_nc

    Examples
    --------
    >>> seen = np.zeros((2, 3, 60))
    >>> seen[0, :, 30] = [90, 60e6 * 3.0, 60e6 * 6.0]   # 90 of 100 seen: 3 of 6 kWh
    >>> seen[1, :, 30] = [0, 0, 0]                       # nobody seen
    >>> r, e, n = reduction_seen(seen, np.array([8.0, 5.0]), np.array([100, 50]), 1110,
    ...                          np.array([1140, 1140]))
    >>> r, e, n.tolist()
    (4.0, 8.0, [90, 0])
    """
    at = np.asarray(known, dtype=np.int64) - t_start
    rows = np.arange(len(at))
    n = seen[rows, 0, at]
    r = seen[rows, 1, at] / 60e6  # whole µkW·min → kWh
    x = seen[rows, 2, at] / 60e6
    e = np.asarray(expected_group_kwh, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    some = n > 0
    ratio = x > 0.0
    realised = np.where(some & ratio, r / np.where(ratio, x, 1.0) * e,
                        np.where(some, r * sizes / np.where(some, n, 1.0), 0.0))
    return float(realised.sum()), float(np.where(some, e, 0.0).sum()), n.astype(np.int64)
