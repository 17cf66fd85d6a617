"""Mutated readings files never give ``drsim monitor`` a traceback: each gives exit 0 with a
result or exit 2 with one line naming the file.

A mutation changes a small valid readings table (docs/monitor.md, "The readings"): a column
of another type, values out of range, NaN or infinite, negative, scaled by 10¹², null,
unicode text in a numeric column; rows duplicated, shuffled, cut or all dropped; a column
dropped, renamed, added or given twice. The scenario is small (serial backend, 240
households, a constant γ) so that the module takes seconds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from small_scenarios import quickstart
from typer.testing import CliRunner

from drsim.cli import app
from drsim.scenario import scenario_from_dict
from drsim.utility.monitoring import MonitoringPlan

runner = CliRunner()
HOUSEHOLDS = 240  # quickstart has 3 groups: 80 each
SCENARIO = quickstart(HOUSEHOLDS)
SCENARIO["chunk_size"] = 100
SCENARIO["monitoring"]["gamma_user"] = 0.5  # constant: no thresholds file needed
COLUMNS = ("household", "group", "time", "kw", "energy_kwh", "baseline_kw", "expected_kw")
ODD_NUMBERS = [np.nan, np.inf, -np.inf, -1.0, -0.0, 0.0, 1e-300, 1e300, 1e12, 59.5, 2.0**63,
               -(2**63), 2**62, 1439, 1440, -1, HOUSEHOLDS, 10**6, 0.5]
ODD_INTEGERS = [-(2**63), 2**63 - 1, -1, 0, 1, 2, 3, 1109, 1110, 1229, 1230, 1439, 1440,
                HOUSEHOLDS - 1, HOUSEHOLDS]
ODD_TEXT = ["", " ", "ÿ€😀", "Zoë", "1,5", "NaN", "inf", "1e400", "12:05", "null", "٣"]


def valid_table() -> dict[str, np.ndarray]:
    """Readings of every household and minute of the program: loads of 0.2-3 kW, the
    register their energy since t_start, B̂ above P and P̂ below B̂."""
    s = scenario_from_dict(SCENARIO)
    plan = MonitoringPlan.of(s)
    minutes = np.arange(plan.t_start, plan.t_end)
    rng = np.random.default_rng(7)
    kw = rng.uniform(0.2, 3.0, (HOUSEHOLDS, len(minutes)))
    energy = np.cumsum(kw, axis=1) / 60.0 - kw / 60.0
    return {"household": np.repeat(np.arange(HOUSEHOLDS, dtype=np.int64), len(minutes)),
            "group": np.repeat(s.group_of(np.arange(HOUSEHOLDS)).astype(np.int32),
                               len(minutes)),
            "time": np.tile(minutes.astype(np.int64), HOUSEHOLDS),
            "kw": kw.ravel(), "energy_kwh": energy.ravel(),
            "baseline_kw": kw.ravel() * 1.2, "expected_kw": kw.ravel() * 0.9}


VALID = valid_table()


def mutated(draw) -> pa.Table:
    """The valid table with one to three mutations drawn by ``draw``."""
    names = list(COLUMNS)
    arrays: list[pa.Array] = [pa.array(VALID[c]) for c in names]
    n = len(arrays[0])
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["retype", "values", "values", "text", "null", "scale",
                                     "duplicate", "shuffle", "cut", "empty", "drop", "rename",
                                     "extra", "twice"]))
        if not names and kind != "extra":
            continue
        i = draw(st.sampled_from(range(len(names)))) if names else 0
        integer = pa.types.is_integer(arrays[i].type) if names else False
        if kind == "retype":
            to = draw(st.sampled_from([pa.string(), pa.float64(), pa.int8(), pa.bool_(),
                                       pa.large_string(), pa.float32(), pa.uint64()]))
            try:
                arrays[i] = arrays[i].cast(to, safe=False)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                arrays[i] = pa.array([str(v) for v in arrays[i].to_pylist()], to) \
                    if pa.types.is_string(to) or pa.types.is_large_string(to) else \
                    pa.nulls(n, to)
        elif kind in ("values", "text", "null", "scale"):
            rows = draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=1, max_size=5)) \
                if n else []
            values = arrays[i].to_pylist()
            for r in rows:
                if kind == "values" and integer:  # mostly of the column's type
                    values[r] = draw(st.sampled_from(ODD_INTEGERS) | st.integers(-(2**63),
                                                                                2**63 - 1))
                elif kind == "values":
                    values[r] = draw(st.sampled_from(ODD_NUMBERS) | st.floats())
                elif kind == "text":
                    values[r] = draw(st.sampled_from(ODD_TEXT) | st.text(max_size=6))
                elif kind == "null":
                    values[r] = None
            if kind == "scale":
                factor = draw(st.sampled_from([1e12, -1.0, 1e-12, 60.0]))
                values = [None if v is None else v * factor
                          if isinstance(v, int | float) and not isinstance(v, bool) else v
                          for v in values]
            try:
                arrays[i] = pa.array(values, from_pandas=False)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                arrays[i] = pa.array([None if v is None else str(v) for v in values])
        elif kind in ("duplicate", "shuffle", "cut", "empty"):
            if kind == "duplicate":
                take = np.r_[np.arange(n), draw(st.lists(st.integers(0, max(n - 1, 0)),
                                                         max_size=5)) if n else []]
            elif kind == "shuffle":
                take = np.random.default_rng(draw(st.integers(0, 99))).permutation(n)
            elif kind == "cut":
                take = np.arange(draw(st.integers(0, n)))
            else:
                take = np.arange(0)
            index = pa.array(np.asarray(take, dtype=np.int64))
            arrays = [a.take(index) for a in arrays]
            n = len(index)
        elif kind == "drop":
            del names[i], arrays[i]
        elif kind == "rename":
            names[i] = draw(st.sampled_from(["kW", "Household", "time ", "énergie", "kw"]))
        elif kind == "extra":
            names.append(draw(st.sampled_from(["note", "kw_2", "ü"])))
            arrays.append(pa.array(["x"] * n))
        else:  # a column twice
            names.append(names[i])
            arrays.append(arrays[i])
    return pa.Table.from_arrays(arrays, names=names)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("readings_fuzz")
    (path / "scenario.yaml").write_text(yaml.safe_dump(SCENARIO), encoding="utf-8")
    return path


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_readings_file_is_monitored_or_gives_one_line(folder, data):
    readings = folder / "readings.parquet"
    pq.write_table(mutated(data.draw), readings)
    out = folder / "out"
    lenient = data.draw(st.booleans())
    result = runner.invoke(app, ["monitor", str(readings), "--scenario",
                                 str(folder / "scenario.yaml"), "--backend", "serial",
                                 "--out", str(out), "--overwrite",
                                 *(["--lenient"] if lenient else [])])
    assert "Traceback" not in result.output, result.output
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and str(readings) in lines[0], result.stderr
    else:
        assert (out / "summary.json").is_file()
