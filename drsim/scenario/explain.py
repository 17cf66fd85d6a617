"""Turning a pydantic ``ValidationError`` into ScenarioError lines:
``<field path>: <problem>; accepted: <...>``, with "accepted" derived from each field's type,
bounds and description."""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from drsim.scenario.errors import TOP_LEVEL, kind_name, show_value


def explain_errors(exc: ValidationError, root: type[BaseModel]) -> list[tuple[str, str, str]]:
    """(path, problem, accepted) of each error of ``exc``, paths from ``root`` (the model
    that was validated, e.g. Scenario)."""
    lines = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        ctx = err.get("ctx") or {}
        if err["type"] == "scenario" and "problems" in ctx:
            for at, problem, accepted in ctx["problems"]:
                lines.append((_join_path(loc, at), problem, accepted))
            continue
        kind = err["type"]
        if kind == "missing" and loc and isinstance(loc[-1], int):
            # a short fixed-length list such as range: [1]: blame the list, not the item
            field, annotation, metadata, _ = _locate(loc[:-1], root)
            lines.append((_join_path(loc[:-1]), f"too few items: item {loc[-1]} is missing",
                          _accepted(field, annotation, metadata)))
            continue
        field, annotation, metadata, owner = _locate(loc, root)
        path = _join_path(loc)
        if kind == "extra_forbidden":
            key = str(loc[-1]) if loc else "?"
            keys = _keys(owner) if owner is not None else []
            close = difflib.get_close_matches(key, keys, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            lines.append((path, f"unknown key {key!r}{hint}",
                          "the keys " + ", ".join(keys) if keys else "no keys here"))
            continue
        accepted = _accepted(field, annotation, metadata)
        if kind == "missing":
            problem = "required key missing"
        elif kind in ("model_type", "model_attributes_type", "dict_type"):
            problem = f"expected a mapping, got {kind_name(err['input'])}"
        elif kind in ("list_type", "tuple_type"):
            problem = f"expected a list, got {kind_name(err['input'])}"
        else:
            problem = f"{err['msg']} (got {show_value(err['input'])})"
        lines.append((path, problem, accepted))
    return lines


def _join_path(loc: tuple[Any, ...], at: str = "") -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += ("." if path else "") + str(part)
    if at:
        path = path + at if path and at[0] in ".[" else (path + "." + at if path else at)
    path = path.lstrip(".")
    return path or TOP_LEVEL


def unwrap_annotation(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any], bool]:
    """Strip Annotated and Optional: (core type, constraints, allows None)."""
    optional = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation, *extra = typing.get_args(annotation)
            for item in extra:  # Field(...) inside Annotated keeps its constraints in .metadata
                metadata = [*metadata, *(item.metadata if isinstance(item, FieldInfo) else [item])]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            optional = optional or len(args) < len(typing.get_args(annotation))
            if len(args) != 1:
                return annotation, metadata, optional
            annotation = args[0]
        else:
            return annotation, metadata, optional


def model_of(annotation: Any) -> type[BaseModel] | None:
    """The model of a field (the one model among the members of a union such as
    ``float | ExpectedShare``), else None."""
    core, _, _ = unwrap_annotation(annotation, [])
    members = typing.get_args(core) if typing.get_origin(core) in (typing.Union,
                                                                    types.UnionType) else (core,)
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    return models[0] if len(models) == 1 else None


