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

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = (np.uint64(s) for s in (30, 27, 31, 11))
_TO_UNIT = 2.0**-53


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (bijective on uint64)."""
    x = x ^ (x >> _S30)
    x = x * _MUL1
    x = x ^ (x >> _S27)
    x = x * _MUL2
    return x ^ (x >> _S31)


def stream_id(name: str) -> int:
    """Stable 32-bit id of a named stream (CRC-32 of its name)."""
    return zlib.crc32(name.encode())


_FOLD = np.uint64(0xD1B54A32D192ED03)  # odd multiplier folding the counters into one word


def hash64(seed: int, household: np.ndarray, stream: str, *counters) -> np.ndarray:
    """uint64 hash of (seed, household, stream, counters...), broadcast over arrays.

    The counters are folded into one word, c0·K^(n-1) + ... + c(n-1) mod 2^64 with an odd
    K, which is injective for counters far below 2^32 in size; then two finaliser rounds
    mix in the household and the folded counters.
    """
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(seed) * _GOLDEN + np.uint64(stream_id(stream)))
        h = _mix(key ^ (np.asarray(household).astype(np.uint64) * _GOLDEN))
        if counters:
            fold = np.asarray(counters[0]).astype(np.uint64)
            for c in counters[1:]:
                fold = fold * _FOLD + np.asarray(c).astype(np.uint64)
            h = _mix(h + fold * _GOLDEN)
    return h


def uniform(seed: int, household: np.ndarray, stream: str, *counters) -> np.ndarray:
    """Uniform float64 draws in [0, 1) keyed by (seed, household, stream, counters)."""
    return to_unit(hash64(seed, household, stream, *counters))


def to_unit(h: np.ndarray) -> np.ndarray:
    """The top 53 bits of a hash as a uniform float64 in [0, 1)."""
    return (h >> _S11).astype(np.float64) * _TO_UNIT


def low_bits(h: np.ndarray, n: int) -> np.ndarray:
    """The low ``n`` (≤ 11) bits of a hash, unused by :func:`to_unit`: a second draw."""
    return (h & np.uint64((1 << n) - 1)).astype(np.int64)


def integers(seed: int, household: np.ndarray, stream: str, low: int, high: int, *counters):
    """Integers uniform in [low, high] (inclusive) keyed like :func:`uniform`."""
    u = uniform(seed, household, stream, *counters)
    return low + np.minimum((u * (high - low + 1)).astype(np.int64), high - low)


class InverseCDF:
    """Inverse-CDF sampling from one of several discrete distributions, vectorized.

    ``cdf`` is (M, K): row i the cumulative probabilities of distribution i (last = 1).
    ``sample(index, u)`` returns, per element, the first k with ``cdf[index, k] > u``. A
    guide table (Chen & Asau, "On generating random variates from an empirical
    distribution", AIIE Transactions 6(2), 1974) gives a start per 1/1024 of [0, 1), from
    which a short vectorized walk finds the exact k.
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
        base = index * self.width
        k = self.guide[index * self.GUIDES + (u * self.GUIDES).astype(np.int64)]
        walk = np.nonzero(self.cdf[base + k] <= u)[0]
        while len(walk):
            k[walk] += 1
            walk = walk[self.cdf[base[walk] + k[walk]] <= u[walk]]
        return k


def poisson_table(means: np.ndarray) -> InverseCDF:
    """Inverse-CDF sampler of Poisson counts for a few distinct means (tables to 1e-15)."""
    means = np.asarray(means, dtype=np.float64)
    top = float(means.max(initial=0.0))
    size = int(top + 12 * np.sqrt(top) + 24)
    k = np.arange(size)
    log_pmf = k[None, :] * np.log(np.maximum(means, 1e-300))[:, None] - means[:, None]
    log_pmf -= np.cumsum(np.log(np.maximum(k, 1)))[None, :]
    cdf = np.cumsum(np.exp(log_pmf), axis=1)
    cdf[means == 0] = 1.0
    return InverseCDF(cdf)
