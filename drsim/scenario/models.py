"""The scenario's pydantic models: what each parameter means, its unit, default and bounds.

:class:`Scenario` is one DR experiment; its blocks are :class:`Group`, :class:`FollowThrough`,
:class:`ApplianceSettings`, :class:`EVSettings`, :class:`DRProgram`, :class:`Monitoring`
(with :class:`ExpectedShare`), :class:`Incentive`, :class:`BaselineSettings` and
:class:`Reference`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
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
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from drsim.scenario.errors import TOP_LEVEL, ScenarioError, _problem, _problems, _show
from drsim.scenario.explain import _explain, _unwrap
from drsim.units import DAY, clock, clock_minutes

__all__ = [
    "MAX_CHUNK_SIZE",
    "MAX_GROUPS",
    "MAX_HOUSEHOLDS",
    "MAX_SEED",
    "ApplianceQuery",
    "ApplianceSettings",
    "BaselineSettings",
    "ClockTime",
    "DRProgram",
    "EVSettings",
    "ExpectedShare",
    "FollowThrough",
    "Group",
    "Incentive",
    "Monitoring",
    "Reference",
    "ReferenceReductions",
    "Scenario",
    "Shedding",
    "RemoteData",
    "NetworkLatency",
    "DayOfAdjustment",
    "DarkMeters",
    "Meters",
    "ReadingLoss",
]

MAX_HOUSEHOLDS = 20_000_000
MAX_CHUNK_SIZE = 200_000
MAX_GROUPS = 1000
MAX_SEED = 2**63 - 1


# --------------------------------------------------------------------------------------------
# Field types
# --------------------------------------------------------------------------------------------

_CLOCK_ACCEPTED = "a clock time HH:MM from 00:00 to 23:59, e.g. 18:30"


def _clock_time(value: Any) -> str:
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
    raise _problem(f"expected a clock time HH:MM, e.g. 18:30, got {_show(value)}{hint}",
                   _CLOCK_ACCEPTED)


ClockTime = Annotated[str, BeforeValidator(_clock_time)]


def _minutes(time: str) -> int:
    """Minutes since midnight of a normalised clock time (a :data:`ClockTime`)."""
    return clock_minutes(time)


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
        "participants (drsim.utility.baseline). The dissertation's goal equals its expected "
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
    assumes, and adds ``z`` standard errors of a group of the group's size
    (drsim.utility.threshold).
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


class Shedding(_Model):
    """Hybrid load shedding of the meter tier (the "OP" configuration of §6.3.4, Ch. 4;
    drsim.utility.shedding): Listing 6.1 runs on gateways, each serving a fixed number of meters
    on a modelled device, and sheds readings (not reported: neither sent nor evaluated)
    and runs of failed tests to keep its latency under a bound."""

    strategy: Literal["Hybrid", "HyI", "HyS", "RI", "RS"] = _described(
        "What to shed: Hybrid (readings and runs from one cost model, §4.2.5), HyI "
        "(readings), HyS (runs), or the random baselines RI (readings) and RS (runs).",
        default="Hybrid",
    )
    bound: float = _described(
        "The latency bound as a share of each gateway's unshed latency (§6.3.4: 0.5).",
        default=0.5, gt=0.0, le=1.0,
    )
    statistic: Literal["avg", "p95"] = _described(
        "The latency the bound applies to: the average or the 95th percentile of the "
        "gateway's recent readings.", default="avg",
    )
    gateway_households: int = _described(
        "Meters per gateway, counted from each group's first household (the last gateway of "
        "a group may serve fewer); chunks are cut at gateway boundaries.",
        default=250, ge=1,
    )
    utilisation: float = _described(
        "How busy the unshed run keeps each gateway's modelled device: its cost per unit of "
        "work is set from that (the less powerful edge devices of §6.3.4).",
        default=0.9, gt=0.0, lt=1.0,
    )
    classes: int = _described(
        "Classes of runs per automaton state in the cost model (K-means, §4.3.2).",
        default=4, ge=1, le=20,
    )
    slices: int = _described(
        "Time slices of the query window in the cost model (§4.3.1).", default=4, ge=1, le=24,
    )


class NetworkLatency(_Model):
    """The latency of one fetch over the metering network, in seconds (advanced metering
    networks answer in seconds; cep_core.remote.LatencyModel)."""

    kind: Literal["fixed", "uniform", "lognormal"] = _described(
        "fixed (always `seconds`), uniform (from low_seconds to high_seconds) or lognormal "
        "(median `seconds`, shape `sigma`: a long tail of slow answers).", default="lognormal",
    )
    seconds: float = _described(
        "The latency of kind fixed, or the median of kind lognormal [s].",
        default=2.0, ge=0.0, le=3600.0,
    )
    low_seconds: float = _described(
        "The shortest latency of kind uniform [s].", default=1.0, ge=0.0, le=3600.0)
    high_seconds: float = _described(
        "The longest latency of kind uniform [s].", default=5.0, ge=0.0, le=3600.0)
    sigma: float = _described(
        "The shape of kind lognormal (the standard deviation of the latency's logarithm).",
        default=0.5, ge=0.0, le=3.0,
    )

    @model_validator(mode="after")
    def _range(self) -> NetworkLatency:
        if self.kind == "uniform" and self.low_seconds > self.high_seconds:
            raise _problem(f"low_seconds ({self.low_seconds}) is above high_seconds "
                           f"({self.high_seconds})", f"a number up to {self.high_seconds}",
                           at=".low_seconds")
        return self


class RemoteData(_Model):
    """The utility's M&V profiles as remote data (Ch. 5, EIRES; drsim.utility.fetching): meters
    (at their gateways) fetch λ[houseID, time], group leaders γ[groupID, time], one element
    per household or group and test time, over the metering network."""

    strategy: Literal["BL1", "BL2", "PFetch", "LzEval", "Hybrid"] = _described(
        "How fetches are made (§5.4, §5.6.1): BL1 blocks on every fetch, no cache; BL2 blocks "
        "on a cache miss; PFetch prefetches the next test's element and blocks on a miss; "
        "LzEval decides each reading when its element arrives, without blocking the gateway; "
        "Hybrid prefetches and decides lazily.", default="Hybrid",
    )
    latency: NetworkLatency = _described(
        "The latency of one fetch over the metering network.",
        default_factory=NetworkLatency,
    )
    cache_elements: int = _described(
        "Profile elements a gateway or group leader keeps (least recently used out first; "
        "BL1 keeps none).", default=500, ge=0, le=10_000_000,
    )
    element_bytes: int = _described(
        "Bytes of one fetched element (a household or group and a test time, and the value).",
        default=16, ge=1, le=1_000_000,
    )
    gateway_households: int = _described(
        "Meters per gateway, counted from each group's first household (as for load "
        "shedding; chunks are cut at gateway boundaries).", default=250, ge=1,
    )


class DarkMeters(_Model):
    """Meters that stop reporting for good (a dead modem, a network outage): a share of
    the households, drawn per household, lose every reading from a clock time on."""

    share: float = _described(
        "The share of households whose meters go dark.", gt=0.0, le=1.0)
    start: ClockTime = _described(
        "The clock time (HH:MM) of the first reading they lose.", accepted=_CLOCK_ACCEPTED)

    @property
    def start_minute(self) -> int:
        """Minutes since midnight of ``start``."""
        return _minutes(self.start)


class ReadingLoss(_Model):
    """Meter readings lost on their way to the head-end (drsim.utility.readings): every scheduled
    reading of the program (1-minute and settlement readings alike) is lost with the
    model, the same in every pass and for any chunking (the counter-based streams of
    (household, "loss", slot)). A lost reading is not sent; the utility's M&V estimates
    do not change (docs/decisions.md, "Lost meter readings")."""

    rate: float = _described(
        "The long-run share of readings lost (0.05 = 5 %).", ge=0.0, lt=1.0,
        accepted="a number in [0, 1)")
    burst_length: float = _described(
        "1: independent losses; above 1: the mean length of a burst of lost readings, in "
        "reading intervals (a Gilbert-Elliott chain with the same long-run rate).",
        default=1.0, ge=1.0, le=10_000.0, accepted="a number >= 1 (1: independent losses)")
    dark: DarkMeters | None = _described(
        "Meters that go dark: {share, start}, on top of the rate.",
        null_means="no meter goes dark", default=None)

    @model_validator(mode="after")
    def _chain(self) -> ReadingLoss:
        # P(good → bad) = rate / ((1 − rate) · burst_length) must be a probability
        if self.burst_length > 1.0 and self.rate / (1.0 - self.rate) > self.burst_length:
            low = self.rate / (1.0 - self.rate)
            raise _problem(
                f"burst_length {self.burst_length:g} is too short for rate {self.rate:g}: "
                f"bursts that short cannot lose that share of the readings",
                f"a number >= rate / (1 - rate) = {low:.4g}", at=".burst_length")
        return self

    @property
    def active(self) -> bool:
        """Whether any reading can be lost (a rate above 0 or meters that go dark)."""
        return self.rate > 0.0 or self.dark is not None


class Meters(_Model):
    """The smart meters' link to the head-end (§6.2.2: readings every minute while
    monitored)."""

    reading_loss: ReadingLoss | None = _described(
        "Readings lost on the way: {rate, burst_length, dark}.",
        null_means="every reading arrives", default=None)


class ApplianceQuery(_Model):
    """A utility query over what the households do (appliance starts, EV plug-ins, pauses
    and resumes, the DR signals they receive, readings over their baseline:
    drsim.utility.appliance_monitoring), per household, with an adaptive evaluation plan
    (cep_core.adaptive, US 11,693,862 B2)."""

    query: str = _described(
        "The query text (cep_core's language), partitioned by household (SAME[houseID]); "
        "event types: start_<load category>, ev_plug, ev_pause, ev_resume, dr_notice, "
        "dr_start, dr_end, over_baseline.",
        accepted="a pattern query with SAME[houseID]",
    )
    plan: Literal["text", "order", "tree"] = _described(
        "The evaluation plan: the text order, a lazy order or a join tree chosen from "
        "sliding-window statistics.", default="order",
    )
    adapt: dict[str, Any] | None = _described(
        "When to plan again (cep_core's adapt option: method static, unconditional, "
        "threshold or invariant; t, d, K, window and period in minutes).",
        accepted="a mapping of adapt options", null_means="a static plan",
        default_factory=lambda: {"method": "invariant", "d": 0.5, "window": 30,
                                 "period": 5},
    )


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
        "size (drsim.utility.threshold; docs/model.md, \"The threshold\").",
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
        "checked by drsim.utility.monitoring).",
        accepted="a mapping from query name to query text", default_factory=dict,
    )
    shedding: Shedding | None = _described(
        "Hybrid load shedding of the meter tier under a latency bound (§6.3.4); off when "
        "absent.", null_means="no load shedding (the BL configuration)", default=None,
    )
    remote: RemoteData | None = _described(
        "The M&V profiles fetched from the utility over the metering network (Ch. 5); "
        "local tables that answer at once when absent.",
        null_means="local tables (no fetches)", default=None,
    )
    appliance_queries: dict[str, ApplianceQuery] = _described(
        "Utility queries over what the households do, by name, run per household on the "
        "monitored passes with adaptive plans (drsim.utility.appliance_monitoring); their alerts, "
        "work and plan replacements go to summary.json's appliance_queries.",
        accepted="a mapping from a name to {query, plan, adapt}", default_factory=dict,
    )
    max_missing: int | None = _described(
        "Approximate meter query (ACEP, Li & Ge 2016): a run of m_user + 1 consecutive test "
        "slots may hold up to this many lost test readings strictly inside it (its first "
        "and last slots are real failed tests), so at most m_user - 1; 0 or none: exact "
        "matching, a lost reading breaks the run (docs/decisions.md, \"Lost meter "
        "readings\").", null_means="exact matching, as 0", default=None, ge=0,
    )

    @property
    def gateway_households(self) -> int | None:
        """Meters per gateway, when load shedding or remote data model gateways."""
        for part in (self.shedding, self.remote):
            if part is not None:
                return part.gateway_households
        return None

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
        k = self.max_missing
        if k is not None and k > self.m_user - 1:
            raise _problem(
                f"max_missing {k} is more than the m_user - 1 = {self.m_user - 1} test slots "
                f"strictly inside a run of m_user + 1 = {self.m_user + 1} (its first and last "
                "slots are real failed tests)",
                f"an integer from 0 to {self.m_user - 1}", at=".max_missing")
        if k and (self.shedding is not None or self.remote is not None):
            raise _problem(
                "max_missing above 0 does not apply with load shedding or remote profiles "
                "(the modelled gateways run exact matching)", "0 or none", at=".max_missing")
        if self.shedding is not None and self.remote is not None and \
                self.shedding.gateway_households != self.remote.gateway_households:
            raise _problem(
                f"remote.gateway_households ({self.remote.gateway_households}) differs from "
                f"shedding.gateway_households ({self.shedding.gateway_households})",
                f"{self.shedding.gateway_households} (one gateway layout)",
                at=".remote.gateway_households")
        return self


class Incentive(_Model):
    """Incentive module of the second DR event (§6.2.3, Eq. 6.5-6.8; drsim/utility/incentive.py).

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


