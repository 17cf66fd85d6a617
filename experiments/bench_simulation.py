"""Benchmark: household-days per second per core, drsim against richardsonpy (CREST).

What it measures, in one process and one run, side by side:

* **drsim**: ``drsim.simulate_households(scenario, first, count, dr_events=None)`` with
  the full model of ``scenarios/paper_100k.yaml`` (1-minute resolution, all appliances,
  EVs, the scenario's DR event). After one warm-up call of ``--households`` households
  (data files, caches, the allocator) outside the timed ones, ``--repeats`` calls of
  ``--households`` households each (``first`` = 0, n, 2n, ...) are timed with
  ``time.perf_counter()``; rate = households / seconds. One call returns one day (1440
  minutes) per household, and that is what is counted as a household-day, although the
  model also draws the day before (warm-up) and the day after (rebound) internally.
* **richardsonpy** (the Python port of the CREST model, as packaged): one household
  (3 occupants) at 1-minute resolution with ``Occupancy`` + ``ElectricLoad``, the way the
  package's ``examples/example_el_load.py`` does it; rate = days / seconds. The TRY
  weather file (irradiance) is loaded once, outside the timing, as drsim's scenario
  is; the occupancy and the load simulation are timed. ``ElectricLoad`` always simulates
  a whole year, so a shorter ``--rich-days`` (or the automatic cut when a year would take
  longer than three minutes) runs the same per-day loop through the package's
  ``ElectricityProfile`` wrapper. Each repetition uses its own seed (``random.seed``).

Each model runs in a process of its own, started once, on one core each at a time:
BLAS/OpenMP thread pools are limited to one thread before numpy is imported. The timed
runs alternate (drsim, richardsonpy, drsim, ...), one at a time, so that a drift of the
machine falls on both alike; separate processes keep one model's allocations from
changing the other's (in one process, a drsim call right after a year of richardsonpy
took about twice as long as the next: the allocator had given back the memory drsim's
arrays reuse).

Why a ratio: the machines this runs on are shared and noisy, so absolute rates move
from run to run. Both models are measured in the same run on the same machine and the
medians are compared; the ratio drsim / richardsonpy is the number to look at (goal
≥ 1,000×). All individual timings are printed too, with the process CPU time of each,
so a run disturbed by other load (wall time well above CPU time) can be seen.

Run from the repository root::

    pip install -e '.[bench]'
    python scripts/bench_simulation.py [--households 5000] [--repeats 3]
                                       [--rich-days 365] [--rich-repeats 3]

Exits 0 whether or not the goal is met, 2 if richardsonpy is not installed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import random
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

GOAL = 1000.0  # drsim must be at least this many times faster per core
RICH_BUDGET_S = 180.0  # above this estimate for one richardsonpy run, simulate fewer days
RICH_OCCUPANTS = 3  # as in richardsonpy's examples/example_el_load.py
RICH_PROBE_DAYS = 3  # warm-up run of richardsonpy, also used to estimate the time per day
SCENARIO = Path(__file__).resolve().parent.parent / "drsim/data/scenarios" / "paper_100k.yaml"
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Household-days per second per core: drsim vs richardsonpy (CREST).")
    p.add_argument("--households", type=int, default=5000,
                   help="drsim households per timed repetition (default: 5000)")
    p.add_argument("--repeats", type=int, default=3,
                   help="drsim timed repetitions (default: 3)")
    p.add_argument("--rich-days", type=int, default=365,
                   help="days per richardsonpy household run (default: 365, one year)")
    p.add_argument("--rich-repeats", type=int, default=3,
                   help="richardsonpy timed repetitions, one seed each (default: 3)")
    args = p.parse_args(argv)
    for name in ("households", "repeats", "rich_days", "rich_repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.rich_days > 365:
        p.error("--rich-days must be at most 365 (richardsonpy simulates at most one year)")
    return args


def timed(fn, *args, **kwargs):
    """(result, wall seconds, process CPU seconds) of one call."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn(*args, **kwargs)
    t1, c1 = time.perf_counter(), time.process_time()
    return out, t1 - t0, c1 - c0


# --------------------------------------------------------------------------- drsim
def drsim_setup(households: int, repeats: int) -> dict:
    """The scenario, and a warm-up call on households after the timed ones."""
    import drsim

    scenario = drsim.load_scenario(SCENARIO)
    needed = households * (repeats + 1)
    if needed > scenario.households:
        raise SystemExit(
            f"--households x (--repeats + 1 for the warm-up) = {needed} exceeds the "
            f"{scenario.households} households of {SCENARIO.name}")
    _, warm_s, _ = timed(drsim.simulate_households, scenario, households * repeats,
                         households, dr_events=None)
    return {"scenario": scenario, "scenario_households": scenario.households,
            "households": households, "warmup_s": warm_s, "runs": []}


