"""The utility's M&V estimates: the baseline B_{k,t} and expected complete response P̂_{k,t}.

The utility estimates, by measurement and verification (M&V), the baseline B_{k,t} and
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
    ignored (:mod:`drsim.utility.baseline_model`).

``prior_days``
    The mean over N independent simulated days of the same households (their own
    appliances, EV and θ_o, other days' draws), like the NAESB WEQ Business Practice
    Standards' "Baseline Type-I" (an average of the customer's own prior days' interval
    data; NAESB WEQ-015, Measurement and Verification of Wholesale Electricity Demand
    Response), which §6.2.1 names. B averages no-DR days; P̂ averages days with the program
    at θ_o.

``x_of_y`` and ``regression``
    Settlement-grade baselines from simulated non-event days of the same households,
    season and day type before the evaluated day: X-of-Y day matching (CAISO's 10-in-10,
    NYISO's high 5 of 10) and a regression on time of day and day type in the spirit of
    CalTRACK's hourly method; P̂ is B̂ scaled by the ``model`` method's expected response
    (:mod:`drsim.utility.settlement_baselines`).

Day-of adjustment (any method, optional, :func:`drsim.utility.day_of.day_of_ratio`): at
the announcement the utility scales each household's B and P̂ by its metered load over the
minutes before the notice against its estimated baseline over the same minutes, within a
cap, and publishes the adjusted profiles (one update of the remote data,
drsim.utility.fetching). Readings after the notice carry the household's decisions and are
not used.

M&V error (any method, :func:`with_mv_error`): each household's B and P̂ share one
multiplicative factor, lognormal with mean 1 and coefficient of variation
``baseline.error``, drawn from the household's own random stream; optionally every minute
adds a further shared factor (``baseline.error_per_minute``). The utility knows how large
its error is, not its realisation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drsim.household import rng
from drsim.household.dr import DREvent
from drsim.household.population import Population
from drsim.household.rng import lognormal_factor
from drsim.household.sim import ChunkRun, ChunkSimulator, program_events
from drsim.units import DAY
from drsim.utility.baseline_model import model_curves
from drsim.utility.prior_day_runs import PRIOR_DAY_STRIDE
from drsim.utility.settlement_baselines import SETTLEMENT_METHODS, settlement_curves


@dataclass(frozen=True)
class Estimates:
    """B̂ and P̂ of a chunk's households over minutes [lo, hi) of the DR day.

    Attributes
    ----------
    baseline_kw : numpy.ndarray
        The estimated baseline B̂, shape (households, hi − lo), one value per minute [kW].
    expected_kw : numpy.ndarray
        The estimated expected complete response P̂, same shape [kW].
    lo, hi : int
        The minutes covered, ``hi`` excluded [minutes since midnight].
    """

    baseline_kw: np.ndarray  # (count, hi - lo)
    expected_kw: np.ndarray  # (count, hi - lo)
    lo: int = 0
    hi: int = DAY


def estimate(pop: Population, lo: int = 0, hi: int = DAY, sim: ChunkSimulator | None = None,
             baseline_kw: np.ndarray | None = None) -> Estimates:
    """Estimate B̂ and P̂ of the households of ``pop`` as the utility has them.

    The scenario's M&V method (:func:`estimate_exact`: ``same_day``, ``model``,
    ``prior_days``, ``x_of_y`` or ``regression``, module doc) with its M&V error
    (:func:`with_mv_error`). B̂ stands for the baseline B_{k,t} of Eq. 6.2-6.3 and P̂
    for the estimated complete response P̂_{k,t} of Eq. 6.3-6.4, both estimated by M&V
    (§6.2.1); they never use the evaluated day's follow-through decisions (drsim's
    reading: docs/decisions.md, "M&V: the baseline and the expected complete response").

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households.
    lo, hi : int
        The minutes to estimate, ``hi`` excluded [minutes since midnight].
    sim : drsim.household.sim.ChunkSimulator, optional
        The chunk's simulator (``same_day``); a new simulator of ``pop`` if None.
    baseline_kw : numpy.ndarray, optional
        The day's no-DR load over [lo, hi) when it is already simulated, shape
        (households, hi − lo) [kW]; ``same_day`` then does not simulate it again.

    Returns
    -------
    Estimates
        B̂ and P̂ over [lo, hi) [kW].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.2-6.4) and
       §6.3.1 ("Measurement").

    Examples
    --------
    Three households over the paper's program (18:30-20:30); the expected reduction
    Σ (B̂ − P̂) of each [kWh]:

    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}])
    >>> est = estimate(Population(s, 0, 3), 1110, 1230)
    >>> est.baseline_kw.shape
    (3, 120)
    >>> ((est.baseline_kw - est.expected_kw).sum(axis=1) / 60).round(3).tolist()
    [0.0, 1.05, 1.0]
    """
    return with_mv_error(estimate_exact(pop, lo, hi, sim, baseline_kw), pop)


def estimate_exact(pop: Population, lo: int = 0, hi: int = DAY,
                   sim: ChunkSimulator | None = None, baseline_kw: np.ndarray | None = None
                   ) -> Estimates:
    """Estimate B̂ and P̂ by the scenario's M&V method, without M&V error.

    ``same_day`` simulates the chunk's day with ``sim`` (the no-DR day and the day at full
    follow-through, combined by :func:`expected_response`); ``model`` takes the load
    model's expectation for each household's appliances, EV and θ_o; ``prior_days``
    averages other simulated days of the same households, like NAESB's "Baseline Type-I";
    ``x_of_y`` and ``regression`` are settlement-grade baselines from prior non-event
    days (module doc, :mod:`drsim.utility.settlement_baselines`). The methods are
    drsim's reading of the M&V the dissertation leaves open (docs/decisions.md, "M&V:
    the baseline and the expected complete response").

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households.
    lo, hi : int
        The minutes to estimate, ``hi`` excluded [minutes since midnight].
    sim : drsim.household.sim.ChunkSimulator, optional
        The chunk's simulator (``same_day``); a new simulator of ``pop`` if None.
    baseline_kw : numpy.ndarray, optional
        The day's no-DR load over [lo, hi) when it is already simulated, shape
        (households, hi − lo) [kW]; ``same_day`` then does not simulate it again.

    Returns
    -------
    Estimates
        B̂ and P̂ over [lo, hi) [kW].

    Raises
    ------
    ValueError
        If [lo, hi) is empty or not within the day [0, 1440).

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (Eq. 6.2-6.4) and
       §6.3.1 ("Measurement").
    .. [2] I. Richardson, M. Thomson, D. Infield, C. Clifford, "Domestic electricity
       use: A high-resolution energy demand model", Energy and Buildings 42(10),
       1878-1887, 2010 (the appliance starts the ``model`` method takes the expectation
       of).
    .. [3] NAESB WEQ-015, Measurement and Verification of Wholesale Electricity Demand
       Response, NAESB WEQ Business Practice Standards ("Baseline Type-I", the
       ``prior_days`` method).

    Examples
    --------
    The load model's expectation for three households over the program, B̂ and P̂ summed
    over the window [kWh]:

    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}],
    ...              baseline={"method": "model"})
    >>> est = estimate_exact(Population(s, 0, 3), 1110, 1230)
    >>> (est.baseline_kw.sum(axis=1) / 60).round(3).tolist()
    [1.37, 2.334, 4.193]
    >>> (est.expected_kw.sum(axis=1) / 60).round(3).tolist()
    [1.37, 1.619, 1.595]
    """
    if not 0 <= lo < hi <= DAY:
        raise ValueError(f"estimate window [{lo}, {hi}) outside the day [0, {DAY})")
    method = pop.scenario.baseline.method
    if method == "prior_days":
        return _prior_days(pop, pop.scenario.baseline.prior_days, lo, hi)
    if method == "model":
        return Estimates(*model_curves(pop, lo, hi), lo, hi)
    if method in SETTLEMENT_METHODS:
        return Estimates(*settlement_curves(pop, lo, hi), lo, hi)
    return _same_day(pop, sim or ChunkSimulator(pop), lo, hi, baseline_kw)


# --------------------------------------------------------------------------- same day
def expected_response(theta: np.ndarray, baseline_kw: np.ndarray, full_kw: np.ndarray
                      ) -> np.ndarray:
    r"""Estimate the expected complete response P̂ of households with follow-through θ.

    P̂_{k,t} is the estimated complete response Eq. 6.4 compares a household's metered
    load with. With B the load without DR and F the load when every decision follows
    through (θ = 1), it is the expectation over independent Bernoulli(θ) decisions, each
    of which keeps a start as in B or moves it as in F:

    .. math:: \hat P_{k,t} = (1 - \theta_k) \cdot B_{k,t} + \theta_k \cdot F_{k,t}

    The formula is drsim's reading (the dissertation gives no estimator): docs/decisions.md,
    "M&V: the baseline and the expected complete response".

    Parameters
    ----------
    theta : numpy.ndarray
        Follow-through θ_o of each household, shape (households,) [1].
    baseline_kw : numpy.ndarray
        B, the load without DR, shape (households, minutes) [kW].
    full_kw : numpy.ndarray
        F, the load at full follow-through, same shape [kW].

    Returns
    -------
    numpy.ndarray
        P̂, shape (households, minutes) [kW].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1, Eq. 6.3-6.4.

    Examples
    --------
    >>> expected_response(np.array([0.0, 0.5]), np.full((2, 2), 2.0), np.full((2, 2), 1.0))
    array([[2. , 2. ],
           [1.5, 1.5]])
    """
    theta = np.asarray(theta, dtype=np.float64)[:, None]
    return (1.0 - theta) * baseline_kw + theta * full_kw


def full_follow_through(scenario) -> list[DREvent]:
    """Return the scenario's program with every household following through on every decision.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario whose DR program is taken.

    Returns
    -------
    list of drsim.household.dr.DREvent
        The program's events with follow-through θ = 1 for every household.
    """
    return [DREvent(e.start, e.end, e.announced, follow_through=np.ones_like)
            for e in program_events(scenario)]


def _same_day(pop: Population, sim: ChunkSimulator, lo: int, hi: int,
              baseline_kw: np.ndarray | None) -> Estimates:
    base = sim.run([]).load(lo, hi) if baseline_kw is None else baseline_kw
    full = sim.run(full_follow_through(pop.scenario)).load(lo, hi)
    return Estimates(base, expected_response(pop.follow_through, base, full), lo, hi)


REPLICA_DAY_STRIDE = 1000  # counter offset of the days simulated as replicas (after the day)


def expected_replica(pop: Population, sim: ChunkSimulator, replica: int) -> ChunkRun:
    """Simulate one replica of the expected response over the schedule the M&V method assumes.

    ``same_day``: the evaluated day with independent follow-through decisions (decision
    stream ``replica``); any other method: another simulated day, one that is
    neither a prior day nor the evaluated one (day offset ``replica`` × 1000). The
    replicas are the samples from which the group threshold γ[groupID, time] of
    Listing 6.2 is estimated (:mod:`drsim.utility.threshold`; drsim's reading,
    docs/decisions.md, "The group threshold from the expected response").

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households.
    sim : drsim.household.sim.ChunkSimulator
        The chunk's simulator of the evaluated day.
    replica : int
        The replica, numbered from 1 (0 is the evaluated day itself).

    Returns
    -------
    drsim.household.sim.ChunkRun
        The replica's day under the scenario's DR program.

    Raises
    ------
    ValueError
        If ``replica`` < 1.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.2, Listing 6.2.

    Examples
    --------
    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}])
    >>> pop = Population(s, 0, 3)
    >>> expected_replica(pop, ChunkSimulator(pop), 1).load(1110, 1230).shape
    (3, 120)
    """
    if replica < 1:
        raise ValueError(f"replica {replica}: replicas are numbered from 1 (0 is the day)")
    events = program_events(pop.scenario)
    if pop.scenario.baseline.method == "same_day":
        return sim.run(events, decisions=replica)
    day = ChunkSimulator(pop, day_offset=replica * REPLICA_DAY_STRIDE)
    return day.run(events)


# --------------------------------------------------------------------------- M&V error
def mv_factors(pop: Population, lo: int, hi: int, replica: int = 0
               ) -> tuple[np.ndarray, np.ndarray]:
    """Draw the M&V error's factors of :func:`with_mv_error` over minutes [lo, hi).

    A household's factor comes from its own stream ``mv_error``, a minute's from
    ``mv_error_minute``; both are lognormal with mean 1 (:func:`lognormal_factor`) and
    coefficient of variation ``baseline.error`` and ``baseline.error_per_minute``
    (drsim's M&V error: docs/decisions.md, "M&V: the baseline and the expected complete
    response").

    Parameters
    ----------
    pop : drsim.household.population.Population
        The chunk's households.
    lo, hi : int
        The minutes, ``hi`` excluded [minutes since midnight].
    replica : int, default 0
        0 for the evaluated day's factors, > 0 for those of an independent replica.

    Returns
    -------
    household : numpy.ndarray
        Per household, shape (households,), 1 where the scenario has no error [1].
    minute : numpy.ndarray
        Per household and minute, shape (households, hi − lo), 1 where the scenario has
        no per-minute error [1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (B and P̂
       estimated by M&V).

    Examples
    --------
    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}],
    ...              baseline={"error": 0.1})
    >>> household, minute = mv_factors(Population(s, 0, 3), 1110, 1230)
    >>> household.round(4).tolist(), minute.shape, bool((minute == 1.0).all())
    ([1.155, 1.0759, 1.0393], (3, 120), True)
    """
    settings = pop.scenario.baseline
    seed, ids, extra = pop.scenario.seed, pop.ids, (replica,) if replica else ()
    household = lognormal_factor(rng.normal(seed, ids, "mv_error", *extra), settings.error) \
        if settings.error else np.ones(len(ids))
    minute = np.ones((len(ids), hi - lo))
    if settings.error_per_minute:
        minutes = np.arange(lo, hi)[None, :]
        z = rng.normal(seed, ids[:, None], "mv_error_minute", minutes, *extra)
        minute = lognormal_factor(z, settings.error_per_minute)
    return household, minute


def with_mv_error(est: Estimates, pop: Population, replica: int = 0) -> Estimates:
    """Apply the M&V error to exact estimates: B̂ and P̂ as the utility has them.

    B and P̂ of a household are multiplied by one factor f_k drawn from its own stream
    ``mv_error`` (and, per minute, by m_{k,t} from ``mv_error_minute``):
    ``B̂_{k,t} = f_k·m_{k,t}·B_{k,t}``, likewise P̂ (:func:`mv_factors`). The utility
    knows the error's size, not its realisation. drsim's M&V error: docs/decisions.md,
    "M&V: the baseline and the expected complete response".

    Parameters
    ----------
    est : Estimates
        The M&V method's estimates without error [kW].
    pop : drsim.household.population.Population
        The chunk's households (the scenario's ``baseline.error`` and
        ``baseline.error_per_minute``).
    replica : int, default 0
        0 for the evaluated day's factors, > 0 for those of an independent replica.

    Returns
    -------
    Estimates
        The estimates with the error [kW]; ``est`` itself when the scenario has none.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (B and P̂
       estimated by M&V).

    Examples
    --------
    With a 10 % error per household, each household's B̂ is its exact B times its factor:

    >>> from drsim.scenario import Scenario
    >>> s = Scenario(name="doc", seed=7, households=3, groups=[{"name": "g", "size": 3}],
    ...              baseline={"error": 0.1})
    >>> pop = Population(s, 0, 3)
    >>> exact = estimate_exact(pop, 1110, 1230)
    >>> (with_mv_error(exact, pop).baseline_kw / exact.baseline_kw)[:, 0].round(4).tolist()
    [1.155, 1.0759, 1.0393]
    """
    settings = pop.scenario.baseline
    if settings.error == 0.0 and settings.error_per_minute == 0.0:
        return est
    household, minute = mv_factors(pop, est.lo, est.hi, replica)
    factor = household[:, None] * minute
    return Estimates(est.baseline_kw * factor, est.expected_kw * factor, est.lo, est.hi)


# --------------------------------------------------------------------------- prior days
def _prior_days(pop: Population, n_days: int, lo: int, hi: int) -> Estimates:
    base = np.zeros((pop.size, hi - lo))
    expected = np.zeros((pop.size, hi - lo))
    events = program_events(pop.scenario)
    for k in range(1, n_days + 1):
        sim = ChunkSimulator(pop, day_offset=-k * PRIOR_DAY_STRIDE)
        base += sim.run([]).load(lo, hi)
        expected += sim.run(events).load(lo, hi)
    return Estimates(base / n_days, expected / n_days, lo, hi)
