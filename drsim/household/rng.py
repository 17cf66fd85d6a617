"""Counter-based random streams (docs/architecture.md).

A draw is a pure function of (scenario seed, household id, stream, counter): a
SplitMix64 finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number
generators", OOPSLA 2014; constants of Vigna's ``splitmix64.c``) applied in turn to
each part of the key. Draws are vectorized numpy uint64 arithmetic over any
broadcastable arrays of ids and counters, so a household's numbers do not depend on
chunking, partitioning, or on which other draws were made before.
"""

from __future__ import annotations

import zlib
from functools import lru_cache

import numpy as np
from scipy.special import ndtri

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = (np.uint64(s) for s in (30, 27, 31, 11))
_TO_UNIT = 2.0**-53


def _mix(x: np.ndarray) -> np.ndarray:
    """Apply the SplitMix64 finaliser (bijective on uint64)."""
    x = np.asarray(x ^ (x >> _S30))  # a new array (0-d for a scalar), changed in place
    t = np.empty_like(x)  # the rounds in place: two arrays, no temporaries
    np.multiply(x, _MUL1, out=x)
    np.right_shift(x, _S27, out=t)
    np.bitwise_xor(x, t, out=x)
    np.multiply(x, _MUL2, out=x)
    np.right_shift(x, _S31, out=t)
    np.bitwise_xor(x, t, out=x)
    return x[()]  # a scalar stays a scalar


def _words(a) -> np.ndarray:
    """Integers as uint64 words (two's complement), without a copy where they are 64-bit."""
    a = np.asarray(a)
    return a.view(np.uint64) if a.dtype in (np.int64, np.uint64) else a.astype(np.uint64)


def stream_id(name: str) -> int:
    """Return the stable 32-bit id of a named stream (the CRC-32 of its name).

    Parameters
    ----------
    name : str
        The stream's name, e.g. ``"rebound"``.

    Returns
    -------
    int
        The id, in [0, 2^32).

    Examples
    --------
    >>> stream_id("rebound")
    3717073470
    """
    return zlib.crc32(name.encode())


_FOLD = np.uint64(0xD1B54A32D192ED03)  # odd multiplier folding the counters into one word


def hash64(seed: int, household: np.ndarray | np.integer, stream: str, *counters
           ) -> np.ndarray:
    """Hash (seed, household, stream, counters...) to uint64, broadcast over arrays.

    The counters are folded into one word, c0·K^(n-1) + ... + c(n-1) mod 2^64 with an odd
    K, which is injective for counters far below 2^32 in size; then two finaliser rounds
    mix in the household and the folded counters.

    Parameters
    ----------
    seed : int
        The scenario seed.
    household : numpy.ndarray
        Household ids (int, non-negative).
    stream : str
        The name of the random stream (what the draw is for).
    *counters : array_like
        Integer counters (day, appliance, index ...), broadcast with ``household``.

    Returns
    -------
    numpy.ndarray
        uint64 hashes, of the broadcast shape.

    References
    ----------
    .. [1] Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
       OOPSLA 2014 (constants of Vigna's ``splitmix64.c``).

    Examples
    --------
    >>> hash64(7, np.arange(3), "demo", 0).dtype
    dtype('uint64')
    """
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(seed) * _GOLDEN + np.uint64(stream_id(stream)))
        h = _mix(key ^ (_words(household) * _GOLDEN))
        if counters:
            fold = _words(counters[0])
            for c in counters[1:]:
                fold = fold * _FOLD + _words(c)
            h = _mix(h + fold * _GOLDEN)
    return h


def uniform(seed: int, household: np.ndarray, stream: str, *counters) -> np.ndarray:
    """Draw uniform float64 numbers in [0, 1) keyed by (seed, household, stream, counters).

    Parameters
    ----------
    seed : int
        The scenario seed.
    household : numpy.ndarray
        Household ids.
    stream : str
        The name of the random stream.
    *counters : array_like
        Integer counters, broadcast with ``household``.

    Returns
    -------
    numpy.ndarray
        Uniforms in [0, 1) [1], of the broadcast shape.

    Examples
    --------
    A household's draw does not depend on which other households are drawn with it:

    >>> u = uniform(7, np.arange(5), "demo", 0)
    >>> bool(u[3] == uniform(7, np.array([3]), "demo", 0)[0])
    True
    >>> bool(((u >= 0) & (u < 1)).all())
    True
    """
    return to_unit(hash64(seed, household, stream, *counters))


