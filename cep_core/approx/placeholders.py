"""Placeholders: events that were due at a known place of the stream and did not arrive.

Source: Li and Ge, VLDB 2016, §2 (after Example 2): under a model that requires
contiguity, an approximate match may miss letters only where they are missing from the
stream, and an insertion is the edit that puts a missing letter back. A stream that
knows its schedule (a meter tested every δ minutes, a sensor sampled at fixed times)
knows where a letter is missing: it can send a *placeholder*, an event whose ``lost``
attribute is true, with the attributes it knows (``type``, ``time``, the partition keys)
and none of the others (absent, ``None`` or NaN).

With ``max_missing=k`` under strict contiguity a run may take a placeholder as the
element it stands for (one event of an element, one iteration of a Kleene element) at the
cost of one missing element; a predicate whose evaluation needs an attribute the
placeholder lacks holds (the event that was lost is taken to have satisfied it, as an
inserted element does); a match never begins or ends with one, and lists only the real
events it holds. Under the skip policies a placeholder is never taken (an insertion may
stand anywhere there). Without ``max_missing`` a placeholder is an ordinary event.
docs/decisions.md, "Approximate matching", says why.

>>> p = Placeholder({"type": "M", "time": 5, "houseID": 7, "load": float("nan"),
...                  "lost": True})
>>> p["time"], is_lost(p), is_lost({"type": "M", "time": 5})
(5, True, False)
>>> p["load"]
Traceback (most recent call last):
...
cep_core.errors.LostAttribute: 'load'
"""

from __future__ import annotations

from typing import Any

from cep_core.errors import LostAttribute

__all__ = ["Placeholder", "is_lost", "as_unknown_type", "LOST"]

LOST = "lost"  # the attribute that marks a placeholder
UNKNOWN_TYPE = "\x00lost"  # a type no query names: what exact matching makes of one
_ABSENT = object()


def is_lost(event: dict) -> bool:
    """Whether ``event`` is a placeholder (its ``lost`` attribute is true; NaN is not)."""
    v = event.get(LOST, False)
    return bool(v) and v == v


class Placeholder(dict):
    """A placeholder event: reading an attribute it lacks raises :class:`LostAttribute`,
    which makes the predicate that reads it hold (:meth:`cep_core.plan.Pred.test`) and a
    RETURN field that reads it ``None``."""

    __slots__ = ()

    def __getitem__(self, name: str) -> Any:
        v = dict.get(self, name, _ABSENT)
        if v is _ABSENT or v is None or v != v:
            raise LostAttribute(name)
        return v


def as_unknown_type(events: Any) -> Any:
    """``events`` (dicts or a DataFrame) with each placeholder's type replaced by one no
    query names, so that no element takes it and, under strict contiguity, it ends the
    run of its partition: exact matching (``max_missing=0``) over a stream with
    placeholders."""
    if hasattr(events, "columns"):
        if LOST not in events.columns:
            return events
        lost = events[LOST].fillna(False).astype(bool).to_numpy()
        if not lost.any():
            return events
        out = events.copy()
        out["type"] = out["type"].astype(object).where(~lost, UNKNOWN_TYPE)
        return out
    return [dict(e, type=UNKNOWN_TYPE) if is_lost(e) else e for e in events]
