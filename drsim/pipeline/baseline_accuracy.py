"""The baseline accuracy table: each M&V method's error against the truth, per household
and per group aggregate, over the DR window (``drsim baselines``, docs/mv_accuracy.md).

For a sample of a scenario's households (the first N of each group), every value of
``baseline.method`` (read from the scenario schema, so that a method added there appears
here) estimates B̂ and P̂ over the DR window as a run publishes them
(:func:`drsim.pipeline.passes.simulate_chunk`: the method with the scenario's M&V error and
day-of adjustment). The truth is the same-day counterfactual without M&V error
(``same_day`` with the schema's defaults): B the household's simulated no-DR day, P̂ its
expected complete response (drsim.utility.baseline). The metered load P is a simulated
pass of the evaluated day under the program, the traditional one by default (the
observed follow-through θ_red, §6.3.2). Whatever changes the simulated days (a common
day factor, for example) reaches the table through the simulation alone.

Per method and level (household; group: each group's aggregate over its sampled
households) the table gives the distribution (median, 90th percentile) of the CV(RMSE)
and normalised mean bias of B̂ against B and of P̂ against the true P̂, and the
settlement error: the reduction paid for, Σ (B̂ − P), against the true one, Σ (B − P)
(:mod:`drsim.utility.mv_accuracy`).

Determinism: a household's curves depend on its id and the scenario's seed alone, and
the group aggregates are sums of whole µkW (exact in any order), so the table is the same
for any chunk size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Annotated, Literal, get_args, get_origin

import numpy as np
import pandas as pd

from drsim.household.render import micro_kw
from drsim.pipeline.passes import Chunk, simulate_chunk
from drsim.scenario import Scenario
from drsim.scenario.loading import scenario_from_dict
from drsim.scenario.program_settings import BaselineSettings
from drsim.units import MICRO
from drsim.utility.mv_accuracy import (
    MINUTES_PER_HOUR,
    cv_rmse,
    normalised_mean_bias,
    settlement_error,
)

__all__ = ["LEVELS", "AccuracyTable", "accuracy_table", "baseline_methods", "method_scenario",
           "sample_chunks", "truth_scenario"]

LEVELS = ("household", "group")
TRUTH = "same_day"  # the method whose estimates, without M&V error, are the truth
PASSES = ("expected", "traditional")  # the simulated passes under the program


def _literal_values(annotation) -> list[str]:
    """The values of every Literal inside ``annotation`` (through Annotated and unions)."""
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    args = get_args(annotation)[:1] if get_origin(annotation) is Annotated \
        else get_args(annotation)
    return [value for arg in args for value in _literal_values(arg)]


def baseline_methods() -> tuple[str, ...]:
    """The M&V methods the scenario schema accepts (``baseline.method``), in its order."""
    return tuple(dict.fromkeys(_literal_values(
        BaselineSettings.model_fields["method"].annotation)))


def _with_baseline(scenario: Scenario, baseline: dict, what: str) -> Scenario:
    data = scenario.model_dump()
    data["baseline"] = baseline
    source = f"{scenario.source_path or scenario.name} ({what})"
    return scenario_from_dict(data, source).model_copy(
        update={"source_path": scenario.source_path})


def method_scenario(scenario: Scenario, method: str) -> Scenario:
    """The scenario with M&V method ``method`` and its other baseline settings (M&V error,
    day-of adjustment); ScenarioError, one line naming the key, if they do not fit."""
    return _with_baseline(scenario, {**scenario.baseline.model_dump(), "method": method},
                          f"baseline.method {method}")


def truth_scenario(scenario: Scenario) -> Scenario:
    """The scenario with ``same_day`` M&V and every other baseline setting at the schema's
    default (no M&V error, no adjustment): its B̂ and P̂ are the truth."""
    return _with_baseline(scenario, {"method": TRUTH}, "the truth")


def sample_chunks(scenario: Scenario, households: int, chunk_size: int | None = None
                  ) -> list[Chunk]:
    """Chunks of the first ``households`` households of every group (all of a smaller
    group), of at most ``chunk_size`` households (default: the scenario's)."""
    if households < 1:
        raise ValueError(f"households per group must be at least 1, got {households}")
    size = scenario.chunk_size if chunk_size is None else chunk_size
    chunks: list[Chunk] = []
    for group, (lo, hi) in enumerate(scenario.group_ranges()):
        end = min(hi, lo + households)
        for first in range(lo, end, size):
            chunks.append(Chunk(len(chunks), first, min(size, end - first), group))
    return chunks


@dataclass(frozen=True)
class AccuracyTable:
    """The baseline accuracy table of a scenario's sample (:func:`accuracy_table`).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per method and level (:data:`LEVELS`), columns of :func:`summary_row`.
    scenario : str
        The scenario's name.
    seed : int
        The scenario's seed.
    households_per_group : int
        The sample: the first this many households of each group.
    households : int
        Households in the sample.
    window : tuple of int
        The DR window [start, end) [minutes since midnight].
    metered : str
        The pass whose load is the metered P.
    """

    table: pd.DataFrame
    scenario: str
    seed: int
    households_per_group: int
    households: int
    window: tuple[int, int]
    metered: str


@dataclass
class _Errors:
    """One method's errors at one level, per unit (household or group)."""

    baseline_cv: list[np.ndarray]
    baseline_nmb: list[np.ndarray]
    expected_cv: list[np.ndarray]
    expected_nmb: list[np.ndarray]
    energy: list[np.ndarray]
    paid: list[np.ndarray]
    true: list[np.ndarray]
    error: list[np.ndarray]
    relative: list[np.ndarray]

    @classmethod
    def empty(cls) -> _Errors:
        return cls(*([] for _ in fields(cls)))

    def add(self, b_est, b_true, p_est, p_true, metered) -> None:
        """Append the errors of rows of curves (households or groups × minutes) [kW]."""
        settled = settlement_error(b_est, b_true, metered)
        for values, column in ((cv_rmse(b_est, b_true), self.baseline_cv),
                               (normalised_mean_bias(b_est, b_true), self.baseline_nmb),
                               (cv_rmse(p_est, p_true), self.expected_cv),
                               (normalised_mean_bias(p_est, p_true), self.expected_nmb),
                               (np.sum(b_true, axis=-1) / MINUTES_PER_HOUR, self.energy),
                               (settled.paid_kwh, self.paid), (settled.true_kwh, self.true),
                               (settled.error_kwh, self.error),
                               (settled.relative, self.relative)):
            column.append(values)


def _stat(values: np.ndarray, q: float) -> float:
    """The q-th percentile of the finite values (NaN when there are none)."""
    finite = values[np.isfinite(values)]
    return float(np.percentile(finite, q)) if finite.size else float("nan")


def summary_row(method: str, level: str, errors: _Errors) -> dict[str, float | int | str]:
    """The table's row of one method and level: medians and 90th percentiles over the
    units (CV(RMSE) and NMB of B̂ and P̂ [1]; NMB and the settlement error also as the
    90th percentile of their absolute values), and over the whole sample the true
    baseline's energy and the settlement (paid and true reduction [kWh], relative error
    [1]: about the NMB of the summed B̂ times ``baseline_kwh / settlement_true_kwh``)."""
    e = {f.name: np.concatenate(getattr(errors, f.name)) for f in fields(errors)}
    paid, true = float(e["paid"].sum()), float(e["true"].sum())
    row: dict[str, float | int | str] = {"method": method, "level": level,
                                         "units": int(e["paid"].size)}
    for quantity in ("baseline", "expected"):
        cv, nmb = e[f"{quantity}_cv"], e[f"{quantity}_nmb"]
        row[f"{quantity}_cv_rmse_median"] = _stat(cv, 50)
        row[f"{quantity}_cv_rmse_p90"] = _stat(cv, 90)
        row[f"{quantity}_nmb_median"] = _stat(nmb, 50)
        row[f"{quantity}_nmb_abs_p90"] = _stat(np.abs(nmb), 90)
    row["baseline_kwh"] = float(e["energy"].sum())
    row["settlement_paid_kwh"] = paid
    row["settlement_true_kwh"] = true
    row["settlement_relative"] = (paid - true) / true if true > 0 else float("nan")
    row["settlement_error_kwh_median"] = _stat(e["error"], 50)
    row["settlement_error_kwh_abs_p90"] = _stat(np.abs(e["error"]), 90)
    row["settlement_relative_median"] = _stat(e["relative"], 50)
    row["settlement_relative_abs_p90"] = _stat(np.abs(e["relative"]), 90)
    return row


def _chunk_curves(truth: Scenario, variants: dict[str, Scenario], chunk: Chunk, metered: str
                  ) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """One chunk's true curves (B, P̂, the metered P) and each method's (B̂, P̂) [kW]."""
    exact = simulate_chunk(truth, chunk, households=True)
    curves = {"baseline": exact.window_kw["baseline"],
              "expected": exact.estimate_window_kw["expected"],
              "metered": exact.window_kw[metered]}
    estimates = {}
    for method, scenario in variants.items():
        published = simulate_chunk(scenario, chunk, households=True).estimate_window_kw
        estimates[method] = (published["baseline"], published["expected"])
    return curves, estimates


def accuracy_table(scenario: Scenario, households: int, chunk_size: int | None = None,
                   metered: str = "traditional",
                   progress: Callable[[int, int], None] | None = None) -> AccuracyTable:
    """Measure every M&V method's error against the truth on a sample (module doc).

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario (its M&V error and day-of adjustment apply to every method).
    households : int
        The sample: the first this many households of each group.
    chunk_size : int, optional
        Households simulated at a time (default: the scenario's); the table does not
        depend on it.
    metered : {'traditional', 'expected'}
        The pass whose load is the metered P of the settlement.
    progress : callable, optional
        ``progress(done, total)`` after each chunk.

    Returns
    -------
    AccuracyTable
        One row per method and level.
    """
    if metered not in PASSES:
        raise ValueError(f"metered pass {metered!r}: expected one of {', '.join(PASSES)}")
    methods = baseline_methods()
    truth = truth_scenario(scenario)
    variants = {m: method_scenario(scenario, m) for m in methods}
    chunks = sample_chunks(scenario, households, chunk_size)
    per_household = {m: _Errors.empty() for m in methods}
    sums: dict[tuple[str, int], np.ndarray] = {}  # (curve, group) -> whole µkW per minute
    for done, chunk in enumerate(chunks, start=1):
        curves, estimates = _chunk_curves(truth, variants, chunk, metered)
        for method, (b_est, p_est) in estimates.items():
            per_household[method].add(b_est, curves["baseline"], p_est, curves["expected"],
                                      curves["metered"])
            curves[f"{method}:baseline"], curves[f"{method}:expected"] = b_est, p_est
        for name, kw in curves.items():
            total = micro_kw(kw).sum(axis=0)
            sums[name, chunk.group] = sums.get((name, chunk.group), 0) + total
        if progress is not None:
            progress(done, len(chunks))
    groups = sorted({chunk.group for chunk in chunks})

    def aggregate(name: str) -> np.ndarray:
        return np.stack([sums[name, g] for g in groups]) / MICRO

    rows = []
    for method in methods:
        per_group = _Errors.empty()
        per_group.add(aggregate(f"{method}:baseline"), aggregate("baseline"),
                      aggregate(f"{method}:expected"), aggregate("expected"),
                      aggregate("metered"))
        rows += [summary_row(method, "household", per_household[method]),
                 summary_row(method, "group", per_group)]
    program = scenario.dr_program
    return AccuracyTable(pd.DataFrame(rows), scenario.name, scenario.seed, households,
                         sum(c.count for c in chunks),
                         (program.start_minute, program.end_minute), metered)
