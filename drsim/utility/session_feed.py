"""Feeding a tier's query session, and the meter tier's run a stream continues.

Feeding: its work per test time and the end of its stream (:func:`feed_by_time`); a run
that a stream continues from test to test: :class:`MeterCarry`. The tiers run Listings
6.1-6.3 of the dissertation (§6.2.2) on cep_core sessions, or on what feeds one step by
step (load shedding, remote data); the work they report per test time is that of feeding
each time's events as a batch of its own.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MeterCarry", "booked_work", "feed_by_time", "flushed", "to_end"]


def _work(counters: Any) -> tuple[int, int]:
    """Return (events processed, partial matches created + extended) of an engine so far."""
    c = counters.as_dict()
    return c["events"], c["pm_created"] + c["pm_extended"]


def feed_by_time(session: Any, stream: pd.DataFrame, times: np.ndarray,
                 as_frame: bool = False) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """Feed ``stream`` to ``session`` and book its work per test time.

    ``times`` is ascending and covers every event's time. The session (a query's, or
    what feeds one step by step: load shedding, remote data) takes the stream and books
    its work by the events' time (``feed(..., work_by="time")``, its ``work``): the work
    per time is that of feeding each time's events as a batch of its own.

    Returns
    -------
    outputs : list of dict or pandas.DataFrame
        Every output, those of the final flush last.
    processed, partial_matches, detected : numpy.ndarray
        Per time: events processed, partial matches created + extended (the flush's
        booked at the last time), outputs emitted by its events (the flush's not counted).
    """
    parts = [session.feed(stream, as_frame=as_frame, work_by="time")]
    return flushed(session, parts, booked_work(session.work, times), as_frame)


def booked_work(work: Any, times: np.ndarray) -> np.ndarray:
    """Book a session's ``work`` per time (:func:`feed_by_time`).

    Returns (3, times): events processed, partial matches created + extended, outputs.
    """
    return np.stack([work.at(times, "events"),
                     work.at(times, "pm_created") + work.at(times, "pm_extended"),
                     work.at(times, "outputs")])


def to_end(kept: Any) -> Any:
    """Return what a run over a kept session (or feeder) so far ends (flushes) on.

    The session itself where its flush has nothing to do
    (:meth:`cep_core.query.Session.settled`), so that it goes on unchanged; else a copy:
    a session's own copy for a flush (:meth:`cep_core.query.Session.ending`), else (a
    feeder that steps one) a deep copy.
    """
    if kept.settled():
        return kept
    ending = getattr(kept, "ending", None)
    return ending() if ending is not None else copy.deepcopy(kept)


def flushed(session: Any, parts: list, booked: np.ndarray, as_frame: bool
            ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """End ``session``'s stream (:func:`feed_by_time`).

    Its flush's outputs follow ``parts``; its work is booked at the last time of
    ``booked`` (3, times).
    """
    processed, pms, detected = (np.array(row) for row in booked)
    e0, p0 = _work(session.counters)
    rest = session.flush()
    e1, p1 = _work(session.counters)
    if len(processed):
        processed[-1] += e1 - e0
        pms[-1] += p1 - p0
    if rest:
        parts = [*parts, pd.DataFrame(rest) if as_frame else rest]
    if as_frame:
        out = pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)
    else:
        out = [r for part in parts for r in part]
    return out, processed, pms, detected


@dataclass
class MeterCarry:
    """One run of the meter query (Listing 6.1) at one gateway, continued test by test.

    A stream decides a gateway's tests one micro-batch at a time and runs the meter tier
    over its tests so far each time (:func:`drsim.utility.monitoring.meter_tier` with
    ``carry``). The carry keeps the feeder of that run (the query's session, or the load
    shedder and fetcher around it) and feeds it only the tests it has not fed; the run's
    result is that of a run over the tests so far, ended (flushed) on a copy of the
    feeder, so that the kept one goes on (on the feeder itself where the flush has
    nothing to do: :meth:`cep_core.query.Session.settled`). Where the tests it fed differ
    from those given, it starts again from the first test. Its λ table (and the tables
    the monitoring method makes from it) has a column for every test of the program,
    those not tested yet NaN, filled in place as tests come
    (:meth:`cep_core.query.Session.reload_tables`).

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The program's monitoring, every test (the query's parameters; a stream's runs
        cut it after the last test so far).

    Examples
    --------
    A run fed two tests, then three, gives what one run over the three does:

    >>> import dataclasses
    >>> from drsim.utility.monitoring import MonitoringPlan, meter_tier
    >>> plan = MonitoringPlan(1110, 1150, 1130, 5, 1, 1, 1, 0.5, 0.4, 1, 15, 1)
    >>> used = np.array([[1.5, 2.5, 3.5, 4.5], [0.5, 1.5, 2.5, 3.5]])
    >>> expected = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]])
    >>> carry = MeterCarry(plan)
    >>> cut = dataclasses.replace(plan, t_end=1141)
    >>> _ = meter_tier(cut, np.array([7, 8]), 0, used[:, :3], expected[:, :3], carry=carry)
    >>> m = meter_tier(plan, np.array([7, 8]), 0, used, expected, carry=carry)
    >>> m.events["time"].tolist(), carry.tests_fed
    ([1135, 1140, 1145], 4)
    """

    plan: Any
    feeder: Any = None
    #: the query's lookup tables: λ, and those the monitoring method makes from it
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: accLoad, λ and the lost readings of the tests fed, each (households, tests fed)
    fed: tuple[np.ndarray, ...] = ()
    #: the outputs of the tests fed, as typed columns (``columns`` of :meth:`run`), each
    #: test's added once
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    booked: np.ndarray = field(default_factory=lambda: np.zeros((3, 0), dtype=np.int64))
    #: the feeder (or its copy) that the last run ended: its shedder's and fetcher's
    #: reports, read before the next run
    ended: Any = None
    #: what the monitoring features keep of the run between its runs, by name (load
    #: shedding's quiet readings: :class:`drsim.utility.quiet_meters.QuietCount`),
    #: emptied where the run starts again
    kept: dict[str, Any] = field(default_factory=dict)

    @property
    def tests_fed(self) -> int:
        """The number of tests fed."""
        return len(self.fed[0][0]) if self.fed else 0

    def run(self, house_ids: np.ndarray,
            readings: Callable[[int], tuple[pd.DataFrame, pd.DataFrame]], acc_kwh: np.ndarray,
            expected_acc_kwh: np.ndarray, lost: np.ndarray | None,
            tables: Callable[[pd.DataFrame], dict[str, pd.DataFrame]],
            start: Callable[[dict[str, pd.DataFrame], Any], Any],
            columns: Callable[[pd.DataFrame], dict[str, np.ndarray]]
            ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
        """Run over the tests so far, feeding the kept feeder the tests it has not fed.

        Returns the outputs, as ``columns`` makes them, and the work per test, as
        :func:`feed_by_time` does. Each test's outputs are made into columns once, when
        fed, and appended to those before (not rebuilt from every test's at each run).

        Parameters
        ----------
        house_ids : numpy.ndarray
            (households,) the households.
        readings : callable
            ``readings(first)`` builds the readings of the tests so far from the
            ``first`` on, and λ (:func:`drsim.utility.monitoring.meter_stream`).
        acc_kwh, expected_acc_kwh : numpy.ndarray
            (households, tests so far) accLoad and λ [kWh].
        lost : numpy.ndarray or None
            (households, tests so far) the test readings that did not arrive.
        tables : callable
            ``tables(lam)`` gives the query's lookup tables from the λ table ``lam``
            (``"λ"`` itself and the monitoring method's, each keyed alike).
        start : callable
            ``start(tables, plan)`` makes the feeder of a new run of the query of
            ``plan`` reading ``tables``.
        columns : callable
            ``columns(outputs)`` the typed columns of a frame of the query's outputs
            (:func:`drsim.utility.monitoring.user_event_columns`).
        """
        k = acc_kwh.shape[1]
        given = (acc_kwh, expected_acc_kwh,
                 np.zeros(acc_kwh.shape, bool) if lost is None else np.asarray(lost, bool))
        j = self.tests_fed
        if not self._continues(house_ids, given, j, k):
            times = self.plan.test_times
            lam = pd.DataFrame(np.full((len(house_ids), len(times)), np.nan),
                               index=house_ids, columns=times)
            lam.iloc[:, :k] = expected_acc_kwh
            self.tables = tables(lam)
            self.feeder, self.outputs, j = start(self.tables, self.plan), {}, 0
            self.kept = {}
            self.booked = np.zeros((3, 0), dtype=np.int64)
        elif k > j:
            self.tables["λ"].iloc[:, j:k] = expected_acc_kwh[:, j:]
            for name, table in tables(self.tables["λ"]).items():  # those made from λ, anew
                if name != "λ":
                    self.tables[name].iloc[:, :] = table.to_numpy()
            self.feeder.reload_tables(*self.tables)
        if k > j:
            times = self.plan.test_times[j:k]
            new = readings(j)[0]
            if len(new):
                self.outputs = _joined(self.outputs, columns(
                    self.feeder.feed(new, as_frame=True, work_by="time")))
                work = booked_work(self.feeder.work, times)
            else:
                work = np.zeros((3, k - j), dtype=np.int64)
            self.booked = np.concatenate([self.booked, work], axis=1)
        self.fed = tuple(np.array(x) for x in given)
        self.ended = to_end(self.feeder)
        rest, processed, pms, detected = flushed(self.ended, [pd.DataFrame()], self.booked,
                                                 as_frame=True)
        return _joined(self.outputs, columns(rest)), processed, pms, detected

    def layer(self, kind: type) -> Any:
        """Return the part of :attr:`ended` of type ``kind``.

        The feeder, or a session it steps: the load shedder or fetcher whose report the
        run gives.
        """
        part = self.ended
        while part is not None and not isinstance(part, kind):
            part = getattr(part, "session", None)
        return part

    def _continues(self, house_ids: np.ndarray, given: tuple, j: int, k: int) -> bool:
        """Whether the tests fed are the first of those given (the same households)."""
        return self.feeder is not None and j <= k and \
            np.array_equal(self.tables["λ"].index.to_numpy(), house_ids) and \
            all(np.array_equal(g[:, :j], f, equal_nan=g.dtype.kind == "f")
                for g, f in zip(given, self.fed, strict=True))


def _joined(before: dict[str, np.ndarray], after: dict[str, np.ndarray]
            ) -> dict[str, np.ndarray]:
    """Return typed columns ``before`` with the rows of ``after`` appended."""
    if not before:
        return after
    return {c: np.concatenate([v, after[c]]) for c, v in before.items()}
