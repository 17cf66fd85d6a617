"""How a compiled query is to run (:class:`EngineOptions`): the options of
:meth:`cep_core.query.CompiledQuery.start` in one frozen object, which each engine's
``refusal(plan, options)`` reads to say whether it runs them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cep_core.engine.matching import ANY, EVERY_EVENT, PMView

__all__ = ["EngineOptions", "MODELLED_MISSING"]

#: the modelled device's engines (load shedding, remote data) refuse approximate matching
MODELLED_MISSING = ("max_missing does not apply with remote data or load shedding on the "
                    "modelled device")


@dataclass(frozen=True)
class EngineOptions:
    """The options of a run (:meth:`cep_core.query.CompiledQuery.start` says what each
    means): the selection ``policy``, ``runs``, ``output``, the ``engine`` asked for (None:
    the one :meth:`~cep_core.query.CompiledQuery.engine_for` picks), the filters, load
    ``shedding`` or ``remote`` data on a modelled device, ``max_missing`` (approximate
    matching) and the evaluation ``plan`` with its ``adapt`` options."""

    policy: str = ANY
    runs: str = EVERY_EVENT
    output: str = "events"
    engine: str | None = None
    input_filter: Callable[[dict], bool] | None = None
    state_filter: Callable[[list[PMView]], Iterable[PMView]] | None = None
    state_filter_every: str = "event"
    shedding: Any = None
    remote: Any = None
    max_missing: int | None = None
    plan: str = "text"
    adapt: dict[str, Any] | None = None

    @property
    def filtered(self) -> bool:
        """Whether an input or a state filter is given."""
        return self.input_filter is not None or self.state_filter is not None
