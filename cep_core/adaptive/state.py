"""What an adaptive engine keeps of the stream (:class:`AdaptiveState`), apart from its
compiled query (:mod:`cep_core.adaptive.engine`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cep_core.adaptive.statistics import WindowStatistics
from cep_core.counters import Counters
from cep_core.engine.matching import Statistics
from cep_core.engine.negation import EndQueues
from cep_core.engine.state import nbytes

__all__ = ["AdaptiveState"]


@dataclass
class AdaptiveState:
    """The adaptive engine's state: the ``counters`` and ``stats``, the sliding-window
    statistics (``window_stats``), the plans' evaluations (``runners``: the current one
    last, each with its partial matches), the decision ``decide`` (D, with what it last
    planned; None without adaptation), the ``report`` so far, the events waiting for a
    partner of a selectivity sample (``unpaired``), the events of each position and key
    (``buffers``), of each type negated between two neighbours and key (``negs``), what
    the negated elements at the pattern's ends keep (``ends``), the events seen (``seq``),
    the times of the next check and sweep, and whether a plan was chosen yet. It pickles
    (a plan's evaluation without its engine, which a restoring engine gives it);
    :attr:`nbytes` sizes it."""

    counters: Counters
    stats: Statistics
    window_stats: WindowStatistics
    runners: list
    decide: Any
    report: dict[str, Any]
    unpaired: dict[tuple, tuple] = field(default_factory=dict)
    buffers: dict[tuple, Any] = field(default_factory=dict)
    negs: dict[tuple, Any] = field(default_factory=dict)
    ends: EndQueues = field(default_factory=EndQueues)
    seq: int = 0
    next_check: Any = None
    next_sweep: Any = None
    planned_once: bool = False

    @property
    def nbytes(self) -> int:
        """The bytes it holds (:func:`~cep_core.engine.state.nbytes`)."""
        return nbytes(self)
