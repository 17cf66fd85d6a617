"""Timing a call in a benchmark (``scripts/bench_cep.py``, ``scripts/reproduce_aseq.py``):
wall times of repeated calls with the garbage collector run before each and paused
during it (as ``timeit`` does), so that the garbage of one timed call is not collected
in another's time; and, on request, a heap that keeps its pages (:func:`steady_heap`)."""

from __future__ import annotations

import ctypes
import gc
import time
from collections.abc import Callable

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


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


def steady_heap() -> bool:
    """Keep the process's freed memory for its next allocations (glibc only).

    glibc's malloc gives the top of its heap back to the system, and serves large
    arrays with fresh pages, by thresholds it moves as the process allocates and frees;
    whether a timed call then pays page faults for its arrays depends on what ran before
    it in the process, not on the call (a bare numpy pass was measured 1.9 times slower
    in one process than in another). Fixed thresholds (no trimming below 2 GB, no fresh
    pages below 32 MB) make a median measure the code. Returns whether they were set.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)) and \
        bool(libc.mallopt(M_TRIM_THRESHOLD, (1 << 31) - 1))
