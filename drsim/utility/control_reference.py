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

The control households' mean is adjusted by regression on a covariate no DR has
touched: each household's metered energy x_k in the hour before the program's notice
(:data:`PRE_NOTICE_MINUTES`), the same day. Within a sample, a household's cumulative load
at t_j follows its load just before the notice (measured on the paper scenario: a
correlation of about 0.6 with the 18:30-20:30 energy, against 0.3-0.4 for its mean of ten
prior days), so the control sample's chance imbalance against the called households,
seen in x, is taken out of its mean, CUPED's adjustment (Deng et al. 2013) and Cochran's
regression estimator (§7.1):

.. math::

    \bar C^{adj}_j = \bar C_j + \theta_j (\bar x_{called} - \bar x_C), \quad
    \theta_j = \frac{S_{xy,j}}{S_{xx}}, \quad \hat B_j = N_g \, \bar C^{adj}_j

S_xx, S_xy and S_yy are sums of squares and products about each sample's own means,
pooled over the control households (y = C) and the called ones, whose metered load
A_{k,j} is deflated by the ratio (y = A/R_j). The residual variance gives σ_j:

.. math::

    S_j^2 = \frac{S_{yy,j} - \theta_j S_{xy,j}}{n_g + N_g - 3}, \quad
    \sigma_j = \max\Big(R_j \, S_j \sqrt{N N_g / n_g}, \; f E_j\Big)

Pooled, not the control households' own: a household's cumulative load is skewed (most
households use little, a few a lot), so a control sample that happens to draw few heavy
users has both a low mean and a low variance, and its own variance would inflate x_j
exactly when E_j is low, raising false alarms; the called households are nine in ten of
the group and carry the variance with no such tie to the control mean. Where x does not
vary (S_xx = 0) θ_j = 0 and the mean is the control households' own. Only readings up
to t_j enter E_j and σ_j: the leader knows them at t_j. Each block sends its sums of
P̂^m, B̂^m, C and x in whole µkWh and of C², A², x², C·x and A·x in whole Wh², so the
group's totals, and the test, are the same for any chunking. A group with fewer than
three control households has no regression to trust: its reference is the method's
aggregate P̂ with σ_j = f E_j.

References
----------
.. [1] B. Zhao, "State Management for Efficient Event Pattern Detection", dissertation,
   Humboldt-Universität zu Berlin, 2022, §6.2.1 (randomised control trials among the
   M&V techniques; P̂ of Eq. 6.4).
.. [2] W. G. Cochran, "Sampling Techniques", 3rd ed., Wiley, 1977, §2.4-2.5 (the variance
   of a sample mean without replacement).
.. [3] SEE Action, "Evaluation, Measurement, and Verification (EM&V) of Residential
   Behavior-Based Energy Efficiency Programs: Issues and Recommendations", LBNL, 2012
   (impacts as differences of treatment and control means).
.. [4] W. G. Cochran, "Sampling Techniques", 3rd ed., Wiley, 1977, §7.1-7.2 (the
   regression estimator and its variance (1 − ρ²) S²/n).
.. [5] A. Deng, Y. Xu, R. Kohavi, T. Walker, "Improving the Sensitivity of Online
   Controlled Experiments by Utilizing Pre-Experiment Data", Proc. WSDM 2013, 123-132
   (CUPED: a covariate measured before the treatment cuts the variance by ρ²).
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
    wh_product_sum,
    wh_square_sum,
)
from drsim.utility.control_group import standard_error

__all__ = ["ControlGroupReference", "PRE_NOTICE_MINUTES"]

