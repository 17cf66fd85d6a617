r"""``utility: pooled``: one CUSUM at the utility of every group's excess over its reference.

With ``aggregate`` each group leader tests its own group (:mod:`drsim.utility.aggregate_method`);
Listing 6.3 then waits until more than γ_group of the groups have latched, each on its own
standard error. A small group's control sample is small, so its standard error can hide its
deficit long after the program as a whole is visibly short. The pooled rule reads, instead
of the latches, each leader's excess over its reference and that reference's variance at
every test time t_j, and runs one one-sided CUSUM (Page 1954) of their sums:

.. math::

    D_j = \sum_g (A_{g,j} - E_{g,j}), \quad
    \sigma_j = \sqrt{\sum_g \sigma_{g,j}^2}, \quad
    x_j = D_j / \sigma_j, \quad
    S_j = \max(0, S_{j-1} + x_j - k_u), \; S_0 = 0

The groups' references are independent (each group's control sample is its own, and the
known error's common share is a group's own), so the variance of the sum is the sum of the
variances: the utility sees the program's deficit with the precision of all the groups'
control households together. It alerts at every test with S_j > h_u
(:data:`UTILITY_QUERY`, Page's form as the group query's), the alert holds at every tick
until the next test's statistic is known (as a group alert does, docs/decisions.md,
"Cadence, held status and latching"), and Listing 6.3's bottom query predicts at the
(m_utility + 1)-th alert in a row (:func:`drsim.utility.pooled_tier.pooled_tier`). The
group leaders' own CUSUMs still run and their latches are reported, but the utility no
longer counts them; since it reads every group's statistic until it predicts, no latch
slows a group's meters to the settlement rate before t_nc
(:meth:`PooledCusum.slowed_from`), and what the utility knows of the deficit at t_nc is
every group's readings up to t_nc. k_u and h_u default to the groups' k and h. The
leaders' excesses and variances come from the blocks' whole µkWh and Wh² sums, so the
statistic is the same for any chunking.

References
----------
.. [1] E. S. Page, "Continuous Inspection Schemes", Biometrika 41(1/2), 100-115, 1954.
.. [2] D. C. Montgomery, *Introduction to Statistical Quality Control*, 6th ed., Wiley,
   2009, §9.1 (the tabular CUSUM, k and h).
.. [3] B. Zhao, "State Management for Efficient Event Pattern Detection", dissertation,
   Humboldt-Universität zu Berlin, 2022, §6.2.2 (Listing 6.3, whose top query this
   replaces).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from drsim.utility.aggregate_method import cusum
from drsim.utility.utility_rule import UtilityRule

__all__ = ["PooledCusum", "UTILITY_QUERY", "pooled_statistic"]

#: the crossing of h_u by the pooled CUSUM in Page's form, over the utility's statistic at
#: each test time (C_j = Σ (x − k_u)) and a start event at t_start (C_0 = 0)
UTILITY_QUERY = """\
SEQ (utilityStatisticEvent a, utilityStatisticEvent b)
WHERE b.time >= t_first_test AND b.time < t_end
AND b.cusum - a.cusum > h_utility
WITHIN 2h
RETURN utilityAlertEvent(b.time, b.load)"""


def pooled_statistic(excess: np.ndarray, variance: np.ndarray, k: float
                     ) -> dict[str, np.ndarray]:
    r"""Return the utility's pooled statistic at each test time (module doc).

    Parameters
    ----------
    excess : numpy.ndarray
        (groups, tests) each group's A_{g,j} − E_{g,j} [kWh].
    variance : numpy.ndarray
        (groups, tests) each group's σ_{g,j}² [kWh²].
    k : float
        k_u, the reference value [standard errors].

    Returns
    -------
    dict of str to numpy.ndarray
        Per test: ``excess`` D_j [kWh], ``se`` σ_j [kWh], ``x`` [standard errors] (0
        where σ_j = 0), ``cusum`` C_j = Σ (x − k_u) and ``statistic`` S_j [standard
        errors].

    Examples
    --------
    Two groups 3 and 5 kWh above their references with standard errors 3 and 4 kWh: D = 8
    kWh, σ = 5 kWh, x = 1.6, where neither group alone is above 1.25.

    >>> s = pooled_statistic(np.array([[3.0, 3.0], [5.0, 5.0]]),
    ...                      np.array([[9.0, 9.0], [16.0, 16.0]]), 1.0)
    >>> s["se"].tolist(), s["x"].round(6).tolist(), s["statistic"].round(6).tolist()
    ([5.0, 5.0], [1.6, 1.6], [0.6, 1.2])
    """
    total = np.asarray(excess, dtype=np.float64).sum(axis=0)
    se = np.sqrt(np.asarray(variance, dtype=np.float64).sum(axis=0))
    x = np.divide(total, se, out=np.zeros_like(total), where=se > 0)
    return {"excess": total, "se": se, "x": x, "cusum": np.cumsum(x - k),
            "statistic": cusum(x, k)}


@dataclass(frozen=True)
class PooledCusum(UtilityRule):
    """One CUSUM of the groups' summed excess at the utility (module doc).

    Attributes
    ----------
    k, h : float
        k_u and h_u, the reference value and the decision interval [standard errors].

    Examples
    --------
    >>> rule = PooledCusum(k=2.0, h=4.0)
    >>> rule.reads_statistics, rule.params(), sorted(rule.queries())
    (True, {'h_utility': 4.0}, ['utility_cusum'])
    >>> rule.summary()
    {'utility': 'pooled', 'utility_k': 2.0, 'utility_h': 4.0}
    >>> rule.slowed_from([1136, -1])
    [-1, -1]
    """

    name: ClassVar[str] = "pooled"
    reads_statistics: ClassVar[bool] = True

    k: float = 1.5
    h: float = 5.0

    def slowed_from(self, latch: list[int]) -> list[int]:
        """Return NOT_LATCHED (−1) for every group.

        The utility reads every group's statistic until it predicts, so no latch slows a
        group's meters before then.
        """
        return [-1] * len(latch)

    def queries(self) -> dict[str, str]:
        """Return the utility's CUSUM query (:data:`UTILITY_QUERY`) as ``utility_cusum``."""
        return {"utility_cusum": UTILITY_QUERY}

    def params(self) -> dict[str, Any]:
        """Return ``h_utility``, the decision interval h_u."""
        return {"h_utility": self.h}

    def summary(self) -> dict[str, Any]:
        """Return its name, k_u and h_u."""
        return {"utility": self.name, "utility_k": self.k, "utility_h": self.h}
