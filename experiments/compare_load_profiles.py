"""Daily load profiles of drsim's households against BDEW H0 and CREST, for a month and day type.

What it compares (one day type of one month, no demand response):

* **drsim**: ``drsim.simulate_households(scenario, 0, N, dr_events=[])`` for
  ``scenarios/paper_100k.yaml`` with ``season`` and ``day_type`` set (households 0..N-1,
  1-minute resolution). Groups: (a) all households; (b) the households without an EV and
  without electric heating, i.e. owning none of the catalogue's ``storage_heater``,
  ``other_space_heating`` (space heating), ``storage_water_heater`` and
  ``instantaneous_water_heater`` (water heating): BDEW H0 leaves electric heating out by
  definition, and neither reference has EVs. The night storage-heating load is shown apart:
  the same households are simulated again with
  ``appliances.electric_heating.storage_heaters: 0`` (same seed, so common random numbers:
  only the storage heaters go), and the difference of the all-household means is the
  storage-heating load.
* **BDEW H0** through demandlib: ``bdew.ElecSlp(year).get_scaled_power_profiles({"h0":
  1000})``, i.e. what the deprecated ``get_profile({"h0": 1000})`` returns, in kW for
  1,000 kWh/a. That is the *static* H0 profile (the library's default for "h0"); demandlib
  puts the dynamised H0 (the static profile times the dynamisation function) in a separate
  column "h0_dyn", which is shown for information only (it changes the level, hardly the
  shape). demandlib's seasons are BDEW's (winter 1 Nov-20 Mar, transition 21 Mar-14 May and
  15 Sep-31 Oct, summer 15 May-14 Sep), its day types workday (Monday-Friday), Saturday and
  Sunday, with no holidays unless given (none are given here; nor does demandlib treat 24 and
  31 December as Saturdays). The year is 2018: not a leap year, and 1 January 2018 was a
  Monday, like day 1 of richardsonpy's year, so both references use the same calendar days.
  The days of the month with the day type are averaged to one day of 96 quarter-hours.
  demandlib 0.2.2's ``ElecSlp`` makes every warning an error for the whole process, which
  with pandas >= 3 stops it on pandas' own deprecation warnings; :func:`elec_slp` keeps
  that filter from taking effect while it runs.
* **CREST** through richardsonpy (as ``experiments/crest_model.py`` runs it): M households with
  CREST v2.3.3's UK shares of 1-5 residents and one of the 100 packaged light-bulb sets each
  (household k: seed k, attributes from ``random.Random(k)``), ``--crest-days`` days per
  household among the month's days of the day type (taken in turn, so that the households
  together cover the month), once with richardsonpy's defaults and once without the electric
  heating that subset (b) lacks (DESWH, E-INST, storage heaters, other electric space
  heating; the electric shower stays, as in drsim's subset (b)). richardsonpy 0.2.3 has
  defects that matter here, each checked in the run and printed: its storage heaters never
  switch on (the "CUSTOM" branch of ``run_application_simulation`` is an ``elif`` of the
  "appliance is off" test, so it is reached only while a cycle runs, and a storage-heater
  cycle can only start inside it; were it reached, ``date_add`` would raise a TypeError,
  list + int); so the CREST comparison leaves storage heating out on drsim's side too. Its
  lighting model gets the irradiance of the first 24 minutes of each day (``ElectricLoad``
  interpolates minute indices on timestamps in seconds): night all day; this script passes
  each day's own 1-minute irradiance instead (``--crest-packaged-lighting`` restores
  richardsonpy's). ``prev_heat_dev=True`` removes E-INST, the electric shower, storage
  heaters and other electric space heating but not DESWH (its indices are off by one), so it
  is not used.

The curves are compared by their shapes: each reference is scaled to the drsim curve's daily
mean, and the table gives, hour by hour, drsim minus the scaled reference (kW and %), then
Pearson's r at 15-minute resolution (96 quarter-hours, BDEW's own resolution; drsim's and
CREST's 1-minute curves averaged to quarter-hours) and at hourly resolution, with a bootstrap
standard error (households resampled). Per group: daily energy, the 00:00-05:00 mean and the
18:30-20:30 (the DR window) mean, with 95 % bootstrap intervals. ``--annual`` gives drsim's
daily energy for every month and day type and the annual mean instead (drsim only).

Sources:

* VDEW, "Repräsentative VDEW-Lastprofile", VDEW-Materialien M-28/2000, Frankfurt am Main
  1999 (H. Meier, C. Fünfgeld, T. Adam, B. Schieferdecker): the H0 household profile; its
  dynamisation function F(t) = -3.92e-10 t^4 + 3.2e-7 t^3 - 7.02e-5 t^2 + 2.1e-3 t + 1.24
  (t the day of the year) as demandlib implements it (``demandlib.bdew.elec_slp``, with the
  first coefficient -3.916649251e-10 for normalisation and t counted in quarter-hour
  fractions from 0).
* I. Richardson, M. Thomson, D. Infield, C. Clifford, "Domestic electricity use: a
  high-resolution energy demand model", Energy and Buildings 42(10), 1878-1887, 2010;
  I. Richardson, M. Thomson, D. Infield, "A high-resolution domestic building occupancy
  model for energy demand simulations", Energy and Buildings 40(8), 1560-1566, 2008;
  I. Richardson, M. Thomson, D. Infield, A. Delahunty, "Domestic lighting: a high-resolution
  energy demand model", Energy and Buildings 41(7), 781-789, 2009; the CREST Demand Model
  v2.3.3 workbook (resident shares).
* demandlib 0.2.2 and richardsonpy 0.2.3 (PyPI; the versions printed by the run).

It is a validation script, not a test: it never fails on a difference. Run from the
repository root::

    pip install -e '.[bench]'
    python scripts/compare_load_profiles.py [--season winter|transition|summer|1..12]
        [--day-type weekday|saturday|sunday] [--households 5000] [--crest-households 100]
        [--crest-days 3] [--figure PATH | --no-figure] [--no-crest]
    python scripts/compare_load_profiles.py --annual [--households 5000]

Exits 0, or 2 if a bench package (demandlib, richardsonpy) is missing.
"""

