r"""``aggregate``'s reference from the control group: the same day's load of uncalled households.

A common day factor (``day_variation``) moves every household of a group together, and
every prior-day baseline misses a group's event-window load by it: −9 % to +12 % at cv
0.25, against a deficit to detect of 3-6 % of the group's load (docs/mv_accuracy.md,
docs/decisions.md, "The aggregate test against the control group"). The control
households (:mod:`drsim.household.control`) live through the same day uncalled; their
metered load carries the day's factor. With a control group the group leader's reference
is theirs: at test time t_j, with C_{k,j} the cumulative load of control household k,
n_g control and N_g called households (N = n_g + N_g enrolled),

.. math::

    \hat B_j = N_g \, \bar C_j, \quad
    E_j = \hat B_j \cdot R_j, \quad
    R_j = \frac{\sum_k \hat P^m_{k,j}}{\sum_k \hat B^m_{k,j}}

the control group's B̂ of the called households
(:func:`drsim.utility.control_group.group_estimates`, cumulative to t_j) times the M&V
method's ratio of cumulative expected response to baseline over the called households
(R_j = 1 where the method's B̂ is 0). Its standard error is Cochran's for the control
households' mean (:func:`drsim.utility.control_group.standard_error`), scaled by the
ratio, with the floor f (``monitoring.aggregate.floor``):

.. math::

    \sigma_j = \max\Big(R_j \, S_j \sqrt{N N_g / n_g}, \; f E_j\Big)

S_j² is the households' variance of cumulative no-DR load at t_j, pooled over the
control households and the called ones, whose metered load A_{k,j} is deflated by the
ratio (the pooled within-sample variance of a two-sample comparison):

.. math::

    S_j^2 = \frac{\sum_{k \in C} (C_{k,j} - \bar C_j)^2
                  + R_j^{-2} \sum_{k \notin C} (A_{k,j} - \bar A_j)^2}{n_g + N_g - 2}

Pooled, not the control households' own: a household's cumulative load is skewed (most
households use little, a few a lot), so a control sample that happens to draw few heavy
users has both a low mean and a low variance, and its own variance would inflate x_j
exactly when E_j is low, raising false alarms; the called households are nine in ten of
the group and carry the variance with no such tie to the control mean. Only readings up
to t_j enter E_j and σ_j: the leader knows them at t_j. Each block sends Σ P̂^m, Σ B̂^m
and Σ C in whole µkWh and Σ C², Σ A² in whole Wh², so the group's totals, and the test,
are the same for any chunking. A group with fewer than two control households has no
control mean to trust: its reference is the method's aggregate P̂ with σ_j = f E_j.

References
----------
.. [1] B. Zhao, "State Management for Efficient Event Pattern Detection", dissertation,
   Humboldt-Universität zu Berlin, 2022, §6.2.1 (randomised control trials among the
   M&V techniques; P̂ of Eq. 6.4).
.. [2] W. G. Cochran, "Sampling Techniques", 3rd ed., Wiley, 1977, §2.4-2.5 (the variance
   of a sample mean without replacement; s² as its unbiased estimate).
.. [3] SEE Action, "Evaluation, Measurement, and Verification (EM&V) of Residential
   Behavior-Based Energy Efficiency Programs: Issues and Recommendations", LBNL, 2012
   (impacts as differences of treatment and control means).
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
from drsim.utility.control_group import standard_error

__all__ = ["ControlGroupReference"]


@dataclass(frozen=True)
class ControlGroupReference(AggregateReference):
    """E_j and σ_j from the control households' same-day load (module doc).

    Attributes
    ----------
    control, called : tuple of int
        n_g and N_g, the control and called households of each group [households].
    floor : float
        f, the least standard error as a share of E_j [1].

    Examples
    --------
    Four control households have used 1, 1, 3 and 3 kWh so far (mean 2 kWh) beside 12
    called ones that used 1.8 kWh each, whose method expects 27 kWh of a baseline of 30
    kWh (R = 0.9): B̂ = 12 × 2 = 24 kWh, E = 21.6 kWh; S² = (4 + 0) / 14 kWh² and
    σ = 0.9 × √(2/7 × 16 × 12 / 4) = 3.333 kWh.

    >>> ref = ControlGroupReference(control=(4,), called=(12,))
    >>> readings = ReferenceReadings(np.full((12, 1), 2.5), np.array([[1.0], [1], [3], [3]]))
    >>> sums = ref.block_sums(np.full((12, 1), 1.8), np.full((12, 1), 2.25), readings)
    >>> sums["accLoad"] = np.array([21.6e6])
    >>> [round(float(v[0]), 3) for v in ref.expectation(0, sums)]
    [21.6, 3.333]
    >>> ref.meters_read(readings)
    4
    """

    name: ClassVar[str] = "control_group"
    columns: ClassVar[tuple[str, ...]] = ("expected", "baseline", "control", "control_sq",
                                          "load_sq")

    control: tuple[int, ...] = ()
    called: tuple[int, ...] = ()
    floor: float = 0.01

    def block_sums(self, acc_kwh: np.ndarray, expected_acc_kwh: np.ndarray,
                   readings: ReferenceReadings | None) -> dict[str, np.ndarray]:
        """Return Σ P̂^m, Σ B̂^m, Σ C [whole µkWh] and Σ C², Σ A² [whole Wh²] of the block.

        P̂^m and B̂^m are the called households' M&V estimates, A their metered load, C
        the control households'.

        Raises
        ------
        ValueError
            Without the block's other readings (the control households' are needed).
        """
        if readings is None:
            raise ValueError("the control group's reference needs the control households' "
                             "readings beside the called ones'")
        return {"expected": micro_kwh_sum(expected_acc_kwh),
                "baseline": micro_kwh_sum(readings.baseline_acc_kwh),
                "control": micro_kwh_sum(readings.control_acc_kwh),
                "control_sq": wh_square_sum(readings.control_acc_kwh),
                "load_sq": wh_square_sum(acc_kwh)}

    def meters_read(self, readings: ReferenceReadings | None) -> int:
        """Return the block's control households: their meters are read too."""
        return 0 if readings is None else len(readings.control_acc_kwh)

    def expectation(self, group: int, totals: dict[str, np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Return E_j and σ_j of ``group`` [kWh] (module doc)."""
        n, called = self.control[group], self.called[group]
        method = totals["expected"] / MICRO
        if n < 2:  # no control mean to trust: the method's aggregate P̂ at the floor
            return method, self.floor * method
        base = totals["baseline"] / MICRO
        ratio = np.divide(method, base, out=np.ones_like(method), where=base > 0)
        mean = totals["control"] / MICRO / n
        load = totals["accLoad"] / MICRO / called
        spread = np.maximum(totals["control_sq"] / SQUARE - n * mean * mean, 0.0) + \
            np.maximum(totals["load_sq"] / SQUARE - called * load * load, 0.0) / ratio ** 2
        expected = called * mean * ratio
        std = np.sqrt(spread / max(n + called - 2, 1))
        se = ratio * standard_error(std, n, n + called)
        return expected, np.maximum(se, self.floor * expected)

    def summary(self) -> dict[str, Any]:
        """Return its name and floor."""
        return {"floor": self.floor, "reference": self.name}
