"""The load-shedding case studies of the dissertation (§4.1 Figure 4.1, §4.4.4 Figures
4.18 and 4.19) on **generated** streams (:mod:`experiments.ch4_case_data` says why and
what they are built to).

* ``bike_partial_matches`` (Figure 4.1): the live partial matches of Listing 4.1 over the
  trips as the stream goes on, unshed, with the trips per hour beside them;
* ``bike_bound_p95`` (Figure 4.18): Listing 4.1 (paths of at least five stations) under
  bounds of 80, 60, 40 and 20 % of the unshed latency, for Hybrid and RI, SI, RS, SS;
  the source bounds the 99th percentile, drsim's latency monitor offers the average and
  the 95th percentile (:mod:`cep_core.shedding.clock`), so the 95th it is;
* ``cluster_bound_avg`` (Figure 4.19): Listing 4.3 over the task events under bounds of
  80-20 % of the unshed average latency.

The set-up of :mod:`experiments.reproduce_ch4` (its ``Case`` and ``Setup``): the cost
model is fitted on another stream of the same generator, the device's cost per unit of
work makes the unshed run 90 % busy, throughput is events per second of device time.

Run from the repository root::

    python scripts/ch4_cases.py [--quick] [--out results/ch4] [--figures docs/figures]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import cep_core  # noqa: E402
from experiments import ch4_case_data  # noqa: E402
from experiments.reproduce_ch4 import BASELINES, COLUMNS, Case, Run, Setup, _one  # noqa: E402
from experiments.results_csv import (  # noqa: E402
    draw_csv,
    report,
    reproduction_parser,
    spawn_pool,
    write_rows,
)

SHARES = (0.8, 0.6, 0.4, 0.2)
STRATEGIES = (*BASELINES, "Hybrid")
PM_COLUMNS = ("experiment", "time_h", "live_pms", "trips_per_hour", "events")


def cases(quick: bool) -> tuple[Case, Case]:
    """The two case studies: trips at 0.05/s outside the rush, task events at 0.5/s."""
    bike = Case(ch4_case_data.BIKE_QUERY, data="citibike", rate=0.05,
                events=1500 if quick else 3000, time_unit="s")
    cluster = Case(ch4_case_data.CLUSTER_QUERY, data="cluster", rate=0.5,
                   events=20000 if quick else 60000, time_unit="s")
    return bike, cluster


def plan(quick: bool) -> list[Run]:
    """The runs of Figures 4.18 and 4.19 (module doc)."""
    bike, cluster = cases(quick)
    return ([Run("bike_bound_p95", bike, s, share, "p95") for share in SHARES
             for s in STRATEGIES]
            + [Run("cluster_bound_avg", cluster, s, share, "avg") for share in SHARES
               for s in STRATEGIES])


def partial_matches(case: Case, points: int = 200) -> list[dict]:
    """Figure 4.1: the live partial matches of ``case``'s query, unshed, at ``points``
    moments of its test stream, with the events per hour of stream time around each."""
    query = cep_core.compile(case.query, time_unit=case.time_unit)
    stream = case.stream(case.events, case.seed + 2)
    session = query.start(output="matches", engine="reference")
    step = max(1, len(stream) // points)
    times = np.array([e["time"] for e in stream])
    rows = []
    for i in range(0, len(stream), step):
        session.feed(stream[i:i + step])
        t = times[min(len(stream), i + step) - 1]
        recent = np.count_nonzero((times > t - 3600) & (times <= t))
        rows.append({"experiment": "bike_partial_matches", "time_h": t / 3600,
                     "live_pms": session.engine.live_count(), "trips_per_hour": recent,
                     "events": i + step})
    return rows


def check(rows: list[dict]) -> list[tuple[str, bool]]:
    """§4.4.4's statements: Hybrid has the best recall at every bound (both cases); at
    the 20 % bound its recall over RI, SI, RS, SS (source: 11.4, 11, 3.9, 2.7× for the
    trips; up to 4× over RI, SI and 1.5× over RS, SS for the cluster); its throughput
    near the state strategies' for the trips and near SI's for the cluster."""
    out = []
    by = {(r["experiment"], r["strategy"], float(r["bound"])): r for r in rows
          if r["experiment"] != "bike_partial_matches"}
    for exp in ("bike_bound_p95", "cluster_bound_avg"):
        bounds = sorted({b for e, _, b in by if e == exp}, reverse=True)
        for b in bounds:
            rec = {s: float(by[(exp, s, b)]["recall"]) for s in STRATEGIES}
            best = max(BASELINES, key=rec.get)
            ratios = ", ".join(f"{s} {rec['Hybrid'] / rec[s]:.1f}x" if rec[s] > 0
                               else f"{s} (0)" for s in BASELINES)
            out.append((f"{exp} at {b:.0%}: Hybrid recall {rec['Hybrid']:.3f}, best "
                        f"baseline {best} {rec[best]:.3f}; Hybrid over {ratios}",
                        rec["Hybrid"] >= rec[best]))
        if bounds:
            b = bounds[-1]
            thr = {s: float(by[(exp, s, b)]["throughput"]) for s in STRATEGIES}
            near = ("RS", "SS") if exp.startswith("bike") else ("SI",)
            ref = max(thr[s] for s in near)
            listed = ", ".join(f"{s} {thr[s]:.3g}" for s in STRATEGIES)
            out.append((f"{exp} at {b:.0%}: throughput {listed} events/s (Hybrid within "
                        f"25 % of {'/'.join(near)})", thr["Hybrid"] >= 0.75 * ref))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = reproduction_parser(__doc__.split("\n\n")[0], Path("results/ch4"),
                             "shorter streams (1,500 trips, 20,000 task events)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    if args.draw:
        return draw_csv(args.draw, args.figures, draw)
    t0 = time.perf_counter()
    runs = plan(args.quick)
    found = list(dict.fromkeys(r.case for r in runs))
    with spawn_pool(args.workers) as pool:
        pms = pool.submit(partial_matches, cases(args.quick)[0])
        setups = dict(zip(found, pool.map(Setup, found), strict=True))
        for case, s in setups.items():
            print(f"{case.data}: {len(s.stream):,} events over {s.span / 3600:.1f} h, "
                  f"{len(s.truth):,} matches unshed; unshed latency avg "
                  f"{s.unshed['latency_avg']:.3g} s, p95 {s.unshed['latency_p95']:.3g} s",
                  flush=True)
        rows = list(pool.map(_one, [(r, setups[r.case]) for r in runs]))
        pm_rows = pms.result()
    tag = "" if args.quick else "_full"
    path = args.out / f"cases{tag}.csv"
    write_rows(rows, path, COLUMNS)
    write_rows(pm_rows, args.out / f"cases_partial_matches{tag}.csv", PM_COLUMNS)
    report(check(rows), args.figures, "experiments.ch4_cases", path)
    print(f"wrote {path} ({len(rows)} runs) in {time.perf_counter() - t0:.0f} s")
    return 0


def draw(rows, folder: Path) -> list[Path]:
    """Figures 4.1, 4.18 and 4.19 from the rows (or the CSV's path; Figure 4.1 from the
    ``cases_partial_matches`` CSV beside it, when there)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from experiments.ch4_figures import _lines

    pm = None
    if isinstance(rows, str | Path):
        side = Path(str(rows).replace("cases", "cases_partial_matches"))
        pm = pd.read_csv(side) if side.exists() else None
        rows = pd.read_csv(rows)
    d = pd.DataFrame(rows).astype({"bound": float, "recall": float, "throughput": float})
    fig, axes = plt.subplots(1, 5, figsize=(22, 3.8))
    for i, (exp, title) in enumerate((("bike_bound_p95", "trips, p95 bound (Fig. 4.18)"),
                                      ("cluster_bound_avg", "tasks, avg bound (Fig. 4.19)"))):
        for j, y in enumerate(("recall", "throughput")):
            ax = axes[1 + 2 * i + j]
            _lines(ax, d[d["experiment"] == exp], "bound", y, STRATEGIES)
            ax.set_xlabel(f"bound [share of unshed]; {title}")
            ax.set_ylabel(y if y == "recall" else "throughput [events/s, device]")
            ax.invert_xaxis()
            ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7)
    if pm is not None:
        ax = axes[0]
        ax.plot(pm["time_h"], pm["live_pms"], color="tab:red", label="live partial matches")
        ax.set_xlabel("stream time [h] (Fig. 4.1)")
        ax.set_ylabel("partial matches of Listing 4.1")
        twin = ax.twinx()
        twin.plot(pm["time_h"], pm["trips_per_hour"], color="gray", ls=":", label="trips/h")
        twin.set_ylabel("trips in the last hour")
    fig.suptitle("Case studies on GENERATED streams (not the public data; "
                 "experiments/ch4_case_data.py)")
    fig.tight_layout()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ch4_cases.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


if __name__ == "__main__":
    sys.exit(main())
