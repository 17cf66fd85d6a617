"""Scenario files: the validated description of one demand-response (DR) experiment.

A scenario YAML file sets every parameter of a run: the households and their groups, the load
model's settings, the DR program, the compliance monitoring of the three tiers (dissertation
Ch. 6, Table 6.2) and the incentive module. The pydantic models below are the single place that
says what each parameter means, its unit, its default and its bounds; the packaged scenarios in
``scenarios/`` show them with comments.

Entry points::

    load_scenario(path)          read, validate, and remember the file (for relative paths)
    scenario_from_dict(data)     validate a mapping that is already in memory

A bad scenario raises :class:`ScenarioError` before any work, with one line per problem::

    scenarios/x.yaml: monitoring.gamma_group: Input should be less than or equal to 1
        (got 1.5); accepted: a number in (0, 1]

(printed on one line). Household ids are 0-based inside the simulator; Table 6.2's consumer
numbers ("consumer No.1-No.10,000") are 1-based and inclusive, and group ``range`` uses them.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

__all__ = [
    "ApplianceSettings",
    "BaselineSettings",
    "DRProgram",
    "EVSettings",
    "ExpectedShare",
    "FollowThrough",
    "Group",
    "Incentive",
    "Monitoring",
    "Reference",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "scenario_from_dict",
]

MAX_HOUSEHOLDS = 20_000_000
MAX_CHUNK_SIZE = 200_000
MAX_GROUPS = 1000
MAX_SEED = 2**63 - 1

TOP_LEVEL = "(top level)"


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


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


def _problem(problem: str, accepted: str, at: str = "") -> PydanticCustomError:
    """A validation error carrying its own "accepted" text.

    ``at`` extends the error's location (".end", "[2].range") when a validator of an enclosing
    model finds a problem that belongs to one of its fields.
    """
    return _problems([(at, problem, accepted)])


def _problems(items: list[tuple[str, str, str]]) -> PydanticCustomError:
    summary = "; ".join(f"{at.lstrip('.') + ': ' if at else ''}{p}" for at, p, _ in items)
    return PydanticCustomError("scenario", "{summary}", {"summary": summary,
                                                         "problems": tuple(items)})


# --------------------------------------------------------------------------------------------
# Field types
# --------------------------------------------------------------------------------------------

_CLOCK = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*$")
_CLOCK_ACCEPTED = "a clock time HH:MM from 00:00 to 23:59, e.g. 18:30"


def _clock_time(value: Any) -> str:
    """Normalise a clock time to "HH:MM"; a clear error otherwise."""
    if isinstance(value, str):
        match = _CLOCK.match(value)
        if match:
            hours, minutes = int(match[1]), int(match[2])
            if hours <= 23 and minutes <= 59:
                return f"{hours:02d}:{minutes:02d}"
    hint = ""
    if isinstance(value, int) and not isinstance(value, bool):
        hint = " (write the time as text, e.g. \"18:30\")"
    raise _problem(f"expected a clock time HH:MM, e.g. 18:30, got {_show(value)}{hint}",
                   _CLOCK_ACCEPTED)


ClockTime = Annotated[str, BeforeValidator(_clock_time)]


def _minutes(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


def _described(description: str, accepted: str | None = None, null_means: str | None = None,
               **kwargs: Any) -> Any:
    """``Field`` with a description and, optionally, what errors show as accepted.

    ``accepted`` replaces the text derived from the type and bounds; ``null_means`` says what
    an explicit null does (for optional fields).
    """
    extra = {key: value for key, value in (("accepted", accepted), ("null_means", null_means))
             if value}
    return Field(description=description, json_schema_extra=extra or None, **kwargs)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """pydantic reads true as 1; in a scenario file that is almost surely a mistake."""
        if isinstance(value, bool) and info.field_name is not None:
            core, _, _ = _unwrap(cls.model_fields[info.field_name].annotation, [])
            if core is int or core is float:
                raise PydanticCustomError("bool_for_number", "true/false is not a number")
        return value


# --------------------------------------------------------------------------------------------
# The settings blocks
# --------------------------------------------------------------------------------------------


class FollowThrough(_Model):
    """How likely a household is to act on a DR request (its follow-through rate θ_o)."""

    distribution: str = _described(
        "Where each household's expected follow-through rate θ_o is drawn from: 'survey' = the "
        "packaged survey distribution (§6.3.1, mean 0.45; each household takes a randomly "
        "chosen survey response), or a path to a YAML file, relative to the scenario file.",
        accepted="'survey' or a path to a follow-through YAML file",
        default="survey", min_length=1,
    )
    scale: float = _described(
        "Multiplies each household's θ_o (results clamped to [0, 1]); 1 = as surveyed.",
        default=1.0, ge=0.0, le=2.0,
    )


_USE_SCENARIO = "use the scenario's value"


class Group(_Model):
    """A group of households monitored by one group leader (Table 6.2, "Grouping")."""

    name: str = _described("Unique name of the group, e.g. G1.", min_length=1)
    size: int | None = _described(
        "Number of households in the group. Give either size (for every group) or range.",
        accepted=f"an integer from 1 to {MAX_HOUSEHOLDS} (or give range instead)",
        default=None, ge=1, le=MAX_HOUSEHOLDS,
    )
    range: tuple[int, int] | None = _described(
        "[first, last]: 1-based consumer numbers, both inclusive, as in Table 6.2 "
        "(\"consumer No.1-No.10,000\" is [1, 10000]). Give either range (for every group) or "
        "size.",
        accepted="[first, last]: two consumer numbers with 1 <= first <= last (or give size "
                 "instead)",
        default=None,
    )
    follow_through: FollowThrough | None = _described(
        "The group's own follow-through distribution; null = the scenario's.",
        null_means=_USE_SCENARIO, default=None,
    )
    follow_through_drop: float | None = _described(
        "The group's own drop of the observed follow-through (θ_red = θ_o x (1 - drop)); "
        "null = the scenario's.",
        null_means=_USE_SCENARIO, default=None, ge=0.0, lt=1.0,
    )
    incentive_u: float | None = _described(
        "The group's linear incentive-response factor u of Eq. 6.7/6.8 (one of the four "
        "mappings of §6.3.2, e.g. 1.05); null = the group's households are split among the "
        "scenario's incentive.u_mappings.",
        null_means="split the households among incentive.u_mappings",
        default=None, ge=1.0, le=2.0,
    )

    @model_validator(mode="after")
    def _size_or_range(self) -> Group:
        accepted = "exactly one of size: <households> or range: [first, last]"
        if self.size is None and self.range is None:
            raise _problem("neither size nor range given", accepted)
        if self.size is not None and self.range is not None:
            raise _problem("both size and range given", accepted)
        if self.range is not None:
            first, last = self.range
            if first < 1:
                raise _problem(f"the range starts at consumer {first}; consumer numbers start "
                               "at 1", "[first, last] with 1 <= first <= last", at=".range")
            if last < first:
                raise _problem(f"the range [{first}, {last}] ends before it starts",
                               "[first, last] with 1 <= first <= last", at=".range")
        return self

    @property
    def household_count(self) -> int:
        """Number of households in the group (from size or range)."""
        if self.size is not None:
            return self.size
        assert self.range is not None
        return self.range[1] - self.range[0] + 1


class ApplianceSettings(_Model):
    """The households' appliances (§6.3.1)."""

    catalogue: str = _described(
        "The appliance catalogue: 'default' = the packaged catalogue (drsim/data), or a path "
        "to a catalogue YAML file, relative to the scenario file.",
        accepted="'default' or a path to a catalogue YAML file",
        default="default", min_length=1,
    )
    per_household_min: int = _described(
        "Fewest appliances per household (§6.3.1: uniformly 20 to 25).", default=20, ge=1, le=60,
    )
    per_household_max: int = _described(
        "Most appliances per household (§6.3.1: uniformly 20 to 25).", default=25, ge=1, le=60,
    )

    @model_validator(mode="after")
    def _min_le_max(self) -> ApplianceSettings:
        if self.per_household_min > self.per_household_max:
            raise _problem(
                f"per_household_min ({self.per_household_min}) is greater than "
                f"per_household_max ({self.per_household_max})",
                "per_household_min <= per_household_max, both integers from 1 to 60",
                at=".per_household_min",
            )
        return self


