#!/usr/bin/env python
"""Benchmarks of the cep_core engines, one function per part (``bench_<part>()``).

**aseq** — A-Seq against counting by enumerating matches (the "two-step" approach of
the A-Seq paper, ``seeds/004_a810ddb1f10442b7.txt`` §2.2 and §6.2):
``COUNT`` over ``SEQ(A a, B b, C c, D d) WITHIN 50`` on a stream of one event per time
unit, types uniform over A-D (``--events``, default 10,000). Both report, at every D,
the number of matches that end at or before it and start within the window
(``first.time >= d.time - 50``, the paper's sliding-window output).

* A-Seq: :class:`cep_core.aggregate.SeqAggregator` (SEM: one prefix-counter vector per
  live A, vectorised with numpy). Timed end to end from the same list of event dicts to
  a list of output dicts (``run``); the columnar variants (``feed_columns`` from the dicts
  and from a pandas DataFrame, output as arrays) are printed too.
* Enumeration: a per-event loop keeping every partial match as a tuple of events and
  every complete match inside the window, counting the complete ones at each D.

Both are timed in this one process with ``time.perf_counter()``; the enumeration
``--repeats`` times (it is slow), A-Seq ``--aseq-repeats`` times; medians are compared.
The counts of both must be equal at every D (checked). The goal is a ratio of at least
1,000×; the script says whether it was met and exits 0 either way.

Run from the repository root::

    python scripts/bench_cep.py [--only aseq] [--events 10000] [--window 50]
                                [--repeats 3] [--aseq-repeats 21]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cep_core.aggregate import SeqAggregator, seq_query  # noqa: E402

GOAL = 1000.0


def make_stream(n: int, types: str = "ABCD", seed: int = 0) -> list[dict]:
    """``n`` events, one per time unit, types uniform over ``types``."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice(list(types), size=n).tolist()
    return [{"type": k, "time": t, "id": t} for t, k in enumerate(kinds)]


def count_by_enumeration(events: list[dict], pattern: tuple[str, ...],
                         window: float) -> list[int]:
    """The window COUNT at each trigger by building every match (pattern types
    distinct): partial matches are tuples of events, extended by every later event of
    the next type; complete matches are kept while their first event is in the window."""
    n = len(pattern)
    partial: list[tuple] = []
    complete: list[tuple] = []
    out: list[int] = []
    first, last = pattern[0], pattern[-1]
    for e in events:
        lo = e["time"] - window
        partial = [p for p in partial if p[0]["time"] >= lo]
        complete = [m for m in complete if m[0]["time"] >= lo]
        typ = e["type"]
        grown = [p + (e,) for p in partial if pattern[len(p)] == typ]
        if typ == first:
            grown.append((e,))
        for p in grown:
            (complete if len(p) == n else partial).append(p)
        if typ == last:
            out.append(len(complete))
    return out


def _time(f: Callable[[], object], repeats: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = f()
        times.append(time.perf_counter() - t0)
    return times, result


def bench_aseq(events: int = 10_000, window: float = 50, repeats: int = 3,
               aseq_repeats: int = 21, seed: int = 0) -> dict:
    """A-Seq COUNT against enumeration; prints a report and returns the numbers."""
    pattern = ("A", "B", "C", "D")
    stream = make_stream(events, "".join(pattern), seed)
    frame = pd.DataFrame(stream)
    query = seq_query("A a, B b, C c, D d", within=window, aggregates=["COUNT"])
    agg = SeqAggregator(query)

    def aseq_dicts():
        return [o["count"] for o in agg.run(stream)]

    def aseq_columns(src):
        def f():
            agg.reset()
            return agg.feed_columns(src).values["count"]
        return f

    aseq_dicts()                                    # warm-up (imports, caches)
    t_aseq, counts = _time(aseq_dicts, aseq_repeats)
    t_cols, counts_cols = _time(aseq_columns(stream), aseq_repeats)
    t_df, counts_df = _time(aseq_columns(frame), aseq_repeats)
    t_enum, counts_enum = _time(lambda: count_by_enumeration(stream, pattern, window), repeats)
    equal = (counts == counts_enum == counts_cols.tolist() == counts_df.tolist())
    rate = {name: events / statistics.median(ts) for name, ts in
            [("aseq", t_aseq), ("aseq_columns", t_cols), ("aseq_dataframe", t_df),
             ("enumeration", t_enum)]}
    ratio = rate["aseq"] / rate["enumeration"]
    print(f"A-Seq vs enumeration: COUNT SEQ(A, B, C, D) WITHIN {window:g}, {events:,} events "
          f"(one per time unit, types uniform), {len(counts_enum):,} outputs, "
          f"{sum(counts_enum):,} window counts summed")
    for name, ts in [("enumeration (dicts -> counts)", t_enum),
                     ("A-Seq run (dicts -> dicts)", t_aseq),
                     ("A-Seq feed_columns (dicts -> arrays)", t_cols),
                     ("A-Seq feed_columns (DataFrame -> arrays)", t_df)]:
        med = statistics.median(ts)
        print(f"  {name:42s} {events / med:14,.0f} events/s  median {med * 1e3:9.2f} ms "
              f"over {len(ts)} (min {min(ts) * 1e3:.2f}, max {max(ts) * 1e3:.2f})")
    print(f"  ratio A-Seq / enumeration: {ratio:,.0f}x (dicts in, results out); "
          f"columnar {rate['aseq_columns'] / rate['enumeration']:,.0f}x from dicts, "
          f"{rate['aseq_dataframe'] / rate['enumeration']:,.0f}x from a DataFrame")
    print(f"  goal >= {GOAL:,.0f}x: {'met' if ratio >= GOAL else 'NOT met'}")
    print(f"  counts equal at every trigger: {equal}")
    c = agg.counters
    print(f"  A-Seq counters (all runs): vectors created {c.pm_created:,}, prefix-counter "
          f"updates {c.pm_extended:,}, expired {c.pm_dropped:,}, outputs {c.outputs:,}")
    return {"rates": rate, "ratio": ratio, "equal": equal}


PARTS = {"aseq": bench_aseq}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=sorted(PARTS), help="run one part only")
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--window", type=float, default=50)
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the slow baseline")
    ap.add_argument("--aseq-repeats", type=int, default=21)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for name, fn in PARTS.items():
        if args.only in (None, name):
            if name == "aseq":
                out = fn(args.events, args.window, args.repeats, args.aseq_repeats, args.seed)
                if not out["equal"]:
                    return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
