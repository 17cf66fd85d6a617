"""What the reference engine keeps of the stream (:class:`ReferenceState`), apart from
its compiled plan as Flink CEP keeps an ``NFAState`` apart from its ``NFA``, and the
values of processing one event (:class:`ReferenceCall`), which it passes along instead
of keeping them (:mod:`cep_core.engine.reference`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from cep_core.counters import Counters
from cep_core.engine.matching import PM, Statistics
from cep_core.engine.negation import EndQueues
from cep_core.engine.state import nbytes
from cep_core.plan import Plan

__all__ = ["ReferenceState", "ReferenceCall", "Waiting", "state_field"]


class Waiting:
    """A PM (or a start, ``pm=None``) waiting for a lookup, with the events it has still
    to process (its partition's, in stream order)."""

    __slots__ = ("pm", "queue", "key")

    def __init__(self, pm: PM | None, queue: list, key: Any):
        self.pm, self.queue, self.key = pm, queue, key

    def __getstate__(self):
        return (self.pm, self.queue, self.key)

    def __setstate__(self, s):
        self.pm, self.queue, self.key = s


@dataclass
class ReferenceState:
    """The reference engine's state: the ``counters`` and ``stats``, the ``live`` partial
    matches of each partition, those ``waiting`` for a lookup, what the leading and
    trailing NEG elements keep (``ends``; None without), the time of the latest event
    (``now``) and of the next window sweep, and the completions of a levelled event not
    settled yet (``held``: a lookup's catch-up settles with the next event). It pickles;
    :attr:`nbytes` sizes it; a fresh engine of the same compiled plan takes it
    (``engine.stream_state = state``) and goes on where it was."""

    counters: Counters
    stats: Statistics
    live: dict[Any, list[PM]] = field(default_factory=dict)
    waiting: dict[Any, list[Waiting]] = field(default_factory=dict)
    ends: EndQueues | None = None
    now: Any = None
    next_sweep: float = -math.inf
    held: list[tuple[dict, dict]] = field(default_factory=list)

    @classmethod
    def fresh(cls, plan: Plan) -> ReferenceState:
        """The state before any event."""
        ends = EndQueues() if plan.lead_negs or plan.trail_negs else None
        return cls(Counters(), Statistics(plan), ends=ends)

    @property
    def nbytes(self) -> int:
        """The bytes it holds (:func:`~cep_core.engine.state.nbytes`)."""
        return nbytes(self)


class ReferenceCall:
    """The values of processing one event (or of a flush), passed to what it runs
    instead of kept on the engine: the ``out`` list of outputs, the partition ``key``
    whose matches are being emitted, the records of the matches emitted so far for the
    event being processed (``seen``: one output per distinct binding) and the entries
    set waiting for a lookup meanwhile (``waitlog``)."""

    __slots__ = ("out", "key", "seen", "waitlog")

    def __init__(self, out: list, key: Any = None):
        self.out, self.key = out, key
        self.seen: dict[tuple, dict] = {}
        self.waitlog: list[Waiting] = []


def state_field(name: str) -> property:
    """The engine's view of the field ``name`` of its ``stream_state``."""

    def put(engine: Any, value: Any) -> None:
        setattr(engine.stream_state, name, value)

    return property(attrgetter(f"stream_state.{name}"), put,
                    doc=f"The ``{name}`` of the engine's ``stream_state``.")
