"""What the HTML report shows of a run folder (:class:`RunView`), read from its files alone.

A run folder (``drsim run``, ``simulate`` or ``monitor``; README.md, "What a run does and
writes") holds summary.json, ``load_curves.parquet`` (pass, group, minute, kw),
``thresholds.parquet`` (group, time, expected_share, gamma) and the user events (a Parquet
dataset: pass, time, houseID, groupID, ...). From them: the headline with the scenario's
reference beside it (:func:`drsim.results.headline.headline_table`), the system demand of
each pass (Figure 6.11 of the dissertation, §6.3.2), and per group and test time the share
of its called households flagged non-compliant against its threshold γ[groupID, time]
(Listing 6.2: a group event where the share flagged exceeds γ). The figures are built
from this data, never from the folder's PNGs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from drsim.results.headline import headline_table
from drsim.results.report import ReportError, load_summary
from drsim.results.summary_model import Summary
from drsim.units import DAY

__all__ = ["Compliance", "RunView", "read_run_folder"]

LOAD_CURVES = "load_curves.parquet"
THRESHOLDS = "thresholds.parquet"
USER_EVENTS = "events_user_events.parquet"
#: the passes whose households the meter tier tests (Listing 6.1), drawn against γ
TESTED_PASSES = ("traditional", "expected")


@dataclass(frozen=True)
class Compliance:
    """Per group and test time, the share of the group's called households flagged
    (a user event of Listing 6.1) and the group's threshold γ (Listing 6.2).

    Times are minutes since midnight [min]; shares and γ are fractions [1]."""

    group_names: list[str]
    test_times: np.ndarray  # (tests,) [min]
    gamma: np.ndarray  # (groups, tests) [1]
    # pass -> (groups, tests) [1], NaN after the group's meters stopped being tested
    flagged: dict[str, np.ndarray]
    latch: dict[str, list[int | None]]  # pass -> per group, its latch [min] (None: never)


@dataclass(frozen=True)
class RunView:
    """The data of a run folder's HTML report."""

    folder: Path
    title: str  # the headline's title
    columns: list[str]  # the headline's columns (with "reference" where one is declared)
    rows: list[tuple[str, ...]]  # the headline's rows, as text
    notes: list[str]  # below the headline: the reference's source, the second event's note
    system_mw: dict[str, np.ndarray]  # pass -> (1440,) system demand [MW], in pass order
    program: tuple[int, int] | None  # the DR program (start, end) [min]
    second_event: tuple[int, int, int] | None  # DR2 (announced, start, end) [min]
    t_nc: int | None  # the utility's non-compliance prediction [min]
    reduction_goal_mwh: float | None  # the program's goal λ (Eq. 6.1) [MWh]
    compliance: Compliance | None  # None: the folder has no thresholds or user events
    scenario_yaml: str  # the scenario as it ran (summary.json's settings) as YAML


def read_run_folder(folder: str | Path) -> RunView:
    """The report's data of the run folder ``folder``; ReportError (one line naming the
    path) when it is not a folder drsim wrote."""
    folder = Path(folder)
    raw = load_summary(folder)
    try:
        summary = Summary.model_validate(raw)
    except ValueError:
        raise ReportError(f"{folder / 'summary.json'}: not a summary of this drsim version; "
                          f"drsim report {folder} --full prints every field") from None
    title, columns, rows, notes = headline_table(summary)
    prediction, second = summary.prediction, summary.second_event
    t_nc = None if prediction is None else prediction.utility_noncompliance_time
    return RunView(
        folder=folder, title=title, columns=columns, rows=rows, notes=notes,
        system_mw=_system_mw(folder / LOAD_CURVES),
        program=_program(summary.scenario.settings),
        second_event=None if second is None else (second.announced, second.start, second.end),
        t_nc=t_nc, reduction_goal_mwh=summary.reduction_goal_mwh,
        compliance=_compliance(folder, summary),
        scenario_yaml=yaml.safe_dump(raw["scenario"]["settings"], sort_keys=False,
                                     allow_unicode=True))


