"""Hashes of remote data elements, the same in every process: what ties an element's
latency (and its versions' latencies) to the element rather than to the batch, chunk or
core that fetches it (:mod:`cep_core.remote.batch`, :mod:`cep_core.remote.versions`)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pandas as pd

__all__ = ["element_hash", "mix", "uniform", "GOLDEN"]

_C1, _C2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser over uint64 values (``mix(0) == 0``)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _C1
        x = (x ^ (x >> np.uint64(27))) * _C2
    return x ^ (x >> np.uint64(31))


@lru_cache(maxsize=256)
def _name_hash(name: str) -> np.uint64:
    """The hash of a table's name (hashing an object array is slow: made once)."""
    return pd.util.hash_array(np.array([name], dtype=object))[0]


def element_hash(name: str, cols: Sequence[np.ndarray]) -> np.ndarray:
    """A 64-bit hash of each element ``name[cols[0][i], cols[1][i], ..]``, the same in
    every process.

    >>> a = element_hash("λ", [np.array([1, 2]), np.array([10, 10])])
    >>> b = element_hash("λ", [np.array([2]), np.array([10])])
    >>> bool(a[1] == b[0]), bool(a[0] != a[1])
    (True, True)
    """
    n = len(cols[0])
    h = np.full(n, _name_hash(name), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for col in cols:
            h = mix(h * GOLDEN + pd.util.hash_array(np.asarray(col)))
    return h


def uniform(h: np.ndarray) -> np.ndarray:
    """A uniform [0, 1) from each hash."""
    return (mix(h) >> np.uint64(11)).astype(np.float64) / float(1 << 53)
