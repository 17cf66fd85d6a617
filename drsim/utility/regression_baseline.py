r"""The ``regression`` M&V baseline: time of day and day type over prior non-event days.

In the spirit of CalTRACK's hourly method (CalTRACK Methods, "Hourly Methods": a
time-of-week and temperature regression per meter, fit on the baseline period's hourly
data), per household k a least-squares fit over prior non-event days d of the load's mean
y_{k,d,b} in time-of-day bin b (``baseline.regression.bin_minutes`` wide):

.. math:: y_{k,d,b} = \alpha_{k,b} + \beta_{k,\tau(d)} + \varepsilon_{k,d,b},
          \qquad \beta_{k,\tau_0} = 0

with τ(d) the day's type (weekday, saturday, sunday) and τ_0 the evaluated day's. B̂ of
a minute is α of its bin: the fitted load of a day of the evaluated day's type. With days
of the evaluated type only (``other_day_type_days: 0``) α is each bin's mean over them,
CalTRACK's time-of-week model restricted to one day type; days of other types share
the daily profile and shift its level, fewer parameters than a time of week (bins +
types − 1 instead of bins × types). drsim simulates no weather, so the temperature terms
of CalTRACK (heating and cooling degree bins) have nothing to fit: the regression has
none; day-to-day variation that households share enters only through the simulated days
themselves.

The fit is over whole days, so B̂ of a minute is the same whatever window is estimated;
it is computed once per chunk (:class:`drsim.utility.prior_day_runs.PriorDays`). The
design is the same for every household, so one pseudo-inverse serves all, applied in a
fixed order of the rows: a household's B̂ has the same bits in any chunk.
"""

from __future__ import annotations

import numpy as np

from drsim.household.population import Population
from drsim.household.season import DAY_TYPES
from drsim.units import DAY, MICRO
from drsim.utility.prior_day_runs import prior_days_of

__all__ = ["bin_means", "fit_time_of_day", "regression_baseline"]


def bin_means(load_micro_kw: np.ndarray, bin_minutes: int) -> np.ndarray:
    """Average a whole day's load over time-of-day bins.

    Parameters
    ----------
    load_micro_kw : numpy.ndarray
        (households, 1440) load in whole µkW [µkW] (sums exact, any order).
    bin_minutes : int
        The bins' width, a divisor of 1440 [minutes].

    Returns
    -------
    numpy.ndarray
        (households, 1440 / bin_minutes) mean load per bin [kW].

    Examples
    --------
    >>> bin_means(np.tile(np.repeat([1e6, 3e6], 720), (1, 1)), 720).tolist()
    [[1.0, 3.0]]
    """
    n = load_micro_kw.shape[0]
    return load_micro_kw.reshape(n, -1, bin_minutes).sum(axis=2) / (bin_minutes * MICRO)


def fit_time_of_day(y: np.ndarray, types: np.ndarray) -> np.ndarray:
    r"""Fit :math:`y_{k,d,b} = \alpha_{k,b} + \beta_{k,\tau(d)}` per household (module doc).

    Ordinary least squares on the stacked days: one design X (a column per bin, one per
    day type other than type 0) for every household, its pseudo-inverse
    (``numpy.linalg.pinv``) applied to each household's stacked bin means.

    Parameters
    ----------
    y : numpy.ndarray
        (days, households, bins) mean load per bin of each prior day [kW].
    types : numpy.ndarray
        (days,) each day's type, 0 = the evaluated day's, other integers other types.

    Returns
    -------
    numpy.ndarray
        α, (households, bins): the fitted load of a type-0 day per bin [kW].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (B estimated by M&V
       from historical performance data).

    Examples
    --------
    Two weekdays and a weekend day 1 kW above them: α is the weekdays' mean.

    >>> y = np.array([[[1.0, 2.0]], [[3.0, 4.0]], [[3.0, 4.0]]])
    >>> fit_time_of_day(y, np.array([0, 0, 1])).round(12).tolist()
    [[2.0, 3.0]]
    """
    days, n, bins = y.shape
    others = np.unique(types[types != 0])
    design = np.zeros((days * bins, bins + len(others)))
    design[np.arange(days * bins), np.tile(np.arange(bins), days)] = 1.0
    for j, t in enumerate(others):
        design[np.repeat(types == t, bins), bins + j] = 1.0
    solve = np.linalg.pinv(design)[:bins]  # (bins, days·bins): α from the stacked rows
    solve[np.abs(solve) < 1e-12] = 0.0  # the SVD's rounding where the exact inverse is 0
    stacked = y.transpose(0, 2, 1).reshape(days * bins, n)  # row (d, b), column household
    alpha = np.zeros((bins, n))
    for r in np.nonzero(np.any(solve != 0.0, axis=0))[0]:  # fixed order: same bits per chunk
        alpha += solve[:, r, None] * stacked[r]
    return alpha.T


def regression_baseline(pop: Population, lo: int, hi: int) -> np.ndarray:
    """Estimate B̂ by the regression on time of day and day type over minutes [lo, hi).

    Prior days (:class:`drsim.utility.prior_day_runs.PriorDays`): ``days`` of the
    scenario's day type and ``other_day_type_days`` of each other type
    (``baseline.regression``), each simulated without DR; the fit
    (:func:`fit_time_of_day`) once per chunk.

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households.
    lo, hi : int
        The minutes, ``hi`` excluded [minutes since midnight].

    Returns
    -------
    numpy.ndarray
        B̂, shape (households, hi − lo), constant within a bin [kW].

    Examples
    --------
    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}],
    ...              baseline={"method": "regression", "regression": {"days": 2}})
    >>> b = regression_baseline(Population(s, 0, 3), 1110, 1230)
    >>> b.shape, bool((b[:, :30] == b[:, :1]).all())  # 18:30-19:00 in one hourly bin
    ((3, 120), True)
    """
    settings, days = pop.scenario.baseline.regression, prior_days_of(pop)
    key = ("regression", settings)
    if key not in days.memo:
        own = pop.scenario.day_type
        plan = [(own, k) for k in range(1, settings.days + 1)] + [
            (t, k) for t in DAY_TYPES if t != own
            for k in range(1, settings.other_day_type_days + 1)]
        y = np.stack([bin_means(days.run(k, t).load_micro_kw(0, DAY), settings.bin_minutes)
                      for t, k in plan])
        types = np.array([0 if t == own else 1 + DAY_TYPES.index(t) for t, _ in plan])
        days.memo[key] = fit_time_of_day(y, types)
    return days.memo[key][:, np.arange(lo, hi) // settings.bin_minutes]
