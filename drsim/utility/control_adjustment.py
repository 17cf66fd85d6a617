r"""The control group's B̂ adjusted on the hour before the notice, minute by minute.

The control group's group-level baseline (:mod:`drsim.utility.control_group`) is the
control households' mean load times the called households, unbiased but noisy: a control
sample that happens to draw few heavy users is low all evening. The aggregate test
already takes that chance imbalance out of its reference with a covariate no DR touched,
each household's metered energy x_k in the hour before the notice
(:mod:`drsim.utility.control_reference`). The same adjustment applies to the B̂ the
utility reads at t_nc for the deficit (drsim.utility.deficit), for the goal
``expected`` and for the reduction it settles. Minute by minute, with C_{k,t} the load
of control household k, n_g control and N_g called households of group g, and x̄_C,
x̄_called the two samples' mean covariate,

.. math::

    \bar C^{adj}_t = \bar C_t + \theta_t \, (\bar x_{called} - \bar x_C), \quad
    \theta_t = \frac{\sum_k C_{k,t} x_k - n_g \bar C_t \bar x_C}
                    {\sum_k x_k^2 - n_g \bar x_C^2}

Cochran's regression estimator (§7.1) and CUPED's adjustment (Deng et al. 2013). The
slope θ_t is the control households' own: after the program starts the called
households' load carries the response the deficit is to measure, so it does not enter
the slope (the aggregate test pools both samples, deflating the called ones by the
method's ratio, for the variance it needs; the estimate here needs no variance). Since
θ_t is linear in the loads, the adjusted energy over any span of minutes is the
regression estimator of that span's energy: the deficit's cumulative reading up to a
group's last reading is adjusted as a whole. A group with fewer than three control
households, or whose covariate does not vary, keeps the plain mean (θ_t = 0).

Each chunk sends its sums per minute of the program window as rows of the loads
(:func:`covariate_curves`): Σ C_{k,t}·x_k in whole W·Wh, and, constant over the window,
Σ x_k of the control and of the called households in whole µkWh and Σ x_k² in whole Wh²,
so the group's totals, and the adjustment, are the same for any chunking.

References
----------
.. [1] B. Zhao, "State Management for Efficient Event Pattern Detection", dissertation,
   Humboldt-Universität zu Berlin, 2022, §6.2.1 (randomised control trials among the
   M&V techniques) and §6.2.3 (the deficit at t_nc).
.. [2] W. G. Cochran, "Sampling Techniques", 3rd ed., Wiley, 1977, §7.1-7.2 (the
   regression estimator).
.. [3] A. Deng, Y. Xu, R. Kohavi, T. Walker, "Improving the Sensitivity of Online
   Controlled Experiments by Utilizing Pre-Experiment Data", Proc. WSDM 2013, 123-132.
"""

from __future__ import annotations

import numpy as np

from drsim.units import DAY

__all__ = ["COVARIATES", "adjusted_control_kw", "covariate_curves"]

#: the series of the covariate sums beside the control households' load, in the order
#: Σ C·x [W·Wh per minute], Σ x of the control [µkWh], Σ x² of the control [Wh²], Σ x
#: of the called households [µkWh]
COVARIATES = ("covariate_product", "covariate_control", "covariate_control_sq",
              "covariate_called")


