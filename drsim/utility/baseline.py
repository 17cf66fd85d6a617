"""The utility's estimates (measurement and verification, M&V): the baseline B_{k,t} and
the expected complete response P̂_{k,t} of each household.

Eq. 6.3-6.4 (dissertation §6.2.1) test a household by comparing its metered load P with
P̂, and Eq. 6.2 measures its reduction against B; both "are estimated using standard DR
measurement and verification techniques based on historical performance data and
randomised control trials" (§6.2.1), and in the dissertation's simulation "both baseline
and expected reduction are estimated" (§6.3.1).

The rule for every method: **estimates never use the evaluated day's follow-through
decisions**. With common random numbers an estimate that used them would be the realised
load itself, and Eq. 6.4 would measure nothing.

``same_day`` (default)
    The simulator's counterfactual of the evaluated day, perfect M&V: the limit a
    randomised-control-trial baseline approaches, and the dissertation's simulated
    setting. B is the household's own simulated no-DR load of the day; with F the same
    day with the household following through on every decision (θ = 1),
    ``P̂ = (1 − θ_o)·B + θ_o·F`` (:func:`expected_response`). Each start's decision is an
    independent Bernoulli(θ_o) that either leaves it where B has it or moves it where F
    has it, so P̂ is the expectation of the day's load over the decisions, exactly where
    decisions act independently. They do not quite for EVs: one car charges one session
    at a time, so a deferred or paused session that resumes after the event delays a
    later one (queueing, also where the rebound overlaps a later plug-in); tests bound
    how far the mean of many decision replicas departs from P̂.

``model``
    The model's expectation for the household's appliance set, EV and θ_o, without the
    day's schedule. Starts of an appliance form a Poisson process with rate
    ``starts_per_day × start_pmf`` per minute, so its expected power is the convolution
    of that rate with its cycle profile. Following through (θ = 1) removes the starts
    inside the event window and places their mass uniformly over the rebound spread after
    it (deferrable) or over the lead time before it (shiftable in advance); a following EV
    draws nothing during the event and its paused or deferred energy resumes after it.
    P̂ = (1 − θ_o)·B + θ_o·F as above. Session queueing of an EV and re-deferral are
    ignored.

``prior_days``
    The mean over N independent simulated days of the same households (their own
    appliances, EV and θ_o, other days' draws), like the NAESB WEQ Business Practice
    Standards' "Baseline Type-I" (an average of the customer's own prior days' interval
    data; NAESB WEQ-015, Measurement and Verification of Wholesale Electricity Demand
    Response), which §6.2.1 names. B averages no-DR days; P̂ averages days with the program
    at θ_o.

Day-of adjustment (any method, optional, :func:`day_of_ratio`): at the announcement the
utility scales each household's B and P̂ by its metered load over the minutes before the
notice against its estimated baseline over the same minutes, within a cap, and publishes
the adjusted profiles (one update of the remote data, drsim.utility.fetching). Readings after the
notice carry the household's decisions and are not used.

M&V error (any method, :func:`with_mv_error`): each household's B and P̂ share one
multiplicative factor, lognormal with mean 1 and coefficient of variation
``baseline.error``, drawn from the household's own random stream; optionally every minute
adds a further shared factor (``baseline.error_per_minute``). The utility knows how large
its error is, not its realisation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from drsim.household import rng
from drsim.household.appliances import FLEX_ADVANCE, FLEX_COLD, FLEX_DEFERRABLE, Catalogue
from drsim.household.behaviour_data import EVData
from drsim.household.dr import DREvent
from drsim.household.population import Population
from drsim.household.sim import ChunkRun, ChunkSimulator, micro_kw, program_events
from drsim.units import DAY, MICRO, clock_minutes

_SPAN = 3 * DAY  # days -1, 0, 1 on one axis; index i is minute i - DAY of the DR day


@dataclass(frozen=True)
class Estimates:
    """B and P̂ (kW per minute, minutes [lo, hi) of the DR day) for a chunk's households."""

    baseline_kw: np.ndarray  # (count, hi - lo)
    expected_kw: np.ndarray  # (count, hi - lo)
    lo: int = 0
    hi: int = DAY


@dataclass(frozen=True)
class _Window:
    announce: int
    start: int
    end: int
    spread: int
    lead: int


def estimate(pop: Population, lo: int = 0, hi: int = DAY, sim: ChunkSimulator | None = None,
             baseline_kw: np.ndarray | None = None) -> Estimates:
    """The utility's estimates for minutes [lo, hi) of the households of ``pop``: the
    scenario's M&V method (:func:`estimate_exact`) with its M&V error
    (:func:`with_mv_error`)."""
    return with_mv_error(estimate_exact(pop, lo, hi, sim, baseline_kw), pop)


