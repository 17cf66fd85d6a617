"""The models that scripts/compare_load_profiles.py sets side by side (drsim's households,
BDEW H0, CREST through richardsonpy), the reductions of their curves and the comparison;
:mod:`experiments.compare_load_profiles` says what is compared and how."""

from __future__ import annotations

import bisect
import calendar
import copy
import itertools
import random
import time
import warnings
from datetime import date
from pathlib import Path

import numpy as np

from experiments.crest_model import DAY, appliance_names, crest_appliances, crest_load, is_weekend

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "drsim/data/scenarios" / "paper_100k.yaml"
FIGURES = REPO / "results" / "load_profiles"  # default folder of the figure
YEAR = 2018  # not a leap year; 1 January 2018 was a Monday, as day 1 of richardsonpy's year
Q = 96  # quarter-hours a day
NIGHT = (0, 5 * 60)  # [00:00, 05:00)
DR_WINDOW = (18 * 60 + 30, 20 * 60 + 30)  # [18:30, 20:30), paper_100k's DR program
BOOTSTRAP = 500  # resamples of households for the intervals

SPACE_HEATING = ("storage_heater", "other_space_heating")  # drsim catalogue names
WATER_HEATING = ("storage_water_heater", "instantaneous_water_heater")
# What subset (b) lacks, in richardsonpy's Appliances.csv (the electric shower stays: drsim's
# subset (b) keeps its electric showers too).
CREST_HEATING = ("DESWH", "E-INST", "Storage heaters", "Other electric space heating")
CREST_STORAGE = "Storage heaters"
# CREST's default shares of dwellings with 1..5 residents in the UK (mean 2.08 residents):
# CREST Demand Model v2.3.3 workbook, sheet ActivityStats, "Probability of dwelling having
# this number of residents, in the UK" (read from the sheet as exported to CSV in the public
# repository kerspoon/CREST, excel/monte_carlo_base_fixed/ActivityStats.csv).
CREST_RESIDENT_SHARES = (0.339045531533327, 0.401115871276278, 0.137092756799841,
                         0.0880741257347813, 0.0346717146557736)
CREST_BULB_SETS = 100  # rows of richardsonpy's inputs/LightBulbs.csv

# Reference figures (kWh per household and year), each with its source. "verified" means the
# figure was found in the cited page (stored copies searched when the figures were collected).
REFERENCES = (
    ("Ofgem TDCV, electricity profile class 1, medium (from 2023)", 2700, "verified",
     "Ofgem, 'Average gas and electricity usage', ofgem.gov.uk/average-gas-and-electricity-"
     "usage: 'the typical household in England, Scotland and Wales uses 2,700 kWh of "
     "electricity'"),
    ("Ofgem TDCV, electricity profile class 1, low (from 2023)", 1800, "not verified",
     "Ofgem's TDCV page gives low 1,800 for the values in force from 1 April 2020"),
    ("Ofgem TDCV, electricity profile class 1, high (from 2023)", 4100, "not verified",
     "not found; the April-2020 high value on Ofgem's TDCV page is 4,300"),
    ("Household Electricity Survey 2010-11, mean", 4093, "not verified",
     "not found; the survey: 250 owner-occupier households in England, 2010-11"),
)
HES_PROFILE = ("Household Electricity Survey 2010-11, mean 24-h profile (a year's mean)",
               "just over 0.2 kW overnight, more than 0.7 kW from 18:00 to 20:00", "verified",
               "Cambridge Architectural Research, Household Electricity Survey (DECC) project "
               "page, cambridgeenergy.org.uk/project/household-electricity-survey-decc")



def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def days_of(month: int, day_type: str) -> np.ndarray:
    """Days of the year 2018 (1-based; = richardsonpy's, day 1 a Monday) in ``month`` with
    ``day_type``: weekday = Monday-Friday, saturday = day % 7 == 6, sunday = day % 7 == 0."""
    first = date(YEAR, month, 1).timetuple().tm_yday
    doy = np.arange(first, first + calendar.monthrange(YEAR, month)[1])
    weekday = doy % 7
    keep = {"weekday": (weekday >= 1) & (weekday <= 5), "saturday": weekday == 6,
            "sunday": weekday == 0}[day_type]
    assert all(is_weekend(int(d)) == (day_type != "weekday") for d in doy[keep])
    return doy[keep]


# --------------------------------------------------------------------------- reductions
def quarter_hours(curves: np.ndarray) -> np.ndarray:
    """(..., 1440) 1-minute curves -> (..., 96) quarter-hour means."""
    return curves.reshape(*curves.shape[:-1], Q, DAY // Q).mean(axis=-1)


def hourly(curves: np.ndarray) -> np.ndarray:
    """(..., 96) quarter-hour curves -> (..., 24) hourly means."""
    return curves.reshape(*curves.shape[:-1], 24, 4).mean(axis=-1)


def row_r(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson's r of each row of ``a`` with the matching row of ``b`` (or with ``b``)."""
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    return (a * b).sum(axis=-1) / np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))


