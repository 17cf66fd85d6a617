"""Incentive module of the second DR event (dissertation §6.2.3 and §6.3.2, Eq. 6.5-6.8).

Source: the dissertation (Zhao 2022), §6.2.3.1 "Incentive for the Second DR Program"
(Eq. 6.5, Eq. 6.6, Figure 6.8), §6.2.3.2 "Correlations between Additional Incentive and
Consumer Response" (Figure 6.9) and §6.3.2 (Eq. 6.7, Eq. 6.8, u and β); the readings below
are recorded in docs/decisions.md under the headings named with each.

When the utility predicts non-compliance it offers every participant a second DR event with
a higher incentive λ_new (Eq. 6.7), to which households respond with a higher follow-through
θ_new (Eq. 6.8). A lottery pays the extra incentive to a fraction p_inc of the participants
that comply in the second event, as far as the saved cost allows (Eq. 6.5), and a penalty
C_nc for non-compliance in the first event keeps full first-event participation the dominant
strategy (Eq. 6.6, Figure 6.8).
This module holds Eq. 6.7-6.8 and the plan of the second event; the mappings u and the
participants' exact sums are :mod:`drsim.utility.participants`, the lottery and the
penalty (Eq. 6.5-6.6) are :mod:`drsim.utility.lottery`, the checks of the formulas'
arguments :mod:`drsim.utility.arguments`.

Flow in a run (households never pass through the driver; every sum is exact, so results do
not depend on chunking)::

    chunk   u = household_mappings(scenario, ids)
            ParticipantSums.of(theta_o, theta_red, u)          merged with +
    driver  plan_second_event(scenario.incentive, λ_o, sums, monitoring_cost=...,
                              c_saved=..., theta_red_mean=θ̄_red known at t_nc)
    chunk   θ_new = result.new_follow_through(theta_o, theta_red)     (adaptive pass)
            ParticipantSums.of(..., theta_new=θ_new) → result.with_response(sums)
    chunk   compliant = second_event_compliant(B̂, P̂, P)               (its window)
            winners = lottery_winners(seed, ids, result.p_inc, compliant)
            result.winner_counts(u, winners)                   merged by adding
    driver  result.with_lottery(counts, compliant households)

The utility plans with what it knows at t_nc (drsim.utility.deficit; docs/decisions.md, "What the
utility knows at the prediction"): θ̄_o of its participants (their enrolment), and θ̄_red
estimated from the meter data so far, never the simulation's input θ_o·(1 − drop). A
household's own θ_red in Eq. 6.8 is its behaviour (how it responds to the incentive), which
the simulation knows and the utility does not need to.

Readings where the text is silent (Figures 6.8 and 6.9 are images without numbers):

* Means and per-household values (docs/decisions.md, "Means and per-household values in
  Eq. 6.7 and Eq. 6.8"). Eq. 6.7 uses only the means θ̄_o (expected) and θ̄_red (observed)
  over all participants. In Eq. 6.8 θ_red and θ_o carry no bar: they are the household's
  own observed and expected follow-through; θ̄_o, θ̄_red are the same means as in Eq. 6.7.
  Without clamping the mean of θ_new is exactly β·θ̄_o, since the gain
  (1 − θ_o)/(1 − θ̄_o)·(β·θ̄_o − θ̄_red) averages to β·θ̄_o − θ̄_red.
* The mapping u (docs/decisions.md, "The incentive-response mapping u"). Eq. 6.7 is the
  linear mapping through (λ_o, θ̄_red) (the "shifted mapping" observed in the first event,
  §6.2.3.2) with slope (1 − θ̄_o)/((u − 1)·λ_o): the unshifted line reaches follow-through
  1 at the incentive u·λ_o. u sets the price λ_new, not θ_new (Eq. 6.8 has no u).
* Figure 6.9's hatched region (docs/decisions.md, "The hatched region of Figure 6.9") is a
  band [lower, upper] of follow-through (``Incentive.target_min_follow_through`` /
  ``target_max_follow_through``). A household whose first-event θ_red is below ``lower``
  "did not respond at all" and one at or above ``upper`` already "responded fully"
  (§6.2.3.2): both keep θ_red ("gain little" read as "gain nothing"). Inside the band
  θ_new is capped at ``upper``. Eq. 6.8's factor (1 − θ_o) already gives a household
  expected to respond fully (θ_o = 1) no gain.
* Figure 6.8's payoffs (docs/decisions.md, "Payoffs of Figure 6.8 and the penalty of
  Eq. 6.6"), reconstructed from Eq. 6.6 (the only constraint the text gives): Strategy-1
  comply in the first event: λ_o; Strategy-2 comply only in the second:
  p_inc·λ_new − C_nc; Strategy-3 comply in neither: −C_nc. Strategy-1 beats Strategy-2
  exactly when Eq. 6.6 holds.
* κ = p_inc × N with N all participants (docs/decisions.md, "The lottery of Eq. 6.5"; the
  text: "total participants"): the utility does not know who will comply when it
  announces the event, so budgeting for all of them keeps Eq. 6.5 within budget in
  expectation whoever complies. κ is a whole number of participants and p_inc = κ/N. With
  several mappings the extra incentive per winner is the participant-weighted mean of
  λ_new(u) − λ_o (winners are drawn uniformly).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from drsim.utility.arguments import (
    factors_array,
    in_range,
    non_negative,
    positive,
    rates,
)
from drsim.utility.lottery import (
    Lottery,
    largest_lottery,
    penalty,
    penalty_bound,
)
from drsim.utility.participants import ParticipantSums

if TYPE_CHECKING:
    from drsim.scenario import Incentive

__all__ = [
    "IncentiveResult",
    "new_follow_through",
    "new_incentive",
    "plan_second_event",
]



def _deficit(theta_o_mean: float, theta_red_mean: float, beta: float) -> tuple[float, float]:
    """Return (β·θ̄_o − θ̄_red, 1 − θ̄_o) of Eq. 6.7/6.8, checked."""
    mean_o = in_range("theta_o_mean", theta_o_mean, 0.0, 1.0, hi_open=True)
    mean_red = in_range("theta_red_mean", theta_red_mean, 0.0, 1.0)
    b = positive("beta", beta)
    deficit = b * mean_o - mean_red
    if deficit < 0:
        raise ValueError(
            f"beta·theta_o_mean − theta_red_mean = {b:g}·{mean_o:g} − {mean_red:g} = "
            f"{deficit:g} < 0: the observed mean follow-through is already above the "
            "over-compensated target β·θ̄_o, so Eq. 6.7 would lower the incentive; no second "
            "event is needed (accepted: beta·theta_o_mean >= theta_red_mean)")
    return deficit, 1.0 - mean_o


# --------------------------------------------------------------------------------------------
# Eq. 6.7 and Eq. 6.8
# --------------------------------------------------------------------------------------------


def new_incentive(u: ArrayLike, lambda_o: float, theta_o_mean: float, theta_red_mean: float,
                  beta: float) -> np.ndarray | float:
    r"""Compute the second event's incentive λ_new per mapping u (Eq. 6.7).

    The utility raises the first event's incentive λ_o in proportion to the deficit of
    follow-through it observed, over-compensated by β (Eq. 6.7, §6.3.2):

    .. math:: \lambda_{new} = \lambda_o + \frac{(u - 1) \lambda_o}{1 - \bar\theta_o}
              (\beta \bar\theta_o - \bar\theta_{red})

    θ̄_o and θ̄_red are means over all participants (docs/decisions.md, "Means and
    per-household values in Eq. 6.7 and Eq. 6.8"). drsim reads Eq. 6.7 as the linear
    mapping through (λ_o, θ̄_red), the shifted mapping of §6.2.3.2, whose unshifted line
    reaches follow-through 1 at the incentive u·λ_o: u sets the price λ_new, not θ_new
    (docs/decisions.md, "The incentive-response mapping u").

    Parameters
    ----------
    u : float or array_like
        Mapping factor(s) u, each >= 1 [1].
    lambda_o : float
        The first event's incentive λ_o, > 0 [currency units per participant].
    theta_o_mean : float
        θ̄_o, the participants' mean expected follow-through, in [0, 1) [1].
    theta_red_mean : float
        θ̄_red, the participants' mean observed (first-event) follow-through, in [0, 1]
        [1].
    beta : float
        The over-compensation factor β, > 0 (§6.3.2: 1.8) [1].

    Returns
    -------
    float or numpy.ndarray
        λ_new [currency units per participant]: a float for a scalar ``u``, else one per
        element of ``u``.

    Raises
    ------
    ValueError
        For u < 1, λ_o <= 0, θ̄_o outside [0, 1), θ̄_red outside [0, 1], β <= 0, or
        β·θ̄_o < θ̄_red (no deficit: Eq. 6.7 would lower the incentive).

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.2, Eq. 6.7; §6.2.3.2 (Figure 6.9).

    Examples
    --------
    >>> new_incentive(1.1, 1.0, 0.5, 0.3, 1.8)
    1.12
    >>> new_incentive([1.05, 1.2], 1.0, 0.5, 0.3, 1.8)
    array([1.06, 1.24])
    """
    factors = factors_array("u", u)
    lam = positive("lambda_o", lambda_o)
    deficit, headroom = _deficit(theta_o_mean, theta_red_mean, beta)
    result = lam + (factors - 1.0) * lam / headroom * deficit
    return float(result) if result.ndim == 0 else result


def new_follow_through(theta_o: ArrayLike, theta_red: ArrayLike, theta_o_mean: float,
                       theta_red_mean: float, beta: float, lower: float = 0.05,
                       upper: float = 0.95) -> np.ndarray:
    r"""Compute each household's follow-through θ_new in the second event (Eq. 6.8).

    Households respond to λ_new with a higher follow-through (Eq. 6.8, §6.3.2):

    .. math:: \theta_{new} = \theta_{red} + \frac{1 - \theta_o}{1 - \bar\theta_o}
              (\beta \bar\theta_o - \bar\theta_{red})

    with θ_o, θ_red the household's own expected and observed (first-event)
    follow-through and θ̄_o, θ̄_red the means over all participants (pass them in: they are
    global, the households may be one chunk; docs/decisions.md, "Means and per-household
    values in Eq. 6.7 and Eq. 6.8"). Figure 6.9's hatched region is read as the band
    [``lower``, ``upper``] (docs/decisions.md, "The hatched region of Figure 6.9"):
    θ_red < ``lower`` (did not respond) or θ_red >= ``upper`` (responded fully) keeps
    θ_new = θ_red; otherwise θ_new = min(Eq. 6.8, ``upper``). The result lies in
    [θ_red, max(θ_red, upper)] ⊂ [0, 1].

    Parameters
    ----------
    theta_o : array_like
        The households' expected follow-through θ_o [1].
    theta_red : array_like, same shape
        The households' observed (first-event) follow-through θ_red [1].
    theta_o_mean : float
        θ̄_o over all participants, in [0, 1) [1].
    theta_red_mean : float
        θ̄_red over all participants, in [0, 1] [1].
    beta : float
        The over-compensation factor β, > 0 [1].
    lower, upper : float, default 0.05 and 0.95
        The hatched region's bounds (``Incentive.target_min_follow_through`` /
        ``target_max_follow_through``), lower < upper [1].

    Returns
    -------
    numpy.ndarray
        θ_new per household [1].

    Raises
    ------
    ValueError
        If a rate is outside [0, 1], the shapes differ, lower >= upper, or as
        :func:`new_incentive` for the means and β.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.2, Eq. 6.8; §6.2.3.2 (Figure 6.9).

    Examples
    --------
    >>> new_follow_through([0.5, 0.5, 0.2, 0.5], [0.3, 0.02, 0.2, 0.96], 0.5, 0.3, 1.8)
    array([0.9 , 0.02, 0.95, 0.96])
    """
    t_o = rates("theta_o", theta_o)
    t_red = rates("theta_red", theta_red)
    if t_o.shape != t_red.shape:
        raise ValueError(f"theta_o and theta_red must have the same shape, got {t_o.shape} "
                         f"and {t_red.shape}")
    lo = in_range("lower", lower, 0.0, 1.0, hi_open=True)
    hi = in_range("upper", upper, 0.0, 1.0, lo_open=True)
    if lo >= hi:
        raise ValueError(f"lower ({lo:g}) must be below upper ({hi:g}): the hatched region of "
                         "Figure 6.9 is the band [lower, upper]")
    deficit, headroom = _deficit(theta_o_mean, theta_red_mean, beta)
    eq_6_8 = t_red + (1.0 - t_o) / headroom * deficit
    inside = np.maximum(t_red, np.minimum(eq_6_8, hi))
    return np.clip(np.where(t_red < lo, t_red, inside), 0.0, 1.0)


# --------------------------------------------------------------------------------------------
# The plan of the second event
# --------------------------------------------------------------------------------------------


def _key(u: float) -> str:
    return f"{u:g}"


@dataclass(frozen=True)
class IncentiveResult:
    """The second event's incentive plan (§6.2.3; Eq. 6.5-6.8), for summary.json.

    Money is in ``currency``. ``lambda_new`` maps each u in use to its λ_new (Eq. 6.7);
    ``second_event_cost`` is the left side of Eq. 6.5 (monitoring cost + κ·(λ_new − λ_o))
    when the event is scheduled, else 0. ``theta_red_mean`` is the θ̄_red the utility
    planned with (its estimate from the meter data, drsim.utility.deficit), beside the
    participants' simulated mean ``theta_red_mean_simulated``. ``theta_new_mean`` is None
    until :meth:`with_response` adds the θ_new sums of the adaptive pass; the ``lottery_*``
    and ``realised_*`` fields until :meth:`with_lottery` adds the draw of the run.

    Attributes
    ----------
    currency : str
        Name of the money unit ("currency units" below).
    lambda_o : float
        The first event's incentive λ_o [currency units per participant].
    beta : float
        The over-compensation factor β [1].
    target_follow_through : tuple of float
        Figure 6.9's hatched region (lower, upper) [1].
    participants : int
        All participants N [households].
    mapping_households : dict of float to int
        Households per mapping u [households].
    lambda_new : dict of float to float
        λ_new per mapping u (Eq. 6.7) [currency units per participant].
    theta_o_mean, theta_red_mean : float
        θ̄_o and the θ̄_red the utility planned with [1].
    extra_incentive_mean : float
        Participant-weighted mean of λ_new(u) − λ_o [currency units per participant].
    monitoring_cost, c_saved : float
        The monitoring cost and C_saved of Eq. 6.5 [currency units].
    p_inc : float
        The lottery's probability [1].
    kappa : int
        Participants the lottery may pay, κ [participants].
    lottery_cost : float
        κ × ``extra_incentive_mean`` [currency units].
    second_event_cost : float
        Left side of Eq. 6.5 when scheduled, else 0 [currency units].
    penalty_bound : float
        Right side of Eq. 6.6 [currency units per participant].
    c_nc : float
        The penalty C_nc of Eq. 6.6 [currency units per participant].
    scheduled : bool
        Whether the second event takes place.
    theta_red_mean_simulated : float or None
        The participants' simulated mean θ_red [1].
    theta_new_mean : float or None
        The participants' mean θ_new [1].
    second_event_compliant, lottery_winners : int or None
        Households compliant in the second event, and those of them paid [households].
    realised_lottery_cost, realised_second_event_cost : float or None
        What the lottery paid, and that plus the monitoring cost [currency units].
    note : str
        Why no second event is scheduled, if it is not.
    """

    currency: str
    lambda_o: float
    beta: float
    target_follow_through: tuple[float, float]
    participants: int
    mapping_households: dict[float, int]
    lambda_new: dict[float, float]
    theta_o_mean: float
    theta_red_mean: float
    extra_incentive_mean: float
    monitoring_cost: float
    c_saved: float
    p_inc: float
    kappa: int
    lottery_cost: float
    second_event_cost: float
    penalty_bound: float
    c_nc: float
    scheduled: bool
    theta_red_mean_simulated: float | None = None
    theta_new_mean: float | None = None
    second_event_compliant: int | None = None
    lottery_winners: int | None = None
    realised_lottery_cost: float | None = None
    realised_second_event_cost: float | None = None
    note: str = field(default="")

    def new_follow_through(self, theta_o: ArrayLike, theta_red: ArrayLike) -> np.ndarray:
        """Compute θ_new of these households (Eq. 6.8 in the hatched region of Figure 6.9).

        Parameters
        ----------
        theta_o, theta_red : array_like
            The households' expected and observed (first-event) follow-through [1].

        Returns
        -------
        numpy.ndarray
            θ_new per household [1], by :func:`new_follow_through` with the plan's means, β
            and hatched region.

        References
        ----------
        .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
           dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.2, Eq. 6.8;
           §6.2.3.2 (Figure 6.9).

        Examples
        --------
        >>> from drsim.scenario import Incentive
        >>> sums = ParticipantSums.of([0.5] * 4, [0.3] * 4, [1.1, 1.1, 1.2, 1.2])
        >>> plan = plan_second_event(Incentive(), 1.0, sums, monitoring_cost=0.1, c_saved=0.5)
        >>> plan.new_follow_through([0.5, 0.2], [0.3, 0.2])
        array([0.9 , 0.95])
        """
        lo, hi = self.target_follow_through
        return new_follow_through(theta_o, theta_red, self.theta_o_mean, self.theta_red_mean,
                                  self.beta, lo, hi)

    def new_incentive_of(self, u: ArrayLike) -> np.ndarray:
        """Look up the λ_new offered to each household from its mapping u.

        Parameters
        ----------
        u : array_like
            The households' mapping factors; each must be a planned u [1].

        Returns
        -------
        numpy.ndarray
            λ_new per household [currency units per participant].

        Raises
        ------
        ValueError
            If a factor is not one of the plan's mappings.
        """
        keys = np.array(sorted(self.lambda_new))
        values = np.array([self.lambda_new[k] for k in keys])
        factors = np.asarray(u, dtype=np.float64)
        at = np.clip(np.searchsorted(keys, factors), 0, len(keys) - 1)
        unknown = keys[at] != factors
        if unknown.any():
            raise ValueError(f"u: {factors[unknown].ravel()[0]!r} is not a planned mapping; "
                             f"accepted: one of {[_key(k) for k in keys]}")
        return values[at]

    def winner_counts(self, u: ArrayLike, winners: ArrayLike) -> dict[float, int]:
        """Count the lottery winners per mapping u in one chunk (merge chunks by adding).

        Parameters
        ----------
        u : array_like
            The households' mapping factors [1].
        winners : array_like of bool, same shape
            The lottery's winners (:func:`drsim.utility.lottery.lottery_winners`).

        Returns
        -------
        dict of float to int
            Winners per mapping u [households].

        Raises
        ------
        ValueError
            If the shapes differ or a winner's u is not a planned mapping.
        """
        factors = np.asarray(u, dtype=np.float64)
        won = np.asarray(winners, dtype=bool)
        if factors.shape != won.shape:
            raise ValueError(f"u and winners must have the same shape, got {factors.shape} "
                             f"and {won.shape}")
        self.new_incentive_of(factors[won])  # only planned mappings
        values, counts = np.unique(factors[won], return_counts=True)
        return {float(v): int(c) for v, c in zip(values, counts, strict=True)}

    def realised_lottery_cost_of(self, winner_counts: Mapping[float, int]) -> float:
        r"""Compute what the lottery actually paid, the realised κ·(λ_new − λ_o) of Eq. 6.5.

        .. math:: \sum_u W_u (\lambda_{new}(u) - \lambda_o)

        with W_u the winners of mapping u.

        Parameters
        ----------
        winner_counts : mapping of float to int
            Winners per mapping u (:meth:`winner_counts`, merged) [households].

        Returns
        -------
        float
            The lottery's realised cost [currency units].

        References
        ----------
        .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
           dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1, Eq. 6.5.

        Examples
        --------
        >>> from drsim.scenario import Incentive
        >>> sums = ParticipantSums.of([0.5] * 4, [0.3] * 4, [1.1, 1.1, 1.2, 1.2])
        >>> plan = plan_second_event(Incentive(), 1.0, sums, monitoring_cost=0.1, c_saved=0.5)
        >>> round(plan.realised_lottery_cost_of({1.1: 1, 1.2: 1}), 6)
        0.36
        """
        total = 0.0
        for u in sorted(winner_counts):
            total += winner_counts[u] * (float(self.new_incentive_of(u)) - self.lambda_o)
        return total

    def with_response(self, sums: ParticipantSums) -> IncentiveResult:
        """Return the plan with ``theta_new_mean`` from the θ_new sums of the adaptive pass.

        Parameters
        ----------
        sums : ParticipantSums
            The sums over all participants, θ_new included.

        Returns
        -------
        IncentiveResult
            A copy with ``theta_new_mean`` set.

        Raises
        ------
        ValueError
            If the sums cover another number of households or hold no θ_new.
        """
        if sums.count != self.participants:
            raise ValueError(f"the sums cover {sums.count} households, the plan "
                             f"{self.participants}")
        if sums.theta_new_mean is None:
            raise ValueError("the sums hold no θ_new (use ParticipantSums.of(..., theta_new=))")
        return replace(self, theta_new_mean=sums.theta_new_mean)

    def with_lottery(self, winner_counts: Mapping[float, int], compliant: int
                     ) -> IncentiveResult:
        """Return the plan with the lottery drawn in the run.

        Adds the realised cost of Eq. 6.5's left side.

        Parameters
        ----------
        winner_counts : mapping of float to int
            Households paid λ_new, per mapping u [households].
        compliant : int
            Households that met their goal in the second event [households].

        Returns
        -------
        IncentiveResult
            A copy with ``second_event_compliant``, ``lottery_winners`` and the
            ``realised_*`` costs set.
        """
        cost = self.realised_lottery_cost_of(winner_counts)
        return replace(self, second_event_compliant=int(compliant),
                       lottery_winners=int(sum(winner_counts.values())),
                       realised_lottery_cost=cost,
                       realised_second_event_cost=self.monitoring_cost + cost)

    def as_dict(self) -> dict[str, Any]:
        """Return the plan as a JSON-ready dict: u keys as text ("1.05"), money in ``currency``."""
        data = asdict(self)
        data["lambda_new"] = {_key(u): v for u, v in sorted(self.lambda_new.items())}
        data["mapping_households"] = {_key(u): n for u, n in
                                      sorted(self.mapping_households.items())}
        data["target_follow_through"] = list(self.target_follow_through)
        return data


def plan_second_event(settings: Incentive, lambda_o: float, participants: ParticipantSums, *,
                      monitoring_cost: float, c_saved: float,
                      theta_red_mean: float | None = None) -> IncentiveResult:
    """Plan the second DR event (§6.2.3; Eq. 6.5-6.8) from participant aggregates.

    The plan, in order:

    1. λ_new per mapping u in use, Eq. 6.7 (:func:`new_incentive`);
    2. the extra incentive per winner, the participant-weighted mean
       Σ_u N_u·(λ_new(u) − λ_o) / N (docs/decisions.md, "The incentive-response mapping u");
    3. the largest lottery within Eq. 6.5 (:func:`drsim.utility.lottery.largest_lottery`);
    4. the penalty C_nc of Eq. 6.6 with the largest λ_new
       (:func:`drsim.utility.lottery.penalty`).

    If no lottery fits (see :class:`Lottery`), ``scheduled`` is False, p_inc = κ = 0,
    ``second_event_cost`` = 0 and C_nc is the margin alone; the run keeps the first event
    only. When θ̄_red already reaches β·θ̄_o there is no deficit to make up: λ_new = λ_o and
    no second event (docs/decisions.md, "The second DR event").

    Parameters
    ----------
    settings : drsim.scenario.Incentive
        The scenario's ``incentive`` settings (β, currency, penalty margin, hatched
        region).
    lambda_o : float
        The first event's incentive λ_o, the scenario's ``dr_program.incentive``
        [currency units per participant].
    participants : ParticipantSums
        The sums over all participants.
    monitoring_cost : float
        The monitoring cost of Eq. 6.5 (:func:`drsim.utility.lottery.monitoring_cost`)
        [currency units].
    c_saved : float
        C_saved of Eq. 6.5 (:func:`drsim.utility.lottery.saved_cost`) [currency units].
    theta_red_mean : float, optional
        The θ̄_red the utility knows (its estimate from the meter data,
        drsim.utility.deficit; docs/decisions.md, "What the utility knows at the
        prediction") [1]; None uses the participants' own mean.

    Returns
    -------
    IncentiveResult
        The plan; ``theta_new_mean`` is set only if ``participants`` holds θ_new sums
        (else :meth:`IncentiveResult.with_response`), the lottery's draw is added by
        :meth:`IncentiveResult.with_lottery`.

    Raises
    ------
    ValueError
        If there are no participants, λ_o <= 0, a cost is negative or ``theta_red_mean``
        is outside [0, 1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1 (Eq. 6.5, Eq. 6.6,
       Figure 6.8), §6.2.3.2 (Figure 6.9) and §6.3.2 (Eq. 6.7, Eq. 6.8).

    Examples
    --------
    >>> from drsim.scenario import Incentive
    >>> sums = ParticipantSums.of([0.5] * 4, [0.3] * 4, [1.1, 1.1, 1.2, 1.2])
    >>> plan = plan_second_event(Incentive(), 1.0, sums, monitoring_cost=0.1, c_saved=0.5)
    >>> plan.lambda_new, plan.kappa, plan.p_inc, plan.c_nc, plan.scheduled
    ({1.1: 1.12, 1.2: 1.24}, 2, 0.5, 0.05, True)
    """
    n = participants.count
    if n < 1:
        raise ValueError("participants: no households; the second event needs participants")
    lam = positive("lambda_o", lambda_o)
    mean_o = participants.theta_o_mean
    mean_red = participants.theta_red_mean if theta_red_mean is None \
        else in_range("theta_red_mean", theta_red_mean, 0.0, 1.0)
    counts = participants.mapping_counts
    us = np.array(sorted(counts), dtype=np.float64)
    weights = np.array([counts[u] for u in sorted(counts)], dtype=np.float64)
    mon = non_negative("monitoring_cost", monitoring_cost)
    saved = non_negative("c_saved", c_saved)
    deficit = settings.beta * mean_o >= mean_red
    lam_new = np.atleast_1d(new_incentive(us, lam, mean_o, mean_red, settings.beta)) \
        if deficit else np.full(len(us), lam)
    extra = float(np.dot(weights, lam_new - lam) / n)
    if not deficit:
        lottery = Lottery(0.0, 0, False)
        note = (f"no deficit: the observed mean follow-through {mean_red:.4g} already reaches "
                f"beta x theta_o_mean = {settings.beta * mean_o:.4g}; no second event")
    else:
        lottery = largest_lottery(n, extra, mon, saved)
        note = "" if lottery.feasible else (
            f"Eq. 6.5 infeasible: monitoring cost {mon:g} + one paid participant x {extra:g} "
            f"exceeds C_saved {saved:g}; no second event")
    lottery_cost = lottery.kappa * extra
    return IncentiveResult(
        currency=settings.currency,
        lambda_o=lam,
        beta=settings.beta,
        target_follow_through=(settings.target_min_follow_through,
                               settings.target_max_follow_through),
        participants=n,
        mapping_households=counts,
        lambda_new={float(u): float(v) for u, v in zip(us, lam_new, strict=True)},
        theta_o_mean=mean_o,
        theta_red_mean=mean_red,
        theta_red_mean_simulated=participants.theta_red_mean,
        extra_incentive_mean=extra,
        monitoring_cost=mon,
        c_saved=saved,
        p_inc=lottery.p_inc,
        kappa=lottery.kappa,
        lottery_cost=lottery_cost,
        second_event_cost=mon + lottery_cost if lottery.feasible else 0.0,
        penalty_bound=penalty_bound(lottery.p_inc, lam_new, lam),
        c_nc=penalty(lottery.p_inc, lam_new, lam, settings.penalty_margin),
        scheduled=lottery.feasible,
        theta_new_mean=participants.theta_new_mean,
        note=note,
    )