def drsim_run(d: dict, i: int) -> None:
    """Timed run ``i``: households ``i·n .. (i+1)·n − 1``."""
    import drsim

    households = d["households"]
    first = i * households
    kw, wall, cpu = timed(drsim.simulate_households, d["scenario"], first, households,
                          dr_events=None)
    assert kw.shape == (households, 1440), kw.shape
    d["runs"].append({"first": first, "wall": wall, "cpu": cpu, "rate": households / wall,
                      "kwh_per_household": float(kw.sum(dtype="float64")) / 60 / households})


# --------------------------------------------------------------------------- richardsonpy
def rich_household(days: int, q_direct, q_diffuse) -> object:
    """One household for ``days`` days at 60 s; returns the load curve in W."""
    import richardsonpy.classes.occupancy as occ

    from experiments.crest_model import crest_days

    occupancy = occ.Occupancy(number_occupants=RICH_OCCUPANTS, nb_days=days)
    if days == 365:  # the packaged way; ElectricLoad always simulates the whole year
        import richardsonpy.classes.electric_load as eload

        load = eload.ElectricLoad(occ_profile=occupancy.occupancy,
                                  total_nb_occ=RICH_OCCUPANTS, q_direct=q_direct,
                                  q_diffuse=q_diffuse, timestep=60)
        return load.loadcurve
    return crest_days(occupancy.occupancy, RICH_OCCUPANTS, 1, days,
                      q_direct + q_diffuse).ravel()


def rich_setup(days: int) -> dict:
    """The irradiance, a warm-up (class-level caches of transition matrices and activity
    statistics) and, from it, the days per run that keep one run under RICH_BUDGET_S."""
    from experiments.crest_model import irradiance as crest_irradiance

    irradiance = crest_irradiance()
    random.seed(0)
    _, probe_s, _ = timed(rich_household, RICH_PROBE_DAYS, *irradiance)
    per_day = probe_s / RICH_PROBE_DAYS
    note = None
    if days * per_day > RICH_BUDGET_S:
        cut = max(1, int(RICH_BUDGET_S / per_day))
        note = (f"{days} days would take about {days * per_day:.0f} s per run "
                f"(> {RICH_BUDGET_S:.0f} s): simulated {cut} days instead")
        days = cut
    return {"days": days, "note": note, "probe_s": probe_s, "irradiance": irradiance,
            "runs": []}


def rich_run(r: dict, i: int) -> None:
    """Timed run ``i``, with ``random.seed(i + 1)``."""
    seed = i + 1
    random.seed(seed)
    days = r["days"]
    curve, wall, cpu = timed(rich_household, days, *r["irradiance"])
    assert len(curve) == days * 1440, len(curve)
    r["runs"].append({"seed": seed, "wall": wall, "cpu": cpu, "rate": days / wall,
                      "kwh_per_day": float(curve.sum()) / 60 / 1000 / days})


MODELS = {"drsim": (drsim_setup, drsim_run), "richardsonpy": (rich_setup, rich_run)}
SHOWN = ("scenario_households", "warmup_s", "days", "note", "probe_s")  # setup, reported


def serve(conn, model: str, setup_args: tuple) -> None:
    """A model's own process: set up, then one timed run per index received (None ends)."""
    setup, run = MODELS[model]
    state = setup(*setup_args)
    conn.send({k: state[k] for k in SHOWN if k in state})
    while (i := conn.recv()) is not None:
        run(state, i)
        conn.send(state["runs"][-1])


def alternate(args: argparse.Namespace) -> tuple[dict, dict]:
    """Start each model's process (one after the other), then alternate the timed runs;
    each model's setup values and runs."""
    ctx = multiprocessing.get_context("spawn")
    plan = {"drsim": ((args.households, args.repeats), args.repeats),
            "richardsonpy": ((args.rich_days,), args.rich_repeats)}
    workers, out = {}, {}
    try:
        for model, (setup_args, _) in plan.items():
            conn, child = ctx.Pipe()
            proc = ctx.Process(target=serve, args=(child, model, setup_args), daemon=True)
            proc.start()
            workers[model] = (proc, conn)
            out[model] = {**conn.recv(), "runs": []}
        for i in range(max(n for _, n in plan.values())):
            for model, (_, n) in plan.items():
                if i < n:
                    workers[model][1].send(i)
                    out[model]["runs"].append(workers[model][1].recv())
    except EOFError:
        raise SystemExit(f"the {model} process ended early (its error is above)") from None
    finally:
        for proc, conn in workers.values():
            if proc.is_alive():
                conn.send(None)
            proc.join()
    return out["drsim"], out["richardsonpy"]


def medians(x: dict) -> dict:
    """``x`` with the medians of its runs' rate and wall time."""
    return {**x, "median_rate": statistics.median(r["rate"] for r in x["runs"]),
            "median_wall": statistics.median(r["wall"] for r in x["runs"])}


