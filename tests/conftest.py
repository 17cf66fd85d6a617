"""Shared fixtures, and the ``spark`` mark: a test that uses a Spark fixture is marked
``spark``, and a test that is not marked must not ask for a Spark session in this process
(so ``pytest -m "not spark"`` is a fast loop that starts no JVM; a test that runs Spark in
a subprocess is marked by hand)."""

from __future__ import annotations

import pytest

SPARK_FIXTURES = {"spark", "standalone_cluster", "local_runs"}  # local_runs: test_cluster.py


def pytest_collection_modifyitems(items):
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)
    # The files that run Spark first, each file's tests together and in order otherwise:
    # they are the long ones, so pytest-xdist's two workers (pyproject.toml: one file at a
    # time, in this order) start them early and end on the many short files.
    spark_files = {item.path for item in items if item.get_closest_marker("spark")}
    items.sort(key=lambda item: item.path not in spark_files)


_SESSIONS = [0]  # Spark sessions asked for so far


def _count_sessions() -> None:
    """Every Spark session of drsim (and of these tests) comes from spark.session.get_spark:
    wrap it to see which tests ask for one."""
    import spark.session

    real = spark.session.get_spark

    def get_spark(*args, **kwargs):
        _SESSIONS[0] += 1
        return real(*args, **kwargs)

    spark.session.get_spark = get_spark


_count_sessions()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    before = _SESSIONS[0]
    result = yield
    if _SESSIONS[0] > before and item.get_closest_marker("spark") is None:
        raise pytest.fail.Exception(f"{item.nodeid} uses Spark: take the spark fixture or "
                                    "mark it spark")
    return result


@pytest.fixture(scope="module")
def spark():
    """One local[2] Spark session per test module, stopped at its end."""
    from pyspark.sql import SparkSession

    from spark.session import get_spark

    session = get_spark("local[2]", app_name="drsim-tests")
    yield session
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


# --------------------------------------------------------------------------- standalone cluster
@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """A Spark standalone cluster on 127.0.0.1: one master, one worker (2 cores, 2 GiB).

    Yields the master URL ``spark://127.0.0.1:PORT``. Started by :func:`spark.cluster.up` in
    a temporary folder outside the repository; the daemons and the worker's executors have
    no ``PYTHONPATH``, so the executors find the project's code only if the job ships it.
    Stopped, and its folder removed, at the end of the session.
    """
    import shutil

    from spark import cluster

    folder = tmp_path_factory.mktemp("spark-standalone")
    state = cluster.up(workers=1, cores_per_worker=2, memory_per_worker="2g", folder=folder)
    try:
        yield state.master_url
    finally:
        try:
            cluster.down(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
