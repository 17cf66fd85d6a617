"""The shapes of the A-Seq paper's experiments (Qi et al., SIGMOD 2014, §6, Figs. 12-16)
with cep_core, on a synthetic stream (one event per time unit, types uniform over an
alphabet; the paper used stock trades):

* **Fig. 12** pattern length 2-5 at a fixed window, and **Fig. 13** window 100-2,000 at
  length 3: A-Seq (:class:`cep_core.aggregate.SeqAggregator`) against the two-step
  approach that builds every match and counts them (:func:`enumerate_counts`, which
  stops after a time budget or a number of matches held: its time per event is then
  over the events it processed): time per event and peak state (live prefix counters;
  partial and complete matches kept);
* **Fig. 14a** A-Seq alone at length 6-10 and window 2,000; **Fig. 14b** negation,
  ``(D, I, A)`` against ``(D, I, !Q, A)``: A-Seq resets a prefix counter, the two-step
  approach filters the matches afterwards;
* **Fig. 15** three queries sharing a substring: the two-step approach per query,
  ECube (:class:`experiments.ecube.ECube`: the substring's matches constructed once,
  then each query's matches constructed and counted), A-Seq per query, Chop-Connect
  (:class:`cep_core.aggregate.ChopConnect`);
* **Fig. 16** sharing: (a) PreTree against separate A-Seq queries for 2-6 queries with a
  common prefix of 3, (b) prefix length 2-6 with 3 queries; (c) Chop-Connect against the
  same engine without sharing for a shared substring of length 2-6 in 3 queries, (d) for
  2-6 queries sharing a substring of 3; in (c) and (d) the shared substring's types are
  10 times as frequent as the others (:func:`skewed_stream`: the connect events are few,
  as §4.2's cost analysis assumes), and (d) also runs on uniform types.

A-Seq's time per event is measured once the window is full, as the two-step approach's,
over a stream of ten windows (the query compiled and the first window fed before the
clock starts); the two-step approach runs over the first three windows.

Every configuration checks that the counts agree (A-Seq with the enumeration where it
finished, Chop-Connect and PreTree with each query alone). Times are medians of
``--repeats`` runs in this one process, with the garbage collector paused during each.

Run from the repository root::

    python scripts/reproduce_aseq.py [--quick] [--out results/aseq] [--figures DIR]
    python scripts/reproduce_aseq.py --draw results/aseq/aseq.csv --figures DIR

``--quick`` (about a minute on 2 quiet cores) writes ``results/aseq/aseq.csv``; the full
run (larger windows and streams, about eight minutes at load average 15)
``results/aseq/aseq_full.csv``;
``--figures`` draws the figures of the run (``--draw``: of a CSV written before).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from cep_core.aggregate import (  # noqa: E402
    ChopConnect,
    PreTree,
    SeqAggregator,
    chop,
    seq_query,
)
from cep_core.aggregate.chop_planner import plan_sharing, rates_of  # noqa: E402
from experiments.ecube import ECube  # noqa: E402
from experiments.results_csv import draw_csv, reproduction_parser, write_rows  # noqa: E402
from experiments.timing import time_calls  # noqa: E402

ALPHABET = [f"T{i:02d}" for i in range(20)]
DENSE = ALPHABET[:5]  # Figs. 12, 14b: few types, so that the patterns are dense
MAX_MATCHES = 3_000_000  # the two-step approach stops holding more (about 1 GB)
COLUMNS = ["figure", "x_name", "x", "method", "us_per_event", "events", "peak_state",
           "counts_equal", "note"]


def stream(n: int, seed: int = 0, alphabet: list[str] = ALPHABET) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"type": t, "time": i, "id": i} for i, t in
            enumerate(rng.choice(alphabet, n).tolist())]


def skewed_stream(n: int, frequent: tuple[str, ...], factor: float = 10,
                  seed: int = 0) -> list[dict]:
    """Like :func:`stream`, with the ``frequent`` types ``factor`` times as frequent as
    the others: the shared sub-pattern's events dominate and the connect events are
    few, as §4.2's cost analysis of Chop-Connect assumes."""
    rng = np.random.default_rng(seed)
    weight = np.array([factor if t in frequent else 1.0 for t in ALPHABET])
    return [{"type": t, "time": i, "id": i} for i, t in
            enumerate(rng.choice(ALPHABET, n, p=weight / weight.sum()).tolist())]


