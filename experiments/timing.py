"""Timing a call in a benchmark (``scripts/bench_cep.py``, ``scripts/reproduce_aseq.py``):
wall times of repeated calls with the garbage collector run before each and paused
during it (as ``timeit`` does), so that the garbage of one timed call is not collected
in another's time."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def time_calls(f: Callable[[], object], repeats: int) -> tuple[list[float], object]:
    """Wall times of ``repeats`` calls of ``f`` [s] and the last call's result."""
    times, result = [], None
    for _ in range(repeats):
        result = None
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            result = f()
            times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return times, result
