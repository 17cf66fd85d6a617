"""Cost counters of an engine: the computation cost that results report."""

from __future__ import annotations

from dataclasses import asdict, dataclass


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
