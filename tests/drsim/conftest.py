"""Summaries of small serial runs, as summary.json holds them, for the tests of their readers."""

from __future__ import annotations

import json

import pytest

import drsim
from drsim.results.output import json_safe
from tests.drsim.pipeline.test_pipeline import small


def _written(summary: dict) -> dict:
    """``summary`` as read back from summary.json."""
    return json.loads(json.dumps(json_safe(summary)))


@pytest.fixture(scope="session")
def run_summary() -> dict:
    """A run of 200 households whose low constant γ_user surely predicts."""
    return _written(drsim.run(small(200, gamma_user=0.01), backend="serial").summary)


@pytest.fixture(scope="session")
def simulate_summary() -> dict:
    """A simulation of 200 households."""
    return _written(drsim.simulate(small(200), backend="serial").summary)
