"""The headline of a result folder, as ``drsim run``, ``drsim simulate`` and ``drsim report``
print it.

A run's table: reductions with their share of the expected one, the prediction, precision
and recall, and the scenario's published results beside them when it declares them
(``reference:``). A simulation's table: energy, evening peak, reductions and rebound peaks.
Every number is rounded for reading; ``drsim report --full`` shows every field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from drsim.pipeline.pass_names import DR_PASSES, MONITORED
from drsim.utility.feature_registry import REGISTERED
from drsim.utility.features import MISSING, pair_cell, real, share_cell, time_cell


def _first(summary: Any, *dotted: str) -> Any:
    """The value of the first of the ``dotted`` keys found in ``summary`` (else None)."""
    for key in dotted:
        found, value = _get(summary, key)
        if found:
            return value
    return None


def _get(summary: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    """(found, value) of ``a.b.c`` in nested mappings; NaN counts as null."""
    node: Any = summary
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    if isinstance(node, float) and not math.isfinite(node):
        return True, None
    return True, node


def _fmt_mwh(value: Any) -> str:
    number = real(value)
    return f"{number:.2f}" if number is not None else "none" if value is None else str(value)


def _fmt_groups(value: Any, summary: Mapping[str, Any]) -> str:
    if value is None:
        return "n/a"
    groups = _first(summary, "scenario.groups", "groups", "prediction.group_noncompliance_times")
    total = len(groups) if isinstance(groups, Mapping | list) and groups else None
    if isinstance(value, list | tuple):
        count = len(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        count = int(value)
    else:
        return str(value)
    return f"{count} of {total}" if total is not None else str(count)


def _fmt_reduction(mwh: Any, expected: Any) -> str:
    """"12.58 (58.9 %)": a reduction and its share of the expected one."""
    number, whole = real(mwh), real(expected)
    if number is None:
        return _fmt_mwh(mwh)
    share = f" ({100.0 * number / whole:.1f} %)" if whole else ""
    return f"{number:.2f}{share}"


def run_table(summary: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, ...]]]:
    """The headline table of a run's summary: column names and rows.

    Columns: quantity, this run, and the scenario's published reference (``reference``
    of the summary) only where the scenario declares one. Reductions are in MWh with
    their share of the expected reduction. A missing key shows "—", a null value "none"
    (no prediction) or "n/a"; a reference value the source does not give, "not given"."""
    found, ref = _get(summary, "reference")
    ref = ref if found and isinstance(ref, Mapping) else None
    rows: list[tuple[str, ...]] = []

    def row(label: str, key: str, fmt, ref_key: str | None = None, ref_fmt=None) -> None:
        found, value = _get(summary, key)
        cells = [label, fmt(value) if found else MISSING]
        if ref is not None:
            has, given = _get(ref, ref_key) if ref_key else (False, None)
            cells.append((ref_fmt or fmt)(given) if has and given is not None
                         else "not given")
        rows.append(tuple(cells))

    _, expected = _get(summary, "reduction_mwh.expected")
    ref_expected = _get(ref, "reduction_mwh.expected")[1] if ref is not None else None
    for name in DR_PASSES:
        row(f"reduction, {name}, MWh (share)", f"reduction_mwh.{name}",
            lambda v: _fmt_reduction(v, expected), f"reduction_mwh.{name}",
            lambda v: _fmt_reduction(v, ref_expected))
    row("utility non-compliance predicted", "prediction.utility_noncompliance_time",
        time_cell, "utility_noncompliance_time")
    row("groups compliant at prediction", "prediction.groups_compliant_at_prediction",
        lambda v: _fmt_groups(v, summary), "groups_compliant_at_prediction",
        lambda v: _fmt_groups(v, summary))
    row("prediction on the expected pass", "prediction.expected_pass_noncompliance_time",
        time_cell)
    row("household precision / recall, while tested", "prediction",
        lambda p: pair_cell(p, "household_precision", "household_recall"))
    row("household precision / recall, whole program", "prediction",
        lambda p: pair_cell(p, "household_precision_whole_program",
                            "household_recall_whole_program"))
    for feature in REGISTERED:  # the monitoring features' own rows
        found, section = _get(summary, feature.section or feature.name)
        rows += [(label, value, *(("",) if ref is not None else ()))
                 for label, value in (feature.headline(section) if found else [])]
    columns = ["quantity", "this run"] + ([] if ref is None else ["reference"])
    return columns, rows


def simulate_table(summary: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, ...]]]:
    """The headline table of a simulation's summary (``drsim simulate``): column names and
    rows, with the reductions of the scenario's published reference beside drsim's when it
    declares one. A missing key shows "—"."""
    found, ref = _get(summary, "reference")
    ref = ref if found and isinstance(ref, Mapping) else None
    ref_expected = _get(ref, "reduction_mwh.expected")[1] if ref is not None else None
    rows: list[tuple[str, ...]] = []

    def row(label: str, fmt, *keys: str, ref_key: str | None = None) -> None:
        values = [_get(summary, key) for key in keys]
        cells = [label, fmt(*(v for _, v in values)) if all(f for f, _ in values)
                 else MISSING]
        if ref is not None:
            given = _get(ref, ref_key)[1] if ref_key else None
            cells.append(_fmt_reduction(given, ref_expected) if given is not None
                         else "not given" if ref_key else "")
        rows.append(tuple(cells))

    row("EV households", lambda n: f"{n:,}", "scenario.ev_households")
    row("energy per household", lambda e: f"{e:.2f} kWh/day", "energy.kwh_per_household_day")
    row("evening peak per household", lambda kw, t: f"{kw:.3f} kW at {t}",
        "energy.evening_peak_kw_per_household", "energy.evening_peak_time")
    _, program = _get(summary, "scenario.settings.dr_program")
    window = f" {program['start']}–{program['end']}" if isinstance(program, Mapping) else ""
    _, expected = _get(summary, "reduction_mwh.expected")
    for name in MONITORED:
        row(f"reduction{window}, {name}, MWh (share)",
            lambda v: _fmt_reduction(v, expected), f"reduction_mwh.{name}",
            ref_key=f"reduction_mwh.{name}")
    _, method = _get(summary, "baseline.method")
    row(f"reduction{window}, utility's estimate ({method})", lambda v: f"{v:.2f} MWh",
        "baseline.expected_reduction_mwh")
    row("reduction goal", lambda v: f"{v:.2f} MWh", "reduction_goal_mwh")
    for name in MONITORED:
        row(f"rebound peak, {name}", lambda mw, t: f"{mw:.2f} MW at {t}",
            f"peaks.rebound_peak_mw.{name}", f"peaks.rebound_peak_time.{name}")
    row("chunks / tasks", lambda c, t, name, master: f"{c} / {t} on {master or name}",
        "backend.chunks", "backend.tasks", "backend.name", "backend.master")
    row("wall time", lambda s: f"{s:.1f} s", "timings.total_seconds")
    return ["quantity", "this simulation"] + ([] if ref is None else ["reference"]), rows


def monitor_table(summary: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, ...]]]:
    """The headline table of ``drsim monitor``'s summary: column names and rows."""
    rows: list[tuple[str, ...]] = []

    def row(label: str, fmt, *keys: str) -> None:
        values = [_get(summary, key) for key in keys]
        rows.append((label, fmt(*(v for _, v in values)) if all(f for f, _ in values)
                     else MISSING))

    row("readings: rows / bad rows dropped / lost", lambda n, bad, lost:
        f"{n:,} / {sum(bad.values()):,} / {lost:,}", "readings.rows",
        "readings.bad_rows_dropped", "readings.lost_readings")
    row("utility non-compliance predicted", time_cell, "prediction.utility_noncompliance_time")
    row("groups compliant at prediction", lambda v: _fmt_groups(v, summary),
        "prediction.groups_compliant_at_prediction")
    row("groups latched", lambda times: ", ".join(f"{g} {t}" for g, t in times.items()
                                                  if t) or "none",
        "prediction.group_noncompliance_times")
    row("reduction realised at t_nc, share of expected", share_cell,
        "deficit_at_prediction.share_of_expected")
    row("second event", lambda e: "none" if e is None else f"{e['start']}–{e['end']}",
        "second_event")
    row("lottery: p_inc / expected cost", lambda inc: "n/a" if inc is None else
        f"{inc['p_inc']:.4f} / {inc['lottery_cost']:.2f} {inc['currency']}", "incentive")
    row("γ from", str, "prediction.thresholds_from")
    row("wall time", lambda s: f"{s:.1f} s", "timings.total_seconds")
    return ["quantity", "these readings"], rows


def headline(summary: Mapping[str, Any]) -> list[RenderableType]:
    """The headline of a run's or a simulation's summary as rich renderables: the table,
    the reference's source and the second event's note when there are any."""
    scenario = summary.get("scenario") if isinstance(summary.get("scenario"), Mapping) else {}
    name = scenario.get("name", "")
    households = scenario.get("households")
    who = f", {households:,} households" if isinstance(households, int) else ""
    is_run, is_monitor = "prediction" in summary, "readings" in summary
    columns, rows = monitor_table(summary) if is_monitor else run_table(summary) if is_run \
        else simulate_table(summary)
    title = f"{name}{who}: " + ("monitoring of recorded readings" if is_monitor else
                                "adaptive DR" if is_run else "simulation")
    table = Table(title=Text(title, style="bold"), title_justify="left")
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right")
    for cells in rows:
        table.add_row(*(Text(c) for c in cells))
    out: list[RenderableType] = [table]
    found, ref = _get(summary, "reference")
    if found and isinstance(ref, Mapping) and ref.get("source"):
        out.append(Text(f"reference: {ref['source']}"))
    found, note = _get(summary, "second_event_note")
    if found and note:
        out.append(Text(f"second event: {note}"))
    return out
