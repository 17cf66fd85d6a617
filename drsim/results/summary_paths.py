"""Dotted paths into summary.json (docs/summary.md): the type of the field a path names
(:func:`field_type`), read from the typed records of :mod:`drsim.results.summary_model`,
as the sweeps' metrics name them."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, JsonValue

from drsim.results.summary_model import Clock, Summary

__all__ = ["UnknownField", "children", "feature_sections", "field_type", "is_clock_field",
           "is_open_json"]


class UnknownField(ValueError):
    """A dotted path that names no field of summary.json."""


def feature_sections() -> tuple[str, ...]:
    """The names of the monitoring features' top-level sections, in their order."""
    from drsim.utility.feature_registry import REGISTERED

    return tuple(f.name for f in REGISTERED if f.section is None)


def is_open_json(kind: Any) -> bool:
    """Whether a field's type is open JSON, whose inside is its writer's (a feature's
    section, the scenario's settings, γ's description)."""
    return "JsonValue" in str(kind)


def children(kind: Any) -> list[tuple[str, Any]]:
    """(key, type) of what a path continues with below a field of type ``kind``: a
    record's fields, or ``"*"`` for a mapping's key or a list's index (and the summary's
    ``features``, which are no key of summary.json, left out)."""
    if typing.get_origin(kind) is Annotated:
        kind = typing.get_args(kind)[0]
    parts = [a for a in typing.get_args(kind) if a is not type(None)] \
        if typing.get_origin(kind) in (typing.Union, types.UnionType) else [kind]
    out: list[tuple[str, Any]] = []
    for part in parts:
        if isinstance(part, type) and issubclass(part, BaseModel):
            out += [(name, f.annotation) for name, f in part.model_fields.items()
                    if not (part is Summary and name == "features")]
        elif typing.get_origin(part) in (dict, list):
            out.append(("*", typing.get_args(part)[-1]))
    return out


def is_clock_field(kind: Any) -> bool:
    """Whether a field's type (:func:`field_type`) is a clock time, or a clock time or null."""
    parts = typing.get_args(kind) if typing.get_origin(kind) in (typing.Union,
                                                               types.UnionType) else (kind,)
    return Clock in parts


def field_type(path: str) -> Any:
    """The type of the field at the dotted ``path`` of summary.json (docs/summary.md):
    records' fields by name, mappings' keys and lists' indices by any name; anything
    inside open JSON (:func:`is_open_json`), such as a feature's section, is JsonValue.

    Raises
    ------
    UnknownField
        Naming the first part of ``path`` that is no field there, and the close ones.
    """
    kind: Any = Summary
    done: list[str] = []
    for part in path.split("."):
        if is_open_json(kind):
            return JsonValue
        if kind is Summary and part in feature_sections():
            kind = JsonValue
        else:
            found = dict(children(kind))
            if part not in found and "*" not in found:
                names = [*found, *(feature_sections() if kind is Summary else ())]
                close = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
                where = ".".join(done) or "summary.json"
                hint = f" (did you mean {'.'.join([*done, close[0]])!r}?)" if close else ""
                raise UnknownField(f"{path!r}: {where} has no field {part!r}{hint}")
            kind = found.get(part, found.get("*"))
        done.append(part)
    return kind