# --------------------------------------------------------------------------- report
def report(args, d: dict, r: dict) -> None:
    import numpy as np
    import richardsonpy
    import simpy
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, Console().width), highlight=False, soft_wrap=True)
    ratio = d["median_rate"] / r["median_rate"]
    met = ratio >= GOAL

    try:
        drsim_version = metadata.version("drsim")
    except metadata.PackageNotFoundError:  # run from a checkout without installing
        drsim_version = "(checkout, not installed)"
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    cores = f"{os.cpu_count()} logical" + (f", {affinity} usable by this process"
                                           if affinity is not None else "")

    console.print("\n[bold]Household-days per second per core: drsim vs richardsonpy[/]")
    console.print(f"machine   : {platform.machine()} {platform.processor() or ''}".rstrip()
                  + f", cores: {cores}; {platform.system()} {platform.release()}")
    console.print(f"software  : Python {platform.python_version()} "
                  f"({platform.python_implementation()}), numpy {np.__version__}, "
                  f"simpy {simpy.__version__}, drsim {drsim_version}, "
                  f"richardsonpy {richardsonpy.__version__}")
    threads = ", ".join(f"{v}={os.environ.get(v)}" for v in THREAD_VARS[:3])
    console.print(f"threads   : one process per model, one run at a time, {threads}")
    console.print(f"drsim     : scenario {SCENARIO.name} ({d['scenario_households']} "
                  "households), "
                  f"full model, 1-min resolution, scenario's DR event; "
                  f"{args.repeats} x {args.households} households, "
                  f"first = 0, {args.households}, ...; warm-up "
                  f"{args.households} households ({d['warmup_s']:.2f} s); timed runs "
                  "alternate with richardsonpy's")
    how = ("Occupancy + ElectricLoad" if r["days"] == 365
           else "Occupancy + ElectricLoad's day loop via ElectricityProfile")
    console.print(f"richardson: CREST as packaged ({how}), "
                  f"{RICH_OCCUPANTS} occupants, 1-min resolution, {r['days']} days per run, "
                  f"{args.rich_repeats} run(s), seeds 1..{args.rich_repeats}; warm-up "
                  f"{RICH_PROBE_DAYS} days ({r['probe_s']:.2f} s)")
    if r["note"]:
        console.print(f"[bold yellow]NOTE[/]: richardsonpy {r['note']}.")

    t = Table(title="Timings (wall = time.perf_counter, cpu = time.process_time)")
    for col in ("model", "run", "households x days", "wall s", "cpu s",
                "household-days/s", "kWh per household-day"):
        t.add_column(col, justify="left" if col in ("model", "run") else "right")
    for i, run in enumerate(d["runs"]):
        t.add_row("drsim", f"{i + 1} (first={run['first']})", f"{args.households} x 1",
                  f"{run['wall']:.3f}", f"{run['cpu']:.3f}", f"{run['rate']:,.1f}",
                  f"{run['kwh_per_household']:.2f}")
    for i, run in enumerate(r["runs"]):
        t.add_row("richardsonpy", f"{i + 1} (seed={run['seed']})", f"1 x {r['days']}",
                  f"{run['wall']:.3f}", f"{run['cpu']:.3f}", f"{run['rate']:,.2f}",
                  f"{run['kwh_per_day']:.2f}")
    console.print(t)

    s = Table(title="Result (medians)")
    s.add_column("")
    s.add_column("median wall s per run", justify="right")
    s.add_column("household-days/s/core", justify="right")
    s.add_row("drsim", f"{d['median_wall']:.3f}", f"{d['median_rate']:,.1f}")
    s.add_row("richardsonpy", f"{r['median_wall']:.3f}", f"{r['median_rate']:,.2f}")
    s.add_row("ratio drsim / richardsonpy", "", f"[bold]{ratio:,.0f}x[/]")
    s.add_row("goal", "", f">= {GOAL:,.0f}x")
    s.add_row("goal met", "", "[bold green]yes[/]" if met else "[bold red]NO[/]")
    console.print(s)
    if not met:
        console.print(f"drsim would need {GOAL * r['median_rate']:,.0f} household-days/s/core "
                      f"({GOAL / ratio:.1f}x its current median) to meet the goal.")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for var in THREAD_VARS:  # one core: before numpy (and BLAS) is first imported
        os.environ.setdefault(var, "1")
    from experiments.crest_model import (
        require_richardsonpy,  # after the thread settings: imports numpy
    )

    if not require_richardsonpy():
        return 2

    print(f"drsim: {args.repeats} x {args.households} households, richardsonpy: "
          f"{args.rich_repeats} x {args.rich_days} days, alternately ...", flush=True)
    d, r = alternate(args)
    report(args, medians(d), medians(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
