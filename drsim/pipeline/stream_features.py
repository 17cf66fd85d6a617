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
from typing import Any

import pandas as pd

from drsim.pipeline.backend import Backend
from drsim.pipeline.monitor import MONITORED_PASS
from drsim.pipeline.stream_tiers import StreamContext
from drsim.utility.feature_registry import features_of
from drsim.utility.features import MonitoringFeature, feature_output, feature_schema

__all__ = ["feature_merges", "chunk_feature_rows", "readings_context"]


def feature_merges(features: tuple[MonitoringFeature, ...], rows: pd.DataFrame,
                   chunk_rows: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Each monitoring feature's merge (:meth:`~drsim.utility.features.MonitoringFeature.merge`)
    of its rows: those the meter stage made (kind ``feature``, each a gateway's pass as
    JSON in ``note``, drsim.pipeline.stream_tiers) with those its chunk tasks made
    (``chunk_rows``, by feature name), by chunk then pass as in batch."""
    made = rows[rows["kind"] == "feature"]
    parsed = [(int(g), int(group), str(name), json.loads(text)) for g, group, name, text
              in zip(made["gateway"], made["group"], made["pass_"], made["note"],
                     strict=True)]
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
