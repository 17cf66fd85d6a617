"""Checks of the arguments of the incentive formulas (Eq. 6.5-6.8): each bad value a
ValueError naming the argument and what is accepted."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["factors_array", "id_array", "in_range", "non_negative", "number", "positive",
           "rates"]


def number(name: str, value: Any) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    return x


def in_range(name: str, value: Any, lo: float, hi: float, *, hi_open: bool = False,
              lo_open: bool = False) -> float:
    x = number(name, value)
    if (x <= lo if lo_open else x < lo) or (x >= hi if hi_open else x > hi):
        accepted = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise ValueError(f"{name}: expected a number in {accepted}, got {value!r}")
    return x


def non_negative(name: str, value: Any) -> float:
    x = number(name, value)
    if x < 0:
        raise ValueError(f"{name}: expected a number >= 0, got {value!r}")
    return x


def positive(name: str, value: Any) -> float:
    x = number(name, value)
    if x <= 0:
        raise ValueError(f"{name}: expected a number > 0, got {value!r}")
    return x


def rates(name: str, values: ArrayLike) -> np.ndarray:
    """A float array of follow-through rates, each in [0, 1]."""
    x = np.asarray(values, dtype=np.float64)
    bad = ~((x >= 0.0) & (x <= 1.0))  # also catches NaN
    if bad.any():
        first = x[bad].ravel()[0]
        raise ValueError(f"{name}: follow-through rates must be in [0, 1], got {first!r} "
                         f"({int(bad.sum())} value(s) outside)")
    return x


def factors_array(name: str, values: ArrayLike) -> np.ndarray:
    """Incentive-response factors u: finite and >= 1."""
    u = np.asarray(values, dtype=np.float64)
    bad = ~(np.isfinite(u) & (u >= 1.0))
    if bad.any():
        raise ValueError(f"{name}: mapping factors u must be finite and >= 1 (u = 1 adds no "
                         f"incentive), got {u[bad].ravel()[0]!r}")
    return u


def id_array(values: ArrayLike) -> np.ndarray:
    ids = np.asarray(values)
    if ids.dtype.kind not in "iu":
        raise ValueError(f"household_ids: expected integer ids, got dtype {ids.dtype}")
    if ids.size and ids.min() < 0:
        raise ValueError(f"household_ids: ids must be >= 0, got {ids.min()}")
    return ids.astype(np.int64)
