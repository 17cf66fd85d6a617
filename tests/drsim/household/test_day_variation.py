"""The common day factor (``day_variation``): shared by a region's or group's households on
a simulated day, another on other days, independent of chunking, off value for value."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import drsim
from drsim.household.appliances import FLEX_DEFERRABLE, FLEX_NONE
from drsim.household.day_variation import DayVariation
from drsim.household.plan import ChunkPlan
from drsim.household.population import Population
from drsim.household.sim import ChunkSimulator, program_events
from drsim.scenario import DayVariation as DayVariationSettings
from drsim.scenario import scenario_from_dict
from tests.small_scenarios import quickstart

ROOT = Path(__file__).resolve().parents[3]
EVENING = (17 * 60, 23 * 60)


@pytest.fixture(scope="module")
def scenario():
    return drsim.load_scenario(ROOT / "drsim/data/scenarios" / "quickstart.yaml")


def varied(scenario, **settings):
    """``scenario`` with ``day_variation`` set to ``settings``."""
    return scenario.model_copy(update={"day_variation": DayVariationSettings(**settings)})


def loads(scenario, first: int, count: int, day_offset: int = 0) -> np.ndarray:
    """The households' loads of the no-DR day and of the program's day [µkW]."""
    sim = ChunkSimulator(Population(scenario, first, count), day_offset=day_offset)
    return np.stack([sim.run([]).load_micro_kw(), sim.run(program_events(scenario))
                     .load_micro_kw()])


def test_off_leaves_every_load_unchanged(scenario):
    """cv 0 (with a timing and per-group keys that would act if it were on) and the
    scenario without the key: the same loads, value for value, on any simulated day."""
    off = varied(scenario, cv=0.0, timing_minutes=30.0, by_group=True)
    assert not off.day_variation.active
    for day_offset in (0, -1000):
        assert np.array_equal(loads(scenario, 0, 150, day_offset), loads(off, 0, 150, day_offset))
    day = DayVariation(Population(off, 0, 150))
    mean = np.linspace(0.0, 3.0, day.apps)
    index = day.pair_index(np.arange(150), np.zeros(150, dtype=np.int64))
    assert np.array_equal(day.start_means(mean, 5)[index], np.full(150, mean[0]))
    assert day.lead_minutes == 0 and not day.shift(5).any()


def test_on_changes_the_loads(scenario):
    on = varied(scenario, cv=0.3, timing_minutes=20.0)
    assert not np.array_equal(loads(scenario, 0, 100), loads(on, 0, 100))


def test_households_of_a_group_share_the_days_factor(scenario):
    """Two households of a group, in different chunks, get the same level and shift;
    by_group gives the groups factors of their own, without it the region has one."""
    groups = varied(scenario, cv=0.3, timing_minutes=20.0, by_group=True)
    pop = Population(groups, 0, groups.households)
    a, b = np.flatnonzero(pop.group == 0)[[0, -1]]
    day_a, day_b = DayVariation(Population(groups, a, 1)), DayVariation(Population(groups, b, 1))
    for counter in (0, -1, -1000, 7):
        assert np.array_equal(day_a.level(counter), day_b.level(counter))
        assert np.array_equal(day_a.shift(counter), day_b.shift(counter))
    whole = DayVariation(pop)
    levels = whole.level(0)[whole.key_of_row]
    assert len(np.unique(levels)) == len(groups.groups)  # one per group
    assert np.array_equal(np.unique(levels[pop.group == 0]), day_a.level(0))
    region = DayVariation(Population(varied(scenario, cv=0.3), 0, groups.households))
    assert len(region.level(0)) == 1


def test_starts_move_by_the_days_shift(scenario):
    """A start of an appliance the level does not scale keeps its count and moves by the
    day's shift, which differs between the evaluated day and a prior day."""
    on = varied(scenario, cv=0.3, timing_minutes=30.0)
    shifts = []
    for day_offset in (0, -1000, -2000):
        off_plan = ChunkPlan(Population(scenario, 0, 200), day_offset)
        on_plan = ChunkPlan(Population(on, 0, 200), day_offset)
        shift = on_plan.variation.shift(day_offset)[0]
        for flex in (FLEX_DEFERRABLE, FLEX_NONE):
            before, after = off_plan.appliance_starts(flex, 0), on_plan.appliance_starts(flex, 0)
            scaled = on_plan.variation.scaled[before.appliance]
            order = np.lexsort((before.j, before.appliance, before.row))
            kept = order[~scaled[order]]
            order_on = np.lexsort((after.j, after.appliance, after.row))
            kept_on = order_on[~on_plan.variation.scaled[after.appliance[order_on]]]
            assert np.array_equal(after.row[kept_on], before.row[kept])
            assert np.array_equal(after.t[kept_on], before.t[kept] + shift)
        shifts.append(shift)
    assert len(set(shifts)) > 1


