"""The readings that quiet meters do not send under load shedding (OP), counted.

A gateway's input filter that drops a meter's test reading tells the meter, which stays
quiet until its next test (docs/decisions.md, "Where a shed event disappears"): the
readings between leave communication. :func:`quiet_readings` counts them per test and
offset after it. A stream counts them again at every micro-batch over its tests so far;
:class:`QuietCount`, kept with the stream's run of the meter tier
(:attr:`drsim.utility.session_feed.MeterCarry.kept`), counts each shed reading's quiet
ones once they are all known and only the newest again (:func:`quiet_so_far`), with the
same counts as :func:`quiet_readings` over every shed reading so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from drsim.utility.monitoring import MonitoringPlan
from drsim.utility.reading_slots import interim_offsets

__all__ = ["QUIET", "QuietCount", "quiet_readings", "quiet_so_far"]

#: the key of a run's :class:`QuietCount` in its carry's ``kept``
QUIET = "quiet readings"


def quiet_readings(plan: MonitoringPlan, house_ids: np.ndarray, shed_keys: np.ndarray,
                   shed_times: np.ndarray, lost: np.ndarray | None = None) -> np.ndarray:
    """Count the readings quiet meters do not send, per test and offset after it.

    A meter whose test reading the gateway's input filter drops is told so and stays
    quiet until its next test: the readings between
    (:func:`drsim.utility.reading_slots.interim_offsets`) feed no
    query, and the next test's ``accLoad`` carries their energy (docs/decisions.md,
    "Where a shed event disappears"). A reading already lost on the way (``lost``) is
    not counted again; a minute past those ``lost`` knows counts as sent.

    Parameters
    ----------
    plan : MonitoringPlan
        The monitoring (test times, δ, the reading interval).
    house_ids : numpy.ndarray
        (households,) the chunk's household ids.
    shed_keys, shed_times : numpy.ndarray
        The household and test time [minutes since midnight] of each test reading shed.
    lost : numpy.ndarray, optional
        (households, program minutes) the readings lost on the way.

    Returns
    -------
    numpy.ndarray of int64
        (tests, offsets) the quiet readings after each test time.

    Examples
    --------
    Household 11's 18:55 reading is shed; its 18:57 reading was lost anyway.

    >>> plan = MonitoringPlan(1110, 1230, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> lost = np.zeros((2, 120), dtype=bool)
    >>> lost[1, 1137 - 1110] = True
    >>> q = quiet_readings(plan, np.array([10, 11]), np.array([11]), np.array([1135]), lost)
    >>> q[1].tolist(), int(q.sum())
    ([1, 0, 1, 1], 3)
    """
    offsets = interim_offsets(plan.delta, plan.reading)
    shape = (len(plan.test_times), len(offsets))
    test = np.searchsorted(plan.test_times, np.asarray(shed_times, dtype=np.int64))
    sent = np.ones((len(test), len(offsets)), dtype=bool)
    if lost is not None and lost.shape[1] and len(test):
        ids, keys = (np.asarray(a, dtype=np.int64) for a in (house_ids, shed_keys))
        row = keys - ids[0] if ids[-1] - ids[0] == len(ids) - 1 else \
            np.searchsorted(ids, keys)  # (ascending ids: a range is its own index)
        minute = plan.test_times[test][:, None] + offsets[None, :] - plan.t_start
        width = lost.shape[1]  # a minute past the readings known is sent
        at = row[:, None] * width + np.minimum(minute, width - 1)
        sent = ~np.asarray(lost, dtype=bool).ravel()[at] | (minute >= width)
    cell = test[:, None] * len(offsets) + np.arange(len(offsets))[None, :]
    return np.bincount(cell[sent], minlength=shape[0] * shape[1]).reshape(shape) \
        .astype(np.int64)


def _empty(dtype: Any) -> np.ndarray:
    """Return an empty array of ``dtype`` (a dataclass field's default)."""
    return np.zeros(0, dtype=dtype)


@dataclass
class QuietCount:
    """The quiet readings of one run of a stream's meter tier, counted over micro-batches.

    A stream runs the meter tier over its tests so far at every micro-batch
    (:mod:`drsim.pipeline.stream_tiers`), with the shed test readings so far in the
    order they were shed and the readings lost so far; a minute past those known counts
    as sent (:func:`quiet_readings`). A shed reading whose quiet readings are all among
    those known is *settled*: its counts no longer change, as the readings known only
    grow. The count keeps the settled counts and the shed readings they came from, and
    at each call counts only the shed readings after them: their settled part is added
    for good, the rest counted for this call alone. Where the shed readings, households
    or plan given do not continue those counted (a run started again), it counts from
    the first. Integer counts add exactly, so every call gives :func:`quiet_readings`'s
    counts of the same arguments.

    Examples
    --------
    A stream's two micro-batches: household 11's 18:55 reading is shed; its 18:57
    reading was lost, which the second micro-batch knows.

    >>> plan = MonitoringPlan(1110, 1230, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> lost = np.zeros((2, 120), dtype=bool)
    >>> lost[1, 1137 - 1110] = True
    >>> count, ids = QuietCount(), np.array([10, 11])
    >>> keys, times = np.array([11]), np.array([1135.0])
    >>> first = count.count(plan, ids, keys, times, lost[:, :26])
    >>> second = count.count(plan, ids, keys, times, lost)
    >>> int(first.sum()), int(second.sum()), len(count.keys)
    (4, 3, 1)
    """

    #: (tests, offsets) the settled shed readings' quiet readings
    counts: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    #: the household and test time of each settled shed reading, in the order given
    keys: np.ndarray = field(default_factory=lambda: _empty(np.int64))
    times: np.ndarray = field(default_factory=lambda: _empty(np.float64))
    #: the households, the plan's program and δ, and the readings known [minutes]
    ids: np.ndarray = field(default_factory=lambda: _empty(np.int64))
    frame: tuple = ()
    known: int | None = None

    def count(self, plan: MonitoringPlan, house_ids: np.ndarray, shed_keys: np.ndarray,
              shed_times: np.ndarray, lost: np.ndarray | None = None) -> np.ndarray:
        """Count the quiet readings per test and offset after it, the settled ones kept.

        Parameters
        ----------
        plan, house_ids, shed_keys, shed_times, lost
            As :func:`quiet_readings`'s: the plan cut after the tests so far, the shed
            test readings so far, the readings lost so far (households, minutes known).

        Returns
        -------
        numpy.ndarray of int64
            (tests, offsets) what :func:`quiet_readings` returns.
        """
        keys, times = np.asarray(shed_keys), np.asarray(shed_times)
        offsets = interim_offsets(plan.delta, plan.reading)
        shape = (len(plan.test_times), len(offsets))
        known = None if lost is None else int(lost.shape[1])
        if not self._continues(plan, house_ids, keys, times, shape, known):
            self.counts = np.zeros((0, shape[1]), dtype=np.int64)
            self.keys, self.times = keys[:0], times[:0]
        n = len(self.keys)
        # settled: every quiet reading's minute known (none lost to know: all settled)
        last = times[n:].astype(np.int64) + int(offsets.max(initial=0)) - plan.t_start
        open_ = np.flatnonzero(last >= known) if known is not None else last[:0]
        m = n + (int(open_[0]) if len(open_) else len(last))
        counts = np.zeros(shape, dtype=np.int64)
        counts[:len(self.counts)] = self.counts
        counts += quiet_readings(plan, house_ids, keys[n:m], times[n:m], lost)
        self.counts, self.keys, self.times = counts, keys[:m].copy(), times[:m].copy()
        self.ids, self.known = np.array(house_ids, dtype=np.int64), known
        self.frame = (plan.t_start, plan.t_first_test, plan.delta, plan.reading)
        return counts + quiet_readings(plan, house_ids, keys[m:], times[m:], lost)

    def _continues(self, plan: MonitoringPlan, house_ids: np.ndarray, keys: np.ndarray,
                   times: np.ndarray, shape: tuple[int, int], known: int | None) -> bool:
        """Whether the arguments continue those counted (module doc)."""
        n = len(self.keys)
        return (plan.t_start, plan.t_first_test, plan.delta, plan.reading) == self.frame \
            and shape[0] >= len(self.counts) and shape[1] == self.counts.shape[1] \
            and (known is None) == (self.known is None) and (known or 0) >= (self.known or 0) \
            and np.array_equal(np.asarray(house_ids, dtype=np.int64), self.ids) \
            and len(keys) >= n and np.array_equal(keys[:n], self.keys) \
            and np.array_equal(times[:n], self.times)


def quiet_so_far(carry: Any, plan: MonitoringPlan, house_ids: np.ndarray,
                 shed_keys: np.ndarray, shed_times: np.ndarray,
                 lost: np.ndarray | None = None) -> np.ndarray:
    """Count the quiet readings of a run, a stream's with the count its carry keeps.

    Parameters
    ----------
    carry : drsim.utility.session_feed.MeterCarry or None
        A stream's run of the meter tier (OP's), which keeps a :class:`QuietCount` in
        its ``kept`` under :data:`QUIET`; None (a batch run): counted at once.
    plan, house_ids, shed_keys, shed_times, lost
        As :func:`quiet_readings`'s.

    Returns
    -------
    numpy.ndarray of int64
        (tests, offsets) what :func:`quiet_readings` returns.
    """
    if carry is None:
        return quiet_readings(plan, house_ids, shed_keys, shed_times, lost)
    count = carry.kept.setdefault(QUIET, QuietCount())
    return count.count(plan, house_ids, shed_keys, shed_times, lost)
