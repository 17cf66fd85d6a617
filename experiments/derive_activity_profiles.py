"""Derive CREST start-time curves (weekday and weekend) and a monthly daylight table.

What it derives, for ``start_profiles`` of ``drsim/data/appliances.yaml``:

* the activity curves ``tv``, ``cooking``, ``laundry``, ``washing_dressing``, ``ironing``
  and ``house_cleaning``: start weight at ten-minute slot t = sum over n = 1..5 active
  occupants of P(n active at t) x CREST activity probability(n, t);
* ``any_time`` = P(at least one active occupant at t);
* ``lighting_occupancy`` = E[effective occupancy at t], CREST's effective occupancy per
  number of active occupants (the lighting model's sharing of lights);

each for a weekday (the ``_wd`` tables) and a weekend day (``_we``). P(n active at t) is
the CREST occupancy Markov chain propagated from its 00:00 start states, household sizes
1-5 weighted equally. Every curve is divided by its weekday maximum, the weekend curve by
the same factor, so sum(weekend) / sum(weekday) is CREST's ratio of expected starts (or
of lit-room demand) per weekend day to per weekday. The weekday curves are compared with
the catalogue's current values, and ``lighting_occupancy`` with the catalogue's
``lighting`` curve in the slots that are dark on 15 January.

It also derives the share of each month's minutes in each ten-minute slot at which global
horizontal irradiance (direct + diffuse) is below CREST's lighting threshold of 60 W/m2,
from the test reference year that richardsonpy ships, moved onto the GMT clock at
Loughborough (52.77 N, 1.20 W) by equal local solar time.

Input files (richardsonpy 0.2.3, read the way richardsonpy reads them):

* ``inputs/constants/occ_start_states_{wd,we}.csv``: column 0 the number of active
  occupants (0-6), column k the probability of that start state for a household of k
  residents (``richardsonpy/classes/occupancy.py`` indexes ``start_probs[:][k]``, which
  picks row k; the table's columns sum to 1, its rows do not, so this script takes
  column k);
* ``inputs/constants/tpm{1..5}_{wd,we}.csv``: rows ``7 (i - 1) + s`` for time step
  i = 1..144 and current state s, columns 2..8 the next state 0..6. richardsonpy's
  ``functions/occupancy_model.all_states`` draws the state of slot t (00:00 + 10 t min)
  from the state of slot t - 1 with step i = t + 1, the start state preceding slot 0;
  this script uses the same alignment (it does not copy all_states' ``i == 8`` test,
  which forces state 0 at 01:10);
* ``inputs/constants/ActiveAppliances_{wd,we}.csv``: column 0 the number of active
  occupants n (0-5), column 1 the activity a (0 TV, 1 cooking, 2 laundry, 3
  washing/dressing, 4 ironing, 5 house cleaning; ``classes/appliance.py``), columns
  2..145 the 144 slots from 00:00. The table has six rows per n, so the row is
  6 n + a (richardsonpy's ``appliance.py`` reads row 5 n + a); this script addresses rows
  by their label columns;
* ``inputs/weather/TRY2010_05_Jahr.dat``: the default weather file of
  ``functions/load_radiation.get_rad_from_try_path`` (hourly direct and diffuse
  horizontal irradiance, columns B and D), resampled to minutes by
  ``functions/change_resolution.change_resolution`` (linear interpolation, the value of
  hour index h placed at h:00; index 0 is the file's first row, 31 December 24:00 =
  1 January 00:00; ``ElectricLoad.calc_stoch_el_profile`` then interpolates each day's
  minute series once more with ``np.interp(range(1440), 60 * range(1440), day)``, which
  reads minute indices as seconds and returns the first 24 minutes of the day: not
  copied). Its header names the TRY; the script prints it. The effective
  occupancy and the irradiance threshold are the defaults of richardsonpy's
  ``classes/lighting.LightingModelConfiguration``.

Sources:

* Richardson I., Thomson M., Infield D. (2008) A high-resolution domestic building
  occupancy model for energy demand simulations. Energy and Buildings 40(8), 1560-1566.
* Richardson I., Thomson M., Infield D., Clifford C. (2010) Domestic electricity use: a
  high-resolution energy demand model. Energy and Buildings 42(10), 1878-1887.
* Richardson I., Thomson M., Infield D., Delahunty A. (2009) Domestic lighting: a
  high-resolution energy demand model. Energy and Buildings 41(7), 781-789.
* Deutscher Wetterdienst (DWD) for the Bundesamt für Bauwesen und Raumordnung (BBR/BBSR):
  Testreferenzjahre von Deutschland für mittlere und extreme Witterungsverhältnisse
  (TRY 2010/2011, 15 climate regions, reference period 1988-2007); region 5, station
  Essen, mean year.
* Spencer J. W. (1971) Fourier series representation of the position of the sun.
  Search 2(5), 172 (equation of time, for the clock check of the weather file).

Run from the repository root::

    python scripts/derive_activity_profiles.py [--out DIR]

Writes DIR/profiles.yaml (``start_profiles``: per profile the weekday ``values`` and the
``weekend`` curve, 144 numbers each) and DIR/daylight.yaml (``dark_share``: 12 rows of 144
shares, January first; ``light_anyway``: CREST's 5 % chance of lighting in daylight), the
default DIR being ``derived``. Exits 0, or 2 if richardsonpy is not installed.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import yaml

from drsim.units import clock

SLOTS = 144  # ten-minute slots of a day
STATES = 7  # CREST's occupancy states: 0..6 active occupants
SIZES = (1, 2, 3, 4, 5)  # household sizes of the CREST transition matrices
ACTIVITIES = {"tv": 0, "cooking": 1, "laundry": 2, "washing_dressing": 3, "ironing": 4,
              "house_cleaning": 5}
REPO = Path(__file__).resolve().parents[1]
CATALOGUE = REPO / "drsim" / "data" / "appliances.yaml"
TOLERANCE = 0.002  # reproduction target for the weekday curves
# slots dark on 15 January at Loughborough under clear sky (the catalogue's lighting note):
# before 08:50 and from 15:20
DARK_15_JANUARY = np.r_[0:53, 92:SLOTS]
LOUGHBOROUGH = {"name": "Loughborough", "lat": 52.77, "lon": -1.20, "utc_offset_min": 0}
TIME_ZONES = {"MEZ": 60}  # clock zones of a TRY header, minutes east of UTC (CET)
LIGHT_ANYWAY = 0.05  # CREST lighting: chance of a switch-on although irradiance is high
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
MINUTES_PER_DEGREE = 4.0  # the sun's apparent motion: 360 degrees in 1440 minutes


def hhmm(slot: int) -> str:
    """Clock time at the start of ten-minute ``slot``."""
    return clock(slot * 10)


def richardsonpy_dir() -> Path | None:
    """richardsonpy's package folder, or None (and a one-line message) if it is missing."""
    try:
        import richardsonpy
    except ImportError as exc:
        print(f"richardsonpy is not importable ({exc}); install it with "
              "pip install -e '.[bench]'", file=sys.stderr)
        return None
    return Path(richardsonpy.__file__).parent


