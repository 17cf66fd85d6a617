"""The shapes of the adaptive-plan experiments (Schuster and Kolchinsky, US 11,693,862 B2,
"Experimental Evaluation", Figs. 6-8) with cep_core's adaptive plans
(:mod:`cep_core.adaptive`), on two drifting datasets made here
(``experiments/adaptive_data.py``): a synthetic stream with sudden and gradual rate drifts,
and the DR evening of drsim's own households.

* **Fig. 6**: throughput of the invariant method against the distance d, per pattern size
  (3-8 elements: sequences on the synthetic stream, conjunctions on the DR evening), for
  the order-based (greedy) and the tree-based (ZStream) algorithm; d_opt is the d with
  the best geometric-mean throughput over the sizes and, for the synthetic dataset, over
  its stream without drift too (a d that re-plans on noise must not win by the drifting
  stream alone).
* **Figs. 7-8**: per pattern size, the static plan (built once, when the statistics
  window first filled), unconditional re-planning, the constant threshold (t_opt, scanned
  the same way, over the same streams) and the invariants (d_opt): throughput, speedup
  over static, plan replacements, and the share of the run's time spent in D and in
  planning.
* **No drift**: the invariants (d_opt) against the static plan on the synthetic stream
  with one permutation throughout: what adapting costs when there is nothing to adapt to.

Every configuration checks that all methods output the same matches (the text-order
plan's; the graph engine's count is printed beside). Throughputs are events per second of
wall time, medians of ``--repeats`` runs alternated between the methods in this one
process (the machine's drift falls on all alike). D is asked every ``period`` stream time
units over a statistics window of ``window`` (per dataset, below).

Run from the repository root::

    python scripts/reproduce_adaptive.py [--quick] [--out results/adaptive] [--figures DIR]

``--quick`` (3.5 minutes on 2 cores) writes ``results/adaptive/adaptive.csv``; the full
run (more events, every size 3-8, more repeats; 24 minutes) ``adaptive_full.csv``.
docs/adaptive_plans.md sets the results beside the patent's statements.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import cep_core  # noqa: E402
from experiments.adaptive_data import dr_pattern, dr_stream, drift_pattern, drift_stream  # noqa: E402
from experiments.results_csv import draw_csv, reproduction_parser, write_rows  # noqa: E402
from experiments.timing import time_calls  # noqa: E402

COLUMNS = ["figure", "dataset", "algorithm", "size", "method", "parameter",
           "events_per_s", "speedup", "replacements", "share_adapting", "matches",
           "events", "note"]
D_GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
T_GRID = (0.25, 0.5, 1.0, 2.0, 4.0)
ALGORITHMS = ("order", "tree")


class Dataset:
    """A stream, its patterns and how often D looks at it."""

    def __init__(self, name: str, events: list[dict], pattern, period: float,
                 window: float, label: str, steady: list[dict] | None = None):
        self.name, self.events, self.pattern = name, events, pattern
        self.period, self.window, self.label = period, window, label
        self.steady = steady  # the same kind of stream without drift (the control)

    def adapt(self, method: str, **values: float) -> dict:
        """The ``adapt`` option of a method."""
        return {"method": method, "period": self.period, "window": self.window, **values}


def datasets(quick: bool) -> list[Dataset]:
    drift_n = 8000 if quick else 30000
    return [
        Dataset("drift", drift_stream(drift_n, phase=20.0, mode="mixed", seed=1),
                drift_pattern, period=2.0, window=10.0,
                label=f"synthetic, {drift_n:,} events, sudden and gradual drifts",
                steady=drift_stream(drift_n, phase=20.0, mode="none", seed=2)),
        Dataset("dr", dr_stream(1 if quick else 2), dr_pattern, period=0.5, window=10.0,
                label="DR evening, quickstart households 16:00-23:00"),
    ]


def run_once(query, events: list[dict], kind: str, adapt: dict) -> tuple:
    """One run: (a digest of the matches, their number, the adaptation report)."""
    session = query.start(output="matches", plan=kind, adapt=adapt)
    out = session.feed(events)
    return hash(tuple(sorted(str(sorted(m.items())) for m in out))), len(out), \
        session.adaptation_report()


def compare(query, events: list[dict], kind: str, runs: dict[str, dict | None],
            repeats: int) -> dict[str, dict]:
    """Median throughput of each named configuration over ``repeats`` alternated runs;
    the matches must agree."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    info: dict[str, tuple] = {}
    for _ in range(repeats):
        for name, adapt in runs.items():
            (seconds,), result = time_calls(lambda a=adapt: run_once(query, events, kind, a), 1)
            times[name].append(seconds)
            info[name] = result
    digests = {info[k][0] for k in runs}
    if len(digests) != 1:
        raise SystemExit(f"methods disagree on the matches: {query!r} {kind}")
    out = {}
    for name in runs:
        med = statistics.median(times[name])
        report = info[name][2]
        out[name] = {"events_per_s": len(events) / med, "matches": info[name][1],
                     "replacements": report["replacements"],
                     "share_adapting": (report["seconds_deciding"]
                                        + report["seconds_planning"]) / med}
    return out