def _locate(loc: tuple[Any, ...], root: type[BaseModel]
            ) -> tuple[FieldInfo | None, Any, list[Any], type[BaseModel] | None]:
    """Follow an error location from ``root``: (field, type, constraints, enclosing model).

    The enclosing model is the one whose keys are valid at the location's last step (for
    "unknown key" errors).
    """
    field: FieldInfo | None = None
    annotation: Any = root
    metadata: list[Any] = []
    owner: type[BaseModel] | None = root
    for part in loc:
        model = model_of(annotation)
        core, _, _ = unwrap_annotation(annotation, metadata)
        owner = model
        if model is not None and isinstance(part, str) and part in model.model_fields:
            field = model.model_fields[part]
            annotation, metadata = field.annotation, list(field.metadata)
            continue
        origin = typing.get_origin(core)
        args = typing.get_args(core)
        if origin is list and args:
            annotation, metadata, field = args[0], [], None
        elif origin is tuple and args:
            index = part if isinstance(part, int) and part < len(args) else 0
            annotation, metadata, field = args[index], [], None
        elif origin is dict and len(args) == 2:
            annotation, metadata, field = args[1], [], None
        else:
            break  # an unknown key (or a pydantic-internal step): stay where we are
    return field, annotation, metadata, owner


def _keys(model: type[BaseModel]) -> list[str]:
    return [name for name in model.model_fields if name != "source_path"]


def mapping_accepted(model: type[BaseModel]) -> str:
    return "a mapping with the keys " + ", ".join(_keys(model))


def _accepted(field: FieldInfo | None, annotation: Any, metadata: list[Any]) -> str:
    """What a field (or list item) accepts, in words, from its type and constraints."""
    extra = field.json_schema_extra if field is not None else None
    extra = extra if isinstance(extra, dict) else {}
    core, metadata, _ = unwrap_annotation(annotation, metadata)
    text = extra.get("accepted")
    if not isinstance(text, str):
        text = _describe(core, metadata)
    null_means = extra.get("null_means")
    return text + (f" or null ({null_means})" if isinstance(null_means, str) else "")


def _describe(core: Any, metadata: list[Any]) -> str:
    bounds = {
        key: value for m in metadata
        for key, value in (("Ge", getattr(m, "ge", None)), ("Gt", getattr(m, "gt", None)),
                           ("Le", getattr(m, "le", None)), ("Lt", getattr(m, "lt", None)),
                           ("MinLen", getattr(m, "min_length", None)),
                           ("MaxLen", getattr(m, "max_length", None)))
        if value is not None
    }
    origin = typing.get_origin(core)
    args = typing.get_args(core)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if isinstance(core, type) and issubclass(core, BaseModel):
        return mapping_accepted(core)
    if core is bool:
        return "true or false"
    if core is int or core is float:
        noun = "an integer" if core is int else "a number"
        lo = bounds.get("Ge", bounds.get("Gt"))
        hi = bounds.get("Le", bounds.get("Lt"))
        if lo is not None and hi is not None:
            if core is int and "Ge" in bounds and "Le" in bounds:
                return f"{noun} from {_num(lo)} to {_num(hi)}"
            return (f"{noun} in {'[' if 'Ge' in bounds else '('}{_num(lo)}, {_num(hi)}"
                    f"{']' if 'Le' in bounds else ')'}")
        if lo is not None:
            return f"{noun} {'>=' if 'Ge' in bounds else '>'} {_num(lo)}"
        if hi is not None:
            return f"{noun} {'<=' if 'Le' in bounds else '<'} {_num(hi)}"
        return noun
    if core is str:
        return "non-empty text" if bounds.get("MinLen") else "text"
    if origin is list and args:
        item_core, item_meta, _ = unwrap_annotation(args[0], [])
        item = _describe(item_core, item_meta)
        lo, hi = bounds.get("MinLen"), bounds.get("MaxLen")
        count = (f" ({lo} to {hi} items)" if lo and hi else f" (at least {lo} item)" if lo
                 else "")
        return f"a list{count}, each {item}"
    if origin is tuple and args:
        return "a list [" + ", ".join(_describe(*unwrap_annotation(a, [])[:2]) for a in args) + "]"
    if origin is dict and len(args) == 2:
        return f"a mapping of {_describe(args[0], [])} to {_describe(args[1], [])}"
    if isinstance(core, type) and issubclass(core, Path):
        return "a file path"
    return getattr(core, "__name__", str(core))


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
