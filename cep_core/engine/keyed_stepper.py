"""The base of what feeds a keyed session step by step (:class:`KeyedStepper`): load
shedding (:mod:`cep_core.shedding.keyed`) and remote data (:mod:`cep_core.remote.batch`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from cep_core.counters import Counters
from cep_core.errors import QueryError

__all__ = ["KeyedStepper"]


class KeyedStepper:
    """Base of what feeds a keyed session step by step, one batch of events arriving at
    one time per step (load shedding, :mod:`cep_core.shedding.keyed`; remote data,
    :mod:`cep_core.remote.batch`): the session (or another stepper around it), its
    engine and partition key, its counters and flush."""

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

    def flush(self) -> list:
        return self.session.flush()

    def _step_time(self, batch: pd.DataFrame) -> float:
        """The one arrival time of a step's events."""
        times = batch["time"].to_numpy()
        if (times != times[0]).any():
            raise QueryError(f"a {type(self).__name__} step is one batch of events "
                             "arriving at one time")
        return float(times[0])