class DayOfAdjustment(_Model):
    """A day-of adjustment of B and P̂ (M&V practice): at the announcement the utility
    scales each household's estimates by its metered load over the hours before the
    notice against its estimated baseline over the same minutes (drsim.utility.baseline)."""

    window_minutes: int = _described(
        "Minutes before the announcement whose readings are compared (from midnight at the "
        "earliest).", default=180, ge=15, le=1440,
    )
    cap: float = _described(
        "The largest change of the estimates, as a share (0.2: scaled by 0.8 to 1.2).",
        default=0.2, ge=0.0, le=1.0,
    )


class BaselineSettings(_Model):
    """How the utility estimates the baseline B and the expected response P̂ (measurement
    and verification, M&V; drsim.utility.baseline). Estimates never use the evaluated day's
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
    day_of_adjustment: DayOfAdjustment | None = _described(
        "Adjust B and P̂ at the announcement from each household's readings before the "
        "notice (published to meters and group leaders as one update of the profiles).",
        null_means="no adjustment", default=None,
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
    meters: Meters = _described("The meters' link to the head-end: lost readings.",
                                default_factory=Meters)
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

    @model_validator(mode="after")
    def _loss_fits_monitoring(self) -> Scenario:
        loss, mon = self.meters.reading_loss, self.monitoring
        if loss is not None and (mon.shedding is not None or mon.remote is not None):
            raise _problem(
                "lost readings are not modelled together with monitoring.shedding or "
                "monitoring.remote (their gateways assume every reading arrives)",
                "null (no loss) or a scenario without shedding and remote",
                at="meters.reading_loss")
        dark = None if loss is None else loss.dark
        if dark is not None and dark.start_minute >= self.dr_program.end_minute:
            raise _problem(
                f"dark.start {dark.start} is not before the end of the DR program "
                f"({self.dr_program.end}), the readings modelled", "a clock time before "
                f"{self.dr_program.end} (earlier than {self.dr_program.start}: dark through "
                "the whole program)", at="meters.reading_loss.dark.start")
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

    def with_groups_of(self, households: int, group_size: int) -> Scenario:
        """The same scenario as ``households / group_size`` groups of ``group_size`` each.

        The layout of Figure 6.13 (§6.3.3: "every 10,000 consumers form a group"): groups
        G001, G002, ... (zero-padded to the width of the count, at least three digits), in
        the base's style (sizes, or consecutive ranges); group i takes every other setting
        (follow-through, drop, incentive_u) of the base's group i mod k, k = the base's
        number of groups, so the base's pattern repeats. Like :meth:`with_households`, a
        reduction goal in kWh scales with the households; the reference results are dropped
        unless the groups stay the same. ScenarioError if the sizes do not fit.
        """
        source = str(self.source_path) if self.source_path else "<scenario>"
        problem = _layout_problem(households, group_size)
        if problem is not None:
            raise ScenarioError(source, [problem])
        count = int(households) // int(group_size)
        width = max(3, len(str(count)))
        groups = [self._repeated_group(i, f"G{i + 1:0{width}d}", int(group_size))
                  for i in range(count)]
        return self._regrouped(int(households), groups)

    def _repeated_group(self, i: int, name: str, size: int) -> Group:
        """Group ``i`` of a layout in groups of ``size``: the base's group i mod k renamed and
        resized, in the base's style (ranges are consecutive)."""
        base = self.groups[i % len(self.groups)]
        if self.groups[0].range is not None:
            return base.model_copy(update={"name": name, "size": None,
                                           "range": (i * size + 1, (i + 1) * size)})
        return base.model_copy(update={"name": name, "size": size, "range": None})

    def _regrouped(self, households: int, groups: list[Group]) -> Scenario:
        """The scenario with other households and groups: a kWh goal scaled with the
        households, the reference results dropped unless the groups are the same."""
        data = self.model_dump()
        data["households"] = households
        data["groups"] = [g.model_dump() for g in groups]
        goal = self.dr_program.reduction_goal_kwh
        if goal != "expected":
            data["dr_program"]["reduction_goal_kwh"] = goal * households / self.households
        if groups != list(self.groups):
            data["reference"] = None
        regrouped = Scenario.model_validate(data)
        return regrouped.model_copy(update={"source_path": self.source_path})

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


