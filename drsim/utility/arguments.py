"""Check the arguments of the incentive formulas (Eq. 6.5-6.8).

Each bad value raises a ValueError that names the argument and what is accepted; the
formulas themselves are :mod:`drsim.utility.incentive` and :mod:`drsim.utility.lottery`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["factors_array", "id_array", "in_range", "non_negative", "number", "positive",
           "rates"]


def number(name: str, value: Any) -> float:
    """Return ``value`` as a finite float.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : Any
        Anything ``float()`` accepts.

    Returns
    -------
    float
        ``float(value)``.

    Raises
    ------
    ValueError
        If ``value`` is not a number, or is NaN or infinite.
    """
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    return x


def in_range(name: str, value: Any, lo: float, hi: float, *, hi_open: bool = False,
              lo_open: bool = False) -> float:
    """Return ``value`` as a float after checking that it lies in the interval [lo, hi].

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : Any
        The value to check (see :func:`number`).
    lo, hi : float
        The bounds of the interval.
    hi_open, lo_open : bool, default False
        Exclude the upper (lower) bound.

    Returns
    -------
    float
        The value, finite and inside the interval.

    Raises
    ------
    ValueError
        If ``value`` is not a finite number or lies outside the interval.
    """
    x = number(name, value)
    if (x <= lo if lo_open else x < lo) or (x >= hi if hi_open else x > hi):
        accepted = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise ValueError(f"{name}: expected a number in {accepted}, got {value!r}")
    return x


def non_negative(name: str, value: Any) -> float:
    """Return ``value`` as a float after checking that it is finite and >= 0.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : Any
        The value to check (see :func:`number`).

    Returns
    -------
    float
        The value.

    Raises
    ------
    ValueError
        If ``value`` is not a finite number or is negative.
    """
    x = number(name, value)
    if x < 0:
        raise ValueError(f"{name}: expected a number >= 0, got {value!r}")
    return x


def positive(name: str, value: Any) -> float:
    """Return ``value`` as a float after checking that it is finite and > 0.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : Any
        The value to check (see :func:`number`).

    Returns
    -------
    float
        The value.

    Raises
    ------
    ValueError
        If ``value`` is not a finite number or is not above 0.
    """
    x = number(name, value)
    if x <= 0:
        raise ValueError(f"{name}: expected a number > 0, got {value!r}")
    return x


def rates(name: str, values: ArrayLike) -> np.ndarray:
    """Return follow-through rates as a float array, each checked to lie in [0, 1].

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    values : array_like
        Follow-through rates θ [1].

    Returns
    -------
    numpy.ndarray
        The rates as float64, same shape.

    Raises
    ------
    ValueError
        If a rate is outside [0, 1] or NaN.
    """
    x = np.asarray(values, dtype=np.float64)
    bad = ~((x >= 0.0) & (x <= 1.0))  # also catches NaN
    if bad.any():
        first = x[bad].ravel()[0]
        raise ValueError(f"{name}: follow-through rates must be in [0, 1], got {first!r} "
                         f"({int(bad.sum())} value(s) outside)")
    return x


def factors_array(name: str, values: ArrayLike) -> np.ndarray:
    """Return incentive-response factors u as a float array, each checked to be finite and >= 1.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    values : array_like
        Mapping factors u of Eq. 6.7 [1] (u = 1 adds no incentive).

    Returns
    -------
    numpy.ndarray
        The factors as float64, same shape.

    Raises
    ------
    ValueError
        If a factor is below 1, NaN or infinite.
    """
    u = np.asarray(values, dtype=np.float64)
    bad = ~(np.isfinite(u) & (u >= 1.0))
    if bad.any():
        raise ValueError(f"{name}: mapping factors u must be finite and >= 1 (u = 1 adds no "
                         f"incentive), got {u[bad].ravel()[0]!r}")
    return u


def id_array(values: ArrayLike) -> np.ndarray:
    """Return household ids as an int64 array, each checked to be an integer >= 0.

    Parameters
    ----------
    values : array_like
        Household ids (an integer dtype).

    Returns
    -------
    numpy.ndarray
        The ids as int64, same shape.

    Raises
    ------
    ValueError
        If the dtype is not an integer one or an id is negative.
    """
    ids = np.asarray(values)
    if ids.dtype.kind not in "iu":
        raise ValueError(f"household_ids: expected integer ids, got dtype {ids.dtype}")
    if ids.size and ids.min() < 0:
        raise ValueError(f"household_ids: ids must be >= 0, got {ids.min()}")
    return ids.astype(np.int64)
