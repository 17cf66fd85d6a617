"""The SimPy processes of one chunk, vectorized over its households.

One process per appliance flexibility class (deferrable, shiftable in advance,
non-flexible, cold cycling), one for EVs and one for the utility's DR signals
(:class:`DRSignals`). A process advances by events (the next day's batch of starts, or a
DR signal: announcement, start, end) and at each wake commits the starts that fell due
since its last wake with the knowledge it had then, so a household reacts to a DR event
only from its announcement on.
"""

from __future__ import annotations

import numpy as np
import simpy

from drsim.household import rng
from drsim.household.appliances import FLEX_ADVANCE
from drsim.household.dr import ResolvedEvent, active_theta, merged_windows, window_end
from drsim.household.plan import FIRST_DAY, RESPONSIVE, ChunkPlan
from drsim.household.population import Population
from drsim.household.render import session_minutes
from drsim.household.starts import Batch
from drsim.units import DAY


class DRSignals:
    """The utility's DR signals: announcement, start and end of each event as SimPy events.

    Parameters
    ----------
    env : simpy.Environment
        The chunk's environment; the signalling process is added to it.
    events : list of ResolvedEvent
        The schedule's events [minutes since midnight of the DR day].

    Attributes
    ----------
    known : list of ResolvedEvent
        The events announced so far.
    changed : simpy.Event
        Succeeds with ``(kind, index)`` at the next signal; then replaced by a new one.
    log : list of tuple
        ``(minute, kind, index)`` of every signal sent, kind ``"announce"``, ``"start"``
        or ``"end"``.
    """

    def __init__(self, env: simpy.Environment, events: list[ResolvedEvent]):
        self.env = env
        self.events = events
        self.known: list[ResolvedEvent] = []
        self.changed = env.event()
        self.log: list[tuple[int, str, int]] = []
        env.process(self._run())

    def _run(self):
        signals = sorted(
            [(e.announce, 0, "announce", i) for i, e in enumerate(self.events)]
            + [(e.start, 1, "start", i) for i, e in enumerate(self.events)]
            + [(e.end, 2, "end", i) for i, e in enumerate(self.events)]
        )
        for time, _, kind, i in signals:
            if time > self.env.now:
                yield self.env.timeout(time - self.env.now)
            if kind == "announce":
                self.known.append(self.events[i])
            self.log.append((int(self.env.now), kind, i))
            fired, self.changed = self.changed, self.env.event()
            fired.succeed((kind, i))


