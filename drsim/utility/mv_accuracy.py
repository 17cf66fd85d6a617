"""How far an M&V method's estimates are from the truth over the DR window.

The measures an analyst picks a baseline by (docs/mv_accuracy.md): the coefficient of
variation of the root-mean-square error, CV(RMSE), and the normalised mean bias, NMB, of
an estimate against the true curve, as ASHRAE Guideline 14-2014 and CalTRACK's reference
implementation define them; and the settlement error, the reduction the utility would pay
for against the true one. Each function takes curves whose last axis is the minutes of
the window (one row per household or per group aggregate) and returns one value per row.

Two conventions, stated once:

* **Degrees of freedom.** ASHRAE Guideline 14 divides the sums by n − p for a model with
  p parameters fitted to the n values it is scored on; CalTRACK's reference implementation
  reports both the plain measure (over n) and that "adjusted" one. The M&V estimates are
  not fitted to the DR window they are scored on, so p = 0: the sums are divided by n.
* **Sign.** Estimate minus truth: a positive NMB is a baseline above the truth, a
  reduction paid for that did not happen. Guideline 14's NMBE is measured minus
  predicted, the opposite sign; its values are percentages, these are fractions.

The truth is drsim's own counterfactual of the evaluated day (``baseline.method:
same_day`` without M&V error, drsim.utility.baseline): the B and P̂ the dissertation's
simulation takes as known (§6.2.1, §6.3.1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SettlementError", "cv_rmse", "normalised_mean_bias", "settlement_error"]

MINUTES_PER_HOUR = 60.0


def _pair(estimate, truth) -> tuple[np.ndarray, np.ndarray]:
    est = np.asarray(estimate, dtype=np.float64)
    true = np.asarray(truth, dtype=np.float64)
    if est.shape != true.shape:
        raise ValueError(f"estimate and truth differ in shape: {est.shape} and {true.shape}")
    if est.ndim == 0 or est.shape[-1] == 0:
        raise ValueError("estimate and truth need at least one value on their last axis")
    return est, true


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Divide, NaN where the denominator is not positive."""
    return np.divide(numerator, denominator, out=np.full(np.shape(numerator), np.nan),
                     where=denominator > 0)


def cv_rmse(estimate, truth) -> np.ndarray:
    r"""Coefficient of variation of the root-mean-square error of ``estimate`` against ``truth``.

    Over the n values of the last axis (the minutes of the DR window):

    .. math:: \mathrm{CV(RMSE)} = \frac{\sqrt{\frac{1}{n}\sum_t (\hat y_t - y_t)^2}}
              {\frac{1}{n}\sum_t y_t}

    ASHRAE Guideline 14-2014's CV(RMSE) with p = 0 (module doc: no parameter is fitted to
    the window), as a fraction, not a percentage; CalTRACK's reference implementation's
    unadjusted ``cvrmse``.

    Parameters
    ----------
    estimate : array_like
        The estimated curve ŷ, shape (..., n) [kW].
    truth : array_like
        The true curve y, same shape [kW].

    Returns
    -------
    numpy.ndarray
        CV(RMSE) of each row, shape (...) [1]; NaN where the truth's mean is not positive.

    Raises
    ------
    ValueError
        If the shapes differ or the last axis is empty.

    References
    ----------
    .. [1] ASHRAE Guideline 14-2014, "Measurement of Energy, Demand, and Water Savings",
       ASHRAE, Atlanta, 2014 (CV(RMSE), NMBE).
    .. [2] CalTRACK Methods, version 2.0, CalTRACK working group (docs.caltrack.org), and
       its reference implementation OpenEEmeter (model metrics ``cvrmse``, ``nmbe``).
    .. [3] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (B and P̂ estimated by
       M&V).

    Examples
    --------
    Errors of +1 and −1 kW on a true 2 kW: RMSE 1 kW, mean 2 kW:

    >>> float(cv_rmse([3.0, 1.0], [2.0, 2.0]))
    0.5
    >>> cv_rmse([[3.0, 1.0], [1.0, 1.0]], [[2.0, 2.0], [0.0, 0.0]]).tolist()
    [0.5, nan]
    """
    est, true = _pair(estimate, truth)
    rmse = np.sqrt(np.mean((est - true) ** 2, axis=-1))
    return _ratio(rmse, np.mean(true, axis=-1))