def scan(ds: Dataset, sizes: tuple[int, ...], repeats: int, rows: list[dict], method: str,
         name: str, grid: tuple[float, ...], figure: str) -> dict:
    """Throughput of ``method`` for each value of its parameter ``name`` per size and
    algorithm, on the dataset's stream and, where it has one, its steady control; the
    best value per algorithm: the best geometric mean over sizes (and both streams, so
    that a value that re-plans on noise does not win)."""
    best = {}
    streams = [(ds.name, ds.events)] + ([("no-drift", ds.steady)] if ds.steady else [])
    for kind in ALGORITHMS:
        by: dict[float, list[float]] = {v: [] for v in grid}
        drift_only: dict[float, list[float]] = {v: [] for v in grid}
        for size in sizes:
            q = cep_core.compile(ds.pattern(size))
            for label, events in streams:
                got = compare(q, events, kind, {f"{name}={v:g}": ds.adapt(method, **{name: v})
                                                for v in grid}, repeats)
                for v in grid:
                    r = got[f"{name}={v:g}"]
                    by[v].append(r["events_per_s"])
                    if label == ds.name:
                        drift_only[v].append(r["events_per_s"])
                    rows.append({"figure": figure, "dataset": label, "algorithm": kind,
                                 "size": size, "method": method, "parameter": v, **r,
                                 "speedup": "", "events": len(events), "note": ""})
                line = ", ".join(f"{name}={v:g} {got[f'{name}={v:g}']['events_per_s']:,.0f}"
                                 for v in grid)
                print(f"  {figure} {label} {kind} size {size}: {line} events/s", flush=True)
        gmean = {v: _gmean(x) for v, x in by.items()}
        best[kind] = max(grid, key=lambda v: gmean[v])
        on = {v: _gmean(x) for v, x in drift_only.items()}
        print(f"  {name}_opt ({ds.name}, {kind}) = {best[kind]:g}; on the drifting stream "
              f"{on[best[kind]]:,.0f} events/s (geometric mean over sizes) against "
              f"{on[grid[0]]:,.0f} at {name} = {grid[0]:g} ({on[best[kind]] / on[grid[0]]:.2f}x),"
              f" the best there {max(grid, key=lambda v: on[v]):g}", flush=True)
    return best


def _gmean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(x) for x in values))


def fig7(ds: Dataset, sizes: tuple[int, ...], repeats: int, d_opt: dict, t_opt: dict,
         rows: list[dict]) -> None:
    """Static, unconditional, threshold (t_opt), invariants (d_opt) per size."""
    for kind in ALGORITHMS:
        for size in sizes:
            q = cep_core.compile(ds.pattern(size))
            runs = {"static": ds.adapt("static"), "unconditional": ds.adapt("unconditional"),
                    "threshold": ds.adapt("threshold", t=t_opt[kind]),
                    "invariant": ds.adapt("invariant", d=d_opt[kind])}
            got = compare(q, ds.events, kind, runs, repeats)
            seconds, found = time_calls(lambda q=q: q.matches(ds.events), 1)
            engine = q.engine  # the text-order plan's engine (the graph engine here)
            text_rate = len(ds.events) / seconds[0]
            static = got["static"]["events_per_s"]
            for method, r in got.items():
                param = {"threshold": t_opt[kind], "invariant": d_opt[kind]}.get(method, "")
                rows.append({"figure": "7-8", "dataset": ds.name, "algorithm": kind,
                             "size": size, "method": method, "parameter": param, **r,
                             "speedup": r["events_per_s"] / static,
                             "events": len(ds.events),
                             "note": f"text order on the {engine} engine: {len(found)} "
                                     f"matches, {text_rate:.0f} events/s"})
            print(f"  Fig. 7-8 {ds.name} {kind} size {size}: " + ", ".join(
                f"{m} {r['events_per_s']:,.0f}/s ({r['events_per_s'] / static:.2f}x, "
                f"{r['replacements']} repl., {100 * r['share_adapting']:.1f} % adapting)"
                for m, r in got.items()) + f"; matches {got['static']['matches']} (the "
                f"text order on the {engine} engine: {len(found)}, {text_rate:,.0f}/s)",
                flush=True)


