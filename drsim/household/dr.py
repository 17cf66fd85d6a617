"""DR events and the behavioural response to them (dissertation §6.3.1).

A DR request lowers the start probability of deferrable appliances and delays EV
charging for the households that follow through: a start that would fall inside a
known event is moved after its end with probability θ (rebound), and appliances that
can run in advance (pre-cooling, pre-heating) are moved before it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from drsim.scenario import MAX_FOLLOW_THROUGH_FACTOR
from drsim.units import DAY, clock_minutes

FollowThroughSpec = None | float | Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class DREvent:
    """A DR event of the schedule.

    Households react to the event only from its announcement on. Table 6.2 of the
    dissertation schedules the program from 6:30 PM to 8:30 PM, the defaults here.

    Parameters
    ----------
    start, end : str or int
        The event window, end excluded: a clock time ("18:30") or [minutes since
        midnight] of the DR day.
    announced : str, int or None
        When the households learn of the event [minutes since midnight]; None for the
        scenario's notice period before ``start``.
    follow_through : None, float or callable
        This event's follow-through rate θ per household: None for each household's
        θ_o, a float that scales θ_o (the traditional pass: θ_red = θ_o x (1 - drop),
        §6.3.2), or a function from the θ_o array to θ (the second event: θ_new of
        Eq. 6.8, :func:`drsim.utility.incentive.new_follow_through`).

    See Also
    --------
    ResolvedEvent : the event in minutes with θ per household.
    """

    start: str | int = "18:30"
    end: str | int = "20:30"
    announced: str | int | None = None
    follow_through: FollowThroughSpec = None

    def __post_init__(self) -> None:
        """Refuse an event that cannot be resolved, at once (ValueError).

        Refused: times that are not clock times of the day, an end not after the start, an
        announcement after the start, and a follow-through factor outside [0,
        MAX_FOLLOW_THROUGH_FACTOR] (the bounds of a scenario's ``follow_through.scale``).
        """
        start, end = _minute(self.start, "start"), _minute(self.end, "end")
        if end <= start:
            raise ValueError(f"DREvent: end {self.end} must be after start {self.start}")
        if self.announced is not None and _minute(self.announced, "announced") > start:
            raise ValueError(f"DREvent: announced {self.announced} after start {self.start}")
        ft = self.follow_through
        if ft is None or callable(ft):
            return
        if isinstance(ft, bool) or not isinstance(ft, int | float | np.integer | np.floating):
            raise ValueError("DREvent.follow_through: expected None, a number or a function "
                             f"of θ_o, got {type(ft).__name__} {ft!r}")
        if not 0.0 <= float(ft) <= MAX_FOLLOW_THROUGH_FACTOR:
            raise ValueError(f"DREvent.follow_through: {ft!r} is outside [0, "
                             f"{MAX_FOLLOW_THROUGH_FACTOR:g}] (a factor on each household's "
                             "θ_o)")

    def resolve(self, notice_minutes: int, theta_o: np.ndarray) -> ResolvedEvent:
        """Resolve the event's times to minutes and its follow-through per household.

        The follow-through rate of the event is θ = θ_o (``follow_through`` None),
        θ = f x θ_o (a float f) or θ = f(θ_o) (a function), clipped to [0, 1]. The
        per-household rate θ_o is drawn from the survey (§6.3.1); how an event changes
        it is drsim's reading, docs/decisions.md, "Follow-through per household" and
        "Passes and the observed follow-through drop".

        Parameters
        ----------
        notice_minutes : int
            The scenario's notice period, used when ``announced`` is None [minutes].
        theta_o : numpy.ndarray
            The expected follow-through rate θ_o of each household of the chunk [1].

        Returns
        -------
        ResolvedEvent
            Start, end and announcement [minutes since midnight] and θ per household
            [1].

        References
        ----------
        .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
           dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1, §6.3.2, Eq. 6.8.

        Examples
        --------
        >>> e = DREvent("18:30", "20:30", follow_through=0.5).resolve(60, np.array([0.2, 0.9]))
        >>> e.start, e.end, e.announce, e.theta.tolist()
        (1110, 1230, 1050, [0.1, 0.45])
        >>> DREvent(follow_through=lambda th: th + 0.5).resolve(60, np.array([0.2, 0.9])).theta
        array([0.7, 1. ])
        """
        start, end = _minute(self.start, "start"), _minute(self.end, "end")
        announce = (start - notice_minutes if self.announced is None
                    else _minute(self.announced, "announced"))
        ft = self.follow_through
        if ft is None:
            theta = theta_o
        elif callable(ft):
            theta = np.asarray(ft(theta_o), dtype=np.float64)
        else:
            theta = theta_o * float(ft)
        return ResolvedEvent(start, end, announce, np.clip(theta, 0.0, 1.0))


def _minute(value: str | int, field: str) -> int:
    """Return a DREvent time [minutes since midnight, 0 to 1440]; ValueError if not one."""
    if isinstance(value, bool):
        raise ValueError(f"DREvent.{field}: expected a clock time HH:MM, got {value!r}")
    minute = clock_minutes(value, f"DREvent.{field}")
    if not 0 <= minute <= DAY:
        raise ValueError(f"DREvent.{field}: {value!r} is not a minute of the day (0 to {DAY})")
    return minute


@dataclass(frozen=True)
class ResolvedEvent:
    """An event in minutes since midnight of the DR day, with θ per household.

    Parameters
    ----------
    start, end : int
        The event window, end excluded [minutes since midnight].
    announce : int
        When the households learn of the event [minutes since midnight].
    theta : numpy.ndarray
        The event's follow-through rate θ of each household of the chunk [1].
    """

    start: int
    end: int
    announce: int
    theta: np.ndarray


def merged_windows(events: list[ResolvedEvent]) -> np.ndarray:
    """Merge the events' windows into the disjoint windows of their union.

    Windows that overlap or touch merge into one, so a start deferred out of one event
    moves after the whole merged window (:func:`window_end`).

    Parameters
    ----------
    events : list of ResolvedEvent
        The known events.

    Returns
    -------
    numpy.ndarray
        (k, 2) int64 array of the [start, end) windows of the union, sorted by start
        [minutes since midnight].

    Examples
    --------
    >>> theta = np.array([0.5])
    >>> merged_windows([ResolvedEvent(1200, 1260, 1140, theta),
    ...                 ResolvedEvent(1110, 1230, 1050, theta),
    ...                 ResolvedEvent(1300, 1320, 1240, theta)]).tolist()
    [[1110, 1260], [1300, 1320]]
    """
    spans = sorted((e.start, e.end) for e in events)
    out: list[list[int]] = []
    for s, e in spans:
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def active_theta(events: list[ResolvedEvent], rows: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Compute the follow-through rate θ that applies to each (household, time) pair.

    A planned start at time t of a household that knows of the events is moved with
    probability θ: the highest θ of that household's events active at t, or 0 outside
    every event window. §6.3.1 says only that a DR program modifies the start
    probabilities of appliances and EV charging; this deferral with probability θ is
    drsim's reading, docs/decisions.md, "Load model data and its sources" and
    "Follow-through per household".

    Parameters
    ----------
    events : list of ResolvedEvent
        The known events.
    rows : numpy.ndarray
        The household of each pair, as a row of the chunk.
    t : numpy.ndarray
        The time of each pair, same shape [minutes since midnight].

    Returns
    -------
    numpy.ndarray
        θ of each pair [1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1, Figure 6.10.

    Examples
    --------
    Two overlapping events; where both are active the higher θ applies:

    >>> events = [ResolvedEvent(1200, 1260, 1140, np.array([0.9, 0.2])),
    ...           ResolvedEvent(1110, 1230, 1050, np.array([0.1, 0.45]))]
    >>> active_theta(events, np.array([0, 1, 1, 0]), np.array([1100, 1110, 1220, 1250]))
    array([0.  , 0.45, 0.45, 0.9 ])
    """
    theta = np.zeros(len(t))
    for e in events:
        inside = (t >= e.start) & (t < e.end)
        theta = np.where(inside, np.maximum(theta, e.theta[rows]), theta)
    return theta


def window_end(events: list[ResolvedEvent], t: np.ndarray) -> np.ndarray:
    """Return the end of the merged event window containing each time.

    A deferred start moves after the end of the (merged) window it falls in (the
    rebound, spread over the following minutes by the simulation); a time outside
    every window stays where it is. No equation in the source: drsim's reading of the
    deferral of §6.3.1, docs/decisions.md, "Load model data and its sources".

    Parameters
    ----------
    events : list of ResolvedEvent
        The known events.
    t : numpy.ndarray
        Times [minutes since midnight].

    Returns
    -------
    numpy.ndarray
        The end of the window containing each t, or t itself outside the windows
        [minutes since midnight].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.

    Examples
    --------
    >>> events = [ResolvedEvent(1200, 1260, 1140, np.array([0.9])),
    ...           ResolvedEvent(1110, 1230, 1050, np.array([0.1]))]
    >>> window_end(events, np.array([1100, 1110, 1250, 1260]))
    array([1100, 1260, 1260, 1260])
    """
    w = merged_windows(events)
    if len(w) == 0:
        return t.copy()
    i = np.searchsorted(w[:, 0], t, side="right") - 1
    inside = (i >= 0) & (t < w[np.maximum(i, 0), 1])
    return np.where(inside, w[np.maximum(i, 0), 1], t)
