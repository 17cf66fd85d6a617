"""Adaptivity of the cost model to a change in the stream (dissertation §4.4.3.5,
Figure 4.16): recall over time for Hybrid and the baselines when the distribution of
C.V flips mid-run.

Set-up, as §4.4.3.5 states it: DS1 (Table 4.1) with C.V ~ U(2, 10) until the change
point and U(12, 20) after it (:func:`experiments.ch4_data.make_ds1` with ``change_at``),
Q1 of Listing 4.2 with four window sizes, a bound on the average latency. The cost model
is fitted on a history without the change (the one the system had before it), so after
the change the partial matches it held worthless are the only ones that complete
("the costs of partial matches totally flip"). Hybrid blends what it observes into the
model at each time slice's end (§4.3.2, :meth:`cep_core.shedding.CostModel.blend`);
"Hybrid (fixed model)" is the same strategy with the blending switched off, the control
that shows what the adaptation is worth.

Scaled (each written to the rows): the source changes the distribution at the 250,000th
event with windows of 1,000-8,000 events and a 400 µs bound (39 % of its unshed average
of 1,033 µs); here the stream runs at 40,000 events/s, so windows of 1, 2, 4 and 8 ms
hold 40-320 events, the change comes at the stream's middle and the bound is 40 % of the
unshed average latency.

Recall over time: each match of the unshed run is placed in the bucket of the event
that completes it; a bucket's recall is the share of its matches the shedding run found.
Recovery: the first bucket after the change from which Hybrid's recall, pooled over
that bucket and the three before it (:func:`rolling_recall`), stays within 5 points of
its level before the change (:func:`recovery`), in events and in windows.

Run from the repository root::

    python scripts/ch4_adaptivity.py [--quick] [--out results/ch4] [--figures docs/figures]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from experiments import ch4_data  # noqa: E402
from experiments.reproduce_ch4 import BASELINES, Case, Setup  # noqa: E402
from experiments.results_csv import (  # noqa: E402
    draw_csv,
    report,
    reproduction_parser,
    spawn_pool,
    write_rows,
)

RATE = 40_000.0           # events/s
SHARE = 0.4               # bound: share of the unshed average latency (source: 400/1,033)
TOLERANCE = 0.05          # "within 5 points"
SPAN = 4                  # buckets pooled for the recall the recovery is judged on
STRATEGIES = (*BASELINES, "Hybrid", "Hybrid (fixed model)")
COLUMNS = ("window_ms", "window_events", "strategy", "bucket", "first_event", "last_event",
           "after_change", "matches", "found", "recall", "recall_total", "throughput",
           "change_at", "events", "bound_share", "event_rate")


def match_end(key: tuple) -> int:
    """The stream position of the event that completes a match (a key of
    :func:`experiments.reproduce_ch4._key`: sorted (variable, position or positions)).

    >>> match_end((("a", 3), ("b", (5, 9)), ("c", 7)))
    9
    """
    return max(max(v) if isinstance(v, tuple) else v for _, v in key)


def bucket_recall(truth: set, found: set, n: int, buckets: int) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """Matches per bucket of ``n / buckets`` events (by :func:`match_end`) and the
    share of them in ``found``.

    >>> m, r = bucket_recall({(("a", 1),), (("a", 6),)}, {(("a", 6),)}, 10, 2)
    >>> m.tolist(), r.tolist()
    ([1, 1], [0.0, 1.0])
    """
    keys = list(truth)
    ends = np.fromiter((match_end(k) for k in keys), dtype=np.int64, count=len(keys))
    hit = np.fromiter((k in found for k in keys), dtype=bool, count=len(keys))
    which = np.minimum(ends * buckets // n, buckets - 1)
    matches = np.bincount(which, minlength=buckets)
    hits = np.bincount(which, weights=hit, minlength=buckets)
    return matches, np.divide(hits, matches, out=np.ones(buckets), where=matches > 0)


def rolling_recall(matches: np.ndarray, found: np.ndarray, span: int) -> np.ndarray:
    """Recall pooled over each bucket and the ``span − 1`` before it (fewer at the
    start): buckets of a few hundred events hold few matches, and one state shedding
    can take all of one.

    >>> rolling_recall(np.array([2, 2, 0, 4]), np.array([2, 0, 0, 4]), 2).tolist()
    [1.0, 0.5, 0.0, 1.0]
    """
    kernel = np.ones(span)
    m = np.convolve(matches, kernel)[:len(matches)]
    f = np.convolve(found, kernel)[:len(found)]
    return np.divide(f, m, out=np.ones(len(m)), where=m > 0)


def recovery(recall: np.ndarray, after: np.ndarray, tolerance: float = TOLERANCE
             ) -> tuple[float, int | None]:
    """Recall before the change (the buckets before it, the first left out: the run
    starts empty) and the index of the first bucket after it from which the recall stays
    within ``tolerance`` of that level (``None``: it never does).

    >>> recovery(np.array([.5, .9, .9, .0, .6, .88, .9]), np.array([0, 0, 0, 1, 1, 1, 1]) > 0)
    (0.9, 5)
    """
    before = recall[1:][~after[1:]]
    level = float(before.mean())
    ok = recall >= level - tolerance
    for i in np.flatnonzero(after):
        if ok[i:].all():
            return level, int(i)
    return level, None


def run_window(args: tuple) -> list[dict]:
    """Every strategy on Q1 with one window, its rows of recall per bucket."""
    window_ms, events, buckets = args
    change = events // 2
    case = Case(ch4_data.q1(window_ms), rate=RATE, events=events,
                test_kw=(("change_at", change),))
    setup = Setup(case)
    bound = SHARE * setup.unshed["latency_avg"]
    rows = []
    for name in STRATEGIES:
        strategy, adapt = name.split(" ")[0], not name.endswith("(fixed model)")
        r = setup.run(strategy, bound=bound, statistic="avg", adapt=adapt)
        matches, recall = bucket_recall(setup.truth, r["found"], events, buckets)
        size = events // buckets
        rows += [{"window_ms": window_ms, "window_events": int(window_ms * RATE / 1e3),
                  "strategy": name, "bucket": b, "first_event": b * size,
                  "last_event": min(events, (b + 1) * size) - 1,
                  "after_change": int(b * size >= change), "matches": int(matches[b]),
                  "found": int(round(recall[b] * matches[b])), "recall": float(recall[b]),
                  "recall_total": r["recall"], "throughput": r["throughput"],
                  "change_at": change, "events": events, "bound_share": SHARE,
                  "event_rate": RATE} for b in range(buckets)]
    return rows


def check(rows: list[dict]) -> list[tuple[str, bool]]:
    """§4.4.3.5's statements: Hybrid's recall recovers to within 5 points of its level
    before the change (per window; the recovery in events and windows), faster for
    smaller windows, and the adaptation is what recovers it (the fixed model does not)."""
    out, took = [], {}
    for w in sorted({int(r["window_ms"]) for r in rows}):
        g = {s: [r for r in rows if int(r["window_ms"]) == w and r["strategy"] == s]
             for s in ("Hybrid", "Hybrid (fixed model)")}
        rec = rolling_recall(*(np.array([int(r[c]) for r in g["Hybrid"]])
                               for c in ("matches", "found")), SPAN)
        after = np.array([int(r["after_change"]) for r in g["Hybrid"]]) > 0
        level, at = recovery(rec, after)
        first = int(np.flatnonzero(after)[0])
        start = int(g["Hybrid"][first]["first_event"])
        fixed = _pooled(g["Hybrid (fixed model)"], after)
        win = int(g["Hybrid"][0]["window_events"])
        if at is None:
            out.append((f"window {w} ms: Hybrid's recall before the change {level:.3f}; "
                        "it does not recover to within 5 points", False))
            continue
        lag = int(g["Hybrid"][at]["first_event"]) - start
        took[w] = lag
        out.append((f"window {w} ms ({win} events): Hybrid's recall before the change "
                    f"{level:.3f}, lowest after it {rec[after].min():.3f}, back within 5 "
                    f"points {lag} events ({lag / win:.0f} windows) after the change; "
                    f"after the change Hybrid {_pooled(g['Hybrid'], after):.3f}, with a "
                    f"fixed model {fixed:.3f}", True))
    if len(took) > 1:
        ws = sorted(took)
        lags = ", ".join(f"{w} ms {took[w]}" for w in ws)
        out.append((f"recovery is quicker for smaller windows: {lags} events",
                    all(took[a] <= took[b] for a, b in zip(ws, ws[1:], strict=False))))
    return out


def _pooled(rows: list[dict], where: np.ndarray) -> float:
    m = np.array([int(r["matches"]) for r in rows])[where]
    return float(np.array([int(r["found"]) for r in rows])[where].sum() / max(1, m.sum()))


def main(argv: list[str] | None = None) -> int:
    ap = reproduction_parser(__doc__.split("\n\n")[0], Path("results/ch4"),
                             "a shorter stream (6,000 events, 2 windows)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    if args.draw:
        return draw_csv(args.draw, args.figures, draw)
    t0 = time.perf_counter()
    windows, events, buckets = (((1, 4), 8000, 40) if args.quick
                                else ((1, 2, 4, 8), 24000, 80))
    with spawn_pool(args.workers) as pool:
        rows = [r for got in pool.map(run_window, [(w, events, buckets) for w in windows])
                for r in got]
    path = args.out / ("adaptivity.csv" if args.quick else "adaptivity_full.csv")
    write_rows(rows, path, COLUMNS)
    report(check(rows), args.figures, "experiments.ch4_adaptivity", path)
    print(f"wrote {path} ({len(rows)} rows) in {time.perf_counter() - t0:.0f} s")
    return 0


def draw(rows, folder: Path) -> list[Path]:
    """Figure 4.16 from the rows (or the CSV's path): recall against the stream
    position (pooled as the recovery is judged, :func:`rolling_recall`), one panel per
    window."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from experiments.ch4_figures import STYLE

    d = pd.read_csv(rows) if isinstance(rows, str | Path) else pd.DataFrame(rows)
    d = d.astype({"window_ms": float, "first_event": int, "recall": float,
                  "change_at": int})
    windows = sorted(d["window_ms"].unique())
    fig, axes = plt.subplots(1, len(windows), figsize=(4.2 * len(windows), 3.6),
                             squeeze=False)
    for ax, w in zip(axes[0], windows, strict=True):
        g = d[d["window_ms"] == w]
        for s, gs in g.groupby("strategy", sort=False):
            color, marker = STYLE.get(s, ("tab:red", None))
            pooled = rolling_recall(gs["matches"].to_numpy(int), gs["found"].to_numpy(int),
                                    SPAN)
            ax.plot(gs["first_event"], pooled, color=color,
                    ls="--" if "fixed" in s else "-", lw=2 if s == "Hybrid" else 1,
                    label=s)
        ax.axvline(g["change_at"].iloc[0], color="black", ls=":")
        ax.set_title(f"window {w:g} ms ({int(g['window_events'].iloc[0])} events)")
        ax.set_xlabel("stream position [events]")
        ax.set_ylabel(f"recall, pooled over {SPAN} buckets")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Recall over time, C.V ~ U(2, 10) -> U(12, 20) at the dotted line "
                 "(cf. Figure 4.16)")
    fig.tight_layout()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ch4_adaptivity.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


if __name__ == "__main__":
    sys.exit(main())
