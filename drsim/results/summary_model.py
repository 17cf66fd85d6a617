"""summary.json as typed records: one pydantic model per section, a description per field.

:class:`Summary` is what ``drsim simulate``, ``run`` and ``monitor`` write
(:mod:`drsim.results.summary` builds it) and what the readers of a result folder read
(:func:`read_summary`); docs/summary.md documents every field, and a test checks the two
agree. A field marked *sometimes* is written only by the summaries that have it (e.g. a
run's ``prediction``, a streamed run's ``streaming``); any other field is always written,
null or not. Clock times are :data:`Clock`: minutes since midnight in the model, ``"HH:MM"``
in the JSON, read and written by :mod:`drsim.units` alone. The sections of the monitoring
features (:class:`drsim.utility.features.MonitoringFeature`) are each feature's own JSON
value, kept in :attr:`Summary.features` and written as top-level keys after ``monitoring``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PlainSerializer,
    PlainValidator,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

from drsim.units import clock, clock_minutes

__all__ = ["Clock", "Real", "Summary", "read_summary", "sometimes"]

def _minutes(value: Any) -> int:
    """Minutes since midnight of a clock time: ``"HH:MM"`` or minutes (drsim.units)."""
    return clock_minutes(value, "clock time")


#: a time of day: minutes since midnight in the model, "HH:MM" in summary.json
Clock = Annotated[int, PlainValidator(_minutes), PlainSerializer(clock, return_type=str)]


def _real(value: Any) -> float:
    """A real number as the builder computed it (an int stays an int, as json writes it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    return value


#: a real number (NaN and ±inf are written as null by drsim.results.output.json_safe)
Real = Annotated[float, PlainValidator(_real)]


def sometimes(description: str) -> Any:
    """A field written only by the summaries that have it (absent, not null, elsewhere)."""
    return Field(default=None, description=description, json_schema_extra={"sometimes": True})


class Record(BaseModel):
    """A section of summary.json: frozen, no other keys; *sometimes* fields left out
    when not given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _given(self, handler(self))


def is_sometimes(field: FieldInfo) -> bool:
    """Whether a field is written only by the summaries that have it (:func:`sometimes`)."""
    extra = field.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get("sometimes"))


def _given(record: BaseModel, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the *sometimes* fields ``record`` was not given."""
    for name, field in type(record).model_fields.items():
        if is_sometimes(field) and name not in record.model_fields_set:
            data.pop(name, None)
    return data


# ---------------------------------------------------------------------------- the scenario


class ScenarioSection(Record):
    """The scenario as it ran."""

    name: str = Field(description="The scenario's name.")
    file: str | None = Field(description="The scenario YAML's file name; null when built in "
                                         "code.")
    hash: str = Field(description="SHA-256 of ``settings`` as JSON with sorted keys.")
    households: int = Field(description="Households simulated, summed over the chunks.")
    ev_households: int = Field(description="Households with an EV.")
    groups: dict[str, int] = Field(description="Households per group, in group order.")
    settings: dict[str, JsonValue] = Field(
        description="The validated scenario as it ran (Scenario.model_dump).")


class CodeVersion(Record):
    """The code that wrote the summary."""

    drsim: str | None = Field(description="The installed drsim version; null when unknown.")
    git: str | None = Field(description="``git describe --always --dirty`` of the code; null "
                                        "outside a git work tree.")


class Seeds(Record):
    """The random streams' seeds."""

    scenario: int = Field(description="The scenario's seed: every random stream derives "
                                      "from it.")


# ------------------------------------------------------------------- reductions and peaks


class Breakdown(Record):
    """A pass's reduction by appliance category [MWh]."""

    ev: Real = Field(description="EV charging.")
    wet: Real = Field(description="Washing machines, dryers and dishwashers.")
    cold: Real = Field(description="Fridges and freezers.")
    rest: Real = Field(description="Every other category.")


class GroupReductions(Record):
    """One group's size and reductions."""

    households: int = Field(description="The group's size.")
    reduction_mwh: dict[str, Real] = Field(
        description="Per DR pass, the reduction over the group's households [MWh].")


class BaselineSection(Record):
    """The utility's M&V settings and estimates (drsim.utility.baseline, §6.2.1)."""

    method: str = Field(description="How B̂ and P̂ are estimated: same_day, model, "
                                    "prior_days, x_of_y or regression.")
    prior_days: int = Field(description="The days averaged by prior_days.")
    x_of_y: JsonValue = Field(
        default=None, description="baseline.x_of_y as run (days, take, rank; "
                                  "drsim.utility.settlement_baselines), written for every "
                                  "method; null in summaries written before it existed.")
    regression: JsonValue = Field(
        default=None, description="baseline.regression as run (bin_minutes, days, "
                                  "other_day_type_days; drsim.utility.regression_baseline), "
                                  "written for every method; null in summaries written "
                                  "before it existed.")
    error: Real = Field(description="Per-household lognormal error's coefficient of "
                                    "variation.")
    error_per_minute: Real = Field(description="Per household and minute error's "
                                               "coefficient of variation.")
    day_of_adjustment: JsonValue = Field(
        description="baseline.day_of_adjustment as run (drsim.utility.day_of); null without.")
    control_group: JsonValue = Field(description="baseline.control_group as run; null without.")
    control_households: int = Field(description="Households of the control group (not called).")
    expected_reduction_mwh: Real = Field(
        description="The utility's estimate of the complete response, Σ (B̂ − P̂) [MWh].")
    baseline_mwh: Real = Field(description="Σ B̂ over the program window [MWh].")
    expected_mwh: Real = Field(description="Σ P̂ over the program window [MWh].")
    simulated_baseline_mwh: Real = Field(
        description="The simulated baseline pass over the window: the ground truth [MWh].")
    method_baseline_mwh: Real | None = Field(
        description="With a control group: Σ B̂ of the M&V method, which it replaces [MWh].")
    method_expected_mwh: Real | None = Field(
        description="With a control group: Σ P̂ of the M&V method [MWh].")


class Energy(Record):
    """The day's energy and evening peak."""

    kwh_per_household_day: Real = Field(description="The baseline pass's energy per "
                                                    "household [kWh].")
    daily_mwh: dict[str, Real] = Field(description="Per pass, the system energy of the day "
                                                   "[MWh].")
    evening_peak_kw_per_household: Real = Field(
        description="The largest baseline load in [16:00, 22:00) per household [kW].")
    evening_peak_time: Clock = Field(description="The minute of that peak.")


class Peaks(Record):
    """Daily peaks and the rebound in the 180 minutes after the program."""

    daily_peak_mw: dict[str, Real] = Field(description="Per pass, the day's peak [MW].")
    rebound_peak_mw: dict[str, Real] = Field(description="Per DR pass, the rebound's peak "
                                                         "[MW].")
    rebound_peak_time: dict[str, Clock] = Field(description="Per DR pass, its minute.")
    rebound_mwh: dict[str, Real] = Field(
        description="Per DR pass, the energy above the baseline in the rebound [MWh].")


# -------------------------------------------------------------------------- the monitoring


class Confusion(Record):
    """The households' confusion counts (evaluation.precision_recall)."""

    true_positives: int = Field(description="Flagged and non-compliant.")
    false_positives: int = Field(description="Flagged but compliant.")
    false_negatives: int = Field(description="Not flagged but non-compliant.")
    households: int = Field(description="Households evaluated.")
    noncompliant_households: int = Field(description="Non-compliant by Eq. 6.2.")


class Prediction(Record):
    """The three tiers' prediction on the traditional pass (or the recorded readings)."""

    predicted: bool = Field(description="Whether the utility query fired before t_end.")
    utility_noncompliance_time: Clock | None = Field(description="t_nc; null without a "
                                                                 "prediction.")
    detection_delay_minutes: int | None = Field(description="t_nc − t_first_test [min].")
    groups_compliant_at_prediction: int | None = Field(
        description="Groups not latched by t_nc.")
    group_noncompliance_times: dict[str, Clock | None] = Field(
        description="Per group, its latch (first group event); null if never.")
    household_precision: Real | None = sometimes("TP / (TP + FP) of the households flagged "
                                                 "up to their group's stop (run only).")
    household_recall: Real | None = sometimes("TP / (TP + FN), the same flags (run only).")
    household_confusion: Confusion | None = sometimes("The counts behind them (run only).")
    household_precision_whole_program: Real | None = sometimes(
        "Precision had every meter been tested to t_end − 1 (run only).")
    household_recall_whole_program: Real | None = sometimes(
        "Recall had every meter been tested to t_end − 1 (run only).")
    expected_pass_noncompliance_time: Clock | None = sometimes(
        "t_nc on the expected pass: a false alarm (run only).")
    expected_pass_group_noncompliance_times: dict[str, Clock | None] | None = sometimes(
        "Group latches on the expected pass: false alarms (run only).")
    expected_pass_groups_latched: int | None = sometimes("The number of those latches (run "
                                                         "only).")
    gamma_user: dict[str, JsonValue] = Field(
        description="How γ was set (threshold_policy describe).")
    thresholds_from: str | None = sometimes("Where γ came from (drsim monitor only).")


class Deficit(Record):
    """What the utility knows at t_nc (drsim.utility.deficit, §6.2.3)."""

    readings_until: list[Clock] = Field(description="Each group's last reading at or "
                                                    "before t_nc.")
    households_seen: list[int] | None = sometimes(
        "Per group, the households whose reading arrived (only with lost readings).")
    realised_reduction_all_readings_kwh: Real | None = sometimes(
        "The realised reduction had every reading arrived (only with lost readings) [kWh].")
    realised_reduction_kwh: Real = Field(description="Σ (B̂ − P) up to the readings [kWh].")
    expected_reduction_kwh: Real = Field(description="Σ (B̂ − P̂) over the same minutes "
                                                     "[kWh].")
    share_of_expected: Real | None = Field(description="ρ = realised / expected.")
    theta_o_mean: Real = Field(description="θ̄_o, the mean expected follow-through.")
    theta_red_mean_observed: Real = Field(description="The θ̄_red the utility reads.")
    shortfall_kwh: Real = Field(description="The first event's projected shortfall [kWh].")


class SecondEvent(Record):
    """The second DR event as simulated in the adaptive pass."""

    announced: Clock = Field(description="t_nc + delay_detection_minutes.")
    start: Clock = Field(description="announced + second_event_delay_minutes.")
    end: Clock = Field(description="t_end.")
    delay_detection_minutes: int = Field(description="How long the announcement waits "
                                                     "after t_nc [min].")


class Incentive(Record):
    """The second event's incentive plan (Eq. 6.5-6.8, IncentiveResult.as_dict)."""

    currency: str = Field(description="The currency of the money fields.")
    lambda_o: Real = Field(description="λ_o, the first event's incentive.")
    beta: Real = Field(description="β of Eq. 6.7 and 6.8.")
    target_follow_through: list[Real] = Field(description="Figure 6.9's band [lower, "
                                                          "upper].")
    participants: int = Field(description="N, all households.")
    mapping_households: dict[str, int] = Field(description="Households per mapping u.")
    lambda_new: dict[str, Real] = Field(description="λ_new of Eq. 6.7 per mapping u.")
    theta_o_mean: Real = Field(description="θ̄_o.")
    theta_red_mean: Real = Field(description="The θ̄_red the utility planned with.")
    extra_incentive_mean: Real = Field(description="The mean extra pay per lottery winner.")
    monitoring_cost: Real = Field(description="Eq. 6.5's monitoring cost.")
    c_saved: Real = Field(description="C_saved of Eq. 6.5.")
    p_inc: Real = Field(description="The lottery's win probability κ / N.")
    kappa: int = Field(description="κ, the planned lottery winners.")
    lottery_cost: Real = Field(description="κ × extra_incentive_mean.")
    second_event_cost: Real = Field(description="The left side of Eq. 6.5.")
    penalty_bound: Real = Field(description="The right side of Eq. 6.6.")
    c_nc: Real = Field(description="The penalty C_nc of Eq. 6.6.")
    scheduled: bool = Field(description="Whether Eq. 6.5 admits a second event.")
    theta_red_mean_simulated: Real | None = Field(description="The simulated mean θ_red.")
    theta_new_mean: Real | None = Field(description="The mean θ_new of Eq. 6.8.")
    second_event_compliant: int | None = Field(description="Households compliant in the "
                                                           "second event.")
    lottery_winners: int | None = Field(description="The households drawn.")
    realised_lottery_cost: Real | None = Field(description="Σ over winners of λ_new − λ_o.")
    realised_second_event_cost: Real | None = Field(
        description="monitoring_cost + realised_lottery_cost.")
    note: str = Field(description="Why no second event is planned; empty otherwise.")


class Communication(Record):
    """Events sent, by kind, up to each group's stop (§6.3.3)."""

    meter_readings: int = Field(description="Meter readings that arrived.")
    remote_lambda_fetches: int = Field(description="Fetches of λ for the meter query.")
    user_events: int = Field(description="userNonComplianceEvents sent.")
    silent_meter_events: int = Field(description="Reports of a silent meter.")
    group_events: int = Field(description="groupNonComplianceEvents sent.")
    total: int = Field(description="The sum of the five.")


class Computation(Record):
    """Events processed plus partial matches, per tier (§6.3.3)."""

    meter: int = Field(description="The meter engines (Listing 6.1).")
    group: int = Field(description="The group leaders (Listing 6.2).")
    utility: int = Field(description="The utility (Listing 6.3).")
    total: int = Field(description="The sum of the three.")


class Cost(Record):
    """The traditional pass's costs as deployed (evaluation.costs)."""

    communication: Communication = Field(description="Events sent.")
    computation: Computation = Field(description="Events processed and partial matches.")
    per_household: dict[str, dict[str, Real]] = Field(
        description="Each cost above divided by the households (Figure 6.13).")


class Monitoring(Record):
    """The monitoring's settings and, from the lost-readings feature, what was lost."""

    test_times: list[Clock] = Field(description="The household test times.")
    changes_from_printed_listings: list[str] = Field(
        description="How the queries run differ from Listings 6.1-6.3 as printed.")
    queries_overridden: list[str] = Field(description="The queries monitoring.queries "
                                                      "replaced.")
    method: str | None = sometimes(
        "monitoring.method: how non-compliance is tested under baseline error (counting, "
        "tolerance, aggregate); absent in summaries written before the methods.")
    method_settings: JsonValue = sometimes(
        "The method's settings as run (tolerance: z, cv; aggregate: k, h, cv, "
        "correlated_share, floor, reference, utility and the pooled utility's utility_k, "
        "utility_h); null for counting.")
    max_missing: int | None = Field(description="k of the approximate meter query.")
    reading_loss: JsonValue = Field(description="meters.reading_loss as run; null without.")
    meters_silent: JsonValue = Field(
        description="The lost-readings feature's silent meters per group; null without.")
    lost_readings: JsonValue = Field(
        description="The lost-readings feature's losses; null without.")


class TierDevice(Record):
    """One tier's modelled devices in OP (load shedding, §6.3.4)."""

    shed: bool = Field(description="Whether the tier sheds (monitoring.shedding.tiers).")
    latency_average_minutes: Real | None = Field(
        description="OP's average latency of the inputs it processed [min]; null when "
                    "it processed none.")
    bound_minutes: Real | None = Field(
        description="The bound share × the tier's unshed average latency on the same "
                    "inputs [min]; null when the tier does not shed.")
    unshed_latency_average_minutes: Real | None = Field(
        description="That unshed average latency [min].")


class PlainLoop(Record):
    """BL, the plain monitoring's closed loop beside OP's (nothing shed, no EIRES);
    its sections are written as the run's own of the same name."""

    prediction: dict[str, JsonValue] = Field(
        description="As prediction (without the household counts), for BL.")
    deficit_at_prediction: JsonValue = Field(description="As deficit_at_prediction, at "
                                                         "BL's t_nc; null without.")
    second_event: JsonValue = Field(description="As second_event, BL's; null without.")
    second_event_note: str | None = Field(description="Why BL has no second event.")
    cost: dict[str, JsonValue] = Field(description="As cost, BL's.")
    reduction_mwh: dict[str, Real] | None = Field(
        description="expected, traditional and BL's adaptive reduction [MWh]; null in "
                    "drsim monitor (no simulated baseline, no adaptive pass).")
    reduction_share_of_expected: dict[str, Real | None] | None = Field(
        description="traditional and adaptive over expected; null in drsim monitor.")


class OpVsBl(Record):
    """The optimised monitoring (OP, the run's) against BL in one run (§6.3.4, Figure 6.14)."""

    communication: Real | None = Field(description="OP's events sent over BL's.")
    computation: Real | None = Field(description="OP's events and partial matches "
                                                 "processed over BL's.")
    prediction_minutes_after_bl: int | None = Field(
        description="OP's t_nc − BL's [min] (negative: OP earlier); null unless both "
                    "predict.")
    adaptive_share_of_bl: Real | None = Field(description="OP's adaptive reduction over "
                                                          "BL's; null in drsim monitor.")
    bl_prediction: Clock | None = Field(description="BL's t_nc; null without.")
    tiers: dict[str, TierDevice] = Field(description="meter, group, utility: OP's devices.")
    bl: PlainLoop = Field(description="BL's closed loop.")


# ------------------------------------------------------------------ the run's surroundings


class ReferenceReductions(Record):
    """Published reductions per pass [MWh]."""

    expected: Real | None = Field(description="With the expected response.")
    traditional: Real | None = Field(description="Of the traditional single event.")
    adaptive: Real | None = Field(description="Of adaptive DR.")


class ReferenceOpVsBl(Record):
    """Published results of OP against BL (§6.3.4, Figure 6.14)."""

    communication: Real | None = Field(description="OP's communication over BL's.")
    computation: Real | None = Field(description="OP's computation over BL's.")
    bl_prediction: Clock | None = Field(description="BL's published t_nc.")
    prediction_minutes_after_bl: int | None = Field(
        description="OP's t_nc − BL's [min].")
    adaptive_share_of_bl: Real | None = Field(description="OP's adaptive reduction over "
                                                          "BL's.")


class Reference(Record):
    """The scenario's published results (the scenario's ``reference``)."""

    source: str = Field(description="Where the numbers are published.")
    reduction_mwh: ReferenceReductions = Field(description="Reductions per pass [MWh].")
    utility_noncompliance_time: Clock | None = Field(description="The published t_nc.")
    groups_compliant_at_prediction: int | None = Field(
        description="The published groups still compliant at t_nc.")
    op_vs_bl: ReferenceOpVsBl | None = sometimes("The published OP against BL; null for a "
                                                 "scenario without.")


class Job(Record):
    """One backend job."""

    label: str = Field(description="What the job ran.")
    partitions: int | None = Field(description="Its partitions.")
    tasks: int | None = Field(description="Its tasks.")


class Backend(Record):
    """What ran the chunks (BackendInfo)."""

    name: str = Field(description="spark or serial.")
    master: str | None = Field(description="The Spark master URL; null on serial.")
    app_id: str | None = Field(description="The Spark application id; null on serial.")
    parallelism: int = Field(description="Spark's defaultParallelism; 1 on serial.")
    chunks: int = Field(description="The number of chunks.")
    chunk_size: int = Field(description="The size of the largest chunk.")
    partitions: int | None = Field(description="Partitions of the first chunk job.")
    tasks: int | None = Field(description="Tasks of that job.")
    jobs: list[Job] = Field(description="Every job of the run in order.")


class ChunkSeconds(Record):
    """Wall time per chunk of the passes task [s]."""

    min: Real = Field(description="The fastest chunk.")
    mean: Real = Field(description="The mean over the chunks.")
    max: Real = Field(description="The slowest chunk.")


class Timings(Record):
    """Wall-clock seconds of the stages (each only where the stage ran)."""

    backend_start_seconds: Real = Field(description="Opening the backend.")
    readings_seconds: Real | None = sometimes("Reading the readings and the meter tier "
                                              "(drsim monitor).")
    passes_seconds: Real | None = sometimes("The passes stage, with the meter tier in a "
                                            "run.")
    cost_models_seconds: Real | None = sometimes("Fitting the shedding cost models.")
    tiers_seconds: Real | None = sometimes("The thresholds, group leaders and utility.")
    group_tier_seconds: Real | None = sometimes("The group leaders' job.")
    utility_tier_seconds: Real | None = sometimes("The utility's job.")
    day_sizes_seconds: Real | None = sometimes(
        "A streamed run with load shedding: the passes and tiers of the whole day that size "
        "the modelled devices before the stream.")
    stream_seconds: Real | None = sometimes("A streamed run's stream.")
    adaptive_pass_seconds: Real | None = sometimes("The adaptive pass; 0 without a second "
                                                   "event.")
    plain_loop_seconds: Real | None = sometimes("BL's second event and adaptive pass "
                                                "(op_vs_bl).")
    total_seconds: Real = Field(description="From the call to the end of the last stage.")
    chunk_seconds: ChunkSeconds = Field(description="Wall time per chunk.")


class Resources(Record):
    """Peak memory (drsim.pipeline.memory) [B]."""

    driver_peak_rss_bytes: int = Field(description="The driver's Python process.")
    jvm_peak_rss_bytes: int | None = Field(description="The driver's JVM; null without.")
    peak_task_memory_bytes: int = Field(description="The largest of the chunk processes'.")


class Readings(Record):
    """The recorded readings' checks (drsim monitor; docs/monitor.md); a monitored stream
    writes the file, the bad rows and the late rows."""

    file: str = Field(description="The readings' file or folder name.")
    rows: int | None = sometimes("The rows read (recorded readings).")
    bad_rows_dropped: dict[str, int] = Field(description="Rows dropped, by 'column: "
                                                         "problem'.")
    lost_readings: int | None = sometimes("Household-minutes of the program without a "
                                          "reading (recorded readings).")
    households_without_readings: int | None = sometimes(
        "Households with none in the program (recorded readings).")
    energy_register: bool | None = sometimes("Whether the readings had the registers "
                                             "(recorded readings).")
    late_rows: int | None = sometimes("Readings after their gateway's watermark (a "
                                      "monitored stream).")


class Latency(Record):
    """Each test interval's latency from its release to the utility's decision [s]."""

    p50: Real | None = sometimes("The median.")
    p90: Real | None = sometimes("The 90th percentile.")
    p99: Real | None = sometimes("The 99th percentile.")
    max: Real | None = Field(description="The largest; null without an interval.")
    intervals: int = Field(description="The intervals decided.")


class Streaming(Record):
    """A streamed run's clock, micro-batches and latencies (docs/streaming.md)."""

    speed: Real | None = Field(description="The clock's speed; null as fast as it goes.")
    interval_seconds: Real | None = Field(description="A test interval in real time.")
    micro_batches: int = Field(description="The stream's micro-batches.")
    latency_seconds: Latency = Field(description="The test intervals' latencies.")
    intervals_late: int = Field(description="Intervals decided after the next was due.")
    real_time_factor: Real | None = Field(description="Simulated over real time.")
    stream_seconds: Real = Field(description="The stream's wall time.")
    second_event_planned_after_seconds: Real | None = Field(
        description="From the prediction to the second event's plan.")
    late_rows: int = Field(description="Rows behind the watermark.")
    bad_rows: dict[str, int] = Field(description="Rows dropped, by problem.")


# ------------------------------------------------------------------------------ summary


class Summary(Record):
    """summary.json of ``drsim simulate``, ``run`` and ``monitor`` (docs/summary.md)."""

    scenario: ScenarioSection = Field(description="The scenario as it ran.")
    code_version: CodeVersion = Field(description="The code that wrote the summary.")
    seeds: Seeds | None = sometimes("The seeds (simulate and run).")
    reduction_goal: Literal["expected", "given"] | None = sometimes(
        "Where the goal λ comes from (simulate and run).")
    reduction_goal_mwh: Real | None = sometimes("The goal λ of Eq. 6.1 [MWh].")
    reduction_mwh: dict[str, Real] | None = sometimes(
        "Per DR pass, the reduction against the simulated baseline [MWh].")
    reduction_share_of_expected: dict[str, Real | None] | None = sometimes(
        "Per DR pass but expected, its reduction over the expected one.")
    reduction_breakdown_mwh: dict[str, Breakdown] | None = sometimes(
        "Per DR pass, the reduction by appliance category.")
    groups: dict[str, GroupReductions] | None = sometimes("Per group, its reductions.")
    baseline: BaselineSection | None = sometimes("The utility's M&V.")
    energy: Energy | None = sometimes("The day's energy and evening peak.")
    peaks: Peaks | None = sometimes("Daily and rebound peaks.")
    readings: Readings | None = sometimes("The recorded readings (drsim monitor).")
    prediction: Prediction | None = sometimes("The tiers' prediction (run and monitor).")
    deficit_at_prediction: Deficit | None = sometimes(
        "What the utility knows at t_nc; null without a prediction.")
    second_event: SecondEvent | None = sometimes("The second event; null when none ran.")
    second_event_note: str | None = sometimes("Why there is no second event.")
    incentive: Incentive | None = sometimes("The incentive plan; null without a "
                                            "prediction.")
    cost: Cost | None = sometimes("The costs as deployed.")
    monitoring: Monitoring | None = sometimes("The monitoring's settings and losses.")
    features: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="The monitoring features' sections by name, each the JSON value the "
                    "feature writes (MonitoringFeature.summary); top-level keys of "
                    "summary.json after monitoring.")
    op_vs_bl: OpVsBl | None = sometimes("OP against BL (runs that shed load: the plain "
                                        "twin runs beside).")
    reference: Reference | None = sometimes("Published results; null without.")
    backend: Backend = Field(description="What ran the chunks.")
    timings: Timings = Field(description="Wall-clock seconds.")
    resources: Resources = Field(description="Peak memory.")
    files: list[str] = Field(description="The files of the result folder.")
    streaming: Streaming | None = sometimes("A streamed run's stream (streamed runs only).")

    @model_validator(mode="before")
    @classmethod
    def _gather_features(cls, data: Any) -> Any:
        """Read the top-level keys that are no field as the features' sections."""
        if not isinstance(data, dict) or "features" in data:
            return data
        fields = cls.model_fields
        return {**{k: v for k, v in data.items() if k in fields},
                "features": {k: v for k, v in data.items() if k not in fields}}

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = _given(self, handler(self))
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key == "features":
                out.update(value)
            else:
                out[key] = value
        return out

    def as_dict(self) -> dict[str, Any]:
        """The content of summary.json, in its order (clock times as ``"HH:MM"``)."""
        return self.model_dump()

    @property
    def is_run(self) -> bool:
        """Whether a run wrote it (a prediction and no recorded readings)."""
        return self.prediction is not None and self.readings is None


def read_summary(path: str | Path) -> Summary:
    """The summary.json at ``path`` (a file, or a result folder holding one), validated.

    Raises
    ------
    OSError
        When the file cannot be read.
    pydantic.ValidationError
        When it is not a summary of this version, naming each field that is not.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "summary.json"
    return Summary.model_validate(json.loads(path.read_text(encoding="utf-8")))
