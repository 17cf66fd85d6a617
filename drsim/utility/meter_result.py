"""The meter tier's result.

One chunk's user events and the tier's work per test time (dissertation §6.2.2, Listing
6.1; :func:`drsim.utility.monitoring.meter_tier`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["MeterResult"]


@dataclass
class MeterResult:
    """User events of one chunk and the meter tier's work per test time.

    Arrays per test time are aligned with ``plan.test_times``.

    Attributes
    ----------
    events : pandas.DataFrame
        The user events (``userNonComplianceEvent``): columns time [minutes since
        midnight], houseID, groupID, accLoad [kWh], ``delay``: how long after its test
        time the reading that raised it was decided (its remote data in hand,
        :mod:`drsim.utility.fetching`; 0 with local tables) [minutes], and ``missing``: the
        lost test slots in its run (0 without loss).
    processed : numpy.ndarray
        Per test time, the events processed (placeholders of lost readings included).
    partial_matches : numpy.ndarray
        Per test time, the partial matches created plus extended.
    outputs : numpy.ndarray
        Per test time, the user events emitted.
    first_flag : numpy.ndarray
        Per household, the minute of its first user event, or NOT_LATCHED.
    fetches : numpy.ndarray
        Per test time, the remote-data requests sent for it (with local tables, one
        ``λ[houseID, time]`` per real reading tested).
    fetched : list of int or None
        With remote data, :meth:`drsim.utility.fetching.FetchCounts.as_list`.
    lost : numpy.ndarray or None
        Per test time, the lost test readings (None: no loss).
    silent_spells : numpy.ndarray or None
        Per test time, the meters that fall silent there: one report each to the group
        leader (:func:`drsim.utility.readings.silence`).
    first_silent : numpy.ndarray or None
        Per household, the first test minute at which it is silent (NOT_LATCHED: never).
    """

    events: pd.DataFrame
    processed: np.ndarray
    partial_matches: np.ndarray
    outputs: np.ndarray
    first_flag: np.ndarray  # per household: first user event's minute, or NOT_LATCHED
    fetches: np.ndarray
    fetched: list[int] | None = None  # drsim.utility.fetching.FetchCounts.as_list, with remote data
    lost: np.ndarray | None = None  # per test: lost test readings (None: no loss)
    silent_spells: np.ndarray | None = None
    first_silent: np.ndarray | None = None  # per household: a test's minute, or NOT_LATCHED

    @classmethod
    def combined(cls, parts: list[MeterResult]) -> MeterResult:
        """Combine the results of blocks of households monitored on their own.

        Events and per-household values in block order, per-test counts summed
        (``fetched``: none, as the blocks fetch nothing).
        """
        def total(name: str) -> np.ndarray | None:
            values = [getattr(p, name) for p in parts]
            return None if values[0] is None else np.sum(values, axis=0)

        def joined(name: str) -> np.ndarray | None:
            values = [getattr(p, name) for p in parts]
            return None if values[0] is None else np.concatenate(values)

        return cls(pd.concat([p.events for p in parts], ignore_index=True),
                   total("processed"), total("partial_matches"), total("outputs"),
                   joined("first_flag"), total("fetches"), None, total("lost"),
                   total("silent_spells"), joined("first_silent"))
