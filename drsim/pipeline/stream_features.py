"""The monitoring features in a stream (docs/streaming.md, "Lost readings"): their rows
merged as batch merges the chunks' rows.

A streamed feature's rows of a chunk may come in two parts
(:class:`drsim.utility.features.FeatureChunk`): its chunk task's, where the simulation is
(a streamed run's passes job, :func:`drsim.pipeline.tasks.stream_task`), and the stream's
meter stage's once the gateway's program is decided (rows of kind ``feature``,
:mod:`drsim.pipeline.stream_tiers`); :meth:`~drsim.utility.features.MonitoringFeature.merge`
sums them. On recorded readings the features run as ``drsim monitor`` runs them, on as
the readings that did not arrive say (:func:`readings_context`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from drsim.pipeline.backend import Backend
from drsim.pipeline.evaluation import tier_outcome
from drsim.pipeline.monitor import MONITORED_PASS
from drsim.pipeline.stages import Monitored, check_run
from drsim.pipeline.stream_tiers import StreamContext, user_event_rows
from drsim.pipeline.tasks import TIERS, WORK_ROWS
from drsim.scenario import Scenario
from drsim.utility.feature_registry import active_features, features_of
from drsim.utility.features import MonitoringFeature, feature_output, feature_schema
from drsim.utility.monitoring import MonitoringPlan

__all__ = ["feature_merges", "chunk_feature_rows", "readings_context", "monitored_from",
           "check_monitor_stream", "TIER_KINDS"]

#: the kinds of the group leaders' and the utility's rows (drsim.pipeline.tasks.TIERS)
TIER_KINDS = ("alert", "event", "work", "t_nc", "forecast", "user_events_shed",
              "group_event_shed", "device", "sizing")


def monitored_from(context: StreamContext, rows: pd.DataFrame, names: tuple[str, ...],
                   features: tuple[MonitoringFeature, ...] = (),
                   chunk_rows: dict[str, pd.DataFrame] | None = None) -> Monitored:
    """What the tiers produced (:class:`drsim.pipeline.stages.Monitored`) from the stream's
    rows so far: the meter tier's work and outcome counts per group, the group leaders'
    and the utility's rows (:data:`TIER_KINDS`, a device's list from its JSON), each
    pass's latches and t_nc, the user events, and each of the monitoring ``features``'
    merge (:func:`feature_merges`, with the rows its chunk tasks made, ``chunk_rows``)
    with the tiers' rows (:meth:`~drsim.utility.features.MonitoringFeature.tier_merge`)."""
    plan = context.plan
    n_groups, k = len(context.sizes), len(plan.test_times)
    work = {n: np.zeros((n_groups, WORK_ROWS, k), dtype=np.int64) for n in names}
    outcomes = {n: np.zeros((n_groups, k + 1, 2), dtype=np.int64) for n in names}
    for row in rows[rows["kind"].isin(("meter", "outcome"))].itertuples(index=False):
        group = int(row.group)
        if row.kind == "meter":  # one row per gateway and test
            at = int(np.searchsorted(plan.test_times, int(row.time)))
            work[row.pass_][group, :, at] += np.asarray(row.counts, np.int64)
        else:
            outcomes[row.pass_][group] += np.asarray(row.counts, np.int64).reshape(k + 1, 2)
    tiers = rows[rows["kind"].isin(TIER_KINDS)]
    counts = np.stack(tiers["counts"].map(lambda c: c if c is not None and len(c) == 2
                                          else [0, 0]).to_numpy()) if len(tiers) else \
        np.zeros((0, 2), dtype=np.int64)
    tier_rows = pd.DataFrame({"pass": tiers["pass_"].astype(str), "group": tiers["group"],
                              "kind": tiers["kind"].astype(str), "time": tiers["time"],
                              "load": tiers["value"].fillna(0.0), "processed": counts[:, 0],
                              "partial_matches": counts[:, 1],
                              "device": [None if pd.isna(n) else json.loads(n)
                                         for n in tiers["note"]]})
    tier_rows = tier_rows.astype({"group": np.int32, "time": np.int64, "load": np.float64,
                                  "processed": np.int64, "partial_matches": np.int64})
    tier_rows = tier_rows[TIERS.names].sort_values(["pass", "group", "kind", "time"],
                                                   kind="stable", ignore_index=True)
    outcome = {n: tier_outcome(tier_rows, n, n_groups) for n in names}
    merged = feature_merges(features, rows, chunk_rows or {})
    return Monitored(plan, context.thresholds, user_event_rows(rows.rename(
        columns={"pass_": "pass"})), work, outcomes, tier_rows, outcome,
        {f.name: f.tier_merge(merged[f.name], tier_rows) for f in features})


