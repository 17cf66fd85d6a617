r"""``tolerance``: the meter test of Eq. 6.4 with a band from the M&V method's known error.

Eq. 6.4 (dissertation §6.2.1) fails a household's test when its cumulative load exceeds
its cumulative expected response P̂. P̂ is an estimate: with M&V error it is off by a
share that is the household's own and lasts the day (drsim.utility.baseline,
:func:`~drsim.utility.baseline.with_mv_error`), so a household that responds exactly as
expected fails every test when its P̂ is low. With ``tolerance`` a test fails only when
the excess is beyond z standard deviations of that error over the minutes so far:

.. math::

    \sum_{t = t_{start}}^{t_{test}} P_{k,t} > \sum_{t = t_{start}}^{t_{test}} \hat P_{k,t}
    + z \, \sigma_{k, t_{test}}, \quad
    \sigma_{k, t_{test}} = cv_k \sum_{t = t_{start}}^{t_{test}} \hat P_{k,t}

σ is the standard deviation of the cumulative P̂ when a household's error is one factor
with coefficient of variation cv_k for the whole day (the error drsim simulates;
``baseline.error``), what the utility knows of its method (``monitoring.tolerance.cv``;
default ``baseline.error``: :func:`drsim.utility.monitoring_method.known_cv`). The band is
a predicate of the meter query, over a second lookup ``σ[houseID, time]`` the utility
publishes with ``λ`` (:data:`METER_QUERY`); the rest of Listing 6.1 and Listings
6.2-6.3 are unchanged, and γ comes from replicas tested with the same band. With z = 0 or
cv = 0 the band is 0 and the method is ``counting`` value for value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from drsim.utility.monitoring_method import MonitoringMethod

__all__ = ["METER_QUERY", "Tolerance"]

#: Listing 6.1 with the band of Eq. 6.4 (module doc) as its load predicate
METER_QUERY = """\
SEQ (smartMeterEvent a+[])
WHERE SAME[houseID] AND a[i].time >= t_first_test AND a[i].time < t_end
AND a[i].accLoad > λ[a[i].houseID, a[i].time] + z × σ[a[i].houseID, a[i].time]
AND a[i].time + δ = a[i+1].time
AND LENGTH(a+[]) > m_user
WITHIN 2h
RETURN userNonComplianceEvent(a[last].time, a[last].houseID, a[last].groupID,
                              a[last].accLoad)"""


@dataclass(frozen=True)
class Tolerance(MonitoringMethod):
    """The meter test of Eq. 6.4 with a band of z standard deviations (module doc).

    Attributes
    ----------
    z : float
        Standard deviations of the expected response's error above it at which a test
        fails [1].
    cv : float
        cv_k, the coefficient of variation of each household's expected response that
        the utility knows its M&V method has [1].

    Examples
    --------
    The band of two households with P̂ of 2 and 4 kWh so far, 10 % error known:

    >>> lam = pd.DataFrame([[2.0], [4.0]], index=[7, 8], columns=[1130])
    >>> t = Tolerance(z=1.64, cv=0.1)
    >>> t.meter_tables(lam)["σ"][1130].tolist(), t.params()
    ([0.2, 0.4], {'z': 1.64})
    """

    name: ClassVar[str] = "tolerance"
    tables: ClassVar[tuple[str, ...]] = ("σ",)

    z: float = 1.64
    cv: float = 0.0

    def queries(self) -> dict[str, str]:
        """Return Listing 6.1 with the band (:data:`METER_QUERY`)."""
        return {"meter": METER_QUERY}

    def params(self) -> dict[str, Any]:
        """Return ``z`` of the band."""
        return {"z": self.z}

    def meter_tables(self, lam: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """Return ``σ[houseID, time] = cv_k · λ[houseID, time]`` [kWh].

        The standard deviation of each household's cumulative P̂ under a day-long error
        factor (module doc).
        """
        return {"σ": lam * self.cv}

    def summary(self) -> dict[str, Any]:
        """Return the method, z and cv as run."""
        return {"method": self.name, "method_settings": {"z": self.z, "cv": self.cv}}
