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
This module holds Eq. 6.7-6.8, the mappings u, the participants' exact sums and the plan
of the second event; the lottery and the penalty (Eq. 6.5-6.6) are
:mod:`drsim.utility.lottery`, the checks of the formulas' arguments
:mod:`drsim.utility.arguments`.

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

from drsim.household import rng
from drsim.utility.arguments import (
    factors_array,
    id_array,
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

if TYPE_CHECKING:
    from drsim.scenario import Incentive, Scenario

__all__ = [
    "MAPPING_STREAM",
    "IncentiveResult",
    "ParticipantSums",
    "assign_mappings",
    "household_mappings",
    "new_follow_through",
    "new_incentive",
    "plan_second_event",
]

MAPPING_STREAM = "incentive_mapping"

_FIXED_BITS = 60  # fixed-point sums: θ in units of 2^-60, summed exactly as Python ints
_HALF_BITS = 30


def _deficit(theta_o_mean: float, theta_red_mean: float, beta: float) -> tuple[float, float]:
    """(β·θ̄_o − θ̄_red, 1 − θ̄_o) of Eq. 6.7/6.8, checked."""
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
    """λ_new per mapping u, Eq. 6.7 (dissertation §6.3.2).

    ``λ_new = λ_o + (u − 1)·λ_o/(1 − θ̄_o)·(β·θ̄_o − θ̄_red)``. ``u`` may be a scalar (returns a
    float) or an array (one λ_new per element). Raises ValueError for u < 1, λ_o <= 0,
    θ̄_o outside [0, 1), θ̄_red outside [0, 1], β <= 0, or β·θ̄_o < θ̄_red.
    """
    factors = factors_array("u", u)
    lam = positive("lambda_o", lambda_o)
    deficit, headroom = _deficit(theta_o_mean, theta_red_mean, beta)
    result = lam + (factors - 1.0) * lam / headroom * deficit
    return float(result) if result.ndim == 0 else result


def new_follow_through(theta_o: ArrayLike, theta_red: ArrayLike, theta_o_mean: float,
                       theta_red_mean: float, beta: float, lower: float = 0.05,
                       upper: float = 0.95) -> np.ndarray:
    """θ_new per household, Eq. 6.8 (§6.3.2) inside Figure 6.9's hatched region (§6.2.3.2).

    ``θ_new = θ_red + (1 − θ_o)/(1 − θ̄_o)·(β·θ̄_o − θ̄_red)`` with θ_o, θ_red the household's
    expected and observed (first-event) follow-through and θ̄_o, θ̄_red the means over all
    participants (pass them in: they are global, the households may be one chunk). Then:
    θ_red < ``lower`` (did not respond) or θ_red >= ``upper`` (responded fully): θ_new = θ_red;
    otherwise θ_new = min(Eq. 6.8, ``upper``). The result lies in [θ_red, max(θ_red, upper)]
    ⊂ [0, 1].
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
# The four mappings u (§6.3.1, §6.3.2)
# --------------------------------------------------------------------------------------------


def assign_mappings(seed: int, household_ids: ArrayLike, u_mappings: ArrayLike,
                    fixed_u: ArrayLike | None = None) -> np.ndarray:
    """The mapping u of each household (§6.3.1: "four different linear mapping schemes").

    A household takes ``fixed_u`` where it is given (not NaN: its group's ``incentive_u``),
    else one of ``u_mappings`` uniformly at random, drawn by the counter-based hash of
    (seed, household id, stream ``incentive_mapping``) (drsim/household/rng.py), so a household's u
    does not depend on chunking.
    """
    ids = id_array(household_ids)
    choices = factors_array("u_mappings", u_mappings).ravel()
    if choices.size == 0:
        raise ValueError("u_mappings: expected at least one mapping factor u, got none")
    pick = rng.integers(seed, ids, MAPPING_STREAM, 0, choices.size - 1)
    drawn = choices[pick]
    if fixed_u is None:
        return drawn
    fixed = np.broadcast_to(np.asarray(fixed_u, dtype=np.float64), ids.shape)
    given = ~np.isnan(fixed)
    factors_array("fixed_u", fixed[given])
    return np.where(given, fixed, drawn)


def household_mappings(scenario: Scenario, household_ids: ArrayLike) -> np.ndarray:
    """u per household of a scenario: the group's ``incentive_u``, else drawn from
    ``incentive.u_mappings`` (:func:`assign_mappings`, seeded by the scenario seed)."""
    ids = id_array(household_ids)
    per_group = np.array([np.nan if g.incentive_u is None else g.incentive_u
                          for g in scenario.groups])
    fixed = per_group[scenario.group_of(ids)]
    return assign_mappings(scenario.seed, ids, scenario.incentive.u_mappings, fixed)


# --------------------------------------------------------------------------------------------
# Participant aggregates (exact, so independent of chunking)
# --------------------------------------------------------------------------------------------


def _fixed_sum(values: np.ndarray) -> int:
    """Σ values (each in [0, 1]) exactly, in units of 2^-60, as a Python int.

    Values >= 2^-7 are exact in these units (float64 has 53 significant bits), smaller ones are
    rounded once; the integer sum is exact in any order, so chunk sums merge to the same total
    for any chunking (figures do not depend on chunking: docs/architecture.md).
    """
    q = np.rint(np.ldexp(values.ravel(), _FIXED_BITS)).astype(np.int64)
    high = int((q >> _HALF_BITS).sum())
    low = int((q & ((1 << _HALF_BITS) - 1)).sum())
    return (high << _HALF_BITS) + low


@dataclass(frozen=True)
class ParticipantSums:
    """Exact sums over participants that Eq. 6.5-6.8 need: merge chunk sums with ``+``.

    ``theta_*_sum`` are fixed-point sums in units of 2^-60 (see :func:`_fixed_sum`);
    ``u_counts`` is ((u, households), ...) sorted by u; ``theta_new_sum`` is None until the
    θ_new of the adaptive pass are summed.
    """

    count: int = 0
    theta_o_sum: int = 0
    theta_red_sum: int = 0
    u_counts: tuple[tuple[float, int], ...] = ()
    theta_new_sum: int | None = None

    @classmethod
    def of(cls, theta_o: ArrayLike, theta_red: ArrayLike, u: ArrayLike,
           theta_new: ArrayLike | None = None) -> ParticipantSums:
        """The sums over one chunk of households (arrays of equal shape)."""
        t_o, t_red = rates("theta_o", theta_o), rates("theta_red", theta_red)
        factors = factors_array("u", u)
        arrays = [t_o, t_red, factors]
        t_new = None if theta_new is None else rates("theta_new", theta_new)
        if t_new is not None:
            arrays.append(t_new)
        if len({a.shape for a in arrays}) != 1:
            raise ValueError("theta_o, theta_red, u (and theta_new) must have the same shape, "
                             f"got {[a.shape for a in arrays]}")
        values, counts = np.unique(factors, return_counts=True)
        return cls(
            count=int(t_o.size),
            theta_o_sum=_fixed_sum(t_o),
            theta_red_sum=_fixed_sum(t_red),
            u_counts=tuple((float(v), int(c)) for v, c in zip(values, counts, strict=True)),
            theta_new_sum=None if t_new is None else _fixed_sum(t_new),
        )

    def __add__(self, other: ParticipantSums) -> ParticipantSums:
        if not isinstance(other, ParticipantSums):
            return NotImplemented
        merged: dict[float, int] = dict(self.u_counts)
        for u, n in other.u_counts:
            merged[u] = merged.get(u, 0) + n
        if self.count == 0:
            new = other.theta_new_sum
        elif other.count == 0:
            new = self.theta_new_sum
        elif self.theta_new_sum is None or other.theta_new_sum is None:
            new = None
        else:
            new = self.theta_new_sum + other.theta_new_sum
        return ParticipantSums(self.count + other.count,
                               self.theta_o_sum + other.theta_o_sum,
                               self.theta_red_sum + other.theta_red_sum,
                               tuple(sorted(merged.items())), new)

    def _mean(self, total: int) -> float:
        if self.count == 0:
            raise ValueError("no participants: the means of Eq. 6.7/6.8 need at least one")
        return total / (self.count << _FIXED_BITS)  # int / int: correctly rounded

    @property
    def theta_o_mean(self) -> float:
        """θ̄_o: mean expected follow-through of the participants."""
        return self._mean(self.theta_o_sum)

    @property
    def theta_red_mean(self) -> float:
        """θ̄_red: mean observed (first-event) follow-through of the participants."""
        return self._mean(self.theta_red_sum)

    @property
    def theta_new_mean(self) -> float | None:
        """Mean θ_new of the participants (None if θ_new was not summed)."""
        return None if self.theta_new_sum is None else self._mean(self.theta_new_sum)

    @property
    def mapping_counts(self) -> dict[float, int]:
        """Households per mapping u."""
        return dict(self.u_counts)


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
        """θ_new of these households (Eq. 6.8 in the hatched region, :func:`new_follow_through`)."""
        lo, hi = self.target_follow_through
        return new_follow_through(theta_o, theta_red, self.theta_o_mean, self.theta_red_mean,
                                  self.beta, lo, hi)

    def new_incentive_of(self, u: ArrayLike) -> np.ndarray:
        """λ_new offered to each household, from its mapping u (must be a planned u)."""
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
        """Lottery winners per mapping u in one chunk (integers: merge by adding)."""
        factors = np.asarray(u, dtype=np.float64)
        won = np.asarray(winners, dtype=bool)
        if factors.shape != won.shape:
            raise ValueError(f"u and winners must have the same shape, got {factors.shape} "
                             f"and {won.shape}")
        self.new_incentive_of(factors[won])  # only planned mappings
        values, counts = np.unique(factors[won], return_counts=True)
        return {float(v): int(c) for v, c in zip(values, counts, strict=True)}

    def realised_lottery_cost_of(self, winner_counts: Mapping[float, int]) -> float:
        """Σ over winners of λ_new(u) − λ_o: what the lottery actually paid (Eq. 6.5)."""
        total = 0.0
        for u in sorted(winner_counts):
            total += winner_counts[u] * (float(self.new_incentive_of(u)) - self.lambda_o)
        return total

    def with_response(self, sums: ParticipantSums) -> IncentiveResult:
        """The plan with theta_new_mean from the θ_new sums of the adaptive pass."""
        if sums.count != self.participants:
            raise ValueError(f"the sums cover {sums.count} households, the plan "
                             f"{self.participants}")
        if sums.theta_new_mean is None:
            raise ValueError("the sums hold no θ_new (use ParticipantSums.of(..., theta_new=))")
        return replace(self, theta_new_mean=sums.theta_new_mean)

    def with_lottery(self, winner_counts: Mapping[float, int], compliant: int
                     ) -> IncentiveResult:
        """The plan with the lottery drawn in the run: ``compliant`` households met their
        goal in the second event, ``winner_counts`` (per u) of them were paid λ_new; the
        realised cost of Eq. 6.5's left side."""
        cost = self.realised_lottery_cost_of(winner_counts)
        return replace(self, second_event_compliant=int(compliant),
                       lottery_winners=int(sum(winner_counts.values())),
                       realised_lottery_cost=cost,
                       realised_second_event_cost=self.monitoring_cost + cost)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: u keys as text ("1.05"), money in ``currency``."""
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

    λ_new per mapping in use (Eq. 6.7); the largest lottery within Eq. 6.5 with the
    participant-weighted mean extra incentive; the penalty C_nc of Eq. 6.6 (using the largest
    λ_new). If no lottery fits (see :class:`Lottery`), ``scheduled`` is False, p_inc = κ = 0,
    ``second_event_cost`` = 0 and C_nc is the margin alone; the run keeps the first event only.
    ``lambda_o`` is the scenario's ``dr_program.incentive``. ``theta_red_mean`` is the θ̄_red
    the utility knows (its estimate from the meter data, drsim.utility.deficit); None uses the
    participants' own mean. When it already reaches β·θ̄_o there is no deficit to make up:
    λ_new = λ_o and no second event.
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
