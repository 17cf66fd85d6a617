"""The day-of adjustment of the M&V estimates (``baseline.day_of_adjustment``).

At the announcement the utility adjusts each household's B̂ and P̂ by its metered load
against its estimated baseline over the minutes before the notice, within a cap, as ISO
baselines adjust theirs (docs/decisions.md, "Remote profiles and when the tiers see
them"; :mod:`drsim.utility.baseline` for the estimates). ``kind: multiplicative`` (the
default) scales them by the ratio of the two (:func:`day_of_ratio`), as NYISO's and
CAISO's adjustments do; ``kind: additive`` shifts them by the mean difference
(:func:`day_of_shift`), as PJM's symmetric additive adjustment does.
"""

from __future__ import annotations

import numpy as np

from drsim.household.population import Population
from drsim.household.sim import ChunkSimulator
from drsim.utility.baseline import Estimates, estimate_exact, mv_factors, with_mv_error

__all__ = ["adjustment_minutes", "baseline_before_notice", "day_of_adjusted", "day_of_ratio",
           "day_of_shift"]


def day_of_ratio(readings_kw: np.ndarray, baseline_kw: np.ndarray, cap: float) -> np.ndarray:
    r"""Estimate the day-of adjustment factor of each household (module doc).

    Over the adjustment minutes t before the notice (:func:`adjustment_minutes`), the
    household's metered load P against its estimated baseline B̂, within a cap: the
    multiplicative day-of adjustment of M&V baselines, capped as ISO baselines cap theirs
    (a household whose estimate is zero there keeps 1):

    .. math::

        r_k = \min\left(\max\left(\frac{\sum_t P_{k,t}}{\sum_t \hat B_{k,t}},
        1 - cap\right), 1 + cap\right)

    The dissertation updates the baseline profiles from the latest monitoring feedback
    (§6.3.4) without giving a rule; this one is drsim's reading (docs/decisions.md,
    "Remote profiles and when the tiers see them").

    Parameters
    ----------
    readings_kw : numpy.ndarray
        Metered load before the notice, shape (households, minutes) [kW].
    baseline_kw : numpy.ndarray
        Estimated baseline B̂ over the same minutes, same shape [kW].
    cap : float
        The largest relative change [1].

    Returns
    -------
    numpy.ndarray
        r_k, shape (households,) [1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.4.

    Examples
    --------
    >>> day_of_ratio(np.array([[1.1, 1.1], [3.0, 3.0], [1.0, 1.0]]),
    ...              np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]), 0.2).round(6).tolist()
    [1.1, 1.2, 1.0]
    """
    used, expected = readings_kw.sum(axis=1), baseline_kw.sum(axis=1)
    ratio = np.divide(used, expected, out=np.ones_like(used), where=expected > 0)
    return np.clip(ratio, 1.0 - cap, 1.0 + cap)


def day_of_shift(readings_kw: np.ndarray, baseline_kw: np.ndarray, cap: float) -> np.ndarray:
    r"""Estimate the additive day-of adjustment of each household (module doc).

    Over the adjustment minutes t before the notice (:func:`adjustment_minutes`), the mean
    difference of the household's metered load P and its estimated baseline B̂, within a
    cap of ``cap`` times B̂'s mean there (a household whose estimate is zero there keeps
    its estimates):

    .. math::

        \Delta_k = \min\left(\max\left(\overline{P_{k,t} - \hat B_{k,t}},
        -cap \cdot \overline{\hat B_{k,t}}\right), cap \cdot \overline{\hat B_{k,t}}\right)

    The shift is PJM's symmetric additive adjustment of its customer baseline load (PJM
    Manual 11, Energy & Ancillary Services Market Operations, §10, "Customer Baseline
    Load": the mean difference of metered load and baseline over hours before the event,
    added to the baseline of every event hour); PJM does not cap it, drsim caps it as a
    share of the baseline like the ±20 % NYISO and CAISO put on their multiplicative
    adjustments, so that both kinds are bounded alike. drsim's reading of the
    dissertation's updated profiles (§6.3.4; docs/decisions.md, "M&V: the baseline and the
    expected complete response").

    Parameters
    ----------
    readings_kw : numpy.ndarray
        Metered load before the notice, shape (households, minutes) [kW].
    baseline_kw : numpy.ndarray
        Estimated baseline B̂ over the same minutes, same shape [kW].
    cap : float
        The largest shift as a share of B̂'s mean over the minutes [1].

    Returns
    -------
    numpy.ndarray
        Δ_k, shape (households,) [kW].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.4.

    Examples
    --------
    >>> day_of_shift(np.array([[1.1, 1.3], [3.0, 3.0], [1.0, 1.0]]),
    ...              np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]), 0.5).round(6).tolist()
    [0.2, 0.5, 0.0]
    """
    minutes = readings_kw.shape[1]
    difference = (readings_kw.sum(axis=1) - baseline_kw.sum(axis=1)) / minutes
    bound = cap * baseline_kw.sum(axis=1) / minutes
    return np.clip(difference, -bound, bound)


def adjustment_kind(scenario) -> str:
    """Return the scenario's kind of day-of adjustment, multiplicative without one.

    Examples
    --------
    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}])
    >>> adjustment_kind(s)
    'multiplicative'
    """
    adjustment = scenario.baseline.day_of_adjustment
    return "multiplicative" if adjustment is None else adjustment.kind


