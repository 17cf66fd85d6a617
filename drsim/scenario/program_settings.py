"""The scenario's program and settlement blocks: the DR program (:class:`DRProgram`), the
incentive of the second event (:class:`Incentive`, Eq. 6.5-6.8), the utility's M&V
(:class:`BaselineSettings`, :class:`DayOfAdjustment`,
:class:`ControlGroup`) and the published results to show
beside drsim's (:class:`Reference`)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, model_validator

from drsim.scenario.errors import show_value, value_problem
from drsim.scenario.fields import CLOCK_ACCEPTED, ClockTime, SettingsModel, described, minutes_of

__all__ = ["BaselineSettings", "ControlGroup", "DRProgram", "DayOfAdjustment", "Incentive",
           "Reference", "ReferenceOpVsBl", "ReferenceReductions", "RegressionBaseline",
           "XOfYDays"]


_GOAL_ACCEPTED = "a number of kWh > 0, or 'expected'"


def _finite(value: int | float) -> bool:
    """A finite float: an int beyond the int64 range too (numpy's isfinite refuses it as a
    type), unless it is beyond the float range.

    >>> _finite(2**64 + 128), _finite(10**400), _finite(float("inf"))
    (True, False, False)
    """
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _goal(value: Any) -> Any:
    """A goal in kWh (> 0) or 'expected' (one message for both readings)."""
    if value == "expected" or (isinstance(value, int | float) and not isinstance(value, bool)
                               and _finite(value) and value > 0):
        return value
    raise value_problem(f"expected a number of kWh > 0 or 'expected', got {show_value(value)}",
                   _GOAL_ACCEPTED)


class DRProgram(SettingsModel):
    """The (first) DR program of the day (Table 6.2, "DR program")."""

    start: ClockTime = described(
        "Start time t_start of the DR program, clock time HH:MM (Table 6.2: 6:30 PM).",
        accepted=CLOCK_ACCEPTED, default="18:30",
    )
    end: ClockTime = described(
        "End time t_end of the DR program, clock time HH:MM, after start on the same day "
        "(Table 6.2: 8:30 PM).",
        accepted=CLOCK_ACCEPTED + ", after start", default="20:30",
    )
    notice_minutes: int = described(
        "Minutes between the announcement of the program and its start.",
        default=60, ge=0, le=1440,
    )
    reduction_goal_kwh: Annotated[float | Literal["expected"], BeforeValidator(_goal)] = described(
        "Energy reduction goal λ of Eq. 6.1 over the program, in kWh, or 'expected': the "
        "utility's estimate of the complete response, Σ (B̂ − P̂) over the program and the "
        "participants (drsim.utility.baseline). The dissertation's goal equals its expected "
        "reduction (Table 6.2, §6.3.2: 83.28 MWh for 100,000 households).",
        accepted=_GOAL_ACCEPTED, default="expected",
    )
    incentive: float = described(
        "Incentive λ_o of the first DR event (Eq. 6.7), in an abstract unit (§6.3.2).",
        default=1.0, gt=0.0,
    )
    rebound_spread_minutes: int = described(
        "Deferred appliance starts and EV charging resume uniformly over this many minutes "
        "after the event ends (rebound).",
        default=60, ge=1, le=600,
    )
    precool_lead_minutes: int = described(
        "Minutes before the start in which following-through households may run loads early "
        "(pre-DR rebound, the reason for t_wait).",
        default=60, ge=0, le=600,
    )

    @model_validator(mode="after")
    def _times(self) -> DRProgram:
        if self.end_minute <= self.start_minute:
            raise value_problem(f"end {self.end} is not after start {self.start}",
                           f"a clock time after start ({self.start}) on the same day, up to "
                           "23:59", at=".end")
        if self.notice_minutes > self.start_minute:
            raise value_problem(
                f"{self.notice_minutes} minutes before start {self.start} is on the previous "
                "day", f"an integer from 0 to {self.start_minute} (the announcement must fall on "
                "the same day)", at=".notice_minutes")
        return self

    @property
    def start_minute(self) -> int:
        """t_start in minutes since midnight."""
        return minutes_of(self.start)

    @property
    def end_minute(self) -> int:
        """t_end in minutes since midnight."""
        return minutes_of(self.end)

    @property
    def announce_minute(self) -> int:
        """Announcement time in minutes since midnight (start - notice_minutes)."""
        return self.start_minute - self.notice_minutes

    @property
    def duration_minutes(self) -> int:
        """Length of the program in minutes (120 for 18:30-20:30)."""
        return self.end_minute - self.start_minute


class Incentive(SettingsModel):
    """Incentive module of the second DR event (§6.2.3, Eq. 6.5-6.8; drsim/utility/incentive.py).

    λ_o itself is ``dr_program.incentive``. The dissertation gives no monetary values (λ_o "is
    assigned an abstract unit", §6.3.2), so every cost below is in the same abstract
    ``currency`` and its default is illustrative, not the source's.
    """

    u_mappings: list[Annotated[float, Field(ge=1.0, le=2.0)]] = described(
        "The linear incentive-response factors u of Eq. 6.7 (§6.3.2: four mappings, 1.05, "
        "1.10, 1.15, 1.20); households of groups without incentive_u are split among them.",
        default_factory=lambda: [1.05, 1.10, 1.15, 1.20], min_length=1,
    )
    beta: float = described(
        "Over-compensation factor β of Eq. 6.7/6.8 (§6.3.2: tuned to 1.8).",
        default=1.8, ge=1.0, le=3.0,
    )
    second_event_delay_minutes: int = described(
        "Minutes from the utility's non-compliance prediction t_nc (the announcement of the "
        "second event) to its start (§6.3.2: ten minutes).", default=10, ge=0,
    )
    currency: str = described(
        "Name of the money unit of λ_o (dr_program.incentive), λ_new, the costs of Eq. 6.5 and "
        "the penalty C_nc of Eq. 6.6, shown in reports (§6.3.2: λ_o \"is assigned an abstract "
        "unit\").", default="unit", min_length=1,
    )
    cost_per_transmitted_event: float = described(
        "Monitoring cost of Eq. 6.5 per event transmitted between tiers (meter readings, user "
        "and group events: the communication cost of §6.3.3), in currency per event. Not "
        "given in the dissertation; illustrative default.", default=1e-5, ge=0.0,
    )
    cost_per_processed_event: float = described(
        "Monitoring cost of Eq. 6.5 per event or partial match processed by the CEP engines "
        "(the computation cost of §6.3.3), in currency per event. Not given in the "
        "dissertation; illustrative default.", default=1e-6, ge=0.0,
    )
    saved_cost_per_kwh: float = described(
        "C_saved of Eq. 6.5 per kWh: what the utility saves per kWh of peak energy the second "
        "event recovers, or pays for an alternative such as direct load control (§6.2.3.1), "
        "in currency per kWh. Not given in the dissertation; illustrative default.",
        default=0.25, ge=0.0,
    )
    penalty_margin: float = described(
        "How far the penalty C_nc lies above the strict bound of Eq. 6.6, as a fraction of "
        "λ_o: C_nc = max(p_inc·λ_new − λ_o, 0) + penalty_margin·λ_o (not in the dissertation).",
        default=0.05, gt=0.0, le=1.0,
    )
    target_min_follow_through: float = described(
        "Lower bound of the hatched region of Figure 6.9 (§6.2.3.2): a household whose "
        "observed first-event follow-through θ_red is below it \"did not respond at all\" and "
        "keeps θ_red in the second event. The figure gives no number; our choice.",
        default=0.05, ge=0.0, lt=1.0,
    )
    target_max_follow_through: float = described(
        "Upper bound of the hatched region of Figure 6.9 (§6.2.3.2): θ_new of Eq. 6.8 is "
        "capped here, and a household already at or above it (it \"responded fully\") keeps "
        "θ_red. The figure gives no number; our choice.",
        default=0.95, gt=0.0, le=1.0,
    )

    @model_validator(mode="after")
    def _region(self) -> Incentive:
        lo, hi = self.target_min_follow_through, self.target_max_follow_through
        if lo >= hi:
            raise value_problem(
                f"target_min_follow_through ({lo:g}) is not below target_max_follow_through "
                f"({hi:g})", f"a number in [0, {hi:g}) (below target_max_follow_through)",
                at=".target_min_follow_through")
        return self


class DayOfAdjustment(SettingsModel):
    """A day-of adjustment of B and P̂ (M&V practice): at the announcement the utility
    scales each household's estimates by its metered load over the hours before the
    notice against its estimated baseline over the same minutes (drsim.utility.baseline)."""

    window_minutes: int = described(
        "Minutes before the announcement whose readings are compared (from midnight at the "
        "earliest).", default=180, ge=15, le=1440,
    )
    cap: float = described(
        "The largest change of the estimates, as a share (0.2: scaled by 0.8 to 1.2, or "
        "shifted by at most 20 % of the estimated baseline's mean over the window).",
        default=0.2, ge=0.0, le=1.0,
    )
    kind: Literal["multiplicative", "additive"] = described(
        "'multiplicative' = scale B and P̂ by the ratio of readings to estimated baseline "
        "(NYISO's and CAISO's day-of adjustment); 'additive' = shift both by the mean "
        "difference of readings and estimated baseline (PJM's symmetric additive "
        "adjustment), capped as a share of the estimated baseline's mean there.",
        default="multiplicative",
    )


class XOfYDays(SettingsModel):
    """X-of-Y day matching (``baseline.method: x_of_y``; drsim.utility.settlement_baselines):
    the baseline is the mean of ``take`` of the ``days`` prior non-event days of the same
    households, season and day type (10 of 10: CAISO's 10-in-10; high 5 of 10: NYISO's
    customer baseline load)."""

    days: int = described(
        "Y: the prior non-event days of the evaluated day's season and day type looked at.",
        default=10, ge=1, le=60,
    )
    take: int = described(
        "X: how many of them are averaged, at most days (10 of 10: 10-in-10; 5 of 10: "
        "high 5 of 10).", default=10, ge=1, le=60,
    )
    rank: Literal["high"] = described(
        "Which days are averaged when take < days: 'high' = per household, those with the "
        "highest load over the event hours.", default="high",
    )

    @model_validator(mode="after")
    def _take_of_days(self) -> XOfYDays:
        if self.take > self.days:
            raise value_problem(f"take {self.take} is more than days {self.days}",
                                f"an integer from 1 to {self.days} (at most days)", at=".take")
        return self


class RegressionBaseline(SettingsModel):
    """The regression baseline (``baseline.method: regression``;
    drsim.utility.regression_baseline): per household, a least-squares fit of the load on
    time-of-day bins and day type over prior non-event days, in the spirit of CalTRACK's
    hourly method without its temperature terms (drsim simulates no weather)."""

    bin_minutes: Literal[15, 30, 60] = described(
        "Width of the time-of-day bins, minutes (60: hourly, CalTRACK's resolution).",
        default=60,
    )
    days: int = described(
        "Prior non-event days of the evaluated day's season and day type in the fit.",
        default=10, ge=1, le=60,
    )
    other_day_type_days: int = described(
        "Prior non-event days of each other day type (weekday, saturday, sunday) in the fit; "
        "they share the daily profile and shift its level. 0 = the evaluated day's type only.",
        default=0, ge=0, le=30,
    )


class ControlGroup(SettingsModel):
    """A control group (M&V by randomised control trial, §6.2.1): a random share of each
    group's enrolled households that the utility does not call. Their mean metered load
    estimates the group's baseline; the estimate is of the group, not of a household
    (drsim.utility.control_group)."""

    share: float = described(
        "Share of each group's enrolled households drawn at random into the control group "
        "(rounded to whole households, at least one called per group; 0.1 = 10 %). They "
        "receive no DR event, are not monitored and deliver no reduction; 0 = none.",
        default=0.1, ge=0.0, lt=1.0,
    )

    def households(self, size: int) -> int:
        """The control households of a group of ``size`` enrolled households [households]:
        ``round(share × size)``, half away from zero, leaving at least one household
        called."""
        return max(0, min(int(np.floor(self.share * size + 0.5)), size - 1))


class BaselineSettings(SettingsModel):
    """How the utility estimates the baseline B and the expected response P̂ (measurement
    and verification, M&V; drsim.utility.baseline). Estimates never use the evaluated day's
    follow-through decisions."""

    method: Literal["same_day", "model", "prior_days", "x_of_y", "regression"] = described(
        "'same_day' = the simulator's counterfactual of the evaluated day: B its no-DR load, "
        "P̂ the expectation over the household's follow-through decisions (perfect M&V, the "
        "dissertation's simulated setting); 'model' = the load model's expectation for the "
        "household; 'prior_days' = the mean of independently simulated prior days; "
        "'x_of_y' = X-of-Y day matching over prior non-event days (10-in-10, high 5 of 10; "
        "see x_of_y); 'regression' = a regression on time of day and day type over prior "
        "non-event days (see regression). With x_of_y and regression, P̂ is B scaled by "
        "the model's expected response.",
        default="same_day",
    )
    prior_days: int = described(
        "Number of prior days averaged when method is 'prior_days'.", default=10, ge=1, le=60,
    )
    x_of_y: XOfYDays = described(
        "The X-of-Y rule when method is 'x_of_y'.", default_factory=XOfYDays,
    )
    regression: RegressionBaseline = described(
        "The regression's bins and days when method is 'regression'.",
        default_factory=RegressionBaseline,
    )
    error: float = described(
        "M&V error: each household's B and P̂ share one multiplicative factor, lognormal "
        "with mean 1 and this coefficient of variation (0.05 = 5 %); 0 = none.",
        default=0.0, ge=0.0, le=1.0,
    )
    error_per_minute: float = described(
        "Per-minute M&V noise: B and P̂ of each household and minute share a further "
        "lognormal factor with mean 1 and this coefficient of variation; 0 = none.",
        default=0.0, ge=0.0, le=1.0,
    )
    day_of_adjustment: DayOfAdjustment | None = described(
        "Adjust B and P̂ at the announcement from each household's readings before the "
        "notice (published to meters and group leaders as one update of the profiles).",
        null_means="no adjustment", default=None,
    )
    control_group: ControlGroup | None = described(
        "Keep a random share of each group's households uncalled as a control group, whose "
        "mean metered load gives the group-level baseline B̂ the utility settles and "
        "predicts the deficit with (beside any method, which still gives the households' "
        "own B̂ and P̂ for the meter test).",
        null_means="no control group", default=None,
    )


class ReferenceReductions(SettingsModel):
    """Published reductions over the program of each pass, in MWh."""

    expected: float | None = described(
        "Reduction with the expected (complete) response, MWh.", default=None, gt=0.0)
    traditional: float | None = described(
        "Reduction of the traditional single DR event, MWh.", default=None, gt=0.0)
    adaptive: float | None = described(
        "Reduction of adaptive DR with the second event, MWh.", default=None, gt=0.0)


class ReferenceOpVsBl(SettingsModel):
    """Published results of the optimised monitoring OP against BL (§6.3.4, Figure 6.14)."""

    communication: float | None = described(
        "OP's communication over BL's.", default=None, gt=0.0)
    computation: float | None = described(
        "OP's computation over BL's.", default=None, gt=0.0)
    bl_prediction: ClockTime | None = described(
        "When BL predicted non-compliance, clock time HH:MM.", accepted=CLOCK_ACCEPTED,
        null_means="not given", default=None)
    prediction_minutes_after_bl: int | None = described(
        "OP's prediction minus BL's, minutes.", default=None)
    adaptive_share_of_bl: float | None = described(
        "OP's adaptive reduction over BL's.", default=None, gt=0.0)


class Reference(SettingsModel):
    """Published results of this scenario, shown beside drsim's in absolute and relative
    terms (``drsim run``, ``drsim report``); a scenario without one shows none."""

    source: str = described(
        "Where the numbers are published (author, title, section, table or figure).",
        min_length=1)
    reduction_mwh: ReferenceReductions = described(
        "Reductions over the program per pass, MWh.", default_factory=ReferenceReductions)
    utility_noncompliance_time: ClockTime | None = described(
        "When the utility predicted non-compliance (t_nc), clock time HH:MM.",
        accepted=CLOCK_ACCEPTED, null_means="not given", default=None)
    groups_compliant_at_prediction: int | None = described(
        "Groups still compliant at the prediction.", default=None, ge=0)
    op_vs_bl: ReferenceOpVsBl | None = described(
        "The optimised monitoring against BL, for a scenario that sheds load.",
        default=None)