# --- the CREST tables ---------------------------------------------------------------------

def load_table(constants: Path, name: str) -> np.ndarray:
    """A ';'-separated CREST table as richardsonpy loads it."""
    return np.loadtxt(constants / name, delimiter=";")


def start_states(constants: Path, day: str) -> np.ndarray:
    """(5, 7): P(n active occupants at the start | household size k), k = 1..5."""
    table = load_table(constants, f"occ_start_states_{day}.csv")
    assert np.array_equal(table[:, 0], np.arange(STATES))
    start = table[:, list(SIZES)].T
    assert np.allclose(start.sum(axis=1), 1, atol=1e-4)
    return start


def transition_matrices(constants: Path, day: str) -> np.ndarray:
    """(5, 144, 7, 7): T[k, i, s, s'] = P(s' next | s now) at time step i + 1, size k + 1."""
    blocks = []
    for size in SIZES:
        table = load_table(constants, f"tpm{size}_{day}.csv")
        assert np.array_equal(table[:, 0], np.repeat(np.arange(1, SLOTS + 1), STATES))
        assert np.array_equal(table[:, 1], np.tile(np.arange(STATES), SLOTS))
        blocks.append(table[:, 2:].reshape(SLOTS, STATES, STATES))
    return np.stack(blocks)


def activity_probabilities(constants: Path, day: str) -> np.ndarray:
    """(6, 7, 144): CREST's probability of activity a with n active occupants per slot."""
    table = load_table(constants, f"ActiveAppliances_{day}.csv")
    occupants, activity = table[:, 0].astype(int), table[:, 1].astype(int)
    out = np.zeros((len(ACTIVITIES), STATES, SLOTS))
    out[activity, occupants] = table[:, 2:]
    assert not out[:, 0].any(), "no activity without active occupants"
    return out


