"""The scenario's pydantic models: what each parameter means, its unit, default and bounds.

:class:`Scenario` is one DR experiment, with its scaling (:meth:`Scenario.with_households`,
:meth:`Scenario.with_groups_of`); its blocks are :class:`Group`, :class:`FollowThrough`,
:class:`ApplianceSettings`, :class:`EVSettings` here, :class:`DRProgram`,
:class:`Incentive`, :class:`BaselineSettings` and :class:`Reference`
(:mod:`drsim.scenario.program_settings`), :class:`DayVariation`
(:mod:`drsim.scenario.day_variation_settings`), :class:`Monitoring` with :class:`ExpectedShare`
and :class:`Meters` (:mod:`drsim.scenario.monitoring_settings`). Every name is importable
from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from drsim.scenario.day_variation_settings import DayVariation
from drsim.scenario.errors import ScenarioError, show_value, value_problem, value_problems
from drsim.scenario.fields import (
    MAX_CHUNK_SIZE,
    MAX_GROUPS,
    MAX_HOUSEHOLDS,
    MAX_SEED,
    NAME_ACCEPTED,
    ClockTime,
    SettingsModel,
    described,
    name_problem,
)
from drsim.scenario.monitoring_settings import (
    ApplianceQuery,
    DarkMeters,
    ExpectedShare,
    Meters,
    Monitoring,
    NetworkLatency,
    ProfileUpdates,
    ReadingLoss,
    RemoteData,
    Shedding,
)
from drsim.scenario.program_settings import (
    BaselineSettings,
    ControlGroup,
    DayOfAdjustment,
    DRProgram,
    Incentive,
    Reference,
    ReferenceOpVsBl,
    ReferenceReductions,
)

__all__ = [
    "MAX_CHUNK_SIZE",
    "MAX_GROUPS",
    "MAX_HOUSEHOLDS",
    "MAX_SEED",
    "MAX_FOLLOW_THROUGH_FACTOR",
    "ApplianceQuery",
    "ApplianceSettings",
    "BaselineSettings",
    "ControlGroup",
    "ClockTime",
    "DRProgram",
    "EVSettings",
    "ElectricHeating",
    "ExpectedShare",
    "FollowThrough",
    "Group",
    "Incentive",
    "Monitoring",
    "Reference",
    "ReferenceOpVsBl",
    "ReferenceReductions",
    "Scenario",
    "Shedding",
    "ProfileUpdates",
    "RemoteData",
    "NetworkLatency",
    "DayOfAdjustment",
    "DayVariation",
    "DarkMeters",
    "Meters",
    "ReadingLoss",
]

SEASON_MONTHS = {"winter": 1, "transition": 4, "summer": 7}  # a season's representative month
MAX_FOLLOW_THROUGH_FACTOR = 2.0  # the largest factor on θ_o: FollowThrough.scale, DREvent

# --------------------------------------------------------------------------------------------
# The settings blocks
# --------------------------------------------------------------------------------------------


class FollowThrough(SettingsModel):
    """How likely a household is to act on a DR request (its follow-through rate θ_o)."""

    distribution: str = described(
        "Where each household's expected follow-through rate θ_o is drawn from: 'survey' = the "
        "packaged survey distribution (§6.3.1, mean 0.45; each household takes a randomly "
        "chosen survey response), or a path to a YAML file, relative to the scenario file.",
        accepted="'survey' or a path to a follow-through YAML file",
        default="survey", min_length=1,
    )
    scale: float = described(
        "Multiplies each household's θ_o (results clamped to [0, 1]); 1 = as surveyed.",
        default=1.0, ge=0.0, le=MAX_FOLLOW_THROUGH_FACTOR,
    )


_USE_SCENARIO = "use the scenario's value"
GROUP_NAME_ACCEPTED = "printable text of 1 to 100 characters, e.g. G1"


class Group(SettingsModel):
    """A group of households monitored by one group leader (Table 6.2, "Grouping")."""

    name: str = described("Unique name of the group, e.g. G1.", accepted=GROUP_NAME_ACCEPTED,
                          min_length=1, max_length=100)
    size: int | None = described(
        "Number of households in the group. Give either size (for every group) or range.",
        accepted=f"an integer from 1 to {MAX_HOUSEHOLDS} (or give range instead)",
        default=None, ge=1, le=MAX_HOUSEHOLDS,
    )
    range: tuple[int, int] | None = described(
        "[first, last]: 1-based consumer numbers, both inclusive, as in Table 6.2 "
        "(\"consumer No.1-No.10,000\" is [1, 10000]). Give either range (for every group) or "
        "size.",
        accepted="[first, last]: two consumer numbers with 1 <= first <= last (or give size "
                 "instead)",
        default=None,
    )
    follow_through: FollowThrough | None = described(
        "The group's own follow-through distribution; null = the scenario's.",
        null_means=_USE_SCENARIO, default=None,
    )
    @field_validator("name")
    @classmethod
    def _printable(cls, name: str) -> str:
        """A name shown in tables and figures: no control characters, not blank."""
        if not name.strip() or not name.isprintable():
            raise value_problem(f"{show_value(name)} is blank or holds control characters",
                                GROUP_NAME_ACCEPTED)
        return name

    follow_through_drop: float | None = described(
        "The group's own drop of the observed follow-through (θ_red = θ_o x (1 - drop)); "
        "null = the scenario's.",
        null_means=_USE_SCENARIO, default=None, ge=0.0, lt=1.0,
    )
    incentive_u: float | None = described(
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
            raise value_problem("neither size nor range given", accepted)
        if self.size is not None and self.range is not None:
            raise value_problem("both size and range given", accepted)
        if self.range is not None:
            first, last = self.range
            if first < 1:
                raise value_problem(f"the range starts at consumer {first}; consumer numbers start "
                               "at 1", "[first, last] with 1 <= first <= last", at=".range")
            if last < first:
                raise value_problem(f"the range [{first}, {last}] ends before it starts",
                               "[first, last] with 1 <= first <= last", at=".range")
        return self

    @property
    def household_count(self) -> int:
        """Number of households in the group (from size or range)."""
        if self.size is not None:
            return self.size
        assert self.range is not None
        return self.range[1] - self.range[0] + 1


class ElectricHeating(SettingsModel):
    """Electric space heating: the share of households with each system (their load: the
    catalogue's ``storage_heater`` and ``other_space_heating``)."""

    storage_heaters: float = described(
        "Fraction of households heated by night storage heaters (CREST's appliance table, "
        "Richardson et al. 2010: 2.8 % of UK dwellings).", default=0.028, ge=0.0, le=1.0,
    )
    direct_heaters: float = described(
        "Fraction of households with direct electric space heaters (CREST's 'other electric "
        "space heating', Richardson et al. 2010: 2.6 % of UK dwellings).",
        default=0.026, ge=0.0, le=1.0,
    )


class ApplianceSettings(SettingsModel):
    """The households' appliances (§6.3.1)."""

    catalogue: str = described(
        "The appliance catalogue: 'default' = the packaged catalogue (drsim/data), or a path "
        "to a catalogue YAML file, relative to the scenario file.",
        accepted="'default' or a path to a catalogue YAML file",
        default="default", min_length=1,
    )
    per_household_min: int = described(
        "Fewest appliances per household (§6.3.1: uniformly 20 to 25).", default=20, ge=1, le=60,
    )
    per_household_max: int = described(
        "Most appliances per household (§6.3.1: uniformly 20 to 25).", default=25, ge=1, le=60,
    )
    electric_heating: ElectricHeating = described(
        "Ownership of the electric space-heating systems, owned apart from the 20-25 drawn "
        "appliances (they belong to the dwelling).", default_factory=ElectricHeating)

    @model_validator(mode="after")
    def _min_le_max(self) -> ApplianceSettings:
        if self.per_household_min > self.per_household_max:
            raise value_problem(
                f"per_household_min ({self.per_household_min}) is greater than "
                f"per_household_max ({self.per_household_max})",
                "per_household_min <= per_household_max, both integers from 1 to 60",
                at=".per_household_min",
            )
        return self


class EVSettings(SettingsModel):
    """Electric vehicles (§6.3.1)."""

    penetration: float = described(
        "Fraction of households with an EV (§6.3.1: 22.48 %, the UK 2030 forecast).",
        default=0.2248, ge=0.0, le=1.0,
    )
    data: str = described(
        "EV parameter file (sessions per day, plug-in times, energy, charger power): "
        "'default' = the packaged one, or a path relative to the scenario file.",
        accepted="'default' or a path to an EV parameter YAML file",
        default="default", min_length=1,
    )
    pause_in_progress: bool = described(
        "A following-through EV that is already charging when a DR event starts pauses until "
        "the event ends (false: only sessions that would start during the event are deferred).",
        default=True,
    )


# --------------------------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------------------------


class Scenario(SettingsModel):
    """One DR experiment: households, groups, load model, DR program, monitoring, incentive."""

    name: str = described("Name of the scenario, used in result folders (results/<name>) "
                          "and reports.", accepted=NAME_ACCEPTED)
    seed: int = described(
        "Seed of all random streams; the same seed gives the same households and loads.",
        accepted=f"an integer from 0 to {MAX_SEED} (2**63 - 1)", ge=0, le=MAX_SEED,
    )
    households: int = described(
        "Number of households (DR participants; Table 6.2: 100,000).", ge=1, le=MAX_HOUSEHOLDS,
    )
    chunk_size: int = described(
        "Households per Spark task (the unit of parallelism and of task memory); chunks never "
        "straddle a group, so a group's last chunk may be smaller.",
        default=5000, ge=1, le=MAX_CHUNK_SIZE,
    )
    groups: list[Group] = described(
        "The groups, in household order. Either every group gives size (sizes add up to "
        "households) or every group gives range (contiguous, from consumer 1 to households).",
        min_length=1, max_length=MAX_GROUPS,
    )
    season: Literal["winter", "transition", "summer"] | Annotated[int, Field(ge=1, le=12)] = (
        described(
            "The simulated day's season: winter (a January day), transition (April), summer "
            "(July), or a month 1-12. It sets the lighting (daylight), the storage heaters "
            "(heating season) and the direct heaters (monthly factor); docs/model.md, "
            "'Season and day type'.",
            accepted="winter, transition, summer, or a month from 1 to 12",
            default="winter",
        ))
    day_type: Literal["weekday", "saturday", "sunday"] = described(
        "The simulated day's type: weekday, or saturday / sunday (CREST's weekend activity "
        "and occupancy tables).", default="weekday")
    appliances: ApplianceSettings = described(
        "Appliance settings (§6.3.1).", default_factory=ApplianceSettings)
    ev: EVSettings = described("EV settings (§6.3.1).", default_factory=EVSettings)
    day_variation: DayVariation = described(
        "Day-to-day variation that households share: a common day factor on heating, "
        "lighting and activity timing (off by default).", default_factory=DayVariation)
    follow_through: FollowThrough = described(
        "Expected follow-through rates θ_o of all groups without their own.",
        default_factory=FollowThrough)
    follow_through_drop: float = described(
        "Drop of the observed follow-through: θ_red = θ_o x (1 - drop) (§6.3.2: 40 %).",
        default=0.4, ge=0.0, lt=1.0,
    )
    dr_program: DRProgram = described("The first DR program (Table 6.2).",
                                       default_factory=DRProgram)
    monitoring: Monitoring = described("Compliance monitoring (Table 6.2).",
                                        default_factory=Monitoring)
    meters: Meters = described("The meters' link to the head-end: lost readings.",
                                default_factory=Meters)
    incentive: Incentive = described("Second-event incentive module (§6.2.3).",
                                      default_factory=Incentive)
    baseline: BaselineSettings = described("Baseline and expected-response estimation.",
                                            default_factory=BaselineSettings)
    reference: Reference | None = described(
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

    @field_validator("name", mode="before")
    @classmethod
    def _a_name(cls, value: Any) -> Any:
        """A name, not a path: it names the default result folder."""
        problem = name_problem(value)
        if problem is not None:
            raise value_problem(problem, NAME_ACCEPTED)
        return value

    @field_validator("season", mode="before")
    @classmethod
    def _one_season(cls, value: Any) -> Any:
        """One error line for a bad season, not one per member of the union."""
        if value in SEASON_MONTHS or (type(value) is int and 1 <= value <= 12):
            return value
        raise PydanticCustomError("season", "not a season or a month")

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
                raise value_problems(problems)
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
            raise value_problems(problems)
        return groups

    @model_validator(mode="after")
    def _reference_fits(self) -> Scenario:
        ref = self.reference
        n = len(self.groups)
        if ref is not None and (ref.groups_compliant_at_prediction or 0) > n:
            raise value_problem(
                f"{ref.groups_compliant_at_prediction} groups compliant, but the scenario has "
                f"{n}", f"an integer from 0 to {n}",
                at="reference.groups_compliant_at_prediction")
        return self

    @model_validator(mode="after")
    def _monitoring_fits_program(self) -> Scenario:
        duration = self.dr_program.duration_minutes
        if self.monitoring.t_wait_minutes >= duration:
            raise value_problem(
                f"the first test (start + {self.monitoring.t_wait_minutes} minutes) is not "
                f"before the end of the {duration}-minute DR program",
                f"an integer from 0 to {duration - 1}", at="monitoring.t_wait_minutes")
        return self

    @model_validator(mode="after")
    def _loss_fits_monitoring(self) -> Scenario:
        loss, mon = self.meters.reading_loss, self.monitoring
        if loss is not None and (mon.shedding is not None or mon.remote is not None):
            raise value_problem(
                "lost readings are not modelled together with monitoring.shedding or "
                "monitoring.remote (their gateways assume every reading arrives)",
                "null (no loss) or a scenario without shedding and remote",
                at="meters.reading_loss")
        dark = None if loss is None else loss.dark
        if dark is not None and dark.start_minute >= self.dr_program.end_minute:
            raise value_problem(
                f"dark.start {dark.start} is not before the end of the DR program "
                f"({self.dr_program.end}), the readings modelled", "a clock time before "
                f"{self.dr_program.end} (earlier than {self.dr_program.start}: dark through "
                "the whole program)", at="meters.reading_loss.dark.start")
        return self

    # -- derived helpers ----------------------------------------------------------------------

    @property
    def month(self) -> int:
        """The simulated day's month, 1-12: the ``season``'s (winter 1, transition 4, summer
        7) or the month it names."""
        return SEASON_MONTHS.get(self.season, self.season)  # type: ignore[arg-type]

    def group_sizes(self) -> list[int]:
        """Households per group, in order."""
        return [g.household_count for g in self.groups]

    def control_group_sizes(self) -> list[int]:
        """Control households per group (``baseline.control_group``; all 0 without one):
        enrolled households the utility does not call (drsim.utility.control_group)."""
        control = self.baseline.control_group
        return [0 if control is None else control.households(n) for n in self.group_sizes()]

    def called_group_sizes(self) -> list[int]:
        """Households per group that the utility calls and monitors: the group's enrolled
        households less its control households (:meth:`control_group_sizes`)."""
        return [n - c for n, c in zip(self.group_sizes(), self.control_group_sizes(),
                                      strict=True)]

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
                              f"{show_value(group_size)}", f"an integer from 1 to {MAX_HOUSEHOLDS}")
    size = int(group_size)
    top = size * min(MAX_GROUPS, MAX_HOUSEHOLDS // size)
    accepted = f"a multiple of the group size {size} from {size} to {top}"
    if not _whole(households):
        return ("households", f"expected an integer, got {show_value(households)}", accepted)
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
