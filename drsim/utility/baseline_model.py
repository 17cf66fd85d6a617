"""The ``model`` M&V method of :mod:`drsim.utility.baseline`.

B̂ and P̂ from the appliance catalogue's start curves and the EV data alone, without
simulating the day.

Each owned appliance's expected load is its daily starts spread over its start curve,
convolved with its cycle profile; a following household's starts inside the event window
move after it (rebound) or before it (pre-cooling), and EV sessions in progress pause;
P̂ = (1 − θ)·B̂ + θ·F with F the load of full follow-through (docs/decisions.md, "M&V: the
baseline and the expected complete response").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drsim.household.appliances import FLEX_ADVANCE, FLEX_COLD, FLEX_DEFERRABLE, Catalogue
from drsim.household.behaviour_data import EVData
from drsim.household.population import Population
from drsim.household.render import micro_kw
from drsim.units import DAY, MICRO, clock_minutes

__all__ = ["model_curves"]

_SPAN = 3 * DAY  # days -1, 0, 1 on one axis; index i is minute i - DAY of the DR day


@dataclass(frozen=True)
class _Window:
    announce: int
    start: int
    end: int
    spread: int
    lead: int


def _program_window(scenario) -> _Window:
    p = scenario.dr_program
    start, end = clock_minutes(p.start), clock_minutes(p.end)
    return _Window(start - p.notice_minutes, start, end, p.rebound_spread_minutes,
                   p.precool_lead_minutes)


def _daily_rate(per_day: float, pmf: np.ndarray) -> np.ndarray:
    """Spread a daily count over a 144-slot start curve: starts per minute, days -1..1."""
    return np.tile(np.repeat(pmf / 10.0, 10) * per_day, 3)


def _convolve(rate: np.ndarray, profile: np.ndarray) -> np.ndarray:
    """Convolve a start rate with a profile: Σ_d rate(t − d)·profile(d), 3-day axis."""
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
    """Return (A, 1440) expected power above standby per appliance: no DR, and follower."""
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
    """Return the expected charging power d minutes after plug-in, over the SoCs."""
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
    """Return the expected EV power over the DR day: no DR, and a following EV (θ = 1)."""
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


def model_curves(pop: Population, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Return B̂ and P̂ of the ``model`` M&V method over minutes [lo, hi) [kW] (module doc)."""
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
    return base, (1.0 - theta) * base + theta * follow
