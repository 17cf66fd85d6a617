"""The monitoring features' keyword arguments of the group leaders and the utility, per
pass: the monitored passes' and their plain twins' (BL, dissertation §6.3.4)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from drsim.utility.features import MonitoringFeature, is_plain_twin

__all__ = ["TierInputs"]


@dataclass(frozen=True)
class TierInputs:
    """The monitoring features' keyword arguments of a tier's function
    (:meth:`~drsim.utility.features.MonitoringFeature.group_inputs`): those of the
    monitored passes, and those of their plain twins (BL,
    :func:`drsim.utility.features.plain_twin`), without the features that optimise the
    monitoring (but those that only measure the twins)."""

    op: Mapping[str, Any]
    plain: Mapping[str, Any]

    @classmethod
    def of(cls, features: tuple[MonitoringFeature, ...],
           inputs: Callable[[MonitoringFeature], Mapping[str, Any]]) -> TierInputs:
        """Collect ``inputs(feature)`` of every feature, and of those that do not
        optimise."""
        op: dict[str, Any] = {}
        plain: dict[str, Any] = {}
        for feature in features:
            given = inputs(feature)
            op.update(given)
            if not feature.optimises or feature.measures_twins:
                plain.update(given)
        return cls(op, plain)

    def at(self, name: str) -> Mapping[str, Any]:
        """The keyword arguments of pass ``name``."""
        return self.plain if is_plain_twin(name) else self.op
