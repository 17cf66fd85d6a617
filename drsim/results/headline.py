"""The headline of a result folder, as ``drsim run``, ``drsim simulate`` and ``drsim report``
print it.

A run's table: reductions with their share of the expected one, the prediction, precision
and recall, and the scenario's published results beside them when it declares them
(``reference:``). A simulation's table: energy, evening peak, reductions and rebound peaks.
Every number is rounded for reading; ``drsim report --full`` shows every field. The summary
is read through its model (:class:`drsim.results.summary_model.Summary`): clock times are
minutes there, a feature's section its own JSON."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from drsim.pipeline.pass_names import DR_PASSES, MONITORED
from drsim.results.summary_model import Summary
from drsim.units import clock
from drsim.utility.feature_registry import REGISTERED
from drsim.utility.headline_cells import MISSING, pair_cell, real, share_cell, time_cell


def _fmt_mwh(value: Any) -> str:
    number = real(value)
    return f"{number:.2f}" if number is not None else "none" if value is None else str(value)


def _fmt_groups(value: int | None, summary: Summary) -> str:
    total = len(summary.scenario.groups)
    return "n/a" if value is None else f"{value} of {total}" if total else str(value)


def _fmt_reduction(mwh: Any, expected: Any) -> str:
    """"12.58 (58.9 %)": a reduction and its share of the expected one."""
    number, whole = real(mwh), real(expected)
    if number is None:
        return _fmt_mwh(mwh)
    share = f" ({100.0 * number / whole:.1f} %)" if whole else ""
    return f"{number:.2f}{share}"


def run_table(summary: Summary) -> tuple[list[str], list[tuple[str, ...]]]:
    """The headline table of a run's summary: column names and rows.

    Columns: quantity, this run, and the scenario's published reference (``reference``
    of the summary) only where the scenario declares one. Reductions are in MWh with
    their share of the expected reduction. A null value shows "none" (no prediction) or
    "n/a"; a reference value the source does not give, "not given"."""
    ref = summary.reference
    prediction = summary.prediction
    assert prediction is not None and summary.reduction_mwh is not None  # a run's summary
    reductions = summary.reduction_mwh
    rows: list[tuple[str, ...]] = []

    def row(label: str, value: Any, fmt: Callable[[Any], str], given: Any = None,
            ref_fmt: Callable[[Any], str] | None = None) -> None:
        cells = [label, fmt(value)]
        if ref is not None:
            cells.append((ref_fmt or fmt)(given) if given is not None else "not given")
        rows.append(tuple(cells))

    expected = reductions.get("expected")
    ref_expected = ref.reduction_mwh.expected if ref is not None else None
    for name in DR_PASSES:
        row(f"reduction, {name}, MWh (share)", reductions.get(name),
            lambda v: MISSING if v is None else _fmt_reduction(v, expected),
            getattr(ref.reduction_mwh, name) if ref is not None else None,
            lambda v: _fmt_reduction(v, ref_expected))
    row("utility non-compliance predicted", prediction.utility_noncompliance_time, time_cell,
        ref.utility_noncompliance_time if ref is not None else None)
    row("groups compliant at prediction", prediction.groups_compliant_at_prediction,
        lambda v: _fmt_groups(v, summary),
        ref.groups_compliant_at_prediction if ref is not None else None)
    row("prediction on the expected pass", prediction.expected_pass_noncompliance_time,
        time_cell)
    shares = {key: getattr(prediction, key) for key in (
        "household_precision", "household_recall", "household_precision_whole_program",
        "household_recall_whole_program")}
    row("household precision / recall, while tested", shares,
        lambda p: pair_cell(p, "household_precision", "household_recall"))
    row("household precision / recall, whole program", shares,
        lambda p: pair_cell(p, "household_precision_whole_program",
                            "household_recall_whole_program"))
    own = []
    for feature in REGISTERED:  # the monitoring features' own rows
        found, section = _feature_section(summary, feature.section or feature.name)
        own += feature.headline(section) if found else []
    rows += [(label, value, *(("",) if ref is not None else ())) for label, value in own]
    published = ref.op_vs_bl if ref is not None else None
    rows += [(label, value, *((given,) if ref is not None else ()))
             for label, value, given in _op_vs_bl_rows(summary, published)]
    columns = ["quantity", "this run"] + ([] if ref is None else ["reference"])
    return columns, rows


def _op_vs_bl_rows(summary: Summary, published: Any = None) -> list[tuple[str, str, str]]:
    """The rows of OP (this run) against BL, the plain monitoring beside it (``op_vs_bl``),
    with the published figures (``reference.op_vs_bl``) where the scenario gives them."""
    section = summary.op_vs_bl
    if section is None:
        return []
    tiers = section.tiers

    def shift(bl: Any, after: Any) -> str:
        return f"{time_cell(bl)}; {MISSING if after is None else f'{after:+d}'}"

    def given(cell: Callable[[Any], str], *keys: str) -> str:
        if published is None or all(getattr(published, k) is None for k in keys):
            return "not given" if published is not None else ""
        return cell(published)

    return [
        ("BL (plain monitoring) prediction; OP minutes after",
         shift(section.bl_prediction, section.prediction_minutes_after_bl),
         given(lambda r: shift(r.bl_prediction, r.prediction_minutes_after_bl),
               "bl_prediction", "prediction_minutes_after_bl")),
        ("OP communication / computation, share of BL",
         pair_cell(section.model_dump(), "communication", "computation"),
         given(lambda r: pair_cell(r.model_dump(), "communication", "computation"),
               "communication", "computation")),
        ("OP adaptive reduction, share of BL", share_cell(section.adaptive_share_of_bl),
         given(lambda r: share_cell(r.adaptive_share_of_bl), "adaptive_share_of_bl")),
        ("OP latency avg / bound, min: " + ", ".join(tiers),
         "; ".join(f"{share_cell(t.latency_average_minutes)} / {share_cell(t.bound_minutes)}"
                   if t.shed else "not shed" for t in tiers.values()),
         "" if published is None else "bound 0.5 of the average"),
    ]


def _feature_section(summary: Summary, name: str) -> tuple[bool, Any]:
    """(found, JSON value) of the section a feature's headline reads: its own, or the
    section of the summary its keys join (:attr:`MonitoringFeature.section`)."""
    if name in summary.features:
        return True, summary.features[name]
    record = getattr(summary, name, None) if name in Summary.model_fields else None
    return record is not None, None if record is None else record.model_dump()


def simulate_table(summary: Summary) -> tuple[list[str], list[tuple[str, ...]]]:
    """The headline table of a simulation's summary (``drsim simulate``): column names and
    rows, with the reductions of the scenario's published reference beside drsim's when it
    declares one. A pass the summary lacks shows "—"."""
    ref = summary.reference
    ref_expected = ref.reduction_mwh.expected if ref is not None else None
    energy, peaks, backend = summary.energy, summary.peaks, summary.backend
    reductions = summary.reduction_mwh or {}
    rows: list[tuple[str, ...]] = []

    def row(label: str, fmt: Callable[..., str], *values: Any, given: Any = None,
            has_ref: bool = False) -> None:
        cells = [label, fmt(*values) if all(v is not None for v in values) else MISSING]
        if ref is not None:
            cells.append(_fmt_reduction(given, ref_expected) if given is not None
                         else "not given" if has_ref else "")
        rows.append(tuple(cells))

    assert energy is not None and peaks is not None and summary.baseline is not None
    row("EV households", lambda n: f"{n:,}", summary.scenario.ev_households)
    row("energy per household", lambda e: f"{e:.2f} kWh/day", energy.kwh_per_household_day)
    row("evening peak per household", lambda kw, t: f"{kw:.3f} kW at {clock(t)}",
        energy.evening_peak_kw_per_household, energy.evening_peak_time)
    program = summary.scenario.settings.get("dr_program")
    window = f" {program['start']}–{program['end']}" if isinstance(program, Mapping) else ""
    expected = reductions.get("expected")
    for name in MONITORED:
        row(f"reduction{window}, {name}, MWh (share)",
            lambda v: _fmt_reduction(v, expected), reductions.get(name),
            given=getattr(ref.reduction_mwh, name) if ref is not None else None,
            has_ref=True)
    row(f"reduction{window}, utility's estimate ({summary.baseline.method})",
        lambda v: f"{v:.2f} MWh", summary.baseline.expected_reduction_mwh)
    row("reduction goal", lambda v: f"{v:.2f} MWh", summary.reduction_goal_mwh)
    for name in MONITORED:
        row(f"rebound peak, {name}", lambda mw, t: f"{mw:.2f} MW at {clock(t)}",
            peaks.rebound_peak_mw.get(name), peaks.rebound_peak_time.get(name))
    row("chunks / tasks", lambda c, t, name: f"{c} / {t} on {backend.master or name}",
        backend.chunks, backend.tasks, backend.name)
    row("wall time", lambda s: f"{s:.1f} s", summary.timings.total_seconds)
    return ["quantity", "this simulation"] + ([] if ref is None else ["reference"]), rows


def monitor_table(summary: Summary) -> tuple[list[str], list[tuple[str, ...]]]:
    """The headline table of ``drsim monitor``'s summary: column names and rows (what the
    summary lacks, such as a stream's rows or the deficit without a prediction, shows
    "—")."""
    readings, prediction = summary.readings, summary.prediction
    assert readings is not None and prediction is not None  # a monitor's summary
    deficit, second, inc = (summary.deficit_at_prediction, summary.second_event,
                            summary.incentive)
    counts = (readings.rows, readings.bad_rows_dropped, readings.lost_readings)
    latched = ", ".join(f"{g} {clock(t)}" for g, t in
                        prediction.group_noncompliance_times.items() if t is not None)
    rows = [
        ("readings: rows / bad rows dropped / lost", MISSING if None in counts else
         f"{counts[0]:,} / {sum(counts[1].values()):,} / {counts[2]:,}"),
        ("utility non-compliance predicted", time_cell(prediction.utility_noncompliance_time)),
        ("groups compliant at prediction",
         _fmt_groups(prediction.groups_compliant_at_prediction, summary)),
        ("groups latched", latched or "none"),
        ("reduction realised at t_nc, share of expected",
         MISSING if deficit is None else share_cell(deficit.share_of_expected)),
        ("second event", "none" if second is None
         else f"{clock(second.start)}–{clock(second.end)}"),
        ("lottery: p_inc / expected cost", "n/a" if inc is None else
         f"{inc.p_inc:.4f} / {inc.lottery_cost:.2f} {inc.currency}"),
        ("γ from", str(prediction.thresholds_from)),
        ("wall time", f"{summary.timings.total_seconds:.1f} s"),
    ]
    return ["quantity", "these readings"], rows


def headline_table(summary: Summary) -> tuple[str, list[str], list[tuple[str, ...]]]:
    """The headline of a run's, a simulation's or a monitor's summary as plain text: its
    title (scenario, households, kind), column names and rows."""
    is_monitor, is_run = summary.readings is not None, summary.prediction is not None
    columns, rows = monitor_table(summary) if is_monitor else run_table(summary) if is_run \
        else simulate_table(summary)
    title = f"{summary.scenario.name}, {summary.scenario.households:,} households: " + (
        "monitoring of recorded readings" if is_monitor else "adaptive DR" if is_run
        else "simulation")
    return title, columns, rows


def headline_notes(summary: Summary) -> list[str]:
    """The lines under the headline table: the reference's source and the second event's
    note, when there are any."""
    notes = []
    if summary.reference is not None and summary.reference.source:
        notes.append(f"reference: {summary.reference.source}")
    if summary.second_event_note:
        notes.append(f"second event: {summary.second_event_note}")
    return notes


def headline(summary: Summary | Mapping[str, Any]) -> list[RenderableType]:
    """The headline of a run's, a simulation's or a monitor's summary (read through the
    model when given as JSON) as rich renderables: the table, the reference's source and
    the second event's note when there are any."""
    if not isinstance(summary, Summary):
        summary = Summary.model_validate(summary)
    title, columns, rows = headline_table(summary)
    table = Table(title=Text(title, style="bold"), title_justify="left")
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right")
    for cells in rows:
        table.add_row(*(Text(c) for c in cells))
    return [table, *(Text(note) for note in headline_notes(summary))]
