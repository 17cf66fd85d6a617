"""How a query integrates remote data (:class:`RemoteConfig`): the strategy of
dissertation §5.4 and §5.6.1 (:data:`STRATEGIES`, described in
:mod:`cep_core.remote.engine`), the modelled device's unit cost, the cache and the
utility model's parameters."""

from __future__ import annotations

import math
from dataclasses import dataclass

from cep_core.errors import QueryError

__all__ = ["STRATEGIES", "RemoteConfig"]

STRATEGIES = ("BL1", "BL2", "BL3", "PFetch", "LzEval", "Hybrid")


@dataclass(frozen=True)
class RemoteConfig:
    """How a query integrates remote data (module doc). ``unit_cost`` [time units per
    cost unit] of the modelled device; ``capacity`` of the cache [size units]; ``cache``
    ``"lru"`` or ``"cost"`` (BL1 has none); ``slices``: m per window (§5.3.2);
    ``omega_fetch``, ``omega_cache``: ω of Eq. 5.3 for fetching and caching (§5.6.3:
    0.7 and 0.5); ``miss_threshold``, ``miss_reset`` [time units; default the window]:
    the cache-hit matrix of Alg. 3."""

    strategy: str = "Hybrid"
    unit_cost: float = 0.0
    cache: str = "cost"
    capacity: float = math.inf
    slices: int = 4
    omega_fetch: float = 0.7
    omega_cache: float = 0.5
    miss_threshold: int = 3
    miss_reset: float | None = None

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise QueryError(f"remote strategy must be one of {', '.join(STRATEGIES)}, "
                             f"not {self.strategy!r}")
        if self.cache not in ("lru", "cost"):
            raise QueryError(f"remote cache must be 'lru' or 'cost', not {self.cache!r}")
        if not self.unit_cost >= 0:
            raise QueryError(f"remote unit_cost must be ≥ 0, not {self.unit_cost!r}")
        if not self.capacity >= 0:
            raise QueryError(f"remote capacity must be ≥ 0, not {self.capacity!r}")
        if not (isinstance(self.slices, int) and self.slices >= 1):
            raise QueryError(f"remote slices must be an integer ≥ 1, not {self.slices!r}")
        for name in ("omega_fetch", "omega_cache"):
            if not 0 <= getattr(self, name) <= 1:
                raise QueryError(f"remote {name} must be in [0, 1], "
                                 f"not {getattr(self, name)!r}")
        if not (isinstance(self.miss_threshold, int) and self.miss_threshold >= 1):
            raise QueryError("remote miss_threshold must be an integer ≥ 1, "
                             f"not {self.miss_threshold!r}")
