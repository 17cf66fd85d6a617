"""What a keyed vectorized engine keeps of the stream (:class:`KeyedState`), apart from
its compiled plan as Flink CEP keeps an ``NFAState`` apart from its ``NFA``, and the
values of one call of its ``feed`` (:class:`KeyedCall`), which it passes along instead
of keeping them (:mod:`cep_core.engine.keyed`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cep_core.counters import Counters
from cep_core.engine.keyed_batch import KeyIndex, resize
from cep_core.engine.keyed_negation import NegState
from cep_core.engine.matching import Statistics
from cep_core.engine.state import nbytes
from cep_core.plan import Plan

__all__ = ["KeyedState", "KeyedCall"]


@dataclass
class KeyedState:
    """The keyed engine's state: per run (a partition key, times the error levels of
    approximate matching) its automaton ``state`` (-1: no run), the time of its first
    event (``first_t``), the ``length`` of each Kleene variable, the ``store`` of values
    its expressions read later (and ``store_lost``: which a placeholder lacked); the
    partition keys' index, what the NEG elements keep (``neg``), the ``counters`` and
    ``stats``, and the events fed so far. It pickles; :attr:`nbytes` sizes it; a fresh
    engine of the same compiled plan takes it (``engine.stream_state = state``) and goes
    on where it was."""

    keyindex: KeyIndex
    state: np.ndarray
    first_t: np.ndarray
    length: dict[str, np.ndarray]
    store: dict[tuple, np.ndarray]
    store_lost: dict[tuple, np.ndarray]
    counters: Counters
    stats: Statistics
    neg: NegState | None = None
    events_fed: int = 0

    @classmethod
    def fresh(cls, plan: Plan, neg: NegState | None) -> KeyedState:
        """The state before any event."""
        kleene = [p.var for p in plan.positions if p.kleene]
        return cls(KeyIndex(), np.full(0, -1, dtype=np.int32), np.zeros(0),
                   {v: np.zeros(0, dtype=np.int64) for v in kleene}, {}, {}, Counters(),
                   Statistics(plan), neg)

    @property
    def nbytes(self) -> int:
        """The bytes it holds (:func:`~cep_core.engine.state.nbytes`)."""
        return nbytes(self)

    def grow(self, n: int) -> None:
        """Room for ``n`` runs (at least doubling)."""
        cap = len(self.state)
        if n <= cap:
            return
        new = max(n, 2 * cap, 1024)
        self.state = resize(self.state, new, -1)
        self.first_t = resize(self.first_t, new, 0)
        for v in self.length:
            self.length[v] = resize(self.length[v], new, 0)
        for k in self.store:
            self.store[k] = resize(self.store[k], new, 0)
        for k in self.store_lost:
            self.store_lost[k] = resize(self.store_lost[k], new, False)
        if self.neg is not None:
            self.neg.grow(new)

    def move_runs(self, src: np.ndarray, dst: np.ndarray) -> None:
        """The runs of ``src`` become those of ``dst`` (``src`` keeps a copy)."""
        self.state[dst] = self.state[src]
        self.first_t[dst] = self.first_t[src]
        for arrays in (self.length, self.store, self.store_lost):
            for arr in arrays.values():
                arr[dst] = arr[src]

    def put(self, store_key: tuple, keys: np.ndarray, values: np.ndarray) -> None:
        """Store ``values`` under ``store_key`` for the runs ``keys`` (as objects when
        they are not numbers, widened when their type changes)."""
        arr = self.store.get(store_key)
        values = np.asarray(values)
        if arr is None:
            arr = np.zeros(len(self.state), dtype=values.dtype if values.dtype.kind in "biuf"
                           else object)
        elif arr.dtype != values.dtype and arr.dtype != object:
            try:
                dt = np.result_type(arr.dtype, values.dtype)
            except TypeError:
                dt = np.dtype(object)
            if dt.kind not in "biuf":
                dt = np.dtype(object)
            arr = arr.astype(dt)
        arr[keys] = values
        self.store[store_key] = arr


class KeyedCall:
    """The values of one call of the keyed engine's ``feed`` (or ``event_tests``), passed
    to what it runs instead of kept on the engine: each event's type code (``typ``), the
    predicates on the new event alone over the batch (``pre``, computed on first use), a
    levelled wave's held outputs (``held``), the work tally by a column's values
    (``work_codes``, ``tally``) and what the NEG elements keep of the batch
    (``neg_batch``)."""

    __slots__ = ("typ", "pre", "held", "work_codes", "tally", "neg_batch")

    def __init__(self, typ: np.ndarray, work_codes: np.ndarray | None = None,
                 tally: np.ndarray | None = None):
        self.typ, self.work_codes, self.tally = typ, work_codes, tally
        self.pre: dict[int, Any] = {}
        self.held: list[tuple] | None = None
        self.neg_batch: tuple = ()
