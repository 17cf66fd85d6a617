"""scripts/ holds entry points only: each runs the ``main`` of its ``experiments`` module, and
no script, experiment or test reaches the project's code by editing sys.path."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "scripts").glob("*.py"))


def test_every_experiment_with_a_main_has_its_entry_point():
    with_main = {p.stem for p in (ROOT / "experiments").glob("*.py")
                 if "\ndef main(" in p.read_text(encoding="utf-8")}
    assert len(SCRIPTS) >= 15
    assert {p.stem for p in SCRIPTS} == with_main


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_script_imports_only_its_modules_main(script: Path):
    tree = ast.parse(script.read_text(encoding="utf-8"))
    imported = [(n.module, [a.name for a in n.names]) for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom)]
    assert imported == [(f"experiments.{script.stem}", ["main"])]
    assert callable(importlib.import_module(f"experiments.{script.stem}").main)


def test_nothing_edits_sys_path_to_reach_the_project():
    """``sys.path.insert`` or ``.append`` in no file of scripts/, experiments/ or tests/."""
    files = [p for folder in ("scripts", "experiments", "tests")
             for p in (ROOT / folder).rglob("*.py")]
    edits = [f"{p.relative_to(ROOT)}:{n.lineno}" for p in files
             for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(n, ast.Attribute) and n.attr in ("insert", "append")
             and ast.unparse(n.value) == "sys.path"]
    assert edits == []
