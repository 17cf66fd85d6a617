"""The utility's estimates: baseline B_{k,t} and expected complete response P̂_{k,t}.

Measurement and verification (M&V) never uses the evaluated day's own random draws
(specs/dr_case_study.md, reading 6): with common random numbers every household would
sit on its own estimate and the compliance test (Eq. 6.4) would measure nothing.

Two methods:

``model`` (default)
    The model's expectation for the household's appliance set, EV and θ_o. Starts of an
    appliance form a Poisson process with rate ``starts_per_day × start_pmf`` per minute,
    so its expected power is the convolution of that rate with its cycle profile.
    Following through (θ = 1) removes the starts inside the event window and places
    their mass uniformly over the rebound spread after it (deferrable) or over the lead
    time before it (shiftable in advance); a following EV draws nothing during the event
    and its paused or deferred energy resumes after it. Each start's decision is an
    independent Bernoulli(θ), so P̂ = (1 − θ_o)·B + θ_o·F with F the follower's
    expectation. Session queueing of an EV and re-deferral are ignored.

``prior_days``
    The mean over N independent simulated days of the same households (their own
    appliances, EV and θ_o, other days' draws), like the NAESB WEQ Business Practice
    Standards' "Baseline Type-I" (an average of the customer's own prior days'
    interval data; NAESB WEQ-015, Measurement and Verification of Wholesale Electricity
    Demand Response). B averages no-DR days; P̂ averages days with the program at θ_o.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drsim.appliances import FLEX_ADVANCE, FLEX_COLD, FLEX_DEFERRABLE, Catalogue
from drsim.behaviour_data import EVData
from drsim.dr import clock_minutes
from drsim.population import Population
from drsim.sim import DAY, MICRO, ChunkSimulator, micro_kw, program_events

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


def estimate(pop: Population, lo: int = 0, hi: int = DAY) -> Estimates:
    """The scenario's estimates for minutes [lo, hi) of the households of ``pop``."""
    if not 0 <= lo < hi <= DAY:
        raise ValueError(f"estimate window [{lo}, {hi}) outside the day [0, {DAY})")
    method = pop.scenario.baseline.method
    if method == "prior_days":
        return _prior_days(pop, pop.scenario.baseline.prior_days, lo, hi)
    return _model(pop, lo, hi)


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