def check_monitor_stream(scenario: Scenario,
                         prepared: Mapping[str, tuple[Any, ...]] | None = None
                         ) -> MonitoringPlan:
    """The monitoring plan of ``drsim monitor --stream``, or ValueError in one line for a
    monitoring feature recorded readings cannot feed
    (:attr:`~drsim.utility.features.MonitoringFeature.readings_refusal`) unless the caller
    hands in its prepared values (``prepared``, by feature: load shedding's cost models);
    a feature :attr:`~drsim.utility.features.MonitoringFeature.sized_on_the_day` needs
    those of the whole day too (load shedding's device sizes,
    :meth:`~drsim.utility.features.MonitoringFeature.day_sizes`), which a stream of
    readings has only at its end."""
    given = prepared or {}
    for feature in active_features(scenario):
        if feature.name not in given:
            if feature.readings_refusal is not None:
                raise ValueError(f"{feature.scenario_key}: {feature.readings_refusal}")
            if feature.sized_on_the_day:
                raise ValueError(f"{feature.scenario_key}: a stream of readings needs the "
                                 "run's prepared values (its cost models) and the devices' "
                                 "sizes of the whole day; monitor in batch")
        elif feature.sized_on_the_day and len(given[feature.name]) < 2:
            raise ValueError(f"{feature.scenario_key}: a stream of readings decides before "
                             "the day is over, and the devices are sized on the whole "
                             "day's unshed runs: hand in their sizes, or monitor in batch")
    return check_run(scenario)


def feature_merges(features: tuple[MonitoringFeature, ...], rows: pd.DataFrame,
                   chunk_rows: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Each monitoring feature's merge (:meth:`~drsim.utility.features.MonitoringFeature.merge`)
    of its rows: those the meter stage made (kind ``feature``, each a gateway's pass as
    JSON in ``note``, drsim.pipeline.stream_tiers; of a gateway's pass the latest only)
    with those its chunk tasks made (``chunk_rows``, by feature name), by chunk then pass
    as in batch."""
    made = rows[rows["kind"] == "feature"]
    parsed = [(int(g), int(group), str(name), json.loads(text), int(t))
              for g, group, name, text, t in zip(made["gateway"], made["group"],
                                                 made["pass_"], made["note"], made["time"],
                                                 strict=True)]
    # a gateway's latest rows of a pass replace its earlier ones (those of the tests so
    # far, drsim.utility.features.MonitoringFeature.rows_so_far)
    latest: dict[tuple, int] = {}
    for g, _, name, row, t in parsed:
        key = (g, name, row["feature"])
        latest[key] = max(t, latest.get(key, t))
    parsed = [p[:4] for p in parsed if p[4] == latest[(p[0], p[2], p[3]["feature"])]]
    out = {}
    for feature in features:
        mine = [(g, group, name, row) for g, group, name, row in parsed
                if row["feature"] == feature.name]
        frame = pd.DataFrame({"chunk": [m[0] for m in mine], "group": [m[1] for m in mine],
                              "pass": [m[2] for m in mine],
                              **{c: [m[3][c] for m in mine] for c in feature.schema.names}},
                             columns=feature_schema(feature).names)
        given = chunk_rows.get(feature.name)
        if given is not None and len(given):
            frame = pd.concat([given, frame], ignore_index=True) if len(frame) else given
        out[feature.name] = feature.merge(frame.sort_values(["chunk", "pass"], kind="stable",
                                                            ignore_index=True))
    return out


def chunk_feature_rows(backend: Backend, handles: dict[str, Any],
                       features: tuple[MonitoringFeature, ...]) -> dict[str, pd.DataFrame]:
    """The monitoring features' rows the passes job's chunk tasks made, by feature name,
    by chunk then pass (drsim.pipeline.tasks.stream_task)."""
    out = {}
    for feature in features:
        rows = backend.collect(handles[feature_output(feature.name)]).to_pandas()
        out[feature.name] = rows.sort_values(["chunk", "pass"], kind="stable",
                                             ignore_index=True)
    return out


def readings_context(context: StreamContext, rows: pd.DataFrame) -> StreamContext:
    """``context`` with the monitoring features as :func:`drsim.pipeline.monitor.monitor`
    runs them on readings of which those the stream's rows count as lost so far did not
    arrive (:meth:`~drsim.utility.features.MonitoringFeature.with_readings`): lost
    readings on only when some are."""
    lost = int(rows.loc[(rows["kind"] == "lost") & (rows["pass"] == MONITORED_PASS),
                        "value"].sum())
    features = tuple(f for f in (f.with_readings(lost)
                                 for f in features_of(context.scenario)) if f.active)
    return dataclasses.replace(context, features=features)