def _system_mw(path: Path) -> dict[str, np.ndarray]:
    """Pass -> the system demand of every minute [MW]: the groups' loads [kW] summed."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return {}
    table = pq.read_table(path, columns=["pass", "minute", "kw"]).to_pandas()
    names = list(dict.fromkeys(table["pass"].astype(str)))  # the folder's pass order
    which = table["pass"].astype(str).map({n: i for i, n in enumerate(names)}).to_numpy()
    minute = table["minute"].to_numpy(dtype=np.int64)
    total = np.zeros((len(names), DAY))
    np.add.at(total, (which, minute), table["kw"].to_numpy(dtype=np.float64))
    return {name: total[i] / 1000.0 for i, name in enumerate(names)}


def _program(settings: dict[str, Any]) -> tuple[int, int] | None:
    from drsim.units import clock_minutes

    program = settings.get("dr_program")
    if not isinstance(program, dict):
        return None
    return clock_minutes(program["start"]), clock_minutes(program["end"])


def _compliance(folder: Path, summary: Summary) -> Compliance | None:
    """The shares flagged per group and test (the user events counted over the group's
    called households, :meth:`Scenario.called_group_sizes`) against γ; None without the
    thresholds or the user events."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from drsim.scenario import scenario_from_dict

    events, thresholds = folder / USER_EVENTS, folder / THRESHOLDS
    if summary.prediction is None or not (events.exists() and thresholds.is_file()):
        return None
    names = list(summary.scenario.groups)
    gamma_rows = pq.read_table(thresholds).to_pandas()
    times = np.unique(gamma_rows["time"].to_numpy(dtype=np.int64))
    gamma = np.full((len(names), len(times)), np.nan)
    gamma[gamma_rows["group"].astype(str).map({n: i for i, n in enumerate(names)}).to_numpy(),
          np.searchsorted(times, gamma_rows["time"].to_numpy(dtype=np.int64))] = \
        gamma_rows["gamma"].to_numpy(dtype=np.float64)
    sizes = np.array(scenario_from_dict(summary.scenario.settings).called_group_sizes(),
                     dtype=np.float64)
    table = ds.dataset(events).to_table(columns=["pass", "time", "groupID"]).to_pandas()
    latch = _latches(summary)
    flagged = {}
    for name in TESTED_PASSES:
        mine = table[table["pass"].astype(str) == name]
        at = np.searchsorted(times, mine["time"].to_numpy(dtype=np.int64))
        tested = (at < len(times)) & (times[np.minimum(at, len(times) - 1)]
                                      == mine["time"].to_numpy())
        counts = np.zeros_like(gamma)
        np.add.at(counts, (mine["groupID"].to_numpy(dtype=np.int64)[tested], at[tested]), 1)
        share = counts / np.maximum(sizes, 1)[:, None]
        share[times[None, :] > _stops(summary, name, latch[name])[:, None]] = np.nan
        flagged[name] = share
    return Compliance(group_names=names, test_times=times, gamma=gamma, flagged=flagged,
                      latch=latch)


def _latches(summary: Summary) -> dict[str, list[int | None]]:
    """Pass -> per group, the minute it latched (its first group event) [min]."""
    p = summary.prediction
    assert p is not None
    names = list(summary.scenario.groups)
    expected = p.expected_pass_group_noncompliance_times or {}
    return {"traditional": [p.group_noncompliance_times.get(n) for n in names],
            "expected": [expected.get(n) for n in names]}


def _stops(summary: Summary, name: str, latch: list[int | None]) -> np.ndarray:
    """Per group, the last minute its meters are tested [min]: its latch, the pass's
    prediction t_nc or the program's last minute, whichever is first (as
    :func:`drsim.pipeline.evaluation.stops`)."""
    p = summary.prediction
    assert p is not None
    program = _program(summary.scenario.settings)
    end = DAY if program is None else program[1] - 1
    t_nc = p.utility_noncompliance_time if name == "traditional" \
        else p.expected_pass_noncompliance_time
    stop = np.array([end if at is None else at for at in latch], dtype=np.int64)
    return stop if t_nc is None else np.minimum(stop, t_nc)
