"""The simulation stage on the Spark backend: exact agreement with direct chunk simulation,
determinism.

One local[2] session is shared by the module (Spark takes seconds to start); the last test
stops it to compare with local[1].
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from drsim.pipeline.pass_names import PASSES
from drsim.pipeline.passes import plan_chunks, simulate_chunk
from drsim.pipeline.stages import simulate
from drsim.scenario import load_scenario
from drsim.units import MICRO
from spark.backend import SparkBackend
from spark.session import get_spark

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support pandas:FutureWarning")


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(ROOT / "drsim/data/scenarios" / "quickstart.yaml").with_households(200)


@pytest.fixture(scope="module")
def progress_calls():
    """The (done, in all) progress reports of :func:`result50`'s run."""
    return []


@pytest.fixture(scope="module")
def result50(spark, scenario, progress_calls):
    return run_simulation(spark, scenario, chunk_size=50,
                          progress=lambda stage, done, total: progress_calls.append(
                              (done, total)))


def run_simulation(session, scenario, **options):
    return simulate(scenario, SparkBackend(spark=session), **options)


def system_kw(result, name):
    return result.loads.group_kw[name].sum(axis=0)


def assert_same_curves(a, b):
    assert list(a.loads.group_kw) == list(b.loads.group_kw) == list(PASSES)
    for name in PASSES:
        assert np.array_equal(a.loads.group_kw[name], b.loads.group_kw[name]), name
        categories = a.loads.category_kw[name]
        assert sorted(categories) == sorted(b.loads.category_kw[name])
        for category, kw in categories.items():
            assert np.array_equal(kw, b.loads.category_kw[name][category]), (name, category)
    assert (a.households, a.ev_households) == (b.households, b.ev_households)


def test_equals_direct_simulation_of_every_chunk(result50, scenario):
    chunks = plan_chunks(scenario, 50)
    assert [c.count for c in chunks] == [50, 17, 50, 17, 50, 16]
    n_groups = len(scenario.groups)
    group_micro = {p: np.zeros((n_groups, 1440)) for p in PASSES}
    category_micro: dict[str, dict[str, np.ndarray]] = {p: {} for p in PASSES}
    households = ev_households = 0
    for chunk in chunks:
        direct = simulate_chunk(scenario, chunk)
        households += direct.households
        ev_households += direct.ev_households
        for p in PASSES:
            group_micro[p][chunk.group] += direct.load[p]
            for category, micro in direct.by_category[p].items():
                category_micro[p][category] = category_micro[p].get(category, 0) + micro

    assert result50.chunks == chunks
    assert (result50.households, result50.ev_households) == (households, ev_households)
    assert households == scenario.households == 200
    for p in PASSES:
        assert np.array_equal(result50.loads.group_kw[p], group_micro[p] / MICRO)
        assert sorted(result50.loads.category_kw[p]) == sorted(category_micro[p])
        for category, micro in category_micro[p].items():
            assert np.array_equal(result50.loads.category_kw[p][category], micro / MICRO)


def test_groups_and_categories_sum_to_the_system_curve(result50):
    for p in PASSES:
        system = np.round(system_kw(result50, p) * MICRO)
        assert result50.loads.group_kw[p].shape == (3, 1440)
        assert np.array_equal(np.round(result50.loads.group_kw[p] * MICRO).sum(axis=0), system)
        categories = [np.round(kw * MICRO) for kw in result50.loads.category_kw[p].values()]
        assert "ev" in result50.loads.category_kw[p]
        assert np.array_equal(np.sum(categories, axis=0), system)
        assert system.min() > 0


def test_job_statistics_and_progress(result50, progress_calls):
    info = result50.backend
    assert info.name == "spark" and info.master == "local[2]" and info.parallelism == 2
    assert [(j.label, j.chunks, j.partitions, j.tasks) for j in info.jobs] == \
        [("passes", 6, 6, 6)]
    assert result50.chunk_rows["peak_rss_bytes"].min() > 10 * 2**20
    seconds = result50.chunk_rows["seconds"].to_numpy()
    assert seconds.shape == (6,) and (seconds > 0).all()
    assert progress_calls[0] == (0, 6)
    assert progress_calls[-1] == (6, 6)
    done = [d for d, _ in progress_calls]
    assert done == sorted(done)


def test_same_numbers_for_another_chunk_size(spark, scenario, result50):
    result80 = run_simulation(spark, scenario, chunk_size=80)
    assert [c.count for c in result80.chunks] == [67, 67, 66]
    assert_same_curves(result50, result80)


def test_same_numbers_on_local1_as_on_local2(spark, scenario, result50):
    """Last in the module: it replaces the shared local[2] session by a local[1] one."""
    spark.stop()
    local1 = get_spark("local[1]", app_name="drsim-tests")
    result1 = run_simulation(local1, scenario, chunk_size=50)
    assert result1.backend.master == "local[1]" and result1.backend.parallelism == 1
    assert_same_curves(result50, result1)