from __future__ import annotations

import argparse
import calendar
import itertools
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from drsim.household.season import DAY_TYPES, year_shares
from drsim.scenario.models import SEASON_MONTHS
from drsim.units import clock
from experiments.crest_model import irradiance as crest_irradiance
from experiments.load_profile_models import (
    CREST_HEATING,
    DR_WINDOW,
    FIGURES,
    HES_PROFILE,
    REFERENCES,
    REPO,
    SCENARIO,
    YEAR,
    Q,
    check_richardsonpy,
    comparisons,
    crest_plan,
    days_of,
    hourly,
    household_groups,
    make_scenario,
    profile_figures,
    quarter_hours,
    row_r,
    run_bdew,
    run_crest,
    run_drsim,
    scenario_data,
    summary,
    timed,
)


# --------------------------------------------------------------------------- arguments
def season_arg(text: str) -> str | int:
    if text in SEASON_MONTHS:
        return text
    if text.isdigit() and 1 <= int(text) <= 12:
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r}: winter, transition, summer or a month 1..12")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Compare drsim's household load profile (no DR) with BDEW H0 "
                    "(demandlib) and CREST (richardsonpy) for a month and day type.")
    p.add_argument("--season", type=season_arg, default="winter",
                   help="winter (January), transition (April), summer (July) or a month "
                        "1..12 (default: winter)")
    p.add_argument("--day-type", choices=DAY_TYPES, default="weekday",
                   help="the day type (default: weekday)")
    p.add_argument("-n", "--households", type=int, default=5000,
                   help="drsim households 0..N-1 of paper_100k.yaml (default: 5000)")
    p.add_argument("-m", "--crest-households", type=int, default=100,
                   help="CREST households, seeds 1..M (default: 100)")
    p.add_argument("--crest-days", type=int, default=3,
                   help="days of the month with the day type per CREST household (default: 3)")
    p.add_argument("--crest-packaged-lighting", action="store_true",
                   help="give CREST's lighting model the irradiance as richardsonpy's "
                        "ElectricLoad does (night all day) rather than each day's own")
    p.add_argument("--no-crest", action="store_true", help="skip CREST (the slow part)")
    p.add_argument("--annual", action="store_true",
                   help="drsim only: daily energy of every month and day type, and the annual "
                        "mean (no references)")
    p.add_argument("--figure", type=Path, default=None,
                   help="PNG of the curves (default: results/load_profiles/"
                        "profiles_MM_DAYTYPE.png in the repository)")
    p.add_argument("--no-figure", action="store_true", help="draw no figure")
    args = p.parse_args(argv)
    if min(args.households, args.crest_households, args.crest_days) < 1:
        p.error("--households, --crest-households and --crest-days must be at least 1")
    args.month = SEASON_MONTHS.get(args.season, args.season)
    if args.figure is None and not args.no_figure:
        args.figure = FIGURES / f"profiles_{args.month:02d}_{args.day_type}.png"
    return args


