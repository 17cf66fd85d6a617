"""What a key of a sweep file may name: a scenario path (``incentive.beta``,
``groups[*].incentive_u``, ``groups[G1].size``) checked against the scenario model with
suggestions for a typo, a run option (``delay_detection``) or the layout key
``group_size``; and how a value is assigned at such a path."""

from __future__ import annotations

import copy
import difflib
import re
import typing
from collections.abc import Callable, Sequence
from typing import Any

from drsim.scenario import MAX_HOUSEHOLDS, Scenario
from drsim.scenario.errors import show_value
from drsim.scenario.explain import model_of, unwrap_annotation

__all__ = ["GROUP_SIZE", "MAX_DELAY_MINUTES", "RUN_OPTIONS", "assign", "check_scenario_path",
           "group_size_problem", "join_path", "parse_path"]

MAX_DELAY_MINUTES = 1440


def _delay_detection(value: Any) -> tuple[str, str] | None:
    if (isinstance(value, int) and not isinstance(value, bool)
            and 0 <= value <= MAX_DELAY_MINUTES):
        return None
    return (f"expected a whole number of minutes, got {show_value(value)}",
            f"an integer from 0 to {MAX_DELAY_MINUTES} (minutes)")


#: Options of the run itself (keyword arguments of the runner), not scenario keys: name →
#: (check of a value: None or (problem, accepted), default).
RUN_OPTIONS: dict[str, tuple[Callable[[Any], tuple[str, str] | None], Any]] = {
    "delay_detection": (_delay_detection, 0),
}


#: The layout key (overrides only): lay the households out in groups of this many
#: (Scenario.with_groups_of) instead of scaling the base's groups (Scenario.with_households).
GROUP_SIZE = "group_size"


