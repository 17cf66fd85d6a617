"""What every engine answers (:class:`Engine`), so that a session runs any of them the
same way, and :class:`EngineBase`, the answers an engine gives unless it has its own.

A :class:`~cep_core.query.Session` keeps the stream's bookkeeping (event ids, the time
order across batches, exact matching over placeholders) and hands each batch to its
engine's :meth:`Engine.feed`: the reference, graph and adaptive engines step through the
events one by one (:class:`StepFeeding`), the keyed vectorized engine and the stream
aggregation read a DataFrame by its columns (:meth:`Engine.reads_frame`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from cep_core.counters import Counters, WorkBy
from cep_core.engine.keyed_batch import equal_runs, value_codes
from cep_core.errors import QueryError

__all__ = ["Engine", "EngineBase", "StepFeeding", "as_frame", "feed_by_value"]


@runtime_checkable
class Engine(Protocol):
    """An engine as a session runs it.

    ``name`` names it (:meth:`~cep_core.query.CompiledQuery.explain`); ``counters`` are
    its cost counters so far (:class:`~cep_core.counters.Counters`, kept as an attribute
    the engine adds to as it works); ``policy`` is its selection policy (None for an
    aggregation); ``reports`` says what :meth:`report` tells (``"adaptation"``,
    ``"shedding"``, ``"remote"``, ``"rc-acep"``, or None when it has no report); ``work``
    is the last batch's work per value of ``feed``'s ``work_by`` column (None
    without)."""

    name: str
    policy: str | None
    work: WorkBy | None

    @property
    def counters(self) -> Counters:
        """The cost counters so far (read-only to a session)."""

    @property
    def reports(self) -> str | None:
        """What :meth:`report` tells (read-only to a session)."""

    def reads_frame(self, events: Any) -> bool:
        """Whether the engine reads ``events`` (a DataFrame) by its columns as it is;
        otherwise the session hands it the events as dicts, each with an ``id``."""

    def feed(self, events: Any, frame: bool = False, *, keep: Any = None,
             work_by: str | None = None, first_id: int | None = None) -> Any:
        """The outputs of one batch (dicts, or a DataFrame with ``frame``). ``keep``: a
        mask over the batch (the keyed engine's input filter); ``work_by``: a column whose
        values the batch's work is booked by (:attr:`work`); ``first_id``: the stream
        position of the batch's first event."""

    def flush(self) -> list[dict]:
        """The outputs at the end of the stream so far."""

    def settled(self) -> bool:
        """Whether :meth:`flush` would now emit nothing and change nothing, so that the
        stream can go on after it as if it had not been called."""

    def ending(self) -> Engine:
        """A copy to :meth:`flush` right away that leaves this engine as it is."""

    def statistics(self) -> dict[str, Any]:
        """Per-query statistics (events per type, predicates evaluated and passed, ...)."""

    def report(self) -> dict[str, Any]:
        """What the engine's ``reports`` names: plans and checks, latencies and what was
        shed, latencies and fetches, or what a budgeted run found and spent."""

    def reload_tables(self, *names: str) -> None:
        """Re-read lookup tables changed in place, rows and columns the same (the keyed
        engine and what steps it; others refuse)."""

    def partial_matches(self) -> list[dict[str, Any]]:
        """The live partial matches (engines that keep none refuse)."""

    def live_runs(self, *attrs: str) -> dict[str, Any]:
        """The live runs as columns (the keyed engine; others refuse)."""

    def drop_runs(self, *keys: Any) -> int:
        """Drop the live runs of these partition keys (the keyed engine; others refuse)."""


class EngineBase:
    """The answers of an engine that has none of its own: :meth:`feed` over
    :meth:`feed_batch`, no report, no statistics, no frames read by their columns, no
    partial matches or runs to list."""

    name: str = "engine"
    policy: str | None = None
    reports: ClassVar[str | None] = None
    work: WorkBy | None = None

    @classmethod
    def refusal(cls, plan: Any, options: Any) -> str | None:
        """Why this engine does not run ``plan`` (None: an aggregation query) with these
        :class:`~cep_core.engine.options.EngineOptions`; None when it does."""
        return None

    def feed_batch(self, events: Any) -> list[dict]:
        """The outputs of one batch as dicts (what :meth:`feed` runs)."""
        raise NotImplementedError

    def feed(self, events: Any, frame: bool = False, *, keep: Any = None,
             work_by: str | None = None, first_id: int | None = None) -> Any:
        """:meth:`Engine.feed`: ``keep`` is the keyed engine's, ``work_by`` feeds the
        events one run of equal values at a time (:func:`feed_by_value`), ``first_id`` is
        not needed (the events carry their ids)."""
        if keep is not None:
            raise QueryError("keep= masks a batch on the keyed vectorized engine; the "
                             "reference engine takes an input_filter")
        if work_by is not None:
            out, self.work = feed_by_value(self, events, work_by, frame)
            return out
        self.work = None
        out = self.feed_batch(events)
        return as_frame(out) if frame else out

    def flush(self) -> list[dict]:
        return []

    def reads_frame(self, events: Any) -> bool:
        return False

    def statistics(self) -> dict[str, Any]:
        return {}

    def report(self) -> dict[str, Any]:
        raise QueryError(f"the {self.name} engine keeps no report")

    def partial_matches(self) -> list[dict[str, Any]]:
        raise QueryError(f"the {self.name} engine does not list partial matches")

    def live_runs(self, *attrs: str) -> dict[str, Any]:
        raise _keyed_only("live_runs")

    def drop_runs(self, *keys: Any) -> int:
        raise _keyed_only("drop_runs")

    def reload_tables(self, *names: str) -> None:
        raise QueryError(f"the {self.name} engine does not re-read its tables")

    def settled(self) -> bool:
        """Not known: no (:meth:`Engine.settled`)."""
        return False

    def ending(self) -> Any:
        """A deep copy (:meth:`Engine.ending`); an engine that knows what its flush
        changes copies only that."""
        return copy.deepcopy(self)


def _keyed_only(name: str) -> QueryError:
    return QueryError(f"{name}() is a feature of the keyed vectorized engine; the "
                      "reference engine takes a state_filter")


class StepFeeding(EngineBase):
    """An engine that processes one event at a time (``process(event, out)``), then
    :meth:`end_batch` after each batch."""

    def process(self, e: dict, out: list) -> None:
        raise NotImplementedError

    def end_batch(self) -> None:
        """After each batch (a state filter applied per batch)."""

    def feed_batch(self, events: Iterable[dict]) -> list[dict]:
        out: list[dict] = []
        process = self.process
        for e in events:
            process(e, out)
        self.end_batch()
        return out


def as_frame(out: list[dict]) -> Any:
    """Output dicts as a pandas DataFrame."""
    import pandas as pd

    return pd.DataFrame(out)


def feed_by_value(feeder: Any, events: Any, column: str, as_frame: bool = False,
                  **options: Any) -> tuple[Any, WorkBy]:
    """Feed ``events`` to ``feeder`` one run of equal ``column`` values at a time, reading
    its counters in between: the outputs of all the runs (a list, or one DataFrame with
    ``as_frame``) and their work per value (:class:`~cep_core.counters.WorkBy`).

    ``feeder`` is an engine that takes events one by one (what its ``feed`` does with
    ``work_by``) or anything that feeds one step by step with ``feed(batch, as_frame,
    **options)`` and ``counters`` (load shedding, remote data). Events without any run
    are fed as one empty batch, whose output has the columns."""
    frame = hasattr(events, "columns")
    rows: Any = events if frame else list(events)
    codes, uniques = value_codes(rows, column, len(rows))
    tally = np.zeros((len(WorkBy.FIELDS), len(uniques)), dtype=np.int64)
    parts = []
    for lo, hi in equal_runs(codes):
        c = feeder.counters
        before = np.array([c.events, c.pm_created, c.pm_extended, c.outputs])
        part = rows.iloc[lo:hi] if frame else rows[lo:hi]
        parts.append(feeder.feed(part, as_frame, **options))
        tally[:, codes[lo]] += np.array([c.events, c.pm_created, c.pm_extended,
                                         c.outputs]) - before
    if not parts:
        parts.append(feeder.feed(rows, as_frame, **options))
    work = WorkBy.of(column, uniques, tally)
    if as_frame:
        import pandas as pd

        return pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True), work
    return [x for part in parts for x in part], work
