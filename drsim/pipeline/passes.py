"""Chunks of households and the simulation passes run over each chunk.

A chunk is a contiguous range of household ids inside one group (docs/architecture.md,
"Data flow of one run"); it is the unit of parallelism. Every pass of a chunk shares the
households' planned behaviour (common random numbers), so passes differ only by DR
response (docs/decisions.md, "Passes and the observed follow-through drop"):

- ``baseline``: no DR;
- ``expected``: the scenario's DR program at each household's θ_o;
- ``traditional``: the program at the observed θ_red = θ_o × (1 − drop) (§6.3.2: 40 %);
- ``adaptive``: the traditional pass plus the second event from the utility's prediction
  on, at θ_new of Eq. 6.8 (:class:`SecondEvent`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from drsim.household.dr import DREvent
from drsim.household.population import Population
from drsim.household.render import micro_kw
from drsim.household.sim import ChunkRun, ChunkSimulator, program_events
from drsim.scenario import Scenario
from drsim.units import DAY
from drsim.utility.baseline import Estimates, estimate_exact, with_mv_error
from drsim.utility.control_reference import PRE_NOTICE_MINUTES
from drsim.utility.day_of import adjustment_minutes, baseline_before_notice, day_of_adjusted
from drsim.utility.incentive import IncentiveResult


@dataclass(frozen=True)
class Chunk:
    """Households ``first .. first+count-1``, all in group ``group``."""

    index: int
    first: int
    count: int
    group: int


def plan_chunks(scenario: Scenario, chunk_size: int | None = None) -> list[Chunk]:
    """Split every group's id range into chunks of at most ``chunk_size`` households; with
    load shedding or remote data, of whole gateways (a multiple of ``gateway_households``,
    at least one), so that a gateway's meters are never split between tasks."""
    size = scenario.chunk_size if chunk_size is None else chunk_size
    gateway = scenario.monitoring.gateway_households
    if gateway is not None:
        size = max(gateway, size // gateway * gateway)
    chunks: list[Chunk] = []
    for g, (lo, hi) in enumerate(scenario.group_ranges()):
        for first in range(lo, hi, size):
            chunks.append(Chunk(len(chunks), first, min(size, hi - first), g))
    return chunks


def pass_schedules(scenario: Scenario, group: int) -> dict[str, list[DREvent]]:
    """The DR schedule of each pass for the households of one group."""
    program = program_events(scenario)
    drop = scenario.effective_follow_through_drop(group)
    return {
        "baseline": [],
        "expected": program,
        "traditional": [
            DREvent(e.start, e.end, e.announced, follow_through=1.0 - drop) for e in program
        ],
    }


@dataclass(frozen=True)
class SecondEvent:
    """The second DR event the utility planned (§6.2.3): announced at ``announced``
    (t_nc + any detection delay), from ``start`` to ``end`` [min since midnight], with the
    ``incentive`` plan whose θ_new (Eq. 6.8) the households follow."""

    announced: int
    start: int
    end: int
    incentive: IncentiveResult

    def schedule(self, scenario: Scenario, group: int) -> list[DREvent]:
        """The adaptive pass's schedule for a group: the traditional pass's events and DR2."""
        incentive = self.incentive

        def theta_new(theta_o: np.ndarray) -> np.ndarray:
            drop = scenario.effective_follow_through_drop(group)
            return incentive.new_follow_through(theta_o, theta_o * (1.0 - drop))

        dr2 = DREvent(self.start, self.end, self.announced, follow_through=theta_new)
        return [*pass_schedules(scenario, group)["traditional"], dr2]


@dataclass
class ChunkResult:
    """Per-minute system load of one chunk for each pass, in whole µkW (exact sums).

    ``estimates`` holds the utility's M&V estimates over the DR window, summed over the
    chunk: B (``baseline``) and P̂ (``expected``), see drsim.utility.baseline. With
    ``households=True`` the per-household loads over the window are kept as well:
    ``window_kw`` (pass -> (households, window) kW) and ``estimate_window_kw`` (B̂, P̂).
    """

    chunk: Chunk
    households: int
    ev_households: int
    load: dict[str, np.ndarray] = field(default_factory=dict)  # pass -> (1440,)
    by_category: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    estimates: dict[str, np.ndarray] = field(default_factory=dict)  # over [start, end)
    window_kw: dict[str, np.ndarray] = field(default_factory=dict)
    estimate_window_kw: dict[str, np.ndarray] = field(default_factory=dict)
    population: Population | None = None
    simulator: ChunkSimulator | None = None  # the chunk's simulator (its plan drawn once)
    estimate_exact: Estimates | None = None  # the M&V method's B and P̂ without M&V error
    #: with a day-of adjustment: the same over the minutes it reads (baseline_before_notice)
    before_notice: Estimates | None = None
    #: with ``keep_runs``: each pass's committed starts and sessions (drsim.household.sim.ChunkRun)
    runs: dict[str, ChunkRun] = field(default_factory=dict)
    #: with a control group: its households of the chunk and their load of the day, the
    #: same on every pass (not called), summed [µkW] (drsim.utility.control_group), and
    #: with ``households`` each one's load over the DR window [kW]
    control_households: int = 0
    control_load: np.ndarray | None = None
    control_window_kw: np.ndarray | None = None
    #: with ``households``: each called and each control household's energy over the hour
    #: before the notice, the same on every pass [kWh] (the control group's covariate,
    #: drsim.utility.control_reference)
    pre_notice_kwh: np.ndarray | None = None
    control_pre_notice_kwh: np.ndarray | None = None


def simulate_chunk(scenario: Scenario, chunk: Chunk, households: bool = False,
                   schedules: dict[str, list[DREvent]] | None = None,
                   keep_runs: bool = False, render_from: int = 0) -> ChunkResult:
    """Run the passes (``schedules``, default :func:`pass_schedules`) over one chunk; only
    per-minute sums leave the chunk unless ``households`` asks for the per-household
    loads over the DR window too (the meter tier needs them), and ``keep_runs`` for the
    passes' starts and sessions (appliance-level queries). The day's load curves are
    rendered from minute ``render_from`` on, NaN before it: the adaptive pass equals the
    traditional pass before DR2's announcement (docs/architecture.md, "The closed loop by
    replay"), so the driver takes those minutes from it.

    The passes and estimates are of the households the utility calls
    (:meth:`~drsim.household.population.Population.called`): the control households of a
    control group get no DR event, so their load, the same on every pass, is simulated
    once without DR (``control_load``, :func:`control_load`) and kept apart from the
    passes."""
    pop = Population(scenario, chunk.first, chunk.count).called()
    sim = ChunkSimulator(pop)
    result = ChunkResult(chunk, pop.size, int(pop.has_ev.sum()), population=pop,
                         simulator=sim)
    dr = scenario.dr_program
    lo, hi = dr.start_minute, dr.end_minute
    pre = adjustment_minutes(scenario, PRE_NOTICE_MINUTES)
    if schedules is None and pop.part == "called":
        result.control_households, result.control_load, control_kw = \
            control_load(scenario, chunk, (pre[0], hi) if households else None)
        if control_kw is not None:
            result.control_window_kw = control_kw[:, lo - pre[0]:]
            result.control_pre_notice_kwh = control_kw[:, :pre[1] - pre[0]].sum(axis=1) / 60
    adjust = schedules is None and scenario.baseline.day_of_adjustment is not None
    before: dict[str, np.ndarray] = {}  # loads over the day-of adjustment's minutes
    for name, events in (schedules or pass_schedules(scenario, chunk.group)).items():
        run = sim.run(events)
        if keep_runs:
            result.runs[name] = run
        if adjust and name in ("baseline", "traditional"):
            before[name] = run.load(*adjustment_minutes(scenario))
        cats = {c: _from(render_from, kw) for c, kw in
                run.load_by_category(render_from, DAY).items()}
        result.by_category[name] = cats
        result.load[name] = np.sum([cats[c] for c in sorted(cats)], axis=0)
        if households:
            result.window_kw[name] = run.load(lo, hi)
            if name == "baseline":  # before the notice every pass is the same
                result.pre_notice_kwh = run.load(*pre).sum(axis=1) / 60
    if schedules is None:
        result.estimate_exact = estimate_exact(pop, lo, hi, sim, result.window_kw.get("baseline"))
        if adjust:
            result.before_notice = baseline_before_notice(pop, sim, before["baseline"])
            est = day_of_adjusted(result.estimate_exact, pop, before["traditional"],
                                  result.before_notice)
        else:
            est = with_mv_error(result.estimate_exact, pop)
        result.estimates = {
            "baseline": micro_kw(est.baseline_kw).sum(axis=0),
            "expected": micro_kw(est.expected_kw).sum(axis=0),
        }
        if households:
            result.estimate_window_kw = {"baseline": est.baseline_kw,
                                         "expected": est.expected_kw}
    return result


def control_load(scenario: Scenario, chunk: Chunk, window: tuple[int, int] | None = None
                 ) -> tuple[int, np.ndarray, np.ndarray | None]:
    """The control households of ``chunk`` (:mod:`drsim.household.control`), their load
    of the day without DR, summed [µkW]: they are not called, so it is their load on
    every pass (docs/decisions.md, "The control group"), and with ``window`` (minutes
    [lo, hi)) each one's load over it, (control households, hi − lo) [kW], which their
    meters read (the aggregate test's reference, drsim.utility.control_reference)."""
    control = Population(scenario, chunk.first, chunk.count).control()
    if control.size == 0:
        return 0, np.zeros(DAY), None if window is None else np.zeros((0, window[1] - window[0]))
    run = ChunkSimulator(control).run([])
    return control.size, run.load_micro_kw(0, DAY).sum(axis=0), \
        None if window is None else run.load(*window)


def _from(minute: int, kw: np.ndarray) -> np.ndarray:
    """A day's curve from its values from ``minute`` on (NaN before)."""
    return kw if minute == 0 else np.concatenate([np.full(minute, np.nan), kw])
