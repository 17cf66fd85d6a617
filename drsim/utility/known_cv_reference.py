r"""``aggregate``'s reference from the M&V method's known error: its aggregate P̂.

E_j is the group's cumulative P̂ of the M&V method at test time t_j, and σ_j the standard
error of the households' known relative error cv_k
(:func:`drsim.utility.monitoring_method.known_cv`), of which a share ρ is common to the
group (an error every household makes together):

.. math::

    E_j = \sum_k E_{k,j}, \quad
    \sigma_j^2 = (1 - \rho) \sum_k (cv_k E_{k,j})^2 + \rho \Big(\sum_k cv_k E_{k,j}\Big)^2,
    \quad \sigma_j \ge f \, E_j

with the floor f (``monitoring.aggregate.floor``) so that a method without a known error
is not tested against zero (:func:`standard_error`). It is the reference of a scenario
without a control group (:func:`drsim.utility.method_registry.reference_of`). A day
factor every household shares is in ρ only if the utility knows it; prior-day baselines
miss it by several per cent of a group's load (docs/mv_accuracy.md), which the control
group's reference measures instead (:mod:`drsim.utility.control_reference`).

References: B. Zhao, "State Management for Efficient Event Pattern Detection",
dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (P̂ by M&V, Eq. 6.4); the sum of
correlated errors' variances as in any text on the variance of a sum, e.g. W. G. Cochran,
"Sampling Techniques", 3rd ed., Wiley, 1977, §1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from drsim.utility.aggregate_reference import (
    MICRO,
    SQUARE,
    AggregateReference,
    ReferenceReadings,
    micro_kwh_sum,
    wh_square_sum,
)

__all__ = ["KnownCv", "standard_error"]


def standard_error(expected: np.ndarray, expected_sq: np.ndarray, cv: float,
                   correlated_share: float, floor: float) -> np.ndarray:
    r"""Return the standard error σ_j of a group's cumulative aggregate P̂ (module doc).

    .. math::

        \sigma_j = \max\Big(cv \sqrt{(1 - \rho) Q_j + \rho E_j^2}, \; f E_j\Big), \quad
        E_j = \sum_k E_{k,j}, \; Q_j = \sum_k E_{k,j}^2

    with one cv for every household (:func:`drsim.utility.monitoring_method.known_cv`).

    Parameters
    ----------
    expected : numpy.ndarray
        E_j, the group's cumulative P̂ at each test [kWh].
    expected_sq : numpy.ndarray
        Q_j, the sum of the households' squared cumulative P̂, same shape [kWh²].
    cv : float
        cv_k [1].
    correlated_share : float
        ρ, the share of the error variance the households share [1].
    floor : float
        f, the least standard error as a share of E_j [1].

    Returns
    -------
    numpy.ndarray
        σ_j [kWh].

    Examples
    --------
    Two households of 3 and 4 kWh so far, 10 % error, independent or shared:

    >>> standard_error(np.array([7.0]), np.array([25.0]), 0.1, 0.0, 0.01).tolist()
    [0.5]
    >>> standard_error(np.array([7.0]), np.array([25.0]), 0.1, 1.0, 0.01).round(6).tolist()
    [0.7]
    """
    e = np.asarray(expected, dtype=np.float64)
    var = (1.0 - correlated_share) * np.asarray(expected_sq, dtype=np.float64) + \
        correlated_share * e * e
    return np.maximum(cv * np.sqrt(var), floor * e)


@dataclass(frozen=True)
class KnownCv(AggregateReference):
    """E_j the method's aggregate P̂, σ_j from its known error (module doc).

    Attributes
    ----------
    cv : float
        cv_k, each household's known relative error of P̂ [1].
    correlated_share : float
        ρ, the share of the error variance the households share [1].
    floor : float
        f, the least standard error as a share of the group's cumulative P̂ [1].

    Examples
    --------
    A block of two households of 3 and 4 kWh so far, 10 % error:

    >>> ref = KnownCv(cv=0.1)
    >>> sums = ref.block_sums(np.array([[3.5], [4.5]]), np.array([[3.0], [4.0]]), None)
    >>> sums
    {'expected': array([7000000.]), 'expected_sq': array([25000000.])}
    >>> [v.tolist() for v in ref.expectation(0, sums)]
    [[7.0], [0.5]]
    """

    name: ClassVar[str] = "known_cv"
    columns: ClassVar[tuple[str, ...]] = ("expected", "expected_sq")

    cv: float = 0.0
    correlated_share: float = 0.0
    floor: float = 0.01

    def block_sums(self, acc_kwh: np.ndarray, expected_acc_kwh: np.ndarray,
                   readings: ReferenceReadings | None) -> dict[str, np.ndarray]:
        """Return Σ E [whole µkWh] and Σ E² [whole Wh²] of the block's households."""
        return {"expected": micro_kwh_sum(expected_acc_kwh),
                "expected_sq": wh_square_sum(expected_acc_kwh)}

    def expectation(self, group: int, totals: dict[str, np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Return E_j, the group's cumulative P̂, and σ_j (:func:`standard_error`) [kWh]."""
        e = totals["expected"] / MICRO
        return e, standard_error(e, totals["expected_sq"] / SQUARE, self.cv,
                                 self.correlated_share, self.floor)

    def summary(self) -> dict[str, Any]:
        """Return its name, cv, ρ and floor."""
        return {"cv": self.cv, "correlated_share": self.correlated_share,
                "floor": self.floor, "reference": self.name}