class EVSettings(_Model):
    """Electric vehicles (§6.3.1)."""

    penetration: float = _described(
        "Fraction of households with an EV (§6.3.1: 22.48 %, the UK 2030 forecast).",
        default=0.2248, ge=0.0, le=1.0,
    )
    data: str = _described(
        "EV parameter file (sessions per day, plug-in times, energy, charger power): "
        "'default' = the packaged one, or a path relative to the scenario file.",
        accepted="'default' or a path to an EV parameter YAML file",
        default="default", min_length=1,
    )
    pause_in_progress: bool = _described(
        "A following-through EV that is already charging when a DR event starts pauses until "
        "the event ends (false: only sessions that would start during the event are deferred).",
        default=True,
    )


_GOAL_ACCEPTED = "a number of kWh > 0, or 'expected'"


def _goal(value: Any) -> Any:
    """A goal in kWh (> 0) or 'expected' (one message for both readings)."""
    if value == "expected" or (isinstance(value, int | float) and not isinstance(value, bool)
                               and np.isfinite(value) and value > 0):
        return value
    raise _problem(f"expected a number of kWh > 0 or 'expected', got {_show(value)}",
                   _GOAL_ACCEPTED)


class DRProgram(_Model):
    """The (first) DR program of the day (Table 6.2, "DR program")."""

    start: ClockTime = _described(
        "Start time t_start of the DR program, clock time HH:MM (Table 6.2: 6:30 PM).",
        accepted=_CLOCK_ACCEPTED, default="18:30",
    )
    end: ClockTime = _described(
        "End time t_end of the DR program, clock time HH:MM, after start on the same day "
        "(Table 6.2: 8:30 PM).",
        accepted=_CLOCK_ACCEPTED + ", after start", default="20:30",
    )
    notice_minutes: int = _described(
        "Minutes between the announcement of the program and its start.",
        default=60, ge=0, le=1440,
    )
    reduction_goal_kwh: Annotated[float | Literal["expected"], BeforeValidator(_goal)] = _described(
        "Energy reduction goal λ of Eq. 6.1 over the program, in kWh, or 'expected': the "
        "utility's estimate of the complete response, Σ (B̂ − P̂) over the program and the "
        "participants (drsim.baseline). The dissertation's goal equals its expected "
        "reduction (Table 6.2, §6.3.2: 83.28 MWh for 100,000 households).",
        accepted=_GOAL_ACCEPTED, default="expected",
    )
    incentive: float = _described(
        "Incentive λ_o of the first DR event (Eq. 6.7), in an abstract unit (§6.3.2).",
        default=1.0, gt=0.0,
    )
    rebound_spread_minutes: int = _described(
        "Deferred appliance starts and EV charging resume uniformly over this many minutes "
        "after the event ends (rebound).",
        default=60, ge=1, le=600,
    )
    precool_lead_minutes: int = _described(
        "Minutes before the start in which following-through households may run loads early "
        "(pre-DR rebound, the reason for t_wait).",
        default=60, ge=0, le=600,
    )

    @model_validator(mode="after")
    def _times(self) -> DRProgram:
        if self.end_minute <= self.start_minute:
            raise _problem(f"end {self.end} is not after start {self.start}",
                           f"a clock time after start ({self.start}) on the same day, up to "
                           "23:59", at=".end")
        if self.notice_minutes > self.start_minute:
            raise _problem(
                f"{self.notice_minutes} minutes before start {self.start} is on the previous "
                "day", f"an integer from 0 to {self.start_minute} (the announcement must fall on "
                "the same day)", at=".notice_minutes")
        return self

    @property
    def start_minute(self) -> int:
        """t_start in minutes since midnight."""
        return _minutes(self.start)

    @property
    def end_minute(self) -> int:
        """t_end in minutes since midnight."""
        return _minutes(self.end)

    @property
    def announce_minute(self) -> int:
        """Announcement time in minutes since midnight (start - notice_minutes)."""
        return self.start_minute - self.notice_minutes

    @property
    def duration_minutes(self) -> int:
        """Length of the program in minutes (120 for 18:30-20:30)."""
        return self.end_minute - self.start_minute


