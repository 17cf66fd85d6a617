r"""``aggregate``: a sequential test of each group's summed readings at its group leader.

Counting (Listings 6.1-6.2) tests every household against its own P̂, whose M&V error is
tens of percent at the household level; the sum of a group's P̂ errs far less, since the
households' own errors average out and only what they share remains. With ``aggregate``
the meters' readings are summed per group and test time (the meter tier sends the sums,
not user events: :func:`meter_sums`), and the group leader runs a one-sided CUSUM (Page
1954) of the group's cumulative metered load A_j against its cumulative aggregate P̂ E_j
at test time t_j, standardised by the aggregate's standard error σ_j:

.. math::

    x_j = \frac{A_j - E_j}{\sigma_j}, \quad
    S_j = \max(0, S_{j-1} + x_j - k), \quad S_0 = 0

and raises the group event (``groupNonComplianceEvent``, which latches the group as
Listing 6.2's does) at every test with S_j > h. Where E_j and σ_j come from is the
method's reference (:mod:`drsim.utility.aggregate_reference`), chosen once per scenario
(:func:`drsim.utility.method_registry.reference_of`): without a control group the M&V
method's aggregate P̂ and the standard error of its known relative error cv_k per
household, a share ρ of it common to the group, floored at f·E_j
(:mod:`drsim.utility.known_cv_reference`); with a control group the control households'
same-day load, which carries the day's common factor, adjusted by regression on the
hour before the notice, with the households' pooled variance
(:mod:`drsim.utility.control_reference`). k is the reference value and h the
decision interval in standard errors (Montgomery, §9.1: k is half the shift to be
detected quickly, h about 4-5). The observations of a day are not independent: a
household's error lasts the day, so x_j of an expected group stays near one N(0, 1) draw
Z through the program, and S_n crosses h by the n-th test when Z > k + h/n; with the
defaults (k = 1.5, h = 5) and the paper's 20 tests that is 1 − Φ(1.75) ≈ 4 % of expected
groups, against Montgomery's in-control average run length for independent observations.

The crossing is Page's own form of the CUSUM: S_j > h exactly when the cumulative sum
C_j = Σ_{l ≤ j} (x_l − k) has risen by more than h since some earlier C_i (C_0 = 0 at
t_start), which the group query says as a pair of events under skip-till-any-match
(:data:`GROUP_QUERY`); :func:`cusum` computes S_j by the same identity,
S_j = C_j − min_{i ≤ j} C_i.

References: E. S. Page, "Continuous Inspection Schemes", Biometrika 41(1/2), 100-115,
1954; A. Wald, "Sequential Tests of Statistical Hypotheses", Annals of Mathematical
Statistics 16(2), 117-186, 1945 (the CUSUM is a sequence of Wald's sequential
probability ratio tests for a shift of 2k); D. C. Montgomery, *Introduction to
Statistical Quality Control*, 6th ed., Wiley 2009, §9.1 (the tabular CUSUM, k and h).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from drsim.utility.aggregate_reference import (
    AggregateReference,
    ReferenceReadings,
    micro_kwh_sum,
)
from drsim.utility.known_cv_reference import KnownCv
from drsim.utility.meter_result import MeterResult
from drsim.utility.monitoring_method import MonitoringMethod
from drsim.utility.utility_rule import LATCHED_GROUPS, UtilityRule

__all__ = ["Aggregate", "GROUP_QUERY", "cusum", "meter_sums"]

#: the reference of a method without settings: P̂ with no known error, at the floor
KNOWN_CV = KnownCv()

#: the crossing of h by the CUSUM, in Page's form (module doc), over the leader's
#: statistic at each test time (``cusum``: C_j) and a start event at t_start (C_0 = 0)
GROUP_QUERY = """\
SEQ (groupStatisticEvent a, groupStatisticEvent b)
WHERE SAME[groupID] AND b.time >= t_first_test AND b.time < t_end
AND b.cusum - a.cusum > h
WITHIN 2h
RETURN groupNonComplianceEvent(b.time, b.groupID, b.sumAccLoad)"""


def cusum(x: np.ndarray, k: float) -> np.ndarray:
    r"""Compute the one-sided CUSUM S_j of standardised observations x_j.

    .. math:: S_j = \max(0, S_{j-1} + x_j - k) = C_j - \min_{0 \le i \le j} C_i, \quad
              C_j = \sum_{l \le j} (x_l - k), \; C_0 = 0

    (Page 1954; Montgomery §9.1.2, the upper tabular CUSUM), vectorised over the leading
    axes: the second form needs no loop over the tests.

    Parameters
    ----------
    x : numpy.ndarray
        (..., tests) standardised observations [standard errors].
    k : float
        The reference value [standard errors].

    Returns
    -------
    numpy.ndarray
        S_j, same shape [standard errors].

    References
    ----------
    .. [1] E. S. Page, "Continuous Inspection Schemes", Biometrika 41(1/2), 100-115, 1954.
    .. [2] D. C. Montgomery, *Introduction to Statistical Quality Control*, 6th ed.,
       Wiley, 2009, §9.1.2.

    Examples
    --------
    >>> cusum(np.array([1.0, 2.0, -3.0, 2.5]), 0.5).tolist()
    [0.5, 2.0, 0.0, 2.0]
    """
    c = np.cumsum(np.asarray(x, dtype=np.float64) - k, axis=-1)
    return c - np.minimum.accumulate(np.minimum(c, 0.0), axis=-1)


def meter_sums(house_ids: np.ndarray, group_id: int, times: np.ndarray, acc_kwh: np.ndarray,
               expected_acc_kwh: np.ndarray, reference: AggregateReference = KNOWN_CV,
               readings: ReferenceReadings | None = None) -> MeterResult:
    """Sum a block of households' readings at each test time: what its meters send.

    With ``aggregate`` the meters run no query: the head-end sums the readings of each
    test time (one sum per block and test, no user event), and the group leader adds the
    blocks' sums (:func:`drsim.utility.aggregate_tier.aggregate_tier`): Σ A of the called
    households and the sums the reference reads
    (:meth:`~drsim.utility.aggregate_reference.AggregateReference.block_sums`). They are
    whole µkWh and whole Wh², integers that a float64 holds exactly, so the group's sums
    are the same in any order of blocks: the same numbers for any chunking.

    Parameters
    ----------
    house_ids : numpy.ndarray
        (households,) the block's called household ids.
    group_id : int
        The block's group.
    times : numpy.ndarray
        (tests,) the test times [minutes since midnight].
    acc_kwh, expected_acc_kwh : numpy.ndarray
        (households, tests) the cumulative load and P̂ at each test [kWh].
    reference : drsim.utility.aggregate_reference.AggregateReference, default :data:`KNOWN_CV`
        Which sums beside Σ A the block sends.
    readings : drsim.utility.aggregate_reference.ReferenceReadings, optional
        The block's other readings the reference may read (its control households').

    Returns
    -------
    MeterResult
        ``events``: one row per test time (houseID −1: a sum), ``accLoad`` Σ A [whole
        µkWh] and a column per sum of the reference (``expected`` Σ E [whole µkWh],
        ``expected_sq`` Σ E² [whole Wh²] for the known error's); the meters read as the
        events processed, no partial match, no user event, no household flagged.

    Examples
    --------
    >>> m = meter_sums(np.array([7, 8]), 0, np.array([1130, 1135]),
    ...                np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 1.0], [2.0, 2.0]]))
    >>> m.events[["time", "accLoad", "expected", "expected_sq"]].values.tolist()
    [[1130.0, 4000000.0, 3000000.0, 5000000.0], [1135.0, 6000000.0, 3000000.0, 5000000.0]]
    >>> m.processed.tolist(), m.outputs.tolist(), m.first_flag.tolist()
    ([2, 2], [0, 0], [-1, -1])
    """
    n, k = len(house_ids), len(times)
    events = pd.DataFrame({
        "time": np.asarray(times, dtype=np.int64), "houseID": np.full(k, -1, np.int64),
        "groupID": np.full(k, group_id, np.int64), "accLoad": micro_kwh_sum(acc_kwh),
        "delay": np.zeros(k), "missing": np.zeros(k, np.int64),
        **reference.block_sums(acc_kwh, expected_acc_kwh, readings)})
    zeros = np.zeros(k, dtype=np.int64)
    read = n + reference.meters_read(readings)
    return MeterResult(events, np.full(k, read, dtype=np.int64), zeros, zeros.copy(),
                       np.full(n, -1, dtype=np.int64), zeros.copy())


@dataclass(frozen=True)
class Aggregate(MonitoringMethod):
    """A one-sided CUSUM of each group's summed readings at its leader (module doc).

    Attributes
    ----------
    k, h : float
        The reference value and the decision interval [standard errors].
    reference : drsim.utility.aggregate_reference.AggregateReference
        Where E_j and σ_j come from (default: the method's aggregate P̂ and its known
        error, :class:`~drsim.utility.known_cv_reference.KnownCv`).
    utility : drsim.utility.utility_rule.UtilityRule
        What the utility tests (default: Listing 6.3 over the groups' latches; or one
        CUSUM of the groups' summed excess, :class:`~drsim.utility.pooled_rule.PooledCusum`).

    Examples
    --------
    >>> a = Aggregate(k=1.5, h=5.0, reference=KnownCv(cv=0.1))
    >>> a.group_test, a.gamma_user(0.05), sorted(a.params())
    (True, 1.0, ['h'])
    >>> settings = a.summary()["method_settings"]
    >>> settings["cv"], settings["reference"]
    (0.1, 'known_cv')
    """

    name: ClassVar[str] = "aggregate"
    group_test: ClassVar[bool] = True

    k: float = 1.5
    h: float = 5.0
    reference: AggregateReference = KNOWN_CV
    utility: UtilityRule = LATCHED_GROUPS

    def meter(self, house_ids: np.ndarray, group_id: int, times: np.ndarray,
              acc_kwh: np.ndarray, expected_acc_kwh: np.ndarray,
              readings: ReferenceReadings | None = None) -> MeterResult:
        """Return the block's readings' sums for the reference (:func:`meter_sums`)."""
        return meter_sums(house_ids, group_id, times, acc_kwh, expected_acc_kwh,
                          self.reference, readings)

    def refusal(self, scenario: Any) -> str | None:
        """Return why the CUSUM does not run with ``scenario`` (None: it does).

        The gateways of load shedding and remote profiles run the meter query, which
        ``aggregate`` replaces by sums; lost readings would need the sums of the readings
        that arrived and a leader that knows how many did.
        """
        mon = scenario.monitoring
        for key, value in (("monitoring.shedding", mon.shedding),
                           ("monitoring.remote", mon.remote),
                           ("meters.reading_loss", scenario.meters.reading_loss)):
            if value is not None:
                return f"{key} does not run with monitoring.method aggregate yet"
        return None

    def queries(self) -> dict[str, str]:
        """Return the leader's query (:data:`GROUP_QUERY`, ``group_cusum``) and the rule's."""
        return {"group_cusum": GROUP_QUERY, **self.utility.queries()}

    def params(self) -> dict[str, Any]:
        """Return ``h``, the decision interval, and the utility rule's parameters."""
        return {"h": self.h, **self.utility.params()}

    def utility_rule(self) -> UtilityRule:
        """Return what the utility tests (:attr:`utility`)."""
        return self.utility

    def gamma_user(self, gamma_user: Any) -> Any:
        """Return 1: no group alerts by counting flagged households (γ plays no part)."""
        return 1.0

    def summary(self) -> dict[str, Any]:
        """Return the method and its settings as run."""
        return {"method": self.name, "method_settings": {
            "k": self.k, "h": self.h, **self.reference.summary(), **self.utility.summary()}}
