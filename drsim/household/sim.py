"""SimPy simulation of one chunk of households, vectorized over the chunk.

One ``simpy.Environment`` per chunk and schedule (:class:`ChunkSimulator`): the planned
starts (:mod:`drsim.household.plan`: what a household would do without DR, drawn per day
from counter-based streams, identical across passes), the processes that move them in
response to DR signals (:mod:`drsim.household.processes`), and the load rendered once the
run ends from what they committed (:mod:`drsim.household.render`; :class:`ChunkRun`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import cast

import numpy as np
import simpy

from drsim.household.appliances import FLEX_ADVANCE, FLEX_COLD, FLEX_DEFERRABLE, FLEX_NONE
from drsim.household.dr import DREvent, ResolvedEvent
from drsim.household.plan import FIRST_DAY, RESPONSIVE, ChunkPlan
from drsim.household.population import Population
from drsim.household.processes import ApplianceProcess, DRSignals, EVProcess
from drsim.household.render import (
    Rectangles,
    ev_rectangles,
    micro_kw,
    phase_rectangles,
    rectangle_steps,
    render_rectangles,
    render_steps,
    row_peaks,
    step_grid,
)
from drsim.household.starts import Batch
from drsim.scenario import Scenario, load_scenario
from drsim.units import DAY, MICRO

MAX_UNTIL = 3 * DAY  # a run ends by the end of day 2 at the latest
FLEX_CLASSES = (FLEX_DEFERRABLE, FLEX_ADVANCE, FLEX_NONE, FLEX_COLD)
STATIC = (FLEX_NONE, FLEX_COLD)
_STATIC_PIECE = 200_000  # static starts rendered per category at a time


@dataclass
class ChunkRun:
    """The committed starts and sessions of one schedule for one chunk.

    Appliances that never respond to DR (non-flexible, cold) commit the same starts in
    every run of a simulator, so their rendered load is computed once and shared
    through ``static_cache``.

    Attributes
    ----------
    pop : Population
        The chunk's households.
    static : tuple of Batch
        Starts of the appliances DR never moves (identical in every run), as the plan
        drew them: one batch per class and day, not joined.
    moving : Batch
        Starts of deferrable and shiftable-in-advance appliances.
    ev : Batch
        EV charging sessions.
    signal_log : list of tuple
        ``(minute, kind, event index)`` of the DR signals (:class:`DRSignals`).
    until : int
        End of the run [minutes since midnight of the DR day].
    static_cache : dict
        Rendered load of the static starts, shared by the runs of a simulator.
    """

    pop: Population
    static: tuple[Batch, ...]  # starts of appliances DR never moves (identical in every run)
    moving: Batch  # starts of deferrable and shiftable-in-advance appliances
    ev: Batch
    signal_log: list
    until: int = DAY
    static_cache: dict = field(default_factory=dict)

    @property
    def appliances(self) -> Batch:
        """All committed appliance starts (static, then moving)."""
        return Batch.concat([*self.static, self.moving])

    def _static(self, kind: str, lo: int, hi: int, render):
        key = (kind, lo, hi, self.until)
        if key not in self.static_cache:
            self.static_cache[key] = render(self.static)
        return self.static_cache[key]

    def load_micro_kw(self, lo: int = 0, hi: int = DAY) -> np.ndarray:
        """Render the households' load in whole µkW.

        Parameters
        ----------
        lo, hi : int, default 0 and 1440
            Minutes rendered, hi excluded [minutes since midnight of the DR day].

        Returns
        -------
        numpy.ndarray
            (count, hi-lo) load per minute [µkW], whole numbers as float64.
        """
        return self._render_households(lo, hi)

    def movable_load_kw(self, lo: int, hi: int) -> np.ndarray:
        """Render the load that DR can move, summed over the households.

        The committed cycles of the deferrable and shiftable-in-advance appliances (the
        ``moving`` starts: wet appliances, storage water heating, storage heaters) and
        the EV charging sessions (§6.3.1), without the static appliances or standby.

        Parameters
        ----------
        lo, hi : int
            Minutes rendered, hi excluded [minutes since midnight of the DR day].

        Returns
        -------
        numpy.ndarray
            (hi-lo,) the households' summed movable load per minute [kW].

        Examples
        --------
        >>> from drsim.scenario import scenario_from_dict
        >>> scenario = scenario_from_dict({"name": "doc", "seed": 7, "households": 4,
        ...                                "groups": [{"name": "g", "size": 4}]})
        >>> run = ChunkSimulator(Population(scenario, 0, 4)).run([])
        >>> movable = run.movable_load_kw(1110, 1230)  # 18:30-20:30
        >>> movable.shape, bool((movable <= run.load(1110, 1230).sum(axis=0) + 1e-9).all())
        ((120,), True)
        """
        rects: list[Rectangles] = [*phase_rectangles(self.pop.catalogue, self.moving, lo, hi,
                                   key=np.zeros(len(self.moving), dtype=np.int64)),
                 ev_rectangles(self.ev, key=np.zeros(len(self.ev), dtype=np.int64))]
        total = cast(np.ndarray, sum(render_rectangles(1, *rect, lo, hi)[0] for rect in rects))
        return total / MICRO

    def load(self, lo: int = 0, hi: int = DAY, dtype=np.float64,
             minute_major: bool = False) -> np.ndarray:
        """Render the households' load in kW.

        Each household's load is its standby plus the phases of its committed cycles and
        its charging sessions (:func:`appliance_rectangles`, :func:`ev_rectangles`),
        summed exactly in µkW.

        Parameters
        ----------
        lo, hi : int, default 0 and 1440
            Minutes rendered, hi excluded [minutes since midnight of the DR day]; minute 0
            is 00:00 of the DR day.
        dtype : numpy dtype, default numpy.float64
            Type of the result.
        minute_major : bool, default False
            Render minute by minute over all households at once (faster for whole days
            of many households) and return the array in Fortran (column-major) order:
            the same values.

        Returns
        -------
        numpy.ndarray
            (count, hi-lo) load per minute [kW].
        """
        return self._render_households(lo, hi, MICRO, dtype, minute_major)

    def _render_households(self, lo: int, hi: int, divisor: float = 1.0, dtype=np.float64,
                           minute_major: bool = False):
        cat, n = self.pop.catalogue, self.pop.size
        major = n if minute_major else None

        def steps(rects: list[Rectangles]
                  ) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
            """Return the steps of these rectangles and each household's bound on them."""
            return ([piece for rect in rects for piece in rectangle_steps(*rect, lo, hi, major)],
                    row_peaks(n, rects))

        def static_steps(static: tuple[Batch, ...]):
            pieces, peaks = steps([r for b in static for r in phase_rectangles(cat, b, lo, hi)])
            standby = self.standby_micro_kw()
            at_lo = np.arange(n) * (1 if minute_major else hi - lo + 1)
            return [*pieces, (at_lo, standby)], peaks + standby

        kind = "household by minute" if minute_major else "household"
        static, static_peaks = self._static(kind, lo, hi, static_steps)
        moving, peaks = steps([*phase_rectangles(cat, self.moving, lo, hi),
                               ev_rectangles(self.ev)])
        peak = float((static_peaks + peaks).max(initial=0.0))
        return render_steps(step_grid(n, [*static, *moving], lo, hi, minute_major, peak),
                            divisor, dtype, minute_major)

    def standby_micro_kw(self) -> np.ndarray:
        """Sum the standby power of each household's appliances.

        Returns
        -------
        numpy.ndarray
            (count,) standby [µkW], whole numbers (summed exactly).
        """
        return (self.pop.owns * micro_kw(self.pop.catalogue.standby_kw)).sum(axis=1)

    def load_by_category(self, lo: int = 0, hi: int = DAY) -> dict[str, np.ndarray]:
        """Render the chunk's load per appliance category and of its EVs.

        Parameters
        ----------
        lo, hi : int, default 0 and 1440
            Minutes rendered, hi excluded [minutes since midnight of the DR day].

        Returns
        -------
        dict of str to numpy.ndarray
            ``{category: (hi-lo,) load}`` summed over the households [µkW], with the key
            ``"ev"`` for EV charging; the categories add up to the households' load.

        Examples
        --------
        >>> from drsim.scenario import scenario_from_dict
        >>> scenario = scenario_from_dict({"name": "doc", "seed": 7, "households": 4,
        ...                                "groups": [{"name": "g", "size": 4}]})
        >>> run = ChunkSimulator(Population(scenario, 0, 4)).run([])
        >>> by_category = run.load_by_category()
        >>> round(float(by_category["ev"].sum()) / MICRO / 60, 2)  # [kWh]
        48.61
        >>> bool(sum(by_category.values()).sum() == run.load_micro_kw().sum())
        True
        """
        cat = self.pop.catalogue
        names = sorted(set(cat.category.tolist()))
        app_code = np.array([names.index(c) for c in cat.category])

        def steps(b: Batch) -> np.ndarray:
            return step_grid(len(names), [
                piece for rect in phase_rectangles(cat, b, lo, hi, key=app_code[b.appliance])
                for piece in rectangle_steps(*rect, lo, hi)], lo, hi)

        def static_steps(static: tuple[Batch, ...]) -> np.ndarray:  # fewer temporaries at once
            return sum((steps(b.take(slice(i, i + _STATIC_PIECE))) for b in static
                        for i in range(0, len(b), _STATIC_PIECE)),
                       np.zeros((len(names), hi - lo + 1)))

        standby = (self.pop.owns * micro_kw(cat.standby_kw)).sum(0)
        grid = render_steps(self._static("category", lo, hi, static_steps) + steps(self.moving))
        out = {c: grid[i] + standby[app_code == i].sum() for i, c in enumerate(names)}
        ev = ev_rectangles(self.ev, key=np.zeros(len(self.ev), dtype=np.int64))
        out["ev"] = render_rectangles(1, *ev, lo, hi)[0]
        return out


