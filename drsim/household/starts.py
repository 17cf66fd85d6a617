"""Starts of appliance cycles and EV charging sessions, as columns over a chunk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Batch:
    """Columns of equal length: starts of appliance cycles or EV charging sessions.

    (``appliance`` or -1 for EVs, ``day``, ``j``: index within the household's day) names
    a planned start independently of DR and keys its random draws; ``gen`` counts how
    often DR moved it. EV sessions also carry ``energy_kwh`` and charger ``kw``.
    """

    row: np.ndarray
    t: np.ndarray
    appliance: np.ndarray
    day: np.ndarray
    j: np.ndarray
    gen: np.ndarray
    energy_kwh: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kw: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.t)

    def take(self, sel) -> Batch:
        return Batch(**{k: (v[sel] if len(v) else v) for k, v in self.__dict__.items()})

    @staticmethod
    def concat(parts: Sequence[Batch]) -> Batch:
        parts = [p for p in parts if len(p)] or list(parts[:1])
        return Batch(
            **{k: np.concatenate([getattr(p, k) for p in parts]) for k in parts[0].__dict__}
        )

    def by_time(self) -> Batch:
        """The same starts in time order (stable)."""
        return self.take(np.argsort(self.t, kind="stable"))

    @staticmethod
    def empty(ev: bool = False) -> Batch:
        z = np.zeros(0, dtype=np.int64)
        f = np.zeros(0)
        return Batch(z, z, z, z, z, z, *((f, f) if ev else ()))


def make_batch(rows, t, apps, day, j, energy_kwh=None, kw=None) -> Batch:
    """A Batch of new planned starts (moved 0 times); ``apps`` and ``day`` may be scalars."""
    n = len(t)
    return Batch(
        row=rows.astype(np.int64),
        t=t.astype(np.int64),
        appliance=np.broadcast_to(np.asarray(apps, dtype=np.int64), n).copy(),
        day=np.full(n, day, dtype=np.int64),
        j=j.astype(np.int64),
        gen=np.zeros(n, dtype=np.int64),
        energy_kwh=np.zeros(0) if energy_kwh is None else energy_kwh,
        kw=np.zeros(0) if kw is None else kw,
    )