def test_prior_days_draw_other_factors(scenario):
    on = varied(scenario, cv=0.3, timing_minutes=20.0)
    day = ChunkPlan(Population(on, 0, 10), day_offset=0).variation
    levels = [float(day.level(day_offset)[0]) for day_offset in (0, -1000, -2000, 1000)]
    assert len(set(levels)) == len(levels)
    assert levels[0] == float(ChunkPlan(Population(on, 5, 5), 0).variation.level(0)[0])


def test_loads_do_not_depend_on_chunking(scenario):
    on = varied(scenario, cv=0.3, timing_minutes=20.0, by_group=True)
    for day_offset in (0, -1000):
        whole = loads(on, 180, 60, day_offset)
        parts = np.concatenate([loads(on, 180, 23, day_offset), loads(on, 203, 37, day_offset)],
                               axis=1)
        assert np.array_equal(whole, parts)


def evening_cv(scenario, households: int, days: int) -> float:
    """Day-to-day coefficient of variation of the households' summed 17:00-23:00 energy."""
    pop = Population(scenario, 0, households)
    totals = [ChunkSimulator(pop, day_offset=-1000 * k).run([], until=EVENING[1])
              .load(*EVENING).sum() for k in range(days)]
    return float(np.std(totals, ddof=1) / np.mean(totals))


def test_the_aggregates_day_to_day_variation_rises_with_cv(scenario):
    """Over the same days (common random numbers) a larger cv moves the aggregate more:
    the independent draws' part stays, the shared factor's grows with cv."""
    cvs = [evening_cv(varied(scenario, cv=cv, timing_minutes=15.0), 300, 12)
           for cv in (0.0, 0.2, 0.5)]
    assert cvs[0] < cvs[1] < cvs[2]
    assert cvs[2] > 1.5 * cvs[0]


def test_the_key_is_off_by_default_and_checked(scenario):
    assert not scenario.day_variation.active
    paper = drsim.load_scenario(ROOT / "drsim/data/scenarios" / "paper_100k.yaml")
    assert not paper.day_variation.active
    for bad in ({"cv": -0.1}, {"cv": 1.5}, {"timing_minutes": -1}, {"lag": 2}):
        data = {"name": "x", "seed": 1, "households": 2, "groups": [{"name": "g", "size": 2}],
                "day_variation": bad}
        with pytest.raises(drsim.ScenarioError, match="day_variation"):
            scenario_from_dict(data)


def test_a_run_reads_the_factor_through_the_household_simulation():
    """A whole serial run with the factor on and prior-day M&V: it runs, and its day and
    its prior days are other days than without the factor."""
    data = quickstart(600, method="prior_days", prior_days=2)
    summaries = []
    for variation in ({}, {"cv": 0.3, "by_group": True}):
        data["day_variation"] = variation
        summaries.append(drsim.run(scenario_from_dict(data), backend="serial").summary)
    off, on = (s["reduction_mwh"]["expected"] for s in summaries)
    assert off > 0 and on > 0 and off != on