def normal(seed: int, household: np.ndarray, stream: str, *counters) -> np.ndarray:
    """Draw standard normal deviates keyed like :func:`uniform`, by inversion.

    The uniform's 53-bit grid is shifted by half a step, so that no deviate is infinite.

    Parameters
    ----------
    seed : int
        The scenario seed.
    household : numpy.ndarray
        Household ids (or other non-negative keys, e.g. a group's).
    stream : str
        The name of the random stream.
    *counters : array_like
        Integer counters, broadcast with ``household``.

    Returns
    -------
    numpy.ndarray
        Standard normal deviates [1], of the broadcast shape.

    Examples
    --------
    >>> z = normal(7, np.arange(20000), "demo")
    >>> round(float(z.mean()), 1), round(float(z.std()), 1)
    (0.0, 1.0)
    """
    return ndtri(uniform(seed, household, stream, *counters) + 2.0**-54)


def lognormal_factor(z: np.ndarray, cv: float) -> np.ndarray:
    r"""Compute lognormal factors with mean 1 from standard normal deviates.

    The factor has coefficient of variation ``cv``; from the moments of the lognormal
    distribution (E = exp(μ + σ²/2), CV² = exp(σ²) − 1; Johnson, Kotz, Balakrishnan,
    *Continuous Univariate Distributions*, vol. 1, 2nd ed., Wiley 1994, ch. 14):

    .. math:: f = \exp(\sigma z - \sigma^2 / 2), \quad \sigma^2 = \ln(1 + cv^2)

    The factors are drsim's (the dissertation's simulation has none): the M&V error
    (docs/decisions.md, "M&V: the baseline and the expected complete response") and the
    common day factor (:mod:`drsim.household.day_variation`). With ``cv`` = 0 every
    factor is exactly 1.

    Parameters
    ----------
    z : numpy.ndarray
        Standard normal deviates [1].
    cv : float
        Coefficient of variation of the factors, ≥ 0 [1].

    Returns
    -------
    numpy.ndarray
        The factors, shape of ``z`` [1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (B and P̂
       estimated by M&V) and §6.3.1 (the simulated households).

    Examples
    --------
    >>> lognormal_factor(np.array([0.0]), 0.0)
    array([1.])
    >>> round(float(lognormal_factor(np.array([0.0]), 0.05)[0]), 6)
    0.998752
    """
    sigma2 = np.log1p(cv * cv)
    return np.exp(np.sqrt(sigma2) * np.asarray(z, dtype=np.float64) - sigma2 / 2.0)


def to_unit(h: np.ndarray) -> np.ndarray:
    """Turn the top 53 bits of a hash into a uniform float64 in [0, 1).

    Parameters
    ----------
    h : numpy.ndarray
        uint64 hashes (:func:`hash64`).

    Returns
    -------
    numpy.ndarray
        Uniforms in [0, 1) [1], same shape.
    """
    return (h >> _S11).astype(np.float64) * _TO_UNIT


def low_bits(h: np.ndarray, n: int) -> np.ndarray:
    """Return the low ``n`` bits of a hash, unused by :func:`to_unit`: a second draw.

    Parameters
    ----------
    h : numpy.ndarray
        uint64 hashes (:func:`hash64`).
    n : int
        Number of bits, at most 11 (the bits :func:`to_unit` drops).

    Returns
    -------
    numpy.ndarray
        int64 values uniform in [0, 2^n), same shape.
    """
    return (h & np.uint64((1 << n) - 1)).astype(np.int64)


def integers(seed: int, household: np.ndarray, stream: str, low: int, high: int, *counters):
    """Draw integers uniform in [low, high] (inclusive), keyed like :func:`uniform`.

    Parameters
    ----------
    seed : int
        The scenario seed.
    household : numpy.ndarray
        Household ids.
    stream : str
        The name of the random stream.
    low, high : int
        The bounds, both included.
    *counters : array_like
        Integer counters, broadcast with ``household``.

    Returns
    -------
    numpy.ndarray
        int64 draws in [low, high], of the broadcast shape.

    Examples
    --------
    Appliances per household, 20 to 25 (§6.3.1 of the dissertation):

    >>> n = integers(7, np.arange(1000), "demo", 20, 25)
    >>> int(n.min()), int(n.max())
    (20, 25)
    """
    u = uniform(seed, household, stream, *counters)
    return low + np.minimum((u * (high - low + 1)).astype(np.int64), high - low)


