"""The lottery of the second DR event (Eq. 6.5) and the penalty that keeps full
first-event participation the dominant strategy (Eq. 6.6, Figure 6.8); dissertation
§6.2.3.1. The readings where the text is silent are those of :mod:`drsim.utility.incentive`
(κ over all participants; Figure 6.8's payoffs), recorded in docs/decisions.md."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from drsim.household import rng
from drsim.utility.arguments import id_array, in_range, non_negative, number, positive

__all__ = ["LOTTERY_STREAM", "Lottery", "full_participation_dominates", "largest_lottery",
           "lottery_winners", "lottery_within_budget", "monitoring_cost", "penalty",
           "penalty_bound", "saved_cost", "second_event_compliant", "strategy_payoffs"]

LOTTERY_STREAM = "incentive_lottery"


def monitoring_cost(transmitted_events: float, processed_events: float, *,
                    cost_per_transmitted_event: float,
                    cost_per_processed_event: float) -> float:
    """The "Monitoring cost" of Eq. 6.5 (§6.2.3.1) from the counted costs of §6.3.3.

    ``transmitted_events`` = communication (events sent between tiers), ``processed_events``
    = computation (events and partial matches processed by the engines); each priced per
    event (``Incentive.cost_per_transmitted_event`` / ``cost_per_processed_event``).
    """
    return (non_negative("transmitted_events", transmitted_events)
            * non_negative("cost_per_transmitted_event", cost_per_transmitted_event)
            + non_negative("processed_events", processed_events)
            * non_negative("cost_per_processed_event", cost_per_processed_event))


def saved_cost(kwh: float, cost_per_kwh: float) -> float:
    """C_saved of Eq. 6.5 (§6.2.3.1): ``kwh`` of peak energy the second event is to recover
    (e.g. the predicted deficit of the first event) × ``Incentive.saved_cost_per_kwh``."""
    return non_negative("kwh", kwh) * non_negative("cost_per_kwh", cost_per_kwh)


def lottery_within_budget(kappa: float, extra_incentive: float, monitoring: float,
                          c_saved: float) -> bool:
    """Eq. 6.5 (§6.2.3.1): ``Monitoring cost + κ·(λ_new − λ_o) <= C_saved``.

    ``extra_incentive`` is λ_new − λ_o per paid participant (the participant-weighted mean
    over the mappings).
    """
    return monitoring + kappa * extra_incentive <= c_saved


@dataclass(frozen=True)
class Lottery:
    """The lottery of Eq. 6.5: p_inc, κ = p_inc × N, and whether any lottery fits the budget.

    ``feasible`` is False when even κ = 1 breaks Eq. 6.5 (the monitoring cost alone may
    exceed C_saved): then p_inc = 0, κ = 0, nobody can be paid, and the utility does not
    schedule the second event.
    """

    p_inc: float
    kappa: int
    feasible: bool


def largest_lottery(participants: int, extra_incentive: float, monitoring: float,
                    c_saved: float) -> Lottery:
    """The largest p_inc (and κ = p_inc × N) that satisfies Eq. 6.5 (§6.2.3.1).

    κ is the largest whole number in [0, N] with ``monitoring + κ·extra_incentive <=
    c_saved``; p_inc = κ/N. With ``extra_incentive`` = 0 every κ costs only the monitoring.
    """
    if isinstance(participants, bool) or not isinstance(participants, int | np.integer):
        raise ValueError(f"participants: expected an integer, got {participants!r}")
    n = int(participants)
    if n < 1:
        raise ValueError(f"participants: expected at least 1 participant, got {n}")
    extra = non_negative("extra_incentive", extra_incentive)
    mon = non_negative("monitoring", monitoring)
    saved = non_negative("c_saved", c_saved)
    if extra == 0.0:
        kappa = n if lottery_within_budget(n, extra, mon, saved) else 0
    else:
        kappa = int(min(n, max(0.0, math.floor((saved - mon) / extra))))
        while kappa > 0 and not lottery_within_budget(kappa, extra, mon, saved):
            kappa -= 1  # float rounding of the division
        while kappa < n and lottery_within_budget(kappa + 1, extra, mon, saved):
            kappa += 1
    if kappa < 1:
        return Lottery(0.0, 0, False)
    return Lottery(kappa / n, kappa, True)


def second_event_compliant(baseline_kw: ArrayLike, expected_kw: ArrayLike, load_kw: ArrayLike
                           ) -> np.ndarray:
    """Households compliant in the second event: Eq. 6.2 over its window with the goal of
    the expected complete response, ``Σ (B̂ − P) >= Σ (B̂ − P̂)``, i.e. ``Σ P <= Σ P̂``, as
    the utility settles it (its M&V estimates B̂ and P̂, drsim.utility.baseline).

    Parameters
    ----------
    baseline_kw, expected_kw, load_kw : (households, minutes of the second event)
        the utility's B̂ and P̂, and the metered load P [kW]

    Examples
    --------
    >>> second_event_compliant(np.full((2, 3), 2.0), np.full((2, 3), 1.0),
    ...                        np.array([[1.0, 1.0, 0.5], [2.0, 1.0, 1.0]]))
    array([ True, False])
    """
    base = np.asarray(baseline_kw, dtype=np.float64)
    reduction = (base - np.asarray(load_kw, dtype=np.float64)).sum(axis=1)
    return reduction >= (base - np.asarray(expected_kw, dtype=np.float64)).sum(axis=1)


def lottery_winners(seed: int, household_ids: ArrayLike, p_inc: float,
                    compliant: ArrayLike) -> np.ndarray:
    """Which households are paid λ_new: compliant in the second event and drawn with
    probability p_inc (§6.2.3.1, the lottery of Eq. 6.5).

    The draw is the counter-based uniform of (seed, household id, stream
    ``incentive_lottery``), so it does not depend on chunking.
    """
    ids = id_array(household_ids)
    p = in_range("p_inc", p_inc, 0.0, 1.0)
    ok = np.asarray(compliant)
    if ok.dtype != np.bool_ or ok.shape != ids.shape:
        raise ValueError(f"compliant: expected a bool array of shape {ids.shape}, got "
                         f"{ok.dtype} of shape {ok.shape}")
    return ok & (rng.uniform(seed, ids, LOTTERY_STREAM) < p)


# --------------------------------------------------------------------------------------------
# Eq. 6.6: the penalty, and Figure 6.8's dominant strategy
# --------------------------------------------------------------------------------------------


def penalty_bound(p_inc: float, lambda_new: ArrayLike, lambda_o: float) -> float:
    """The right side of Eq. 6.6 (§6.2.3.1), ``p_inc·λ_new − λ_o``, for the largest λ_new
    given (the mapping with the strongest pull to wait for the second event)."""
    p = in_range("p_inc", p_inc, 0.0, 1.0)
    lam_new = np.asarray(lambda_new, dtype=np.float64)
    if lam_new.size == 0 or not np.isfinite(lam_new).all():
        raise ValueError(f"lambda_new: expected finite incentives, got {lambda_new!r}")
    return p * float(lam_new.max()) - positive("lambda_o", lambda_o)


def penalty(p_inc: float, lambda_new: ArrayLike, lambda_o: float, margin: float) -> float:
    """C_nc satisfying Eq. 6.6 strictly: ``max(p_inc·λ_new − λ_o, 0) + margin·λ_o``.

    Never negative (a penalty, not a reward); ``margin`` > 0 (``Incentive.penalty_margin``)
    makes the strict inequality hold with room to spare.
    """
    m = in_range("margin", margin, 0.0, 1.0, lo_open=True)
    return max(penalty_bound(p_inc, lambda_new, lambda_o), 0.0) + m * float(lambda_o)


def strategy_payoffs(lambda_o: float, lambda_new: ArrayLike, p_inc: float,
                     c_nc: float) -> tuple[float, np.ndarray, float]:
    """Expected payoffs of Figure 6.8's three strategies (§6.2.3.1), per λ_new given.

    Strategy-1 comply in the first event: λ_o. Strategy-2 skip the first event and comply in
    the second: p_inc·λ_new − C_nc. Strategy-3 comply in neither: −C_nc. (The figure is not in
    the text; these payoffs are the ones that make Eq. 6.6 the condition S1 > S2.)
    """
    lam = positive("lambda_o", lambda_o)
    p = in_range("p_inc", p_inc, 0.0, 1.0)
    c = number("c_nc", c_nc)
    lam_new = np.asarray(lambda_new, dtype=np.float64)
    if not np.isfinite(lam_new).all():
        raise ValueError(f"lambda_new: expected finite incentives, got {lambda_new!r}")
    return lam, p * lam_new - c, -c


def full_participation_dominates(lambda_o: float, lambda_new: ArrayLike, p_inc: float,
                                 c_nc: float) -> bool:
    """Figure 6.8 / Eq. 6.6 (§6.2.3.1): is full participation in the first event
    (Strategy-1) strictly better than Strategies 2 and 3, for every λ_new given?"""
    s1, s2, s3 = strategy_payoffs(lambda_o, lambda_new, p_inc, c_nc)
    return bool(np.all(s1 > s2) and s1 > s3)