def no_drift(ds: Dataset, sizes: tuple[int, ...], repeats: int, d_opt: dict,
             rows: list[dict]) -> None:
    """The invariants against the static plan on the dataset's steady control."""
    for kind in ALGORITHMS:
        for size in sizes:
            q = cep_core.compile(ds.pattern(size))
            got = compare(q, ds.steady, kind, {"static": ds.adapt("static"),
                                               "invariant": ds.adapt("invariant",
                                                                     d=d_opt[kind])}, repeats)
            ratio = got["static"]["events_per_s"] / got["invariant"]["events_per_s"]
            for method, r in got.items():
                rows.append({"figure": "no-drift", "dataset": "no-drift", "algorithm": kind,
                             "size": size, "method": method,
                             "parameter": d_opt[kind] if method == "invariant" else "",
                             **r, "speedup": r["events_per_s"] / got["static"]["events_per_s"],
                             "events": len(ds.steady), "note": ""})
            print(f"  no drift {kind} size {size}: time with invariants / static "
                  f"{ratio:.3f} (goal ≤ 1.05), {got['invariant']['replacements']} "
                  "replacements", flush=True)


def run(quick: bool, repeats: int) -> list[dict]:
    rows: list[dict] = []
    sizes = (3, 4, 6, 8) if quick else (3, 4, 5, 6, 7, 8)
    for ds in datasets(quick):
        print(f"{ds.name}: {ds.label} ({len(ds.events):,} events), D every {ds.period:g}, "
              f"statistics over {ds.window:g} time units", flush=True)
        d_opt = scan(ds, sizes, max(1, repeats - 2), rows, "invariant", "d", D_GRID, "6")
        t_opt = scan(ds, sizes, 1, rows, "threshold", "t", T_GRID, "t-scan")
        fig7(ds, sizes, repeats, d_opt, t_opt, rows)
        if ds.steady is not None:
            no_drift(ds, tuple(s for s in sizes if s >= 4), repeats, d_opt, rows)
    return rows


def figures(rows: list[dict], folder: Path) -> list[Path]:
    """Fig. 6 per dataset (throughput against d, a line per size and algorithm) and
    Figs. 7-8 per dataset (throughput, speedup, replacements, share adapting)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in dict.fromkeys(r["dataset"] for r in rows if r["figure"] == "6"):
        fig = Figure(figsize=(9, 3.6), layout="constrained")
        FigureCanvasAgg(fig)
        for j, kind in enumerate(ALGORITHMS):
            ax = fig.add_subplot(1, 2, j + 1)
            mine = [r for r in rows if r["figure"] == "6" and r["dataset"] == name
                    and r["algorithm"] == kind]
            for size in dict.fromkeys(int(r["size"]) for r in mine):
                pts = [(float(r["parameter"]), float(r["events_per_s"])) for r in mine
                       if int(r["size"]) == size]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        label=f"size {size}")
            ax.set_xlabel("distance d")
            ax.set_ylabel("events per second")
            ax.set_yscale("log")
            ax.set_title(f"{name}, {kind}-based")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
        path = folder / f"adaptive_fig6_{name}.png"
        fig.savefig(path, dpi=110)
        written.append(path)
    panels = [("events_per_s", "events per second", True), ("speedup", "speedup over static",
                                                             False),
              ("replacements", "plan replacements", False),
              ("share_adapting", "share of time in D and planning", False)]
    for name in dict.fromkeys(r["dataset"] for r in rows if r["figure"] == "7-8"):
        for kind in ALGORITHMS:
            mine = [r for r in rows if r["figure"] == "7-8" and r["dataset"] == name
                    and r["algorithm"] == kind]
            fig = Figure(figsize=(11, 3.2), layout="constrained")
            FigureCanvasAgg(fig)
            for j, (col, label, log) in enumerate(panels):
                ax = fig.add_subplot(1, 4, j + 1)
                for method in dict.fromkeys(r["method"] for r in mine):
                    pts = [(int(r["size"]), float(r[col])) for r in mine
                           if r["method"] == method]
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                            label=method)
                ax.set_xlabel("pattern size")
                ax.set_ylabel(label)
                if log:
                    ax.set_yscale("log")
                ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
            fig.suptitle(f"{name}, {kind}-based plans (patent Figs. 7-8)")
            path = folder / f"adaptive_fig7_{name}_{kind}.png"
            fig.savefig(path, dpi=110)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = reproduction_parser(__doc__.split("\n\n")[0], ROOT / "results" / "adaptive",
                             "fewer events, sizes and repeats")
    ap.add_argument("--repeats", type=int, default=None,
                    help="alternated runs per configuration (default 3 quick, 5 full)")
    args = ap.parse_args(argv)
    if args.draw is not None:
        return draw_csv(args.draw, args.figures, figures)
    started = time.perf_counter()
    rows = run(args.quick, args.repeats or (3 if args.quick else 5))
    path = args.out / ("adaptive.csv" if args.quick else "adaptive_full.csv")
    write_rows(rows, path, COLUMNS)
    print(f"wrote {path} ({len(rows)} rows) in {time.perf_counter() - started:.0f} s")
    if args.figures is not None:
        for p in figures(rows, args.figures):
            print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
