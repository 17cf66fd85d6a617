"""The lottery of the second DR event and the penalty of the first (dissertation §6.2.3.1).

The lottery (Eq. 6.5) pays the extra incentive of the second event to a share p_inc of
the participants that comply in it, as far as the saved cost allows; the penalty C_nc
(Eq. 6.6, Figure 6.8) keeps full first-event participation the dominant strategy. The
readings where the text is silent are those of :mod:`drsim.utility.incentive` (κ over all
participants; Figure 6.8's payoffs), recorded in docs/decisions.md ("The lottery of
Eq. 6.5"; "Payoffs of Figure 6.8 and the penalty of Eq. 6.6").
"""

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
    r"""Price the "Monitoring cost" of Eq. 6.5 from the counted costs of §6.3.3.

    The dissertation defines the communication cost as the number of event transmissions
    and the computation cost as the number of events and partial matches processed by the
    engines (§6.3.3), but gives no price. drsim prices each event
    (``Incentive.cost_per_transmitted_event`` / ``cost_per_processed_event``; its own
    reading, docs/decisions.md, "The lottery of Eq. 6.5" and "Communication and computation
    costs"):

    .. math:: \text{Monitoring cost} = n_{tx} \cdot c_{tx} + n_{proc} \cdot c_{proc}

    Parameters
    ----------
    transmitted_events : float
        Communication: events sent between the tiers, n_tx [events].
    processed_events : float
        Computation: events and partial matches processed by the engines, n_proc [events].
    cost_per_transmitted_event : float
        Price of one transmitted event, c_tx [currency units per event].
    cost_per_processed_event : float
        Price of one processed event, c_proc [currency units per event].

    Returns
    -------
    float
        The monitoring cost of Eq. 6.5 [currency units].

    Raises
    ------
    ValueError
        If an argument is negative or not a finite number.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1 (Eq. 6.5) and §6.3.3.

    Examples
    --------
    >>> monitoring_cost(2000, 10000, cost_per_transmitted_event=0.001,
    ...                 cost_per_processed_event=0.0001)
    3.0
    """
    return (non_negative("transmitted_events", transmitted_events)
            * non_negative("cost_per_transmitted_event", cost_per_transmitted_event)
            + non_negative("processed_events", processed_events)
            * non_negative("cost_per_processed_event", cost_per_processed_event))


def saved_cost(kwh: float, cost_per_kwh: float) -> float:
    r"""Price C_saved of Eq. 6.5: the peak energy the second event is to recover.

    C_saved is "the cost savings achieved by reducing the peak load through the second DR
    program" (§6.2.3.1). drsim prices the energy to recover (the projected shortfall of
    the first event, :func:`drsim.utility.deficit.shortfall_kwh`) per kWh
    (``Incentive.saved_cost_per_kwh``; its own reading, docs/decisions.md, "The lottery of
    Eq. 6.5"):

    .. math:: C_{saved} = E_{recover} \cdot c_{kWh}

    Parameters
    ----------
    kwh : float
        Peak energy the second event is to recover, E_recover [kWh].
    cost_per_kwh : float
        What the utility saves per kWh recovered, c_kWh [currency units per kWh].

    Returns
    -------
    float
        C_saved [currency units].

    Raises
    ------
    ValueError
        If an argument is negative or not a finite number.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1, Eq. 6.5.

    Examples
    --------
    >>> saved_cost(40.0, 0.25)
    10.0
    """
    return non_negative("kwh", kwh) * non_negative("cost_per_kwh", cost_per_kwh)


