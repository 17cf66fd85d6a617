"""One strategy over the streams of a case study of the dissertation's §5.6.4 (Figure
5.16: :mod:`experiments.bushfire`, :mod:`experiments.cluster_regions`): a session of
cep_core's remote-data engine per stream, the match latencies of all streams pooled into
one CSV row of percentiles, and the gains of Hybrid the statements read.

The latency of a match is Eq. 2.4's (detection minus the arrival of its last event, plus
the fetch latency of its earlier steps), on the modelled device of
:mod:`cep_core.remote.engine`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from cep_core.remote import RemoteConfig
from experiments.results_csv import report, spawn_pool, write_rows

__all__ = ["PERCENTILES", "TOTALS", "run_streams", "gain", "run_case"]

PERCENTILES = ("p5", "p25", "p50", "p75", "p95")
#: what a row counts over its streams (``waited``: device time stood still for fetches)
TOTALS = ("matches", "events", "requests", "prefetches", "waited", "pm_created")


def run_streams(runs: Iterable[tuple], config: RemoteConfig, policy: str,
                scale: float) -> dict:
    """Run ``config`` over ``runs``, pairs (compiled query, events) whose query was
    compiled with a :class:`~cep_core.remote.RemoteSource`; the percentiles
    :data:`PERCENTILES` of the match latencies and ``waited`` in stream time units times
    ``scale`` (for instance ms per unit), and the counts :data:`TOTALS`."""
    latencies: list[float] = []
    totals = dict.fromkeys(TOTALS, 0.0)
    for cq, events in runs:
        session = cq.start(policy, output="matches", remote=config)
        session.feed(events)
        session.flush()
        latencies.extend(session.engine.match_latencies)
        rep = session.remote_report()
        for k in ("requests", "prefetches", "waited"):
            totals[k] += rep["fetch"][k]
        totals["matches"] += rep["matches"]
        totals["events"] += len(events)
        totals["pm_created"] += rep["counters"]["pm_created"]
    lat = np.asarray(latencies) * scale
    pct = {p: float(np.percentile(lat, int(p[1:]))) if len(lat) else 0.0
           for p in PERCENTILES}
    return {**pct, **{k: int(v) for k, v in totals.items() if k != "waited"},
            "waited": totals["waited"] * scale}


def gain(rows: dict[str, dict], base: str, q: str = "p50") -> float:
    """How many times Hybrid's percentile ``q`` is below ``base``'s, in ``rows`` by
    strategy (inf when Hybrid's is 0).

    >>> gain({"BL1": {"p50": "3.0"}, "Hybrid": {"p50": 0.5}}, "BL1")
    6.0
    """
    ours = float(rows["Hybrid"][q])
    return float(rows[base][q]) / ours if ours > 0 else float("inf")


def run_case(run_one: Callable[[tuple], dict], todo: list[tuple], workers: int, path: Path,
             columns: Sequence[str], check: Callable[[list[dict]], Iterable[tuple[str, bool]]],
             figures: Path | None, module: str) -> None:
    """Run a case study's ``todo`` (one job per strategy) on ``workers`` processes, write
    its rows to ``path`` and print which of the source's statements hold (``check``)."""
    t0 = time.perf_counter()
    with spawn_pool(workers) as pool:
        rows = list(pool.map(run_one, todo))
    write_rows(rows, path, columns)
    report(check(rows), figures, module, rows)
    print(f"wrote {path} ({len(rows)} runs) in {time.perf_counter() - t0:.0f} s")
