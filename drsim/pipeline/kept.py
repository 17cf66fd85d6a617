"""What a run folder keeps of the monitoring features' stages before the passes.

A feature's stage before the passes (:class:`drsim.utility.features.Preparation`; load
shedding's cost models, each group's fitted on a simulated previous day, Ch. 4 §4.3) runs
on simulated households, and ``drsim monitor`` simulates nothing. So a stage with a
``file`` has its rows kept in the run folder, with what they were made for in the file's
metadata (:func:`kept_table`), and the monitor makes the stage's value from the rows
(:func:`kept_values`) once it has checked that they were made for the scenario it
monitors (:func:`difference`): the same groups and settings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from drsim.pipeline.tasks import simulate_households
from drsim.scenario import Scenario
from drsim.utility.feature_registry import active_features
from drsim.utility.features import MonitoringFeature, Preparation
from drsim.utility.monitoring import MonitoringPlan

__all__ = ["MADE_FOR", "Reader", "difference", "kept_table", "kept_values"]

#: the metadata key of a kept file under which what its rows were made for is (JSON)
MADE_FOR = b"drsim.made_for"
#: ``read(feature, stage)``: the rows kept of ``stage`` of ``feature`` and the file they
#: were read from, as errors name it; or ValueError in one line when there is none
Reader = Callable[[MonitoringFeature, Preparation], tuple[pa.Table, str]]


def kept_table(step: Preparation, rows: pa.Table) -> pa.Table:
    """Return the rows of stage ``step`` as its file keeps them.

    Parameters
    ----------
    step : drsim.utility.features.Preparation
        The stage, with its ``file`` and ``made_for``.
    rows : pyarrow.Table
        Its tasks' rows.

    Returns
    -------
    pyarrow.Table
        ``rows`` with ``step.made_for`` as JSON under :data:`MADE_FOR` in the metadata.
    """
    return rows.replace_schema_metadata({MADE_FOR: json.dumps(step.made_for or {})})


def difference(found: Any, wanted: Any, key: str = "") -> tuple[str, Any, Any] | None:
    """Return the first key (dotted) whose values differ, and the two; None: equal.

    Parameters
    ----------
    found, wanted : object
        JSON data: what the rows were made for, and what the scenario needs.
    key : str, default ""
        The key of ``found`` and ``wanted``.

    Returns
    -------
    tuple of (str, object, object) or None
        The key and the two values of the first difference, mappings searched by key.

    Examples
    --------
    >>> difference({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}})
    ('a.c', 2, 3)
    >>> difference({"a": [1]}, {"a": [1]}) is None
    True
    """
    if isinstance(found, dict) and isinstance(wanted, dict):
        for k in sorted(set(found) | set(wanted)):
            differs = difference(found.get(k), wanted.get(k), f"{key}.{k}" if key else k)
            if differs is not None:
                return differs
        return None
    return None if found == wanted else (key, found, wanted)


def _checked(feature: MonitoringFeature, step: Preparation, table: pa.Table, where: str
             ) -> pa.Table:
    """``table``'s columns of the stage, or ValueError in one line naming the scenario key
    and ``where``: a column missing, no record of what it was made for, or made for
    another scenario (the first key that differs)."""
    missing = [c for c in step.schema.names if c not in table.column_names]
    found = (table.schema.metadata or {}).get(MADE_FOR)
    if missing or found is None:
        why = f"no column {missing[0]!r}" if missing else "no record of what it was made for"
        raise ValueError(f"{feature.scenario_key}: {where} is not a run's {step.file} ({why})")
    differs = difference(json.loads(found), json.loads(json.dumps(step.made_for or {})))
    if differs is not None:
        key, theirs, ours = differs
        raise ValueError(f"{feature.scenario_key}: the {step.label} of {where} were made for "
                         f"{key} {theirs}, the scenario's is {ours}")
    return table.select(step.schema.names)


def kept_values(scenario: Scenario, plan: MonitoringPlan, read: Reader
                ) -> dict[str, tuple[Any, ...]]:
    """Return the values of the active features' stages before the passes, from the rows
    a run kept of them.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario of the readings.
    plan : drsim.utility.monitoring.MonitoringPlan
        Its monitoring plan.
    read : callable
        ``read(feature, stage)``: the rows kept and where they were read (:data:`Reader`).

    Returns
    -------
    dict of str to tuple
        Feature name -> its stages' values, as the run had them (``prepared`` of the
        chunk tasks and the tiers); only the features that have such stages.

    Raises
    ------
    ValueError
        In one line naming the scenario key: a stage no file keeps (it would need a
        simulation), or rows that are not the stage's or were made for another scenario.
    """
    prepared = {}
    for feature in active_features(scenario):
        values = []
        for step in feature.preparations(scenario, plan, simulate_households):
            if step.file is None:
                raise ValueError(f"{feature.scenario_key}: drsim monitor simulates nothing "
                                 f"and cannot run the stage {step.label!r}")
            table, where = read(feature, step)
            values.append(step.finish(_checked(feature, step, table, where).to_pandas()))
        if values:
            prepared[feature.name] = tuple(values)
    return prepared