def boot_weights(n: int, rng: np.random.Generator) -> np.ndarray:
    """(BOOTSTRAP, n) weights of households resampled with replacement (counts / n)."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=BOOTSTRAP) / n


def window_mean(curves: np.ndarray, window: tuple[int, int]) -> np.ndarray:
    lo, hi = window
    return curves[..., lo:hi].mean(axis=-1)


def summary(curves: np.ndarray, rng: np.random.Generator) -> dict:
    """Figures of (households, 1440) curves in kW (CREST: each household's mean day)."""
    n = len(curves)
    daily = curves.sum(axis=1) / 60.0
    night, evening = window_mean(curves, NIGHT), window_mean(curves, DR_WINDOW)
    w = boot_weights(n, rng)
    return {
        "n": n,
        "kwh": float(daily.mean()),
        "kwh_se": float(daily.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"),
        "night": float(night.mean()), "night_ci": tuple(np.percentile(w @ night, [2.5, 97.5])),
        "dr": float(evening.mean()), "dr_ci": tuple(np.percentile(w @ evening, [2.5, 97.5])),
        "curve": curves.mean(axis=0),
        "q": quarter_hours(curves),  # (n, 96), for the bootstrap of r
    }


def profile_figures(q96: np.ndarray) -> dict:
    """The same figures for one fixed quarter-hour curve in kW (BDEW)."""
    qn, qd = NIGHT[0] // 15, NIGHT[1] // 15
    q0, q1 = DR_WINDOW[0] // 15, DR_WINDOW[1] // 15
    return {"n": None, "kwh": float(q96.sum() / 4), "night": float(q96[qn:qd].mean()),
            "dr": float(q96[q0:q1].mean()), "q96": q96}


# --------------------------------------------------------------------------- drsim
def scenario_data() -> dict:
    """paper_100k.yaml as a mapping, read with drsim's strict YAML loader (as load_scenario)."""
    from drsim.scenario import ScenarioError, read_yaml

    return read_yaml(SCENARIO, ScenarioError, "scenario")


def make_scenario(data: dict, season: str | int, day_type: str,
                  storage_heaters: float | None = None):
    """The scenario of ``data`` for ``season`` (a season or a month) and ``day_type``, and
    the share of households with storage heaters if given."""
    from drsim.scenario import scenario_from_dict

    d = copy.deepcopy(data)
    d["season"] = season
    d["day_type"] = day_type
    if storage_heaters is not None:
        heating = d.setdefault("appliances", {}).setdefault("electric_heating", {})
        heating["storage_heaters"] = storage_heaters
    return scenario_from_dict(d, source=SCENARIO.name)


def household_groups(scenario, n: int) -> dict:
    """Masks of the groups: all, (b) no EV and no electric space or water heating."""
    from drsim.household.population import Population

    pop = Population(scenario, 0, n)
    owns = np.asarray(pop.owns, dtype=bool)
    index = pop.catalogue.index
    heating = owns[:, [index(a) for a in SPACE_HEATING + WATER_HEATING]].any(axis=1)
    has_ev = np.asarray(pop.has_ev, dtype=bool)
    return {"has_ev": has_ev, "heating": heating, "b": ~has_ev & ~heating,
            "storage_owner": owns[:, index("storage_heater")]}


def movable_kw(scenario, n: int) -> float:
    """Mean load per household in the DR window that DR can move [kW]: the planned cycles
    of the deferrable and shiftable-in-advance appliances (wet appliances, storage water
    heating, storage heaters) and the EV charging sessions, without DR."""
    from drsim.household.population import Population
    from drsim.household.sim import ChunkSimulator

    run = ChunkSimulator(Population(scenario, 0, n)).run([])
    return float(run.movable_load_kw(*DR_WINDOW).mean()) / n


def run_drsim(data: dict, season: str | int, day_type: str, n: int) -> dict:
    import drsim

    t0 = time.perf_counter()
    scenario = make_scenario(data, season, day_type)
    if n > scenario.households:
        raise SystemExit(f"--households {n} exceeds the {scenario.households} households of "
                         f"{SCENARIO.name}")
    kw, sim_s = timed(drsim.simulate_households, scenario, 0, n, dr_events=[])
    no_storage = make_scenario(data, season, day_type, storage_heaters=0.0)
    kw0 = drsim.simulate_households(no_storage, 0, n, dr_events=[])
    groups = household_groups(scenario, n)
    kw, kw0 = np.asarray(kw, dtype=np.float64), np.asarray(kw0, dtype=np.float64)
    diff = kw - kw0
    changed = (diff != 0).any(axis=1)
    return {"scenario": scenario, "kw": kw, "kw0": kw0, "storage": diff, **groups,
            "movable_kw": movable_kw(scenario, n),
            "changed": int(changed.sum()),
            "changed_owners": bool((~changed | groups["storage_owner"]).all()),
            "diff_min": float(diff.min()), "sim_s": sim_s,
            "wall_s": time.perf_counter() - t0}


# --------------------------------------------------------------------------- BDEW H0
def elec_slp(year: int):
    """demandlib's ``bdew.ElecSlp(year)``.

    Its constructor sets ``warnings.simplefilter("error")`` for the whole process; with
    pandas >= 3 that turns pandas' deprecation warnings about demandlib's own
    ``inplace=True`` calls into exceptions. While it runs, that filter becomes "ignore";
    all filters are restored afterwards.
    """
    from demandlib import bdew

    real = warnings.simplefilter

    def no_error(action, *args, **kwargs):
        real("ignore" if action == "error" else action, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter = no_error
        try:
            return bdew.ElecSlp(year)
        finally:
            warnings.simplefilter = real


def run_bdew(month: int, day_type: str) -> dict:
    """BDEW H0 (static, demandlib's "h0") in kW for 1,000 kWh/a: the month's mean day."""
    import pandas as pd
    from demandlib.bdew.elec_slp import dynamisation_function

    t0 = time.perf_counter()
    slp = elec_slp(YEAR)
    h0 = slp.get_scaled_power_profiles({"h0": 1000.0})["h0"]  # = get_profile({"h0": 1000})
    dyn = slp.get_scaled_power_profiles({"h0_dyn": 1000.0})["h0_dyn"]
    index = pd.DatetimeIndex(h0.index)
    days = days_of(month, day_type)
    chosen = np.isin(index.day_of_year, days)
    expected = {"weekday": {0, 1, 2, 3, 4}, "saturday": {5}, "sunday": {6}}[day_type]
    assert set(np.unique(index.day_of_week[chosen])) == expected  # the same calendar
    factor = dynamisation_function(index).to_numpy()[chosen]
    return {"q96": h0.to_numpy()[chosen].reshape(-1, Q).mean(axis=0),
            "dyn96": dyn.to_numpy()[chosen].reshape(-1, Q).mean(axis=0),
            "days": days, "factor": (float(factor.min()), float(factor.max())),
            "annual_check": float(h0.sum() / 4), "wall_s": time.perf_counter() - t0}


# --------------------------------------------------------------------------- CREST
def crest_plan(days: np.ndarray, per_household: int, households: int) -> list[list[int]]:
    """Each household's days: ``per_household`` of ``days`` in turn, cyclically."""
    k = min(per_household, len(days))
    return [sorted(int(days[(h * k + j) % len(days)]) for j in range(k))
            for h in range(households)]


def crest_household(seed: int, days: list[int], irradiance: np.ndarray,
                    exclude: tuple[str, ...], minute_irradiance: bool):
    """One CREST household: (occupants, (days, 1440) load in W)."""
    import richardsonpy.classes.occupancy as occ

    draw = random.Random(seed)  # household attributes, apart from the model's own stream
    cum = list(itertools.accumulate(CREST_RESIDENT_SHARES))
    occupants = min(1 + bisect.bisect_right(cum, draw.random() * cum[-1]), 5)
    bulb_set = draw.randrange(CREST_BULB_SETS)

    random.seed(seed)
    np.random.seed(seed)
    first, last = days[0], days[-1]
    occupancy = occ.Occupancy(number_occupants=occupants, initial_day=(first - 1) % 7 + 1,
                              nb_days=last - first + 1).occupancy
    load = crest_load(occupancy, occupants, first, days, irradiance, bulb_set,
                      exclude=exclude, minute_irradiance=minute_irradiance)
    return occupants, load


def run_crest(plan: list[list[int]], irradiance: np.ndarray, exclude: tuple[str, ...],
              minute_irradiance: bool) -> dict:
    t0 = time.perf_counter()
    occupants = np.empty(len(plan), dtype=int)
    mean_days = np.empty((len(plan), DAY))
    for h, days in enumerate(plan):
        occupants[h], load = crest_household(h + 1, days, irradiance, exclude,
                                             minute_irradiance)
        mean_days[h] = load.mean(axis=0) / 1000.0  # the household's mean day, kW
    return {"kw": mean_days, "occupants": occupants, "wall_s": time.perf_counter() - t0,
            "household_days": sum(map(len, plan))}


def check_richardsonpy(irradiance: np.ndarray, days: np.ndarray) -> dict:
    """Check richardsonpy's defects: storage heaters, prev_heat_dev, lighting irradiance."""
    import richardsonpy
    import richardsonpy.classes.appliance as app_model
    import richardsonpy.classes.stochastic_el_load_wrapper as wrapper

    names = appliance_names()
    storage = names.index(CREST_STORAGE)
    # 1. Storage heaters owned by five households on five January weekdays (the heart of
    #    the heating season), three occupants active all day: their draw.
    peak, charges = 0.0, 0
    wrapper.ElectricityProfile(crest_appliances(1), [])  # loads the activity statistics
    stats = wrapper.ElectricityProfile.activity_statistics["wd"]
    for seed in range(1, 6):
        random.seed(seed)
        np.random.seed(seed)
        app = crest_appliances(3)
        app.data[storage][0] = 1  # owns storage heaters
        for _ in range(5):
            result = app_model.run_application_simulation(np.full(144, 3), app, stats,
                                                          iMonth=1)
            peak = max(peak, float(np.max(result[storage])))
            charges += int(np.any(np.asarray(result[storage]) > 0))
    try:
        app_model.date_add(113, [14, 1, 1997])
        date_add = "returns"
    except TypeError as exc:
        date_add = f"raises TypeError ({exc})"

    # 2. What prev_heat_dev=True removes, with every appliance owned beforehand.
    class AllOwned(app_model.Appliances):
        def randomize(self):
            for row in self.data:
                row[0] = 1

    inputs = Path(richardsonpy.__file__).parent / "inputs"
    prevented = AllOwned(str(inputs / "Appliances.csv"), randomize_appliances=True,
                         prev_heat_dev=True)
    removed = [names[i] for i, row in enumerate(prevented.data) if row[0] == 0]

    # 3. The irradiance ElectricLoad passes the lighting model on the chosen days.
    minutes = np.arange(DAY)
    day_irr = np.stack([irradiance[DAY * (d - 1): DAY * d] for d in days])
    passed = np.stack([np.interp(minutes, 60 * minutes, row) for row in day_irr])
    return {"storage_peak_w": peak, "storage_days_on": charges, "storage_days": 25,
            "date_add": date_add, "prev_heat_dev": removed,
            "irr_passed_max": float(passed.max()), "irr_max": float(day_irr.max())}


# --------------------------------------------------------------------------- comparison
def compare(d_q: np.ndarray, ref_q: np.ndarray, rng: np.random.Generator,
            d_boot: np.ndarray | None = None, ref_boot: np.ndarray | None = None) -> dict:
    """Shape comparison of a drsim quarter-hour curve with a reference's.

    The reference is scaled to the drsim curve's daily mean; ``d_boot`` / ``ref_boot`` are
    per-household (n, 96) curves for the bootstrap standard error of r (households resampled
    on both sides; a fixed reference: None).
    """
    scale = d_q.mean() / ref_q.mean()
    out = {"scale": float(scale), "ref_q": ref_q * scale,
           "r96": float(row_r(d_q, ref_q)), "r24": float(row_r(hourly(d_q), hourly(ref_q)))}
    if d_boot is not None:
        a = boot_weights(len(d_boot), rng) @ d_boot
        b = ref_q if ref_boot is None else boot_weights(len(ref_boot), rng) @ ref_boot
        out["r96_se"] = float(row_r(a, b).std(ddof=1))
    hour_diff = hourly(d_q) - hourly(out["ref_q"])
    worst = int(np.argmax(np.abs(hour_diff)))
    out["worst"] = (worst, float(hour_diff[worst]))
    return out


def comparisons(d: dict, groups: dict, bdew: dict, crest: dict | None,
                rng: np.random.Generator) -> dict:
    """The four comparisons (two without CREST)."""
    b, total, wo = groups["(b)"], groups["all"], groups["all - storage"]
    out = {"(b) vs BDEW H0": compare(quarter_hours(b["curve"]), bdew["q96"], rng, b["q"])}
    if crest is not None:
        ex, default = crest["excluded"], crest["default"]
        out["(b) vs CREST, no electric heating"] = compare(
            quarter_hours(b["curve"]), quarter_hours(ex["curve"]), rng, b["q"], ex["q"])
        out["all - storage heating vs CREST (defaults)"] = compare(
            quarter_hours(wo["curve"]), quarter_hours(default["curve"]), rng, wo["q"],
            default["q"])
    out["all vs BDEW H0 (for information)"] = compare(
        quarter_hours(total["curve"]), bdew["q96"], rng, total["q"])
    return out
