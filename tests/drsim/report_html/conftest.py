"""A small run folder and a small sweep folder, written once, for the HTML report's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import drsim
from drsim.sweeps import load_sweep
from drsim.sweeps.runner import run_sweep
from tests.drsim.pipeline.test_pipeline import small
from tests.drsim.sweeps.test_sweep import FakeRunner, write_sweep


@pytest.fixture(scope="session")
def run_folder(tmp_path_factory) -> Path:
    """The folder of a serial run of 200 households whose low γ_user surely predicts."""
    out = tmp_path_factory.mktemp("html") / "quickstart_run"
    drsim.run(small(200, gamma_user=0.01), out, backend="serial")
    return out


@pytest.fixture(scope="session")
def sweep_folder(tmp_path_factory) -> Path:
    """A finished sweep folder: 3 points of the detection delay x 2 seeds, each run a fake
    summary (tests.drsim.sweeps.test_sweep.FakeRunner), with numeric and clock metrics."""
    base = tmp_path_factory.mktemp("html_sweep")
    spec = load_sweep(write_sweep(base, {"grid": {"delay_detection": [0, 10, 20]},
                                         "seeds": 2}))
    out = base / "delay_sweep"
    run_sweep(spec, out, runner=FakeRunner())
    return out