class ExpectedShare(_Model):
    """γ_user from the expected response (Listing 6.2's threshold per group and test time).

    At each test time the utility estimates the share of a group's households that the
    meter query flags when every household responds as expected (θ_o), from ``replicas``
    simulated replicas of the follow-through decisions over the schedule its M&V method
    assumes, and adds ``z`` standard errors of a group of the group's size (drsim.threshold).
    """

    method: Literal["expected"] = _described(
        "'expected': the share flagged under the expected response, estimated per group and "
        "test time.")
    z: float = _described(
        "Standard errors above the expected share at which a group alerts; about the "
        "one-sided false-alarm rate of a test (3: 0.13 %).", default=3.0, ge=0.0, le=10.0,
    )
    replicas: int = _described(
        "Replicas of the follow-through decisions the utility simulates per household to "
        "estimate the expected share (more: a closer estimate, more work).",
        default=4, ge=1, le=64,
    )


_GAMMA_ACCEPTED = ("a number in (0, 1] (the constant ratio of Listing 6.2), or a mapping "
                   "{method: expected, z: <standard errors, 0 to 10>, replicas: <1 to 64>}")


def _gamma_user(value: Any) -> Any:
    """A constant ratio or the expected-share settings, each checked on its own (so an
    error names one reading of the value, not both)."""
    if isinstance(value, ExpectedShare):
        return value
    if isinstance(value, dict):
        try:
            return ExpectedShare.model_validate(value)
        except ValidationError as exc:
            raise _problems([("." + path if path != TOP_LEVEL else "", problem, accepted)
                             for path, problem, accepted in _explain(exc, ExpectedShare)]
                            ) from None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 < value <= 1.0:
        return float(value)
    raise _problem(f"expected a ratio in (0, 1] or a mapping, got {_show(value)}",
                   _GAMMA_ACCEPTED)