def group_size_problem(value: Any) -> tuple[str, str] | None:
    """None for a usable group_size, else (problem, accepted)."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_HOUSEHOLDS:
        return None
    return (f"expected a number of households per group, got {show_value(value)}",
            f"an integer from 1 to {MAX_HOUSEHOLDS} (households per group)")


_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\[\]]+)\])?")


def parse_path(path: str) -> list[tuple[str, int | str | None]] | None:
    """``a.b[0].c`` → [(a, None), (b, 0), (c, None)]; None if it is not such a path."""
    steps: list[tuple[str, int | str | None]] = []
    position = 0
    while True:
        match = _SEGMENT.match(path, position)
        if not match:
            return None
        index: int | str | None = match[2]
        if index is not None:
            index = index.strip()
            if re.fullmatch(r"-?\d+", index):
                index = int(index)
        steps.append((match[1], index))
        position = match.end()
        if position == len(path):
            return steps
        if path[position] != ".":
            return None
        position += 1


def join_path(steps: Sequence[tuple[str, int | str | None]]) -> str:
    return ".".join(name + ("" if index is None else f"[{index}]") for name, index in steps)


def _keys(model: Any) -> list[str]:
    return [name for name in model.model_fields if name != "source_path"]


def _paths(model: Any, prefix: str = "") -> list[str]:
    """Every dotted path of a scenario model (list items as [*])."""
    found = []
    for name in _keys(model):
        annotation = model.model_fields[name].annotation
        core, _, _ = unwrap_annotation(annotation, [])
        path = prefix + name
        found.append(path)
        if typing.get_origin(core) is list and model_of(typing.get_args(core)[0]):
            found += _paths(model_of(typing.get_args(core)[0]), path + "[*].")
        elif model_of(core):
            found += _paths(model_of(core), path + ".")
    return found


_PATH_EXAMPLES = "e.g. incentive.beta, monitoring.gamma_group, groups[*].incentive_u"


def check_scenario_path(path: str, base: Scenario) -> tuple[str, str] | None:
    """None if ``path`` names a scenario key (or a run option); else (problem, accepted).

    A path is dotted keys of the scenario model; list items are selected with ``[index]``,
    ``[name]`` (groups by name) or ``[*]`` (every item); a mapping (monitoring.queries) takes
    one more key. Unknown keys get a did-you-mean from the model's fields.
    """
    if path in RUN_OPTIONS or path == GROUP_SIZE:
        return None
    steps = parse_path(path)
    options = ", ".join(RUN_OPTIONS)
    if steps is None:
        return (f"{path!r} is not a dotted path",
                f"a dotted scenario path ({_PATH_EXAMPLES}) or a run option ({options})")
    model: Any = Scenario
    current: Any = base
    for i, (name, index) in enumerate(steps):
        where = join_path(steps[:i])
        last = i == len(steps) - 1
        if model is None:
            return (f"{where} is a single value and has no key {name!r}",
                    f"the path {where} itself")
        keys = _keys(model)
        if name not in keys:
            candidates = keys + [*RUN_OPTIONS, GROUP_SIZE] if i == 0 else keys
            suggestions = _suggest(path, steps, i, candidates)
            hint = (" (did you mean " + " or ".join(repr(s) for s in suggestions) + "?)"
                    if suggestions else "")
            inside = f" in {where}" if where else ""
            extra = (f", or a run option ({options}), or {GROUP_SIZE} (overrides only)"
                     if i == 0 else "")
            return (f"unknown key {name!r}{inside}{hint}",
                    f"the keys {', '.join(keys)}{extra}")
        core, _, _ = unwrap_annotation(model.model_fields[name].annotation, [])
        origin = typing.get_origin(core)
        value = getattr(current, name, None) if current is not None else None
        here = join_path(steps[: i + 1])
        if origin is list:
            item_type = typing.get_args(core)[0]
            item_model = model_of(item_type)
            items = list(value or [])
            if index is None:
                if not last:
                    return (f"{name} is a list: say which items",
                            f"{name}[0] (by position), {name}[<name>] (by name) or "
                            f"{name}[*] (every item), then .{steps[i + 1][0]}")
                return None
            if index != "*":
                if isinstance(index, int):
                    if not 0 <= index < len(items):
                        return (f"{name}[{index}] is out of range: the base scenario has "
                                f"{len(items)} {name}",
                                f"an index from 0 to {len(items) - 1}, a name, or *")
                    value = items[index]
                else:
                    names = [getattr(item, "name", None) for item in items]
                    if item_model is None or "name" not in item_model.model_fields:
                        return (f"{name}[{index}]: the items of {name} have no names",
                                f"an index from 0 to {len(items) - 1}, or *")
                    if index not in names:
                        close = difflib.get_close_matches(index, [str(n) for n in names], n=1)
                        hint = f" (did you mean {name}[{close[0]}]?)" if close else ""
                        return (f"no item of {name} is named {index!r}{hint}",
                                "one of " + ", ".join(str(n) for n in names)
                                + ", an index, or *")
                    value = items[names.index(index)]
            else:
                value = items[0] if items else None
            model = item_model
            current = value
            continue
        if index is not None:
            return (f"{here.rsplit('[', 1)[0]} is not a list; [{index}] cannot select an item",
                    f"the path without [{index}]")
        if origin is dict:
            if last:
                return None
            if i + 1 == len(steps) - 1 and steps[i + 1][1] is None:
                return None
            return (f"{name} is a mapping of single values; only one more key may follow",
                    f"{here}.<key>")
        model = model_of(core)
        current = value
    return None


def _suggest(path: str, steps: Sequence[tuple[str, Any]], i: int,
             keys: list[str]) -> list[str]:
    """Paths the user may have meant: a close key at the same level, else a close leaf."""
    name = steps[i][0]
    close = difflib.get_close_matches(name, keys, n=1)
    if close:
        return [join_path([*steps[:i], (close[0], steps[i][1]), *steps[i + 1:]])]
    everything = _paths(Scenario)
    leaf = steps[-1][0]

    def last(p: str) -> str:
        return p.rsplit(".", 1)[-1].replace("[*]", "")

    by_leaf = [p for p in everything
               if last(p) == leaf or last(p).endswith("_" + leaf) or last(p).startswith(leaf + "_")]
    if by_leaf:
        return by_leaf[:3]
    return difflib.get_close_matches(path, everything, n=1, cutoff=0.6)


def assign(data: dict[str, Any], steps: Sequence[tuple[str, int | str | None]],
            value: Any) -> None:
    """Set ``value`` at ``steps`` in a scenario mapping (a checked path)."""
    node: Any = data
    for i, (name, index) in enumerate(steps):
        rest = steps[i + 1:]
        if index is None:
            if not rest:
                node[name] = copy.deepcopy(value)
                return
            if not isinstance(node.get(name), dict):  # absent, or a single value such as
                node[name] = {}                        # a constant gamma_user: a new block
            node = node[name]
            continue
        items = node[name] = list(node[name])
        if index == "*":
            positions = range(len(items))
        elif isinstance(index, int):
            positions = [index]
        else:
            positions = [p for p, item in enumerate(items) if item.get("name") == index]
        for p in positions:
            if rest:
                items[p] = dict(items[p])
                assign(items[p], rest, value)
            else:
                items[p] = copy.deepcopy(value)
        return