def occupancy_distribution(start: np.ndarray, tpm: np.ndarray,
                           start_is_first_slot: bool = False) -> np.ndarray:
    """(144, 7): P(n active in slot t), the household sizes weighted equally.

    richardsonpy's alignment: slot t's distribution is the start distribution after the
    transition steps 1..t + 1. ``start_is_first_slot``: the alternative in which slot 0
    holds the start state itself and slot t follows steps 1..t.
    """
    p = start
    out = np.empty((len(SIZES), SLOTS, STATES))
    for t in range(SLOTS):
        if start_is_first_slot:
            p = start if t == 0 else np.einsum("ks,kst->kt", p, tpm[:, t - 1])
        else:
            p = np.einsum("ks,kst->kt", p, tpm[:, t])
        out[:, t] = p
    return out.mean(axis=0)


def lighting_defaults() -> tuple[np.ndarray, float]:
    """CREST's effective occupancy per state (0..6) and mean irradiance threshold (W/m2)."""
    from richardsonpy.classes.lighting import LightingModelConfiguration

    config = LightingModelConfiguration()
    eff = np.zeros(STATES)
    eff[:len(config.eff_occupancy)] = config.eff_occupancy
    return eff, float(config.ext_irr_threshold_mean)


def unscaled_curves(constants: Path, day: str, start_is_first_slot: bool = False
                    ) -> dict[str, np.ndarray]:
    """The unscaled curves of one day type (``wd`` or ``we``), by profile name."""
    occ = occupancy_distribution(start_states(constants, day),
                                 transition_matrices(constants, day), start_is_first_slot)
    assert np.allclose(occ.sum(axis=1), 1, atol=1e-3) and not occ[:, STATES - 1].any()
    act = activity_probabilities(constants, day)
    starts = np.einsum("tn,ant->at", occ[:, 1:], act[:, 1:])
    eff, _ = lighting_defaults()
    curves = {name: starts[a] for name, a in ACTIVITIES.items()}
    curves["any_time"] = 1 - occ[:, 0]
    curves["lighting_occupancy"] = occ @ eff
    return curves


def scaled_curves(constants: Path) -> tuple[dict, dict, dict]:
    """Weekday and weekend curves divided by the weekday maxima, and those maxima."""
    weekday = unscaled_curves(constants, "wd")
    weekend = unscaled_curves(constants, "we")
    scale = {name: float(curve.max()) for name, curve in weekday.items()}
    return ({n: c / scale[n] for n, c in weekday.items()},
            {n: c / scale[n] for n, c in weekend.items()}, scale)


# --- checks against the catalogue ----------------------------------------------------------

def catalogue_profiles() -> dict[str, np.ndarray]:
    """The catalogue's current weekday start profiles."""
    data = yaml.safe_load(CATALOGUE.read_text(encoding="utf-8"))
    return {name: np.asarray(p["values"], dtype=float)
            for name, p in data["start_profiles"].items()}


def report_reproduction(weekday: dict, alternative: dict, current: dict) -> None:
    """Max |recomputed - catalogue| per weekday curve, for both slot alignments."""
    print("Step 1: weekday curves vs the catalogue (max |difference|)")
    print(f"  {'profile':<18}{'richardsonpy alignment':>24}{'slot 0 = start state':>24}")
    for name in [*ACTIVITIES, "any_time"]:
        d = np.abs(weekday[name] - current[name]).max()
        alt = alternative[name] / alternative[name].max()
        d_alt = np.abs(alt - current[name]).max()
        flag = "ok" if d < TOLERANCE else "MISMATCH"
        print(f"  {name:<18}{d:>21.5f} {flag:<3}{d_alt:>23.4f}")