class Monitoring(_Model):
    """Compliance monitoring of the three tiers (Table 6.2, "Monitoring"; Listings 6.1-6.3)."""

    t_wait_minutes: int = _described(
        "Minutes after t_start before the first household test, so that pre-DR rebound has "
        "passed (Table 6.2: 20).", default=20, ge=0, le=1440,
    )
    delta_minutes: int = _described(
        "Minutes δ between household compliance tests (Table 6.2: 5).", default=5, ge=1, le=1440,
    )
    m_user: int = _described(
        "Consecutive failed household tests before a user non-compliance event "
        "(Table 6.2: 3).", default=3, ge=1,
    )
    m_group: int = _described(
        "Consecutive group alert times before a group non-compliance event (Table 6.2: 3).",
        default=3, ge=1,
    )
    m_utility: int = _described(
        "Consecutive utility alert times before a utility non-compliance prediction "
        "(Table 6.2: 3).", default=3, ge=1,
    )
    gamma_user: Annotated[float | ExpectedShare, BeforeValidator(_gamma_user)] = _described(
        "The share of a group's households flagged non-compliant above which the group "
        "alerts (Listing 6.2; not given in Table 6.2): a constant ratio, as printed, or "
        "{method: expected, z: Z}: per group and test time, the utility's estimate of the "
        "share flagged under the expected response plus Z standard errors for the group's "
        "size (drsim.threshold; README, \"The threshold\").",
        accepted=_GAMMA_ACCEPTED,
        default_factory=lambda: ExpectedShare(method="expected"),
    )
    gamma_group: float = _described(
        "The utility alerts when more than this fraction of the groups are non-compliant "
        "(Listing 6.3; Table 6.2: 0.4).", default=0.4, gt=0.0, le=1.0,
    )
    reading_interval_minutes: int = _described(
        "Minutes between smart-meter readings while monitoring (§6.2.2: 1).",
        default=1, ge=1, le=1440,
    )
    settlement_interval_minutes: int = _described(
        "Minutes between readings once a group (or the utility) is predicted non-compliant: "
        "the settlement rate (§6.2.2: 15).", default=15, ge=1, le=1440,
    )
    queries: dict[str, str] = _described(
        "Optional replacements of the DR query texts, keyed by query name (the names are "
        "checked by drsim.monitoring).",
        accepted="a mapping from query name to query text", default_factory=dict,
    )

    @model_validator(mode="after")
    def _intervals(self) -> Monitoring:
        reading = self.reading_interval_minutes
        if self.settlement_interval_minutes < reading:
            raise _problem(
                f"settlement_interval_minutes ({self.settlement_interval_minutes}) is shorter "
                f"than reading_interval_minutes ({reading})",
                f"an integer >= reading_interval_minutes ({reading})",
                at=".settlement_interval_minutes")
        for name in ("t_wait_minutes", "delta_minutes"):
            value = getattr(self, name)
            if value % reading:
                raise _problem(
                    f"{name} ({value}) is not a multiple of reading_interval_minutes "
                    f"({reading}), so tests would fall between readings",
                    f"a multiple of reading_interval_minutes ({reading})", at="." + name)
        return self


class Incentive(_Model):
    """Incentive module of the second DR event (§6.2.3, Eq. 6.5-6.8; drsim/incentive.py).

    λ_o itself is ``dr_program.incentive``. The dissertation gives no monetary values (λ_o "is
    assigned an abstract unit", §6.3.2), so every cost below is in the same abstract
    ``currency`` and its default is illustrative, not the source's.
    """

    u_mappings: list[Annotated[float, Field(ge=1.0, le=2.0)]] = _described(
        "The linear incentive-response factors u of Eq. 6.7 (§6.3.2: four mappings, 1.05, "
        "1.10, 1.15, 1.20); households of groups without incentive_u are split among them.",
        default_factory=lambda: [1.05, 1.10, 1.15, 1.20], min_length=1,
    )
    beta: float = _described(
        "Over-compensation factor β of Eq. 6.7/6.8 (§6.3.2: tuned to 1.8).",
        default=1.8, ge=1.0, le=3.0,
    )
    second_event_delay_minutes: int = _described(
        "Minutes from the utility's non-compliance prediction t_nc (the announcement of the "
        "second event) to its start (§6.3.2: ten minutes).", default=10, ge=0,
    )
    currency: str = _described(
        "Name of the money unit of λ_o (dr_program.incentive), λ_new, the costs of Eq. 6.5 and "
        "the penalty C_nc of Eq. 6.6, shown in reports (§6.3.2: λ_o \"is assigned an abstract "
        "unit\").", default="unit", min_length=1,
    )
    cost_per_transmitted_event: float = _described(
        "Monitoring cost of Eq. 6.5 per event transmitted between tiers (meter readings, user "
        "and group events: the communication cost of §6.3.3), in currency per event. Not "
        "given in the dissertation; illustrative default.", default=1e-5, ge=0.0,
    )
    cost_per_processed_event: float = _described(
        "Monitoring cost of Eq. 6.5 per event or partial match processed by the CEP engines "
        "(the computation cost of §6.3.3), in currency per event. Not given in the "
        "dissertation; illustrative default.", default=1e-6, ge=0.0,
    )
    saved_cost_per_kwh: float = _described(
        "C_saved of Eq. 6.5 per kWh: what the utility saves per kWh of peak energy the second "
        "event recovers, or pays for an alternative such as direct load control (§6.2.3.1), "
        "in currency per kWh. Not given in the dissertation; illustrative default.",
        default=0.25, ge=0.0,
    )
    penalty_margin: float = _described(
        "How far the penalty C_nc lies above the strict bound of Eq. 6.6, as a fraction of "
        "λ_o: C_nc = max(p_inc·λ_new − λ_o, 0) + penalty_margin·λ_o (not in the dissertation).",
        default=0.05, gt=0.0, le=1.0,
    )
    target_min_follow_through: float = _described(
        "Lower bound of the hatched region of Figure 6.9 (§6.2.3.2): a household whose "
        "observed first-event follow-through θ_red is below it \"did not respond at all\" and "
        "keeps θ_red in the second event. The figure gives no number; our choice.",
        default=0.05, ge=0.0, lt=1.0,
    )
    target_max_follow_through: float = _described(
        "Upper bound of the hatched region of Figure 6.9 (§6.2.3.2): θ_new of Eq. 6.8 is "
        "capped here, and a household already at or above it (it \"responded fully\") keeps "
        "θ_red. The figure gives no number; our choice.",
        default=0.95, gt=0.0, le=1.0,
    )

    @model_validator(mode="after")
    def _region(self) -> Incentive:
        lo, hi = self.target_min_follow_through, self.target_max_follow_through
        if lo >= hi:
            raise _problem(
                f"target_min_follow_through ({lo:g}) is not below target_max_follow_through "
                f"({hi:g})", f"a number in [0, {hi:g}) (below target_max_follow_through)",
                at=".target_min_follow_through")
        return self


