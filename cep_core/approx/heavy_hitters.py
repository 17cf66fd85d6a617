"""Space-Saving: the most frequent items of a weighted stream in a fixed number of slots.

Source: A. Metwally, D. Agrawal and A. El Abbadi, "Efficient computation of frequent and
top-k elements in data streams", ICDT 2005, §3 (Algorithm Space-Saving, Lemmas 3.3-3.5),
with weighted updates as in the paper's remark on weights. RC-ACEP's history sketch
(:mod:`cep_core.approx.filtered_sketch`) keeps the visit counts of its most visited match
vectors here (Li and Ge, VLDB 2016, §3.2 line 8: the multiplicity ``z/c`` that ranks the
candidates needs the counts; §4's count-min cells over-count the rare vectors).

``m`` slots hold (item, count, error). Adding ``n`` to a monitored item adds to its
count. An item not monitored takes a free slot with count ``n``, or else the slot of the
least count ``c_min`` (the first such slot), with count ``c_min + n`` and error
``c_min``. With ``N`` the stream's total weight, for every item of true count ``f``:

* monitored: ``count − error ≤ f ≤ count`` (Lemma 3.4);
* not monitored: ``f ≤ c_min`` (:meth:`SpaceSaving.bound`), and ``c_min ≤ N / m``
  (Lemma 3.3: the counts sum to ``N``);

so every item with ``f > N/m`` is monitored (Lemma 3.5). Evictions take the first slot of
least count, so the same stream gives the same slots (deterministic).

>>> ss = SpaceSaving(2)
>>> for v in (7, 7, 3, 5, 7):
...     _ = ss.add(v)
>>> ss.estimate(7), ss.estimate(5), ss.estimate(3), ss.bound()
((3, 0), (2, 1), None, 2)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["SpaceSaving", "SLOT_BYTES"]

SLOT_BYTES = 16 + 8 + 8  # modelled: the item (a match vector's key), its count, its error


class SpaceSaving:
    """Space-Saving over integer items with ``slots`` counters (module doc)."""

    def __init__(self, slots: int):
        if slots < 1:
            raise ValueError("Space-Saving needs one slot at least")
        self.slots = slots
        self.slot_of: dict[int, int] = {}
        self.items: list[int] = []
        self.count = np.zeros(slots, dtype=np.int64)
        self.error = np.zeros(slots, dtype=np.int64)
        self.total = 0

    def __len__(self) -> int:
        return len(self.items)

    def add(self, v: int, n: int = 1) -> int | None:
        """Count ``n`` more of ``v``; the slot it holds now if it has just taken one (the
        slot's former item is replaced), else None."""
        self.total += n
        s = self.slot_of.get(v)
        if s is not None:
            self.count[s] += n
            return None
        low = self.bound()
        return self.place(v, low + n, low)[0]

    def place(self, v: int, count: int, error: int) -> tuple[int, int | None]:
        """Put ``v`` (not monitored) with ``count`` and ``error`` in a free slot, or else
        in the first slot of least count; the slot and the item it held (None if free)."""
        old = None
        if len(self.items) < self.slots:
            s = len(self.items)
            self.items.append(v)
        else:
            s = int(np.argmin(self.count))
            old = self.items[s]
            del self.slot_of[old]
            self.items[s] = v
        self.count[s], self.error[s] = count, error
        self.slot_of[v] = s
        return s, old

    def estimate(self, v: int) -> tuple[int, int] | None:
        """(count, error) of a monitored ``v``, None if ``v`` is not monitored."""
        s = self.slot_of.get(v)
        return None if s is None else (int(self.count[s]), int(self.error[s]))

    def bound(self) -> int:
        """The most an item not monitored can have been counted: the least count once
        every slot is taken, 0 before (Lemma 3.3)."""
        return int(self.count.min()) if len(self.items) == self.slots else 0

    @classmethod
    def of_counts(cls, counts: Iterable[tuple[int, int]], slots: int) -> SpaceSaving:
        """The slots of exact ``(item, count)`` pairs: the ``slots`` largest counts (ties:
        the smaller item first), each with error 0; the rest's weight counts in the total
        (every guarantee of the module doc holds with the others' counts ≤ the least
        slot's)."""
        ranked = sorted(((c, v) for v, c in counts if c > 0), key=lambda x: (-x[0], x[1]))
        ss = cls(slots)
        for c, v in ranked[:slots]:
            ss.add(v, c)
        ss.total = sum(c for c, _ in ranked)
        return ss

    def memory_bytes(self) -> int:
        """Modelled bytes: every slot an item, a count and an error."""
        return self.slots * SLOT_BYTES