#: the minutes before the notice whose energy is the covariate x [minutes]
PRE_NOTICE_MINUTES = 60


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
    kWh (R = 0.9); every household used 0.5 kWh before the notice (θ = 0): B̂ = 12 × 2
    = 24 kWh, E = 21.6 kWh; S² = (4 + 0) / 13 kWh² and σ = 0.9 × √(4/13 × 16 × 12 / 4)
    = 3.459 kWh.

    >>> ref = ControlGroupReference(control=(4,), called=(12,))
    >>> readings = ReferenceReadings(np.full((12, 1), 2.5), np.array([[1.0], [1], [3], [3]]),
    ...                              np.full(12, 0.5), np.full(4, 0.5))
    >>> sums = ref.block_sums(np.full((12, 1), 1.8), np.full((12, 1), 2.25), readings)
    >>> sums["accLoad"] = np.array([21.6e6])
    >>> [round(float(v[0]), 3) for v in ref.expectation(0, sums)]
    [21.6, 3.459]
    >>> ref.meters_read(readings)
    4
    """

    name: ClassVar[str] = "control_group"
    columns: ClassVar[tuple[str, ...]] = (
        "expected", "baseline", "control", "control_x", "load_x",  # whole µkWh
        "control_sq", "load_sq", "control_xx", "load_xx", "control_xy", "load_xy")  # Wh²

    control: tuple[int, ...] = ()
    called: tuple[int, ...] = ()
    floor: float = 0.01

    def block_sums(self, acc_kwh: np.ndarray, expected_acc_kwh: np.ndarray,
                   readings: ReferenceReadings | None) -> dict[str, np.ndarray]:
        """Return the block's sums of :attr:`columns`, each (tests,) (module doc).

        Σ P̂^m, Σ B̂^m of the called households, Σ C, Σ x of the control ones and Σ x of
        the called ones [whole µkWh]; Σ C², Σ A², Σ x², Σ C·x, Σ A·x [whole Wh²].

        Raises
        ------
        ValueError
            Without the block's other readings (the control households' are needed).
        """
        if readings is None or readings.pre_notice_kwh is None:
            raise ValueError("the control group's reference needs the control households' "
                             "readings beside the called ones'")
        k = np.shape(acc_kwh)[1]
        x = np.repeat(np.asarray(readings.pre_notice_kwh, dtype=np.float64)[:, None], k, 1)
        cx = np.repeat(np.asarray(readings.control_pre_notice_kwh,
                                  dtype=np.float64)[:, None], k, 1)
        control = readings.control_acc_kwh
        return {"expected": micro_kwh_sum(expected_acc_kwh),
                "baseline": micro_kwh_sum(readings.baseline_acc_kwh),
                "control": micro_kwh_sum(control), "control_x": micro_kwh_sum(cx),
                "load_x": micro_kwh_sum(x),
                "control_sq": wh_square_sum(control), "load_sq": wh_square_sum(acc_kwh),
                "control_xx": wh_square_sum(cx), "load_xx": wh_square_sum(x),
                "control_xy": wh_product_sum(control, cx), "load_xy": wh_product_sum(acc_kwh, x)}

    def meters_read(self, readings: ReferenceReadings | None) -> int:
        """Return the block's control households: their meters are read too."""
        return 0 if readings is None else len(readings.control_acc_kwh)

    def expectation(self, group: int, totals: dict[str, np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Return E_j and σ_j of ``group`` [kWh] (module doc)."""
        n, called = self.control[group], self.called[group]
        method = totals["expected"] / MICRO
        if n < 3:  # no regression to trust: the method's aggregate P̂ at the floor
            return method, self.floor * method
        base = totals["baseline"] / MICRO
        ratio = np.divide(method, base, out=np.ones_like(method), where=base > 0)
        t = {c: totals[c] / (MICRO if c in ("control", "control_x", "load_x", "accLoad")
                             else SQUARE) for c in ("accLoad", *self.columns)}
        c, a = t["control"] / n, t["accLoad"] / called
        xc, xa = t["control_x"] / n, t["load_x"] / called
        syy = t["control_sq"] - n * c * c + (t["load_sq"] - called * a * a) / ratio ** 2
        sxx = t["control_xx"] - n * xc * xc + t["load_xx"] - called * xa * xa
        sxy = t["control_xy"] - n * c * xc + (t["load_xy"] - called * a * xa) / ratio
        theta = np.divide(sxy, sxx, out=np.zeros_like(sxy), where=sxx > 0)
        expected = called * (c + theta * (xa - xc)) * ratio
        std = np.sqrt(np.maximum(syy - theta * sxy, 0.0) / max(n + called - 3, 1))
        se = ratio * standard_error(std, n, n + called)
        return expected, np.maximum(se, self.floor * expected)

    def summary(self) -> dict[str, Any]:
        """Return its name and floor."""
        return {"floor": self.floor, "reference": self.name}
