"""Invariants of the household simulation (issue: household and EV load simulation)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import drsim
from drsim.household.appliances import FLEX_ADVANCE, FLEX_DEFERRABLE
from drsim.household.dr import DREvent
from drsim.household.ev import session_energy_kwh
from drsim.household.population import Population, inclusion_probabilities
from drsim.household.sim import (
    MAX_UNTIL,
    ChunkSimulator,
    program_events,
    simulate_households,
)
from drsim.scenario import load_scenario
from drsim.units import DAY, MICRO

ROOT = Path(__file__).resolve().parents[3]
WIDE = (-3 * DAY, 5 * DAY)  # wide enough to hold every cycle and the rebound


@pytest.fixture(scope="module")
def scenario():
    return drsim.load_scenario(ROOT / "drsim/data/scenarios" / "quickstart.yaml")


@pytest.fixture(scope="module")
def sim(scenario):
    return ChunkSimulator(Population(scenario, 0, 400))


def test_shape_dtype_and_plausible_energy(scenario):
    kw = drsim.simulate_households(scenario, 0, 50)
    assert kw.shape == (50, 1440) and kw.dtype == np.float32
    assert (kw >= 0).all()
    daily_kwh = kw.sum(axis=1) / 60
    assert 1.0 < np.median(daily_kwh) < 40.0


def test_bit_identical_for_any_chunking(scenario):
    whole = drsim.simulate_households(scenario, 100, 60)
    parts = np.concatenate(
        [drsim.simulate_households(scenario, 100, 17), drsim.simulate_households(scenario, 117, 43)]
    )
    assert np.array_equal(whole, parts)


def test_rendered_minute_by_minute_the_same_loads(sim):
    """ChunkRun.load(minute_major=True), simulate_households' render: the same values as
    the row-by-row render, in Fortran order; the same per household however many there
    are."""
    run = sim.run(program_events(sim.pop.scenario))
    for lo, hi, dtype in ((0, DAY, np.float32), (1110, 1230, np.float64), (-60, 30, np.float64)):
        by_row = run.load(lo, hi, dtype)
        by_minute = run.load(lo, hi, dtype, minute_major=True)
        assert by_minute.flags.f_contiguous and by_minute.dtype == dtype
        assert np.array_equal(by_row, by_minute)
    kw = drsim.simulate_households(sim.pop.scenario, 0, 400)
    assert np.array_equal(kw, run.load(dtype=np.float32))


def test_seed_changes_the_loads(scenario):
    a = drsim.simulate_households(scenario, 0, 20)
    b = drsim.simulate_households(scenario.model_copy(update={"seed": scenario.seed + 1}), 0, 20)
    assert not np.array_equal(a, b)


def test_energy_conserved_under_deferral(sim):
    """Deferred energy is not lost: the same energy over a horizon that holds the rebound."""
    no_dr = sim.run([], until=MAX_UNTIL).load_micro_kw(*WIDE).sum(axis=1)
    dr = sim.run(program_events(sim.pop.scenario), until=MAX_UNTIL)
    dr = dr.load_micro_kw(*WIDE).sum(axis=1)
    assert not np.array_equal(
        sim.run([]).load_micro_kw(), sim.run(program_events(sim.pop.scenario)).load_micro_kw()
    )
    # whole µkW per rectangle; a paused EV session is split into two rectangles
    assert np.allclose(dr, no_dr, rtol=0, atol=4.0 * 1440)
    assert abs(dr.sum() - no_dr.sum()) / no_dr.sum() < 1e-6


def test_dr_lowers_the_window_and_rebounds_after(sim):
    scenario = sim.pop.scenario
    base = sim.run([]).load().sum(axis=0)
    dr = sim.run(program_events(scenario)).load().sum(axis=0)
    s, e = scenario.dr_program.start_minute, scenario.dr_program.end_minute
    assert dr[s:e].sum() < 0.97 * base[s:e].sum()
    assert dr[e : e + 120].sum() > base[e : e + 120].sum()


def test_second_event_replays_first_until_its_announcement(sim):
    """Minute by minute, nothing changes before the second event is announced."""
    first = [drsim.DREvent("18:30", "20:30")]
    both = first + [drsim.DREvent("19:21", "20:30", announced="19:11", follow_through=2.0)]
    a = sim.run(first).load_micro_kw()
    b = sim.run(both).load_micro_kw()
    announce = 19 * 60 + 11
    assert np.array_equal(a[:, :announce], b[:, :announce])
    assert not np.array_equal(a[:, announce:], b[:, announce:])


def test_households_react_from_the_announcement_not_before(scenario):
    """Pre-cooling shifts load into [announcement, start); nothing moves earlier."""
    cat = Population(scenario, 0, 1).catalogue
    assert (cat.flexibility == FLEX_ADVANCE).any()
    pop = Population(scenario, 0, 2000)
    sim = ChunkSimulator(pop)
    event = [drsim.DREvent("18:30", "20:30", announced="16:00", follow_through=2.0)]
    run = sim.run(event)
    assert [(t, kind) for t, kind, _ in run.signal_log] == [
        (16 * 60, "announce"), (18 * 60 + 30, "start"), (20 * 60 + 30, "end")
    ]
    diff = run.load_micro_kw() - sim.run([]).load_micro_kw()
    changed = np.nonzero(np.abs(diff).sum(axis=0) > 0)[0]
    assert changed.min() >= 16 * 60
    assert np.abs(diff[:, 16 * 60 : 18 * 60 + 30]).sum() > 0


def test_deferrable_starts_leave_the_window(sim):
    """With θ = 1 no deferrable appliance or EV starts inside the event."""
    scenario = sim.pop.scenario
    run = sim.run([drsim.DREvent("18:30", "20:30", follow_through=lambda th: np.ones_like(th))])
    s, e = scenario.dr_program.start_minute, scenario.dr_program.end_minute
    flex = sim.pop.catalogue.flexibility[run.appliances.appliance]
    inside = (run.appliances.t >= s) & (run.appliances.t < e)
    assert not (inside & (flex == FLEX_DEFERRABLE)).any()
    assert not ((run.ev.t >= s) & (run.ev.t < e)).any()
    assert (inside & (flex != FLEX_DEFERRABLE)).any()  # the rest goes on


def test_ev_energy_is_delta_soc_times_capacity_over_efficiency(sim):
    run = sim.run([], until=MAX_UNTIL)
    data = sim.pop.ev_data
    assert np.all(run.ev.energy_kwh > 0)
    assert np.all(run.ev.energy_kwh <= data.battery_kwh.values.max() / data.efficiency + 1e-9)
    e = session_energy_kwh(np.array([0.2, 0.9]), np.array([0.8, 0.5]), 40.0, 0.9)
    assert np.allclose(e, [0.6 * 40 / 0.9, 0.0])
    rendered = run.load_by_category(*WIDE)["ev"].sum() / MICRO / 60
    assert rendered == pytest.approx(run.ev.energy_kwh.sum(), rel=1e-6)


def test_appliance_counts_and_ownership(scenario):
    pop = Population(scenario, 0, 3000)
    cat = pop.catalogue
    drawn = (pop.owns & cat.drawn).sum(axis=1)
    lo, hi = scenario.appliances.per_household_min, scenario.appliances.per_household_max
    assert drawn.min() >= lo and drawn.max() <= hi
    assert set(np.unique(drawn)) == set(range(lo, hi + 1))
    assert pop.owns[:, cat.always_owned].all()
    freq = pop.owns.mean(axis=0)
    table = inclusion_probabilities(np.where(cat.drawn, cat.ownership, 0.0), hi)
    expected = table[lo : hi + 1].mean(axis=0)  # the count is uniform on lo..hi
    assert np.allclose(table[lo : hi + 1].sum(axis=1), np.arange(lo, hi + 1))
    drawn = cat.drawn & (cat.ownership > 0)
    assert np.all(np.abs(freq[drawn] - expected[drawn]) < 4.5 * np.sqrt(0.25 / 3000))
    # inclusion in proportion to ownership while no appliance is sure to be drawn
    ratio = table[lo][drawn] / cat.ownership[drawn]
    assert np.allclose(ratio, ratio[0])
    alone = ~cat.drawn & ~cat.always_owned
    assert np.all(np.abs(freq[alone] - cat.ownership[alone]) < 4 * np.sqrt(0.25 / 3000))
    ev_share = pop.has_ev.mean()
    assert abs(ev_share - scenario.ev.penetration) < 4 * np.sqrt(0.25 / 3000)


def test_start_times_follow_the_catalogue_curve(scenario):
    """Chi-square test of the planned start slots against each appliance's curve."""
    sim = ChunkSimulator(Population(scenario, 0, 2000))
    cat = sim.pop.catalogue
    starts = sim.plan.appliance_starts(FLEX_DEFERRABLE, 0)
    checked = 0
    for a in np.unique(starts.appliance):
        t = starts.t[starts.appliance == a]
        if len(t) < 400:
            continue
        slots = (t // 60) % 24  # hourly bins keep expected counts large enough
        observed = np.bincount(slots, minlength=24)
        expected = cat.start_pmf[a].reshape(24, 6).sum(axis=1) * len(t)
        keep = expected > 5
        obs, exp = observed[keep], expected[keep]
        assert observed[~keep].sum() <= max(10, 3 * expected[~keep].sum())
        p = stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue
        assert p > 1e-4, cat.names[a]
        checked += 1
    assert checked >= 1


def test_processes_are_per_class_not_per_household(scenario, monkeypatch):
    """The number of SimPy processes does not grow with the chunk's households."""
    import simpy

    created = []
    init = simpy.Process.__init__

    def counting(self, env, generator):
        created.append(generator)
        init(self, env, generator)

    monkeypatch.setattr(simpy.Process, "__init__", counting)
    counts = []
    for n in (10, 500):
        created.clear()
        ChunkSimulator(Population(scenario, 0, n)).run(program_events(scenario))
        counts.append(len(created))
    assert counts[0] == counts[1] <= 8


@pytest.mark.parametrize("options, problem", [
    ({"follow_through": -1.0}, "outside [0, 2]"),
    ({"follow_through": 50.0}, "outside [0, 2]"),
    ({"follow_through": float("nan")}, "outside [0, 2]"),
    ({"follow_through": "half"}, "expected None, a number or a function"),
    ({"follow_through": True}, "expected None, a number or a function"),
    ({"start": "25:00"}, "DREvent.start: expected a clock time"),
    ({"end": 2000}, "DREvent.end: 2000 is not a minute of the day"),
    ({"start": "20:30", "end": "18:30"}, "must be after start"),
    ({"announced": "19:00"}, "announced 19:00 after start 18:30"),
])
def test_a_dr_event_that_cannot_be_resolved_is_refused_when_made(options, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        DREvent(**options)


def test_simulate_households_takes_a_scenario_or_its_file_and_nothing_else():
    from_file = simulate_households(str(ROOT / "drsim/data/scenarios" / "quickstart.yaml"), 10, 3)
    scenario = load_scenario(ROOT / "drsim/data/scenarios" / "quickstart.yaml")
    np.testing.assert_array_equal(from_file, simulate_households(scenario, 10, 3))
    with pytest.raises(TypeError, match="must be a drsim Scenario or the path"):
        simulate_households({"name": "x"}, 0, 1)
    with pytest.raises(TypeError, match="count must be an integer"):
        simulate_households(scenario, 0, 2.5)
