"""The shapes of the adaptive-plan experiments (Schuster and Kolchinsky, US 11,693,862 B2,
"Experimental Evaluation", Figs. 6-8) with cep_core's adaptive plans
(:mod:`cep_core.adaptive`) on the patent's five pattern sets (sequences, sequences with a
negated event, conjunctions, sequences with a Kleene element, disjunctions of three
sequences; ``experiments/adaptive_data.py``) and two drifting datasets made here: a
synthetic stream with sudden and gradual rate drifts, and the DR evening of drsim's own
households.

* **Fig. 6** (the sequence set, as in the patent): throughput of the invariant method
  against the distance d, per pattern size, for the order-based (greedy) and the
  tree-based (ZStream) algorithm; beside the scanned values, d_avg and the
  meta-adaptive d (:mod:`cep_core.adaptive.decision`). d_opt is the scanned d with the
  best geometric-mean throughput over the sizes and, for the synthetic dataset, over
  its stream without drift too (a d that re-plans on noise must not win by the
  drifting stream alone); t_opt, the constant threshold's, is scanned the same way.
* **Figs. 7-8** (every pattern set): per size, the static plan (built once, when the
  statistics window first filled), unconditional re-planning, the constant threshold
  (t_opt), the invariants at d = 0, d_opt, d_avg and meta-adaptive, and the text-order
  plan on the engine cep_core picks for it (the graph engine for sequences, the
  reference engine otherwise): throughput, speedup over the static plan, plan
  replacements, the share of the run's time spent in D and in planning.
* **No drift**: the invariants (d_opt) against the static plan on the synthetic stream
  with one permutation throughout: what adapting costs when there is nothing to adapt to.
* **Runners** (the synthetic drift, sequences): the adaptive runner against every static
  engine, the order plans evaluated over batches with arrays and event by event (adapt's
  ``runner``), medians of at least three alternated runs.

Every run's matches are compared with the text-order plan's; a pattern set runs
adaptively when every configuration of it ran on an adaptive engine. Throughputs are
events per second of wall time, medians of ``--repeats`` runs alternated between the
methods in this one process (the machine's drift falls on all alike). The run ends with
the lines the targets read: d_avg and meta against d = 0, the adaptive runner (arrays)
against the best static engine on drifting sequences (every engine and runner) and
against the engines before the array runner (the graph engine, plans event by event),
and ``pattern sets run adaptively: N of 5; exact: yes|no``.

Run from the repository root::

    python scripts/reproduce_adaptive.py [--quick] [--out results/adaptive] [--figures DIR]

``--quick`` (sizes 4, 6, 8, one run each, fewer events) writes
``results/adaptive/adaptive.csv``; the full run (more events, every size 3-8, three
runs each) ``adaptive_full.csv``. docs/adaptive_plans.md sets the results beside the
patent's statements.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import cep_core  # noqa: E402
from experiments.adaptive_data import (  # noqa: E402
    PATTERN_SETS,
    dr_query,
    dr_stream,
    drift_query,
    drift_stream,
)
from experiments.adaptive_figures import figures  # noqa: E402
from experiments.results_csv import draw_csv, reproduction_parser, write_rows  # noqa: E402
from experiments.timing import time_calls  # noqa: E402

COLUMNS = ["figure", "dataset", "pattern_set", "algorithm", "size", "method", "parameter",
           "d_start", "d_end", "events_per_s", "speedup", "replacements", "share_adapting",
           "matches", "exact", "events", "note"]
ALGORITHMS = ("order", "tree")
CHOSEN = ("avg", "meta")  # the distances chosen from the statistics
TEXT = "text order"


class Dataset:
    """A stream, its patterns and how often D looks at it."""

    def __init__(self, name: str, events: list[dict], query, period: float,
                 window: float, label: str, steady: list[dict] | None = None):
        self.name, self.events, self.query = name, events, query
        self.period, self.window, self.label = period, window, label
        self.steady = steady  # the same kind of stream without drift (the control)

    def adapt(self, method: str, **values) -> dict:
        """The ``adapt`` option of a method."""
        return {"method": method, "period": self.period, "window": self.window, **values}


def drift_dataset(quick: bool) -> Dataset:
    """The synthetic stream with drifts, and its control without."""
    drift_n = 6000 if quick else 30000
    return Dataset("drift", drift_stream(drift_n, phase=20.0, mode="mixed", seed=1),
                   drift_query, period=2.0, window=10.0,
                   label=f"synthetic, {drift_n:,} events, sudden and gradual drifts",
                   steady=drift_stream(drift_n, phase=20.0, mode="none", seed=2))


def datasets(quick: bool) -> list[Dataset]:
    dr = dr_stream(1 if quick else 2)
    if quick:  # every other household
        dr = [e for e in dr if e["houseID"] % 2 == 0]
    return [drift_dataset(quick),
            Dataset("dr", dr, dr_query, period=0.5, window=10.0,
                    label="DR evening, quickstart households 16:00-23:00")]


def _digest(out: list[dict]) -> int:
    return hash(tuple(sorted(str(sorted(m.items())) for m in out)))


def run_once(query, events: list[dict], kind: str | None, adapt: dict | None) -> tuple:
    """One run (``kind`` None: the text-order plan on the engine cep_core picks): (a
    digest of the matches, their number, the adaptation report or None, the engine)."""
    options = {} if kind is None else {"plan": kind, "adapt": adapt}
    session = query.start(output="matches", **options)
    out = session.feed(events) + session.flush()
    report = None if kind is None else session.adaptation_report()
    return _digest(out), len(out), report, session.engine_name


def compare(query, events: list[dict], runs: dict[str, tuple], repeats: int,
            want: int | None = None) -> dict[str, dict]:
    """Median throughput of each named configuration ((kind, adapt)) over ``repeats``
    alternated runs, whether its matches are ``want`` (a digest; the first run's when
    None) and whether it ran adaptively."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    info: dict[str, tuple] = {}
    for _ in range(repeats):
        for name, (kind, adapt) in runs.items():
            (seconds,), result = time_calls(
                lambda k=kind, a=adapt: run_once(query, events, k, a), 1)
            times[name].append(seconds)
            info[name] = result
    want = info[next(iter(runs))][0] if want is None else want
    out = {}
    for name, (kind, _) in runs.items():
        med = statistics.median(times[name])
        digest, n, report, engine = info[name]
        row = {"events_per_s": len(events) / med, "matches": n, "exact": digest == want,
               "digest": digest,
               "adaptive": kind is None or engine.startswith("adaptive"), "engine": engine,
               "replacements": "", "share_adapting": "", "d_start": "", "d_end": ""}
        if report is not None:
            row.update(replacements=report["replacements"],
                       share_adapting=(report["seconds_deciding"]
                                       + report["seconds_planning"]) / med)
            if report.get("d_history"):
                row.update(d_start=report["d_history"][0], d_end=report["d"])
        out[name] = row
    return out