def report_lighting(weekday: dict, scale: dict, current: dict) -> None:
    """Compare E[effective occupancy] with the catalogue's lighting curve in dark slots."""
    occ = weekday["lighting_occupancy"][DARK_15_JANUARY]
    light = current["lighting"][DARK_15_JANUARY]
    ratio = light / occ
    unscaled = light / (occ * scale["lighting_occupancy"])
    print("Step 3: catalogue 'lighting' vs E[effective occupancy] in the 15 January dark "
          f"slots (before 08:50, from 15:20; {DARK_15_JANUARY.size} slots)")
    print(f"  E[eff occ] weekday max {scale['lighting_occupancy']:.5f} at "
          f"{hhmm(int(weekday['lighting_occupancy'].argmax()))}")
    print(f"  lighting / (E[eff occ] / weekday max): min {ratio.min():.4f}, max "
          f"{ratio.max():.4f}, max |difference| {np.abs(light - occ).max():.5f}")
    print(f"  lighting / E[eff occ]: mean {unscaled.mean():.5f} (1 / weekday max = "
          f"{1 / scale['lighting_occupancy']:.5f}); correlation "
          f"{np.corrcoef(light, occ)[0, 1]:.10f}")


# --- the weather file ------------------------------------------------------------------

def try_identity(path: Path) -> dict:
    """Identity of a DWD test reference year from its header (first lines of the file)."""
    lines = path.read_text(encoding="utf-8").splitlines()[:38]
    head = "\n".join(lines)
    lat = re.search(r"(\d+)°(\d+)'N", head)
    lon = re.search(r"(\d+)°(\d+)'O", head)
    zone = re.search(r"HH\s+Stunde\s+\((\w+)\)", head)
    field = {key: re.search(rf"{key}\s*:\s*(.+)", head).group(1).strip()
             for key in ("Art des TRY", "Bezugszeitraum", "Zeitpunkt der Erstellung")}
    place = re.search(r"Station:\s*(\S+)", head)
    return {"file": path.name, "title": " ".join(lines[0].split()), "place": place[1],
            "station": " ".join(lines[1].split()), "location": " ".join(lines[2].split()),
            "lat": int(lat[1]) + int(lat[2]) / 60, "lon": int(lon[1]) + int(lon[2]) / 60,
            "zone": zone[1], "utc_offset_min": TIME_ZONES[zone[1]], **field}


def months_of_days() -> np.ndarray:
    """Month (1..12) of each of the TRY's 365 days, from its MM column."""
    import richardsonpy.functions.load_radiation as loadrad

    data = loadrad.load_try_data()
    # row 0 is 31 December 24:00; rows 1 + 24 d .. 24 + 24 d hold day d's hours 1..24
    return data[1::24, 2].astype(int)[:365]


def equation_of_time(day_index: np.ndarray) -> np.ndarray:
    """Spencer's (1971) equation of time in minutes for 0-based days of the year."""
    g = 2 * np.pi * day_index / 365
    return 229.18 * (0.000075 + 0.001868 * np.cos(g) - 0.032077 * np.sin(g)
                     - 0.014615 * np.cos(2 * g) - 0.040849 * np.sin(2 * g))


def solar_noon_offset(global_minutes: np.ndarray, identity: dict) -> float:
    """Mean minutes by which the daily irradiance centroid (TRY clock) follows solar noon."""
    days = global_minutes.reshape(-1, 1440)
    minute = np.arange(1440)
    centroid = days @ minute / days.sum(axis=1)
    noon = (720 - MINUTES_PER_DEGREE * identity["lon"] + identity["utc_offset_min"]
            - equation_of_time(np.arange(days.shape[0])))
    return float(np.mean(centroid - noon))


def clock_shift(identity: dict, site: dict) -> float:
    """Minutes to add to the site's clock time to get the TRY clock time of equal solar time."""
    return (identity["utc_offset_min"] - site["utc_offset_min"]
            - MINUTES_PER_DEGREE * (identity["lon"] - site["lon"]))


def day_length_hours(lat: float, declination: float) -> float:
    """Sunrise-to-sunset hours at latitude ``lat`` for a solar declination (degrees)."""
    cos_h = -np.tan(np.radians(lat)) * np.tan(np.radians(declination))
    return float(2 * np.degrees(np.arccos(cos_h)) / 15)


def low_irradiance_table(global_minutes: np.ndarray, months: np.ndarray, shift: float,
                         threshold: float) -> np.ndarray:
    """(12, 144): share of each month's minutes per slot with irradiance below threshold.

    Site clock minute m takes the TRY's irradiance at TRY clock minute m + shift, read off
    richardsonpy's minute series by the same linear interpolation (exact, as that series
    is piecewise linear between the hours).
    """
    minutes = np.arange(global_minutes.size, dtype=float)
    shifted = np.interp(minutes + shift, minutes, global_minutes)
    dark = (shifted < threshold).reshape(months.size, SLOTS, 10).mean(axis=2)
    return np.stack([dark[months == m].mean(axis=0) for m in range(1, 13)])


