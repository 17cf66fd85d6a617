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
    r"""Estimate the complete response of the program from B̂ and P̂.

    The utility's expected reduction is the energy between its baseline estimate and its
    expected-response estimate over the program window, the right-hand side of Eq. 6.3
    taken to t_end and summed over the participants (the expected reduction of §6.3.1
    and §6.3.2, which Table 6.2 sets as the goal):

    .. math:: E = \sum_{t = t_{start}}^{t_{end} - 1} (\hat B_t - \hat P_t) \cdot \frac{1}{60}

    Minutes run from t_start up to, not including, t_end (docs/decisions.md, "Units,
    time and the three meanings of λ").

    Parameters
    ----------
    baseline_kw : numpy.ndarray
        B̂ summed over the participants, one value per minute of the day [kW].
    expected_kw : numpy.ndarray
        P̂ summed over the participants, same shape [kW].
    t_start, t_end : int
        The program window, end excluded [minutes since midnight].

    Returns
    -------
    float
        The estimated expected reduction [kWh].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.3),
       §6.3.1, §6.3.2 and Table 6.2.

    Examples
    --------
    >>> expected_reduction_kwh(np.full(1440, 10.0), np.full(1440, 7.0), 1110, 1230)
    6.0
    """
    window = slice(t_start, t_end)
    return float((baseline_kw[window] - expected_kw[window]).sum()) / 60.0


def reduction_goal_kwh(goal: float | str, expected_kwh: float) -> float:
    """Return the reduction goal λ of Eq. 6.1 in kWh.

    A given goal, or for ``"expected"`` the utility's estimate of the complete response
    ``expected_kwh`` (:func:`expected_reduction_kwh`), as in the dissertation, whose goal
    equals its expected reduction (Table 6.2, §6.3.2; docs/decisions.md, "The reduction
    goal").

    Parameters
    ----------
    goal : float or str
        The scenario's ``dr_program.reduction_goal_kwh``: a number [kWh] or
        ``"expected"``.
    expected_kwh : float
        The estimated expected reduction of the program [kWh].

    Returns
    -------
    float
        λ [kWh].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Definition 6.1,
       Eq. 6.1), §6.3.2 and Table 6.2.

    Examples
    --------
    >>> reduction_goal_kwh("expected", 6.0), reduction_goal_kwh(83_280, 6.0)
    (6.0, 83280.0)
    """
    return float(expected_kwh) if goal == "expected" else float(goal)