def _gmean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(x) for x in values))


def _label(name: str, v) -> str:
    return f"{name}={v}" if isinstance(v, str) else f"{name}={v:g}"


def scan(ds: Dataset, sizes: tuple[int, ...], repeats: int, rows: list[dict], method: str,
         name: str, grid: tuple, figure: str, extra: tuple = ()) -> dict:
    """Throughput of ``method`` for each value of its parameter ``name`` (``grid``, and
    ``extra`` beside it, not scanned) per size and algorithm on the sequence set, on the
    dataset's stream and, where it has one, its steady control; the best value of
    ``grid`` per algorithm: the best geometric mean over sizes and streams."""
    best = {}
    streams = [(ds.name, ds.events)] + ([("no-drift", ds.steady)] if ds.steady else [])
    for kind in ALGORITHMS:
        by: dict = {v: [] for v in grid}
        for size in sizes:
            q = cep_core.compile(ds.query("sequence", size))
            for label, events in streams:
                values = grid + (extra if label == ds.name else ())
                got = compare(q, events, {_label(name, v): (kind, ds.adapt(method, **{name: v}))
                                          for v in values}, repeats)
                for v in values:
                    r = got[_label(name, v)]
                    if v in by:
                        by[v].append(r["events_per_s"])
                    rows.append({"figure": figure, "dataset": label, "pattern_set": "sequence",
                                 "algorithm": kind, "size": size, "method": method,
                                 "parameter": v, **r, "speedup": "", "events": len(events),
                                 "note": ""})
                print(f"  {figure} {label} {kind} size {size}: " + ", ".join(
                    f"{_label(name, v)} {got[_label(name, v)]['events_per_s']:,.0f}"
                    + (f" (from {got[_label(name, v)]['d_start']:.2f})" if v in CHOSEN else "")
                    for v in values) + " events/s", flush=True)
        gmean = {v: _gmean(x) for v, x in by.items()}
        best[kind] = max(grid, key=lambda v: gmean[v])
        print(f"  {name}_opt ({ds.name}, {kind}) = {best[kind]:g}", flush=True)
    return best


