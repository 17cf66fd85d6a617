"""Time of day and units shared by every module: minutes, clock times, µkW, MWh.

A day is simulated at one-minute resolution, so a load curve is 1,440 values in kW and the
energy of a curve is Σ kW · 1 min. Loads that are summed across chunks travel as whole µkW
(:data:`MICRO`), so their sums are exact in float64 whatever the chunking.
"""

from __future__ import annotations

import re

import numpy as np

DAY = 1440  # [min] minutes in a day: the length of a load curve
MICRO = 1_000_000  # [µkW per kW]: loads summed across chunks travel in whole µkW

_CLOCK = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*$")


def clock(minute: float) -> str:
    """Minutes since midnight [min] as ``"HH:MM"`` (rounded to the minute).

    >>> clock(1110), clock(1440)
    ('18:30', '24:00')
    """
    m = int(round(minute))
    return f"{m // 60:02d}:{m % 60:02d}"


def clock_minutes(value: str | int, what: str = "time") -> int:
    """Minutes since midnight [min] of ``"HH:MM"`` (00:00 to 24:00); an int passes through.

    >>> clock_minutes("18:30"), clock_minutes(2000)
    (1110, 2000)
    """
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return int(value)
    minute = _clock_or_none(value) if isinstance(value, str) else None
    if minute is None:
        raise ValueError(f"{what}: expected a clock time HH:MM, e.g. 18:30, got {value!r}")
    return minute


def is_clock(value: object) -> bool:
    """Whether ``value`` is a clock time text ``"HH:MM"`` (00:00 to 24:00).

    >>> is_clock("18:30"), is_clock("25:00"), is_clock(1110)
    (True, False, False)
    """
    return isinstance(value, str) and _clock_or_none(value) is not None


def clock_minutes_or_none(value: str | None, what: str = "time") -> int | None:
    """Minutes since midnight [min] of a clock time that may be absent, as summary.json
    holds one (e.g. no non-compliance predicted): None for None or ``"none"``; anything
    else as :func:`clock_minutes`.

    >>> clock_minutes_or_none("19:39"), clock_minutes_or_none(None), clock_minutes_or_none("none")
    (1179, None, None)
    """
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    return clock_minutes(value, what)


def _clock_or_none(text: str) -> int | None:
    """Minutes since midnight of ``"HH:MM"`` text, None when it is not one."""
    match = _CLOCK.match(text)
    if match is None:
        return None
    hours, minutes = int(match[1]), int(match[2])
    if hours > 24 or minutes > 59 or (hours == 24 and minutes > 0):
        return None
    return hours * 60 + minutes


def mwh(kw_minutes: float) -> float:
    """Energy [MWh] of a sum of one-minute loads [kW · min]: Σ kW / 60 / 1000.

    >>> mwh(60_000.0)
    1.0
    """
    return float(kw_minutes) / 60.0 / 1000.0
