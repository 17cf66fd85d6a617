"""Event streams as the engines read them: a list of dicts, each with ``type``, ``time``
and ``id`` (dissertation §2.1: an event is a tuple of attributes with a timestamp)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cep_core.errors import QueryError

Event = dict[str, Any]


def as_events(events: Iterable[Event] | Any, first_id: int = 0) -> list[Event]:
    """The events as dicts in stream order, each with an ``id``.

    Accepts an iterable of dicts or a pandas DataFrame with at least ``type`` and
    ``time`` columns. Missing ids are numbered from ``first_id`` in stream order. A stream
    must have non-decreasing timestamps (ties allowed).
    """
    if hasattr(events, "to_dict") and hasattr(events, "columns"):
        records = events.to_dict("records")
    else:
        records = [dict(e) for e in events]
    out: list[Event] = []
    last = None
    for n, e in enumerate(records):
        if "type" not in e or "time" not in e:
            raise QueryError(f"event {n}: needs 'type' and 'time' (has {sorted(e)})")
        if last is not None and e["time"] < last:
            raise QueryError(f"event {n}: time {e['time']} before the previous {last}; "
                             "a stream has non-decreasing timestamps")
        last = e["time"]
        e.setdefault("id", first_id + n)
        out.append(e)
    return out


def unique_names(names: Iterable[str]) -> list[str]:
    """Output field names: a repeated name gets a suffix (``end``, ``end_2``, ...)."""
    used: set[str] = set()
    out = []
    for base in names:
        name, j = base, 1
        while name in used:
            j += 1
            name = f"{base}_{j}"
        used.add(name)
        out.append(name)
    return out