def _whole(value: Any) -> bool:
    """An integer (numpy's too), not a boolean."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _layout_problem(households: Any, group_size: Any) -> tuple[str, str, str] | None:
    """Why ``households`` cannot be laid out in groups of ``group_size`` (a ScenarioError
    problem), or None (Scenario.with_groups_of)."""
    if not _whole(group_size) or not 1 <= group_size <= MAX_HOUSEHOLDS:
        return ("group_size", f"expected a number of households per group, got "
                              f"{_show(group_size)}", f"an integer from 1 to {MAX_HOUSEHOLDS}")
    size = int(group_size)
    top = size * min(MAX_GROUPS, MAX_HOUSEHOLDS // size)
    accepted = f"a multiple of the group size {size} from {size} to {top}"
    if not _whole(households):
        return ("households", f"expected an integer, got {_show(households)}", accepted)
    n = int(households)
    if n < size:
        return ("households", f"{n} households make no group of {size}", accepted)
    if n % size:
        return ("households", f"{n} households do not divide into groups of {size} "
                              f"({n % size} left over)", accepted)
    if n // size > MAX_GROUPS:
        return ("households", f"{n} households in groups of {size} make {n // size} groups, "
                              f"more than {MAX_GROUPS}", accepted)
    if n > MAX_HOUSEHOLDS:
        return ("households", f"{n} households are more than {MAX_HOUSEHOLDS}", accepted)
    return None
