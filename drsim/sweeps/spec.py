"""The sweep file and its points: read and check a sweep, expand its grid, seed its replicates.

:func:`load_sweep` reads a sweep file (the format is in :mod:`drsim.sweeps`), checks its top
level and its keys (:mod:`drsim.sweeps.file`: every path against the scenario model), builds
and validates the scenario of every grid point before any run starts, and reports problems as
:class:`SweepError` lines like the scenario loader's.
A :class:`Sweep` lists its points (:class:`SweepPoint`) and its runs (:class:`SweepRun`: a
point with one replicate's seed and the content key by which a finished run is recognised).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from drsim.scenario import (
    MAX_GROUPS,
    Scenario,
    ScenarioError,
    load_scenario,
    read_yaml,
    scenario_from_dict,
)
from drsim.scenario.errors import TOP_LEVEL, kind_name, show_value
from drsim.scenario.explain import mapping_accepted
from drsim.scenario.library import resolve
from drsim.scenario.loading import check_files
from drsim.sweeps.file import (
    Problem,
    SweepFile,
    check_keys,
    read_sweep_file,
    scenario_path,
    seeds_problem,
)
from drsim.sweeps.paths import GROUP_SIZE, RUN_OPTIONS, assign, parse_path

CONFIDENCE = 0.95


class SweepError(ScenarioError):
    """A sweep file that cannot be used; one line per problem, like :class:`ScenarioError`."""


@dataclass(frozen=True)
class SweepPoint:
    """One combination of axis values: its scenario (with the scenario's own seed)."""

    index: int
    values: dict[str, Any]
    scenario: Scenario
    options: dict[str, Any] = field(default_factory=dict)  # run options (RUN_OPTIONS)

    @property
    def delay_detection(self) -> int:
        """Minutes by which the utility's prediction is held back (a run option)."""
        return self.options.get("delay_detection", RUN_OPTIONS["delay_detection"][1])

    @property
    def label(self) -> str:
        """``axis=value, ...`` (or "base" for a sweep without axes)."""
        return ", ".join(f"{k}={value_label(v)}" for k, v in self.values.items()) or "base"


@dataclass(frozen=True)
class SweepRun:
    """One (point, replicate): the scenario with the replicate's seed."""

    point: SweepPoint
    replicate: int
    seed: int
    scenario: Scenario
    key: str

    @property
    def name(self) -> str:
        """The run's folder name: point, replicate and the start of its key."""
        return f"p{self.point.index:03d}-r{self.replicate:02d}-{self.key[:8]}"


@dataclass(frozen=True)
class Sweep:
    """A validated sweep: base scenario, fixed overrides, grid axes, seeds and metrics."""

    name: str
    source: str
    scenario_file: str
    base: Scenario
    overrides: dict[str, Any]
    grid: dict[str, list[Any]]
    seeds: int
    metrics: tuple[str, ...]
    points: tuple[SweepPoint, ...]
    _runs: list[SweepRun] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def axes(self) -> list[str]:
        return list(self.grid)

    def with_seeds(self, seeds: int) -> Sweep:
        """The same sweep with another number of seeds per point."""
        problem = seeds_problem(seeds)
        if problem:
            raise SweepError(self.source, [("seeds", *problem)])
        return dataclasses.replace(self, seeds=seeds)

    def runs(self) -> list[SweepRun]:
        """Every (point, replicate), replicate-major: all points with seed 0 first."""
        if not self._runs:
            runs = []
            seeds = {p.index: replicate_seeds(p.scenario.seed, self.seeds) for p in self.points}
            for replicate in range(self.seeds):
                for point in self.points:
                    seed = seeds[point.index][replicate]
                    scenario = point.scenario.model_copy(update={"seed": seed})
                    runs.append(SweepRun(point, replicate, seed, scenario,
                                         _run_key(scenario, point.options)))
            self._runs.extend(runs)
        return list(self._runs)

    def describe(self) -> dict[str, Any]:
        """The sweep as a JSON-able mapping (sweep.json)."""
        runs = self.runs()
        return {
            "name": self.name,
            "sweep_file": Path(self.source).name,
            "scenario_file": self.scenario_file,
            "axes": self.axes,
            "grid": self.grid,
            "overrides": self.overrides,
            "seeds": self.seeds,
            "metrics": list(self.metrics),
            "confidence": CONFIDENCE,
            "points": [{"point": p.index, "values": p.values, "options": p.options,
                        "seeds": [r.seed for r in runs if r.point is p],
                        "runs": [r.name for r in runs if r.point is p]}
                       for p in self.points],
            "scenario": self.base.model_dump(mode="json"),
        }


def replicate_seeds(seed: int, n: int) -> list[int]:
    """``n`` distinct seeds: ``seed`` itself, then seeds hashed from (seed, replicate)."""
    from drsim.household.rng import hash64

    seeds = [int(seed)]
    counter = 1
    while len(seeds) < n:
        derived = int(hash64(int(seed), np.uint64(counter), "sweep.replicate")) >> 1
        if derived not in seeds:  # a collision is astronomically unlikely, but be exact
            seeds.append(derived)
        counter += 1
    return seeds


def _run_key(scenario: Scenario, options: Mapping[str, Any]) -> str:
    """Content key of a run: everything that determines its result."""
    text = json.dumps({"scenario": scenario.model_dump(mode="json"), "options": dict(options)},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def expand_grid(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the axes' values; the first axis varies slowest."""
    names = list(grid)
    return [dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(grid[n] for n in names))]


# --------------------------------------------------------------------------------------------
# Reading and validating
# --------------------------------------------------------------------------------------------


_SWEEP_ACCEPTED = mapping_accepted(SweepFile) + " (scenario is required)"


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file (or a packaged one by name: ``sweeps/threshold_z``),
    its base scenario and every point of its grid.

    Raises :class:`SweepError` (or the base scenario's :class:`ScenarioError`) naming the
    file, the field and the accepted values, before any run starts.
    """
    source = str(path)
    file = resolve(path)  # a file, or a packaged sweep's name
    data = read_yaml(file, SweepError, "sweep")
    if data is None:
        raise SweepError(source, [(TOP_LEVEL, "the file is empty (or only comments)",
                                   _SWEEP_ACCEPTED)])
    return sweep_from_dict(data, source=source, base_dir=file.parent, default_name=file.stem)


def sweep_from_dict(data: Any, source: str = "<dict>", base_dir: str | Path = ".",
                    default_name: str = "sweep", base: Scenario | None = None) -> Sweep:
    """Validate a sweep mapping; ``base_dir`` is where the scenario path is read from.

    ``base`` gives the base scenario directly (then the ``scenario`` key may be left out).
    """
    if not isinstance(data, dict):
        raise SweepError(source, [(TOP_LEVEL, f"expected a mapping of sweep keys, got "
                                              f"{kind_name(data)}", _SWEEP_ACCEPTED)])
    file, problems = read_sweep_file(data, base_dir, check_scenario=base is None)
    if base is None and file.scenario is not None:
        # a bad base scenario raises its own ScenarioError, naming its file
        base = load_scenario(scenario_path(file.scenario, base_dir).resolve())
    key_problems, unusable = check_keys(file.overrides, file.grid, base)
    problems += key_problems
    if base is None:
        raise SweepError(source, _unique(problems))
    overrides, grid, points, point_problems = _points(base, file.overrides, file.grid,
                                                       unusable, source)
    if problems or point_problems:
        raise SweepError(source, _unique(problems + point_problems))
    return Sweep(name=file.name or default_name, source=source,
                 scenario_file=file.scenario or "", base=base, overrides=overrides, grid=grid,
                 seeds=file.seeds, metrics=tuple(file.metrics), points=tuple(points))


def _points(base: Scenario, overrides: Mapping[str, Any], grid: Mapping[str, list[Any]],
            unusable: set[str], source: str
            ) -> tuple[dict[str, Any], dict[str, list[Any]], list[SweepPoint], list[Problem]]:
    """Build and validate every point of the usable keys: (overrides, grid, points, problems).

    In steps, so that each problem is reported once and where it belongs: each override
    alone, each axis value alone (with the overrides that pass), then every combination of
    the values that pass alone (a clash names its point). With group_size every check
    carries it (the households are laid out in its groups); a check without the sweep's
    households leaves the groups to the checks that have them.
    """
    problems: list[Problem] = []
    grid = {k: list(v) for k, v in grid.items() if k not in unusable}
    households_set = "households" in grid or ("households" in overrides
                                              and "households" not in unusable)

    def check(fixed: dict[str, Any], values: dict[str, Any], at_point: bool = False
              ) -> tuple[Scenario, dict[str, Any]] | None:
        try:
            return _point(base, fixed, values, source, at_point=at_point,
                          households_set=households_set)
        except _PointError as exc:
            problems.extend(exc.problems)
            return None

    layout = {}
    if GROUP_SIZE in overrides and GROUP_SIZE not in unusable:
        layout = {GROUP_SIZE: overrides[GROUP_SIZE]}
        if check(layout, {}) is None:
            layout = {}
    passing = dict(layout)
    for key, value in overrides.items():
        if key not in unusable and key != GROUP_SIZE and check({**layout, key: value}, {}):
            passing[key] = value
    overrides = {k: v for k, v in overrides.items() if k in passing}  # in the file's order
    if check(overrides, {}) is None:
        return overrides, grid, [], problems
    axes = {axis: [value for value in values if check(overrides, {axis: value})]
            for axis, values in grid.items()}
    points = []
    for index, values in enumerate(expand_grid(axes)):
        built = check(overrides, values, at_point=True)
        if built is not None:
            points.append(SweepPoint(index, values, *built))
    return overrides, grid, points, problems


class _PointError(Exception):
    def __init__(self, problems: list[tuple[str, str, str]]):
        super().__init__(problems)
        self.problems = problems


def _point(base: Scenario, overrides: dict[str, Any], values: dict[str, Any],
           source: str, at_point: bool = False, households_set: bool = False
           ) -> tuple[Scenario, dict[str, Any]]:
    """The scenario and run options of one point; _PointError with sweep-file problems.

    ``at_point``: name the point's axis values in each problem. ``households_set``: the
    sweep sets households elsewhere, so without them here a group_size lays out nothing.
    """
    assigned = {**{k: ("overrides", v) for k, v in overrides.items()},
                **{k: ("grid", v) for k, v in values.items()}}
    options = {name: default for name, (_, default) in RUN_OPTIONS.items()}
    changes = {}
    for path, (_, value) in assigned.items():
        if path in RUN_OPTIONS:
            options[path] = value
        else:
            changes[path] = value
    group_size = changes.pop(GROUP_SIZE, None)
    try:
        scenario = _laid_out(base, changes.pop("households", None), group_size, households_set)
    except ScenarioError as exc:
        raise _PointError([
            _blame(field, problem, accepted, assigned, values, at_point) if group_size is None
            else _blame_layout(problem, accepted, assigned, values, base)
            for field, problem, accepted in exc.problems]) from None
    try:
        data = scenario.model_dump()
        for path, value in changes.items():
            assign(data, parse_path(path) or [], value)
        scenario = scenario_from_dict(data, source=source).model_copy(
            update={"source_path": base.source_path})
        check_files(scenario, source)
    except ScenarioError as exc:
        raise _PointError([_blame(field, problem, accepted, assigned, values, at_point)
                           for field, problem, accepted in exc.problems]) from None
    return scenario, options


def _laid_out(base: Scenario, households: Any, group_size: int | None,
              households_set: bool) -> Scenario:
    """The base with the point's households: in groups of ``group_size``
    (Scenario.with_groups_of, §6.3.3), else its own groups scaled (Scenario.with_households).

    Without households, a group_size lays out the base's unless the sweep sets them elsewhere.
    """
    if group_size is None:
        return base if households is None else base.with_households(households)
    if households is None:
        return base if households_set else base.with_groups_of(base.households, group_size)
    return base.with_groups_of(households, group_size)


def _blame_layout(problem: str, accepted: str, assigned: dict[str, tuple[str, Any]],
                  values: dict[str, Any], base: Scenario) -> tuple[str, str, str]:
    """A problem of laying the households out in groups: at the key that set the households
    (naming the point when an axis did), else at group_size (the base's households)."""
    if "households" in assigned:
        section, value = assigned["households"]
        point = (" (at the point " + ", ".join(f"{k}={value_label(v)}" for k, v in values.items())
                 + ")") if "households" in values else ""
        return f"{section}.households", f"value {show_value(value)}: {problem}{point}", accepted
    section, value = assigned[GROUP_SIZE]
    return (f"{section}.{GROUP_SIZE}", f"value {show_value(value)}: the base scenario's {problem}",
            f"a divisor of {base.households} (the base scenario's households) that makes at "
            f"most {MAX_GROUPS} groups, or households in overrides or grid")


def _blame(field: str, problem: str, accepted: str, assigned: dict[str, tuple[str, Any]],
           values: dict[str, Any], at_point: bool) -> tuple[str, str, str]:
    """Turn a scenario problem at ``field`` into one at the sweep key that caused it."""
    best = best_pattern = None
    for path in assigned:
        if path in RUN_OPTIONS:
            continue
        # groups[*] / groups[G1] / groups[0] match the scenario's groups[<position>]
        pattern = re.sub(r"\\\[[^\]]*\\\]", r"\\[\\d+\\]", re.escape(path))
        if re.match(pattern + r"(?:$|[.\[])", field) and (best is None or len(path) > len(best)):
            best, best_pattern = path, pattern
    point = (" (at the point " + ", ".join(f"{k}={value_label(v)}" for k, v in values.items())
             + ")") if at_point and values else ""
    if best is not None and best_pattern is not None:
        section, value = assigned[best]
        detail = "" if re.fullmatch(best_pattern, field) else f" (at {field})"
        return f"{section}.{best}", f"value {show_value(value)}{detail}: {problem}{point}", accepted
    return ("grid" if values else "overrides"), f"{field}: {problem}{point}", accepted


def _unique(problems: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return list(dict.fromkeys(problems))


def value_label(value: Any, limit: int = 30) -> str:
    """A value for labels: text without quotes, anything else as in YAML/JSON."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