# --- output -------------------------------------------------------------------------------

def fmt(value: float, decimals: int) -> str:
    """A number rounded to ``decimals`` without trailing zeros, like the catalogue's."""
    text = f"{value:.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def yaml_list(opener: str, values: np.ndarray, decimals: int, indent: int) -> list[str]:
    """A 144-value flow list after ``opener`` (e.g. ``values:``), 12 numbers per line, each
    line commented with its start time, like the catalogue's lists."""
    pad = " " * indent
    lines = [f"{pad}{opener} ["]
    for first in range(0, SLOTS, 12):
        row = ", ".join(fmt(v, decimals) for v in values[first:first + 12])
        end = "]" if first + 12 >= SLOTS else ","
        lines.append(f"{pad}  {row}{end}  # {hhmm(first)}")
    return lines


def profiles_yaml(weekday: dict, weekend: dict, scale: dict) -> str:
    """profiles.yaml: recomputed weekday values and the weekend curves, same units."""
    lines = [
        "# CREST start-time curves, weekday (values) and weekend (weekend), derived by",
        "# scripts/derive_activity_profiles.py from richardsonpy 0.2.3's CREST tables",
        "# (inputs/constants: occ_start_states, tpm1..5, ActiveAppliances; _wd and _we).",
        "# Start weight at slot t = sum over n=1..5 active occupants of P(n active at t) x",
        "# CREST activity probability(n, t); any_time = P(at least one active occupant);",
        "# lighting_occupancy = E[CREST effective occupancy]. P(n active at t): CREST",
        "# occupancy chain from its 00:00 start states, household sizes 1-5 equally weighted.",
        "# Both day types are divided by the weekday curve's maximum (the comment after each",
        "# name), so sum(weekend) / sum(weekday) is CREST's weekend-to-weekday ratio.",
        "# Sources: Richardson, Thomson, Infield (2008) Energy and Buildings 40(8) 1560-1566;",
        "# Richardson et al. (2010) Energy and Buildings 42(10) 1878-1887; Richardson et al.",
        "# (2009) Energy and Buildings 41(7) 781-789.",
        "start_profiles:",
    ]
    for name in weekday:
        ratio = weekend[name].sum() / weekday[name].sum()
        lines.append(f"  {name}:  # weekday max (unscaled) {scale[name]:.6g}; "
                     f"sum(weekend)/sum(weekday) = {ratio:.4f}")
        lines += yaml_list("values:", weekday[name], 4, 4)
        lines += yaml_list("weekend:", weekend[name], 4, 4)
    return "\n".join(lines) + "\n"


