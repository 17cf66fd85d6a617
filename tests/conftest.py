"""Shared fixtures."""

from __future__ import annotations

import pytest


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
