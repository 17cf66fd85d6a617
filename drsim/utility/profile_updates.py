r"""The rule by which the utility keeps updating the M&V profiles it serves (§6.3.4).

§6.3.4: "The baseline load profiles are continuously updated based on the latest feedback
from DR response monitoring ..., whereas smart meters and gateways fetch the corresponding
load profiles when evaluating pattern detection queries in Listing 6.1, 6.2, and 6.3". The
dissertation gives no rule; this is drsim's reading (docs/decisions.md, "Profiles the
utility keeps updating"), with ``monitoring.remote.updates``.

**When.** The utility updates at the announcement (the notice, when it first tells the
households about the program) and every ``every_minutes`` after it (default δ), up to the
last test time (:func:`update_times`); an update after the last test has no element left
to change.

**What from.** At update u it re-estimates each household's scale r_k(u) as the day-of
adjustment does (:func:`drsim.utility.day_of.day_of_ratio`): its metered load against its
estimated baseline B̂ over the ``window_minutes`` before min(u, notice), within ±``cap``.
Readings after the notice are not evidence of the M&V error: they carry the household's
response (pre-cooling from the notice, the reduction from t_start), and a baseline scaled
by them would follow the response and call a responder non-compliant. drsim's M&V errors
(``baseline.error``, a factor per household, and ``baseline.error_per_minute``, noise per
minute) are what the readings before the notice show; the evening adds nothing to them, so
every re-estimate after the notice equals the one at the notice (:func:`evidence_ends`),
and only the update at the notice can publish anything. Evidence from inside the event
that the response does not contaminate would need a control group (a randomised control
trial, §6.2.1), which drsim does not model.

**What is published.** The profiles re-estimated at u are, for every test time not yet
past (at or after u), λ[houseID, time] = Σ r_k · P̂ up to the test time and γ[groupID,
time] from the threshold's replicas adjusted the same way
(:mod:`drsim.utility.updated_profiles`); the utility publishes a new version only of the
elements whose value changed (:func:`published`), as a
:class:`cep_core.remote.Versions` schedule that the fetchers serve
(:mod:`cep_core.remote.batch`, module doc 6).

Everything here is plain arrays: no household is simulated.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cep_core.remote import Versions

__all__ = ["evidence_ends", "published", "update_times"]


def update_times(notice: int, last_test: int, every: int) -> np.ndarray:
    """Return the minutes at which the utility updates the profiles (module doc).

    Parameters
    ----------
    notice : int
        The announcement [minutes since midnight].
    last_test : int
        The program's last test time [minutes since midnight].
    every : int
        Minutes between two updates [minutes], >= 1.

    Returns
    -------
    numpy.ndarray of int64
        ``notice, notice + every, ..`` up to ``last_test`` [minutes since midnight].

    Raises
    ------
    ValueError
        If ``every`` is below 1.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.4.

    Examples
    --------
    >>> update_times(1050, 1070, 10).tolist()
    [1050, 1060, 1070]
    """
    if every < 1:
        raise ValueError(f"updates every {every} minutes: give 1 or more")
    return np.arange(notice, last_test + 1, every, dtype=np.int64)


def evidence_ends(times: np.ndarray, notice: int) -> np.ndarray:
    r"""Return where the readings each update re-estimates from end (module doc).

    .. math:: e(u) = \min(u, t_{notice})

    Readings from the notice on carry the households' response, so no update reads them.

    Parameters
    ----------
    times : numpy.ndarray
        The update times (:func:`update_times`) [minutes since midnight].
    notice : int
        The announcement [minutes since midnight].

    Returns
    -------
    numpy.ndarray of int64
        The end (excluded) of each update's window of readings [minutes since midnight].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (M&V) and §6.3.4.

    Examples
    --------
    >>> evidence_ends(np.array([1040, 1050, 1055]), 1050).tolist()
    [1040, 1050, 1050]
    """
    return np.minimum(np.asarray(times, dtype=np.int64), notice)


def published(name: str, keys: np.ndarray, test_times: np.ndarray, times: np.ndarray,
              ends: np.ndarray, estimate: Callable[[int], np.ndarray],
              table: np.ndarray) -> Versions:
    r"""Return the versions the utility publishes of lookup ``name`` (module doc).

    At update u (in order), element ``name[key, time]`` of every test time at or after u
    takes the value re-estimated from the readings before e(u), ``estimate(e(u))``; a
    version is published at u of each element whose value differs from its current one
    (the table's, version 0, or the last published). An update whose evidence is that of
    the update before it changes nothing: the values it would set are those the previous
    one set for the same test times and later ones.

    Parameters
    ----------
    name : str
        The lookup (``λ`` or ``γ``).
    keys : numpy.ndarray of int64
        The elements' first argument, shape (n,) (household or group ids).
    test_times : numpy.ndarray of int64
        Their second argument, shape (k,) [minutes since midnight].
    times : numpy.ndarray
        The update times (:func:`update_times`), ascending [minutes since midnight].
    ends : numpy.ndarray
        Their evidence ends (:func:`evidence_ends`) [minutes since midnight].
    estimate : callable
        ``estimate(end)``: the values re-estimated from the readings before ``end``,
        shape (n, k); called once per distinct run of equal ends.
    table : numpy.ndarray
        The values as first published (version 0), shape (n, k).

    Returns
    -------
    cep_core.remote.Versions
        The publication schedule: arguments (key, test time), publish time, value.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §5.2 (remote data elements)
       and §6.3.4.

    Examples
    --------
    Two households' λ at tests 1130 and 1135; the re-estimate at the notice (1050) scales
    the first household by 1.1, the updates after it read the same evidence:

    >>> table = np.array([[1.0, 2.0], [1.0, 2.0]])
    >>> times = update_times(1050, 1135, 5)
    >>> v = published("λ", np.array([7, 8]), np.array([1130, 1135]), times,
    ...               evidence_ends(times, 1050), lambda end: table * [[1.1], [1.0]], table)
    >>> len(v), v.times.tolist(), sorted(v.values.round(6).tolist())
    (2, [1050.0, 1050.0], [1.1, 2.2])
    """
    keys = np.asarray(keys, dtype=np.int64)
    test_times = np.asarray(test_times, dtype=np.int64)
    current = np.asarray(table, dtype=np.float64)
    parts: list[tuple[np.ndarray, ...]] = []
    previous = None
    for u, end in zip(np.asarray(times).tolist(), np.asarray(ends).tolist(), strict=True):
        if end == previous:
            continue
        previous = end
        ahead = test_times >= u
        new = np.where(ahead[None, :], estimate(end), current)
        i, j = np.nonzero(new != current)
        parts.append((keys[i], test_times[j], np.full(len(i), float(u)), new[i, j]))
        current = new
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return Versions(name, [empty, empty], np.zeros(0), np.zeros(0))
    key, time, when, value = (np.concatenate(c) for c in zip(*parts, strict=True))
    return Versions(name, [key, time], when, value)