def missing_packages(args: argparse.Namespace) -> list[str]:
    """The bench packages this run needs and cannot import."""
    needed = [] if args.annual else ["demandlib"] + ([] if args.no_crest else ["richardsonpy"])
    missing = []
    for name in needed:
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    return missing


# --------------------------------------------------------------------------- report
def console():
    from rich.console import Console

    return Console(width=max(132, Console().width), highlight=False, soft_wrap=True)


def version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "(not installed)"


def ci(pair) -> str:
    return f"{pair[0]:.3f}-{pair[1]:.3f}"


def hour_table(title: str, columns: list[tuple[str, np.ndarray]],
               refs: list[tuple[str, np.ndarray, np.ndarray]]):
    """24 rows: the given hourly curves, then per reference its scaled curve, drsim minus it
    (kW) and in % of it. ``refs``: (name, drsim hourly curve, scaled reference hourly)."""
    from rich.table import Table

    t = Table(title=title)
    t.add_column("hour")
    for name, _ in columns:
        t.add_column(name, justify="right")
    for name, _, _ in refs:
        t.add_column(f"{name}, scaled", justify="right")
        t.add_column("Δ kW", justify="right")
        t.add_column("Δ %", justify="right")
    for h in range(24):
        cells = [f"{h:02d}-{h + 1:02d}"] + [f"{c[h]:.3f}" for _, c in columns]
        for _, mine, ref in refs:
            cells += [f"{ref[h]:.3f}", f"{mine[h] - ref[h]:+.3f}",
                      f"{100 * (mine[h] - ref[h]) / ref[h]:+.0f}"]
        t.add_row(*cells)
    return t


def group_table(cols: dict):
    from rich.table import Table

    t = Table(title="Per household, mean day (after diversity: mean over households; CREST: "
                    "each household's mean over its days); 95 % bootstrap intervals")
    t.add_column("")
    for name in cols:
        t.add_column(name, justify="right")

    def row(label, fmt):
        t.add_row(label, *(fmt(s) for s in cols.values()))

    row("households", lambda s: "-" if s["n"] is None else f"{s['n']:,}")
    row("daily energy, kWh/day (± s.e.)",
        lambda s: f"{s['kwh']:.2f}" + (f" ± {s['kwh_se']:.2f}" if "kwh_se" in s else ""))
    row("mean 00:00-05:00, kW", lambda s: f"{s['night']:.3f}")
    row("  95 % interval", lambda s: ci(s["night_ci"]) if "night_ci" in s else "")
    row("mean 18:30-20:30, kW", lambda s: f"{s['dr']:.3f}")
    row("  95 % interval", lambda s: ci(s["dr_ci"]) if "dr_ci" in s else "")
    return t


def r_table(comp: dict):
    from rich.table import Table

    t = Table(title="Shapes: Pearson's r of drsim with the reference (scaled to drsim's daily "
                    "mean)")
    for name in ("comparison", "scale on the reference", "r, 96 quarter-hours",
                 "  bootstrap s.e.", "r, 24 hours", "largest hourly Δ, kW"):
        t.add_column(name, justify="left" if name == "comparison" else "right")
    for name, c in comp.items():
        hour, value = c["worst"]
        t.add_row(name, f"{c['scale']:.3f}", f"{c['r96']:.3f}",
                  f"{c['r96_se']:.3f}" if "r96_se" in c else "", f"{c['r24']:.3f}",
                  f"{value:+.3f} at {hour:02d}-{hour + 1:02d}")
    return t


