"""Constructs the language parses but cep_core does not execute: each is rejected by
``cep_core.compile`` (and ``python -m cep_core explain``) with a
:class:`~cep_core.errors.QuerySemanticError` that names the construct and points at it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import cep_core
from cep_core.__main__ import app
from cep_core.errors import QuerySemanticError

MARK = "⟨"  # where the error must point; removed before compiling

# Each case: `-- id: what the message says`, then the query with MARK at the construct.
CASES_TEXT = """
-- nested-seq-plus: SEQ(..)+ inside SEQ(..)+ is not supported (nested repetition)
PATTERN SEQ(A a,
  SEQ(B b, ⟨SEQ(C c, D d)+)+)
WITHIN 10
-- kleene-in-seq-plus: Kleene+ 'B+ b[]' inside SEQ(..)+ is not supported (nested repetition)
PATTERN SEQ(SEQ(A a, ⟨B+ b[])+, C c) WITHIN 10
-- kleene-in-top-seq-plus: Kleene+ 'B+ b[]' inside SEQ(..)+ is not supported
PATTERN SEQ(A a, ⟨B b+[])+ WITHIN 10
-- or-in-seq-plus: OR inside SEQ(..)+ is not supported
PATTERN SEQ(A a,
    SEQ(⟨(B b OR C c), D d)+)
WITHIN 10
-- same-in-or: SAME[id] inside OR is not supported
PATTERN SEQ(A a, B b)
WHERE a.x > 1 OR ⟨SAME[id]
-- same-in-not: SAME[id] inside NOT is not supported
PATTERN SEQ(A a, B b)
WHERE a.x > 1 AND NOT (⟨SAME[id] AND b.y = 2)
-- same-in-comparison: SAME[id] inside a comparison is not supported
PATTERN SEQ(A a, B b) WHERE ⟨SAME[id] = a.x
-- aggregation-same-in-or: SAME[k] inside OR is not supported
SELECT COUNT(v) AS n FROM T STREAM
WHERE n > 1 OR ⟨SAME[k]
GROUP BY time
-- aggregation-same-overlap: SAME[OVERLAP(k)] is not supported
SELECT COUNT(v) AS n FROM T STREAM
WHERE SAME[⟨OVERLAP(k)]
GROUP BY time
"""


def _cases() -> list[tuple[str, str, str]]:
    """``[(id, query text with MARK, construct)]`` from CASES_TEXT."""
    out = []
    for chunk in CASES_TEXT.split("\n-- ")[1:]:
        head, _, text = chunk.partition("\n")
        name, _, construct = head.partition(": ")
        out.append((name, text, construct))
    return out


CASES = _cases()
PARAMS = {"aggregation-same-overlap": {"OVERLAP": lambda x: x}}


def _unmark(marked: str) -> tuple[str, int, int]:
    """The query without MARK, and MARK's 1-based line and column."""
    at = marked.index(MARK)
    line = marked.count("\n", 0, at) + 1
    return marked.replace(MARK, "", 1), line, at - (marked.rfind("\n", 0, at) + 1) + 1


@pytest.mark.parametrize("name,marked,construct", CASES, ids=[c[0] for c in CASES])
def test_unsupported_construct_is_named_with_its_position(name, marked, construct):
    text, line, column = _unmark(marked)
    with pytest.raises(QuerySemanticError) as info:
        cep_core.compile(text, params=PARAMS.get(name, {}))
    err = info.value
    assert construct in str(err)
    assert err.pos == (line, column)
    assert f"line {line}, column {column}: " in str(err)
    assert "\n" not in str(err)


@pytest.mark.parametrize("name,marked,construct", CASES, ids=[c[0] for c in CASES])
def test_cli_explain_prints_one_line_and_fails(tmp_path, name, marked, construct):
    text, line, column = _unmark(marked)
    path = tmp_path / "unsupported.cep"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["explain", str(path)])
    assert result.exit_code != 0
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert result.output.startswith("error: ") and construct in result.output
    assert f"line {line}, column {column}: " in result.output