def estimate_exact(pop: Population, lo: int = 0, hi: int = DAY,
                   sim: ChunkSimulator | None = None, baseline_kw: np.ndarray | None = None
                   ) -> Estimates:
    """The scenario's M&V method without M&V error. ``same_day`` simulates the chunk's day
    with ``sim`` (a new simulator of ``pop`` if None); ``baseline_kw``, the day's no-DR
    load over [lo, hi) when it is already simulated, saves simulating it again."""
    if not 0 <= lo < hi <= DAY:
        raise ValueError(f"estimate window [{lo}, {hi}) outside the day [0, {DAY})")
    method = pop.scenario.baseline.method
    if method == "prior_days":
        return _prior_days(pop, pop.scenario.baseline.prior_days, lo, hi)
    if method == "model":
        return _model(pop, lo, hi)
    return _same_day(pop, sim or ChunkSimulator(pop), lo, hi, baseline_kw)


# --------------------------------------------------------------------------- same day
def expected_response(theta: np.ndarray, baseline_kw: np.ndarray, full_kw: np.ndarray
                      ) -> np.ndarray:
    """Expected complete response P̂ (Eq. 6.4) of households with follow-through θ.

    ``P̂_t = (1 − θ)·B_t + θ·F_t`` with B the load without DR and F the load when every
    decision follows through (θ = 1): the expectation over independent Bernoulli(θ)
    decisions, each of which keeps a start as in B or moves it as in F.

    Parameters
    ----------
    theta : (households,) follow-through θ_o [1]
    baseline_kw, full_kw : (households, minutes) load [kW]

    Examples
    --------
    >>> expected_response(np.array([0.0, 0.5]), np.full((2, 2), 2.0), np.full((2, 2), 1.0))
    array([[2. , 2. ],
           [1.5, 1.5]])
    """
    theta = np.asarray(theta, dtype=np.float64)[:, None]
    return (1.0 - theta) * baseline_kw + theta * full_kw


def full_follow_through(scenario) -> list[DREvent]:
    """The scenario's program with every household following through on every decision."""
    return [DREvent(e.start, e.end, e.announced, follow_through=np.ones_like)
            for e in program_events(scenario)]


def _same_day(pop: Population, sim: ChunkSimulator, lo: int, hi: int,
              baseline_kw: np.ndarray | None) -> Estimates:
    base = sim.run([]).load(lo, hi) if baseline_kw is None else baseline_kw
    full = sim.run(full_follow_through(pop.scenario)).load(lo, hi)
    return Estimates(base, expected_response(pop.follow_through, base, full), lo, hi)


REPLICA_DAY_STRIDE = 1000  # counter offset of the days simulated as replicas (after the day)


def expected_replica(pop: Population, sim: ChunkSimulator, replica: int) -> ChunkRun:
    """The day's run of one replica (≥ 1) of the expected response over the schedule the
    M&V method assumes: ``same_day``, the evaluated day with independent follow-through
    decisions; ``model`` and ``prior_days``, another simulated day (one that is neither a
    prior day nor the evaluated one)."""
    if replica < 1:
        raise ValueError(f"replica {replica}: replicas are numbered from 1 (0 is the day)")
    events = program_events(pop.scenario)
    if pop.scenario.baseline.method == "same_day":
        return sim.run(events, decisions=replica)
    day = ChunkSimulator(pop, day_offset=replica * REPLICA_DAY_STRIDE)
    return day.run(events)


# --------------------------------------------------------------------------- M&V error
def lognormal_factor(z: np.ndarray, cv: float) -> np.ndarray:
    """Lognormal factors with mean 1 and coefficient of variation ``cv`` from standard
    normal deviates ``z``: ``exp(σ·z − σ²/2)`` with ``σ² = ln(1 + cv²)`` (the moments
    of the lognormal distribution: E = exp(μ + σ²/2), CV² = exp(σ²) − 1).

    Parameters
    ----------
    z : standard normal deviates [1]
    cv : coefficient of variation [1], ≥ 0

    Examples
    --------
    >>> lognormal_factor(np.array([0.0]), 0.0)
    array([1.])
    >>> round(float(lognormal_factor(np.array([0.0]), 0.05)[0]), 6)
    0.998752
    """
    sigma2 = np.log1p(cv * cv)
    return np.exp(np.sqrt(sigma2) * np.asarray(z, dtype=np.float64) - sigma2 / 2.0)


