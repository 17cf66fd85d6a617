"""drsim.pipeline.kept: a stage's rows kept with what they were made for give the stage's
value back for the scenario they were made for, and are refused for another in one line
naming the scenario key, the file and the first setting that differs."""

from __future__ import annotations

import pyarrow as pa
import pytest
from small_scenarios import quickstart

from drsim.pipeline.kept import kept_table, kept_values
from drsim.scenario import scenario_from_dict
from drsim.utility.monitoring import MonitoringPlan
from drsim.utility.shedding_feature import MODELS, CostModels, LoadShedding, made_for


def shed(households: int = 1200, **settings):
    return scenario_from_dict(quickstart(households, shedding=settings))


@pytest.fixture
def kept():
    """load shedding's stage of a scenario, its rows (not in group order) as kept."""
    scenario = shed()
    plan = MonitoringPlan.of(scenario)
    (step,) = LoadShedding.of(scenario).preparations(scenario, plan, None)
    rows = pa.table({"group": [2, 0, 1], "model": [b"e", b"n", b"s"],
                     "shares": [[0.3], [0.1], [0.2]]}, schema=MODELS)
    return scenario, plan, step, kept_table(step, rows)


def test_the_stage_keeps_its_rows_with_what_they_were_made_for(kept):
    scenario, plan, step, table = kept
    assert step.file == "cost_models.parquet"
    assert step.made_for == made_for(scenario, plan)
    assert step.made_for["groups"] == ["north (400)", "south (400)", "east (400)"]
    got = kept_values(scenario, plan, lambda feature, stage: (table, "f.parquet"))
    assert got == {"shedding": (CostModels((b"n", b"s", b"e"), ((0.1,), (0.2,), (0.3,))),)}


def test_no_stage_no_values():
    plain = scenario_from_dict(quickstart(1200))
    assert kept_values(plain, MonitoringPlan.of(plain), None) == {}


@pytest.mark.parametrize("other, message", [
    (shed(bound=0.3), r"^monitoring.shedding: the cost models of f.parquet were made for "
                      r"monitoring.shedding.bound 0.5, the scenario's is 0.3$"),
    (shed(900), r"^monitoring.shedding: the cost models of f.parquet were made for groups "
                r"\['north \(400\)', .*, the scenario's is \['north \(300\)'"),
])
def test_rows_made_for_another_scenario_are_refused(kept, other, message):
    table = kept[3]
    with pytest.raises(ValueError, match=message):
        kept_values(other, MonitoringPlan.of(other), lambda feature, stage: (table, "f.parquet"))


def test_rows_that_are_not_the_stages_are_refused(kept):
    scenario, plan, _, table = kept
    for bad, why in ((table.replace_schema_metadata(None), "no record of what it was made for"),
                     (table.drop_columns(["shares"]), "no column 'shares'")):
        with pytest.raises(ValueError, match=rf"^monitoring.shedding: f.parquet is not a run's "
                                             rf"cost_models.parquet \({why}\)$"):
            kept_values(scenario, plan, lambda feature, stage, bad=bad: (bad, "f.parquet"))
