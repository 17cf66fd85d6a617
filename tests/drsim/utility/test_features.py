"""The seam of the optional monitoring features (drsim.utility.features and its registry):
features that exclude each other are refused together, and a feature's headline rows are
shown in a run's headline table without the table naming it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from small_scenarios import quickstart

from drsim.results import headline
from drsim.results.summary_model import Summary
from drsim.scenario import scenario_from_dict
from drsim.utility import feature_registry
from drsim.utility.appliance_monitoring import ApplianceQueries
from drsim.utility.features import FEATURE_KEYS, MonitoringFeature, feature_schema


@dataclass(frozen=True)
class Toy(MonitoringFeature):
    """A feature that is always on, counts nothing and cannot run beside appliance
    queries."""

    name = "toy"
    scenario_key = "monitoring.toy"
    schema = pa.schema([("n", pa.int64())])
    excludes = ("appliance_queries",)

    @classmethod
    def of(cls, scenario: Any) -> Toy:
        return cls()

    @property
    def active(self) -> bool:
        return True

    def chunk_rows(self, chunk: Any, name: str) -> dict[str, list[int]]:
        return {"n": [0]}

    def merge(self, rows: Any) -> int:
        return int(rows["n"].sum())

    def summary(self, merged: Any) -> dict[str, Any]:
        return {"n": merged}

    @classmethod
    def headline(cls, section: Any) -> list[tuple[str, str]]:
        return [("toy count", str(section["n"]))]


def test_features_that_exclude_each_other_are_refused_together(monkeypatch):
    monkeypatch.setattr(feature_registry, "REGISTERED", (ApplianceQueries, Toy))
    plain = scenario_from_dict(quickstart(1200))
    assert [f.name for f in feature_registry.features_of(plain)] == ["appliance_queries",
                                                                     "toy"]
    assert [f.name for f in feature_registry.active_features(plain)] == ["toy"]
    data = quickstart(1200)
    data["monitoring"]["appliance_queries"] = {"q": {"query": "PATTERN SEQ(dr_start s, "
                                                              "dr_end e) WHERE SAME[houseID] "
                                                              "WITHIN 3h"}}
    with pytest.raises(ValueError, match="^monitoring.toy: not modelled together with "
                                         "appliance_queries"):
        feature_registry.active_features(scenario_from_dict(data))


def test_a_features_headline_rows_follow_the_runs_own(monkeypatch, run_summary):
    monkeypatch.setattr(headline, "REGISTERED", (Toy,))
    summary = Summary.model_validate({**run_summary, "toy": {"n": 7}})
    _, rows = headline.run_table(summary)
    assert rows[-1] == ("toy count", "7")
    _, rows = headline.run_table(Summary.model_validate(run_summary))
    assert all(r[0] != "toy count" for r in rows)


def test_a_features_chunk_output_has_the_keys_before_its_own_columns():
    assert feature_schema(Toy()).names == [*FEATURE_KEYS.names, "n"]
