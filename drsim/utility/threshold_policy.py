"""How Listing 6.2's threshold γ[groupID, time] is set: the policies of ``monitoring.gamma_user``.

docs/model.md, "The threshold"; docs/decisions.md, "The group threshold from the expected
response".

Listing 6.2 (dissertation §6.2.2) alerts a group when more than γ_user of its households
are flagged by the meter query (Listing 6.1); Table 6.2 does not give γ_user. A scenario
sets it (:attr:`drsim.scenario.Monitoring.gamma_user`) as a constant ratio, as printed
(:class:`ConstantRatio`), or as the share flagged under the expected response plus z
standard errors (:class:`ExpectedShareThreshold`, the formulas :func:`expected_share` and
:func:`threshold`); :func:`threshold_policy` picks the policy from the setting. Each
policy says whether it needs the replicas of the expected response
(:func:`drsim.utility.threshold.replica_flags`), computes γ per group and test time,
describes itself for summary.json, and says whether readings alone can use it
(``drsim monitor`` without a run's thresholds.parquet).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from drsim.scenario import ExpectedShare

__all__ = ["ConstantRatio", "ExpectedShareThreshold", "ThresholdPolicy", "expected_share",
           "threshold", "threshold_policy"]


def expected_share(flagged: np.ndarray, replicas: int, sizes: np.ndarray) -> np.ndarray:
    r"""Estimate p̂, the share of a group flagged under the expected response.

    Laplace's rule of succession over x flagged among n = R·N_g household replicas, so
    that a share never seen in the replicas still has a standard error:

    .. math:: \hat p[g, t] = \frac{x[g, t] + 1}{R N_g + 2}

    The threshold γ_user of Listing 6.2 is not given in Table 6.2; estimating it from
    the expected response is drsim's reading (docs/decisions.md, "The group threshold
    from the expected response").

    Parameters
    ----------
    flagged : numpy.ndarray
        Household replicas flagged x, shape (groups, tests) [households].
    replicas : int
        Replicas per household R [1].
    sizes : numpy.ndarray
        Households per group N_g, shape (groups,) [households].

    Returns
    -------
    numpy.ndarray
        p̂, shape (groups, tests) [1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2 (Listing 6.2) and
       Table 6.2.

    Examples
    --------
    >>> expected_share(np.array([[0, 98]]), 1, np.array([100]))
    array([[0.00980392, 0.97058824]])
    """
    n = replicas * np.asarray(sizes, dtype=np.float64)[:, None]
    return (np.asarray(flagged, dtype=np.float64) + 1.0) / (n + 2.0)


def threshold(share: np.ndarray, sizes: np.ndarray, z: float, replicas: int) -> np.ndarray:
    r"""Estimate the group threshold γ[g, t] of Listing 6.2 from the expected share flagged.

    z standard errors of the difference between the group's realised share and the
    estimate above p̂, at most 1 (module doc); ``(1 + 1/R)`` adds the variance of the
    estimate from R·N_g household replicas to that of a share of N_g households, so that
    at each test an expected group alerts with probability about Φ(−z):

    .. math::

        \gamma[g, t] = \min\left(1, \hat p + z \sqrt{\frac{\hat p (1 - \hat p)
        (1 + 1/R)}{N_g}}\right)

    drsim's reading of γ_user, which Table 6.2 does not give (docs/decisions.md, "The
    group threshold from the expected response").

    Parameters
    ----------
    share : numpy.ndarray
        p̂, the estimated share flagged under the expected response, shape
        (groups, tests) [1].
    sizes : numpy.ndarray
        Households per group N_g, shape (groups,) [households].
    z : float
        Standard errors above the share [1].
    replicas : int
        Replicas per household R the share was estimated from [1].

    Returns
    -------
    numpy.ndarray
        γ, shape (groups, tests) [1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2 (Listing 6.2) and
       Table 6.2.

    Examples
    --------
    >>> threshold(np.array([[0.03]]), np.array([10_000]), 3.0, 4)
    array([[0.03572167]])
    """
    n = np.asarray(sizes, dtype=np.float64)[:, None]
    se = np.sqrt(share * (1.0 - share) * (1.0 + 1.0 / replicas) / n)
    return np.minimum(share + z * se, 1.0)


class ThresholdPolicy(ABC):
    """How γ[groupID, time] of Listing 6.2 is set (module doc).

    Attributes
    ----------
    replicas : int
        Replicas per household R of the expected response's decisions the policy
        estimates from; 0 when it needs none [1].
    """

    replicas: int

    @property
    def needs_replicas(self) -> bool:
        """Whether the chunks must count the replicas' flags (:attr:`replicas` > 0)."""
        return self.replicas > 0

    @property
    @abstractmethod
    def readings_refusal(self) -> str | None:
        """Why readings alone cannot set γ (None: they can; ``drsim monitor``)."""

    @abstractmethod
    def thresholds(self, sizes: np.ndarray, tests: int, flagged: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray | None]:
        """Compute γ per group and test time.

        Parameters
        ----------
        sizes : numpy.ndarray
            Households per group N_g, shape (groups,) [households].
        tests : int
            Test times [1].
        flagged : numpy.ndarray, optional
            Household replicas flagged x, shape (groups, tests), summed over the chunks
            of each group [households]; needed when :attr:`needs_replicas`.

        Returns
        -------
        gamma : numpy.ndarray
            γ, shape (groups, tests) [1].
        share : numpy.ndarray or None
            p̂, the estimated share flagged under the expected response, same shape [1];
            None when the policy does not estimate it.
        """

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Return how γ is set, for summary.json's ``prediction.gamma_user``."""

    @abstractmethod
    def query_params(self) -> dict[str, Any]:
        """Return the parameter ``γ_user`` of the printed Listing 6.2, when it has one."""

    @property
    @abstractmethod
    def label(self) -> str:
        """The threshold's legend in the figures."""


@dataclass(frozen=True)
class ConstantRatio(ThresholdPolicy):
    """γ_user as printed in Listing 6.2: the same ratio for every group and test time.

    Attributes
    ----------
    value : float
        γ_user [1].

    Examples
    --------
    >>> gamma, share = ConstantRatio(0.05).thresholds(np.array([10, 20]), 3)
    >>> gamma.tolist(), share
    ([[0.05, 0.05, 0.05], [0.05, 0.05, 0.05]], None)
    """

    value: float
    replicas: int = 0

    @property
    def readings_refusal(self) -> str | None:
        """None: the ratio is in the scenario."""
        return None

    def thresholds(self, sizes: np.ndarray, tests: int, flagged: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray | None]:
        """Return the table of :attr:`value` everywhere, and no share."""
        return np.full((len(sizes), tests), float(self.value)), None

    def describe(self) -> dict[str, Any]:
        """Return ``{"method": "constant", "value": γ_user}``."""
        return {"method": "constant", "value": self.value}

    def query_params(self) -> dict[str, Any]:
        """Return ``{"γ_user": value}``."""
        return {"γ_user": self.value}

    @property
    def label(self) -> str:
        """``γ_user = value``."""
        return f"γ_user = {self.value:g}"


@dataclass(frozen=True)
class ExpectedShareThreshold(ThresholdPolicy):
    """γ[g, t] from the share flagged under the expected response plus z standard errors.

    The share p̂ is estimated from R replicas of the households' decisions
    (:func:`expected_share`), γ from p̂ (:func:`threshold`); drsim's reading of γ_user,
    which Table 6.2 does not give (docs/decisions.md, "The group threshold from the
    expected response").

    Attributes
    ----------
    z : float
        Standard errors above the share [1].
    replicas : int
        Replicas per household R [1].

    Examples
    --------
    >>> policy = ExpectedShareThreshold(3.0, 1)
    >>> gamma, share = policy.thresholds(np.array([100]), 2, np.array([[0, 98]]))
    >>> share.round(4).tolist(), gamma.round(4).tolist()
    ([[0.0098, 0.9706]], [[0.0516, 1.0]])
    """

    z: float
    replicas: int

    @property
    def readings_refusal(self) -> str | None:
        """The expected response is not in the readings."""
        return ("monitoring.gamma_user is estimated from the expected response, which "
                "readings do not show: give a run's thresholds.parquet")

    def thresholds(self, sizes: np.ndarray, tests: int, flagged: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray | None]:
        """Return γ and p̂ from the replicas' counts ``flagged`` (ValueError without)."""
        if flagged is None:
            raise ValueError("γ_user from the expected response needs the replicas' counts")
        share = expected_share(flagged, self.replicas, sizes)
        return threshold(share, sizes, self.z, self.replicas), share

    def describe(self) -> dict[str, Any]:
        """Return the scenario's setting ``{"method": "expected", "z": z, "replicas": R}``."""
        return {"method": "expected", "z": self.z, "replicas": self.replicas}

    def query_params(self) -> dict[str, Any]:
        """Return nothing: Listing 6.2 reads the table ``γ[groupID, time]``."""
        return {}

    @property
    def label(self) -> str:
        """``γ[group, time]: expected share + z standard errors``."""
        return f"γ[group, time]: expected share + {self.z:g} standard errors"


def threshold_policy(gamma_user: float | ExpectedShare) -> ThresholdPolicy:
    """Return the policy of a scenario's ``monitoring.gamma_user``.

    Parameters
    ----------
    gamma_user : float or drsim.scenario.ExpectedShare
        A constant ratio [1], or the expected-share settings.

    Returns
    -------
    ThresholdPolicy
        :class:`ExpectedShareThreshold` for the settings, else :class:`ConstantRatio`.

    Examples
    --------
    >>> threshold_policy(0.05)
    ConstantRatio(value=0.05, replicas=0)
    >>> threshold_policy(ExpectedShare(method="expected"))
    ExpectedShareThreshold(z=3.0, replicas=4)
    """
    if isinstance(gamma_user, ExpectedShare):
        return ExpectedShareThreshold(gamma_user.z, gamma_user.replicas)
    return ConstantRatio(gamma_user)