def normalised_mean_bias(estimate, truth) -> np.ndarray:
    r"""Normalised mean bias of ``estimate`` against ``truth``.

    Over the n values of the last axis (the minutes of the DR window):

    .. math:: \mathrm{NMB} = \frac{\sum_t (\hat y_t - y_t)}{\sum_t y_t}

    ASHRAE Guideline 14-2014's NMBE with p = 0 and the sign of estimate minus truth (module
    doc), as a fraction; an estimate (1 + e) times the truth has NMB e.

    Parameters
    ----------
    estimate : array_like
        The estimated curve ŷ, shape (..., n) [kW].
    truth : array_like
        The true curve y, same shape [kW].

    Returns
    -------
    numpy.ndarray
        NMB of each row, shape (...) [1]; NaN where the truth's sum is not positive.

    Raises
    ------
    ValueError
        If the shapes differ or the last axis is empty.

    References
    ----------
    .. [1] ASHRAE Guideline 14-2014, "Measurement of Energy, Demand, and Water Savings",
       ASHRAE, Atlanta, 2014 (NMBE).
    .. [2] CalTRACK Methods, version 2.0, CalTRACK working group (docs.caltrack.org), and
       its reference implementation OpenEEmeter (model metric ``nmbe``).

    Examples
    --------
    A baseline 10 % high:

    >>> round(float(normalised_mean_bias([1.1, 2.2], [1.0, 2.0])), 12)
    0.1
    """
    est, true = _pair(estimate, truth)
    return _ratio(np.sum(est - true, axis=-1), np.sum(true, axis=-1))


@dataclass(frozen=True)
class SettlementError:
    """The reduction paid for against the true one, per row (household or group).

    Attributes
    ----------
    paid_kwh : numpy.ndarray
        Σ (B̂ − P) over the window, the reduction the utility would pay for [kWh].
    true_kwh : numpy.ndarray
        Σ (B − P), the true reduction [kWh].
    error_kwh : numpy.ndarray
        ``paid_kwh − true_kwh`` [kWh].
    relative : numpy.ndarray
        ``error_kwh / true_kwh``, NaN where the true reduction is not positive [1].
    """

    paid_kwh: np.ndarray
    true_kwh: np.ndarray
    error_kwh: np.ndarray
    relative: np.ndarray


def settlement_error(baseline_est, baseline_true, metered,
                     minutes_per_value: float = 1.0) -> SettlementError:
    r"""Compare the reduction a baseline pays for with the true one: the settlement error.

    A utility pays a household (or an aggregator, a group) for its reduction against the
    baseline, Σ (B̂ − P) over the window, with P the metered load; the true reduction is
    Σ (B − P) against the true baseline B (the reduction of Eq. 6.2):

    .. math::

        \Delta = \sum_t (\hat B_t - P_t) - \sum_t (B_t - P_t) = \sum_t (\hat B_t - B_t),
        \qquad \text{relative} = \frac{\Delta}{\sum_t (B_t - P_t)}

    The absolute error does not depend on P; the relative one does, through the true
    reduction it is measured against.

    Parameters
    ----------
    baseline_est : array_like
        The M&V method's baseline B̂, shape (..., n) [kW].
    baseline_true : array_like
        The true baseline B, same shape [kW].
    metered : array_like
        The metered load P under the program, same shape [kW].
    minutes_per_value : float, default 1.0
        Minutes each value stands for (energy = Σ kW × minutes / 60) [minutes].

    Returns
    -------
    SettlementError
        Paid, true, error (kWh) and relative error of each row.

    Raises
    ------
    ValueError
        If the shapes differ or the last axis is empty.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.2: a
       household's reduction against its baseline).

    Examples
    --------
    One hour at 2 kW metered, a true baseline of 3 kW, an estimate of 3.5 kW:

    >>> e = settlement_error([3.5] * 60, [3.0] * 60, [2.0] * 60)
    >>> float(e.paid_kwh), float(e.true_kwh), float(e.error_kwh), float(e.relative)
    (1.5, 1.0, 0.5, 0.5)
    """
    est, true = _pair(baseline_est, baseline_true)
    _, load = _pair(baseline_est, metered)
    hours = minutes_per_value / MINUTES_PER_HOUR
    paid = np.sum(est - load, axis=-1) * hours
    actual = np.sum(true - load, axis=-1) * hours
    error = np.sum(est - true, axis=-1) * hours
    return SettlementError(paid, actual, error, _ratio(error, actual))