def print_setup(out, args, d: dict, bdew: dict, crest: dict | None) -> None:
    sc = d["scenario"]
    n = args.households
    out.print(f"\n[bold]Load profiles: drsim vs BDEW H0 and CREST, "
              f"{calendar.month_name[args.month]}, {args.day_type}, no DR[/]")
    out.print(f"software : numpy {np.__version__}, drsim {version('drsim')}, demandlib "
              f"{version('demandlib')}, richardsonpy {version('richardsonpy')}")
    out.print(f"drsim    : {SCENARIO.name} (seed {sc.seed}), season {sc.season!r} (month "
              f"{sc.month}), day_type {sc.day_type!r}; households 0..{n - 1}: all {n:,}; "
              f"with an EV {int(d['has_ev'].sum()):,}; with electric space or water heating "
              f"{int(d['heating'].sum()):,}; subset (b), neither: {int(d['b'].sum()):,}")
    out.print(f"           storage heating: owners {int(d['storage_owner'].sum()):,}; run "
              f"again with storage_heaters 0: {d['changed']:,} households' load changed, all "
              f"of them owners: {'yes' if d['changed_owners'] else 'NO'}; difference >= 0 "
              f"at every minute: {'yes' if d['diff_min'] >= -1e-9 else 'NO'}")
    days = bdew["days"]
    out.print(f"BDEW H0  : demandlib, static 'h0' in kW for 1,000 kWh/a (sum over {YEAR}: "
              f"{bdew['annual_check']:,.1f} kWh), days {list(map(int, days))} of {YEAR} "
              f"({len(days)} days) averaged")
    out.print(f"           (dynamisation factor on these days "
              f"{bdew['factor'][0]:.3f}-{bdew['factor'][1]:.3f}: demandlib's 'h0_dyn' gives "
              f"{bdew['dyn96'].sum() / 4:.3f} kWh/day against the static "
              f"{bdew['q96'].sum() / 4:.3f}; its shape r = "
              f"{float(row_r(bdew['dyn96'], bdew['q96'])):.4f}; not used below)")
    if crest is not None:
        occ = np.bincount(crest["occupants"], minlength=6)[1:]
        out.print(f"CREST    : M = {args.crest_households} households, seeds 1.."
                  f"{args.crest_households}, {crest['per_household']} day(s) each of the "
                  f"month's {len(days)} {args.day_type} days (in turn"
                  + ("" if crest["per_household"] == args.crest_days else
                     f"; --crest-days {args.crest_days} is more than there are")
                  + "): "
                  f"{crest['household_days']} household-days per run; occupants (1..5) "
                  + ", ".join(f"{i + 1}: {k}" for i, k in enumerate(occ))
                  + f"; mean {crest['occupants'].mean():.2f}")
        out.print("           runs: richardsonpy's defaults; and without "
                  + ", ".join(CREST_HEATING) + " (the electric shower kept); lighting: "
                  + ("the irradiance as ElectricLoad passes it (night all day)"
                     if args.crest_packaged_lighting else "each day's own 1-min irradiance"))


def print_checks(out, chk: dict) -> None:
    out.print("[bold]richardsonpy checks[/]")
    out.print(f"- storage heaters owned in 5 households on 5 January weekdays, everyone active: "
              f"peak draw {chk['storage_peak_w']:.0f} W, switched on on "
              f"{chk['storage_days_on']} of {chk['storage_days']} days. The 'CUSTOM' (use "
              "profile 8) branch of run_application_simulation is an elif of 'if the "
              "appliance is off', so it runs only while a cycle runs, and only it can start a "
              f"storage-heater cycle; date_add(113, [14, 1, 1997]) {chk['date_add']}.")
    out.print("- prev_heat_dev=True removes: " + ", ".join(chk["prev_heat_dev"])
              + " (indices 29-33 of 0-32; DESWH, index 28, stays although the docstring "
                "lists it): not used; this script removes " + ", ".join(CREST_HEATING) + ".")
    out.print(f"- lighting irradiance on the chosen days: ElectricLoad passes at most "
              f"{chk['irr_passed_max']:.0f} W/m² (the first 24 minutes of each day), the days' "
              f"own maximum is {chk['irr_max']:.0f} W/m².")
    out.print("- read in appliance.py: the month's temperature factor is applied to index 31 "
              "(storage heaters, which never get there) rather than 32 (other electric space "
              "heating), so no appliance depends on the month; Saturday and Sunday share the "
              "weekend tables of occupancy and activity.")


