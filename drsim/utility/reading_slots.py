"""The reading slots of the DR program: a meter's reading every ``reading`` minutes.

A slot is one reading interval of the program, ``t_start + j·reading`` (§6.2.2: meters
report every minute while monitored, then at the settlement rate); a settlement reading
falls in the slot of its minute. Lost readings (:mod:`drsim.utility.readings`), the costs
as deployed and the threshold's replicas count readings by slot.
"""

from __future__ import annotations

import numpy as np

__all__ = ["interim_offsets", "reading_minutes", "slot_of"]


def reading_minutes(t_start: int, t_end: int, reading: int) -> np.ndarray:
    """Return the reading slots of the program: ``t_start + j·reading`` before ``t_end``.

    Parameters
    ----------
    t_start, t_end : int
        The program, end excluded [minutes since midnight].
    reading : int
        The reading interval [minutes].

    Returns
    -------
    numpy.ndarray
        The slots' minutes, shape (slots,) [minutes since midnight].

    Examples
    --------
    >>> reading_minutes(1110, 1120, 3).tolist()
    [1110, 1113, 1116, 1119]
    """
    return np.arange(t_start, t_end, reading, dtype=np.int64)


def slot_of(minutes: np.ndarray, t_start: int, reading: int) -> np.ndarray:
    """Return the slot index of readings at ``minutes``.

    A settlement reading falls in the slot of its minute.

    Parameters
    ----------
    minutes : numpy.ndarray
        The readings' minutes [minutes since midnight].
    t_start : int
        The program start [minutes since midnight].
    reading : int
        The reading interval [minutes].

    Returns
    -------
    numpy.ndarray
        The slot indices, ``(minutes − t_start) // reading``, shape of ``minutes``.

    Examples
    --------
    >>> slot_of(np.array([1110, 1125, 1126]), 1110, 5).tolist()
    [0, 3, 3]
    """
    return (np.asarray(minutes, dtype=np.int64) - t_start) // reading


def interim_offsets(delta: int, reading: int) -> np.ndarray:
    """Return the offsets of the readings a meter sends between two of its tests.

    Meters report every ``reading`` minutes while monitored (§6.2.2); tests are ``delta``
    minutes apart, so ``delta / reading − 1`` readings fall strictly between two tests.

    Parameters
    ----------
    delta, reading : int
        The test and the reading interval [minutes].

    Returns
    -------
    numpy.ndarray
        The offsets after a test [minutes].

    Examples
    --------
    >>> interim_offsets(5, 1).tolist(), interim_offsets(15, 5).tolist()
    ([1, 2, 3, 4], [5, 10])
    """
    return np.arange(reading, delta, reading, dtype=np.int64)
