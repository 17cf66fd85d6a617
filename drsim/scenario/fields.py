"""The field types every block of a scenario shares: the frozen base model that refuses
true/false for a number, clock times, described fields, and the size limits."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from drsim.scenario.errors import show_value, value_problem
from drsim.scenario.explain import unwrap_annotation
from drsim.units import DAY, clock, clock_minutes

__all__ = ["MAX_CHUNK_SIZE", "MAX_GROUPS", "MAX_HOUSEHOLDS", "MAX_SEED", "CLOCK_ACCEPTED",
           "NAME_ACCEPTED", "ClockTime", "SettingsModel", "clock_time", "described",
           "minutes_of", "name_problem"]

MAX_HOUSEHOLDS = 20_000_000
MAX_CHUNK_SIZE = 200_000
MAX_GROUPS = 1000
MAX_SEED = 2**63 - 1


# --------------------------------------------------------------------------------------------
# Field types
# --------------------------------------------------------------------------------------------

CLOCK_ACCEPTED = "a clock time HH:MM from 00:00 to 23:59, e.g. 18:30"


def clock_time(value: Any) -> str:
    """Normalise a clock time to "HH:MM"; a clear error otherwise."""
    if isinstance(value, str):
        try:
            minute = clock_minutes(value)
        except ValueError:
            minute = DAY  # not a clock time: the error below
        if minute < DAY:  # 24:00 ends a day but starts none
            return clock(minute)
    hint = ""
    if isinstance(value, int) and not isinstance(value, bool):
        hint = " (write the time as text, e.g. \"18:30\")"
    raise value_problem(f"expected a clock time HH:MM, e.g. 18:30, got {show_value(value)}{hint}",
                   CLOCK_ACCEPTED)


ClockTime = Annotated[str, BeforeValidator(clock_time)]


NAME_ACCEPTED = ("a name of letters, digits, '-', '_' and '.' (not first), at most "
                 "100 characters, e.g. quickstart_2")
MAX_NAME_LENGTH = 100


def name_problem(value: Any) -> str | None:
    """Why ``value`` is not a name that may become a folder name (None: it is one).

    A scenario's or a sweep's name names its default result folder
    (``results/<name>``), so it must be one path component of its own: no separator, not
    ``.`` or ``..``, not hidden (drsim's own hidden siblings start with a dot), and short
    enough for the hidden siblings' longer names.

    >>> name_problem("paper_100k"), name_problem("../etc")
    (None, "'../etc' is a path, not a name")
    """
    if not isinstance(value, str):
        return f"expected a name, got {type(value).__name__} {show_value(value)}"
    if not value.strip():
        return "expected a name, got empty text"
    if "/" in value or "\\" in value:
        return f"{show_value(value)} is a path, not a name"
    if value.startswith("."):
        return f"{show_value(value)} starts with '.'"
    if len(value) > MAX_NAME_LENGTH:
        return f"{show_value(value)} has {len(value)} characters"
    if not re.fullmatch(r"[\w.-]+", value):
        bad = sorted({c for c in value if not re.fullmatch(r"[\w.-]", c)})
        return f"{show_value(value)} holds {', '.join(repr(c) for c in bad)}"
    return None


def minutes_of(time: str) -> int:
    """Minutes since midnight of a normalised clock time (a :data:`ClockTime`)."""
    return clock_minutes(time)


def described(description: str, accepted: str | None = None, null_means: str | None = None,
               **kwargs: Any) -> Any:
    """``Field`` with a description and, optionally, what errors show as accepted.

    ``accepted`` replaces the text derived from the type and bounds; ``null_means`` says what
    an explicit null does (for optional fields).
    """
    extra: dict[str, Any] = {key: value for key, value in (("accepted", accepted),
                                                          ("null_means", null_means)) if value}
    return Field(description=description, json_schema_extra=extra or None, **kwargs)


class SettingsModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """pydantic reads true as 1; in a scenario file that is almost surely a mistake."""
        if isinstance(value, bool) and info.field_name is not None:
            core, _, _ = unwrap_annotation(cls.model_fields[info.field_name].annotation, [])
            if core is int or core is float:
                raise PydanticCustomError("bool_for_number", "true/false is not a number")
        return value
