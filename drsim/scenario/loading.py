"""Reading scenario files: a strict YAML loader, :func:`load_scenario` and
:func:`scenario_from_dict` (validation, with every problem as one ScenarioError line)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from drsim.scenario.errors import TOP_LEVEL, ScenarioError, kind_name
from drsim.scenario.explain import explain_errors, mapping_accepted
from drsim.scenario.library import accepted, resolve
from drsim.scenario.models import Scenario

__all__ = ["load_scenario", "read_yaml", "scenario_from_dict"]

_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"


class _ScenarioLoader(yaml.SafeLoader):
    """PyYAML's safe loader, minus two YAML 1.1 surprises, plus a duplicate-key check.

    - ``18:30`` stays the text "18:30" (YAML 1.1 reads it as the base-60 integer 1110);
    - ``1e-3`` is a number (YAML 1.1 needs a dot: ``1.0e-3``), and ``.`` or ``-._`` is
      text (YAML 1.1 reads them as floats, which then fail to convert);
    - a key given twice in one mapping is an error, not silently the last value.
    """

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    first_line = seen.get(key)
                except TypeError:  # unhashable: the base class reports it
                    continue
                if first_line is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (first given on line "
                                    f"{first_line + 1})", key_node.start_mark)
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


_ScenarioLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_INT_TAG, _FLOAT_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ScenarioLoader.add_implicit_resolver(
    _INT_TAG,
    re.compile(r"^(?:[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?0b[01_]+)$"),
    list("-+0123456789"),
)
_ScenarioLoader.add_implicit_resolver(
    _FLOAT_TAG,
    re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*\.[0-9_]*|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."),
)

_YAML_ACCEPTED = ("YAML text: 'key: value' lines, nested blocks indented with spaces "
                  "(not tabs), lists as '- item' or [a, b]")


def read_yaml(file: Path, error: type[ScenarioError], what: str) -> Any:
    """The parsed YAML of ``file`` (None when empty); every problem (missing, a folder, not
    UTF-8, unreadable, bad YAML with its line and column) raises ``error`` naming the
    file. ``what`` names the kind of file in the messages ("scenario", "sweep")."""
    source = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        wanted = accepted(what) if what in ("scenario", "sweep") else \
            f"the path of an existing {what} YAML file"
        raise error(source, [("(file)", "no such file", wanted)]) from None
    except IsADirectoryError:
        raise error(source, [("(file)", "is a folder, not a file",
                              f"the path of a {what} YAML file")]) from None
    except UnicodeDecodeError as exc:
        raise error(source, [("(file)", f"not UTF-8 text ({exc.reason} at byte "
                              f"{exc.start})", "a UTF-8 encoded YAML file")]) from None
    except OSError as exc:
        raise error(source, [("(file)", f"cannot be read ({exc.strerror})",
                              f"a readable {what} YAML file")]) from None
    try:
        return yaml.load(text, Loader=_ScenarioLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else TOP_LEVEL
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem and exc.context_mark is not None:
            problem += f" ({exc.context} on line {exc.context_mark.line + 1})"
        raise error(source, [(where, f"invalid YAML: {problem}", _YAML_ACCEPTED)]) from None
    except yaml.YAMLError as exc:
        raise error(source, [(TOP_LEVEL, f"invalid YAML: {exc}", _YAML_ACCEPTED)]) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario YAML file, validate it and remember where it came from.

    ``path`` is a file, or the name of a packaged scenario (``quickstart``;
    :func:`drsim.scenario.library.resolve`: an existing file of that name wins).

    Files the scenario names (catalogue, EV data, follow-through distributions) must exist,
    relative to the scenario file's folder. Raises :class:`ScenarioError` for every problem.
    """
    source = str(path)
    file = resolve(path)
    data = read_yaml(file, ScenarioError, "scenario")
    if data is None:
        raise ScenarioError(source, [(TOP_LEVEL, "the file is empty (or only comments)",
                                      mapping_accepted(Scenario))])
    scenario = scenario_from_dict(data, source=source).model_copy(
        update={"source_path": file.absolute()})
    check_files(scenario, source)
    return scenario


def scenario_from_dict(data: dict, source: str = "<dict>") -> Scenario:
    """Validate an in-memory scenario mapping (the parsed YAML); ``source`` names it in errors."""
    if not isinstance(data, dict):
        raise ScenarioError(source, [(TOP_LEVEL, f"expected a mapping of scenario keys, got "
                                                 f"{kind_name(data)}",
                                      mapping_accepted(Scenario))])
    try:
        return Scenario.model_validate(data, context={"from_file": True})
    except ValidationError as exc:
        raise ScenarioError(source, explain_errors(exc, Scenario)) from None


def check_files(scenario: Scenario, source: str) -> None:
    """Files named by the scenario must exist (before any work starts)."""
    wanted = [("appliances.catalogue", scenario.appliances.catalogue, "default",
               "a catalogue YAML file"),
              ("ev.data", scenario.ev.data, "default", "an EV parameter YAML file"),
              ("follow_through.distribution", scenario.follow_through.distribution, "survey",
               "a follow-through YAML file")]
    for i, group in enumerate(scenario.groups):
        if group.follow_through is not None:
            wanted.append((f"groups[{i}].follow_through.distribution",
                           group.follow_through.distribution, "survey",
                           "a follow-through YAML file"))
    problems = [
        (path, f"file not found: {value!r} (relative paths are read from the scenario "
               "file's folder)", f"{packaged!r} or the path of {what}")
        for path, value, packaged, what in wanted
        if value != packaged and not scenario.resolve_path(value).is_file()
    ]
    if problems:
        raise ScenarioError(source, problems)