def report(args, d: dict, bdew: dict, crest: dict | None, chk: dict | None,
           rng: np.random.Generator) -> dict:
    from rich.table import Table

    out = console()
    groups = {"all": summary(d["kw"], rng), "all - storage": summary(d["kw0"], rng),
              "storage heating": summary(d["storage"], rng),
              "(b)": summary(d["kw"][d["b"]], rng)}
    comp = comparisons(d, groups, bdew, crest, rng)
    print_setup(out, args, d, bdew, crest)
    if chk is not None:
        print_checks(out, chk)

    cols = dict(groups)
    if crest is not None:
        cols["CREST, defaults"] = crest["default"]
        cols["CREST, no el. heating"] = crest["excluded"]
    cols["BDEW H0, 1,000 kWh/a"] = profile_figures(bdew["q96"])
    out.print(group_table(cols))
    per_1000 = bdew["q96"].sum() / 4
    out.print(f"BDEW H0 customer with drsim's daily energy on these days: (b) "
              f"{groups['(b)']['kwh'] / per_1000 * 1000:,.0f} kWh/a, all "
              f"{groups['all']['kwh'] / per_1000 * 1000:,.0f} kWh/a (static H0)")
    out.print(f"load DR can move in {clock(DR_WINDOW[0])}-{clock(DR_WINDOW[1])} (deferrable and "
              f"shiftable-in-advance cycles and EV charging, no DR), all households: "
              f"{d['movable_kw']:.3f} kW per household")
    out.print(r_table(comp))

    h = {k: hourly(quarter_hours(g["curve"])) for k, g in groups.items()}
    refs = [("BDEW", h["(b)"], hourly(comp["(b) vs BDEW H0"]["ref_q"]))]
    if crest is not None:
        refs.append(("CREST no heat", h["(b)"],
                     hourly(comp["(b) vs CREST, no electric heating"]["ref_q"])))
    out.print(hour_table("Subset (b), no EV, no electric heating: mean kW by hour",
                         [("(b)", h["(b)"])], refs))
    refs = []
    if crest is not None:
        refs.append(("CREST (vs all-stor.)", h["all - storage"],
                     hourly(comp["all - storage heating vs CREST (defaults)"]["ref_q"])))
    refs.append(("BDEW (vs all)", h["all"],
                 hourly(comp["all vs BDEW H0 (for information)"]["ref_q"])))
    out.print(hour_table("All households: mean kW by hour",
                         [("all", h["all"]), ("storage heating", h["storage heating"]),
                          ("all - storage", h["all - storage"])], refs))

    ref = Table(title="Reference profile (annual mean, for orientation)")
    ref.add_column("figure")
    ref.add_column("value")
    ref.add_column("status")
    label, value, status, source = HES_PROFILE
    ref.add_row(label, value, status)
    out.print(ref)
    out.print(f"Source: {source}")
    out.print("[bold]Reading the numbers[/]")
    for note in (
        "Shapes only: each reference is scaled to drsim's daily mean; BDEW H0 is German "
        "households (VDEW 1999) in local time, static (not dynamised), without electric "
        "heating; CREST is UK time-use data of 2000, calibrated by richardsonpy to its "
        "single-family-house annual figures (the energy set by it, the timing the model's).",
        "CREST without electric heating is recalibrated to the same annual energy, which "
        "richardsonpy then spreads over the other appliances (as prev_heat_dev does).",
        "drsim's 'all households' include the EVs (neither reference has any).",
    ):
        out.print(f"- {note}")
    return {"groups": groups, "comp": comp}


