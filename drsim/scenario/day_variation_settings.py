"""The scenario's day-to-day variation that households share (:class:`DayVariation`): a
common day factor that moves every household of the region, or of a group, together on a
simulated day (drsim.household.day_variation; docs/model.md, "Day-to-day variation")."""

from __future__ import annotations

from drsim.scenario.fields import SettingsModel, described

__all__ = ["DayVariation"]


class DayVariation(SettingsModel):
    """A common day factor shared by the households of the region (or of each group).

    Off by default (``cv`` 0): the simulated days of different households are then
    independent, as in the dissertation's simulation (§6.3.1)."""

    cv: float = described(
        "Coefficient of variation of the common day factor, lognormal with mean 1, that "
        "scales the day's start counts of space heating and lighting (a temperature- and "
        "daylight-like factor); 0 = off: no common variation at all, timing included "
        "(docs/model.md, 'Day-to-day variation': 0.25 is about the day-to-day variation of "
        "heating degree days in an English January).",
        default=0.0, ge=0.0, le=1.0,
    )
    by_group: bool = described(
        "One factor (and one timing shift) per group instead of one for the whole region.",
        default=False,
    )
    timing_minutes: float = described(
        "Standard deviation of a common shift of the day's activity timing, in minutes: "
        "every household's activity-driven appliance starts and EV plug-ins move by the "
        "day's shift (a normal draw, cut at 4 standard deviations, whole minutes); acts only "
        "when cv > 0; 0 = no shift (docs/model.md, 'Day-to-day variation').",
        default=15.0, ge=0.0, le=60.0,
    )

    @property
    def active(self) -> bool:
        """Whether the common day factor is on (``cv`` > 0)."""
        return self.cv > 0.0
