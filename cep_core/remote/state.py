"""What the remote-data engine keeps of the stream (:class:`RemoteState`), apart from its
compiled query (:mod:`cep_core.remote.engine`), and the values of processing one event
(:class:`RemoteCall`), which it passes along instead of keeping them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from cep_core.engine.reference_state import ReferenceCall, ReferenceState
from cep_core.plan import START
from cep_core.remote.source import Element, FetchStats, LatencySampler

__all__ = ["RemoteState", "RemoteCall", "BLOCK", "POSTPONE", "RESOLVE"]

#: how a look-up is answered: block for a missing element, postpone the predicate
#: (:class:`~cep_core.remote.guards.Postpone`), or evaluate a guard (the element is there)
BLOCK, POSTPONE, RESOLVE = 0, 1, 2


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


class RemoteCall(ReferenceCall):
    """The values of processing one event on the modelled device, passed along (and
    handed to the :class:`~cep_core.remote.source.RemoteSource` s while the event is
    processed, so that their look-ups are answered by the ``engine``'s cache and clock)
    instead of kept on the engine: the reference engine's (:class:`ReferenceCall`), the
    device time the event is picked up (``start``) and the work units done before it
    (``u0``), the time stood still for data so far (``stall``) and in the current step
    (``step_wait``), the elements fetched for it (``in_hand``: element -> arrival), the
    ℓ_fetch of the earlier steps of the matches it completed (``fetch_lat``) and the
    device time each was completed at (``done_at``), how a
    look-up is answered (``mode``: :data:`BLOCK`, :data:`POSTPONE` or
    :data:`RESOLVE`) and the partial match whose step reads it (``pm``; None for a
    start)."""

    __slots__ = ("engine", "start", "u0", "stall", "step_wait", "in_hand", "fetch_lat",
                 "done_at", "mode", "pm")

    def __init__(self, engine: Any, out: list, start: float = 0.0, u0: int = 0):
        super().__init__(out)
        self.engine, self.start, self.u0 = engine, start, u0
        self.stall = self.step_wait = 0.0
        self.in_hand: dict[Element, float] = {}
        self.fetch_lat: list[float] = []
        self.done_at: list[float] = []
        self.mode = BLOCK
        self.pm: Any = None
