"""What the remote-data engine keeps of the stream (:class:`RemoteState`), apart from its
compiled query (:mod:`cep_core.remote.engine`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from cep_core.engine.reference_state import ReferenceState
from cep_core.plan import START
from cep_core.remote.source import Element, FetchStats, LatencySampler

__all__ = ["RemoteState"]


@dataclass
class RemoteState(ReferenceState):
    """The remote engine's state: the reference engine's (partial matches, counters,
    ...) and the device ``clock``, the ``cache``, the ``fetch`` statistics and the
    latencies of the matches so far, the utility model, the latency draws of each source
    (``draws``, in the engine's order of sources), the elements in flight that the cache
    could not keep (``uncached``), the prefetches not yet sent (``deferred``) and the
    guards waiting for their elements (``arrivals``), the cache-hit matrix H
    (``misses``) and the prefetches it counts (``prefetched``), the lookahead
    categories (``trigger``: need indices by category), ``succ(j)`` (``reach``), the
    end of the time slice, the lowest utility cached (``floor``) and the category of
    the latest step. It pickles; :attr:`nbytes` sizes it; a fresh engine of the same
    compiled query takes it (``engine.stream_state = state``) and goes on where it
    was."""

    clock: Any = None
    cache: Any = None
    fetch: FetchStats = field(default_factory=FetchStats)
    match_latencies: list[float] = field(default_factory=list)
    utility: Any = None
    draws: list[LatencySampler] = field(default_factory=list)
    uncached: dict[Element, float] = field(default_factory=dict)
    deferred: list = field(default_factory=list)  # (due time, seq, element, (j, m))
    arrivals: list = field(default_factory=list)  # (ready_at, seq, guard)
    seq: int = 0
    misses: dict[tuple[int, int], list] = field(default_factory=dict)
    prefetched: dict[Element, tuple[int, int]] = field(default_factory=dict)
    trigger: dict[int, list[int]] = field(default_factory=dict)
    reach: dict[int, frozenset] = field(default_factory=dict)
    slice_end: float = -math.inf
    floor: float = 0.0
    category: int = START
