"""Day-to-day variation of an aggregate's evening load, without and with the common day factor.

What it measures: the households ``0 .. N-1`` of a scenario (``scenarios/paper_100k.yaml``
by default, its month and day type) are simulated without DR on ``--days`` simulated days,
the evaluated day and the days before it as the ``prior_days`` baseline draws them
(``ChunkSimulator(pop, day_offset=-k * 1000)``, k = 0 .. days-1), in chunks of
``--chunk`` households. Each household's energy over 17:00-23:00 is kept per day. Groups
of 430, 10,000 and 100,000 households are disjoint blocks of consecutive households
(every full block of the simulated ones: 232 blocks of 430 and 10 of 10,000 in 100,000);
for each block the day-to-day coefficient of variation of its summed evening energy is
the sample standard deviation over the days divided by the mean, and the table gives the
blocks' median and range.

Settings, each on the same households and days (common random numbers):

* ``off``: the scenario as it is (``day_variation.cv`` 0), days independent;
* ``level, cv X``: the common day factor with each ``--cv`` on heating and lighting, no
  timing shift;
* ``level + timing, cv X``: the same and the shift of activity timing, ``--timing``
  minutes.

All households share one factor (the region's; ``by_group`` false), so blocks straddling
groups change nothing. With ``--households`` below 100,000 the larger blocks are
estimated from the simulated ones: the aggregate's variance is that of the independent
household draws, which falls as 1/N, plus that of the shared factor, which does not,

.. math:: CV_N^2 \\approx CV_{n,\\mathrm{off}}^2 \\cdot n / N + (CV_{n}^2 - CV_{n,\\mathrm{off}}^2),

with :math:`n` the simulated households (the table says "estimated"). Each CV is
estimated from ``--days`` days; its relative standard error is about
:math:`1/\\sqrt{2(days - 1)}` (13 % for 30 days), and the blocks' median of 430
households is much tighter than that of one block.

Run from the repository root::

    python scripts/day_variation.py [--households 100000] [--days 30] [--cv 0.1 0.25 0.4]
                                    [--timing 15]

Everything it prints is drsim's; docs/model.md, "Day-to-day variation", has the table of
a run with the defaults.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from drsim.household.population import Population
from drsim.household.sim import ChunkSimulator
from drsim.scenario import Scenario, load_scenario

ROOT = Path(__file__).resolve().parent.parent
EVENING = (17 * 60, 23 * 60)  # 17:00-23:00 [minutes since midnight]
SIZES = (430, 10_000, 100_000)  # households per group
DAY_STRIDE = 1000  # the prior_days baseline's counter offset between days


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", type=Path,
                   default=ROOT / "drsim/data/scenarios" / "paper_100k.yaml")
    p.add_argument("--households", type=int, default=100_000,
                   help="households simulated (0 .. N-1); larger groups are estimated")
    p.add_argument("--days", type=int, default=30, help="simulated days per setting")
    p.add_argument("--cv", type=float, nargs="+", default=[0.1, 0.25, 0.4],
                   help="day_variation.cv of the settings with the factor on")
    p.add_argument("--timing", type=float, default=15.0,
                   help="day_variation.timing_minutes of the timing setting")
    p.add_argument("--chunk", type=int, default=5000, help="households simulated at once")
    args = p.parse_args(argv)
    if args.days < 3 or args.households < min(SIZES) or args.chunk < 1:
        p.error("need at least 3 days, 430 households and a chunk of 1")
    return args


def settings(args: argparse.Namespace) -> dict[str, dict]:
    """The day_variation of each compared setting, by name."""
    out: dict[str, dict] = {"off": {}}
    for cv in args.cv:
        out[f"level, cv {cv:g}"] = {"cv": cv, "timing_minutes": 0.0}
        out[f"level + timing, cv {cv:g}"] = {"cv": cv, "timing_minutes": args.timing}
    return out


def evening_energy(scenario: Scenario, households: int, days: int, chunk: int) -> np.ndarray:
    """Each household's 17:00-23:00 energy on each simulated day, (households, days) [kWh]."""
    lo, hi = EVENING
    out = np.empty((households, days))
    for first in range(0, households, chunk):
        pop = Population(scenario, first, min(chunk, households - first))
        for k in range(days):
            run = ChunkSimulator(pop, day_offset=-k * DAY_STRIDE).run([], until=hi)
            out[first:first + pop.count, k] = run.load(lo, hi).sum(axis=1) / 60.0
    return out


def block_cvs(energy: np.ndarray, size: int) -> np.ndarray:
    """The day-to-day CV of each full block of ``size`` consecutive households [1]."""
    blocks = len(energy) // size
    totals = energy[:blocks * size].reshape(blocks, size, -1).sum(axis=1)  # (blocks, days)
    return totals.std(axis=1, ddof=1) / totals.mean(axis=1)


def table(energies: dict[str, np.ndarray]) -> list[tuple[str, int, str, str, str]]:
    """Rows (setting, N, blocks, median CV, range) of the report."""
    rows = []
    n = len(energies["off"])
    cv_off = block_cvs(energies["off"], n)[0]
    for name, energy in energies.items():
        cv_all = block_cvs(energy, n)[0]
        for size in SIZES:
            if size <= n:
                cvs = block_cvs(energy, size)
                rows.append((name, size, str(len(cvs)), f"{100 * np.median(cvs):.2f} %",
                             f"{100 * cvs.min():.2f}-{100 * cvs.max():.2f} %"))
            else:  # estimated: the independent part falls as 1/N, the shared part stays
                shared = max(cv_all**2 - cv_off**2, 0.0)
                cv = np.sqrt(cv_off**2 * n / size + shared)
                rows.append((name, size, "estimated", f"{100 * cv:.2f} %", ""))
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    base = load_scenario(args.scenario)
    energies = {}
    for name, variation in settings(args).items():
        start = time.perf_counter()
        scenario = base.model_copy(update={"day_variation": base.day_variation.model_validate(
            variation)})
        energies[name] = evening_energy(scenario, args.households, args.days, args.chunk)
        print(f"{name}: {args.households} households x {args.days} days in "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    per_household = energies["off"].mean()
    print(f"\n{base.name} ({base.season}, {base.day_type}), 17:00-23:00 energy "
          f"{per_household:.3f} kWh per household-day; timing {args.timing:g} min; "
          f"CV over {args.days} days\n")
    print("| setting | households | blocks | day-to-day CV (median) | range |")
    print("|---|---|---|---|---|")
    for row in table(energies):
        print("| " + " | ".join(str(c) for c in row) + " |")
    return 0