def _normal(seed: int, ids: np.ndarray, stream: str, *counters) -> np.ndarray:
    """Standard normal deviates by inversion of the counter-based uniforms (the uniform's
    53-bit grid shifted by half a step, so that no deviate is infinite)."""
    return ndtri(rng.uniform(seed, ids, stream, *counters) + 2.0**-54)


def mv_factors(pop: Population, lo: int, hi: int, replica: int = 0
               ) -> tuple[np.ndarray, np.ndarray]:
    """The M&V error's factors of :func:`with_mv_error` over minutes [lo, hi): per
    household (households,) and per household and minute (households, hi − lo), each 1
    where the scenario has none."""
    settings = pop.scenario.baseline
    seed, ids, extra = pop.scenario.seed, pop.ids, (replica,) if replica else ()
    household = lognormal_factor(_normal(seed, ids, "mv_error", *extra), settings.error) \
        if settings.error else np.ones(len(ids))
    minute = np.ones((len(ids), hi - lo))
    if settings.error_per_minute:
        minutes = np.arange(lo, hi)[None, :]
        z = _normal(seed, ids[:, None], "mv_error_minute", minutes, *extra)
        minute = lognormal_factor(z, settings.error_per_minute)
    return household, minute


def with_mv_error(est: Estimates, pop: Population, replica: int = 0) -> Estimates:
    """``est`` as the utility has it: B and P̂ of a household times one factor drawn from
    its own stream ``mv_error`` (and, per minute, ``mv_error_minute``); ``replica`` > 0
    draws the factors of an independent replica (the utility knows the error's size, not
    its realisation). No error: ``est`` itself."""
    settings = pop.scenario.baseline
    if settings.error == 0.0 and settings.error_per_minute == 0.0:
        return est
    household, minute = mv_factors(pop, est.lo, est.hi, replica)
    factor = household[:, None] * minute
    return Estimates(est.baseline_kw * factor, est.expected_kw * factor, est.lo, est.hi)


# --------------------------------------------------------------------------- day-of
def day_of_ratio(readings_kw: np.ndarray, baseline_kw: np.ndarray, cap: float) -> np.ndarray:
    """The day-of adjustment factor of each household (module doc).

    ``r_k = clip(Σ_t P_{k,t} / Σ_t B̂_{k,t}, 1 − cap, 1 + cap)`` over the adjustment
    minutes t before the notice: the multiplicative day-of adjustment of M&V baselines,
    capped as ISO baselines cap theirs (a household whose estimate is zero there keeps 1).

    Parameters
    ----------
    readings_kw : (households, minutes) metered load before the notice [kW]
    baseline_kw : (households, minutes) estimated baseline B̂ over the same minutes [kW]
    cap : the largest relative change [1]

    Examples
    --------
    >>> day_of_ratio(np.array([[1.1, 1.1], [3.0, 3.0], [1.0, 1.0]]),
    ...              np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]), 0.2).round(6).tolist()
    [1.1, 1.2, 1.0]
    """
    used, expected = readings_kw.sum(axis=1), baseline_kw.sum(axis=1)
    ratio = np.divide(used, expected, out=np.ones_like(used), where=expected > 0)
    return np.clip(ratio, 1.0 - cap, 1.0 + cap)


def adjustment_minutes(scenario) -> tuple[int, int]:
    """The minutes [lo, notice) a day-of adjustment reads (module doc; from midnight at
    the earliest)."""
    program = scenario.dr_program
    notice = program.start_minute - program.notice_minutes
    return max(0, notice - scenario.baseline.day_of_adjustment.window_minutes), notice


def baseline_before_notice(pop: Population, sim: ChunkSimulator,
                           baseline_kw: np.ndarray) -> Estimates | None:
    """The M&V method's estimates without M&V error over :func:`adjustment_minutes` (None
    when the announcement is at midnight); ``baseline_kw``, the day's no-DR load there, is
    ``same_day``'s B, so that it is not simulated again."""
    lo, notice = adjustment_minutes(pop.scenario)
    if notice <= lo:
        return None
    if pop.scenario.baseline.method == "same_day":
        return Estimates(baseline_kw, baseline_kw, lo, notice)
    return estimate_exact(pop, lo, notice, sim)


