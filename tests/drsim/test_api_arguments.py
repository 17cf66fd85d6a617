"""The API's arguments are checked by type and range before any work (drsim.api)."""

from __future__ import annotations

from pathlib import Path

import pytest

import drsim

QUICKSTART = Path(__file__).resolve().parents[2] / "drsim/data/scenarios" / "quickstart.yaml"


@pytest.mark.parametrize("chunk_size", [0, -3, 1.5, True, 10**9])
@pytest.mark.parametrize("call", ["run", "simulate"])
def test_a_chunk_size_outside_its_bounds_is_refused(tmp_path, call, chunk_size):
    with pytest.raises(ValueError, match=r"chunk_size must be an integer from 1 to 200000"):
        getattr(drsim, call)(QUICKSTART, tmp_path / "out", chunk_size=chunk_size,
                             backend="serial")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("call", ["run", "simulate", "monitor"])
def test_a_scenario_is_a_scenario_or_its_file(tmp_path, call):
    args = (None, 42) if call == "monitor" else (42,)
    with pytest.raises(TypeError, match="must be a drsim Scenario or the path"):
        getattr(drsim, call)(*args, backend="serial")


def test_the_cli_commands_are_functions_of_drsim():
    assert {"run", "simulate", "monitor", "sweep"} <= set(drsim.__all__)