def fig7(ds: Dataset, pset: str, sizes: tuple[int, ...], repeats: int, d_opt: dict,
         t_opt: dict, rows: list[dict]) -> None:
    """Every method per size and algorithm on one pattern set (module doc)."""
    for size in sizes:
        q = cep_core.compile(ds.query(pset, size))
        text = compare(q, ds.events, {TEXT: (None, None)}, repeats)[TEXT]
        for kind in ALGORITHMS:
            runs = {"static": (kind, ds.adapt("static")),
                    "unconditional": (kind, ds.adapt("unconditional")),
                    "threshold": (kind, ds.adapt("threshold", t=t_opt[kind])),
                    "invariant d=0": (kind, ds.adapt("invariant", d=0.0)),
                    "invariant d_opt": (kind, ds.adapt("invariant", d=d_opt[kind])),
                    "invariant d_avg": (kind, ds.adapt("invariant", d="avg")),
                    "invariant meta": (kind, ds.adapt("invariant", d="meta"))}
            got = {TEXT: text, **compare(q, ds.events, runs, repeats, text["digest"])}
            static = got["static"]["events_per_s"]
            params = {"threshold": t_opt[kind], "invariant d_opt": d_opt[kind]}
            for method, r in got.items():
                rows.append({"figure": "7-8", "dataset": ds.name, "pattern_set": pset,
                             "algorithm": kind, "size": size, "method": method,
                             "parameter": params.get(method, ""), **r,
                             "speedup": r["events_per_s"] / static, "events": len(ds.events),
                             "note": f"engine {r['engine']}"})
            print(f"  Fig. 7-8 {ds.name} {pset} {kind} size {size}: " + ", ".join(
                f"{m} {r['events_per_s']:,.0f}/s ({r['events_per_s'] / static:.2f}x"
                + (f", {r['replacements']} repl., {100 * r['share_adapting']:.1f} %"
                   if r["replacements"] != "" else f", {r['engine']}") + ")"
                for m, r in got.items()) + f"; {text['matches']} matches"
                + ("" if all(r["exact"] for r in got.values()) else " NOT ALL EXACT"),
                flush=True)