class BaselineSettings(_Model):
    """How the utility estimates the baseline B and the expected response P̂ (measurement
    and verification, M&V; drsim.baseline). Estimates never use the evaluated day's
    follow-through decisions."""

    method: Literal["same_day", "model", "prior_days"] = _described(
        "'same_day' = the simulator's counterfactual of the evaluated day: B its no-DR load, "
        "P̂ the expectation over the household's follow-through decisions (perfect M&V, the "
        "dissertation's simulated setting); 'model' = the load model's expectation for the "
        "household; 'prior_days' = the mean of independently simulated prior days.",
        default="same_day",
    )
    prior_days: int = _described(
        "Number of prior days averaged when method is 'prior_days'.", default=10, ge=1, le=60,
    )
    error: float = _described(
        "M&V error: each household's B and P̂ share one multiplicative factor, lognormal "
        "with mean 1 and this coefficient of variation (0.05 = 5 %); 0 = none.",
        default=0.0, ge=0.0, le=1.0,
    )
    error_per_minute: float = _described(
        "Per-minute M&V noise: B and P̂ of each household and minute share a further "
        "lognormal factor with mean 1 and this coefficient of variation; 0 = none.",
        default=0.0, ge=0.0, le=1.0,
    )


class ReferenceReductions(_Model):
    """Published reductions over the program of each pass, in MWh."""

    expected: float | None = _described(
        "Reduction with the expected (complete) response, MWh.", default=None, gt=0.0)
    traditional: float | None = _described(
        "Reduction of the traditional single DR event, MWh.", default=None, gt=0.0)
    adaptive: float | None = _described(
        "Reduction of adaptive DR with the second event, MWh.", default=None, gt=0.0)


class Reference(_Model):
    """Published results of this scenario, shown beside drsim's in absolute and relative
    terms (``drsim run``, ``drsim report``); a scenario without one shows none."""

    source: str = _described(
        "Where the numbers are published (author, title, section, table or figure).",
        min_length=1)
    reduction_mwh: ReferenceReductions = _described(
        "Reductions over the program per pass, MWh.", default_factory=ReferenceReductions)
    utility_noncompliance_time: ClockTime | None = _described(
        "When the utility predicted non-compliance (t_nc), clock time HH:MM.",
        accepted=_CLOCK_ACCEPTED, null_means="not given", default=None)
    groups_compliant_at_prediction: int | None = _described(
        "Groups still compliant at the prediction.", default=None, ge=0)


# --------------------------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------------------------


