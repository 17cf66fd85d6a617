"""The baseline accuracy table (drsim.pipeline.baseline_accuracy) on tiny scenarios."""

from __future__ import annotations

from itertools import product
from typing import Annotated, Literal, get_args

import numpy as np
import pandas as pd
import pytest

from drsim.household.population import Population
from drsim.pipeline.baseline_accuracy import (
    LEVELS,
    _literal_values,
    accuracy_table,
    baseline_methods,
    method_scenario,
    sample_chunks,
)
from drsim.scenario import ScenarioError, load_scenario, scenario_from_dict
from drsim.scenario.program_settings import BaselineSettings
from drsim.utility.baseline import mv_factors
from tests.drsim.pipeline.test_pipeline import QUICKSTART

PER_GROUP = 12


def tiny(**baseline) -> object:
    """The quickstart scenario on 90 households (three groups of 30), chunks of 7."""
    s = load_scenario(QUICKSTART).with_households(90)
    data = s.model_dump(mode="json", exclude={"source_path"})
    data["chunk_size"] = 7
    data["baseline"].update(baseline)
    return scenario_from_dict(data)


@pytest.fixture(scope="module")
def table():
    return accuracy_table(tiny(), PER_GROUP)


def test_the_methods_are_the_schemas():
    assert baseline_methods() == get_args(BaselineSettings.model_fields["method"].annotation)
    assert "same_day" in baseline_methods()


def test_the_methods_are_found_inside_annotated_and_optional_types():
    """A Literal wrapped in Annotated or a union (how a schema may grow) is still read."""
    annotation = Annotated[Literal["same_day", "ten_of_ten"], "doc"] | None
    assert _literal_values(annotation) == ["same_day", "ten_of_ten"]


def test_one_row_per_method_and_level(table):
    rows = table.table
    assert len(rows) == len(baseline_methods()) * len(LEVELS)
    assert set(zip(rows["method"], rows["level"], strict=True)) == \
        set(product(baseline_methods(), LEVELS))
    assert table.households == 3 * PER_GROUP
    assert set(rows.loc[rows["level"] == "household", "units"]) == {3 * PER_GROUP}
    assert set(rows.loc[rows["level"] == "group", "units"]) == {3}


def test_same_day_against_itself_has_no_error_and_the_others_have(table):
    rows = table.table.set_index(["method", "level"])
    errors = [c for c in rows.columns if "cv_rmse" in c or "nmb" in c
              or c.startswith(("settlement_relative", "settlement_error"))]
    assert len(errors) == 13
    assert (rows.loc["same_day", errors].to_numpy() == 0.0).all()
    assert (rows.loc["same_day", "settlement_paid_kwh"]
            == rows.loc["same_day", "settlement_true_kwh"]).all()
    assert (rows["baseline_kwh"] > rows["settlement_true_kwh"]).all()
    for method in set(baseline_methods()) - {"same_day"}:
        assert (rows.loc[(method, "household"), "baseline_cv_rmse_median"]) > 0.05


def test_the_table_does_not_depend_on_the_chunks(table):
    other = accuracy_table(tiny(), PER_GROUP, chunk_size=100)
    pd.testing.assert_frame_equal(table.table, other.table, check_exact=True)


def test_a_known_multiplicative_error_gives_its_bias():
    """same_day with a 10 % M&V error per household: each household's B̂ is f·B and P̂ is
    f·P̂, so their NMB is f − 1, and the median over the sample is that of the factors."""
    s = tiny(error=0.1)
    lo, hi = s.dr_program.start_minute, s.dr_program.end_minute
    factors = np.concatenate([mv_factors(Population(s, c.first, c.count), lo, hi)[0]
                              for c in sample_chunks(s, PER_GROUP)])
    rows = accuracy_table(s, PER_GROUP).table.set_index(["method", "level"])
    same_day = rows.loc[("same_day", "household")]
    assert same_day["baseline_nmb_median"] == pytest.approx(np.median(factors - 1.0),
                                                            rel=1e-9)
    assert same_day["expected_nmb_median"] == pytest.approx(np.median(factors - 1.0),
                                                            rel=1e-9)
    # CV(RMSE) = |f − 1|·√(mean B²)/mean B ≥ |f − 1| household by household
    assert same_day["baseline_cv_rmse_median"] >= np.median(np.abs(factors - 1.0))


def test_the_sample_is_the_first_households_of_each_group():
    s = tiny()
    chunks = sample_chunks(s, 10, chunk_size=4)
    assert [(c.first, c.count, c.group) for c in chunks] == [
        (first + k, n, g) for g, first in enumerate((0, 30, 60))
        for k, n in ((0, 4), (4, 4), (8, 2))]
    assert sum(c.count for c in sample_chunks(s, 1000)) == 90  # a smaller group: all of it
    with pytest.raises(ValueError, match="at least 1"):
        sample_chunks(s, 0)


def test_a_method_that_does_not_exist_is_one_line_naming_the_key():
    with pytest.raises(ScenarioError, match="baseline.method"):
        method_scenario(tiny(), "tomorrow")


def test_the_metered_pass_is_checked():
    with pytest.raises(ValueError, match="metered pass"):
        accuracy_table(tiny(), 2, metered="adaptive")