class _Process:
    """Common loop: wake at each day boundary or DR signal, commit what fell due."""

    responds = True  # whether DR can move this process's starts

    def __init__(self, env, signals: DRSignals, pop: Population, plan: ChunkPlan, ev: bool,
                 until: int, decisions: int = 0):
        self.env, self.signals, self.pop, self.plan = env, signals, pop, plan
        self.until = until
        self.replica = (decisions,) if decisions else ()  # counter of the decision streams
        self.seed = pop.scenario.seed
        self.dr = pop.scenario.dr_program
        self.known: list[ResolvedEvent] = []
        self.pending = Batch.empty(ev)
        self.committed: list[Batch] = []
        env.process(self._run())

    def _run(self):
        self._new_day(FIRST_DAY)
        while self.env.now < self.until:
            boundary = min((self.env.now // DAY + 1) * DAY, self.until)
            yield self.env.any_of([self.env.timeout(boundary - self.env.now), self.signals.changed])
            now = int(self.env.now)
            self._commit_due(now)
            self.known = list(self.signals.known)
            if now % DAY == 0 and now < self.until:
                self._new_day(now // DAY)
            self._react(now)
        self._commit_due(np.iinfo(np.int64).max)  # due after the run: keep their energy

    def _add_pending(self, batch: Batch) -> None:
        """Add starts to the pending ones, which are kept in time order."""
        if not len(self.pending):
            self.pending = batch
        elif not len(batch):
            return
        elif self.pending.t[-1] <= batch.t[0]:
            self.pending = Batch.concat([self.pending, batch])
        else:
            self.pending = Batch.concat([self.pending, batch]).by_time()

    def _commit_due(self, now: int) -> None:
        """Commit starts due before ``now``; starts inside a known event may be deferred."""
        while True:
            i = int(np.searchsorted(self.pending.t, now, side="left"))
            if i == 0:
                return
            batch, self.pending = self.pending.take(slice(0, i)), self.pending.take(slice(i, None))
            batch = self._defer(batch)
            self._commit(batch)

    def _defer(self, batch: Batch) -> Batch:
        """Move starts inside known events after the (merged) event window with probability θ."""
        if not self.known or not self.responds:
            return batch
        theta = active_theta(self.known, batch.row, batch.t)
        u = self._decision(batch)
        move = u < theta
        if move.any():
            moved = batch.take(move)
            spread = rng.uniform(self.seed, self.pop.ids[moved.row], "rebound", moved.appliance,
                                 moved.day, moved.j, moved.gen)
            moved.t = window_end(self.known, moved.t) + (
                spread * self.dr.rebound_spread_minutes
            ).astype(np.int64)
            moved.gen = moved.gen + 1
            self._add_pending(moved.by_time())
            batch = batch.take(~move)
        return batch

    def _decision(self, batch: Batch) -> np.ndarray:
        """Draw the uniform a start's follow-through decision compares with θ (``u < θ``)."""
        return rng.uniform(self.seed, self.pop.ids[batch.row], "follow", batch.appliance,
                           batch.day, batch.j, batch.gen, *self.replica)

    def _commit(self, batch: Batch) -> None:
        self.committed.append(batch)

    # hooks
    def _new_day(self, day: int) -> None:
        raise NotImplementedError

    def _react(self, now: int) -> None:
        """React to the current knowledge at ``now`` (after due starts were committed)."""


class ApplianceProcess(_Process):
    """All appliances of one flexibility class, for all households of the chunk.

    Deferrable starts inside a known event are moved after its end with probability θ
    (rebound); shiftable-in-advance starts are moved before it; non-flexible and cold
    appliances never respond (docs/decisions.md, "Load model data and its sources").

    Parameters
    ----------
    env : simpy.Environment
        The chunk's environment.
    signals : DRSignals
        The DR signals the process wakes on.
    pop : Population
        The chunk's households.
    plan : ChunkPlan
        The planned starts.
    flex : int
        The flexibility class, one of the ``FLEX_*`` codes.
    until : int
        End of the run [minutes since midnight of the DR day].
    decisions : int, default 0
        Replica of the follow-through decisions; 0 is the day itself.
    """

    def __init__(self, env, signals, pop, plan, flex: int, until: int, decisions: int = 0):
        self.flex = flex
        self.responds = flex in RESPONSIVE
        super().__init__(env, signals, pop, plan, ev=False, until=until, decisions=decisions)

    def _new_day(self, day: int) -> None:
        """Draw the day's starts; appliances DR never moves commit the whole day at once."""
        starts = self.plan.appliance_starts(self.flex, day)
        if self.responds:
            self._add_pending(starts)
        else:
            self.committed.append(starts)

    def _react(self, now: int) -> None:
        """Shiftable-in-advance appliances (pre-cooling/heating) run before a known event.

        A following household moves a planned start that falls inside an announced,
        not yet started event to a uniform time in [max(now, start − lead), start).
        """
        if self.flex != FLEX_ADVANCE or not self.known:
            return
        windows = merged_windows(self.known)
        p = self.pending
        i = np.searchsorted(windows[:, 0], p.t, side="right") - 1
        ok = i >= 0
        w_start = np.where(ok, windows[np.maximum(i, 0), 0], 0)
        inside = ok & (p.t < windows[np.maximum(i, 0), 1]) & (w_start > now)
        lead_start = np.maximum(now, w_start - self.dr.precool_lead_minutes)
        inside &= w_start - lead_start >= 1
        if not inside.any():
            return
        cand = p.take(inside)
        theta = active_theta(self.known, cand.row, cand.t)
        move = self._decision(cand) < theta
        if not move.any():
            return
        idx = np.nonzero(inside)[0][move]
        moved = p.take(idx)
        u = rng.uniform(self.seed, self.pop.ids[moved.row], "precool", moved.appliance,
                        moved.day, moved.j, moved.gen)
        ls, ws = lead_start[idx], w_start[idx]
        moved.t = ls + (u * (ws - ls)).astype(np.int64)
        moved.gen = moved.gen + 1
        keep = np.ones(len(p), bool)
        keep[idx] = False
        self.pending = p.take(keep)
        self._add_pending(moved.by_time())


class EVProcess(_Process):
    """EV charging of the chunk's EV households (:mod:`drsim.household.ev` draws the sessions).

    A following household defers a session that would start inside a known event, and an
    EV charging at an event's start pauses until its end (when the scenario's
    ``ev.pause_in_progress`` is set). One car charges one session at a time.

    Parameters
    ----------
    env : simpy.Environment
        The chunk's environment.
    signals : DRSignals
        The DR signals the process wakes on.
    pop : Population
        The chunk's households.
    plan : ChunkPlan
        The planned sessions.
    until : int
        End of the run [minutes since midnight of the DR day].
    decisions : int, default 0
        Replica of the follow-through decisions; 0 is the day itself.
    """

    def __init__(self, env, signals, pop, plan, until: int, decisions: int = 0):
        self.busy_until = np.full(pop.size, np.iinfo(np.int64).min // 2)
        super().__init__(env, signals, pop, plan, ev=True, until=until, decisions=decisions)

    def _new_day(self, day: int) -> None:
        self._add_pending(self.plan.ev_sessions(day))

    def _decision(self, batch: Batch) -> np.ndarray:
        return rng.uniform(self.seed, self.pop.ids[batch.row], "ev_follow", batch.day,
                           batch.j, batch.gen, *self.replica)

    def _commit(self, batch: Batch) -> None:
        """Start sessions in time order; one car charges one session at a time."""
        order = np.lexsort((batch.j, batch.t, batch.row))
        batch = batch.take(order)
        first_of_row = np.r_[True, batch.row[1:] != batch.row[:-1]]
        rank = np.arange(len(batch)) - np.maximum.accumulate(
            np.where(first_of_row, np.arange(len(batch)), 0)
        )
        for r in range(int(rank.max()) + 1 if len(batch) else 0):
            sel = rank == r
            start = np.maximum(batch.t[sel], self.busy_until[batch.row[sel]])
            batch.t[sel] = start
            self.busy_until[batch.row[sel]] = start + session_minutes(batch.take(sel))
        self.committed.append(batch)

    def _react(self, now: int) -> None:
        """At an event's start, following EVs that are charging pause until its end."""
        if not self.pop.scenario.ev.pause_in_progress:
            return
        if not any(e.start == now for e in self.known) or not self.committed:
            return
        done = Batch.concat(self.committed)
        end = done.t + session_minutes(done)
        running = (done.t < now) & (end > now)
        if not running.any():
            return
        theta = active_theta(self.known, done.row, np.full(len(done), now))
        u = rng.uniform(self.seed, self.pop.ids[done.row], "ev_pause", done.day, done.j, done.gen,
                        *self.replica)
        pause = running & (u < theta)
        if not pause.any():
            return
        rest = done.take(pause)
        charged = (now - rest.t) / 60.0 * rest.kw
        rest.energy_kwh = rest.energy_kwh - charged
        spread = rng.uniform(self.seed, self.pop.ids[rest.row], "ev_resume", rest.day, rest.j,
                             rest.gen)
        rest.t = window_end(self.known, np.full(len(rest), now)) + (
            spread * self.dr.rebound_spread_minutes
        ).astype(np.int64)
        rest.gen = rest.gen + 1
        done.energy_kwh[pause] = charged
        self.busy_until[rest.row] = now
        self.committed = [done]
        self._add_pending(rest.by_time())