def lottery_within_budget(kappa: float, extra_incentive: float, monitoring: float,
                          c_saved: float) -> bool:
    r"""Test whether a lottery paying κ participants keeps within the budget of Eq. 6.5.

    The cost of the second event, the monitoring plus the extra incentive paid to the κ
    winners of the lottery, must not exceed what it saves (Eq. 6.5):

    .. math:: \text{Monitoring cost} + \kappa (\lambda_{new} - \lambda_o) \le C_{saved}

    With several mappings u, λ_new − λ_o is the participant-weighted mean over the
    mappings (docs/decisions.md, "The incentive-response mapping u").

    Parameters
    ----------
    kappa : float
        Participants paid the extra incentive, κ [participants].
    extra_incentive : float
        λ_new − λ_o per paid participant [currency units per participant].
    monitoring : float
        The monitoring cost (:func:`monitoring_cost`) [currency units].
    c_saved : float
        C_saved (:func:`saved_cost`) [currency units].

    Returns
    -------
    bool
        True if Eq. 6.5 holds.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1, Eq. 6.5.

    Examples
    --------
    >>> lottery_within_budget(2, 0.18, 0.1, 0.5), lottery_within_budget(3, 0.18, 0.1, 0.5)
    (True, False)
    """
    return monitoring + kappa * extra_incentive <= c_saved


@dataclass(frozen=True)
class Lottery:
    """Lottery of Eq. 6.5: p_inc, κ = p_inc × N, and whether any lottery fits the budget.

    ``feasible`` is False when even κ = 1 breaks Eq. 6.5 (the monitoring cost alone may
    exceed C_saved): then p_inc = 0, κ = 0, nobody can be paid, and the utility does not
    schedule the second event.

    Attributes
    ----------
    p_inc : float
        Probability that a participant compliant in the second event is paid λ_new [1].
    kappa : int
        Participants paid, κ = p_inc × N with N all participants [participants].
    feasible : bool
        Whether a lottery with at least one paid participant satisfies Eq. 6.5.
    """

    p_inc: float
    kappa: int
    feasible: bool