def no_drift(ds: Dataset, sizes: tuple[int, ...], repeats: int, d_opt: dict,
             rows: list[dict]) -> None:
    """The invariants against the static plan on the dataset's steady control."""
    for kind in ALGORITHMS:
        for size in sizes:
            q = cep_core.compile(ds.query("sequence", size))
            got = compare(q, ds.steady, {
                "static": (kind, ds.adapt("static")),
                "invariant d_opt": (kind, ds.adapt("invariant", d=d_opt[kind]))}, repeats)
            ratio = got["static"]["events_per_s"] / got["invariant d_opt"]["events_per_s"]
            for method, r in got.items():
                rows.append({"figure": "no-drift", "dataset": "no-drift",
                             "pattern_set": "sequence", "algorithm": kind, "size": size,
                             "method": method,
                             "parameter": d_opt[kind] if method != "static" else "", **r,
                             "speedup": 1 / ratio if method != "static" else 1.0,
                             "events": len(ds.steady), "note": ""})
            print(f"  no drift {kind} size {size}: time with invariants / static "
                  f"{ratio:.3f} (goal ≤ 1.05), {got['invariant d_opt']['replacements']} "
                  "replacements", flush=True)


#: the order plan's evaluations (cep_core.adaptive: adapt's ``runner``)
RUNNERS = ("array", "event")


def runners(ds: Dataset, sizes: tuple[int, ...], repeats: int, d_opt: dict,
            rows: list[dict]) -> None:
    """The adaptive runner against every static engine on the dataset's sequences: the
    text-order plan (the graph engine), the static plans (order plans on both runners,
    tree plans) and the invariants (d_opt, d_avg, meta) on both runners, alternated in
    this process, medians of at least three runs."""
    for size in sizes:
        q = cep_core.compile(ds.query("sequence", size))
        runs: dict[str, tuple] = {TEXT: (None, None),
                                  "static tree": ("tree", ds.adapt("static"))}
        for runner in RUNNERS:
            runs[f"static order {runner}"] = ("order", ds.adapt("static", runner=runner))
            for name, d in (("d_opt", d_opt["order"]), ("d_avg", "avg"), ("meta", "meta")):
                runs[f"invariant {name} {runner}"] = (
                    "order", ds.adapt("invariant", d=d, runner=runner))
        got = compare(q, ds.events, runs, max(repeats, 3))
        for method, r in got.items():
            rows.append({"figure": "runner", "dataset": ds.name, "pattern_set": "sequence",
                         "algorithm": "order", "size": size, "method": method,
                         "parameter": "", **r, "speedup": "", "events": len(ds.events),
                         "note": f"engine {r['engine']}"})
        print(f"  runners {ds.name} size {size}: " + ", ".join(
            f"{m} {r['events_per_s']:,.0f}/s" for m, r in got.items())
            + ("" if all(r["exact"] for r in got.values()) else " NOT ALL EXACT"), flush=True)