def adjustment_minutes(scenario, window_minutes: int | None = None) -> tuple[int, int]:
    """Return the minutes [lo, notice) a day-of adjustment reads (module doc).

    The ``window_minutes`` before the program's notice, from midnight at the earliest.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario.
    window_minutes : int, optional
        The minutes read [minutes]; default ``baseline.day_of_adjustment``'s (then set).

    Returns
    -------
    lo, notice : int
        The first minute read and the announcement, excluded [minutes since midnight].

    Examples
    --------
    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}],
    ...              baseline={"day_of_adjustment": {"window_minutes": 180, "cap": 0.2}})
    >>> adjustment_minutes(s)
    (870, 1050)
    """
    program = scenario.dr_program
    notice = program.start_minute - program.notice_minutes
    if window_minutes is None:
        window_minutes = scenario.baseline.day_of_adjustment.window_minutes
    return max(0, notice - window_minutes), notice


def baseline_before_notice(pop: Population, sim: ChunkSimulator, baseline_kw: np.ndarray,
                           window_minutes: int | None = None) -> Estimates | None:
    """Estimate B̂ and P̂ without M&V error over the minutes a day-of adjustment reads.

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households.
    sim : drsim.household.sim.ChunkSimulator
        The chunk's simulator.
    baseline_kw : numpy.ndarray
        The day's no-DR load over :func:`adjustment_minutes`, shape (households, minutes)
        [kW]: ``same_day``'s B there, so that it is not simulated again.
    window_minutes : int, optional
        The minutes read (:func:`adjustment_minutes`) [minutes].

    Returns
    -------
    Estimates or None
        The M&V method's estimates over :func:`adjustment_minutes` [kW]; None when the
        announcement is at midnight.
    """
    lo, notice = adjustment_minutes(pop.scenario, window_minutes)
    if notice <= lo:
        return None
    if pop.scenario.baseline.method == "same_day":
        return Estimates(baseline_kw, baseline_kw, lo, notice)
    return estimate_exact(pop, lo, notice, sim)


def day_of_adjusted(exact: Estimates, pop: Population, readings_kw: np.ndarray,
                    before: Estimates | None, replica: int = 0,
                    cap: float | None = None) -> Estimates:
    """Estimate B̂ and P̂ as the utility publishes them at the announcement.

    ``exact`` (the M&V method's, without error) with the M&V error of ``replica``
    (:func:`with_mv_error`) and the scenario's day-of adjustment: multiplicative
    (:func:`day_of_ratio`), or additive (:func:`day_of_shift`: B̂ and P̂ shifted by Δ_k,
    each clipped at 0 kW) when ``baseline.day_of_adjustment.kind`` says so.
    With f the household's error factor and m the per-minute ones, the utility's estimate
    is ``f·m·exact`` and its ratio ``r = clip(ΣP / Σ f·m·B, 1 − cap, 1 + cap)``; the
    result ``r·f·m·exact`` is computed as ``(ΣP / Σ m·B)·m·exact`` where r is not capped,
    the same value with f cancelled exactly, so that an error the adjustment undoes leaves
    no rounding behind (Eq. 6.4 compares with ``>``, and a household with nothing to shift
    has its load equal to P̂). drsim's reading of the dissertation's updated baseline
    profiles (§6.3.4): docs/decisions.md, "Remote profiles and when the tiers see them".

    Parameters
    ----------
    exact : Estimates
        The M&V method's estimates without error [kW].
    pop : drsim.household.population.Population
        The chunk's households.
    readings_kw : numpy.ndarray
        Metered load over the adjustment minutes, shape (households, minutes) [kW].
    before : Estimates or None
        The estimates without error over the adjustment minutes
        (:func:`baseline_before_notice`) [kW]; None: no adjustment.
    replica : int, default 0
        0 for the evaluated day's M&V error, > 0 for that of an independent replica.
    cap : float, optional
        The largest relative change [1]; default ``baseline.day_of_adjustment``'s. The
        kind is always the scenario's (:func:`adjustment_kind`).

    Returns
    -------
    Estimates
        The published B̂ and P̂ over ``exact``'s minutes [kW].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.4) and
       §6.3.4.

    Examples
    --------
    A 10 % M&V error per household, undone exactly by the adjustment when the readings
    before the notice are the day's no-DR load:

    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}],
    ...              baseline={"error": 0.1,
    ...                        "day_of_adjustment": {"window_minutes": 180, "cap": 0.2}})
    >>> pop = Population(s, 0, 3)
    >>> sim = ChunkSimulator(pop)
    >>> readings = sim.run([]).load(870, 1050)
    >>> exact = estimate_exact(pop, 1110, 1230, sim)
    >>> before = baseline_before_notice(pop, sim, readings)
    >>> published = day_of_adjusted(exact, pop, readings, before)
    >>> bool((published.expected_kw == exact.expected_kw).all())
    True
    """
    est = with_mv_error(exact, pop, replica)
    if before is None:
        return est
    f, m = mv_factors(pop, exact.lo, exact.hi, replica)
    _, m_before = mv_factors(pop, before.lo, before.hi, replica)
    if cap is None:
        cap = pop.scenario.baseline.day_of_adjustment.cap
    if adjustment_kind(pop.scenario) == "additive":
        shift = day_of_shift(readings_kw, before.baseline_kw * m_before * f[:, None], cap)
        return Estimates(np.maximum(est.baseline_kw + shift[:, None], 0.0),
                         np.maximum(est.expected_kw + shift[:, None], 0.0), exact.lo, exact.hi)
    used = readings_kw.sum(axis=1)
    estimated = (before.baseline_kw * m_before).sum(axis=1)  # without the household factor
    ratio = day_of_ratio(readings_kw, before.baseline_kw * m_before * f[:, None], cap)
    inside = (estimated > 0) & (ratio > 1.0 - cap) & (ratio < 1.0 + cap)
    gain = np.where(inside, np.divide(used, estimated, out=np.ones_like(used),
                                      where=estimated > 0), f * ratio)[:, None] * m
    return Estimates(exact.baseline_kw * gain, exact.expected_kw * gain, exact.lo, exact.hi)