class Scenario(_Model):
    """One DR experiment: households, groups, load model, DR program, monitoring, incentive."""

    name: str = _described("Name of the scenario, used in result folders and reports.",
                           min_length=1)
    seed: int = _described(
        "Seed of all random streams; the same seed gives the same households and loads.",
        accepted=f"an integer from 0 to {MAX_SEED} (2**63 - 1)", ge=0, le=MAX_SEED,
    )
    households: int = _described(
        "Number of households (DR participants; Table 6.2: 100,000).", ge=1, le=MAX_HOUSEHOLDS,
    )
    chunk_size: int = _described(
        "Households per Spark task (the unit of parallelism and of task memory); chunks never "
        "straddle a group, so a group's last chunk may be smaller.",
        default=5000, ge=1, le=MAX_CHUNK_SIZE,
    )
    groups: list[Group] = _described(
        "The groups, in household order. Either every group gives size (sizes add up to "
        "households) or every group gives range (contiguous, from consumer 1 to households).",
        min_length=1, max_length=MAX_GROUPS,
    )
    appliances: ApplianceSettings = _described(
        "Appliance settings (§6.3.1).", default_factory=ApplianceSettings)
    ev: EVSettings = _described("EV settings (§6.3.1).", default_factory=EVSettings)
    follow_through: FollowThrough = _described(
        "Expected follow-through rates θ_o of all groups without their own.",
        default_factory=FollowThrough)
    follow_through_drop: float = _described(
        "Drop of the observed follow-through: θ_red = θ_o x (1 - drop) (§6.3.2: 40 %).",
        default=0.4, ge=0.0, lt=1.0,
    )
    dr_program: DRProgram = _described("The first DR program (Table 6.2).",
                                       default_factory=DRProgram)
    monitoring: Monitoring = _described("Compliance monitoring (Table 6.2).",
                                        default_factory=Monitoring)
    incentive: Incentive = _described("Second-event incentive module (§6.2.3).",
                                      default_factory=Incentive)
    baseline: BaselineSettings = _described("Baseline and expected-response estimation.",
                                            default_factory=BaselineSettings)
    reference: Reference | None = _described(
        "Published results of this scenario to show beside drsim's; null = none.",
        null_means="no reference column", default=None)
    source_path: SkipJsonSchema[Path | None] = Field(
        default=None, exclude=True,
        description="The scenario file this was loaded from (set by load_scenario; relative "
                    "paths in the scenario are resolved from its folder). Not a YAML key.",
    )

    @field_validator("source_path", mode="before")
    @classmethod
    def _not_from_yaml(cls, value: Any, info: ValidationInfo) -> Any:
        if info.context and info.context.get("from_file"):
            raise PydanticCustomError("extra_forbidden", "Extra inputs are not permitted")
        return value

    @field_validator("groups")
    @classmethod
    def _groups_partition(cls, groups: list[Group], info: ValidationInfo) -> list[Group]:
        problems: list[tuple[str, str, str]] = []
        seen: dict[str, int] = {}
        for i, group in enumerate(groups):
            if group.name in seen:
                problems.append((f"[{i}].name",
                                 f"duplicate group name {group.name!r} (also "
                                 f"groups[{seen[group.name]}].name)",
                                 "a name that no other group uses"))
            seen.setdefault(group.name, i)

        uses_range = [g.range is not None for g in groups]
        style = "range" if uses_range[0] else "size"
        for i, group_uses_range in enumerate(uses_range):
            if group_uses_range != uses_range[0]:
                problems.append((f"[{i}]",
                                 f"uses {'range' if group_uses_range else 'size'} but groups[0] "
                                 f"uses {style}",
                                 "the same style for every group: all size or all range"))
        households = info.data.get("households")
        if households is None or any(u != uses_range[0] for u in uses_range):
            if problems:
                raise _problems(problems)
            return groups

        if style == "size":
            total = sum(g.size or 0 for g in groups)
            if total != households:
                problems.append(("", f"the group sizes add up to {total} but households is "
                                     f"{households}",
                                 f"sizes that add up to households ({households})"))
        else:
            expected_first = 1
            for i, group in enumerate(groups):
                assert group.range is not None
                first, last = group.range
                if first != expected_first:
                    if i == 0:
                        what = f"starts at consumer {first}; the first group must start at 1"
                    elif first > expected_first:
                        missing = (f"consumer {expected_first} is" if first - 1 == expected_first
                                   else f"consumers {expected_first}-{first - 1} are")
                        what = f"starts at consumer {first}, leaving a gap: {missing} in no group"
                    else:
                        what = (f"starts at consumer {first} and overlaps groups[{i - 1}] "
                                f"({groups[i - 1].name!r}), which ends at {expected_first - 1}")
                    problems.append((f"[{i}].range", f"[{first}, {last}] {what}",
                                     f"a range starting at consumer {expected_first}, right "
                                     "after the previous group"))
                expected_first = last + 1
            last = groups[-1].range[1]  # type: ignore[index]
            if last != households:
                problems.append((f"[{len(groups) - 1}].range",
                                 f"the last group ends at consumer {last} but households is "
                                 f"{households}",
                                 f"the last range ends at households ({households})"))
        if problems:
            raise _problems(problems)
        return groups

    @model_validator(mode="after")
    def _reference_fits(self) -> Scenario:
        ref = self.reference
        n = len(self.groups)
        if ref is not None and (ref.groups_compliant_at_prediction or 0) > n:
            raise _problem(
                f"{ref.groups_compliant_at_prediction} groups compliant, but the scenario has "
                f"{n}", f"an integer from 0 to {n}",
                at="reference.groups_compliant_at_prediction")
        return self

    @model_validator(mode="after")
    def _monitoring_fits_program(self) -> Scenario:
        duration = self.dr_program.duration_minutes
        if self.monitoring.t_wait_minutes >= duration:
            raise _problem(
                f"the first test (start + {self.monitoring.t_wait_minutes} minutes) is not "
                f"before the end of the {duration}-minute DR program",
                f"an integer from 0 to {duration - 1}", at="monitoring.t_wait_minutes")
        return self

    # -- derived helpers ----------------------------------------------------------------------

    def group_sizes(self) -> list[int]:
        """Households per group, in order."""
        return [g.household_count for g in self.groups]

    def group_ranges(self) -> list[tuple[int, int]]:
        """0-based ``[first_id, end_id)`` household-id ranges of the groups, in order.

        Contiguous and covering ``0 .. households``: Table 6.2's G1 "consumer No.1-No.10,000"
        is ``(0, 10000)``.
        """
        ranges = []
        first = 0
        for size in self.group_sizes():
            ranges.append((first, first + size))
            first += size
        return ranges

    def group_of(self, household_ids: np.ndarray) -> np.ndarray:
        """Group index of each 0-based household id (vectorized; same shape as the input)."""
        ids = np.asarray(household_ids)
        if ids.size and (ids.min() < 0 or ids.max() >= self.households):
            raise ValueError(f"household ids must be in [0, {self.households}), got "
                             f"{ids.min()}..{ids.max()}")
        ends = np.cumsum(self.group_sizes())
        return np.searchsorted(ends, ids, side="right").astype(np.int64)

    def effective_follow_through(self, group: int) -> FollowThrough:
        """The follow-through settings of group ``group`` (its own, else the scenario's)."""
        return self.groups[group].follow_through or self.follow_through

    def effective_follow_through_drop(self, group: int) -> float:
        """The follow-through drop of group ``group`` (its own, else the scenario's)."""
        drop = self.groups[group].follow_through_drop
        return self.follow_through_drop if drop is None else drop

    def with_households(self, n: int) -> Scenario:
        """The same scenario scaled to ``n`` households.

        Group sizes are scaled proportionally with largest-remainder rounding (they add up to
        ``n``; every group keeps at least one household), in the groups' own style (sizes or
        ranges). A reduction goal in kWh is scaled by the same factor, since it is the goal of
        the whole population (Table 6.2: 83.28 MWh for 100,000 households); 'expected'
        stays. The reference results are dropped: they belong to the original size.
        """
        source = str(self.source_path) if self.source_path else "<scenario>"
        if not isinstance(n, int | np.integer) or isinstance(n, bool):
            raise ScenarioError(source, [("households", f"expected an integer, got {n!r}",
                                          f"an integer from {len(self.groups)} to "
                                          f"{MAX_HOUSEHOLDS}")])
        n = int(n)
        if not len(self.groups) <= n <= MAX_HOUSEHOLDS:
            raise ScenarioError(source, [("households", f"cannot scale {len(self.groups)} "
                                          f"groups to {n} households",
                                          f"an integer from {len(self.groups)} (one household "
                                          f"per group) to {MAX_HOUSEHOLDS}")])
        sizes = _scale_sizes(self.group_sizes(), n)
        groups = []
        first = 1
        for group, size in zip(self.groups, sizes, strict=True):
            if group.range is not None:
                groups.append(group.model_copy(update={"range": (first, first + size - 1)}))
            else:
                groups.append(group.model_copy(update={"size": size}))
            first += size
        data = self.model_dump()
        data["households"] = n
        data["groups"] = [g.model_dump() for g in groups]
        goal = self.dr_program.reduction_goal_kwh
        if goal != "expected":
            data["dr_program"]["reduction_goal_kwh"] = goal * n / self.households
        if n != self.households:
            data["reference"] = None
        scaled = Scenario.model_validate(data)
        return scaled.model_copy(update={"source_path": self.source_path})

    def resolve_path(self, p: str) -> Path:
        """A path from the scenario, resolved relative to the scenario file's folder.

        Absolute paths stay as they are; without a scenario file (``scenario_from_dict``)
        relative paths are relative to the current directory.
        """
        path = Path(p).expanduser()
        if path.is_absolute() or self.source_path is None:
            return path
        return self.source_path.parent / path