def covariate_curves(control_kw: np.ndarray | None, control_x_kwh: np.ndarray | None,
                     called_x_kwh: np.ndarray, start: int, end: int
                     ) -> dict[str, np.ndarray]:
    """Return a chunk's covariate sums of :data:`COVARIATES` as curves of the day.

    Parameters
    ----------
    control_kw : numpy.ndarray or None
        Each control household's load over the program window, (control households,
        end − start) [kW]; None for a chunk without control households.
    control_x_kwh, called_x_kwh : numpy.ndarray
        The control (None: none) and the called households' energy in the hour before
        the notice, (households,) [kWh].
    start, end : int
        The program window, end excluded [minutes since midnight].

    Returns
    -------
    dict of str to numpy.ndarray
        Each series of :data:`COVARIATES`, (1440,), NaN outside the window, in the whole
        units named there (divided by 10⁶: kW·kWh, kWh, kWh², kWh), exact below 2⁵³.

    Examples
    --------
    Two control households drawing 1 and 2 kW after 0.5 and 1 kWh before the notice:

    >>> c = covariate_curves(np.array([[1.0], [2.0]]), np.array([0.5, 1.0]),
    ...                      np.array([0.7]), 1110, 1111)
    >>> [float(c[s][1110]) / 1e6 for s in COVARIATES], bool(np.isnan(c[COVARIATES[0]][0]))
    ([2.5, 1.5, 1.25, 0.7], True)
    """
    if control_kw is None or control_x_kwh is None:
        control_kw, control_x_kwh = np.zeros((0, end - start)), np.zeros(0)
    control_kw = np.asarray(control_kw, dtype=np.float64)
    x_wh = np.rint(np.asarray(control_x_kwh, dtype=np.float64) * 1e3)
    window = slice(start, end)
    values = {
        COVARIATES[0]: (np.rint(control_kw * 1e3) * x_wh[:, None]).sum(axis=0),
        COVARIATES[1]: np.rint(np.asarray(control_x_kwh, dtype=np.float64) * 1e6).sum(),
        COVARIATES[2]: (x_wh * x_wh).sum(),
        COVARIATES[3]: np.rint(np.asarray(called_x_kwh, dtype=np.float64) * 1e6).sum()}
    out = {}
    for name, value in values.items():
        curve = np.full(DAY, np.nan)
        curve[window] = value
        out[name] = curve
    return out


def adjusted_control_kw(control_kw: np.ndarray, covariates: dict[str, np.ndarray],
                        control: np.ndarray, called: np.ndarray) -> np.ndarray:
    r"""Adjust each group's summed control load on the covariate (module doc).

    Returns :math:`n_g \bar C^{adj}_t`, the control households' summed load with the
    regression adjustment, where the covariates are known (the program window) and the
    group has at least three control households whose covariate varies; the plain sum
    elsewhere.

    Parameters
    ----------
    control_kw : numpy.ndarray
        The control households' load summed per group, (groups, 1440) [kW].
    covariates : dict of str to numpy.ndarray
        The groups' sums of :data:`COVARIATES`, each (groups, 1440), divided by 10⁶
        (kW·kWh, kWh, kWh², kWh); NaN where not known.
    control, called : numpy.ndarray
        n_g and N_g, control and called households per group, (groups,) [households].

    Returns
    -------
    numpy.ndarray
        The adjusted sum, (groups, 1440) [kW].

    Examples
    --------
    Three control households drew 1, 2 and 3 kW after 1, 2 and 3 kWh before the notice
    (θ = 1 kW/kWh); the 10 called households used 1.5 kWh on average before it, against
    the control households' 2, so the control households' sum of 6 kW is read as
    3 × (2 − 0.5) = 4.5 kW:

    >>> cov = {"covariate_product": np.array([[14.0]]), "covariate_control": np.array([[6.0]]),
    ...        "covariate_control_sq": np.array([[14.0]]), "covariate_called": np.array([[15.0]])}
    >>> adjusted_control_kw(np.array([[6.0]]), cov, np.array([3]), np.array([10])).tolist()
    [[4.5]]
    """
    control_kw = np.asarray(control_kw, dtype=np.float64)
    n = np.asarray(control, dtype=np.float64)[:, None]
    xc = covariates[COVARIATES[1]] / np.maximum(n, 1.0)
    xa = covariates[COVARIATES[3]] / np.maximum(np.asarray(called, dtype=np.float64), 1.0)[:, None]
    sxx = covariates[COVARIATES[2]] - n * xc * xc
    sxy = covariates[COVARIATES[0]] - control_kw * xc
    usable = np.isfinite(sxy) & np.isfinite(sxx) & (sxx > 0.0) & (n >= 3)
    theta = np.divide(sxy, sxx, out=np.zeros_like(control_kw), where=usable)
    return np.where(usable, control_kw + n * theta * (xa - xc), control_kw)
