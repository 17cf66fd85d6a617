"""The cells of a run's headline (``drsim run``, ``drsim report``).

The headline's own rows and the monitoring features'
(:meth:`drsim.utility.features.MonitoringFeature.headline`) write their values with
these, from summary.json's values alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from drsim.units import clock

__all__ = ["MISSING", "pair_cell", "real", "share_cell", "time_cell"]

MISSING = "—"  # a headline cell whose key the summary lacks


def real(value: Any) -> float | None:
    """Return a finite real number of a summary, else None.

    Parameters
    ----------
    value : object
        A JSON value (text and booleans are not numbers here).

    Returns
    -------
    float or None
        The number.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def time_cell(value: Any) -> str:
    """Return a headline cell of a clock time ("HH:MM", minutes, or none).

    Parameters
    ----------
    value : object
        The summary's value.

    Returns
    -------
    str
        The cell.
    """
    if value is None:
        return "none"
    if isinstance(value, int) and not isinstance(value, bool):
        return clock(int(value))
    return str(value)


def share_cell(value: Any) -> str:
    """Return a headline cell of a share, three decimals ("n/a" for none or NaN).

    Parameters
    ----------
    value : object
        The summary's value.

    Returns
    -------
    str
        The cell.
    """
    number = real(value)
    return f"{number:.3f}" if number is not None else "n/a" if value is None or \
        isinstance(value, float) else str(value)


def pair_cell(section: Any, first: str, second: str) -> str:
    """Return a headline cell of two shares of a summary section, "0.878 / 0.305".

    Parameters
    ----------
    section : object
        The section.
    first, second : str
        Their keys (a missing one shows :data:`MISSING`).

    Returns
    -------
    str
        The cell.
    """
    cells = []
    for key in (first, second):
        if isinstance(section, Mapping) and key in section:
            value = section[key]
            cells.append(share_cell(None if isinstance(value, float)
                                    and not math.isfinite(value) else value))
        else:
            cells.append(MISSING)
    return " / ".join(cells)