def timing_line(args, d: dict, bdew: dict, crest: dict | None, chk_s: float | None) -> str:
    parts = [f"drsim {d['wall_s']:.2f} s (one simulate_households {d['sim_s']:.2f} s; two runs)",
             f"BDEW {bdew['wall_s']:.2f} s"]
    if crest is not None:
        for key in ("default", "excluded"):
            r = crest[f"{key}_run"]
            parts.append(f"CREST {key} {r['wall_s']:.1f} s "
                         f"({r['wall_s'] / r['household_days']:.3f} s per household-day)")
        parts.append(f"richardsonpy checks {chk_s:.1f} s")
    return "wall time: " + "; ".join(parts)


# --------------------------------------------------------------------------- figure
def draw_figure(path: Path, args, groups: dict, comp: dict, crest: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edges = np.arange(Q + 1) / 4.0
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 8), sharex=True)
    b = comp["(b) vs BDEW H0"]
    top.stairs(quarter_hours(groups["(b)"]["curve"]), edges, baseline=None, color="black", lw=1.6,
               label=f"drsim (b): no EV, no electric heating (n = {groups['(b)']['n']:,})")
    top.stairs(b["ref_q"], edges, baseline=None, color="tab:blue",
               label=f"BDEW H0, scaled (r = {b['r96']:.3f})")
    if crest:
        c = comp["(b) vs CREST, no electric heating"]
        top.stairs(c["ref_q"], edges, baseline=None, color="tab:orange",
                   label=f"CREST without electric heating, scaled (r = {c['r96']:.3f})")
    top.set_ylabel("kW per household")
    top.set_ylim(bottom=0)
    top.set_title("Households without EV and electric heating")
    top.legend(loc="upper left", fontsize=8)

    rest = quarter_hours(groups["all - storage"]["curve"])
    total = quarter_hours(groups["all"]["curve"])
    bottom.stairs(rest, edges, fill=True, color="0.8", label="drsim, all households, "
                  "without storage heating")
    bottom.stairs(total, edges, baseline=rest, fill=True, color="tab:red", alpha=0.6,
                  label="drsim storage heating (difference of two runs)")
    a = comp["all vs BDEW H0 (for information)"]
    bottom.stairs(a["ref_q"], edges, baseline=None, color="tab:blue", ls="--",
                  label=f"BDEW H0, scaled to all (r = {a['r96']:.3f})")
    if crest:
        c = comp["all - storage heating vs CREST (defaults)"]
        bottom.stairs(c["ref_q"], edges, baseline=None, color="tab:orange",
                      label=f"CREST defaults, scaled to all - storage (r = {c['r96']:.3f})")
    bottom.set_ylabel("kW per household")
    bottom.set_xlabel("hour of the day")
    bottom.set_xticks(range(0, 25, 3))
    bottom.set_xlim(0, 24)
    bottom.set_title("All households")
    bottom.legend(loc="upper left", fontsize=8)
    fig.suptitle(f"drsim ({SCENARIO.stem}) vs BDEW H0 and CREST: "
                 f"{calendar.month_name[args.month]}, {args.day_type}, mean day, 15 min")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------- annual
