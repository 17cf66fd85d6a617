"""Which meter readings reach the head-end: lost readings and silent meters.

The dissertation's meters report every minute while monitored and at the settlement rate
after a latch (§6.2.2) and assume every reading arrives. With ``meters.reading_loss`` a
reading may be lost on the way (docs/decisions.md, "Lost meter readings"):

* **independent losses** (``burst_length`` 1): each reading is lost with probability
  ``rate``;
* **bursts** (``burst_length`` L > 1): a Gilbert-Elliott chain per meter over its reading
  slots, good (delivered) or bad (lost), P(good → bad) = r / ((1 − r)·L), P(bad → good)
  = 1/L, started in its stationary law: the long-run share lost is r and a burst lasts L
  slots on average (geometric);
* **meters that go dark**: a share of the meters, drawn per meter, lose every reading
  from a clock time on, on top of the rate.

A slot is one reading interval of the program, ``t_start + j·reading``; a settlement
reading falls in the slot of its minute. Draws come from the counter-based streams of
:mod:`drsim.household.rng` keyed by (seed, meter, ``"loss"``, slot minute), so a meter's losses are
the same in every pass and for any chunking; the threshold's replicas (drsim.utility.threshold)
draw theirs under their own keys.

A meter is **silent** at a test when it has lost m_user + 1 test readings in a row (the
length of a run of Listing 6.1): the head-end knows the test schedule, so it knows that it
cannot see that household, and reports it to the group leader (one event per silent
spell); a silent meter is never flagged, since a user event needs real failed tests.
"""

from __future__ import annotations

import numpy as np

from drsim.household.rng import uniform
from drsim.scenario import ReadingLoss

__all__ = ["LOSS_STREAM", "DARK_STREAM", "lost_readings", "silence"]

LOSS_STREAM = "loss"
DARK_STREAM = "loss-dark"


def lost_readings(loss: ReadingLoss | None, seed: int, keys: np.ndarray,
                  minutes: np.ndarray) -> np.ndarray:
    """Draw which meter readings are lost on the way to the head-end.

    The dissertation's meters lose no reading (§6.2.2); the loss model is drsim's
    (docs/decisions.md, "Lost meter readings"; module doc). With r = ``rate`` and
    L = ``burst_length``, a reading is lost independently with probability r (L = 1), or
    by a Gilbert-Elliott chain per meter over its reading slots (L > 1):

        P(good → bad) = r / ((1 − r)·L),   P(bad → good) = 1 / L,

    started in its stationary law, so that the long-run share lost is r and a burst
    lasts L slots on average. A share ``dark.share`` of the meters, drawn per meter, also
    loses every reading from ``dark.start`` on. Draws come from the counter-based
    streams keyed by (seed, meter, ``"loss"``, slot minute), so a meter's losses are the
    same in every pass and for any chunking. Vectorized over the meters; the burst chain
    loops over the slots.

    Parameters
    ----------
    loss : drsim.scenario.ReadingLoss or None
        The scenario's ``meters.reading_loss``; None or an inactive loss: nothing lost.
    seed : int
        The scenario's seed.
    keys : numpy.ndarray
        The meters' keys (house ids, or a replica's keys), shape (meters,).
    minutes : numpy.ndarray
        Consecutive reading slots (:func:`drsim.utility.reading_slots.reading_minutes`),
        the whole program's, so that a burst's chain is the same whatever part of it a
        caller reads, shape (slots,) [minutes since midnight].

    Returns
    -------
    numpy.ndarray
        Boolean, shape (meters, slots): True where the reading of meter ``keys[i]`` in
        slot ``minutes[j]`` is lost.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2.
    .. [2] E. N. Gilbert, "Capacity of a burst-noise channel", Bell System Technical
       Journal 39(5), 1253-1265, 1960.
    .. [3] E. O. Elliott, "Estimates of error rates for codes on burst-noise channels",
       Bell System Technical Journal 42(5), 1977-1997, 1963.

    Examples
    --------
    >>> from drsim.scenario import ReadingLoss
    >>> lost = lost_readings(ReadingLoss(rate=0.5), 7, np.arange(1000), np.arange(10))
    >>> lost.shape, bool(abs(lost.mean() - 0.5) < 0.05)
    ((1000, 10), True)
    """
    keys = np.asarray(keys, dtype=np.int64)
    minutes = np.asarray(minutes, dtype=np.int64)
    lost = np.zeros((len(keys), len(minutes)), dtype=bool)
    if loss is None or not loss.active:
        return lost
    if loss.rate > 0.0:
        u = uniform(seed, keys[:, None], LOSS_STREAM, minutes[None, :])
        if loss.burst_length <= 1.0:
            lost = u < loss.rate
        else:
            enter = loss.rate / ((1.0 - loss.rate) * loss.burst_length)  # good → bad
            stay = 1.0 - 1.0 / loss.burst_length  # bad → bad
            if len(minutes):
                lost[:, 0] = u[:, 0] < loss.rate  # the stationary law
            for j in range(1, len(minutes)):
                lost[:, j] = np.where(lost[:, j - 1], u[:, j] < stay, u[:, j] < enter)
    if loss.dark is not None:
        dark = uniform(seed, keys, DARK_STREAM) < loss.dark.share
        lost |= dark[:, None] & (minutes >= loss.dark.start_minute)[None, :]
    return lost


def silence(lost_tests: np.ndarray, run: int) -> tuple[np.ndarray, np.ndarray]:
    """Find the silent meters from their lost test readings.

    A meter is silent at a test when that test and the ``run − 1`` before it are lost:
    with ``run`` = m_user + 1, the length of a run of Listing 6.1, the head-end knows it
    cannot see that household and reports it to the group leader, one report per silent
    spell (drsim's reading: docs/decisions.md, "Lost meter readings"; module doc).

    Parameters
    ----------
    lost_tests : numpy.ndarray
        Boolean, shape (meters, tests), in test order: True where the test reading is
        lost.
    run : int
        Consecutive lost tests that make a meter silent, m_user + 1 [tests].

    Returns
    -------
    first : numpy.ndarray
        The index of the first test at which each meter is silent, -1 for never, shape
        (meters,).
    spells : numpy.ndarray
        The silent spells that begin at each test (the meters whose streak of lost tests
        reaches ``run`` there: one report to the group leader each), shape (tests,)
        [meters].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Step 3) and
       §6.2.2 (Listing 6.1).

    Examples
    --------
    >>> lost = np.array([[0, 1, 1, 1, 1, 0, 1, 1, 1], [1, 1, 0, 1, 1, 0, 0, 0, 0]], bool)
    >>> first, spells = silence(lost, 3)
    >>> first.tolist(), spells.tolist()
    ([3, -1], [0, 0, 0, 1, 0, 0, 0, 0, 1])
    """
    lost_tests = np.asarray(lost_tests, dtype=bool)
    n, k = lost_tests.shape
    streak = np.zeros(n, dtype=np.int64)
    first = np.full(n, -1, dtype=np.int64)
    spells = np.zeros(k, dtype=np.int64)
    for i in range(k):
        streak = np.where(lost_tests[:, i], streak + 1, 0)
        starting = streak == run
        spells[i] = int(starting.sum())
        first[starting & (first < 0)] = i
    return first, spells
