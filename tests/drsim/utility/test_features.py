"""The seam of the optional monitoring features (drsim.utility.features and its registry):
features that exclude each other are refused together, a feature's headline rows are
shown in a run's headline table without the table naming it, the hooks default to
nothing and reach the meter tier, the costs and the summary where they are asked, and
the pipeline, the results and the API import no feature module."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from small_scenarios import quickstart

from drsim.pipeline import stages, tasks
from drsim.pipeline.backend import SerialBackend
from drsim.results import headline, summary
from drsim.results.summary_model import Summary
from drsim.scenario import scenario_from_dict
from drsim.utility import feature_registry
from drsim.utility.appliance_monitoring import ApplianceQueries
from drsim.utility.features import (
    FEATURE_KEYS,
    FeatureChunk,
    MonitoringFeature,
    Preparation,
    feature_output,
    feature_schema,
)
from drsim.utility.monitoring import MonitoringPlan

ROOT = Path(__file__).resolve().parents[3]
#: the monitoring features' modules, which only the registry imports
FEATURE_MODULES = ("appliance_monitoring", "fetching", "fetching_feature", "readings",
                   "readings_feature", "shedding", "shedding_feature")
PLAN = MonitoringPlan(1110, 1130, 1115, 5, 1, 1, 0, 0.4, 0.4, 1, 15, 2)


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

    def summary(self, merged: Any, run: Any = None) -> dict[str, Any]:
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


@dataclass(frozen=True)
class Inputs(Toy):
    """A feature whose keys join ``monitoring`` and that gives the meter tier, the costs
    and the deficit an input, with a row per pass of its chunk's household count."""

    name = "inputs"
    section = "monitoring"

    def meter_inputs(self, chunk: FeatureChunk) -> dict[str, Any]:
        return {"lost": np.zeros((len(chunk.house_ids), 3), bool)}

    def chunk_rows(self, chunk: FeatureChunk, name: str) -> dict[str, list[int]]:
        return {"n": [len(chunk.house_ids), chunk.meter]}

    def cost_inputs(self, merged: Any, name: str) -> dict[str, Any]:
        return {"silent_spells": merged}

    def summary(self, merged: Any, run: Any = None) -> dict[str, Any]:
        return {"inputs_n": merged, "tests": len(run.plan.test_times)}


def test_the_hooks_default_to_nothing():
    toy, chunk = Toy(), FeatureChunk(PLAN, 0, 0, np.arange(3))
    assert toy.with_readings(5) is toy and toy.readings_lost(chunk) is None
    assert toy.meter_inputs(chunk) == {} and toy.section is None
    assert toy.cost_inputs(1, "traditional") == {} and toy.deficit_inputs(1) == {}
    assert toy.group_inputs(PLAN) == {} and toy.merged_group_inputs(1, None) == {}
    assert toy.chunk_values(PLAN, None) is None and chunk.values == {}
    assert toy.preparations(None, PLAN, print) == ()
    assert toy.passes(("expected",)) == ("expected",)
    assert toy.meter_runs(chunk, print) is print


def test_the_features_meter_inputs_are_merged_for_the_meter_tier():
    got = tasks.meter_inputs((Toy(), Inputs()), FeatureChunk(PLAN, 0, 0, np.arange(4)))
    assert list(got) == ["lost"] and got["lost"].shape == (4, 3)


def test_each_features_rows_of_the_passes_travel_under_its_output():
    parts = [(FeatureChunk(PLAN, 2, 1, np.arange(4), meter=9), "expected"),
             (FeatureChunk(PLAN, 2, 1, np.arange(4), meter=8), "traditional")]
    out = tasks.feature_batches((Inputs(),), parts)
    rows = out[feature_output("inputs")].to_pylist()
    assert [(r["chunk"], r["group"], r["pass"], r["n"]) for r in rows] == [
        (2, 1, "expected", 4), (2, 1, "expected", 9),
        (2, 1, "traditional", 4), (2, 1, "traditional", 8)]


def test_the_costs_take_the_inputs_of_the_features_that_ran(monkeypatch):
    monkeypatch.setattr(feature_registry, "REGISTERED", (Toy, Inputs))
    monkeypatch.setattr(stages, "features_of", feature_registry.features_of)
    seen = {}
    monkeypatch.setattr(stages, "costs", lambda *args, **kwargs: seen.update(kwargs))
    scenario = scenario_from_dict(quickstart(1200))
    monitored = SimpleNamespace(plan=PLAN, meter_work={"traditional": None}, tier_rows=None,
                                outcome={"traditional": None}, features={"inputs": 5})
    stages.pass_costs(scenario, monitored, "traditional")
    assert seen == {"silent_spells": 5}  # Toy did not run: no input of its


def test_a_features_keys_join_the_section_it_names(monkeypatch):
    scenario = scenario_from_dict(quickstart(1200))
    monitored = SimpleNamespace(plan=PLAN, outcome={}, features={"inputs": 3, "toy": 4},
                                thresholds=None)
    run = SimpleNamespace(simulation=SimpleNamespace(scenario=scenario),
                          monitored=monitored, costs={})
    got = summary._feature_sections(run, (Toy(), Inputs()))
    assert got == {None: {"toy": {"n": 4}}, "monitoring": {"inputs_n": 3, "tests": 3}}


def test_a_features_headline_reads_the_section_its_keys_join(monkeypatch, run_summary):
    class Joined(Inputs):
        @classmethod
        def headline(cls, section: Any) -> list[tuple[str, str]]:
            return [("joined", str(section["test_times"][0]))]

    monkeypatch.setattr(headline, "REGISTERED", (Joined,))
    _, rows = headline.run_table(Summary.model_validate(run_summary))
    assert rows[-1] == ("joined", run_summary["monitoring"]["test_times"][0])


def imported(path: Path) -> set[str]:
    """The modules a source file imports (``from a import b`` counts ``a`` and ``a.b``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_pipeline_results_and_api_import_no_feature_module():
    files = [*sorted((ROOT / "drsim" / "pipeline").glob("*.py")),
             *sorted((ROOT / "drsim" / "results").glob("*.py")), ROOT / "drsim" / "api.py"]
    assert len(files) > 10
    banned = {f"drsim.utility.{m}" for m in FEATURE_MODULES}
    found = {f"{path.relative_to(ROOT)}: {name}" for path in files
             for name in imported(path) & banned}
    assert not found


def squares(index: int) -> dict[str, list[int]]:
    return {"i": [index], "square": [index * index]}


@dataclass(frozen=True)
class Prepared(Toy):
    """A feature with a stage before the passes: the squares of 0, 1, 2, summed."""

    name = "prepared"

    def preparations(self, scenario: Any, plan: Any, simulate: Any) -> tuple:
        schema = pa.schema([("i", pa.int64()), ("square", pa.int64())])
        return (Preparation("squares", 3, schema, squares,
                            lambda rows: int(rows["square"].sum())),)


def test_a_features_stages_before_the_passes_run_on_the_backend_and_are_timed(monkeypatch):
    monkeypatch.setattr(stages, "active_features", lambda scenario: (Toy(), Prepared()))
    timings: dict[str, float] = {}
    got = stages.preparations(None, PLAN, SerialBackend(), None, timings)
    assert got == {"toy": (), "prepared": (0 + 1 + 4,)}
    assert list(timings) == ["squares_seconds"]
    batch = tasks.preparation_task(Prepared().preparations(None, PLAN, None)[0], 2)
    assert batch["prepared"].to_pylist() == [{"i": 2, "square": 4}]
