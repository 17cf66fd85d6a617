r"""The reference of ``aggregate``'s test: what a group's cumulative load is expected to be.

The CUSUM at the group leader (:mod:`drsim.utility.aggregate_method`) standardises the
group's cumulative metered load A_j at test time t_j by a reference: the expectation E_j
of the called households' cumulative load when they respond as expected, and its
standard error σ_j,

.. math:: x_j = (A_j - E_j) / \sigma_j .

Where E_j and σ_j come from is this interface, one implementation per module, chosen once
per scenario (:func:`drsim.utility.method_registry.reference_of`):

* :class:`drsim.utility.known_cv_reference.KnownCv`: the M&V method's aggregate P̂ and
  the standard error of its known relative error per household;
* :class:`drsim.utility.control_reference.ControlGroupReference`: the control group's
  same-day load, which carries the day's common factor that every prior-day baseline
  misses (docs/decisions.md, "The aggregate test against the control group").

A reference says which sums each block of meters sends per test time
(:attr:`AggregateReference.columns`, :meth:`AggregateReference.block_sums`), and reads
E_j and σ_j from the group's totals (:meth:`AggregateReference.expectation`). The sums
are whole numbers (whole µkWh, whole Wh²: :func:`micro_kwh_sum`, :func:`wh_square_sum`,
:func:`wh_product_sum`)
that a float64 holds exactly, so the group's totals are the same in any order of blocks:
the same numbers for any chunking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

__all__ = ["AggregateReference", "MICRO", "ReferenceReadings", "SQUARE", "micro_kwh_sum",
           "wh_product_sum", "wh_square_sum"]

MICRO = 1e6  # µkWh per kWh: the unit of the readings' sums
SQUARE = 1e6  # Wh² per kWh²: the unit of the sums of squares


def micro_kwh_sum(kwh: np.ndarray) -> np.ndarray:
    """Sum cumulative energies over households in whole µkWh, per test.

    Parameters
    ----------
    kwh : numpy.ndarray
        (households, tests) cumulative energy [kWh].

    Returns
    -------
    numpy.ndarray
        (tests,) the sums [whole µkWh], as float64 (exact below 2⁵³).

    Examples
    --------
    >>> micro_kwh_sum(np.array([[1.0, 2.0], [0.5, 0.25]])).tolist()
    [1500000.0, 2250000.0]
    """
    micro = np.rint(np.asarray(kwh, dtype=np.float64) * MICRO).astype(np.int64)
    return micro.sum(axis=0).astype(np.float64)


def wh_square_sum(kwh: np.ndarray) -> np.ndarray:
    """Sum the squares of cumulative energies in whole Wh over households, per test.

    Parameters
    ----------
    kwh : numpy.ndarray
        (households, tests) cumulative energy [kWh].

    Returns
    -------
    numpy.ndarray
        (tests,) Σ (energy in whole Wh)² [whole Wh²], as float64 (exact below 2⁵³).

    Examples
    --------
    >>> wh_square_sum(np.array([[1.0, 2.0], [0.5, 0.25]])).tolist()
    [1250000.0, 4062500.0]
    """
    return wh_product_sum(kwh, kwh)


def wh_product_sum(kwh: np.ndarray, other_kwh: np.ndarray) -> np.ndarray:
    """Sum the products of two energies in whole Wh over households, per test.

    Parameters
    ----------
    kwh, other_kwh : numpy.ndarray
        (households, tests) energies [kWh].

    Returns
    -------
    numpy.ndarray
        (tests,) Σ (energy in whole Wh) × (other in whole Wh) [whole Wh²], as float64
        (exact below 2⁵³).

    Examples
    --------
    >>> wh_product_sum(np.array([[1.0, 2.0], [0.5, 0.25]]), np.array([[2.0, 1.0], [1.0, 1.0]]))
    array([2500000., 2250000.])
    """
    return (_whole_wh(kwh) * _whole_wh(other_kwh)).sum(axis=0).astype(np.float64)


def _whole_wh(kwh: np.ndarray) -> np.ndarray:
    """Energies [kWh] as whole Wh (int64)."""
    return np.rint(np.asarray(kwh, dtype=np.float64) * 1e3).astype(np.int64)


@dataclass(frozen=True)
class ReferenceReadings:
    """What a block of meters reads beside its called households' load and P̂.

    Attributes
    ----------
    baseline_acc_kwh : numpy.ndarray
        (households, tests) the M&V method's cumulative B̂ of the block's called
        households [kWh].
    control_acc_kwh : numpy.ndarray
        (control households, tests) the cumulative metered load of the block's control
        households, none called (:mod:`drsim.household.control`) [kWh].
    pre_notice_kwh, control_pre_notice_kwh : numpy.ndarray or None
        (households,) and (control households,) each one's metered energy in the hour
        before the program's notice, which no DR has touched [kWh] (a covariate of the
        control group's reference); None: not read.
    """

    baseline_acc_kwh: np.ndarray
    control_acc_kwh: np.ndarray
    pre_notice_kwh: np.ndarray | None = None
    control_pre_notice_kwh: np.ndarray | None = None


@dataclass(frozen=True)
class AggregateReference:
    """Where ``aggregate``'s E_j and σ_j come from (module doc).

    Subclasses are frozen and picklable: they travel to the executors inside the
    monitoring plan's method.
    """

    #: its name in summary.json (``monitoring.method_settings.reference``)
    name: ClassVar[str] = ""
    #: the sums a block sends per test time beside Σ A (its columns of the meters' sums)
    columns: ClassVar[tuple[str, ...]] = ()

    def block_sums(self, acc_kwh: np.ndarray, expected_acc_kwh: np.ndarray,
                   readings: ReferenceReadings | None) -> dict[str, np.ndarray]:
        """Return a block's sums of :attr:`columns`, each (tests,) whole numbers.

        Parameters
        ----------
        acc_kwh, expected_acc_kwh : numpy.ndarray
            (households, tests) the called households' cumulative load and P̂ [kWh].
        readings : ReferenceReadings or None
            The block's other readings (None where the caller has none: recorded
            readings).
        """
        raise NotImplementedError

    def meters_read(self, readings: ReferenceReadings | None) -> int:
        """Return how many meters beside the called households' it reads per test."""
        return 0

    def expectation(self, group: int, totals: dict[str, np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Return E_j and σ_j of ``group`` from its totals of :attr:`columns`.

        Parameters
        ----------
        group : int
            The group's index.
        totals : dict of str to numpy.ndarray
            Each column summed over the group's blocks, (tests,), and ``accLoad``, Σ A of
            the called households [whole µkWh].

        Returns
        -------
        expected, se : numpy.ndarray
            E_j and σ_j, (tests,) [kWh].
        """
        raise NotImplementedError

    def summary(self) -> dict[str, Any]:
        """Return its name and settings for ``monitoring.method_settings``."""
        return {"reference": self.name}