def last_readings(t_start: int, t_nc: int, latch: np.ndarray, reading: int,
                  settlement: int) -> np.ndarray:
    """Find, per group, the minute of its last meter reading at or before ``t_nc``.

    Readings fall at ``t_start + k·reading`` until the group's latch and at
    ``latch + k·settlement`` after it (§6.2.2: 1-minute readings, 15-minute settlement
    readings once the group is predicted non-compliant); a group not latched before t_nc
    (``latch`` < 0 for never) is read at the monitoring rate throughout. So the last
    reading is ``t_start + ⌊(t_nc − t_start)/reading⌋·reading``, or, latched,
    ``latch + ⌊(t_nc − latch)/settlement⌋·settlement`` (drsim's reading of what the
    utility knows: docs/decisions.md, "What the utility knows at the prediction").

    Parameters
    ----------
    t_start, t_nc : int
        Program start and the prediction [minutes since midnight].
    latch : numpy.ndarray
        Latch minute of each group, negative for none, shape (groups,) [minutes since
        midnight].
    reading, settlement : int
        Reading intervals before and after a latch [minutes].

    Returns
    -------
    numpy.ndarray
        The minute of each group's last reading, shape (groups,) [minutes since
        midnight].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2.

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
    r"""Estimate the realised and the expected reduction so far from the groups' readings.

    The two sides of Eq. 6.3 over the energy the meters have reported: from ``t_start``
    up to (not including) each group's ``known`` minute k_g, summed over the groups,

    .. math::

        R = \sum_g \sum_{t = t_{start}}^{k_g - 1} (\hat B_{g,t} - P_{g,t}) \cdot \frac{1}{60},
        \quad X = \sum_g \sum_{t = t_{start}}^{k_g - 1} (\hat B_{g,t} - \hat P_{g,t}) \cdot
        \frac{1}{60}

    whose ratio ρ = R / X is the share of the expected response delivered (drsim's
    reading: docs/decisions.md, "What the utility knows at the prediction").

    Parameters
    ----------
    load_kw : numpy.ndarray
        The metered load P summed over each group's households, shape
        (groups, minutes of the day) [kW].
    baseline_kw, expected_kw : numpy.ndarray
        The utility's estimates B̂ and P̂ summed over each group's households, same
        shape [kW].
    t_start : int
        Program start [minutes since midnight].
    known : numpy.ndarray
        Minute up to which each group's energy is known, shape (groups,) [minutes since
        midnight].

    Returns
    -------
    realised, expected : float
        R and X [kWh].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.3) and
       §6.2.3.

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
    r"""Estimate the observed mean follow-through θ̄_red from the reduction so far.

    Eq. 6.7 and Eq. 6.8 use the reduced mean follow-through θ̄_red the utility observes
    during the first event (§6.2.3.2). Since the expected reduction of a household grows
    with its follow-through (B − P̂ = θ_o·(B − F) with the same-day estimates), the
    utility reads it from the share ρ of the expected response delivered so far:

    .. math:: \bar\theta_{red} \approx \rho \cdot \bar\theta_o, \quad \rho = R / X

    clipped to [0, 1]; θ̄_o itself when nothing was expected yet (no information). drsim's
    reading: docs/decisions.md, "What the utility knows at the prediction".

    Parameters
    ----------
    theta_o_mean : float
        The expected mean follow-through θ̄_o [1].
    realised_kwh, expected_kwh : float
        Realised reduction R and expected reduction X so far (:func:`reduction_so_far`)
        [kWh].

    Returns
    -------
    float
        θ̄_red [1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.2 and §6.3.2
       (Eq. 6.7-6.8).

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
    r"""Project the first event's shortfall against the reduction goal.

    The first event's reduction is projected as ρ times its estimated expected reduction
    E (:func:`expected_reduction_kwh`), ρ = R / X the share of the expected response
    delivered so far (1 when nothing was expected yet); the shortfall against the goal λ
    is what the second event is to recover, the deficit behind C_saved of Eq. 6.5:

    .. math:: S = \max(0, \lambda - \rho \cdot E)

    drsim's reading: docs/decisions.md, "What the utility knows at the prediction".

    Parameters
    ----------
    goal_kwh : float
        The reduction goal λ (:func:`reduction_goal_kwh`) [kWh].
    expected_total_kwh : float
        E, the estimated expected reduction of the whole program [kWh].
    realised_kwh, expected_kwh : float
        Realised reduction R and expected reduction X so far (:func:`reduction_so_far`)
        [kWh].

    Returns
    -------
    float
        The projected shortfall S [kWh].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1 (Eq. 6.5).

    Examples
    --------
    >>> shortfall_kwh(100.0, 100.0, 30.0, 50.0)
    40.0
    """
    share = realised_kwh / expected_kwh if expected_kwh > 0.0 else 1.0
    return max(0.0, float(goal_kwh) - share * float(expected_total_kwh))


def reduction_seen(seen: np.ndarray, expected_group_kwh: np.ndarray, sizes: np.ndarray,
                   t_start: int, known: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Estimate the reduction so far when only some readings arrived.

    For group g with known minute k_g: of the households whose reading at k_g arrived
    (n_g), the realised reduction R_g and expected reduction X_g up to k_g; the group's
    expected reduction up to k_g over all its households is E_g (the utility's estimates
    need no reading). The group's realised reduction is read as (R_g / X_g)·E_g, or, when
    its seen households expected nothing yet, R_g·N_g / n_g; a group with no household
    seen adds to neither sum (the others' share stands for it). A ratio estimator, drsim's
    reading of the deficit with lost readings (docs/decisions.md, "Lost meter readings").

    Parameters
    ----------
    seen : numpy.ndarray
        Per minute from ``t_start``, shape (groups, 3, program minutes): households whose
        reading there arrived [households], and their Σ (B̂ − P) and Σ (B̂ − P̂) before
        it [whole µkW·min] (drsim.utility.readings_feature.seen_reduction).
    expected_group_kwh : numpy.ndarray
        E_g, shape (groups,) [kWh].
    sizes : numpy.ndarray
        Households per group N_g, shape (groups,) [households].
    t_start : int
        Program start [minutes since midnight].
    known : numpy.ndarray
        Minute of each group's last reading at or before t_nc, shape (groups,) [minutes
        since midnight].

    Returns
    -------
    realised, expected : float
        The realised and the expected reduction so far, summed over the groups with a
        household seen [kWh].
    seen : numpy.ndarray
        The households seen n_g, shape (groups,) [households].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2 (meter
       readings) and §6.2.3.

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
