"""The simulated day's month and day type (drsim.household.season): heating season, monthly
factors, lighting by daylight, weekend tables, and runs of summer and weekend days."""

from __future__ import annotations

import numpy as np
import pytest

import drsim
from drsim.household.appliances import FLEX_ADVANCE, FLEX_NONE, load_catalogue
from drsim.household.plan import ChunkPlan
from drsim.household.population import Population
from drsim.household.season import (
    DAY_TYPES,
    DAYS_IN_MONTH,
    day_catalogue,
    load_daylight,
    with_ownership,
    year_shares,
)
from drsim.scenario import scenario_from_dict

BASE = {"name": "season", "seed": 11, "households": 3000, "groups": [{"name": "g", "size": 3000}]}


@pytest.fixture(scope="module")
def cat():
    return load_catalogue()


def day(cat, month, day_type="weekday"):
    return day_catalogue(cat, load_daylight(), month, day_type)


def year_mean(cat, values_of) -> np.ndarray:
    """Mean over the days of a year of ``values_of(day catalogue)``."""
    return sum(share * values_of(day(cat, m + 1, day_type))
               for (m, t), share in np.ndenumerate(year_shares())
               for day_type in (DAY_TYPES[t],))


def test_year_shares_weigh_months_by_their_days():
    shares = year_shares()
    assert shares.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(shares.sum(axis=1) * 365, DAYS_IN_MONTH)
    np.testing.assert_allclose(shares[:, 0] / shares[:, 2], 5.0)


def test_the_yearly_mean_starts_are_the_catalogues(cat):
    """Weekend tables, monthly factors and daylight move starts between days, not across
    the year: every appliance without a heating-season rule keeps its yearly mean."""
    mean = year_mean(cat, lambda c: c.starts_per_day)
    plain = cat.monthly_factor.mean(axis=1) == pytest.approx(1.0)
    heating = ~np.isclose(cat.monthly_factor.mean(axis=1), 1.0)
    np.testing.assert_allclose(mean[plain], cat.starts_per_day[plain], rtol=1e-12)
    assert [cat.names[i] for i in np.flatnonzero(heating)] == ["storage_heater"]


def test_storage_heaters_follow_the_heating_season(cat):
    i = cat.index("storage_heater")
    by_month = [float(day(cat, m).starts_per_day[i]) for m in range(1, 13)]
    assert by_month == [1, 1, 1, 1, 0.5, 0, 0, 0, 0.5, 1, 1, 1]  # CREST's rule, whole months
    assert bool(cat.at_most_one[i]) and cat.at_most_one.sum() == 1


def test_a_winter_night_charges_every_storage_heater_once_and_summer_none():
    def charges(season):
        pop = Population(scenario_from_dict({**BASE, "season": season}), 0, 3000)
        heater = pop.catalogue.index("storage_heater")
        starts = ChunkPlan(pop).appliance_starts(FLEX_ADVANCE, 0)
        mine = starts.appliance == heater
        return pop.owns[:, heater], starts.row[mine], starts.t[mine]

    owners, rows, t = charges("winter")
    assert owners.sum() > 50
    assert sorted(rows.tolist()) == np.flatnonzero(owners).tolist()  # one charge each
    assert t.min() >= 0 and t.max() < 150  # started 00:00-02:30, the Economy 7 window
    assert len(charges("summer")[1]) == 0


def test_direct_heaters_take_the_monthly_factor(cat):
    i = cat.index("other_space_heating")
    starts = np.array([day(cat, m).starts_per_day[i] for m in range(1, 13)])
    np.testing.assert_allclose(starts / starts[0], cat.monthly_factor[i] / 1.63)
    assert cat.monthly_factor[i, 7] == pytest.approx(0.087)  # August: 0.087 (CREST)


def test_lighting_follows_daylight(cat):
    i = cat.index("lighting")
    january, july = day(cat, 1), day(cat, 7)
    assert january.starts_per_day[i] > 1.5 * july.starts_per_day[i]
    jan, jul = (c.starts_per_day[i] * c.start_pmf[i] for c in (january, july))  # per slot
    noon, evening = slice(72, 84), slice(108, 120)  # 12:00-14:00, 18:00-20:00
    assert jan[noon].sum() > 1.5 * jul[noon].sum()  # overcast winter noons
    assert jul[evening].sum() < 0.3 * jan[evening].sum()  # July evenings are light
    energy = year_mean(cat, lambda c: c.starts_per_day[i] * c.cycle_kwh[i])
    assert energy == pytest.approx(cat.daily_kwh[i])  # the yearly lighting energy is kept


def test_weekends_use_the_weekend_tables(cat):
    i = cat.index("washing_machine")
    weekday, saturday, sunday = day(cat, 1), day(cat, 1, "saturday"), day(cat, 1, "sunday")
    np.testing.assert_array_equal(saturday.start_pmf, sunday.start_pmf)
    np.testing.assert_allclose(saturday.start_pmf[i], cat.weekend_pmf[i])
    assert saturday.starts_per_day[i] / weekday.starts_per_day[i] == pytest.approx(
        cat.weekend_scale[i])
    assert cat.weekend_scale[i] > 1.1  # CREST: more laundry at weekends
    morning = slice(54, 72)  # 09:00-12:00: more people at home on a weekend
    assert saturday.start_pmf[i, morning].sum() > weekday.start_pmf[i, morning].sum()


def test_electric_heating_ownership_is_a_setting(cat):
    pop = Population(scenario_from_dict({**BASE, "appliances": {"electric_heating": {
        "storage_heaters": 0.5, "direct_heaters": 0.0}}}), 0, 3000)
    owns = pop.owns
    assert 0.45 < owns[:, cat.index("storage_heater")].mean() < 0.55
    assert not owns[:, cat.index("other_space_heating")].any()
    base = Population(scenario_from_dict(BASE), 0, 3000).owns
    others = [i for i in range(len(cat.names))
              if cat.names[i] not in ("storage_heater", "other_space_heating")]
    np.testing.assert_array_equal(owns[:, others], base[:, others])  # nothing else moves
    with pytest.raises(ValueError, match="no 'heat_pump'"):
        with_ownership(cat, {"heat_pump": 0.1})


@pytest.mark.parametrize("season, day_type", [("summer", "weekday"), (10, "saturday"),
                                              ("winter", "sunday")])
def test_summer_and_weekend_days_run(season, day_type):
    small = {**BASE, "households": 400, "groups": [{"name": "g", "size": 400}]}
    winter = drsim.simulate_households(scenario_from_dict(small), 0, 400, dr_events=[])
    s = scenario_from_dict({**small, "season": season, "day_type": day_type})
    kw = drsim.simulate_households(s, 0, 400, dr_events=[])
    assert kw.shape == (400, 1440) and np.isfinite(kw).all() and (kw >= 0).all()
    assert not np.array_equal(kw, winter)
    if season == "summer":  # no storage heating and less light
        night = slice(0, 300)
        assert kw[:, night].mean() < winter[:, night].mean()
        assert kw.sum() < winter.sum()


def test_non_flexible_starts_of_a_weekday_follow_the_day(cat):
    """The plan draws with the day's catalogue: a July weekday lights fewer lamps."""
    def lamps(season):
        pop = Population(scenario_from_dict({**BASE, "season": season}), 0, 3000)
        starts = ChunkPlan(pop).appliance_starts(FLEX_NONE, 0)
        return (starts.appliance == cat.index("lighting")).sum()

    assert lamps("summer") < 0.75 * lamps("winter")
