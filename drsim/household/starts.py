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

    Attributes
    ----------
    row : numpy.ndarray
        Household row within the chunk (int64).
    t : numpy.ndarray
        Start time [minutes since midnight of the DR day] (int64; day -1 is negative).
    appliance : numpy.ndarray
        Catalogue index of the appliance, -1 for an EV session (int64).
    day : numpy.ndarray
        Day of the planned start, with the plan's counter offset (int64).
    j : numpy.ndarray
        Index of the start within the household's (appliance's) day (int64).
    gen : numpy.ndarray
        How often DR moved the start; 0 for a planned start (int64).
    energy_kwh : numpy.ndarray
        EV sessions only: grid energy still to charge [kWh]; empty for appliances.
    kw : numpy.ndarray
        EV sessions only: charger power [kW]; empty for appliances.

    Examples
    --------
    >>> b = make_batch(np.array([0, 1, 0]), np.array([1125, 1080, 1200]), 4, 0,
    ...                np.array([0, 0, 1]))
    >>> len(b), b.by_time().t.tolist(), b.by_time().row.tolist()
    (3, [1080, 1125, 1200], [1, 0, 0])
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
        """Return the number of starts."""
        return len(self.t)

    def take(self, sel) -> Batch:
        """Select starts from every column.

        Parameters
        ----------
        sel : slice, numpy.ndarray of bool or int
            The starts to keep, as for numpy indexing; empty columns (``energy_kwh`` and
            ``kw`` of appliance starts) stay empty.

        Returns
        -------
        Batch
            The selected starts (numpy copies or views, as the index gives).
        """
        return Batch(**{k: (v[sel] if len(v) else v) for k, v in self.__dict__.items()})

    @staticmethod
    def concat(parts: Sequence[Batch]) -> Batch:
        """Concatenate batches column by column, in the given order.

        Parameters
        ----------
        parts : sequence of Batch
            Batches of the same kind (all appliance or all EV starts), at least one; empty
            ones are skipped.

        Returns
        -------
        Batch
            All starts of ``parts``, not re-sorted.
        """
        parts = [p for p in parts if len(p)] or list(parts[:1])
        return Batch(
            **{k: np.concatenate([getattr(p, k) for p in parts]) for k in parts[0].__dict__}
        )

    def by_time(self) -> Batch:
        """Return the same starts in time order (stable sort on ``t``)."""
        return self.take(np.argsort(self.t, kind="stable"))

    @staticmethod
    def empty(ev: bool = False) -> Batch:
        """Return a batch without starts.

        Parameters
        ----------
        ev : bool, default False
            True for an EV batch, whose ``energy_kwh`` and ``kw`` columns are empty float
            arrays like the others (they are then concatenated, not skipped).

        Returns
        -------
        Batch
            Zero-length columns.
        """
        z = np.zeros(0, dtype=np.int64)
        f = np.zeros(0)
        return Batch(z, z, z, z, z, z, *((f, f) if ev else ()))


def make_batch(rows, t, apps, day, j, energy_kwh=None, kw=None) -> Batch:
    """Make a Batch of new planned starts (moved 0 times).

    Parameters
    ----------
    rows : numpy.ndarray
        Household row of each start within the chunk.
    t : numpy.ndarray
        Start times [minutes since midnight of the DR day].
    apps : int or numpy.ndarray
        Catalogue index of each start's appliance (-1 for EVs); a scalar applies to all.
    day : int or numpy.ndarray
        Day of the starts, with the plan's counter offset; a scalar applies to all.
    j : numpy.ndarray
        Index of each start within its household's (appliance's) day.
    energy_kwh, kw : numpy.ndarray, optional
        EV sessions only: energy to charge [kWh] and charger power [kW].

    Returns
    -------
    Batch
        The starts, int64 columns, ``gen`` zero; a column given as one value is a
        read-only view of it.
    """
    n = len(t)

    def column(values) -> np.ndarray:  # a scalar stands for all (read-only, not copied)
        return np.broadcast_to(np.asarray(values, dtype=np.int64), n)

    return Batch(
        row=np.asarray(rows, dtype=np.int64),
        t=np.asarray(t, dtype=np.int64),
        appliance=column(apps),
        day=column(day),
        j=np.asarray(j, dtype=np.int64),
        gen=column(0),
        energy_kwh=np.zeros(0) if energy_kwh is None else energy_kwh,
        kw=np.zeros(0) if kw is None else kw,
    )
