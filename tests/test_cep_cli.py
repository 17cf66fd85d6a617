"""``python -m cep_core explain|run``."""

from __future__ import annotations

import io

import pandas as pd
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