def day_of_adjusted(exact: Estimates, pop: Population, readings_kw: np.ndarray,
                    before: Estimates | None, replica: int = 0) -> Estimates:
    """The estimates as the utility publishes them at the announcement: ``exact`` (the
    M&V method's, without error) with the M&V error of ``replica`` and the scenario's
    day-of adjustment (:func:`day_of_ratio`); ``readings_kw`` is the metered load and
    ``before`` the estimates without error (:func:`baseline_before_notice`) over the
    adjustment minutes.

    With f the household's error factor and m the per-minute ones, the utility's estimate
    is ``f·m·exact`` and its ratio ``r = clip(ΣP / Σ f·m·B, 1 − cap, 1 + cap)``; the
    result ``r·f·m·exact`` is computed as ``(ΣP / Σ m·B)·m·exact`` where r is not capped,
    the same value with f cancelled exactly, so that an error the adjustment undoes leaves
    no rounding behind (Eq. 6.4 compares with ``>``, and a household with nothing to shift
    has its load equal to P̂)."""
    est = with_mv_error(exact, pop, replica)
    if before is None:
        return est
    f, m = mv_factors(pop, exact.lo, exact.hi, replica)
    _, m_before = mv_factors(pop, before.lo, before.hi, replica)
    used = readings_kw.sum(axis=1)
    estimated = (before.baseline_kw * m_before).sum(axis=1)  # without the household factor
    cap = pop.scenario.baseline.day_of_adjustment.cap
    ratio = day_of_ratio(readings_kw, before.baseline_kw * m_before * f[:, None], cap)
    inside = (estimated > 0) & (ratio > 1.0 - cap) & (ratio < 1.0 + cap)
    gain = np.where(inside, np.divide(used, estimated, out=np.ones_like(used),
                                      where=estimated > 0), f * ratio)[:, None] * m
    return Estimates(exact.baseline_kw * gain, exact.expected_kw * gain, exact.lo, exact.hi)


# --------------------------------------------------------------------------- model
def _program_window(scenario) -> _Window:
    p = scenario.dr_program
    start, end = clock_minutes(p.start), clock_minutes(p.end)
    return _Window(start - p.notice_minutes, start, end, p.rebound_spread_minutes,
                   p.precool_lead_minutes)


def _daily_rate(per_day: float, pmf: np.ndarray) -> np.ndarray:
    """Starts per minute over days -1..1 from a daily count and a 144-slot start curve."""
    return np.tile(np.repeat(pmf / 10.0, 10) * per_day, 3)


def _convolve(rate: np.ndarray, profile: np.ndarray) -> np.ndarray:
    """Expected power: Σ_d rate(t − d)·profile(d), on the 3-day axis."""
    return np.convolve(rate, profile)[:_SPAN]


def _move_mass(rate: np.ndarray, w: _Window, lo: int, hi: int) -> np.ndarray:
    """Remove the rate inside the event window; spread its mass uniformly over [lo, hi)."""
    out = rate.copy()
    s, e = w.start + DAY, w.end + DAY
    mass = out[s:e].sum()
    out[s:e] = 0.0
    out[lo + DAY : hi + DAY] += mass / (hi - lo)
    return out


def _follower_rate(rate: np.ndarray, flex: int, w: _Window) -> np.ndarray:
    if flex == FLEX_ADVANCE:
        lead_start = max(w.announce, w.start - w.lead)
        if w.start - lead_start >= 1:
            return _move_mass(rate, w, lead_start, w.start)
    if flex in (FLEX_DEFERRABLE, FLEX_ADVANCE):
        return _move_mass(rate, w, w.end, w.end + w.spread)
    return rate


def _cycle_profile(cat: Catalogue, a: int) -> np.ndarray:
    return np.repeat(cat.phase_kw[a] - cat.standby_kw[a], cat.phase_minutes[a])


_CURVES: dict = {}  # (id(catalogue or EV data), window, ...) -> (object, curves)


def _cached(obj, key: tuple, compute):
    """Per-object cache (catalogues and EV data hold arrays, so they are not hashable)."""
    full = (id(obj), *key)
    if full not in _CURVES or _CURVES[full][0] is not obj:
        _CURVES[full] = (obj, compute())
    return _CURVES[full][1]


def _appliance_curves(cat: Catalogue, w: _Window) -> tuple[np.ndarray, np.ndarray]:
    """(A, 1440) expected power above standby per owned appliance: no DR, and follower."""
    return _cached(cat, (w,), lambda: _compute_appliance_curves(cat, w))


def _compute_appliance_curves(cat: Catalogue, w: _Window):
    base = np.zeros((len(cat.names), DAY))
    follow = np.zeros((len(cat.names), DAY))
    for a in range(len(cat.names)):
        if cat.starts_per_day[a] <= 0:
            continue
        pmf = np.full(144, 1 / 144) if cat.flexibility[a] == FLEX_COLD else cat.start_pmf[a]
        rate = _daily_rate(cat.starts_per_day[a], pmf)  # cold appliances cycle all day
        prof = _cycle_profile(cat, a)
        base[a] = _convolve(rate, prof)[DAY : 2 * DAY]
        follow[a] = _convolve(_follower_rate(rate, cat.flexibility[a], w), prof)[DAY : 2 * DAY]
    return base, follow