def timed(f: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Median seconds of ``repeats`` calls (garbage collector paused) and the result."""
    times, out = time_calls(f, repeats)
    return statistics.median(times), out


def enumerate_counts(events: list[dict], pattern: tuple[str, ...], window: float,
                     budget: float, negated: tuple[int, str] | None = None,
                     limit: float = MAX_MATCHES) -> tuple[list[int], int, int, float, bool]:
    """The two-step approach: every partial match kept as a tuple of events and
    extended by every later event of its next type, complete matches kept while their
    first event is in the window and counted at each trigger; ``negated`` = (k, type):
    a match with an event of that type between its elements k-1 and k is filtered out
    when counted. Stops after ``budget`` seconds, or when it holds more than ``limit``
    matches (memory). Returns (counts, events processed,
    peak partial + complete matches, seconds per event once the window is full, and
    whether it was: when it never filled, the seconds per event are over the events
    processed, a lower bound of the steady state's))."""
    n = len(pattern)
    partial: list[tuple] = []
    complete: list[tuple] = []
    blockers: list[float] = []
    out, peak = [], 0
    first, last = pattern[0], pattern[-1]
    t0 = time.perf_counter()
    full_at, full_done = None, 0  # when the window filled: the steady state from there
    done = 0
    for e in events:
        if full_at is None and e["time"] - events[0]["time"] >= window:
            full_at, full_done = time.perf_counter(), done
        lo = e["time"] - window
        partial = [p for p in partial if p[0]["time"] >= lo]
        complete = [m for m in complete if m[0]["time"] >= lo]
        typ = e["type"]
        if negated is not None and typ == negated[1]:
            blockers.append(e["time"])
        grown = [p + (e,) for p in partial if pattern[len(p)] == typ]
        if typ == first:
            grown.append((e,))
        for p in grown:
            (complete if len(p) == n else partial).append(p)
        if typ == last:
            if negated is None:
                out.append(len(complete))
            else:
                k = negated[0]
                out.append(sum(1 for m in complete if not any(
                    m[k - 1]["time"] < b < m[k]["time"] for b in blockers)))
        peak = max(peak, len(partial) + len(complete))
        done += 1
        if time.perf_counter() - t0 > budget or peak > limit:
            break
    end = time.perf_counter()
    if full_at is not None and done > full_done:
        return out, done, peak, (end - full_at) / (done - full_done), True
    return out, done, peak, (end - t0) / done, False


def aseq_query(pattern: tuple[str, ...], window: float,
               negated: tuple[int, str] | None = None) -> SeqAggregator:
    items = list(pattern)
    if negated is not None:
        items.insert(negated[0], "!" + negated[1])
    return SeqAggregator(seq_query(", ".join(items), within=window))


def aseq_counts(events: list[dict], pattern: tuple[str, ...], window: float,
                negated: tuple[int, str] | None = None) -> list[int]:
    return [o["count"] for o in aseq_query(pattern, window, negated).run(events)]


def aseq_steady(events: list[dict], pattern: tuple[str, ...], window: float,
                repeats: int, negated: tuple[int, str] | None = None
                ) -> tuple[float, list[int]]:
    """A-Seq's seconds per event once the window is full, as the two-step approach's
    are measured (median of ``repeats``; the query compiled and the first window's
    events fed before the clock starts), and the counts of the whole stream."""
    agg = aseq_query(pattern, window, negated)
    full = next((i for i, e in enumerate(events) if e["time"] - events[0]["time"] >= window),
                len(events))
    counts: list[int] = []

    def rest() -> list[dict]:
        return agg.feed(events[full:])

    times = []
    for _ in range(repeats):
        head = agg.run(events[:full])
        seconds, tail = time_calls(rest, 1)
        times.append(seconds[0])
        counts = [o["count"] for o in head + tail]
    return statistics.median(times) / max(len(events) - full, 1), counts


def peak_counters(events: list[dict], pattern: tuple[str, ...], window: float) -> int:
    """A-Seq's peak state: live START vectors times their prefix counters (SEM)."""
    starts = np.array([e["time"] for e in events if e["type"] == pattern[0]])
    times = np.array([e["time"] for e in events])
    live = np.searchsorted(starts, times, side="right") - np.searchsorted(
        starts, times - window, side="left")
    return int(live.max(initial=0)) * len(pattern)


def single(figure: str, x_name: str, x: float, pattern: tuple[str, ...], window: float,
           events: list[dict], repeats: int, budget: float, rows: list[dict],
           negated: tuple[int, str] | None = None, enumerate_too: bool = True,
           label: str = "A-Seq") -> None:
    """A-Seq's time per event over ``events`` and the two-step approach's over their
    first three windows (it would not finish more), both once the window is full."""
    per_aseq, counts = aseq_steady(events, pattern, window, repeats, negated)
    rows.append({"figure": figure, "x_name": x_name, "x": x, "method": label,
                 "us_per_event": 1e6 * per_aseq, "events": len(events),
                 "peak_state": peak_counters(events, pattern, window),
                 "counts_equal": "", "note": ""})
    if not enumerate_too:
        print(f"  {figure} {x_name}={x:g} {label}: {1e6 * per_aseq:.2f} µs/event")
        return
    gc.collect()
    few = events[:int(3 * window)]
    got, done, peak, per_event, steady = enumerate_counts(few, pattern, window, budget,
                                                          negated)
    equal = got == counts[:len(got)]
    note = "" if done == len(few) else f"stopped after {done:,} events (time or memory)"
    if not steady:
        note = f"lower bound: stopped after {done:,} events, before the window filled"
    rows.append({"figure": figure, "x_name": x_name, "x": x,
                 "method": "two-step" + (" (post-filter)" if negated else ""),
                 "us_per_event": 1e6 * per_event, "events": done, "peak_state": peak,
                 "counts_equal": equal, "note": note})
    print(f"  {figure} {x_name}={x:g} {label}: {1e6 * per_aseq:.2f} µs/event; "
          f"two-step {1e6 * per_event:.1f} µs/event (window full) over {done:,} events, "
          f"ratio {per_event / per_aseq:,.0f}x, counts equal {equal}")


def shared_queries(k: int, shared: tuple[str, ...], where: str) -> dict[str, tuple]:
    """``k`` queries of the types T10.. around ``shared``: a common prefix (``where``
    = "prefix": shared + two types of its own) or a common middle (one type before,
    one after)."""
    own = ALPHABET[10:]
    if where == "prefix":
        return {f"q{i}": shared + (own[i], own[9 - i]) for i in range(k)}
    return {f"q{i}": (own[i],) + shared + (own[9 - i],) for i in range(k)}


def sharing(figure: str, x_name: str, x: float, queries: dict[str, tuple],
            shared: tuple[str, ...], window: float, events: list[dict], repeats: int,
            rows: list[dict], how: str, label: str = "") -> None:
    def alone():
        return {n: aseq_counts(events, p, window) for n, p in queries.items()}

    if how == "prefix":
        tree = PreTree([seq_query(", ".join(p), within=window, name=n)
                        for n, p in queries.items()])
        t_shared, got = timed(lambda: {n: [o["count"] for o in out] for n, out in
                                       tree.run(events).items()}, repeats)
        t_alone, want = timed(alone, repeats)
        methods = [("PreTree", t_shared), ("A-Seq per query", t_alone)]
    else:
        plans = {n: chop(p, [shared]) for n, p in queries.items()}
        whole = {n: [p] for n, p in queries.items()}
        first = [e for e in events if e["time"] - events[0]["time"] < window]
        chosen = plan_sharing(queries, rates_of(first), window)  # from the first window
        t_shared, out = timed(lambda: ChopConnect(plans, window).run(events), repeats)
        got = {n: [o["count"] for o in v] for n, v in out.items()}
        t_planned, out3 = timed(lambda: ChopConnect(chosen.plans, window).run(events),
                                repeats)
        t_alone, out2 = timed(lambda: ChopConnect(whole, window).run(events), repeats)
        want = {n: [o["count"] for o in v] for n, v in out2.items()}
        if got == want:                     # the planned plan's counts must agree too
            got = {n: [o["count"] for o in v] for n, v in out3.items()}
        methods = [("Chop-Connect" + label, t_shared), ("no sharing" + label, t_alone),
                   ("Chop-Connect, plan by cost" + label, t_planned)]
        print(f"    plan by cost: shares {[' '.join(c) for c in chosen.shared]}"
              f" (estimated {chosen.cost_unshared / chosen.cost:.2f}x no sharing)")
    equal = got == want
    for label, seconds in methods:
        rows.append({"figure": figure, "x_name": x_name, "x": x, "method": label,
                     "us_per_event": 1e6 * seconds / len(events), "events": len(events),
                     "peak_state": "", "counts_equal": equal, "note": ""})
    print(f"  {figure} {x_name}={x:g}: {methods[0][0]} {1e6 * t_shared / len(events):.2f} "
          f"µs/event, {methods[1][0]} {1e6 * t_alone / len(events):.2f} (ratio "
          f"{t_alone / t_shared:.2f})"
          + (f", plan by cost {1e6 * methods[2][1] / len(events):.2f} (ratio "
             f"{t_alone / methods[2][1]:.2f})" if len(methods) > 2 else "")
          + f", counts equal {equal}")


def fig14a(events: list[dict], repeats: int, rows: list[dict]) -> None:
    """Fig. 14a: A-Seq alone at length 6-10, window 2,000, per event of the stream and
    per event of the pattern's types (the others never reach the counters; their share
    grows with the length on a stream of uniform types)."""
    print("Fig. 14a: A-Seq, length 6-10, window 2,000")
    for length in (6, 8, 10):
        types = tuple(ALPHABET[:length])
        single("14a", "length", length, types, 2000, events, repeats, 0.0, rows,
               enumerate_too=False)
        share = sum(e["type"] in types for e in events) / len(events)
        row = dict(rows[-1], method="A-Seq per event of the pattern's types",
                   us_per_event=rows[-1]["us_per_event"] / share,
                   note=f"{share:.2f} of the events")
        rows.append(row)
        print(f"    per event of the pattern's types ({share:.2f} of the stream): "
              f"{row['us_per_event']:.2f} µs")


def fig15(window: int, budget: float, repeats: int, rows: list[dict]) -> None:
    """Fig. 15: three queries sharing a substring over three windows of events; the
    two-step approach (SASE) per query once its window is full, ECube (its substring's
    matches constructed once, :class:`experiments.ecube.ECube`), A-Seq per query and
    Chop-Connect (the given plan, and the plan chosen by cost from the first window's
    rates) over the whole stream (ECube's cheapest part, its first window, included);
    the counts of the last four agree."""
    print(f"Fig. 15: three queries sharing a substring, window {window}")
    shared = tuple(ALPHABET[:2])
    three = shared_queries(3, shared, "middle")
    ev = stream(3 * window)
    plans = {n: chop(p, [shared]) for n, p in three.items()}
    t_sase, done_min = 0.0, len(ev)
    for p in three.values():
        _, done, _, per_event, _ = enumerate_counts(ev, p, window, budget / 3)
        t_sase += per_event
        done_min = min(done_min, done)
    t_alone, want = timed(lambda: {n: aseq_counts(ev, p, window) for n, p in three.items()},
                          repeats)
    t_ecube, got = timed(lambda: ECube(plans, window).run(ev), 1)
    t_cc, out = timed(lambda: ChopConnect(plans, window).run(ev), repeats)
    chosen = plan_sharing(three, rates_of(ev[:window]), window)
    t_plan, out2 = timed(lambda: ChopConnect(chosen.plans, window).run(ev), repeats)
    equal = got == want == {n: [o["count"] for o in v] for n, v in out.items()} == {
        n: [o["count"] for o in v] for n, v in out2.items()}
    for label, us, n in (("two-step per query (SASE)", 1e6 * t_sase, done_min),
                         ("ECube", 1e6 * t_ecube / len(ev), len(ev)),
                         ("A-Seq per query", 1e6 * t_alone / len(ev), len(ev)),
                         ("Chop-Connect", 1e6 * t_cc / len(ev), len(ev)),
                         ("Chop-Connect, plan by cost", 1e6 * t_plan / len(ev), len(ev))):
        rows.append({"figure": "15", "x_name": "queries", "x": 3, "method": label,
                     "us_per_event": us, "events": n, "peak_state": "",
                     "counts_equal": equal if label != "two-step per query (SASE)" else "",
                     "note": ""})
        print(f"  {label}: {us:.2f} µs/event")
    print(f"  A-Seq against ECube: {t_ecube / t_alone:,.0f}x, Chop-Connect against ECube: "
          f"{t_ecube / t_cc:,.0f}x (plan by cost, sharing "
          f"{[' '.join(c) for c in chosen.shared]}: {t_ecube / t_plan:,.0f}x); "
          f"counts equal {equal}")


def run(quick: bool, repeats: int) -> list[dict]:
    rows: list[dict] = []
    budget = 10.0 if quick else 30.0
    types = tuple(ALPHABET[:10])
    window12 = 200 if quick else 500
    events = stream(10 * window12, alphabet=DENSE)
    print(f"Fig. 12: length 2-5, window {window12}, {len(DENSE)} event types")
    for length in (2, 3, 4, 5):
        single("12", "length", length, types[:length], window12, events, repeats, budget,
               rows)
    print("Fig. 13: window, length 3, the pattern's 3 event types")
    for window in ((100, 200, 500) if quick else (100, 200, 500, 1000, 2000)):
        single("13", "window", window, types[:3], window,
               stream(10 * window, alphabet=list(types[:3])), repeats, budget, rows)
    fig14a(stream(6000 if quick else 20000), repeats, rows)
    print("Fig. 14b: negation, (D, I, A) and (D, I, !Q, A)")
    neg_events = stream(10 * window12, alphabet=DENSE)
    single("14b", "negation", 0, types[:3], window12, neg_events, repeats, budget, rows,
           label="A-Seq")
    single("14b", "negation", 1, types[:3], window12, neg_events, repeats, budget, rows,
           negated=(2, types[3]), label="A-Seq (!Q)")
    fig15(800 if quick else 1000, budget, repeats, rows)
    window16 = 300 if quick else 1000
    ev16 = stream(4000 if quick else 12000)
    print(f"Fig. 16a: PreTree, 2-6 queries sharing a prefix of 3, window {window16}")
    for k in (2, 3, 4, 6):
        sharing("16a", "queries", k, shared_queries(k, tuple(types[:3]), "prefix"),
                tuple(types[:3]), window16, ev16, repeats, rows, "prefix")
    print("Fig. 16b: PreTree, 3 queries, shared prefix length 2-6")
    for length in (2, 4, 6):
        sharing("16b", "length", length, shared_queries(3, tuple(types[:length]), "prefix"),
                tuple(types[:length]), window16, ev16, repeats, rows, "prefix")
    n16 = len(ev16)
    print("Fig. 16c: Chop-Connect, 3 queries, shared substring length 2-6 (its types 10x "
          "as frequent)")
    for length in (2, 4, 6):
        sharing("16c", "length", length, shared_queries(3, tuple(types[:length]), "middle"),
                tuple(types[:length]), window16, skewed_stream(n16, types[:length]),
                repeats, rows, "middle")
    print("Fig. 16d: Chop-Connect, 2-6 queries sharing a substring of 3 (its types 10x as "
          "frequent, and uniform types)")
    for k in (2, 3, 4, 6):
        queries = shared_queries(k, tuple(types[:3]), "middle")
        sharing("16d", "queries", k, queries, tuple(types[:3]), window16,
                skewed_stream(n16, types[:3]), repeats, rows, "middle")
        sharing("16d", "queries", k, queries, tuple(types[:3]), window16, ev16, repeats,
                rows, "middle", label=" (types uniform)")
    return rows


def figures(rows: list[dict], folder: Path) -> list[Path]:
    """One PNG per figure: µs per event against its x, a line per method (log scale)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for fig_id in dict.fromkeys(r["figure"] for r in rows):
        mine = [r for r in rows if r["figure"] == fig_id]
        fig = Figure(figsize=(5.5, 3.6), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        for method in dict.fromkeys(r["method"] for r in mine):
            pts = [(float(r["x"]), float(r["us_per_event"]), str(r["note"]))
                   for r in mine if r["method"] == method]
            line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                            label=method)
            low = [p for p in pts if p[2].startswith("lower bound")]
            if low:  # the window never filled: at least this slow
                ax.plot([p[0] for p in low], [p[1] for p in low], linestyle="none",
                        marker="^", markersize=11, markerfacecolor="white",
                        color=line.get_color(), label=f"{method}: a lower bound")
        ax.set_yscale("log")
        ax.set_xlabel(mine[0]["x_name"])
        ax.set_ylabel("µs per event")
        ax.set_title(f"A-Seq paper Fig. {fig_id}: cep_core")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        path = folder / f"aseq_fig{fig_id}.png"
        fig.savefig(path, dpi=110)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = reproduction_parser(__doc__.split("\n\n")[0], ROOT / "results" / "aseq",
                             "smaller windows and streams")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if args.draw is not None:
        return draw_csv(args.draw, args.figures, figures)
    started = time.perf_counter()
    rows = run(args.quick, args.repeats)
    path = args.out / ("aseq.csv" if args.quick else "aseq_full.csv")
    write_rows(rows, path, COLUMNS)
    print(f"wrote {path} ({len(rows)} rows) in {time.perf_counter() - started:.0f} s")
    if args.figures is not None:
        for p in figures(rows, args.figures):
            print(f"wrote {p}")
    bad = [r for r in rows if r["counts_equal"] is False]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
