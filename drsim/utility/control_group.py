r"""M&V by control group: the group-level baseline from households the utility does not call.

A randomised control trial, which §6.2.1 of the dissertation names among the techniques B
and P̂ are estimated by, keeps a random share of the enrolled households out of the DR
events (:mod:`drsim.household.control` draws them, a simple random sample of fixed size
per group). Their metered load is the counterfactual of the called households: the mean
of n control households times the N_called called households of the group estimates the
group's baseline, minute by minute,

.. math:: \hat B_{g,t} = N_{called,g} \cdot \frac{1}{n_g} \sum_{k \in C_g} P_{k,t}

an unbiased estimate of the called households' no-DR load, with no model, no prior days
and no day-to-day drift (the control households live through the evaluated day, whatever
moves it). It is an estimate of the group, not of a household: a household's share,
:math:`\hat B_{g,t} / N_{called,g}`, is the group's mean and says nothing of the
household's own baseline. The meter test (Eq. 6.4) therefore still reads the households'
own B̂ and P̂ from the scenario's M&V method; the control group's estimate replaces their
sum wherever the utility reads a group's or the program's baseline: the reduction it
realises so far and its shortfall at t_nc (drsim.utility.deficit), the goal 'expected'
and the reduction it settles. There the control households' load is first adjusted on
each household's energy in the hour before the notice
(:mod:`drsim.utility.control_adjustment`).

P̂ of the group follows the method's ratio of expected response to baseline, minute by
minute (where the method's B̂ is 0, P̂ = B̂):

.. math:: \hat P_{g,t} = \hat B_{g,t} \cdot \hat P^{m}_{g,t} / \hat B^{m}_{g,t}

Standard error. With n control households drawn without replacement from the N enrolled
ones of a group, N_called = N − n, and s the standard deviation of a household's load (or
energy) among them, B̂ misses the called households' true no-DR load by
N·(ȳ_C − Ȳ), so

.. math:: \mathrm{SE}(\hat B_g - B_g) = s \cdot \sqrt{N \cdot N_{called} / n}

(:func:`standard_error`; Cochran's variance of a sample mean with the finite population
correction). Relative to B_g it is (s/ȳ)·√(N / (n·N_called)), falling as 1/√n: for a
share of 10 % of a group of 10,000 (n = 1,000), 3.3 % of the households' coefficient of
variation s/ȳ. The control households, meanwhile, deliver no reduction
(docs/decisions.md, "The control group").

References
----------
.. [1] B. Zhao, "State Management for Efficient Event Pattern Detection", dissertation,
   Humboldt-Universität zu Berlin, 2022, §6.2.1 ("randomised control trials").
.. [2] State and Local Energy Efficiency Action Network (SEE Action), "Evaluation,
   Measurement, and Verification (EM&V) of Residential Behavior-Based Energy Efficiency
   Programs: Issues and Recommendations", prepared by A. Todd, E. Stuart, S. Schiller,
   C. Goldman, Lawrence Berkeley National Laboratory, May 2012 (randomised control trials
   as the recommended design; savings as the difference of treatment and control means).
.. [3] P. Cappers, A. Todd-Blick, M. Perry, B. Neenan, R. Boisvert, "Quantifying the
   Impacts of Time-based Rates, Enabling Technology, and Other Treatments in Consumer
   Behavior Studies: Protocols and Guidelines", Lawrence Berkeley National Laboratory and
   EPRI for the U.S. Department of Energy, LBNL-6108E, July 2013 (randomised control trials
   for time-based rates and DR events; the impact as the difference of treatment and
   control loads).
.. [4] W. G. Cochran, "Sampling Techniques", 3rd ed., Wiley, 1977, §2.4-2.5 (the variance
   of a sample mean without replacement, the finite population correction).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["GroupEstimates", "group_estimates", "standard_error"]


@dataclass(frozen=True)
class GroupEstimates:
    """The control group's estimates of each group over the day.

    Attributes
    ----------
    baseline_kw : numpy.ndarray
        B̂ of each group's called households, (groups, minutes) [kW]; the method's where a
        group has no control household.
    expected_kw : numpy.ndarray
        P̂ of each group's called households, same shape [kW].
    control : numpy.ndarray
        Control households per group, (groups,) [households].
    called : numpy.ndarray
        Called households per group, (groups,) [households].
    """

    baseline_kw: np.ndarray
    expected_kw: np.ndarray
    control: np.ndarray
    called: np.ndarray

    @property
    def household_baseline_kw(self) -> np.ndarray:
        """A called household's B̂: the group's mean, (groups, minutes) [kW].

        Group-level only: every household of a group has the same value, which estimates
        the group's mean, not the household's own baseline (module doc).
        """
        return self.baseline_kw / np.maximum(self.called, 1)[:, None]


def group_estimates(control_kw: np.ndarray, control: np.ndarray, called: np.ndarray,
                    method_baseline_kw: np.ndarray, method_expected_kw: np.ndarray
                    ) -> GroupEstimates:
    r"""Estimate each group's B̂ and P̂ from its control households (module doc).

    :math:`\hat B_{g,t} = N_{called,g} \cdot \bar P_{C_g,t}` and
    :math:`\hat P_{g,t} = \hat B_{g,t} \cdot \hat P^m_{g,t} / \hat B^m_{g,t}`
    (:math:`\hat P_{g,t} = \hat B_{g,t}` where :math:`\hat B^m_{g,t} = 0`); a group
    without control households keeps the method's B̂^m and P̂^m. Minutes where the method
    has no estimate (NaN: outside the program window) have none.

    Parameters
    ----------
    control_kw : numpy.ndarray
        The control households' metered load summed per group, (groups, minutes) [kW].
    control, called : numpy.ndarray
        Control and called households per group, (groups,) [households].
    method_baseline_kw, method_expected_kw : numpy.ndarray
        The M&V method's B̂ and P̂ summed over each group's called households, (groups,
        minutes) [kW].

    Returns
    -------
    GroupEstimates
        B̂ and P̂ of each group [kW].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.2-6.4;
       "randomised control trials").
    .. [2] SEE Action, "Evaluation, Measurement, and Verification (EM&V) of Residential
       Behavior-Based Energy Efficiency Programs: Issues and Recommendations", 2012.

    Examples
    --------
    Two control households drawing 1 and 3 kW stand for 10 called ones; the method expects
    half the baseline during the event:

    >>> est = group_estimates(np.array([[4.0, 4.0]]), np.array([2]), np.array([10]),
    ...                       np.array([[18.0, 18.0]]), np.array([[18.0, 9.0]]))
    >>> est.baseline_kw.tolist(), est.expected_kw.tolist()
    ([[20.0, 20.0]], [[20.0, 10.0]])
    >>> est.household_baseline_kw.tolist()
    [[2.0, 2.0]]
    """
    control = np.asarray(control, dtype=np.int64)
    called = np.asarray(called, dtype=np.int64)
    has = (control > 0)[:, None]
    mean = np.asarray(control_kw, dtype=np.float64) / np.maximum(control, 1)[:, None]
    baseline = np.where(has, mean * called[:, None], method_baseline_kw)
    baseline = np.where(np.isnan(method_baseline_kw), np.nan, baseline)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(method_baseline_kw > 0, method_expected_kw / method_baseline_kw, 1.0)
    expected = np.where(has, baseline * ratio, method_expected_kw)
    return GroupEstimates(baseline, expected, control, called)


def standard_error(std: float | np.ndarray, control: int, enrolled: int
                   ) -> float | np.ndarray:
    r"""Compute the standard error of a group's control-group B̂ (module doc).

    .. math:: \mathrm{SE} = s \cdot \sqrt{N \cdot (N - n) / n}

    the standard deviation of B̂ − B, the estimate less the N − n called households'
    true no-DR load, for a simple random sample of n control households of the N enrolled
    ones: B̂ − B = N·(ȳ_C − Ȳ), whose variance is N²·(1 − n/N)·s²/n (Cochran 1977, §2.5);
    ``std`` is s, the households' standard deviation of what is estimated (a minute's
    load [kW] or the program's energy [kWh]).

    Parameters
    ----------
    std : float or numpy.ndarray
        s, the standard deviation among households [kW or kWh].
    control : int
        n, the control households (≥ 1) [households].
    enrolled : int
        N, the group's enrolled households (≥ n) [households].

    Returns
    -------
    float or numpy.ndarray
        The standard error of B̂, in the unit of ``std``.

    Raises
    ------
    ValueError
        If n < 1 or n > N.

    References
    ----------
    .. [1] W. G. Cochran, "Sampling Techniques", 3rd ed., Wiley, 1977, §2.5.

    Examples
    --------
    1,000 control households of 10,000, households' evening energy with s = 1.5 kWh:

    >>> round(float(standard_error(1.5, 1000, 10000)), 1)
    450.0
    """
    if not 1 <= control <= enrolled:
        raise ValueError(f"control households {control}: expected 1 to {enrolled}")
    return np.asarray(std) * np.sqrt(enrolled * (enrolled - control) / control)[()]