def annual(args) -> None:
    from rich.table import Table

    import drsim

    out = console()
    data = scenario_data()
    n = args.households
    energy = np.empty((12, len(DAY_TYPES), 2))  # month, day type, (all, (b))
    counts = set()
    t0 = time.perf_counter()
    first_s = None
    for m, (j, day_type) in itertools.product(range(1, 13), enumerate(DAY_TYPES)):
        scenario = make_scenario(data, m, day_type)
        kw, sim_s = timed(drsim.simulate_households, scenario, 0, n, dr_events=[])
        first_s = sim_s if first_s is None else first_s
        b = household_groups(scenario, n)["b"]
        daily = np.asarray(kw, dtype=np.float64).sum(axis=1) / 60.0
        energy[m - 1, j] = daily.mean(), daily[b].mean()
        counts.add(int(b.sum()))
    wall = time.perf_counter() - t0
    mean = np.einsum("md,mdg->g", year_shares(), energy)

    out.print(f"\n[bold]drsim, daily energy by month and day type ({SCENARIO.name}, households "
              f"0..{n - 1}, no DR)[/]")
    out.print(f"subset (b), no EV and no electric space or water heating: "
              f"{', '.join(map(str, sorted(counts)))} of {n:,} households")
    t = Table(title="kWh per household and day")
    t.add_column("month")
    for g in ("all", "(b)"):
        for day_type in DAY_TYPES:
            t.add_column(f"{g}, {day_type}", justify="right")
    for m in range(12):
        t.add_row(calendar.month_abbr[m + 1],
                  *(f"{energy[m, j, g]:.2f}" for g in (0, 1) for j in range(3)))
    t.add_row("annual mean", *(f"{mean[g]:.2f}" if j == 0 else "" for g in (0, 1)
                               for j in range(3)))
    out.print(t)
    same = bool(np.array_equal(energy[:, 1], energy[:, 2]))
    out.print(f"saturday and sunday equal in every month: {'yes' if same else 'no'} (drsim gives "
              "both CREST's weekend tables)")
    out.print(f"annual mean (months weighted by their days, day types 5/7, 1/7, 1/7): all "
              f"{mean[0]:.2f} kWh/day = {mean[0] * 365:,.0f} kWh/yr; subset (b) "
              f"{mean[1]:.2f} kWh/day = {mean[1] * 365:,.0f} kWh/yr")
    f = Table(title="Reference figures (annual)")
    for name in ("figure", "kWh/yr", "kWh/day", "status"):
        f.add_column(name, justify="left" if name in ("figure", "status") else "right")
    for label, kwh, status, _ in REFERENCES:
        f.add_row(label, f"{kwh:,}", f"{kwh / 365:.2f}", status)
    out.print(f)
    for i, (*_, source) in enumerate(REFERENCES, 1):
        out.print(f"{i}. {source}")
    out.print(f"wall time: {wall:.1f} s for {12 * len(DAY_TYPES)} simulate_households calls "
              f"of {n:,} households (the first {first_s:.2f} s)")


# --------------------------------------------------------------------------- main
def run_crest_part(args, days: np.ndarray) -> tuple[dict, dict, float]:
    irradiance = sum(crest_irradiance())
    plan = crest_plan(days, args.crest_days, args.crest_households)
    minute = not args.crest_packaged_lighting
    default = run_crest(plan, irradiance, (), minute)
    excluded = run_crest(plan, irradiance, CREST_HEATING, minute)
    rng = np.random.default_rng(1)
    crest = {"default": summary(default["kw"], rng), "excluded": summary(excluded["kw"], rng),
             "default_run": default, "excluded_run": excluded,
             "occupants": default["occupants"], "household_days": default["household_days"],
             "per_household": len(plan[0])}
    chk, chk_s = timed(check_richardsonpy, irradiance, days)
    return crest, chk, chk_s


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = missing_packages(args)
    if missing:
        print(f"missing bench package(s) {', '.join(missing)}: pip install -e '.[bench]'",
              file=sys.stderr)
        return 2
    if args.annual:
        annual(args)
        return 0

    days = days_of(args.month, args.day_type)
    print(f"drsim: {args.households} households, two runs ...", flush=True)
    d = run_drsim(scenario_data(), args.season, args.day_type, args.households)
    assert d["scenario"].month == args.month
    bdew = run_bdew(args.month, args.day_type)
    crest = chk = chk_s = None
    if not args.no_crest:
        print(f"CREST: {args.crest_households} households x "
              f"{min(args.crest_days, len(days))} days, two runs ...", flush=True)
        crest, chk, chk_s = run_crest_part(args, days)
    result = report(args, d, bdew, crest, chk, np.random.default_rng(0))
    out = console()
    if args.figure is not None:
        draw_figure(args.figure, args, result["groups"], result["comp"], crest is not None)
        shown = args.figure.resolve()
        out.print(f"figure: {shown.relative_to(REPO) if shown.is_relative_to(REPO) else shown}")
    out.print(timing_line(args, d, bdew, crest, chk_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
