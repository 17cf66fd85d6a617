"""The participants of the DR program: incentive mappings and exact sums.

Each household's incentive-response mapping u (dissertation §6.3.1 and §6.3.2) and the
participants' exact sums over the chunks (:class:`ParticipantSums`), which the second
event's plan (:mod:`drsim.utility.incentive`, Eq. 6.5-6.8) reads.

Sums of follow-through θ are fixed-point integers (θ in units of 2^-60, summed exactly as
Python ints), so they do not depend on how households are chunked (docs/architecture.md,
"Determinism").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from drsim.household import rng
from drsim.utility.arguments import factors_array, id_array, rates

if TYPE_CHECKING:
    from drsim.scenario import Scenario

__all__ = ["MAPPING_STREAM", "ParticipantSums", "assign_mappings", "household_mappings"]

MAPPING_STREAM = "incentive_mapping"

_FIXED_BITS = 60  # fixed-point sums: θ in units of 2^-60, summed exactly as Python ints
_HALF_BITS = 30


# --------------------------------------------------------------------------------------------
# The four mappings u (§6.3.1, §6.3.2)
# --------------------------------------------------------------------------------------------


def assign_mappings(seed: int, household_ids: ArrayLike, u_mappings: ArrayLike,
                    fixed_u: ArrayLike | None = None) -> np.ndarray:
    """Assign each household its incentive-response mapping u.

    The evaluation uses "four different linear mapping schemes" (§6.3.1) with u = 1.05,
    1.10, 1.15 and 1.20 (§6.3.2). A household takes ``fixed_u`` where it is given (not NaN:
    its group's ``incentive_u``), else one of ``u_mappings`` uniformly at random, drawn by
    the counter-based hash of (seed, household id, stream ``incentive_mapping``)
    (drsim/household/rng.py), so a household's u does not depend on chunking
    (docs/decisions.md, "The incentive-response mapping u").

    Parameters
    ----------
    seed : int
        The scenario's seed.
    household_ids : array_like of int
        The households' ids.
    u_mappings : array_like
        The mapping factors to draw from, each >= 1 [1].
    fixed_u : array_like, optional
        A factor per household (broadcast to the ids' shape), NaN where it is drawn [1].

    Returns
    -------
    numpy.ndarray
        u per household [1].

    Raises
    ------
    ValueError
        If ``u_mappings`` is empty, a factor is below 1, or the ids are not non-negative
        integers.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1 and §6.3.2.

    Examples
    --------
    >>> assign_mappings(1, np.arange(5), [1.05, 1.1, 1.15, 1.2])
    array([1.1 , 1.05, 1.15, 1.05, 1.1 ])
    >>> assign_mappings(1, np.arange(5), [1.05, 1.1, 1.15, 1.2],
    ...                 [1.2, np.nan, np.nan, 1.2, np.nan])
    array([1.2 , 1.05, 1.15, 1.2 , 1.1 ])
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
    """Assign the households of a scenario their mapping u.

    A household takes its group's ``incentive_u``, else one drawn from
    ``incentive.u_mappings`` (:func:`assign_mappings`, seeded by the scenario seed).

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario (its seed, groups and incentive settings).
    household_ids : array_like of int
        The households' ids.

    Returns
    -------
    numpy.ndarray
        u per household [1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1 and §6.3.2.

    Examples
    --------
    >>> from drsim.scenario import scenario_from_dict
    >>> scenario = scenario_from_dict({"name": "t", "seed": 5, "households": 4, "groups": [
    ...     {"name": "a", "size": 2, "incentive_u": 1.2}, {"name": "b", "size": 2}]})
    >>> household_mappings(scenario, np.arange(4))
    array([1.2 , 1.2 , 1.15, 1.15])
    """
    ids = id_array(household_ids)
    per_group = np.array([np.nan if g.incentive_u is None else g.incentive_u
                          for g in scenario.groups])
    fixed = per_group[scenario.group_of(ids)]
    return assign_mappings(scenario.seed, ids, scenario.incentive.u_mappings, fixed)


# --------------------------------------------------------------------------------------------
# Participant aggregates (exact, so independent of chunking)
# --------------------------------------------------------------------------------------------


def _fixed_sum(values: np.ndarray) -> int:
    """Sum ``values`` (each in [0, 1]) exactly, in units of 2^-60, as a Python int.

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

    The sums are integers, so they merge to the same total for any chunking.

    Attributes
    ----------
    count : int
        Participants summed [households].
    theta_o_sum, theta_red_sum : int
        Σ θ_o and Σ θ_red, fixed-point in units of 2^-60 (see :func:`_fixed_sum`).
    u_counts : tuple of (float, int)
        ((u, households), ...) sorted by u.
    theta_new_sum : int or None
        Σ θ_new in units of 2^-60; None until the θ_new of the adaptive pass are summed.

    Examples
    --------
    >>> sums = (ParticipantSums.of([0.5, 0.4], [0.3, 0.2], [1.1, 1.2])
    ...         + ParticipantSums.of([0.6], [0.4], [1.1]))
    >>> sums.count, sums.theta_o_mean, sums.theta_red_mean, sums.mapping_counts
    (3, 0.5, 0.3, {1.1: 2, 1.2: 1})
    """

    count: int = 0
    theta_o_sum: int = 0
    theta_red_sum: int = 0
    u_counts: tuple[tuple[float, int], ...] = ()
    theta_new_sum: int | None = None

    @classmethod
    def of(cls, theta_o: ArrayLike, theta_red: ArrayLike, u: ArrayLike,
           theta_new: ArrayLike | None = None) -> ParticipantSums:
        """Sum one chunk of households.

        Parameters
        ----------
        theta_o, theta_red : array_like
            The households' expected and observed (first-event) follow-through [1].
        u : array_like
            The households' mapping factors u [1].
        theta_new : array_like, optional
            The households' follow-through in the second event θ_new [1].

        Returns
        -------
        ParticipantSums
            The chunk's sums.

        Raises
        ------
        ValueError
            If a rate is outside [0, 1], a factor below 1, or the shapes differ.
        """
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
        """Merge the sums of two chunks (θ_new sums only if both hold them)."""
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
