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
