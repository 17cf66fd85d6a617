"""``python -m cep_core explain|run``."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from typer.testing import CliRunner

from cep_core.__main__ import app

runner = CliRunner()
QUERY = "PATTERN SEQ(A a, B b, A c)\nWITHIN 10\nRETURN T(a.id AS first, c.id AS last)\n"


def _files(tmp_path, query=QUERY):
    q = tmp_path / "q.cep"
    q.write_text(query)
    ev = tmp_path / "events.csv"
    pd.DataFrame({"type": list("ABBABA"), "time": [1, 2, 3, 4, 5, 6]}).to_csv(ev, index=False)
    return q, ev


def test_explain_names_the_engine_and_states(tmp_path):
    q, _ = _files(tmp_path)
    result = runner.invoke(app, ["explain", str(q)])
    assert result.exit_code == 0, result.output
    assert "engine:" in result.stdout and "A c" in result.stdout


def test_run_prints_the_outputs_of_table_2_4(tmp_path):
    """Table 2.4, skip-till-next-match: ⟨a1 b2 a4⟩ and ⟨a4 b5 a6⟩ (ids 0-based)."""
    q, ev = _files(tmp_path)
    result = runner.invoke(app, ["run", str(q), str(ev), "--policy", "skip-till-next-match"])
    assert result.exit_code == 0, result.output
    out = pd.read_csv(io.StringIO(result.stdout))
    assert out[["first", "last"]].values.tolist() == [[0, 3], [3, 5]]


def test_run_with_parameters_and_a_table(tmp_path):
    q, ev = _files(tmp_path, "PATTERN SEQ(A a, B b)\nWHERE b.time - a.time >= gap "
                             "AND limit[a.type] > 0\nWITHIN 10\nRETURN R(b.time)\n")
    table = tmp_path / "limit.csv"
    pd.DataFrame({"type": ["A"], "value": [1]}).to_csv(table, index=False)
    result = runner.invoke(app, ["run", str(q), str(ev), "-p", "gap=2", "-t", f"limit={table}"])
    assert result.exit_code == 0, result.output
    out = pd.read_csv(io.StringIO(result.stdout))
    assert sorted(out["time"]) == [3, 5]  # a1-b3 and a1-b5; a1-b2 and a4-b5 are 1 apart


def test_errors_are_one_line_without_traceback(tmp_path):
    q, ev = _files(tmp_path, "PATTERN SEQ(A a, B b\n")
    result = runner.invoke(app, ["explain", str(q)])
    assert result.exit_code == 2
    assert "line 1, column" in result.output and "Traceback" not in result.output
    q, _ = _files(tmp_path, "PATTERN SEQ(A a, B b)\nWHERE a.x > missing\n")
    result = runner.invoke(app, ["run", str(q), str(ev)])
    assert result.exit_code == 2 and "missing" in result.output


@pytest.mark.parametrize("content, message", [
    ("type,time\nA,1\nB,12:05\n", "events.csv: column 'time', line 3: '12:05' is not a number"),
    ("type,time\nA,1\nB,\n", "events.csv: column 'time', line 3: no value"),
    ("type,time\nA,1\n,2\n", "events.csv: column 'type', line 3: no value"),
    ("type,time\nA,4\nB,3\n", "events.csv: column 'time', line 3: 3 is before the previous "
                              "event's 4; sort the file by time, or pass --sort"),
    ("type,time\nA,1\nD,2\n", "events.csv: column 'type', line 3: 'D' is not a type of the "
                              "query (A, B)"),
    ("", "events.csv: the file is empty"),
    ("type,time\n", "events.csv: no events (a header line but no rows)"),
    ("kind,time\nA,1\n", "events.csv: no column 'type'; columns: kind, time"),
    ("type,time\nA,1\nB,\"2\n", "events.csv: not a CSV file"),
])
def test_bad_events_files_give_one_line_errors(tmp_path, content, message):
    q, ev = _files(tmp_path)
    ev.write_text(content)
    result = runner.invoke(app, ["run", str(q), str(ev)])
    assert result.exit_code == 2
    assert result.output.startswith("error: " + message), result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_sort_and_other_types_are_asked_for(tmp_path):
    q, ev = _files(tmp_path)
    ev.write_text("type,time\nA,1\nB,4\nA,3\nX,5\nA,6\n")
    sorted_run = runner.invoke(app, ["run", str(q), str(ev), "--sort", "--other-types"])
    assert sorted_run.exit_code == 0, sorted_run.output
    out = pd.read_csv(io.StringIO(sorted_run.stdout))
    # ids are the file's row numbers: A1 (0), A3 (2), B4 (1), X5 (3), A6 (4)
    assert sorted(map(tuple, out[["first", "last"]].values.tolist())) == [(0, 4), (2, 4)]
    without = runner.invoke(app, ["run", str(q), str(ev), "--sort"])
    assert without.exit_code == 2 and "'X' is not a type of the query" in without.output


COMPUTING = ("PATTERN SEQ(A a, B b)\nWHERE b.x * 1.5 > a.x\nWITHIN 10\n"
             "RETURN R(a.x AS ax, b.x AS bx)\n")


@pytest.mark.parametrize("content, message", [
    ("type,time,x\nA,1,2\nB,2,1e400\n", "events.csv: column 'x', line 3: '1e400' is not a "
                                        "finite number"),
    ("type,time,x\nA,1,inf\nB,2,3\n", "events.csv: column 'x', line 2: 'inf' is not a finite "
                                      "number"),
    ("type,time,x\nA,1,2\nB,2,nan\n", "events.csv: column 'x', line 3: 'nan' is not a finite "
                                      "number"),
    ("type,time,x\nA,1e400,2\nB,2,3\n", "events.csv: column 'time', line 2: '1e400' is not a "
                                        "finite number"),
    ("type,time,x\nA,1,2\nB,2\n", "events.csv: line 3: 2 field(s), but the header has 3 "
                                  "(type,time,x)"),
    ("type,time,x\nA,1,2,9\nB,2,3\n", "events.csv: line 2: 4 field(s), but the header has 3"),
    ("type,time,x\nA,1,2\nB,2,abc\n", "events.csv: column 'x', line 3: 'abc' is not a number, "
                                      "and the query computes with b.x (of its B events)"),
    ("type,time,x\nA,1,2\nB,2,ü€\n", "events.csv: column 'x', line 3: 'ü€' is not a number"),
])
def test_values_the_query_cannot_compute_with_are_one_line_errors(tmp_path, content, message):
    q, ev = _files(tmp_path, COMPUTING)
    ev.write_text(content, encoding="utf-8")
    result = runner.invoke(app, ["run", str(q), str(ev)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: " + message), result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_a_parquet_file_with_nan_or_inf_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    q, _ = _files(tmp_path, COMPUTING)
    ev = tmp_path / "events.parquet"
    for value, shown in ((float("nan"), "nan"), (float("inf"), "inf")):
        pq.write_table(pa.table({"type": ["A", "B"], "time": [1, 2], "x": [2.0, value]}), ev)
        result = runner.invoke(app, ["run", str(q), str(ev)])
        assert result.exit_code == 2, result.output
        assert result.output.startswith(f"error: events.parquet: column 'x', line 3: {shown} "
                                        "is not a finite number"), result.output
    # a null is no value: the event is there, its predicate does not hold
    pq.write_table(pa.table({"type": ["A", "B"], "time": [1, 2], "x": [2.0, None]}), ev)
    assert runner.invoke(app, ["run", str(q), str(ev)]).exit_code == 0


def test_empty_fields_are_no_value_and_text_numbers_are_numbers(tmp_path):
    """An empty field is no value; in a column that other events fill with text, the
    attributes the query computes with are read as numbers."""
    q, ev = _files(tmp_path, COMPUTING)
    ev.write_text("type,time,x\nA,1,2\nC,2,note\nB,3,\nB,4,3\n")
    result = runner.invoke(app, ["run", str(q), str(ev), "--other-types"])
    assert result.exit_code == 0, result.output
    out = pd.read_csv(io.StringIO(result.stdout))
    assert out[["ax", "bx"]].values.tolist() == [[2, 3]]


def test_the_attributes_a_query_computes_with():
    from cep_core import compile as compile_query
    from cep_core.expr import numeric_attributes

    pattern = compile_query("PATTERN SEQ(A a, B+ b[], C c)\nWHERE a.name = c.name AND "
                            "c.v > limit AND AVG(b[].w) < 3 AND a.k > c.k\nWITHIN 10\n"
                            "RETURN R(-a.z AS z)\n", params={"limit": 1}).query
    assert numeric_attributes(pattern, {"limit": 1}) == {
        "C": {"v": "c.v"}, "B": {"w": "b[].w"}, "A": {"z": "a.z"}}
    stream = compile_query("SELECT COUNT(DISTINCT houseID) AS n, SUM(load) AS s FROM M STREAM "
                           "GROUP BY time RETURN alert(time, n, s)").query
    assert numeric_attributes(stream) == {"M": {"load": "load"}}
