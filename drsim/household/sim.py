"""SimPy simulation of one chunk of households, vectorized over the chunk.

One ``simpy.Environment`` per chunk and schedule. The processes are vectorized over the
households: one per appliance flexibility class (deferrable, shiftable in advance,
non-flexible, cold cycling), one for EVs and one for the utility's DR signals. A process
advances by events — the next day's batch of starts, or a DR signal (announcement, start,
end) — and at each wake commits the starts that fell due since its last wake with the
knowledge it had then, so a household reacts to a DR event only from its announcement on.

Planned starts (what a household would do without DR) are drawn per day from
counter-based streams, identical across passes (common random numbers); a DR event
only moves planned starts. Load is rendered once the run ends: each cycle phase and
each charging session is a rectangle [start, end) × kW added to a per-household
minute grid by a difference array and a cumulative sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import simpy

from drsim.household import rng
from drsim.household.appliances import FLEX_ADVANCE, FLEX_COLD, FLEX_DEFERRABLE, FLEX_NONE
from drsim.household.dr import DREvent, ResolvedEvent, active_theta, merged_windows, window_end
from drsim.household.ev import planned_sessions
from drsim.household.population import Population
from drsim.household.starts import Batch, make_batch
from drsim.units import DAY, MICRO

FIRST_DAY = -1  # the DR day is day 0; the evening of day -1 runs into it
MAX_UNTIL = 3 * DAY  # a run ends by the end of day 2 at the latest
FLEX_CLASSES = (FLEX_DEFERRABLE, FLEX_ADVANCE, FLEX_NONE, FLEX_COLD)
RESPONSIVE = (FLEX_DEFERRABLE, FLEX_ADVANCE)  # classes whose starts DR can move
STATIC = (FLEX_NONE, FLEX_COLD)


# --------------------------------------------------------------------------- planning
class ChunkPlan:
    """What the households of a chunk would do without DR, drawn once and shared by passes."""

    def __init__(self, pop: Population, day_offset: int = 0):
        self.pop = pop
        self.seed = pop.scenario.seed
        self.day_offset = day_offset  # counter offset: other simulated days (baseline)
        cat = pop.catalogue
        self._cdf = np.cumsum(cat.start_pmf, axis=1)
        self._cdf[:, -1] = 1.0
        self._slots = rng.InverseCDF(self._cdf)
        # first slot of day -1 whose starts can still run at midnight (cycle + slot width)
        self._late_slot = np.maximum(0, 144 - (cat.cycle_minutes + 19) // 10)
        self._days: dict[tuple[int, int], Batch] = {}

    def appliance_starts(self, flex: int, day: int) -> Batch:
        """Planned cycle starts of one flexibility class on one day."""
        if (flex, day) not in self._days:
            make = self._cold_starts if flex == FLEX_COLD else self._random_starts
            starts = make(flex, day)
            self._days[flex, day] = starts.by_time() if flex in RESPONSIVE else starts
        return self._days[flex, day]

    def _pairs(self, flex: int) -> tuple[np.ndarray, np.ndarray]:
        cat = self.pop.catalogue
        mask = self.pop.owns & (cat.flexibility == flex)[None, :] & (cat.starts_per_day > 0)
        return np.nonzero(mask)

    def _random_starts(self, flex: int, day: int) -> Batch:
        """Poisson number of starts per day, times by the appliance's start-time curve.

        CREST (Richardson et al. 2010, §3) makes starts depend on the time of day through
        activity profiles; here the number of starts per day is Poisson with the
        catalogue's mean, and each start's 10-minute slot is drawn from the appliance's
        weekday start curve, its minute uniform within the slot. Of day -1 only the late
        slots whose cycles can reach midnight are drawn (a Poisson process restricted to
        them: count with the slots' share of the mean, slots from the conditional curve).
        """
        cat, ids = self.pop.catalogue, self.pop.ids
        rows, apps = self._pairs(flex)
        first = self._late_slot if day == FIRST_DAY else np.zeros(len(cat.names), np.int64)
        below = np.where(first > 0, self._cdf[np.arange(len(first)), first - 1], 0.0)
        share = 1.0 - below
        key = day + self.day_offset
        u = rng.uniform(self.seed, ids[rows], "start_count", apps, key)
        n = rng.poisson_table(cat.starts_per_day * share).sample(apps, u)
        rows, apps = np.repeat(rows, n), np.repeat(apps, n)
        j = np.arange(len(rows)) - np.repeat(np.cumsum(n) - n, n)
        h = rng.hash64(self.seed, ids[rows], "start_time", apps, key, j)
        u_slot = below[apps] + share[apps] * rng.to_unit(h)
        slot = self._slots.sample(apps, u_slot)
        minute = (rng.low_bits(h, 11) * 10) >> 11  # uniform in the slot, from spare bits
        t = day * DAY + slot * 10 + minute
        return make_batch(rows, t, apps, key, j)

    def _cold_starts(self, flex: int, day: int) -> Batch:
        """Thermostatic cycling: one cycle every 1440/starts_per_day minutes, random phase.

        Of day -1 only the cycles that still run at midnight are made.
        """
        cat, ids = self.pop.catalogue, self.pop.ids
        rows, apps = self._pairs(flex)
        period = DAY / cat.starts_per_day[apps]
        phase = rng.uniform(self.seed, ids[rows], "cold_phase", apps, self.day_offset) * period
        begin = day * DAY + (DAY - cat.cycle_minutes[apps] - 1 if day == FIRST_DAY else 0)
        first = np.ceil((begin - phase) / period).astype(np.int64)
        last = np.ceil(((day + 1) * DAY - phase) / period).astype(np.int64)
        n = last - first
        j = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
        k = np.repeat(first, n) + j
        t = np.floor(np.repeat(phase, n) + k * np.repeat(period, n)).astype(np.int64)
        return make_batch(np.repeat(rows, n), t, np.repeat(apps, n), day + self.day_offset, j)

    def ev_sessions(self, day: int) -> Batch:
        """Planned EV charging sessions (Quirós-Tortós et al. 2018 style, see
        drsim.household.ev)."""
        if (-1, day) not in self._days:
            self._days[-1, day] = planned_sessions(self.pop, day, self.day_offset).by_time()
        return self._days[-1, day]


# --------------------------------------------------------------------------- processes
class DRSignals:
    """The utility's DR signals: announcement, start and end of each event as SimPy events."""

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
        """The uniform a start's follow-through decision compares with θ (``u < θ``)."""
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
    """All appliances of one flexibility class, for all households of the chunk."""

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
    """EV charging of the chunk's EV households (drsim.household.ev draws the sessions)."""

    def __init__(self, env, signals, pop, plan, until: int, decisions: int = 0):
        self.busy_until = np.full(pop.count, np.iinfo(np.int64).min // 2)
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


def session_minutes(b: Batch) -> np.ndarray:
    """Whole minutes a session occupies the charger (the last one partly)."""
    return np.ceil(b.energy_kwh / b.kw * 60.0 - 1e-9).astype(np.int64)


# --------------------------------------------------------------------------- rendering
def micro_kw(kw) -> np.ndarray:
    """kW rounded to whole µkW (as float64, exact for sums below 2**53 µkW)."""
    return np.round(np.asarray(kw, dtype=np.float64) * MICRO)


def rectangle_entries(rows, start, end, micro, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat (index, weight) steps of rectangles [start, end) × ``micro`` whole µkW on a grid
    of rows × (hi-lo+1) minutes: +power where a rectangle starts, −power where it ends.

    Powers are whole µkW, so every sum is an exact integer and the result does not
    depend on the order of the rectangles (chunking).
    """
    width = hi - lo
    keep = (end > lo) & (start < hi) & (end > start)
    rows, micro = rows[keep], micro[keep]
    s = np.clip(start[keep] - lo, 0, width)
    e = np.clip(end[keep] - lo, 0, width)
    stride = width + 1
    return np.concatenate([rows * stride + s, rows * stride + e]), np.concatenate([micro, -micro])


def render_entries(n_rows: int, entries: list[tuple[np.ndarray, np.ndarray]], lo: int,
                   hi: int, divisor: float = 1.0, dtype=np.float64) -> np.ndarray:
    """Sum step entries into an (n_rows, hi-lo) minute grid of whole µkW / ``divisor``.

    The running sums are taken in blocks of rows that fit in the CPU cache.
    """
    stride = hi - lo + 1
    idx = np.concatenate([i for i, _ in entries])
    w = np.concatenate([w for _, w in entries])
    steps = np.bincount(idx, weights=w, minlength=n_rows * stride).reshape(n_rows, stride)
    out = np.empty((n_rows, stride - 1), dtype=dtype)
    for b in range(0, n_rows, _BLOCK_ROWS):
        block = steps[b : b + _BLOCK_ROWS, : stride - 1]
        np.cumsum(block, axis=1, out=block)
        if divisor != 1.0:
            np.divide(block, divisor, out=block)
        out[b : b + _BLOCK_ROWS] = block
    return out


_BLOCK_ROWS = 128  # rows per block: 128 × 1441 float64 ≈ 1.5 MB


def render_rectangles(n_rows: int, rows, start, end, micro, lo: int, hi: int) -> np.ndarray:
    """Sum rectangles [start, end) × µkW into an (n_rows, hi-lo) minute grid of whole µkW."""
    return render_entries(n_rows, [rectangle_entries(rows, start, end, micro, lo, hi)], lo, hi)


def appliance_rectangles(cat, b: Batch, lo: int, hi: int, key: np.ndarray | None = None):
    """Rectangles (key, start, end, µkW) of the cycle phases of ``b`` that overlap [lo, hi).

    Phase power is counted above the appliance's standby (standby is added per household).
    ``key`` (default: the household row) is the grid row each rectangle is added to.
    """
    keep = (b.t < hi) & (b.t + cat.cycle_minutes[b.appliance] > lo)
    a, s = b.appliance[keep], b.t[keep]
    k = (b.row if key is None else key)[keep]
    keys, starts, ends, micro = [], [], [], []
    for p in range(cat.phase_minutes.shape[1]):
        if p:
            more = cat.phase_count[a] > p
            a, s, k = a[more], s[more], k[more]
        minutes = cat.phase_minutes[a, p]
        keys.append(k)
        starts.append(s)
        ends.append(s + minutes)
        micro.append(cat.phase_micro_kw[a, p])
        s = s + minutes
    return (np.concatenate(keys), np.concatenate(starts), np.concatenate(ends),
            np.concatenate(micro))


def ev_rectangles(b: Batch, key: np.ndarray | None = None):
    """A session at full power for its whole minutes, the last minute at the remainder."""
    minutes = b.energy_kwh / b.kw * 60.0
    full = np.floor(minutes + 1e-9).astype(np.int64)
    tail = np.maximum(minutes - full, 0.0)
    k = b.row if key is None else key
    return (np.concatenate([k, k]), np.concatenate([b.t, b.t + full]),
            np.concatenate([b.t + full, b.t + full + 1]),
            micro_kw(np.concatenate([b.kw, b.kw * tail])))


# --------------------------------------------------------------------------- running


@dataclass
class ChunkRun:
    """The committed starts and sessions of one schedule for one chunk.

    Appliances that never respond to DR (non-flexible, cold) commit the same starts in
    every run of a simulator, so their rendered load is computed once and shared
    through ``static_cache``.
    """

    pop: Population
    static: Batch  # starts of appliances DR never moves (identical in every run)
    moving: Batch  # starts of deferrable and shiftable-in-advance appliances
    ev: Batch
    signal_log: list
    until: int = DAY
    static_cache: dict = field(default_factory=dict)

    @property
    def appliances(self) -> Batch:
        """All committed appliance starts."""
        return Batch.concat([self.static, self.moving])

    def _static(self, kind: str, lo: int, hi: int, render):
        key = (kind, lo, hi, self.until)
        if key not in self.static_cache:
            self.static_cache[key] = render(self.static)
        return self.static_cache[key]

    def load_micro_kw(self, lo: int = 0, hi: int = DAY) -> np.ndarray:
        """(count, hi-lo) load in whole µkW per minute (float64); minute 0 is 00:00."""
        return self._render_households(lo, hi)

    def load(self, lo: int = 0, hi: int = DAY, dtype=np.float64) -> np.ndarray:
        """(count, hi-lo) kW per minute; minute 0 is 00:00 of the DR day."""
        return self._render_households(lo, hi, MICRO, dtype)

    def _render_households(self, lo: int, hi: int, divisor: float = 1.0, dtype=np.float64):
        cat, n = self.pop.catalogue, self.pop.count
        stride = hi - lo + 1

        def static_entries(b: Batch) -> tuple[np.ndarray, np.ndarray]:
            idx, w = rectangle_entries(*appliance_rectangles(cat, b, lo, hi), lo, hi)
            standby = (np.arange(n) * stride, self.standby_micro_kw())  # one step at lo
            return np.concatenate([idx, standby[0]]), np.concatenate([w, standby[1]])

        return render_entries(n, [
            self._static("household", lo, hi, static_entries),
            rectangle_entries(*appliance_rectangles(cat, self.moving, lo, hi), lo, hi),
            rectangle_entries(*ev_rectangles(self.ev), lo, hi),
        ], lo, hi, divisor, dtype)

    def standby_micro_kw(self) -> np.ndarray:
        """Standby of each household's appliances, µkW (summed exactly)."""
        return (self.pop.owns * micro_kw(self.pop.catalogue.standby_kw)).sum(axis=1)

    def load_by_category(self, lo: int = 0, hi: int = DAY) -> dict[str, np.ndarray]:
        """Chunk load per appliance category and EVs, whole µkW: {category: (hi-lo,)}."""
        cat = self.pop.catalogue
        names = sorted(set(cat.category.tolist()))
        app_code = np.array([names.index(c) for c in cat.category])

        def entries(b: Batch) -> tuple[np.ndarray, np.ndarray]:
            rect = appliance_rectangles(cat, b, lo, hi, key=app_code[b.appliance])
            return rectangle_entries(*rect, lo, hi)

        standby = (self.pop.owns * micro_kw(cat.standby_kw)).sum(0)
        static = self._static("category", lo, hi, entries)
        grid = render_entries(len(names), [static, entries(self.moving)], lo, hi)
        out = {c: grid[i] + standby[app_code == i].sum() for i, c in enumerate(names)}
        ev = ev_rectangles(self.ev, key=np.zeros(len(self.ev), dtype=np.int64))
        out["ev"] = render_rectangles(1, *ev, lo, hi)[0]
        return out


class ChunkSimulator:
    """Runs schedules of DR events over one chunk; planned behaviour is shared by all runs."""

    def __init__(self, pop: Population, day_offset: int = 0):
        self.pop = pop
        _ = (pop.ev_data, pop.follow_through)  # load data now: errors surface outside SimPy
        self.plan = ChunkPlan(pop, day_offset)
        self.static_cache: dict = {}  # load of the appliances DR never moves, shared by runs

    @cached_property
    def theta_o(self) -> np.ndarray:
        return self.pop.follow_through

    def resolve(self, events: Sequence[DREvent]) -> list[ResolvedEvent]:
        notice = self.pop.scenario.dr_program.notice_minutes
        return [e.resolve(notice, self.theta_o) for e in events]

    def run(self, events: Sequence[DREvent], until: int = DAY, decisions: int = 0) -> ChunkRun:
        """Simulate from the start of day -1 to minute ``until`` of the DR day.

        Starts planned after ``until`` are not drawn (the load up to ``until`` does not
        depend on them); starts deferred past it are kept with their energy. Loads are
        complete for minutes before ``until``.

        ``decisions`` > 0 draws the households' follow-through decisions (whether a start
        is deferred or pre-run, whether a charging EV pauses) from an independent replica
        of their streams, over the same planned day: the day's schedule is kept, only the
        decisions change. Where a moved start goes is part of the schedule. 0 is the day
        itself.
        """
        if not 0 < until <= MAX_UNTIL:
            raise ValueError(f"until={until}: a run ends within (0, {MAX_UNTIL}] minutes")
        env = simpy.Environment(initial_time=FIRST_DAY * DAY)
        signals = DRSignals(env, self.resolve(events))
        procs = [ApplianceProcess(env, signals, self.pop, self.plan, f, until, decisions)
                 for f in FLEX_CLASSES]
        ev = EVProcess(env, signals, self.pop, self.plan, until, decisions)
        env.run(until=until + 1)
        def committed(classes) -> Batch:
            return Batch.concat([b for p in procs if p.flex in classes for b in p.committed]
                                or [Batch.empty()])

        if ("starts", until) not in self.static_cache:  # the same in every run: keep the first
            self.static_cache["starts", until] = committed(STATIC)
        return ChunkRun(
            self.pop,
            self.static_cache["starts", until],
            committed(RESPONSIVE),
            Batch.concat(ev.committed or [Batch.empty(ev=True)]),
            signals.log,
            until,
            self.static_cache,
        )


def program_events(scenario) -> list[DREvent]:
    """The scenario's own DR program as a one-event schedule."""
    p = scenario.dr_program
    return [DREvent(start=p.start, end=p.end)]


def simulate_households(scenario, first: int, count: int, dr_events=None) -> np.ndarray:
    """kW per minute of the DR day for households ``first .. first+count-1``.

    Returns a float32 array (count, 1440), column 0 = 00:00. ``dr_events=None`` runs the
    scenario's own DR program, ``[]`` none.
    """
    if count < 0 or first < 0 or first + count > scenario.households:
        raise ValueError(
            f"households {first}..{first + count - 1} outside 0..{scenario.households - 1}"
        )
    events = program_events(scenario) if dr_events is None else list(dr_events)
    run = ChunkSimulator(Population(scenario, first, count)).run(events)
    return run.load(dtype=np.float32)


__all__ = ["ChunkSimulator", "ChunkRun", "simulate_households", "program_events"]
