"""The scenario's monitoring and meter blocks: Listings 6.1-6.3's parameters and threshold
(:class:`Monitoring`, :class:`ExpectedShare`), load shedding at the gateways
(:class:`Shedding`), the profiles fetched from the utility (:class:`RemoteData`,
:class:`NetworkLatency`, :class:`ProfileUpdates`), lost readings (:class:`Meters`,
:class:`ReadingLoss`, :class:`DarkMeters`), appliance-level queries (:class:`ApplianceQuery`)
and the monitoring methods under baseline error (:class:`ToleranceSettings`,
:class:`AggregateSettings`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ValidationError, model_validator

from drsim.scenario.errors import TOP_LEVEL, show_value, value_problem, value_problems
from drsim.scenario.explain import explain_errors
from drsim.scenario.fields import (
    CLOCK_ACCEPTED,
    ClockTime,
    SettingsModel,
    described,
    minutes_of,
)

__all__ = ["QUERY_NAMES", "AggregateSettings", "ApplianceQuery", "DarkMeters",
           "ExpectedShare", "Meters", "Monitoring", "NetworkLatency", "ProfileUpdates",
           "ReadingLoss", "RemoteData", "Shedding", "ToleranceSettings"]

#: the DR queries a scenario may replace (``monitoring.queries``), Listings 6.1-6.3: the
#: keys of drsim.utility.monitoring.QUERIES
QUERY_NAMES = ("meter", "group_alert", "group", "utility_alert", "utility")


class ExpectedShare(SettingsModel):
    """γ_user from the expected response (Listing 6.2's threshold per group and test time).

    At each test time the utility estimates the share of a group's households that the
    meter query flags when every household responds as expected (θ_o), from ``replicas``
    simulated replicas of the follow-through decisions over the schedule its M&V method
    assumes, and adds ``z`` standard errors of a group of the group's size
    (drsim.utility.threshold).
    """

    method: Literal["expected"] = described(
        "'expected': the share flagged under the expected response, estimated per group and "
        "test time.")
    z: float = described(
        "Standard errors above the expected share at which a group alerts; about the "
        "one-sided false-alarm rate of a test (3: 0.13 %).", default=3.0, ge=0.0, le=10.0,
    )
    replicas: int = described(
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
            raise value_problems([("." + path if path != TOP_LEVEL else "", problem, accepted)
                             for path, problem, accepted in explain_errors(exc, ExpectedShare)]
                            ) from None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 < value <= 1.0:
        return float(value)
    raise value_problem(f"expected a ratio in (0, 1] or a mapping, got {show_value(value)}",
                   _GAMMA_ACCEPTED)


class Shedding(SettingsModel):
    """Hybrid load shedding in the monitoring (the "OP" configuration of §6.3.4, Ch. 4;
    drsim.utility.shedding): Listing 6.1 runs on gateways, each serving a fixed number of meters
    on a modelled device, and sheds readings (not reported: neither sent nor evaluated)
    and runs of failed tests to keep its latency under a bound; the group leaders and the
    utility shed the user and group events they would receive on devices of their own
    (drsim.utility.tier_shedding)."""

    strategy: Literal["Hybrid", "HyI", "HyS", "RI", "RS"] = described(
        "What to shed: Hybrid (readings and runs from one cost model, §4.2.5), HyI "
        "(readings), HyS (runs), or the random baselines RI (readings) and RS (runs).",
        default="Hybrid",
    )
    bound: float = described(
        "The latency bound as a share of each gateway's unshed latency (§6.3.4: 0.5).",
        default=0.5, gt=0.0, le=1.0,
    )
    statistic: Literal["avg", "p95"] = described(
        "The latency the bound applies to: the average or the 95th percentile of the "
        "gateway's recent readings.", default="avg",
    )
    gateway_households: int = described(
        "Meters per gateway, counted from each group's first household (the last gateway of "
        "a group may serve fewer); chunks are cut at gateway boundaries.",
        default=250, ge=1,
    )
    utilisation: float = described(
        "How busy the unshed run keeps each gateway's modelled device: its cost per unit of "
        "work is set from that (the less powerful edge devices of §6.3.4).",
        default=0.9, gt=0.0, lt=1.0,
    )
    classes: int = described(
        "Classes of runs per automaton state in the cost model (K-means, §4.3.2).",
        default=4, ge=1, le=20,
    )
    slices: int = described(
        "Time slices of the query window in the cost model (§4.3.1).", default=4, ge=1, le=24,
    )
    tiers: list[Literal["meter", "group", "utility"]] = described(
        "The tiers that shed (§6.3.4 sheds all three): meter (gateways, Listing 6.1), group "
        "(group leaders, Listing 6.2), utility (Listing 6.3; drsim.utility.tier_shedding); "
        "a tier not listed runs unshed.",
        default=["meter", "group", "utility"], min_length=1,
    )

    @model_validator(mode="after")
    def _distinct_tiers(self) -> Shedding:
        if len(set(self.tiers)) != len(self.tiers):
            raise value_problem(f"a tier is listed twice: {self.tiers}",
                                "distinct tiers among meter, group, utility", at=".tiers")
        return self


class NetworkLatency(SettingsModel):
    """The latency of one fetch over the metering network, in seconds (advanced metering
    networks answer in seconds; cep_core.remote.LatencyModel)."""

    kind: Literal["fixed", "uniform", "lognormal"] = described(
        "fixed (always `seconds`), uniform (from low_seconds to high_seconds) or lognormal "
        "(median `seconds`, shape `sigma`: a long tail of slow answers).", default="lognormal",
    )
    seconds: float = described(
        "The latency of kind fixed, or the median of kind lognormal [s].",
        default=2.0, ge=0.0, le=3600.0,
    )
    low_seconds: float = described(
        "The shortest latency of kind uniform [s].", default=1.0, ge=0.0, le=3600.0)
    high_seconds: float = described(
        "The longest latency of kind uniform [s].", default=5.0, ge=0.0, le=3600.0)
    sigma: float = described(
        "The shape of kind lognormal (the standard deviation of the latency's logarithm).",
        default=0.5, ge=0.0, le=3.0,
    )

    @model_validator(mode="after")
    def _range(self) -> NetworkLatency:
        if self.kind == "uniform" and self.low_seconds > self.high_seconds:
            raise value_problem(f"low_seconds ({self.low_seconds}) is above high_seconds "
                           f"({self.high_seconds})", f"a number up to {self.high_seconds}",
                           at=".low_seconds")
        return self


class ProfileUpdates(SettingsModel):
    """The utility keeps updating the profiles it serves through the evening (§6.3.4;
    drsim.utility.profile_updates): from the announcement on, every `every_minutes`, it
    re-estimates each household's scale from its readings before the notice, as the day-of
    adjustment does, and publishes a new version of the elements whose value changed."""

    every_minutes: int | None = described(
        "Minutes between two updates, the first at the announcement.", default=None,
        ge=1, le=1440, null_means="every test interval δ (monitoring.delta_minutes)",
    )
    window_minutes: int = described(
        "Minutes of readings before the notice the re-estimation reads (from midnight at "
        "the earliest; as baseline.day_of_adjustment).", default=180, ge=15, le=1440,
    )
    cap: float = described(
        "The largest change of a household's profiles, as a share (0.2: scaled by 0.8 to "
        "1.2; as baseline.day_of_adjustment).", default=0.2, ge=0.0, le=1.0,
    )


class RemoteData(SettingsModel):
    """The utility's M&V profiles as remote data (Ch. 5, EIRES; drsim.utility.fetching): meters
    (at their gateways) fetch λ[houseID, time], group leaders γ[groupID, time], one element
    per household or group and test time, over the metering network."""

    strategy: Literal["BL1", "BL2", "PFetch", "LzEval", "Hybrid"] = described(
        "How fetches are made (§5.4, §5.6.1): BL1 blocks on every fetch, no cache; BL2 blocks "
        "on a cache miss; PFetch prefetches the next test's element and blocks on a miss; "
        "LzEval decides each reading when its element arrives, without blocking the gateway; "
        "Hybrid prefetches and decides lazily.", default="Hybrid",
    )
    latency: NetworkLatency = described(
        "The latency of one fetch over the metering network.",
        default_factory=NetworkLatency,
    )
    cache_elements: int = described(
        "Profile elements a gateway or group leader keeps (least recently used out first; "
        "BL1 keeps none).", default=500, ge=0, le=10_000_000,
    )
    element_bytes: int = described(
        "Bytes of one fetched element (a household or group and a test time, and the value).",
        default=16, ge=1, le=1_000_000,
    )
    gateway_households: int = described(
        "Meters per gateway, counted from each group's first household (as for load "
        "shedding; chunks are cut at gateway boundaries).", default=250, ge=1,
    )
    updates: ProfileUpdates | None = described(
        "The utility's updates of the profiles while the program runs, served to the "
        "optimised monitoring (OP) only; {} for the defaults.",
        null_means="the profiles published once, at the announcement", default=None,
    )


class DarkMeters(SettingsModel):
    """Meters that stop reporting for good (a dead modem, a network outage): a share of
    the households, drawn per household, lose every reading from a clock time on."""

    share: float = described(
        "The share of households whose meters go dark.", gt=0.0, le=1.0)
    start: ClockTime = described(
        "The clock time (HH:MM) of the first reading they lose.", accepted=CLOCK_ACCEPTED)

    @property
    def start_minute(self) -> int:
        """Minutes since midnight of ``start``."""
        return minutes_of(self.start)


class ReadingLoss(SettingsModel):
    """Meter readings lost on their way to the head-end (drsim.utility.readings): every scheduled
    reading of the program (1-minute and settlement readings alike) is lost with the
    model, the same in every pass and for any chunking (the counter-based streams of
    (household, "loss", slot)). A lost reading is not sent; the utility's M&V estimates
    do not change (docs/decisions.md, "Lost meter readings")."""

    rate: float = described(
        "The long-run share of readings lost (0.05 = 5 %).", ge=0.0, lt=1.0,
        accepted="a number in [0, 1)")
    burst_length: float = described(
        "1: independent losses; above 1: the mean length of a burst of lost readings, in "
        "reading intervals (a Gilbert-Elliott chain with the same long-run rate).",
        default=1.0, ge=1.0, le=10_000.0, accepted="a number >= 1 (1: independent losses)")
    dark: DarkMeters | None = described(
        "Meters that go dark: {share, start}, on top of the rate.",
        null_means="no meter goes dark", default=None)

    @model_validator(mode="after")
    def _chain(self) -> ReadingLoss:
        # P(good → bad) = rate / ((1 − rate) · burst_length) must be a probability
        if self.burst_length > 1.0 and self.rate / (1.0 - self.rate) > self.burst_length:
            low = self.rate / (1.0 - self.rate)
            raise value_problem(
                f"burst_length {self.burst_length:g} is too short for rate {self.rate:g}: "
                f"bursts that short cannot lose that share of the readings",
                f"a number >= rate / (1 - rate) = {low:.4g}", at=".burst_length")
        return self

    @property
    def active(self) -> bool:
        """Whether any reading can be lost (a rate above 0 or meters that go dark)."""
        return self.rate > 0.0 or self.dark is not None


class Meters(SettingsModel):
    """The smart meters' link to the head-end (§6.2.2: readings every minute while
    monitored)."""

    reading_loss: ReadingLoss | None = described(
        "Readings lost on the way: {rate, burst_length, dark}.",
        null_means="every reading arrives", default=None)


class ApplianceQuery(SettingsModel):
    """A utility query over what the households do (appliance starts, EV plug-ins, pauses
    and resumes, the DR signals they receive, readings over their baseline:
    drsim.utility.appliance_monitoring), per household, with an adaptive evaluation plan
    (cep_core.adaptive, US 11,693,862 B2)."""

    query: str = described(
        "The query text (cep_core's language), partitioned by household (SAME[houseID]); "
        "event types: start_<load category>, ev_plug, ev_pause, ev_resume, dr_notice, "
        "dr_start, dr_end, over_baseline.",
        accepted="a pattern query with SAME[houseID]",
    )
    plan: Literal["text", "order", "tree"] = described(
        "The evaluation plan: the text order, a lazy order or a join tree chosen from "
        "sliding-window statistics.", default="order",
    )
    adapt: dict[str, Any] | None = described(
        "When to plan again (cep_core's adapt option: method static, unconditional, "
        "threshold or invariant; t, d, K, window and period in minutes).",
        accepted="a mapping of adapt options", null_means="a static plan",
        default_factory=lambda: {"method": "invariant", "d": 0.5, "window": 30,
                                 "period": 5},
    )


class ToleranceSettings(SettingsModel):
    """The meter test of Eq. 6.4 with a band from the M&V method's known error
    (``monitoring.method: tolerance``; drsim.utility.tolerance_method): a test fails when
    the household's cumulative load exceeds its cumulative P̂ by more than z standard
    deviations of P̂'s error over the minutes so far."""

    z: float = described(
        "Standard deviations of the expected response's error above it at which a test "
        "fails (1.64: a one-sided 5 % test per household and test).",
        default=1.64, ge=0.0, le=10.0,
    )
    cv: float | None = described(
        "What the utility knows of its M&V method's error: the coefficient of variation "
        "of a household's expected response [1].", default=None, ge=0.0, le=1.0,
        null_means="baseline.error, the simulated M&V error's size",
    )