def largest_lottery(participants: int, extra_incentive: float, monitoring: float,
                    c_saved: float) -> Lottery:
    r"""Find the largest lottery, p_inc and κ = p_inc × N, that satisfies Eq. 6.5.

    The text defines κ = p_inc × "total participants" (§6.2.3.1). drsim takes N as all
    participants (the utility does not know who will comply when it announces the event)
    and κ as the largest whole number in [0, N] within the budget (its own reading,
    docs/decisions.md, "The lottery of Eq. 6.5"):

    .. math:: \kappa = \max \{k \in \{0, \dots, N\} :
              \text{Monitoring cost} + k (\lambda_{new} - \lambda_o) \le C_{saved}\},
              \quad p_{inc} = \kappa / N

    With ``extra_incentive`` = 0 every κ costs only the monitoring.

    Parameters
    ----------
    participants : int
        All participants of the DR program, N [participants].
    extra_incentive : float
        λ_new − λ_o per paid participant (the participant-weighted mean over the mappings)
        [currency units per participant].
    monitoring : float
        The monitoring cost (:func:`monitoring_cost`) [currency units].
    c_saved : float
        C_saved (:func:`saved_cost`) [currency units].

    Returns
    -------
    Lottery
        p_inc [1] and κ [participants]; ``feasible`` False (and p_inc = κ = 0) when not
        even κ = 1 fits.

    Raises
    ------
    ValueError
        If ``participants`` is not an integer >= 1 or a cost is negative.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1, Eq. 6.5.

    Examples
    --------
    >>> largest_lottery(4, 0.18, 0.1, 0.5)
    Lottery(p_inc=0.5, kappa=2, feasible=True)
    >>> largest_lottery(4, 0.18, 0.6, 0.5)
    Lottery(p_inc=0.0, kappa=0, feasible=False)
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
    r"""Settle which households complied in the second event.

    A household complied when it met Eq. 6.2 over the second event's window with the
    goal λ_k of its expected complete response, as the utility settles it with its M&V
    estimates B̂ and P̂ (:mod:`drsim.utility.baseline`); the goal is drsim's reading
    (docs/decisions.md, "The lottery of Eq. 6.5"):

    .. math:: \sum_t (\hat B_{k,t} - P_{k,t}) \ge \sum_t (\hat B_{k,t} - \hat P_{k,t})
              \iff \sum_t P_{k,t} \le \sum_t \hat P_{k,t}

    Parameters
    ----------
    baseline_kw : array_like, shape (households, minutes of the second event)
        The utility's baseline estimate B̂ [kW].
    expected_kw : array_like, same shape
        The utility's expected-response estimate P̂ [kW].
    load_kw : array_like, same shape
        The metered load P [kW].

    Returns
    -------
    numpy.ndarray of bool, shape (households,)
        True for a household that complied.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.2) and §6.2.3.1.

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
    """Draw the lottery's winners, the households paid λ_new.

    A winner complied in the second event and was drawn with probability p_inc (the
    lottery of Eq. 6.5, §6.2.3.1). The draw is the counter-based uniform of (seed,
    household id, stream ``incentive_lottery``) (drsim/household/rng.py), so it does not
    depend on chunking (docs/decisions.md, "The lottery of Eq. 6.5").

    Parameters
    ----------
    seed : int
        The scenario's seed.
    household_ids : array_like of int
        The households' ids.
    p_inc : float
        Probability that a compliant household is paid [1].
    compliant : numpy.ndarray of bool, same shape as ``household_ids``
        Compliance in the second event (:func:`second_event_compliant`).

    Returns
    -------
    numpy.ndarray of bool
        True for a household paid λ_new.

    Raises
    ------
    ValueError
        If ``p_inc`` is outside [0, 1], the ids are not non-negative integers, or
        ``compliant`` is not a bool array of the ids' shape.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1, Eq. 6.5.

    Examples
    --------
    >>> compliant = np.array([True, True, True, False, False, False])
    >>> lottery_winners(7, np.arange(6), 1.0, compliant)
    array([ True,  True,  True, False, False, False])
    >>> lottery_winners(7, np.arange(6), 0.5, compliant)
    array([False,  True, False, False, False, False])
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
    r"""Compute the right side of Eq. 6.6, the bound the penalty C_nc must exceed.

    The bound is taken for the largest λ_new given, the mapping with the strongest pull
    to wait for the second event (docs/decisions.md, "Payoffs of Figure 6.8 and the
    penalty of Eq. 6.6"):

    .. math:: C_{nc} > p_{inc} \lambda_{new} - \lambda_o

    Parameters
    ----------
    p_inc : float
        Probability that a participant compliant in the second event is paid [1].
    lambda_new : array_like
        λ_new of the mappings in use [currency units per participant].
    lambda_o : float
        The first event's incentive λ_o [currency units per participant].

    Returns
    -------
    float
        ``p_inc·max(λ_new) − λ_o`` [currency units per participant]; may be negative.

    Raises
    ------
    ValueError
        If ``p_inc`` is outside [0, 1], ``lambda_new`` is empty or not finite, or
        ``lambda_o`` <= 0.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1, Eq. 6.6.

    Examples
    --------
    >>> penalty_bound(0.5, [1.12, 1.24], 1.0)
    -0.38
    """
    p = in_range("p_inc", p_inc, 0.0, 1.0)
    lam_new = np.asarray(lambda_new, dtype=np.float64)
    if lam_new.size == 0 or not np.isfinite(lam_new).all():
        raise ValueError(f"lambda_new: expected finite incentives, got {lambda_new!r}")
    return p * float(lam_new.max()) - positive("lambda_o", lambda_o)


def penalty(p_inc: float, lambda_new: ArrayLike, lambda_o: float, margin: float) -> float:
    r"""Set the penalty C_nc for non-compliance in the first event so that Eq. 6.6 holds.

    Eq. 6.6 asks for C_nc > p_inc·λ_new − λ_o but gives no number; drsim adds a margin
    (``Incentive.penalty_margin``, not in the dissertation) to the bound of
    :func:`penalty_bound` and never makes the penalty a reward (its own reading,
    docs/decisions.md, "Payoffs of Figure 6.8 and the penalty of Eq. 6.6"):

    .. math:: C_{nc} = \max(p_{inc} \max \lambda_{new} - \lambda_o, 0)
              + \text{margin} \cdot \lambda_o

    Parameters
    ----------
    p_inc : float
        Probability that a participant compliant in the second event is paid [1].
    lambda_new : array_like
        λ_new of the mappings in use [currency units per participant].
    lambda_o : float
        The first event's incentive λ_o [currency units per participant].
    margin : float
        How far C_nc lies above the bound, as a share of λ_o, in (0, 1] [1].

    Returns
    -------
    float
        C_nc [currency units per participant], > 0.

    Raises
    ------
    ValueError
        If ``margin`` is outside (0, 1], or as :func:`penalty_bound`.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1, Eq. 6.6 and Figure 6.8.

    Examples
    --------
    >>> penalty(0.5, [1.12, 1.24], 1.0, 0.05)
    0.05
    >>> round(penalty(1.0, [1.1, 1.2], 1.0, 0.05), 6)
    0.25
    """
    m = in_range("margin", margin, 0.0, 1.0, lo_open=True)
    return max(penalty_bound(p_inc, lambda_new, lambda_o), 0.0) + m * float(lambda_o)


def strategy_payoffs(lambda_o: float, lambda_new: ArrayLike, p_inc: float,
                     c_nc: float) -> tuple[float, np.ndarray, float]:
    r"""Compute the expected payoffs of Figure 6.8's three strategies, per λ_new given.

    The figure is an image without its payoffs in the text; drsim reconstructs them as
    the ones that make Eq. 6.6 the condition S1 > S2 (its own reading, docs/decisions.md,
    "Payoffs of Figure 6.8 and the penalty of Eq. 6.6"):

    .. math:: S_1 = \lambda_o, \quad S_2 = p_{inc} \lambda_{new} - C_{nc},
              \quad S_3 = -C_{nc}

    Strategy-1 complies in the first event, Strategy-2 skips the first event and complies
    in the second, Strategy-3 complies in neither.

    Parameters
    ----------
    lambda_o : float
        The first event's incentive λ_o [currency units per participant].
    lambda_new : array_like
        λ_new of the mappings [currency units per participant].
    p_inc : float
        Probability that a participant compliant in the second event is paid [1].
    c_nc : float
        The penalty for non-compliance in the first event [currency units per
        participant].

    Returns
    -------
    s1 : float
        Payoff of Strategy-1 [currency units per participant].
    s2 : numpy.ndarray
        Payoff of Strategy-2, one per λ_new [currency units per participant].
    s3 : float
        Payoff of Strategy-3 [currency units per participant].

    Raises
    ------
    ValueError
        If ``lambda_o`` <= 0, ``p_inc`` is outside [0, 1], or ``c_nc`` or ``lambda_new``
        is not finite.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1, Eq. 6.6 and Figure 6.8.

    Examples
    --------
    >>> strategy_payoffs(1.0, [1.12, 1.24], 0.5, 0.05)
    (1.0, array([0.51, 0.57]), -0.05)
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
    r"""Test whether full first-event participation is the dominant strategy (Figure 6.8).

    Strategy-1 (comply in the first event) dominates when its payoff is strictly above
    those of Strategies 2 and 3 (:func:`strategy_payoffs`) for every λ_new given, which
    holds exactly when the penalty satisfies Eq. 6.6 (and C_nc > −λ_o):

    .. math:: \lambda_o > p_{inc} \lambda_{new} - C_{nc}
              \iff C_{nc} > p_{inc} \lambda_{new} - \lambda_o

    Parameters
    ----------
    lambda_o : float
        The first event's incentive λ_o [currency units per participant].
    lambda_new : array_like
        λ_new of the mappings [currency units per participant].
    p_inc : float
        Probability that a participant compliant in the second event is paid [1].
    c_nc : float
        The penalty for non-compliance in the first event [currency units per
        participant].

    Returns
    -------
    bool
        True if Strategy-1 is strictly better than Strategies 2 and 3.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.3.1, Eq. 6.6 and Figure 6.8.

    Examples
    --------
    >>> full_participation_dominates(1.0, [1.12, 1.24], 0.5, 0.05)
    True
    >>> full_participation_dominates(1.0, [1.1, 1.2], 1.0, 0.1)
    False
    """
    s1, s2, s3 = strategy_payoffs(lambda_o, lambda_new, p_inc, c_nc)
    return bool(np.all(s1 > s2) and s1 > s3)