def _ev_profile(ev: EVData, battery: float, charger: float) -> np.ndarray:
    """Expected charging power d minutes after plug-in, over the SoC distributions."""
    soc0, p0 = ev.initial_soc.values, ev.initial_soc.probs
    soc1, p1 = ev.final_soc.values, ev.final_soc.probs
    energy = np.maximum(soc1[None, :] - soc0[:, None], 0.0) * battery / ev.efficiency
    prob = p0[:, None] * p1[None, :]
    minutes = (energy / charger * 60.0).ravel()
    prof = np.zeros(int(np.ceil(minutes.max())) + 2)
    for m, p in zip(minutes, prob.ravel(), strict=True):
        full = int(np.floor(m + 1e-9))
        prof[:full] += p * charger
        prof[full] += p * charger * max(m - full, 0.0)
    return prof


def _ev_curves(ev: EVData, battery: float, charger: float, w: _Window, pause: bool):
    """Expected EV power over the DR day: no DR, and a following EV (θ = 1)."""
    key = (battery, charger, w, pause)
    return _cached(ev, key, lambda: _compute_ev_curves(ev, battery, charger, w, pause))


def _compute_ev_curves(ev: EVData, battery: float, charger: float, w: _Window, pause: bool):
    rate = _daily_rate(ev.sessions_per_day.mean(), ev.plug_in_pmf)
    prof = _ev_profile(ev, battery, charger)
    base = _convolve(rate, prof)
    follow = _convolve(_follower_rate(rate, FLEX_DEFERRABLE, w), prof)
    if pause:
        s, e = w.start + DAY, w.end + DAY
        before = rate.copy()
        before[s:] = 0.0
        in_progress = _convolve(before, prof)
        in_progress[:s] = 0.0  # energy drawn from the event start on is paused ...
        delay = np.zeros(e - s + w.spread)
        delay[e - s :] = 1.0 / w.spread  # ... and resumes uniformly over the spread
        follow = follow - in_progress + np.convolve(in_progress, delay)[:_SPAN]
        follow[s:e] = 0.0
    return base[DAY : 2 * DAY], follow[DAY : 2 * DAY]


def _model(pop: Population, lo: int, hi: int) -> Estimates:
    cat, scenario = pop.catalogue, pop.scenario
    w = _program_window(scenario)
    app_base, app_follow = (c[:, lo:hi] for c in _appliance_curves(cat, w))
    # whole µkW per appliance curve: the matrix products are exact integer sums, so a
    # household's estimate has the same bits whatever chunk (matrix shape) it is in
    owns = pop.owns.astype(np.float64)
    standby = owns @ micro_kw(cat.standby_kw)
    base = (owns @ micro_kw(app_base) + standby[:, None]) / MICRO
    follow = (owns @ micro_kw(app_follow) + standby[:, None]) / MICRO
    ev_rows = np.nonzero(pop.has_ev)[0]
    pairs = np.stack([pop.battery_kwh[ev_rows], pop.charger_kw[ev_rows]], axis=1)
    for battery, charger in np.unique(pairs, axis=0) if len(ev_rows) else []:
        rows = ev_rows[(pairs[:, 0] == battery) & (pairs[:, 1] == charger)]
        b, f = _ev_curves(pop.ev_data, float(battery), float(charger), w,
                          scenario.ev.pause_in_progress)
        base[rows] += b[lo:hi]
        follow[rows] += f[lo:hi]
    theta = pop.follow_through[:, None]
    return Estimates(base, (1.0 - theta) * base + theta * follow, lo, hi)


# --------------------------------------------------------------------------- prior days
PRIOR_DAY_STRIDE = 1000  # counter offset between simulated prior days (days never overlap)


def _prior_days(pop: Population, n_days: int, lo: int, hi: int) -> Estimates:
    base = np.zeros((pop.count, hi - lo))
    expected = np.zeros((pop.count, hi - lo))
    events = program_events(pop.scenario)
    for k in range(1, n_days + 1):
        sim = ChunkSimulator(pop, day_offset=-k * PRIOR_DAY_STRIDE)
        base += sim.run([]).load(lo, hi)
        expected += sim.run(events).load(lo, hi)
    return Estimates(base / n_days, expected / n_days, lo, hi)