def run(quick: bool, repeats: int, sets: tuple[str, ...] = PATTERN_SETS) -> list[dict]:
    rows: list[dict] = []
    sizes = (4, 6, 8) if quick else (3, 4, 5, 6, 7, 8)
    d_grid = (0.0, 0.25, 1.0, 4.0) if quick else (0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
    t_grid = (0.25, 1.0, 4.0) if quick else (0.25, 0.5, 1.0, 2.0, 4.0)
    for ds in datasets(quick):
        print(f"{ds.name}: {ds.label} ({len(ds.events):,} events), D every {ds.period:g}, "
              f"statistics over {ds.window:g} time units", flush=True)
        d_opt = scan(ds, sizes, 1, rows, "invariant", "d", d_grid, "6", CHOSEN)
        t_opt = scan(ds, sizes, 1, rows, "threshold", "t", t_grid, "t-scan")
        for pset in sets:
            fig7(ds, pset, sizes, repeats, d_opt, t_opt, rows)
        if ds.steady is not None:
            no_drift(ds, sizes, repeats, d_opt, rows)
            runners(ds, sizes, repeats, d_opt, rows)
    return rows


def summary(rows: list[dict]) -> list[str]:
    """The lines the targets read (module doc)."""
    lines = []
    fig = [r for r in rows if r["figure"] == "7-8"]

    def rate(ds, pset, kind, size, method):
        return next(float(r["events_per_s"]) for r in fig if (
            r["dataset"], r["pattern_set"], r["algorithm"], int(r["size"]), r["method"])
            == (ds, pset, kind, size, method))

    keys = dict.fromkeys((r["dataset"], r["pattern_set"], r["algorithm"], int(r["size"]))
                         for r in fig)
    best = max(((rate(*k, f"invariant {m}") / rate(*k, "invariant d=0"), m, k)
                for k in keys if k[3] >= 6 for m in ("d_avg", "meta")), default=None)
    if best is not None:
        ratio, m, (ds, pset, kind, size) = best
        lines.append(f"chosen d against d = 0 at sizes >= 6: best {ratio:.2f}x ({m}, {ds}, "
                     f"{pset}, {kind}, size {size})")
    lines += _runner_lines([r for r in rows if r["figure"] == "runner"])
    sets = dict.fromkeys(r["pattern_set"] for r in fig)
    adaptive = [s for s in sets if all(str(r["adaptive"]) == "True" for r in fig
                                       if r["pattern_set"] == s)]
    exact = all(str(r["exact"]) == "True" for r in rows)
    lines.append(f"pattern sets run adaptively: {len(adaptive)} of {len(PATTERN_SETS)}; "
                 f"exact: {'yes' if exact else 'no'}")
    return lines


def _runner_lines(rows: list[dict]) -> list[str]:
    """The adaptive runner (invariants, arrays) against the best static engine of every
    kind and runner, and against the engines before the array runner, per size."""
    if not rows:
        return []
    sizes = sorted({int(r["size"]) for r in rows})

    def best(size: int, pick) -> float:
        return max(float(r["events_per_s"]) for r in rows
                   if int(r["size"]) == size and pick(r["method"]))

    def adaptive(m: str) -> bool:
        return m.startswith("invariant") and m.endswith("array")

    def static(m: str) -> bool:
        return not m.startswith("invariant")

    def before(m: str) -> bool:
        return static(m) and not m.endswith("array")

    return ["adaptive runner against the best static engine, drifting sequences: " + ", ".join(
                f"size {s} {best(s, adaptive) / best(s, static):.2f}x" for s in sizes),
            "adaptive runner against the graph engine and the plans event by event: "
            + ", ".join(f"size {s} {best(s, adaptive) / best(s, before):.2f}x"
                        for s in sizes)]


def main(argv: list[str] | None = None) -> int:
    ap = reproduction_parser(__doc__.split("\n\n")[0], ROOT / "results" / "adaptive",
                             "fewer events, sizes and repeats")
    ap.add_argument("--repeats", type=int, default=None,
                    help="alternated runs per configuration (default 1 quick, 3 full)")
    ap.add_argument("--only-runners", type=float, default=None, metavar="D",
                    help="only the runners comparison on the drift data (sizes 4, 6, 8), "
                         "with d = D beside d_avg and meta; prints, writes nothing")
    args = ap.parse_args(argv)
    if args.draw is not None:
        return draw_csv(args.draw, args.figures, figures)
    if args.only_runners is not None:
        rows: list[dict] = []
        runners(drift_dataset(True), (4, 6, 8), args.repeats or 3,
                {"order": args.only_runners}, rows)
        print("\n".join(_runner_lines(rows)))
        return 0
    started = time.perf_counter()
    rows = run(args.quick, args.repeats or (1 if args.quick else 3))
    path = args.out / ("adaptive.csv" if args.quick else "adaptive_full.csv")
    write_rows([{c: r.get(c, "") for c in COLUMNS} for r in rows], path, COLUMNS)
    print(f"wrote {path} ({len(rows)} rows) in {time.perf_counter() - started:.0f} s")
    if args.figures is not None:
        for p in figures([{c: str(r.get(c, "")) for c in COLUMNS} for r in rows],
                         args.figures):
            print(f"wrote {p}")
    for line in summary(rows):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
