"""Caches of remote data elements (dissertation §5.5).

A cache holds elements with the time they arrive (an element is reserved when it is
requested and usable from its arrival on) and their size; the capacity is in size
units. An element is available when it, or an element containing it (ρ*, §5.2.1), has
arrived. Elements still in flight are never evicted.

* :class:`LRUCache`: evicts the least recently used element (§5.5, for greedy
  selection, where the urgent utility predicts the future one).
* :class:`CostCache`: the cost-based two-tier cache (§5.5, Figure 5.7): tier T1 holds
  elements fetched on demand (certain use: LzEval, blocking), T2 those prefetched; a T1
  element moves to T2 at its first access; T2 is evicted before T1, each by the lowest
  utility per size ``U(d)/|d|`` — the greedy approximation of the retention knapsack
  (maximise Σ U(d) subject to Σ |d| ≤ b). Utilities come from the engine's utility model
  (:mod:`cep_core.remote.utility`) and are fixed for a time slice (§5.3.2); the eviction
  order is rebuilt when they change.

>>> c = LRUCache(capacity=2)
>>> for d in ("a", "b"):
...     _ = c.admit(d, arrival=0.0, size=1, now=0.0)
>>> c.access("a", 1.0)
>>> _ = c.admit("c", arrival=1.0, size=1, now=1.0)  # evicts b, the least recently used
>>> sorted(c.entries)
['a', 'c']
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Cache", "LRUCache", "CostCache", "CACHES"]

T1, T2 = 1, 2


class Cache:
    """The common part: ``entries`` maps an element to ``[arrival, size, tier]``."""

    kind = "none"

    def __init__(self, capacity: float = math.inf):
        if not capacity >= 0:
            raise ValueError(f"cache capacity must be ≥ 0, not {capacity!r}")
        self.capacity = capacity
        self.entries: dict[Hashable, list] = {}
        self.used = 0
        self.evictions = 0

    def arrival(self, d: Hashable, ancestors: list | tuple = ()) -> float | None:
        """When ``d`` (or the innermost cached element containing it) arrives, or None."""
        entry = self.entries.get(d)
        if entry is not None:
            return entry[0]
        for a in ancestors:
            entry = self.entries.get(a)
            if entry is not None:
                return entry[0]
        return None

    def access(self, d: Hashable, now: float) -> None:
        """``d`` was used at ``now``."""

    def admit(self, d: Hashable, arrival: float, size: int, now: float,
              tier: int = T1) -> bool:
        """Reserve room for ``d`` arriving at ``arrival``, evicting what the policy
        chooses; False when it cannot fit (everything else is in flight)."""
        if d in self.entries:
            return True
        if size > self.capacity:
            return False
        while self.used + size > self.capacity:
            victim = self._victim(now)
            if victim is None:
                return False
            self._remove(victim)
            self.evictions += 1
        self.entries[d] = [arrival, size, tier]
        self.used += size
        self._added(d, tier)
        return True

    def _remove(self, d: Hashable) -> None:
        self.used -= self.entries.pop(d)[1]

    def _added(self, d: Hashable, tier: int) -> None:
        pass

    def _victim(self, now: float) -> Hashable | None:
        raise NotImplementedError

    def clear(self) -> None:
        self.entries.clear()
        self.used = 0

    def set_utility(self, utility: Callable[[Hashable], float]) -> None:
        """A new utility function (cost-based caches only use it)."""

    def __len__(self) -> int:
        return len(self.entries)


class LRUCache(Cache):
    """Least recently used first (module doc)."""

    kind = "lru"

    def __init__(self, capacity: float = math.inf):
        super().__init__(capacity)
        self.entries = OrderedDict()

    def access(self, d: Hashable, now: float) -> None:
        if d in self.entries:
            self.entries.move_to_end(d)

    def _victim(self, now: float) -> Hashable | None:
        for d, (arrival, _, _) in self.entries.items():
            if arrival <= now:
                return d
        return None


class CostCache(Cache):
    """The cost-based two-tier cache (module doc)."""

    kind = "cost"

    def __init__(self, capacity: float = math.inf):
        super().__init__(capacity)
        self.utility: Callable[[Hashable], float] = _no_utility
        self._heaps: dict[int, list] = {T1: [], T2: []}
        self._seq = 0

    def set_utility(self, utility: Callable[[Hashable], float]) -> None:
        self.utility = utility
        for tier in (T1, T2):
            self._heaps[tier] = []
        for d, (_, _, tier) in self.entries.items():
            self._push(d, tier)

    def _push(self, d: Hashable, tier: int) -> None:
        self._seq += 1
        size = self.entries[d][1]
        heapq.heappush(self._heaps[tier], (self.utility(d) / size, self._seq, d, tier))

    def _added(self, d: Hashable, tier: int) -> None:
        self._push(d, tier)

    def access(self, d: Hashable, now: float) -> None:
        entry = self.entries.get(d)
        if entry is not None and entry[2] == T1:
            entry[2] = T2
            self._push(d, T2)

    def _victim(self, now: float) -> Hashable | None:
        for tier in (T2, T1):
            heap, skipped = self._heaps[tier], []
            victim = None
            while heap:
                item = heapq.heappop(heap)
                _, _, d, t = item
                entry = self.entries.get(d)
                if entry is None or entry[2] != t:
                    continue  # stale: evicted, or moved to the other tier
                if entry[0] > now:
                    skipped.append(item)  # in flight
                    continue
                victim = d
                break
            for item in skipped:
                heapq.heappush(heap, item)
            if victim is not None:
                return victim
        return None

    def clear(self) -> None:
        super().clear()
        self._heaps = {T1: [], T2: []}


def _no_utility(d: Hashable) -> float:
    """The utility of every element before the first slice ends."""
    return 0.0


CACHES: dict[str, Any] = {"lru": LRUCache, "cost": CostCache}
