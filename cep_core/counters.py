"""Cost counters of an engine: the computation cost that results report."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass
class Counters:
    """What an engine did: events processed, partial matches created / extended /
    dropped, predicates evaluated, matches (or outputs) emitted."""

    events: int = 0
    pm_created: int = 0
    pm_extended: int = 0
    pm_dropped: int = 0
    predicates: int = 0
    outputs: int = 0

    def add(self, other: Counters) -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class WorkBy:
    """What one fed batch cost per value of one of its columns (``Session.feed(..,
    work_by=column)``): the column's distinct values in order of first appearance and,
    per value, the events processed, partial matches created and extended, and outputs
    emitted by its events. Summed over the values they are what the batch added to the
    :class:`Counters` of the same names."""

    column: str
    values: np.ndarray
    events: np.ndarray
    pm_created: np.ndarray
    pm_extended: np.ndarray
    outputs: np.ndarray

    FIELDS = ("events", "pm_created", "pm_extended", "outputs")

    @classmethod
    def of(cls, column: str, values: np.ndarray, tally: np.ndarray) -> WorkBy:
        """From a (4, values) tally in the order of :attr:`FIELDS`."""
        return cls(column, values, *(np.asarray(row, dtype=np.int64) for row in tally))

    def at(self, values: np.ndarray, field: str) -> np.ndarray:
        """``field`` at each of ``values`` (0 for a value the batch did not have)."""
        index = {v: i for i, v in enumerate(self.values.tolist())}
        got = getattr(self, field)
        return np.array([got[index[v]] if v in index else 0 for v in np.asarray(values)
                         .tolist()], dtype=np.int64)
