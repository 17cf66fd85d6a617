"""The base of what feeds a keyed session step by step (:class:`KeyedStepper`): load
shedding (:mod:`cep_core.shedding.keyed`) and remote data (:mod:`cep_core.remote.batch`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from cep_core.counters import Counters
from cep_core.engine.protocol import EngineBase, feed_by_value
from cep_core.errors import QueryError

__all__ = ["KeyedStepper"]


class KeyedStepper(EngineBase):
    """Base of what feeds a keyed session step by step, one batch of events arriving at
    one time per step (load shedding, :mod:`cep_core.shedding.keyed`; remote data,
    :mod:`cep_core.remote.batch`): the session (or another stepper around it), its
    engine and partition key, its counters and flush. An
    :class:`~cep_core.engine.protocol.Engine` that stands in for its session: ``feed``
    takes a step (a DataFrame, its outputs a DataFrame unless ``as_frame`` is false, as
    :meth:`cep_core.query.Session.feed` names it), or a step per value of ``work_by``;
    the statistics and the policy are the keyed engine's, the report the stepper's."""

    def _wrap(self, session: Any) -> None:
        from cep_core.engine.keyed import KeyedEngine

        engine = session.engine
        if not isinstance(engine, KeyedEngine) or len(engine.plan.partition) != 1:
            raise QueryError(f"a {type(self).__name__} runs a keyed session with one "
                             "partition attribute")
        self.session, self.engine, self.key = session, engine, engine.plan.partition[0]

    @property
    def counters(self) -> Counters:
        return self.session.counters

    @property
    def policy(self) -> str:  # type: ignore[override]
        return self.engine.policy

    def flush(self) -> list:
        return self.session.flush()

    def reload_tables(self, *names: str) -> None:
        """:meth:`cep_core.query.Session.reload_tables` of the session stepped."""
        self.session.reload_tables(*names)

    def settled(self) -> bool:
        """:meth:`cep_core.query.Session.settled` of the session stepped (a step keeps
        nothing back for the end of the stream)."""
        return self.session.settled()

    def reads_frame(self, events: Any) -> bool:
        return True

    def statistics(self) -> dict[str, Any]:
        return self.engine.statistics()

    def feed(self, events: Any, as_frame: bool = True, *, keep: Any = None,
             work_by: str | None = None, first_id: int | None = None) -> Any:
        """The outputs of one step (``events`` arrive at one time), or of one step per
        value of ``work_by``, whose work is then in :attr:`work`; ``keep`` is refused
        (the stepper masks its steps itself), ``first_id`` not needed."""
        if keep is not None:
            raise QueryError(f"a {type(self).__name__} masks its steps itself; keep= "
                             "applies to a keyed session")
        if work_by is not None:
            out, self.work = feed_by_value(self, events, work_by, as_frame)
            return out
        self.work = None
        return self.feed_step(events, as_frame)

    def feed_step(self, batch: pd.DataFrame, as_frame: bool = True) -> Any:
        """The outputs of one step."""
        raise NotImplementedError

    def _step_time(self, batch: pd.DataFrame) -> float:
        """The one arrival time of a step's events."""
        times = batch["time"].to_numpy()
        if (times != times[0]).any():
            raise QueryError(f"a {type(self).__name__} step is one batch of events "
                             "arriving at one time")
        return float(times[0])