class ChunkSimulator:
    """Run schedules of DR events over one chunk; planned behaviour is shared by all runs.

    Parameters
    ----------
    pop : Population
        The chunk's households.
    day_offset : int, default 0
        Counter offset of the simulated day [days] (:class:`ChunkPlan`).
    """

    def __init__(self, pop: Population, day_offset: int = 0):
        self.pop = pop
        _ = (pop.ev_data, pop.follow_through)  # load data now: errors surface outside SimPy
        self.plan = ChunkPlan(pop, day_offset)
        #: what the appliances DR never moves commit and load, shared by runs: their starts,
        #: their steps per category (a small grid) and per household and window
        self.static_cache: dict = {}

    @cached_property
    def theta_o(self) -> np.ndarray:
        """Expected follow-through rate θ_o per household [1], (count,).

        The households' :attr:`Population.follow_through`; each event scales it
        (:meth:`resolve`).
        """
        return self.pop.follow_through

    def resolve(self, events: Sequence[DREvent]) -> list[ResolvedEvent]:
        """Resolve a schedule to minutes and per-household follow-through.

        Parameters
        ----------
        events : sequence of DREvent
            The schedule; an event without ``announced`` is announced the scenario's
            ``dr_program.notice_minutes`` before its start.

        Returns
        -------
        list of ResolvedEvent
            The events [minutes since midnight of the DR day], each with its θ per
            household [1].
        """
        notice = self.pop.scenario.dr_program.notice_minutes
        return [e.resolve(notice, self.theta_o) for e in events]

    def run(self, events: Sequence[DREvent], until: int = DAY, decisions: int = 0) -> ChunkRun:
        """Simulate the chunk's households under a schedule of DR events.

        The run goes from the start of day -1 to minute ``until`` of the DR day. A
        following household (probability θ of the event, drawn per start) moves a start
        of a deferrable appliance or an EV session that falls inside a known event after
        its end, spread over ``dr_program.rebound_spread_minutes`` (rebound), runs a
        shiftable-in-advance appliance in the ``precool_lead_minutes`` before the event,
        and pauses a charging EV: the modified appliance-use probabilities of §6.3.1 [1]_
        as drsim reads them (docs/decisions.md, "Load model data and its sources"). A
        household reacts to an event only from its announcement on.

        Starts planned after ``until`` are not drawn (the load up to ``until`` does not
        depend on them); starts deferred past it are kept with their energy. Loads are
        complete for minutes before ``until``.

        Parameters
        ----------
        events : sequence of DREvent
            The schedule, empty for a day without DR (:func:`program_events` for the
            scenario's program).
        until : int, default 1440
            End of the run, in (0, 4320] [minutes since midnight of the DR day].
        decisions : int, default 0
            ``decisions`` > 0 draws the households' follow-through decisions (whether a
            start is deferred or pre-run, whether a charging EV pauses) from an
            independent replica of their streams, over the same planned day: the day's
            schedule is kept, only the decisions change. Where a moved start goes is part
            of the schedule. 0 is the day itself (docs/model.md, "The threshold").

        Returns
        -------
        ChunkRun
            The committed starts and sessions; :meth:`ChunkRun.load` renders the load.

        Raises
        ------
        ValueError
            If ``until`` is outside (0, 4320].

        References
        ----------
        .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
           dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.

        Examples
        --------
        >>> from drsim.scenario import scenario_from_dict
        >>> scenario = scenario_from_dict({"name": "doc", "seed": 7, "households": 4,
        ...                                "groups": [{"name": "g", "size": 4}]})
        >>> sim = ChunkSimulator(Population(scenario, 0, 4))
        >>> no_dr, dr = sim.run([]), sim.run(program_events(scenario))
        >>> dr.signal_log  # announced 60 minutes ahead, 18:30-20:30
        [(1050, 'announce', 0), (1110, 'start', 0), (1230, 'end', 0)]
        >>> program = slice(1110, 1230)
        >>> reduction = (no_dr.load()[:, program] - dr.load()[:, program]).sum(axis=1) / 60
        >>> reduction.round(1).tolist()  # [kWh] per household
        [0.0, 1.4, 1.0, 0.0]
        """
        if not 0 < until <= MAX_UNTIL:
            raise ValueError(f"until={until}: a run ends within (0, {MAX_UNTIL}] minutes")
        env = simpy.Environment(initial_time=FIRST_DAY * DAY)
        signals = DRSignals(env, self.resolve(events))
        static = self.static_cache.get(("starts", until))  # the same in every run
        classes = FLEX_CLASSES if static is None else RESPONSIVE
        procs = [ApplianceProcess(env, signals, self.pop, self.plan, f, until, decisions)
                 for f in classes]
        ev = EVProcess(env, signals, self.pop, self.plan, until, decisions)
        env.run(until=until + 1)
        def committed(classes) -> list[Batch]:
            return [b for p in procs if p.flex in classes for b in p.committed]

        if static is None:  # keep the first run's (the plan's own batches, not copied)
            static = self.static_cache["starts", until] = tuple(committed(STATIC))
            self.plan.forget(STATIC)
        return ChunkRun(
            self.pop,
            static,
            Batch.concat(committed(RESPONSIVE) or [Batch.empty()]),
            Batch.concat(ev.committed or [Batch.empty(ev=True)]),
            signals.log,
            until,
            self.static_cache,
        )