def _scale_sizes(sizes: list[int], n: int) -> list[int]:
    """Scale ``sizes`` to add up to ``n`` (largest remainder; each at least 1; exact integers)."""
    total = sum(sizes)
    # quota_i = sizes_i * n / total; work with numerators over `total` to stay exact.
    numerators = [s * n for s in sizes]
    result = [max(1, q // total) for q in numerators]
    missing = n - sum(result)
    # remainder_i = quota_i - result_i (x total): largest first when adding, smallest first
    # when taking away (only from groups that keep >= 1); ties go to the earlier group.
    while missing > 0:
        order = sorted(range(len(sizes)), key=lambda i: (-(numerators[i] - result[i] * total), i))
        for i in order[:missing]:
            result[i] += 1
        missing = n - sum(result)
    while missing < 0:
        order = sorted((i for i in range(len(sizes)) if result[i] > 1),
                       key=lambda i: (numerators[i] - result[i] * total, i))
        for i in order[:-missing]:
            result[i] -= 1
        missing = n - sum(result)
    return result


# --------------------------------------------------------------------------------------------
# Reading and validating
# --------------------------------------------------------------------------------------------

_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"


class _ScenarioLoader(yaml.SafeLoader):
    """PyYAML's safe loader, minus two YAML 1.1 surprises, plus a duplicate-key check.

    - ``18:30`` stays the text "18:30" (YAML 1.1 reads it as the base-60 integer 1110);
    - ``1e-3`` is a number (YAML 1.1 needs a dot: ``1.0e-3``);
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
    re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
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
        raise error(source, [("(file)", "no such file",
                              f"the path of an existing {what} YAML file")]) from None
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

    Files the scenario names (catalogue, EV data, follow-through distributions) must exist,
    relative to the scenario file's folder. Raises :class:`ScenarioError` for every problem.
    """
    source = str(path)
    file = Path(path)
    data = read_yaml(file, ScenarioError, "scenario")
    if data is None:
        raise ScenarioError(source, [(TOP_LEVEL, "the file is empty (or only comments)",
                                      _mapping_accepted(Scenario))])
    scenario = scenario_from_dict(data, source=source).model_copy(
        update={"source_path": file.absolute()})
    _check_files(scenario, source)
    return scenario


def scenario_from_dict(data: dict, source: str = "<dict>") -> Scenario:
    """Validate an in-memory scenario mapping (the parsed YAML); ``source`` names it in errors."""
    if not isinstance(data, dict):
        raise ScenarioError(source, [(TOP_LEVEL, f"expected a mapping of scenario keys, got "
                                                 f"{_kind(data)}",
                                      _mapping_accepted(Scenario))])
    try:
        return Scenario.model_validate(data, context={"from_file": True})
    except ValidationError as exc:
        raise ScenarioError(source, _explain(exc)) from None


def _check_files(scenario: Scenario, source: str) -> None:
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


# --------------------------------------------------------------------------------------------
# Turning pydantic's errors into "<path>: <problem>; accepted: <...>"
# --------------------------------------------------------------------------------------------


def _explain(exc: ValidationError, root: type[BaseModel] | None = None
             ) -> list[tuple[str, str, str]]:
    """(path, problem, accepted) of each error of ``exc``, paths from ``root`` (default:
    Scenario)."""
    root = root or Scenario
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
            problem = f"expected a mapping, got {_kind(err['input'])}"
        elif kind in ("list_type", "tuple_type"):
            problem = f"expected a list, got {_kind(err['input'])}"
        else:
            problem = f"{err['msg']} (got {_show(err['input'])})"
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


def _unwrap(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any], bool]:
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


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model of a field (the one model among the members of a union such as
    ``float | ExpectedShare``), else None."""
    core, _, _ = _unwrap(annotation, [])
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
        model = _model_of(annotation)
        core, _, _ = _unwrap(annotation, metadata)
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


def _mapping_accepted(model: type[BaseModel]) -> str:
    return "a mapping with the keys " + ", ".join(_keys(model))


def _accepted(field: FieldInfo | None, annotation: Any, metadata: list[Any]) -> str:
    """What a field (or list item) accepts, in words, from its type and constraints."""
    extra = field.json_schema_extra if field is not None else None
    extra = extra if isinstance(extra, dict) else {}
    core, metadata, _ = _unwrap(annotation, metadata)
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
        return _mapping_accepted(core)
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
        item_core, item_meta, _ = _unwrap(args[0], [])
        item = _describe(item_core, item_meta)
        lo, hi = bounds.get("MinLen"), bounds.get("MaxLen")
        count = (f" ({lo} to {hi} items)" if lo and hi else f" (at least {lo} item)" if lo
                 else "")
        return f"a list{count}, each {item}"
    if origin is tuple and args:
        return "a list [" + ", ".join(_describe(*_unwrap(a, [])[:2]) for a in args) + "]"
    if origin is dict and len(args) == 2:
        return f"a mapping of {_describe(args[0], [])} to {_describe(args[1], [])}"
    if isinstance(core, type) and issubclass(core, Path):
        return "a file path"
    return getattr(core, "__name__", str(core))


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return f"a list ({_show(value)})"
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {_show(value)}"


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
