#!/usr/bin/env python
"""Plausibility check of drsim's UK household load against CREST (richardsonpy).

What it compares, in one run, on comparable days (a winter weekday, no demand response):

* **drsim**: ``drsim.simulate_households(scenario, 0, N, dr_events=[])`` for
  ``scenarios/paper_100k.yaml`` (households 0..N-1, one weekday at 1-minute resolution,
  no DR event). EV households are marked by ``drsim.household.population.Population(scenario, 0,
  N).has_ev``; figures are given for all households, for those without an EV and for the
  EV households alone.
* **CREST** through richardsonpy (the Python port of the CREST demand model, as
  packaged): M households, household k with seed k (``random.seed(k)``,
  ``np.random.seed(k)``), k = 1..M. Its number of occupants (1-5) and its light-bulb set
  (one of the 100 packaged sets) are drawn from a separate ``random.Random(k)`` stream;
  the occupant shares are CREST's own default, "Probability of dwelling having this number
  of residents, in the UK", from the ActivityStats sheet of the CREST Demand Model v2.3.3
  workbook (richardsonpy has no default of its own). Each household runs ``Occupancy`` and
  the day loop of ``ElectricLoad.calc_stoch_el_profile`` (its defaults: single-family-house
  calibration, randomized appliances, electric heating allowed) for a few consecutive
  days of the weather year that drives richardsonpy's lighting model (the packaged German
  test reference year TRY2010 region 5, hourly irradiance). Default: days 15-19 of that
  year, i.e. 15-19 January, Monday to Friday, since richardsonpy's year starts on a Monday
  (``initial_day=1``). Only weekdays are accepted, as drsim simulates a weekday.

Both sides are reduced the same way: mean daily energy per household (kWh/day), and
the "after diversity" load per household, i.e. the mean over households (and, for CREST,
over days) of the 1,440-minute curves, of which we report the maximum over 16:00-22:00
with its clock time and the mean over 17:00-19:00. Bootstrap intervals (households
resampled) show how much of a difference sampling alone could explain.

Why: drsim's appliance catalogue is built from CREST's tables plus later UK sources, and
its load has not been checked end to end against an independent model or against
measured UK figures (the calibration issue). This script prints both models side by side
with the reference figures (Ofgem typical domestic consumption values, the Household
Electricity Survey 2010-11), each labelled with its source and whether the figure was
verified. It is a validation script, not a test: it never fails on a difference.

Run from the repository root::

    pip install -e '.[bench]'
    PYTHONPATH=. python scripts/compare_crest.py [--households 5000]
        [--crest-households 100] [--first-day 15] [--days 5]

Exits 0, or 2 if richardsonpy is not installed.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import random
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
from crest_model import DAY, annual_calibration_kwh, crest_days, is_weekend, require_richardsonpy
from crest_model import irradiance as crest_irradiance

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "paper_100k.yaml"
EVENING = (16 * 60, 22 * 60)  # window of the evening peak, [16:00, 22:00)
EARLY_EVENING = (17 * 60, 19 * 60)  # window of the mean, [17:00, 19:00)
BOOTSTRAP = 500  # resamples of households for the intervals
LIGHT_THRESHOLD_W_M2 = 60.0  # CREST lighting model: mean outdoor irradiance threshold

# CREST's default shares of dwellings with 1..5 residents in the UK (mean 2.08 residents):
# CREST Demand Model v2.3.3 workbook, sheet ActivityStats, "Probability of dwelling having
# this number of residents, in the UK" (read from the sheet as exported to CSV in the public
# repository kerspoon/CREST, excel/monte_carlo_base_fixed/ActivityStats.csv).
CREST_RESIDENT_SHARES = (0.339045531533327, 0.401115871276278, 0.137092756799841,
                         0.0880741257347813, 0.0346717146557736)
CREST_BULB_SETS = 100  # rows of richardsonpy's inputs/LightBulbs.csv

# Reference figures (kWh per household and year), each with its source. "verified" means the
# figure was found in the cited page (stored copies searched when this script was written).
REFERENCES = (
    ("Ofgem TDCV, electricity profile class 1, medium (from 2023)", 2700, "verified",
     "Ofgem, 'Average gas and electricity usage', ofgem.gov.uk/average-gas-and-electricity-"
     "usage: 'the typical household in England, Scotland and Wales uses 2,700 kWh of "
     "electricity'; National Energy Action, TDCV explainer, nea.org.uk/news/tdcv-explainer: "
     "'reduce from 2,900kwh/year to 2,700kwh/year'"),
    ("Ofgem TDCV, electricity profile class 1, low (from 2023)", 1800, "not verified",
     "not found for the 2023 values; Ofgem's TDCV page, ofgem.gov.uk/gas/retail-market/"
     "monitoring-data-and-statistics/typical-domestic-consumption-values, gives low 1,800 for "
     "the values in force from 1 April 2020 (medium 2,900 and high 4,300 then)"),
    ("Ofgem TDCV, electricity profile class 1, high (from 2023)", 4100, "not verified",
     "not found; the April-2020 high value on Ofgem's TDCV page is 4,300"),
    ("Household Electricity Survey 2010-11, mean", 4093, "not verified",
     "not found; the survey itself (250 owner-occupier households in England, 2010-11) is "
     "described by Cambridge Architectural Research, cambridgeenergy.org.uk/project/"
     "household-electricity-survey-decc"),
)
# A reference for the after-diversity curve rather than the annual energy.
HES_PROFILE = ("Household Electricity Survey 2010-11, mean 24-h profile",
               "just over 0.2 kW overnight, more than 0.7 kW from 18:00 to 20:00", "verified",
               "Cambridge Architectural Research, Household Electricity Survey (DECC) project "
               "page, cambridgeenergy.org.uk/project/household-electricity-survey-decc: "
               "'Average electrical demand varies from just over 200W overnight to more than "
               "700W from 6-8pm'")
# Context for CREST's resident shares (not used in the simulation).
ONS_CONTEXT = ("ONS, Families and households in the UK: 2022, as reported by familylaw.co.uk "
               "and pigeonreporter.com (not read from ONS itself): 30 % of households are one "
               "person, 2.36 residents per household on average")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Compare drsim's no-DR household load with CREST (richardsonpy) on "
                    "January weekdays.")
    p.add_argument("-n", "--households", type=int, default=5000,
                   help="drsim households 0..N-1 of paper_100k.yaml (default: 5000)")
    p.add_argument("-m", "--crest-households", type=int, default=100,
                   help="CREST households, seeds 1..M (default: 100)")
    p.add_argument("--first-day", type=int, default=15,
                   help="first day of richardsonpy's year, 1 = 1 January, a Monday "
                        "(default: 15)")
    p.add_argument("--days", type=int, default=5,
                   help="consecutive days per CREST household, weekdays only (default: 5)")
    args = p.parse_args(argv)
    if args.households < 1 or args.crest_households < 1 or args.days < 1:
        p.error("--households, --crest-households and --days must be at least 1")
    last = args.first_day + args.days - 1
    if args.first_day < 1 or last > 365:
        p.error("the days must lie within 1..365")
    weekend = [d for d in range(args.first_day, last + 1) if is_weekend(d)]
    if weekend:
        p.error(f"days {weekend} are weekend days in richardsonpy's year (day 1 is a Monday);"
                " drsim simulates a weekday, so choose weekdays only")
    return args


def clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


# --------------------------------------------------------------------------- reductions
def summary(curves_kw: np.ndarray, rng: np.random.Generator) -> dict:
    """Figures for (households, 1440) curves in kW (a household's mean over its days)."""
    n = len(curves_kw)
    daily = curves_kw.sum(axis=1) / 60.0  # kWh per household-day
    mean_curve = curves_kw.mean(axis=0)
    lo, hi = EVENING
    a, b = EARLY_EVENING
    peak_at = lo + int(np.argmax(mean_curve[lo:hi]))
    # Bootstrap over households: each resample is a weight vector (multinomial counts / n).
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=BOOTSTRAP) / n
    boot = weights @ curves_kw  # (BOOTSTRAP, 1440) mean curves
    boot_peak = boot[:, lo:hi].max(axis=1)
    boot_early = boot[:, a:b].mean(axis=1)
    return {
        "n": n,
        "kwh_day": float(daily.mean()),
        "kwh_day_se": float(daily.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"),
        "peak_kw": float(mean_curve[peak_at]),
        "peak_at": peak_at,
        "peak_ci": tuple(np.percentile(boot_peak, [2.5, 97.5])),
        "early_kw": float(mean_curve[a:b].mean()),
        "early_ci": tuple(np.percentile(boot_early, [2.5, 97.5])),
        "night_kw": float(mean_curve[0:5 * 60].mean()),
    }


# --------------------------------------------------------------------------- drsim
def run_drsim(households: int) -> dict:
    import drsim
    from drsim.household.population import Population

    t0 = time.perf_counter()
    scenario = drsim.load_scenario(SCENARIO)
    if households > scenario.households:
        raise SystemExit(f"--households {households} exceeds the {scenario.households} "
                         f"households of {SCENARIO.name}")
    kw, sim_s = timed(drsim.simulate_households, scenario, 0, households, dr_events=[])
    has_ev = np.asarray(Population(scenario, 0, households).has_ev, dtype=bool)
    wall = time.perf_counter() - t0
    assert kw.shape == (households, DAY), kw.shape
    return {"scenario": scenario, "kw": kw.astype(np.float64), "has_ev": has_ev,
            "sim_s": sim_s, "wall_s": wall}


# --------------------------------------------------------------------------- CREST
def crest_household(seed: int, first_day: int, days: int, global_irradiance: np.ndarray):
    """One CREST household: (occupants, annual calibration kWh, (days, 1440) load in W)."""
    import richardsonpy.classes.occupancy as occ

    draw = random.Random(seed)  # household attributes, apart from the model's own stream
    cum = list(itertools.accumulate(CREST_RESIDENT_SHARES))
    occupants = min(1 + bisect.bisect_right(cum, draw.random() * cum[-1]), 5)
    bulb_set = draw.randrange(CREST_BULB_SETS)

    random.seed(seed)
    np.random.seed(seed)
    occupancy = occ.Occupancy(number_occupants=occupants, initial_day=(first_day - 1) % 7 + 1,
                              nb_days=days).occupancy
    load = crest_days(occupancy, occupants, first_day, days, global_irradiance, bulb_set)
    return occupants, annual_calibration_kwh(occupants), load


def run_crest(households: int, first_day: int, days: int) -> dict:
    t0 = time.perf_counter()
    irradiance = sum(crest_irradiance())
    loads = np.empty((households, days, DAY))
    occupants = np.empty(households, dtype=int)
    annual = np.empty(households)
    for k in range(households):
        occupants[k], annual[k], loads[k] = crest_household(k + 1, first_day, days, irradiance)
    wall = time.perf_counter() - t0
    chosen = irradiance[DAY * (first_day - 1): DAY * (first_day - 1 + days)]
    mean_irr = chosen.reshape(days, DAY).mean(axis=0)
    light = np.flatnonzero(mean_irr >= LIGHT_THRESHOLD_W_M2)
    return {"kw": loads / 1000.0, "occupants": occupants, "annual": annual, "wall_s": wall,
            "daylight": (int(light[0]), int(light[-1]) + 1) if light.size else None}


# --------------------------------------------------------------------------- report
def report(args, d: dict, c: dict) -> None:
    import richardsonpy
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, Console().width), highlight=False, soft_wrap=True)
    rng = np.random.default_rng(0)
    has_ev = d["has_ev"]
    cols = {"drsim, all": summary(d["kw"], rng),
            "drsim, no EV": summary(d["kw"][~has_ev], rng)}
    if has_ev.any():
        cols["drsim, EV only"] = summary(d["kw"][has_ev], rng)
    # CREST: each household's mean curve over its days, so s.e. and bootstrap go by household.
    crest = summary(c["kw"].mean(axis=1), rng)
    cols["CREST (richardsonpy)"] = crest

    try:
        drsim_version = metadata.version("drsim")
    except metadata.PackageNotFoundError:
        drsim_version = "(checkout, not installed)"
    last = args.first_day + args.days - 1
    sc = d["scenario"]
    occ_counts = np.bincount(c["occupants"], minlength=6)[1:]

    console.print("\n[bold]drsim vs CREST (richardsonpy): household load without DR, "
                  "January weekday[/]")
    console.print(f"software : numpy {np.__version__}, drsim {drsim_version}, "
                  f"richardsonpy {richardsonpy.__version__}")
    console.print(f"drsim    : {SCENARIO.name} (seed {sc.seed}), households "
                  f"0..{args.households - 1} (N = {args.households}, {int(has_ev.sum())} with an "
                  "EV), one weekday, 1-min, dr_events=[]")
    days = f"days {args.first_day}-{last}" if args.days > 1 else f"day {args.first_day}"
    console.print(f"CREST    : M = {args.crest_households} households, seeds 1.."
                  f"{args.crest_households}; {days} of richardsonpy's year (day 1 = Monday "
                  f"1 January), {args.days} weekday(s), 1-min; "
                  f"{args.crest_households * args.days} household-days")
    console.print("           occupants drawn with CREST v2.3.3's UK shares "
                  + ", ".join(f"{s:.3f}" for s in CREST_RESIDENT_SHARES)
                  + " (1..5): drawn " + ", ".join(f"{i + 1}: {n}" for i, n in
                                                   enumerate(occ_counts))
                  + f"; mean {c['occupants'].mean():.2f}")
    console.print("           richardsonpy calibration (SFH default): each household's "
                  "appliances are scaled to 0.91 x its annual figure for its occupants "
                  f"(2,700-5,500 kWh/yr); mean of the drawn households "
                  f"{c['annual'].mean():,.0f} kWh/yr = {c['annual'].mean() / 365:.2f} kWh/day")
    if c["daylight"]:
        lo, hi = c["daylight"]
        console.print(f"           irradiance (TRY2010 region 5, CET clock): the days' mean is "
                      f">= {LIGHT_THRESHOLD_W_M2:.0f} W/m2 (CREST's mean lighting threshold) "
                      f"from {clock(lo)} to {clock(hi)}")
    console.print(f"wall time: drsim {d['wall_s']:.2f} s (simulate_households "
                  f"{d['sim_s']:.2f} s); CREST {c['wall_s']:.2f} s "
                  f"({c['wall_s'] / (args.crest_households * args.days):.3f} s per "
                  "household-day)")

    t = Table(title="Per household (after diversity = mean over households of the "
                    "1-min curves; CREST: also over days)")
    t.add_column("")
    for name in cols:
        t.add_column(name, justify="right")

    def row(label, fmt):
        t.add_row(label, *(fmt(s) for s in cols.values()))

    row("households", lambda s: f"{s['n']:,}")
    row("mean daily energy, kWh/day (± s.e.)",
        lambda s: f"{s['kwh_day']:.2f} ± {s['kwh_day_se']:.2f}")
    row("  x 365, kWh/yr (a January-weekday rate)", lambda s: f"{s['kwh_day'] * 365:,.0f}")
    row("evening peak 16:00-22:00, kW", lambda s: f"{s['peak_kw']:.3f}")
    row("  95 % bootstrap interval", lambda s: f"{s['peak_ci'][0]:.3f}-{s['peak_ci'][1]:.3f}")
    row("  clock time of the peak", lambda s: clock(s["peak_at"]))
    row("mean 17:00-19:00, kW", lambda s: f"{s['early_kw']:.3f}")
    row("  95 % bootstrap interval",
        lambda s: f"{s['early_ci'][0]:.3f}-{s['early_ci'][1]:.3f}")
    row("mean 00:00-05:00, kW", lambda s: f"{s['night_kw']:.3f}")
    console.print(t)

    r = Table(title="drsim / CREST")
    r.add_column("")
    r.add_column("drsim, all", justify="right")
    r.add_column("drsim, no EV", justify="right")
    for label, key in (("daily energy", "kwh_day"), ("evening peak 16-22", "peak_kw"),
                       ("mean 17-19", "early_kw")):
        r.add_row(label, f"{cols['drsim, all'][key] / crest[key]:.2f}",
                  f"{cols['drsim, no EV'][key] / crest[key]:.2f}")
    console.print(r)

    f = Table(title="Reference figures (per day = annual / 365)")
    f.add_column("#", justify="right")
    f.add_column("figure")
    f.add_column("kWh/yr", justify="right")
    f.add_column("kWh/day", justify="right")
    f.add_column("status")
    for i, (label, kwh, status, _) in enumerate(REFERENCES, 1):
        f.add_row(str(i), label, f"{kwh:,}", f"{kwh / 365:.2f}", status)
    label, value, status, _ = HES_PROFILE
    f.add_row(str(len(REFERENCES) + 1), f"{label}: {value}", "", "", status)
    console.print(f)
    console.print("[bold]Sources[/]")
    for i, (*_, source) in enumerate((*REFERENCES, HES_PROFILE), 1):
        console.print(f"{i}. {source}")

    console.print("[bold]Reading the numbers[/]")
    for note in (
        "Ofgem's TDCVs are medians of annual consumption and the HES figure an annual mean; "
        "both sides here are January weekdays (drsim's lighting and CREST's irradiance are "
        "mid-winter), so x 365 overstates an annual figure.",
        "CREST's daily energy is largely set by richardsonpy's calibration to its built-in "
        "single-family-house ('SFH') annual figures (above); its timing and shape are the "
        "model's own. richardsonpy adds no EVs.",
        "CREST's irradiance is Essen's test reference year on CET; drsim's lighting curve is "
        "for 15 January at Loughborough on GMT.",
        f"CREST's resident shares (mean 2.08) against {ONS_CONTEXT}.",
    ):
        console.print(f"- {note}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not require_richardsonpy():
        return 2

    print(f"drsim: {args.households} households ...", flush=True)
    d = run_drsim(args.households)
    print(f"CREST: {args.crest_households} households x {args.days} days ...", flush=True)
    c = run_crest(args.crest_households, args.first_day, args.days)
    report(args, d, c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
