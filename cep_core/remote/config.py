"""How a query integrates remote data (:class:`RemoteConfig`): the strategy of
dissertation §5.4 and §5.6.1 (:data:`STRATEGIES`, described in
:mod:`cep_core.remote.engine`), the modelled device's unit cost, the cache and the
utility model's parameters, and the engine semantics an experiment may set apart from
the text's reading (:data:`BLOCKING`, :data:`LATENCY_FROM`, :data:`ORDER`, BL1's
cache)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from cep_core.errors import QueryError

__all__ = ["STRATEGIES", "BLOCKING", "LATENCY_FROM", "LATENCY_TO", "ORDER", "RemoteConfig"]

STRATEGIES = ("BL1", "BL2", "BL3", "PFetch", "LzEval", "Hybrid")
#: when a blocking miss is sent: with the event's other blocking fetches ("event") or
#: by each partial match when it evaluates the look-up ("match")
BLOCKING = ("event", "match")
#: where a match's latency starts: the arrival of its last event or the start of its
#: processing
LATENCY_FROM = ("arrival", "start")
#: where a match's latency ends: when the device has finished its last event or when
#: the match's accepting step is taken, while that event is still processed
LATENCY_TO = ("finish", "match")
#: in which order the partial matches of one partition take an event: the order they
#: were made in, or that of their states (earlier states first)
ORDER = ("made", "state")


@dataclass(frozen=True)
class RemoteConfig:
    """How a query integrates remote data (module doc). ``unit_cost`` [time units per
    cost unit] of the modelled device; ``capacity`` of the cache [size units]; ``cache``
    ``"lru"`` or ``"cost"`` (BL1's: ``bl1_capacity``); ``slices``: m per window (§5.3.2);
    ``omega_fetch``, ``omega_cache``: ω of Eq. 5.3 for fetching and caching (§5.6.3:
    0.7 and 0.5); ``miss_threshold``, ``miss_reset`` [time units; default the window]:
    the cache-hit matrix of Alg. 3.

    Engine semantics (:mod:`cep_core.remote.engine`, "Options"): ``blocking``
    (:data:`BLOCKING`): ``"event"`` sends the blocking fetches one event needs together
    when the device picks the event up, so they cost their maximum, and an element
    fetched for the event serves its other partial matches (Definition 2.10);
    ``"match"`` sends each when a partial match evaluates the look-up and stands still
    until it is there before the next partial match goes on, so the waits of one event
    add up. ``bl1_capacity`` [size units]: the cache BL1 keeps (0: none, §5.6.1).
    ``latency_from`` (:data:`LATENCY_FROM`): ``"arrival"`` measures a match's latency
    from the arrival of its last event (Eq. 2.4, queueing included), ``"start"`` from
    the start of that event's processing (a closed-loop measurement: queueing behind
    earlier events excluded). ``latency_to`` (:data:`LATENCY_TO`): ``"finish"`` ends it
    when the device has finished the last event (Eq. 2.4's detection), ``"match"`` when
    the match's accepting step is taken, so the rest of that event's work (other partial
    matches, their waits) is not counted. ``payload``: a partial match keeps the remote elements it
    has read (its payload, §5.6.2) and its extensions inherit them, so reading one again
    needs neither the cache nor a fetch; without it every evaluation reads through the
    cache. ``order`` (:data:`ORDER`): ``"made"`` lets the partial matches of a partition
    take an event in the order they were made, ``"state"`` in the order of their states
    (the plan's positions), earlier states first, as a matcher that checks its
    transitions state by state does; with ``blocking="match"`` and
    ``latency_to="match"`` a match accepted at an event then waits for the blocking
    fetches of the partial matches at earlier states that the event extends.
    ``carry_waits``: a match's latency adds the time its earlier steps waited for
    remote data (Eq. 2.4's ℓ_fetch, carried by its partial match); without it only its
    last event's processing counts (from ``latency_from`` to ``latency_to``)."""

    strategy: str = "Hybrid"
    unit_cost: float = 0.0
    cache: str = "cost"
    capacity: float = math.inf
    slices: int = 4
    omega_fetch: float = 0.7
    omega_cache: float = 0.5
    miss_threshold: int = 3
    miss_reset: float | None = None
    blocking: str = "event"
    bl1_capacity: float = 0.0
    latency_from: str = "arrival"
    latency_to: str = "finish"
    payload: bool = False
    order: str = "made"
    carry_waits: bool = True

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise QueryError(f"remote strategy must be one of {', '.join(STRATEGIES)}, "
                             f"not {self.strategy!r}")
        if self.cache not in ("lru", "cost"):
            raise QueryError(f"remote cache must be 'lru' or 'cost', not {self.cache!r}")
        if not self.unit_cost >= 0:
            raise QueryError(f"remote unit_cost must be ≥ 0, not {self.unit_cost!r}")
        if self.blocking not in BLOCKING:
            raise QueryError(f"remote blocking must be one of {', '.join(BLOCKING)}, "
                             f"not {self.blocking!r}")
        if self.latency_from not in LATENCY_FROM:
            raise QueryError("remote latency_from must be one of "
                             f"{', '.join(LATENCY_FROM)}, not {self.latency_from!r}")
        if self.latency_to not in LATENCY_TO:
            raise QueryError("remote latency_to must be one of "
                             f"{', '.join(LATENCY_TO)}, not {self.latency_to!r}")
        if self.order not in ORDER:
            raise QueryError(f"remote order must be one of {', '.join(ORDER)}, "
                             f"not {self.order!r}")
        if not self.bl1_capacity >= 0:
            raise QueryError(f"remote bl1_capacity must be ≥ 0, not {self.bl1_capacity!r}")
        if not self.capacity >= 0:
            raise QueryError(f"remote capacity must be ≥ 0, not {self.capacity!r}")
        if not (isinstance(self.slices, int) and self.slices >= 1):
            raise QueryError(f"remote slices must be an integer ≥ 1, not {self.slices!r}")
        for name in ("omega_fetch", "omega_cache"):
            if not 0 <= getattr(self, name) <= 1:
                raise QueryError(f"remote {name} must be in [0, 1], "
                                 f"not {getattr(self, name)!r}")
        if not (isinstance(self.miss_threshold, int) and self.miss_threshold >= 1):
            raise QueryError("remote miss_threshold must be an integer ≥ 1, "
                             f"not {self.miss_threshold!r}")