def program_events(scenario) -> list[DREvent]:
    """Return the scenario's own DR program as a one-event schedule.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario; its ``dr_program`` gives start and end.

    Returns
    -------
    list of DREvent
        One event, announced the program's notice before its start.
    """
    p = scenario.dr_program
    return [DREvent(start=p.start, end=p.end)]


def simulate_households(scenario, first: int, count: int, dr_events=None) -> np.ndarray:
    """Simulate the load of households on the DR day, minute by minute.

    The bottom-up load model of §6.3.1 [1]_: each household's appliances start at random
    times of the day after the CREST model [2]_, its EV charges in sessions after the
    trial data of [3]_, and a DR event moves the starts of the households that follow
    through (:meth:`ChunkSimulator.run`). A household's load depends only on the seed and
    its id, not on the chunk it is simulated in.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario, str or pathlib.Path
        The scenario (seed, households, load model, DR program), or its YAML file.
    first : int
        Id of the first household (0-based) [households].
    count : int
        Number of households [households].
    dr_events : sequence of DREvent, optional
        The schedule: None runs the scenario's own DR program (:func:`program_events`),
        ``[]`` none.

    Returns
    -------
    numpy.ndarray
        (count, 1440) float32 load [kW]; column 0 is 00:00 of the DR day. Stored in
        Fortran (column-major) order: the households' loads are summed minute by minute
        over all of them at once (:meth:`ChunkRun.load`).

    Raises
    ------
    ValueError
        If the households are not all in the scenario (a ScenarioError if the file is
        bad).
    TypeError
        If ``scenario`` is neither a Scenario nor a path, or ``first`` or ``count`` is not
        an integer.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
    .. [2] I. Richardson, M. Thomson, D. Infield, C. Clifford, "Domestic electricity use:
       A high-resolution energy demand model", Energy and Buildings 42(10), 1878-1887,
       2010.
    .. [3] J. Quirós-Tortós, L. F. Ochoa, T. Butler, "How electric vehicles and the grid
       work together: Lessons learned from one of the largest EV trials in the world", IEEE
       Power and Energy Magazine 16(6), 2018, pp. 64-76.

    Examples
    --------
    >>> from drsim.scenario import scenario_from_dict
    >>> scenario = scenario_from_dict({"name": "doc", "seed": 7, "households": 4,
    ...                                "groups": [{"name": "g", "size": 4}]})
    >>> kw = simulate_households(scenario, 0, 4)
    >>> kw.shape, kw.dtype
    ((4, 1440), dtype('float32'))
    >>> no_dr = simulate_households(scenario, 0, 4, dr_events=[])
    >>> program = slice(1110, 1230)  # 18:30-20:30
    >>> (no_dr[:, program].sum(axis=1, dtype=float) / 60).round(1).tolist()  # [kWh]
    [0.8, 3.4, 2.3, 0.8]
    >>> (kw[:, program].sum(axis=1, dtype=float) / 60).round(1).tolist()
    [0.8, 2.0, 1.3, 0.8]
    """
    scenario = _scenario_of(scenario)
    for name, value in (("first", first), ("count", count)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"{name} must be an integer [households], not "
                            f"{type(value).__name__} {value!r}")
    if count < 0 or first < 0 or first + count > scenario.households:
        raise ValueError(
            f"households {first}..{first + count - 1} outside 0..{scenario.households - 1}"
        )
    events = program_events(scenario) if dr_events is None else list(dr_events)
    run = ChunkSimulator(Population(scenario, first, count)).run(events)
    return run.load(dtype=np.float32, minute_major=True)


def _scenario_of(scenario) -> Scenario:
    """Return ``scenario`` as a Scenario (one, or a YAML file's, loaded and checked).

    A bad file raises :class:`~drsim.scenario.ScenarioError`, anything else TypeError.
    """
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, str | Path):
        return load_scenario(scenario)
    raise TypeError("scenario must be a drsim Scenario or the path of a scenario YAML file, "
                    f"not {type(scenario).__name__}")


__all__ = ["ChunkSimulator", "ChunkRun", "simulate_households", "program_events"]