def daylight_yaml(table: np.ndarray, identity: dict, shift: float, threshold: float,
                  site: dict, lat_note: str) -> str:
    """daylight.yaml: the 12 x 144 low-irradiance table with where it comes from."""
    header = (
        f"Share of each month's minutes in each ten-minute slot (GMT, {site['name']}, "
        f"{site['lat']:.2f} N, {-site['lon']:.2f} W) at which global horizontal irradiance "
        f"(direct + diffuse) is below CREST's lighting threshold of {threshold:g} W/m2 "
        "(Richardson et al. 2009, Energy and Buildings 41(7) 781-789). Derived by "
        "scripts/derive_activity_profiles.py.\n"
        f"Data: {identity['file']} as shipped with richardsonpy 0.2.3 (inputs/weather), a "
        "German test reference year of the Deutscher Wetterdienst for the BBR/BBSR: "
        f"{identity['title']}; {identity['station']}; {identity['location']}; "
        f"{identity['Art des TRY']}, reference period {identity['Bezugszeitraum']}, created "
        f"{identity['Zeitpunkt der Erstellung']}. Hourly direct (B) and diffuse (D) "
        f"irradiance on {identity['zone']} (CET = UTC+1, no summer time), resampled to "
        "minutes the way richardsonpy does (change_resolution: linear interpolation, the "
        "value of hour h at h:00).\n"
        f"Shift: the slot at GMT clock time t takes the TRY's value at TRY clock time "
        f"t + {shift:.2f} min, the time of equal local solar time ({identity['zone']} is "
        f"{identity['utc_offset_min']} min ahead of GMT; {identity['place']} lies "
        f"{identity['lon'] - site['lon']:.2f} degrees east of {site['name']}, "
        f"{MINUTES_PER_DEGREE:g} min per degree). {lat_note}"
    )
    lines = [textwrap.fill(part, width=92, initial_indent="# ", subsequent_indent="# ")
             for part in header.split("\n")]
    lines += [
        f"threshold_w_m2: {threshold:g}",
        f"try_clock_minus_gmt_minutes: {shift:.2f}",
        f"light_anyway: {LIGHT_ANYWAY:g}  # CREST's chance of a switch-on in daylight",
        "dark_share:  # rows: months January..December; 144 slots from 00:00 GMT",
    ]
    for month, row in zip(MONTHS, table, strict=True):
        lines += yaml_list("-", row, 3, 2)
        lines[-SLOTS // 12 - 1] += f"  # {month}"
    return "\n".join(lines) + "\n"


def report_daylight(table: np.ndarray) -> None:
    """Hours below the threshold per month and the first/last slot below 50 %."""
    print("  month      dark h   first / last slot with share < 50 %")
    for name, row in zip(MONTHS, table, strict=True):
        light = np.flatnonzero(row < 0.5)
        span = f"{hhmm(light[0])} / {hhmm(light[-1])}" if light.size else "none"
        print(f"  {name:<9}  {row.sum() * 10 / 60:5.2f}   {span}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("derived"),
                    help="folder for profiles.yaml and daylight.yaml")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Derive, check, write and summarise."""
    args = parse_args(argv)
    package = richardsonpy_dir()
    if package is None:
        return 2
    from experiments.crest_model import irradiance

    constants = package / "inputs" / "constants"
    current = catalogue_profiles()
    weekday, weekend, scale = scaled_curves(constants)
    alternative = unscaled_curves(constants, "wd", start_is_first_slot=True)
    report_reproduction(weekday, alternative, current)
    report_lighting(weekday, scale, current)

    _, threshold = lighting_defaults()
    identity = try_identity(package / "inputs" / "weather" / "TRY2010_05_Jahr.dat")
    direct, diffuse = irradiance()
    global_minutes = direct + diffuse
    shift = clock_shift(identity, LOUGHBOROUGH)
    lengths = [day_length_hours(lat, dec) for dec in (-23.44, 23.44)
               for lat in (identity["lat"], LOUGHBOROUGH["lat"])]
    lat_note = (f"Latitude difference ignored: {LOUGHBOROUGH['lat'] - identity['lat']:.2f}"
                f" degrees (day length at the winter solstice {lengths[0]:.2f} h at "
                f"{identity['place']},"
                f" {lengths[1]:.2f} h at {LOUGHBOROUGH['name']}; summer {lengths[2]:.2f} h"
                f" and {lengths[3]:.2f} h).")
    print(f"Step 4: weather file {identity['file']}: {identity['title']}")
    print(f"  {identity['station']}; {identity['location']}")
    print(f"  {identity['Art des TRY']}, {identity['Bezugszeitraum']}, created "
          f"{identity['Zeitpunkt der Erstellung']}; clock {identity['zone']} (UTC+"
          f"{identity['utc_offset_min'] // 60}); lat {identity['lat']:.3f} N, "
          f"lon {identity['lon']:.3f} E")
    print(f"  daily irradiance centroid minus solar noon (TRY clock, Spencer's equation of"
          f" time): {solar_noon_offset(global_minutes, identity):+.1f} min")
    print(f"  shift to GMT at {LOUGHBOROUGH['name']}: TRY clock = GMT + {shift:.2f} min")
    print(f"  {lat_note}")
    table = low_irradiance_table(global_minutes, months_of_days(), shift, threshold)
    report_daylight(table)

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "profiles.yaml").write_text(profiles_yaml(weekday, weekend, scale),
                                            encoding="utf-8")
    (args.out / "daylight.yaml").write_text(
        daylight_yaml(table, identity, shift, threshold, LOUGHBOROUGH, lat_note),
        encoding="utf-8")

    print("Summary: sum(weekend) / sum(weekday), same units")
    for name in weekday:
        print(f"  {name:<20}{weekend[name].sum() / weekday[name].sum():.4f}")
    hours = table.sum(axis=1) * 10 / 60
    print("  dark hours per month (GMT, Loughborough): "
          + ", ".join(f"{h:.1f}" for h in hours))
    print(f"wrote {args.out / 'profiles.yaml'} and {args.out / 'daylight.yaml'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
