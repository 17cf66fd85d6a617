"""The sweep file as written: :class:`SweepFile`, its top level as a pydantic model, and the
checks of its keys that need more than one key or the base scenario (:func:`check_keys`).

Problems are ``(field, problem, accepted)`` triples worded by the scenario's machinery
(:func:`~drsim.scenario.explain.explain_errors`): an unknown key gets a did-you-mean, every
field says what it accepts. :func:`read_sweep_file` keeps the parts that pass, so that the
points of a sweep with a bad key are still checked and every problem is reported at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from drsim.results.summary_paths import UnknownField, field_type
from drsim.scenario import Scenario
from drsim.scenario.errors import kind_name, show_value, value_problem, value_problems
from drsim.scenario.explain import explain_errors
from drsim.scenario.fields import NAME_ACCEPTED, described, name_problem
from drsim.sweeps.paths import (
    GROUP_SIZE,
    RUN_OPTIONS,
    check_scenario_path,
    group_size_problem,
    parse_path,
)

__all__ = ["DEFAULT_METRICS", "MAX_SEEDS", "Problem", "SweepFile", "check_keys",
           "read_sweep_file", "scenario_path", "seeds_problem"]

DEFAULT_METRICS = (
    "reduction_mwh.expected",
    "reduction_mwh.traditional",
    "reduction_mwh.adaptive",
    "prediction.utility_noncompliance_time",
)
MAX_SEEDS = 1000

Problem = tuple[str, str, str]

_SCENARIO_ACCEPTED = "the path of the base scenario YAML file, relative to the sweep file"
_KEYS_ACCEPTED = ("a mapping from a dotted scenario path (e.g. incentive.beta) or a run option ("
                  + ", ".join(RUN_OPTIONS) + ") to ")
_METRICS_ACCEPTED = ("a list of dotted paths into summary.json (its fields: docs/summary.md), "
                     "e.g. [reduction_mwh.adaptive, prediction.utility_noncompliance_time]")


def seeds_problem(seeds: Any) -> tuple[str, str] | None:
    """None for a usable number of seeds per point, else (problem, accepted)."""
    if isinstance(seeds, int) and not isinstance(seeds, bool) and 1 <= seeds <= MAX_SEEDS:
        return None
    return (f"expected a number of seeds, got {show_value(seeds)}",
            f"an integer from 1 to {MAX_SEEDS} (runs per point)")


def scenario_path(scenario: str, base_dir: str | Path) -> Path:
    """The base scenario's file: ``scenario`` as written, relative to the sweep file's folder."""
    try:
        path = Path(scenario).expanduser()
    except RuntimeError:  # ~name of no such user: the path as written (not found)
        path = Path(scenario)
    return path if path.is_absolute() else Path(base_dir) / path


def _axis_values(values: Any) -> Any:
    """An axis of the grid: a non-empty list of values (:func:`check_keys` wants them
    distinct)."""
    if not isinstance(values, list) or not values:
        raise value_problem(f"expected a non-empty list of values, got {kind_name(values)}",
                            "a list of values, e.g. [1.4, 1.8, 2.2]")
    return values


Axis = Annotated[list[Any], BeforeValidator(_axis_values)]


class SweepFile(BaseModel):
    """The top level of a sweep file (the format is in :mod:`drsim.sweeps`).

    Validated with the context ``base_dir`` (the sweep file's folder) and ``check_scenario``
    (the scenario key is required and names a file in that folder; False when the caller
    gives the base scenario itself).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = described("the sweep's name (default: the sweep file's name)",
                                 accepted=NAME_ACCEPTED, default=None)
    scenario: str | None = described("the base scenario's YAML file", validate_default=True,
                                     accepted=_SCENARIO_ACCEPTED, default=None)
    overrides: dict[str, Any] = described("fixed changes, applied to every point",
                                          accepted=_KEYS_ACCEPTED + "a value",
                                          default_factory=dict)
    grid: dict[str, Axis] = described("axes: every combination of their values is a point",
                                      accepted=_KEYS_ACCEPTED + "a list of values",
                                      default_factory=dict)
    seeds: int = described("runs per point, with independent seeds",
                           accepted=f"an integer from 1 to {MAX_SEEDS} (runs per point)",
                           default=1)
    metrics: list[str] = described("dotted paths into summary.json", accepted=_METRICS_ACCEPTED,
                                   default_factory=lambda: list(DEFAULT_METRICS))

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> Any:
        problem = name_problem(value)  # the name of the default result folder
        if problem is not None:
            raise value_problem(problem, NAME_ACCEPTED)
        return value

    @field_validator("scenario", mode="before")
    @classmethod
    def _scenario(cls, value: Any, info: ValidationInfo) -> Any:
        context = info.context or {}
        check = context.get("check_scenario", True)
        if value is None:
            if check:
                raise value_problem("required key missing", _SCENARIO_ACCEPTED)
            return value
        if not isinstance(value, str) or not value.strip():
            raise value_problem(f"expected a file path, got {kind_name(value)}",
                                _SCENARIO_ACCEPTED)
        if check and not scenario_path(value, context.get("base_dir", ".")).is_file():
            raise value_problem(f"file not found: {value!r} (relative paths are read from the "
                                "sweep file's folder)", "the path of a scenario YAML file")
        return value

    @field_validator("overrides", "grid", mode="before")
    @classmethod
    def _keys_as_text(cls, value: Any) -> Any:
        """null is no keys; a key YAML reads as a number stays the text it was written as."""
        if value is None:
            return {}
        return {str(key): item for key, item in value.items()} if isinstance(value, dict) \
            else value

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, value: Any) -> Any:
        problem = seeds_problem(value)
        if problem is not None:
            raise value_problem(*problem)
        return value

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics(cls, value: Any) -> Any:
        if not isinstance(value, list) or not value:
            raise value_problem(f"expected a non-empty list, got {kind_name(value)}",
                                _METRICS_ACCEPTED)
        problems = []
        for i, metric in enumerate(value):
            if (not isinstance(metric, str) or not metric.strip()
                    or any(not part.strip() for part in metric.split("."))):
                problems.append((f"[{i}]", f"expected a dotted path, got {show_value(metric)}",
                                 _METRICS_ACCEPTED))
            elif metric in value[:i]:
                problems.append((f"[{i}]", f"{metric!r} is listed twice", "each metric once"))
            elif (unknown := _unknown_field(metric)) is not None:
                problems.append((f"[{i}]", unknown, _METRICS_ACCEPTED))
        if problems:
            raise value_problems(problems)
        return value