class AggregateSettings(SettingsModel):
    """A one-sided CUSUM at each group leader (``monitoring.method: aggregate``;
    drsim.utility.aggregate_method): of the group's cumulative metered load against its
    aggregate P̂, standardised by the aggregate's standard error; the group event is
    raised when the statistic crosses h (Page 1954; Montgomery, Introduction to
    Statistical Quality Control, §9.1)."""

    k: float = described(
        "The reference value k of the CUSUM in standard errors: half the shift to be "
        "detected quickly (Montgomery §9.1: k = δ/2; 1.5 for a shift of 3 standard "
        "errors). A household's error lasts the day, so an expected group crosses h by "
        "the n-th test with probability 1 - Φ(k + h/n) (4 % with the defaults and 20 "
        "tests).", default=1.5, ge=0.0, le=10.0,
    )
    h: float = described(
        "The decision interval h in standard errors (Montgomery §9.1: 4 or 5).",
        default=5.0, gt=0.0, le=100.0,
    )
    cv: float | None = described(
        "What the utility knows of its M&V method's error per household: the coefficient "
        "of variation of a household's expected response [1].", default=None, ge=0.0,
        le=1.0, null_means="baseline.error, the simulated M&V error's size",
    )
    correlated_share: float = described(
        "The share of the households' M&V error variance they share (weather, the day: "
        "an error every household of the group makes together) [1].",
        default=0.0, ge=0.0, le=1.0,
    )
    floor: float = described(
        "A floor of the aggregate's standard error as a share of its cumulative P̂, so that "
        "a method without a known error does not test against zero [1].",
        default=0.01, gt=0.0, le=1.0,
    )
    utility: Literal["groups", "pooled"] = described(
        "What the utility tests: 'groups' = Listing 6.3 over the groups the leaders' "
        "CUSUMs latched (more than gamma_group of them, m_utility alerts in a row); "
        "'pooled' = one CUSUM of the summed excess of every group over its reference, "
        "standardised by the root of the summed variances (drsim.utility.pooled_rule), "
        "its alert held m_utility ticks.", default="groups",
    )
    utility_k: float | None = described(
        "The pooled CUSUM's reference value [standard errors].", default=None, ge=0.0,
        le=10.0, null_means="k, the groups' reference value",
    )
    utility_h: float | None = described(
        "The pooled CUSUM's decision interval [standard errors].", default=None, gt=0.0,
        le=100.0, null_means="h, the groups' decision interval",
    )


