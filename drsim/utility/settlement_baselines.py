"""Settlement-grade M&V methods: X-of-Y day matching and a regression baseline.

The baselines ISOs settle demand response with are computed from the customer's own
non-event days before the event; drsim computes them from simulated non-event days of
the same households, season and day type (:mod:`drsim.utility.prior_day_runs`).

``x_of_y`` (``baseline.x_of_y: {days: Y, take: X, rank: high}``)
    Per household, the mean of X of the Y prior non-event days, minute by minute; with
    X < Y the X days with the highest load over the event hours [t_start, t_end) (ties:
    the more recent day). 10 of 10 is CAISO's "10-in-10" customer load baseline (CAISO
    Business Practice Manual for Metering, demand response performance evaluation,
    "Customer Load Baseline Methodology"); high 5 of 10 is NYISO's "average day"
    customer baseline load (NYISO Emergency Demand Response Program Manual, section
    "Customer Baseline Load": the five days of the highest average load over the event
    hours among the ten most recent like days; NYISO's exclusion of low-usage days is
    not modelled); PJM's economic customer baseline takes the highest 4 of 5 (PJM
    Manual 11, Energy & Ancillary Services Market Operations, §10, "Customer Baseline
    Load": ``{days: 5, take: 4}``).

``regression`` (``baseline.regression``, :mod:`drsim.utility.regression_baseline`)
    Per household, a least-squares fit of the load on time-of-day bins and day type over
    prior non-event days.

**P̂ for these methods.** The utility does not see its households respond on days
without events, so P̂ comes from the baseline and the response the ``model`` method
expects (:func:`drsim.utility.baseline_model.model_curves`: B_m without, P̂_m with the
program at θ_o): minute by minute, ``P̂ = B̂ · P̂_m / B_m`` where B_m > 0, else
``P̂ = B̂`` (:func:`expected_from_model`). The model's share of the load that moves is
applied to the household's own baseline: a household that uses more in the window has
more to defer; P̂ stays ≥ 0, is above B̂ where the rebound is; and a household expected to
move nothing (θ_o = 0, P̂_m = B_m) has P̂ = B̂ exactly (Eq. 6.4 compares with ``>``).
drsim's reading: docs/decisions.md, "M&V: the baseline and the expected complete
response".
"""

from __future__ import annotations

import numpy as np

from drsim.household.population import Population
from drsim.utility.baseline_model import model_curves
from drsim.utility.prior_day_runs import prior_days_of
from drsim.utility.regression_baseline import regression_baseline

__all__ = ["SETTLEMENT_METHODS", "expected_from_model", "highest_days", "settlement_curves",
           "x_of_y_baseline"]


def highest_days(energy: np.ndarray, take: int) -> np.ndarray:
    """Select, per household, the ``take`` days of the highest energy over the event hours.

    The "high X of Y" rule of NYISO's and PJM's customer baselines (module doc); among
    equal energies the earlier column (the more recent day) is taken.

    Parameters
    ----------
    energy : numpy.ndarray
        Each household's energy over the event hours on each prior day, shape
        (households, days), day 1 (the most recent) first [any energy unit].
    take : int
        X, at most the number of days.

    Returns
    -------
    numpy.ndarray
        (households, days) bool, ``take`` True per row.

    Examples
    --------
    >>> highest_days(np.array([[1.0, 3.0, 2.0], [5.0, 5.0, 1.0]]), 2).tolist()
    [[False, True, True], [True, True, False]]
    """
    order = np.argsort(-energy, axis=1, kind="stable")[:, :take]
    chosen = np.zeros(energy.shape, dtype=bool)
    np.put_along_axis(chosen, order, True, axis=1)
    return chosen


def x_of_y_baseline(pop: Population, lo: int, hi: int) -> np.ndarray:
    """Estimate B̂ by X-of-Y day matching over minutes [lo, hi) (module doc).

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households.
    lo, hi : int
        The minutes, ``hi`` excluded [minutes since midnight].

    Returns
    -------
    numpy.ndarray
        B̂, shape (households, hi − lo) [kW].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (B estimated by M&V
       from historical performance data).

    Examples
    --------
    10-in-10 over three households is the mean of their ten prior days:

    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}],
    ...              baseline={"method": "x_of_y"})
    >>> x_of_y_baseline(Population(s, 0, 3), 1110, 1230).shape
    (3, 120)
    """
    rule, days = pop.scenario.baseline.x_of_y, prior_days_of(pop)
    key = ("x_of_y", rule.days, rule.take)
    if key not in days.memo:
        dr = pop.scenario.dr_program
        energy = np.stack([days.energy_micro(k, dr.start_minute, dr.end_minute)
                           for k in range(1, rule.days + 1)], axis=1)
        days.memo[key] = highest_days(energy, rule.take)
    chosen = days.memo[key]
    base = np.zeros((pop.size, hi - lo))
    for k in range(1, rule.days + 1):
        base += days.load(k, lo, hi) * chosen[:, k - 1, None]
    return base / rule.take


def expected_from_model(pop: Population, baseline_kw: np.ndarray, lo: int, hi: int
                        ) -> np.ndarray:
    r"""Derive P̂ from a baseline B̂ and the ``model`` method's expected response.

    .. math:: \hat P_{k,t} = \hat B_{k,t} \cdot \hat P^m_{k,t} / B^m_{k,t}
              \quad (B^m_{k,t} > 0; \text{ else } \hat B_{k,t})

    with B^m and P̂^m the load model's expectation without and with the program at θ_o
    (module doc; drsim's reading, docs/decisions.md, "M&V: the baseline and the expected
    complete response").

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households.
    baseline_kw : numpy.ndarray
        B̂ over [lo, hi), shape (households, hi − lo) [kW].
    lo, hi : int
        The minutes, ``hi`` excluded [minutes since midnight].

    Returns
    -------
    numpy.ndarray
        P̂, same shape [kW].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.3-6.4).

    Examples
    --------
    A baseline of 1 kW over the program: the first household is expected to move
    nothing there and keeps P̂ = B̂ exactly, the others less:

    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}])
    >>> p = expected_from_model(Population(s, 0, 3), np.ones((3, 120)), 1110, 1230)
    >>> (p == 1.0).all(axis=1).tolist(), (p.mean(axis=1) < 1.0).tolist()
    ([True, False, False], [False, True, True])
    """
    model_base, model_expected = model_curves(pop, lo, hi)
    share = np.divide(model_expected, model_base, out=np.ones_like(model_base),
                      where=model_base > 0)
    return baseline_kw * share


#: baseline.method -> B̂ over [lo, hi) from the chunk's prior days
SETTLEMENT_METHODS = {"x_of_y": x_of_y_baseline, "regression": regression_baseline}


def settlement_curves(pop: Population, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Return B̂ and P̂ of a settlement-grade method over minutes [lo, hi) [kW] (module doc).

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households; ``baseline.method`` one of :data:`SETTLEMENT_METHODS`.
    lo, hi : int
        The minutes, ``hi`` excluded [minutes since midnight].

    Returns
    -------
    baseline_kw, expected_kw : numpy.ndarray
        B̂ and P̂, shape (households, hi − lo) [kW].
    """
    base = SETTLEMENT_METHODS[pop.scenario.baseline.method](pop, lo, hi)
    return base, expected_from_model(pop, base, lo, hi)
