"""Mutated scenario and sweep files never give a traceback: each gives exit 0 with a run
(or, for a sweep, its checked list of points) or exit 2 with one line naming the file.

A mutation changes one place of a small valid file: a value replaced by one of another type,
out of bounds, non-finite, a path, a name with separators or unicode; a key removed, added
or misspelt; or the text itself cut, tabbed or given a stray character. The runs are small
(serial backend, 60 households) so that the whole module takes seconds."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from small_scenarios import quickstart
from typer.testing import CliRunner

from drsim.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

ODD_VALUES = [None, True, 0, -1, 1, 2**70, -(2**63), 0.5, -0.5, 1e300, float("inf"),
              float("nan"), "", " ", ".", "..", "../../etc/evil", "/", "a/b", "18:30", "25:61",
              "1e400", "ÿ€😀", "Zoë", "NaN", "null", [], [1, 2], {}, {"x": 1}, ["a", {"b": []}]]
TEXT_EDITS = ["cut", "tab", "char", "dup"]


def paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a nested mapping/list: the key paths to its values."""
    found = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            found += paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found += paths(value, (*prefix, i))
    return found


def mutated(data: dict, draw) -> dict | str:
    """``data`` with one mutation drawn by ``draw`` (a hypothesis ``data.draw``)."""
    kind = draw(st.sampled_from(["value", "value", "delete", "add", "text"]))
    if kind == "text":
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        edit = draw(st.sampled_from(TEXT_EDITS))
        at = draw(st.integers(0, len(text)))
        if edit == "cut":
            return text[:at]
        if edit == "tab":
            return text[:at] + "\t" + text[at:]
        if edit == "dup":
            line = text.splitlines(keepends=True)[draw(st.integers(0, text.count("\n") - 1))]
            return text + line
        return text[:at] + draw(st.characters()) + text[at:]
    out = copy.deepcopy(data)
    where = draw(st.sampled_from(paths(out)))
    parent = out
    for key in where[:-1]:
        parent = parent[key]
    last = where[-1]
    if kind == "value":
        parent[last] = draw(st.sampled_from(ODD_VALUES) | st.integers() | st.floats()
                            | st.text(max_size=12))
    elif kind == "delete":
        del parent[last]
    elif isinstance(parent, dict):
        parent[draw(st.sampled_from(["nmae", "séed", "extra", "1", "groups "]))] = 1
    else:
        parent.append(copy.deepcopy(parent[last]))
    return out


def write(path: Path, content: dict | str) -> Path:
    path.write_text(content if isinstance(content, str)
                    else yaml.safe_dump(content, sort_keys=False, allow_unicode=True),
                    encoding="utf-8")
    return path


def check_outcome(result, file: Path) -> None:
    """Exit 0, or exit 2 with at most 3 lines that name the file; never a traceback."""
    output = result.output
    assert "Traceback" not in output, output
    assert result.exit_code in (0, 2), (result.exit_code, output, result.exception)
    if result.exit_code == 2:
        lines = [line for line in output.splitlines() if line.strip()]
        assert 1 <= len(lines) <= 3, output
        assert str(file) in lines[0] or "--" in lines[0], output


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


BASE = quickstart(120)  # read from the packaged quickstart scenario


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_scenario_runs_or_gives_one_line(folder, data):
    file = write(folder / "scenario.yaml", mutated(BASE, data.draw))
    out = folder / "out"
    result = runner.invoke(app, ["run", str(file), "--backend", "serial", "--households", "60",
                                 "--out", str(out), "--overwrite"])
    check_outcome(result, file)
    if result.exit_code == 0:
        assert (out / "summary.json").is_file()


SWEEP = {"name": "fuzz", "scenario": "scenario.yaml", "overrides": {"households": 60},
         "grid": {"follow_through_drop": [0.1, 0.5], "monitoring.gamma_user.z": [2, 3]},
         "seeds": 2, "metrics": ["prediction.utility_noncompliance_time",
                                 "reduction_share_of_expected.adaptive"]}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_sweep_file_is_checked_or_gives_one_line(folder, data):
    write(folder / "scenario.yaml", BASE)
    file = write(folder / "sweep.yaml", mutated(SWEEP, data.draw))
    result = runner.invoke(app, ["sweep", str(file), "--out", str(folder / "sweep_out"),
                                 "--backend", "serial", "--dry-run"])
    check_outcome(result, file)
    if result.exit_code == 0:
        assert "runs" in result.stdout and "nothing run (--dry-run)" in result.stdout