def _unknown_field(metric: str) -> str | None:
    """Why ``metric`` names no field of summary.json's model (None: it names one)."""
    try:
        field_type(metric)
    except UnknownField as exc:
        return str(exc)
    return None


def read_sweep_file(data: dict[Any, Any], base_dir: str | Path, check_scenario: bool = True
                    ) -> tuple[SweepFile, list[Problem]]:
    """The sweep file's top level and its problems; a key with a problem is left out (at its
    default; an axis of the grid alone), so that the rest can still be checked.

    ``check_scenario``: the scenario key is required and must name a file relative to
    ``base_dir`` (False when the caller gives the base scenario).
    """
    context = {"base_dir": base_dir, "check_scenario": check_scenario}
    data = {str(key): value for key, value in data.items()}
    try:
        return SweepFile.model_validate(data, context=context), []
    except ValidationError as exc:
        problems = explain_errors(exc, SweepFile)
        for error in exc.errors():
            key, *inside = error["loc"] or ("",)
            if key == "grid" and inside and isinstance(data.get("grid"), dict):
                data["grid"] = {k: v for k, v in data["grid"].items() if k != inside[0]}
            else:
                data.pop(str(key), None)
    # what is left passed once already; a scenario left out is no longer required
    return SweepFile.model_validate(data, context={**context, "check_scenario": False}), \
        problems


def check_keys(overrides: Mapping[str, Any], grid: Mapping[str, list[Any]],
               base: Scenario | None) -> tuple[list[Problem], set[str]]:
    """Problems of the keys of overrides and grid (paths against the base scenario when there
    is one, an axis's values given twice, a path in both or inside another, run options, the
    layout) and the keys they make unusable."""
    problems: list[Problem] = []
    unusable: set[str] = set()  # keys left out when the points are built
    for section, entries in (("overrides", overrides), ("grid", grid)):
        for key in entries if base is not None else ():
            found = check_scenario_path(key, base)
            if found is not None:
                problems.append((f"{section}.{key}", *found))
                unusable.add(key)
    for key, values in grid.items():
        problems += [(f"grid.{key}", f"the value {show_value(value)} is given twice",
                      "a list of distinct values")
                     for i, value in enumerate(values) if value in values[:i]]
    for key in grid:
        if key in overrides:
            problems.append((f"grid.{key}", "also given in overrides",
                             "each path either in overrides (fixed) or in grid (an axis)"))
    keys = [*overrides, *grid]
    for key in keys:
        for other in keys:
            if other != key and other.startswith(key) and other[len(key)] in ".[":
                problems.append((f"overrides.{key}" if key in overrides else f"grid.{key}",
                                 f"{key} contains {other}, which is also set",
                                 "paths of which none lies inside another"))
    for option, (check, _) in RUN_OPTIONS.items():
        checks = [("overrides." + option, overrides[option])] if option in overrides else []
        checks += [(f"grid.{option}", value) for value in grid.get(option, [])]
        for where, value in checks:
            found = check(value)
            if found:
                problems.append((where, *found))
                unusable.add(option)
    layout_problems, unusable_layout = _check_layout(overrides, grid)
    return problems + layout_problems, unusable | unusable_layout


def _check_layout(overrides: Mapping[str, Any], grid: Mapping[str, Any]
                  ) -> tuple[list[Problem], set[str]]:
    """Problems of group_size (an integer, in overrides only; with it no path may pick a base
    group, since the layout replaces the groups) and the keys they make unusable."""
    problems: list[Problem] = []
    unusable: set[str] = set()
    if GROUP_SIZE in grid:
        problems.append((f"grid.{GROUP_SIZE}", f"{GROUP_SIZE} cannot be an axis",
                         f"{GROUP_SIZE} in overrides (one group size per sweep; households "
                         "may be an axis)"))
        unusable.add(GROUP_SIZE)
    if GROUP_SIZE not in overrides:
        return problems, unusable
    found = group_size_problem(overrides[GROUP_SIZE])
    if found:
        problems.append((f"overrides.{GROUP_SIZE}", *found))
        unusable.add(GROUP_SIZE)
    for section, entries in (("overrides", overrides), ("grid", grid)):
        for key in entries:
            steps = parse_path(key)
            if steps and steps[0][0] == "groups" and steps[0][1] != "*":
                problems.append((f"{section}.{key}",
                                 f"{key} picks groups of the base scenario, but {GROUP_SIZE} "
                                 "replaces them (G001, G002, ...)",
                                 "groups[*].<key> (every group), or no group_size"))
                unusable.add(key)
    return problems, unusable
