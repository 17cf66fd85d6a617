"""A group leader's run of Listing 6.2 (the utility's of 6.3) continued tick by tick.

A stream decides a group's ticks one micro-batch at a time: once every gateway of the
group has decided test T, the leader's alerts and group events of the ticks up to the
next test are final (docs/streaming.md). Running Listing 6.2 over the user events so far
at every step grows with the square of the tests; a :class:`LeaderCarry` keeps each of
the leader's query sessions (the top query over the user events, the bottom one over the
alerts; on a shedding device one pair for its unshed run and one for the run on the
inputs it kept, :func:`drsim.utility.tier_shedding.run_on_device`) and feeds them only
the rows of the final ticks they have not had. The result of each run is that of a run
over the rows so far ended (flushed) on a copy of the session, so that the kept one goes
on; where the rows given do not extend those fed (another process ran the step before, a
restart), the session starts again from the first row. Either way the result is the
same, which the stream's tests check against the batch run. The utility's runs are kept
alike (:meth:`LeaderCarry.at_utility`): its group events up to a tick every group has
reached are final too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from drsim.utility.session_feed import booked_work, flushed, to_end

__all__ = ["LeaderCarry", "SessionRun", "TierRuns"]


@dataclass
class SessionRun:
    """One query session fed the rows of the final ticks, continued.

    Parameters
    ----------
    columns : tuple of str
        The columns whose values must repeat for the rows given to extend those fed.
    """

    columns: tuple[str, ...]
    session: Any = None
    #: the values of ``columns`` of the rows fed, in stream order
    fed: tuple[np.ndarray, ...] = ()
    parts: list[Any] = field(default_factory=list)
    booked: np.ndarray = field(default_factory=lambda: np.zeros((3, 0), dtype=np.int64))

    def run(self, start: Callable[[], Any], stream: pd.DataFrame, ticks: np.ndarray,
            upto: int, as_frame: bool = False
            ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        """Feed the rows up to minute ``upto`` that the session has not had; end a run.

        The result is that of :func:`~drsim.utility.session_feed.feed_by_time` over the
        rows of ``stream`` up to ``upto``.

        Parameters
        ----------
        start : callable
            Makes a new session of the query.
        stream : pandas.DataFrame
            The rows so far in stream order (a ``time`` column [minutes since midnight]).
        ticks : numpy.ndarray
            Every tick of the program [minutes since midnight].
        upto : int
            The last final tick [minutes since midnight].
        as_frame : bool, default False
            Outputs as a DataFrame (else dicts).

        Returns
        -------
        outputs, processed, partial_matches, detected
            As :func:`~drsim.utility.session_feed.feed_by_time`'s, per tick.
        """
        n = int(np.searchsorted(stream["time"].to_numpy(), upto, side="right"))
        given = tuple(stream[c].to_numpy()[:n] for c in self.columns)
        done = len(self.fed[0]) if self.fed else 0
        if self.session is None or n < done or self.booked.shape[1] != len(ticks) or not all(
                np.array_equal(g[:done], f) for g, f in zip(given, self.fed, strict=True)):
            self.session, self.parts, done = start(), [], 0
            self.booked = np.zeros((3, len(ticks)), dtype=np.int64)
        if n > done or not self.parts:  # (the first feed may be empty, as feed_by_time's)
            self.parts.append(self.session.feed(stream.iloc[done:n], as_frame=as_frame,
                                                work_by="time"))
            self.booked = self.booked + booked_work(self.session.work, ticks)
        self.fed = given
        return flushed(to_end(self.session), list(self.parts), self.booked, as_frame)


@dataclass
class TierRuns:
    """The two sessions of Listing 6.2 in one run at a leader, and how far it is final.

    Attributes
    ----------
    upto : int
        The last final tick [minutes since midnight].
    alerts, group : SessionRun
        The top query over the user events, the bottom one over the alerts.
    """

    upto: int = -1
    alerts: SessionRun = field(default_factory=lambda: SessionRun(("time", "houseID")))
    group: SessionRun = field(default_factory=lambda: SessionRun(("time", "sumAccLoad")))

    @classmethod
    def at_utility(cls) -> TierRuns:
        """Return the two sessions of Listing 6.3 in one run at the utility.

        The top query over the group events, the bottom one over the utility's alerts.
        """
        return cls(alerts=SessionRun(("time", "groupID")),
                   group=SessionRun(("time", "load")))


@dataclass
class LeaderCarry:
    """A leader's runs kept between micro-batches: unshed, and on the inputs it kept.

    Examples
    --------
    >>> carry = LeaderCarry()
    >>> carry.until(1140).unshed.upto, carry.shed.upto
    (1140, 1140)
    """

    unshed: TierRuns = field(default_factory=TierRuns)
    shed: TierRuns = field(default_factory=TierRuns)

    @classmethod
    def at_utility(cls) -> LeaderCarry:
        """Return the utility's runs of Listing 6.3, kept alike (:meth:`TierRuns.at_utility`).

        Examples
        --------
        >>> LeaderCarry.at_utility().shed.alerts.columns
        ('time', 'groupID')
        """
        return cls(TierRuns.at_utility(), TierRuns.at_utility())

    def until(self, upto: int) -> LeaderCarry:
        """Set the last final tick of both runs [minutes since midnight]; self."""
        self.unshed.upto = self.shed.upto = upto
        return self

    @property
    def runs(self) -> tuple[TierRuns, TierRuns]:
        """The runs in the order a device makes them: unshed, then on the inputs kept."""
        return self.unshed, self.shed