class InverseCDF:
    """Inverse-CDF sampling from one of several discrete distributions, vectorized.

    :meth:`sample` returns, per element, the first k with ``cdf[index, k] > u``. A guide
    table [1]_ gives a start per 1/1024 of [0, 1), from which a short vectorized walk
    finds the exact k.

    Parameters
    ----------
    cdf : numpy.ndarray
        (M, K): row i the cumulative probabilities of distribution i; its last entry is
        set to 1.

    References
    ----------
    .. [1] Chen, Asau, "On generating random variates from an empirical
       distribution", AIIE Transactions 6(2), 1974.

    Examples
    --------
    >>> sampler = InverseCDF(np.array([[0.5, 1.0, 1.0], [0.1, 0.6, 1.0]]))
    >>> sampler.sample(np.array([0, 0, 1, 1]), np.array([0.3, 0.7, 0.3, 0.7]))
    array([0, 1, 1, 2])
    """

    GUIDES = 1024

    def __init__(self, cdf: np.ndarray):
        cdf = np.array(cdf, dtype=np.float64)
        cdf[:, -1] = 1.0
        self.cdf, self.width = cdf.ravel(), cdf.shape[1]
        edges = np.arange(self.GUIDES) / self.GUIDES
        self.guide = np.stack([np.searchsorted(row, edges, side="right") for row in cdf])
        self.guide = np.minimum(self.guide, self.width - 1).ravel()

    def sample(self, index: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Map uniforms to outcomes of the given distributions.

        Parameters
        ----------
        index : numpy.ndarray
            The distribution (row of ``cdf``) of each draw.
        u : numpy.ndarray
            Uniforms in [0, 1), same shape [1].

        Returns
        -------
        numpy.ndarray
            The first k with ``cdf[index, k] > u``, per draw.
        """
        base = index * self.width
        k = self.guide[index * self.GUIDES + (u * self.GUIDES).astype(np.int64)]
        walk = np.nonzero(self.cdf[base + k] <= u)[0]
        while len(walk):
            k[walk] += 1
            walk = walk[self.cdf[base[walk] + k[walk]] <= u[walk]]
        return k


def inverse_cdf(cdf: np.ndarray) -> InverseCDF:
    """Return the :class:`InverseCDF` of ``cdf``, built once per distinct table in a process.

    Every chunk of a scenario draws from the same few tables; a sampler is never changed
    after it is built.

    Parameters
    ----------
    cdf : numpy.ndarray
        (M, K) cumulative probabilities, as for :class:`InverseCDF`.

    Returns
    -------
    InverseCDF
        The sampler (the same object for an equal table).

    Examples
    --------
    >>> a = inverse_cdf(np.array([[0.5, 1.0]]))
    >>> a is inverse_cdf(np.array([[0.5, 1.0]]))
    True
    """
    cdf = np.ascontiguousarray(cdf, dtype=np.float64)
    return _inverse_cdf(cdf.tobytes(), cdf.shape)


@lru_cache(maxsize=64)
def _inverse_cdf(data: bytes, shape: tuple[int, ...]) -> InverseCDF:
    return InverseCDF(np.frombuffer(data, dtype=np.float64).reshape(shape))


def poisson_table(means: np.ndarray) -> InverseCDF:
    """Build an inverse-CDF sampler of Poisson counts for a few distinct means (once each).

    Each table holds the counts 0 .. m + 12√m + 23, m the largest mean (tables to
    1e-15).

    Parameters
    ----------
    means : numpy.ndarray
        The Poisson means, one distribution per mean.

    Returns
    -------
    InverseCDF
        Its distribution i is Poisson with mean ``means[i]``.

    Examples
    --------
    >>> table = poisson_table(np.array([0.0, 2.0]))
    >>> table.sample(np.array([0, 1, 1, 1]), np.array([0.99, 0.1, 0.5, 0.99]))
    array([0, 0, 2, 6])
    """
    means = np.asarray(means, dtype=np.float64)
    top = float(means.max(initial=0.0))
    size = int(top + 12 * np.sqrt(top) + 24)
    k = np.arange(size)
    log_pmf = k[None, :] * np.log(np.maximum(means, 1e-300))[:, None] - means[:, None]
    log_pmf -= np.cumsum(np.log(np.maximum(k, 1)))[None, :]
    cdf = np.cumsum(np.exp(log_pmf), axis=1)
    cdf[means == 0] = 1.0
    return inverse_cdf(cdf)