class Monitoring(SettingsModel):
    """Compliance monitoring of the three tiers (Table 6.2, "Monitoring"; Listings 6.1-6.3)."""

    t_wait_minutes: int = described(
        "Minutes after t_start before the first household test, so that pre-DR rebound has "
        "passed (Table 6.2: 20).", default=20, ge=0, le=1440,
    )
    delta_minutes: int = described(
        "Minutes δ between household compliance tests (Table 6.2: 5).", default=5, ge=1, le=1440,
    )
    m_user: int = described(
        "Consecutive failed household tests before a user non-compliance event "
        "(Table 6.2: 3).", default=3, ge=1,
    )
    m_group: int = described(
        "Consecutive group alert times before a group non-compliance event (Table 6.2: 3).",
        default=3, ge=1,
    )
    m_utility: int = described(
        "Consecutive utility alert times before a utility non-compliance prediction "
        "(Table 6.2: 3).", default=3, ge=1,
    )
    gamma_user: Annotated[float | ExpectedShare, BeforeValidator(_gamma_user)] = described(
        "The share of a group's households flagged non-compliant above which the group "
        "alerts (Listing 6.2; not given in Table 6.2): a constant ratio, as printed, or "
        "{method: expected, z: Z}: per group and test time, the utility's estimate of the "
        "share flagged under the expected response plus Z standard errors for the group's "
        "size (drsim.utility.threshold; docs/model.md, \"The threshold\").",
        accepted=_GAMMA_ACCEPTED,
        default_factory=lambda: ExpectedShare(method="expected"),
    )
    gamma_group: float = described(
        "The utility alerts when more than this fraction of the groups are non-compliant "
        "(Listing 6.3; Table 6.2: 0.4).", default=0.4, gt=0.0, le=1.0,
    )
    reading_interval_minutes: int = described(
        "Minutes between smart-meter readings while monitoring (§6.2.2: 1).",
        default=1, ge=1, le=1440,
    )
    settlement_interval_minutes: int = described(
        "Minutes between readings once a group (or the utility) is predicted non-compliant: "
        "the settlement rate (§6.2.2: 15).", default=15, ge=1, le=1440,
    )
    queries: dict[str, str] = described(
        "Optional replacements of the DR query texts, keyed by query name (" +
        ", ".join(QUERY_NAMES) + ").",
        accepted="a mapping from query name to query text", default_factory=dict,
    )
    shedding: Shedding | None = described(
        "Hybrid load shedding of the meter tier under a latency bound (§6.3.4); off when "
        "absent.", null_means="no load shedding (the BL configuration)", default=None,
    )
    remote: RemoteData | None = described(
        "The M&V profiles fetched from the utility over the metering network (Ch. 5); "
        "local tables that answer at once when absent.",
        null_means="local tables (no fetches)", default=None,
    )
    appliance_queries: dict[str, ApplianceQuery] = described(
        "Utility queries over what the households do, by name, run per household on the "
        "monitored passes with adaptive plans (drsim.utility.appliance_monitoring); their alerts, "
        "work and plan replacements go to summary.json's appliance_queries.",
        accepted="a mapping from a name to {query, plan, adapt}", default_factory=dict,
    )
    method: Literal["counting", "tolerance", "aggregate"] = described(
        "How non-compliance is tested under baseline error (docs/decisions.md, "
        "\"Monitoring methods under baseline error\"): 'counting' = Listings 6.1-6.3 as "
        "printed (Eq. 6.4 per household, flagged households counted against γ); "
        "'tolerance' = Eq. 6.4 with a band of z standard deviations of the M&V error "
        "(monitoring.tolerance); 'aggregate' = a CUSUM of each group's metered load "
        "against its aggregate P̂ at the group leader (monitoring.aggregate).",
        default="counting",
    )
    tolerance: ToleranceSettings = described(
        "The band of method 'tolerance'.", default_factory=ToleranceSettings)
    aggregate: AggregateSettings = described(
        "The CUSUM of method 'aggregate'.", default_factory=AggregateSettings)
    max_missing: int | None = described(
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
    def _query_names(self) -> Monitoring:
        unknown = [name for name in self.queries if name not in QUERY_NAMES]
        if unknown:
            raise value_problem(
                f"unknown query name(s) {', '.join(map(repr, unknown))}",
                f"query names of {', '.join(QUERY_NAMES)}", at=".queries")
        return self

    @model_validator(mode="after")
    def _intervals(self) -> Monitoring:
        reading = self.reading_interval_minutes
        if self.settlement_interval_minutes < reading:
            raise value_problem(
                f"settlement_interval_minutes ({self.settlement_interval_minutes}) is shorter "
                f"than reading_interval_minutes ({reading})",
                f"an integer >= reading_interval_minutes ({reading})",
                at=".settlement_interval_minutes")
        for name in ("t_wait_minutes", "delta_minutes"):
            value = getattr(self, name)
            if value % reading:
                raise value_problem(
                    f"{name} ({value}) is not a multiple of reading_interval_minutes "
                    f"({reading}), so tests would fall between readings",
                    f"a multiple of reading_interval_minutes ({reading})", at="." + name)
        k = self.max_missing
        if k is not None and k > self.m_user - 1:
            raise value_problem(
                f"max_missing {k} is more than the m_user - 1 = {self.m_user - 1} test slots "
                f"strictly inside a run of m_user + 1 = {self.m_user + 1} (its first and last "
                "slots are real failed tests)",
                f"an integer from 0 to {self.m_user - 1}", at=".max_missing")
        if k and (self.shedding is not None or self.remote is not None):
            raise value_problem(
                "max_missing above 0 does not apply with load shedding or remote profiles "
                "(the modelled gateways run exact matching)", "0 or none", at=".max_missing")
        if self.shedding is not None and self.remote is not None and \
                self.shedding.gateway_households != self.remote.gateway_households:
            raise value_problem(
                f"remote.gateway_households ({self.remote.gateway_households}) differs from "
                f"shedding.gateway_households ({self.shedding.gateway_households})",
                f"{self.shedding.gateway_households} (one gateway layout)",
                at=".remote.gateway_households")
        return self
