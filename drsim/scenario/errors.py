"""Scenario errors: :class:`ScenarioError` and the helpers that word a problem.

A problem is a ``(field path, problem, accepted)`` triple; validators raise it as a pydantic
error with :func:`value_problem` so that it survives pydantic's error collection.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import PydanticCustomError

TOP_LEVEL = "(top level)"


class ScenarioError(ValueError):
    """A scenario that cannot be used, with every problem found.

    ``str(error)`` has one line per problem: ``<file>: <field path>: <problem>; accepted: <...>``.
    ``problems`` holds the same as ``(field path, problem, accepted)`` triples.
    """

    def __init__(self, source: str, problems: list[tuple[str, str, str]]):
        self.source = source
        self.problems = list(problems)
        super().__init__(
            "\n".join(f"{source}: {path}: {problem}; accepted: {accepted}"
                      for path, problem, accepted in self.problems)
        )

    def __reduce__(self):
        """Rebuild from the original arguments (pickling, re-raising in SimPy/Spark)."""
        return (type(self), (self.source, self.problems))


def value_problem(problem: str, accepted: str, at: str = "") -> PydanticCustomError:
    """A validation error carrying its own "accepted" text.

    ``at`` extends the error's location (".end", "[2].range") when a validator of an enclosing
    model finds a problem that belongs to one of its fields.
    """
    return value_problems([(at, problem, accepted)])


def value_problems(items: list[tuple[str, str, str]]) -> PydanticCustomError:
    summary = "; ".join(f"{at.lstrip('.') + ': ' if at else ''}{p}" for at, p, _ in items)
    return PydanticCustomError("scenario", "{summary}", {"summary": summary,
                                                         "problems": tuple(items)})


def kind_name(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return f"a list ({show_value(value)})"
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {show_value(value)}"


def show_value(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
