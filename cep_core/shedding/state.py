"""What the load-shedding engine keeps of the stream (:class:`SheddingState`), apart
from its compiled query (:mod:`cep_core.shedding.engine`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from cep_core.engine.reference_state import ReferenceState

__all__ = ["SheddingState"]


@dataclass
class SheddingState(ReferenceState):
    """The shedding engine's state: the reference engine's (partial matches, counters,
    ...) and the device ``clock``, the latency window the bound is judged by
    (``monitor``), the latencies of the matches and the sum of those of the events, the
    events seen and shed, the partial matches shed and curbed, the control of the
    overload (whether the device is ``overloaded``, how often shedding was triggered, the
    end of the cool-down, the time from which latencies judge the latest shedding), the
    cells curbed and until when, the partial matches to drop before the next event
    (``doomed``), the time of the next blend of an adapting model, the ``model``
    (the session's own copy when it adapts) and the ``strategy`` with what it has drawn
    and decided so far (pickled without its engine, which it is bound to again by the
    engine that takes the state). It pickles;
    :attr:`nbytes` sizes it; a fresh engine of the same compiled query takes it
    (``engine.stream_state = state``) and goes on where it was."""

    clock: Any = None
    monitor: Any = None
    match_latencies: list[float] = field(default_factory=list)
    event_latencies_sum: float = 0.0
    events_seen: int = 0
    events_shed: int = 0
    pms_shed: int = 0
    pms_curbed: int = 0
    overloaded: bool = False
    shedding_triggered: int = 0
    cool_until: float = -math.inf
    judge_from: float = -math.inf
    curbing: frozenset = frozenset()
    curb_until: float = math.inf
    doomed: list = field(default_factory=list)
    next_blend: float | None = None
    model: Any = None
    strategy: Any = None
