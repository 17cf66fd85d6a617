"""The layering contracts of pyproject.toml (checked by ``lint-imports``) cover the house."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path

import drsim

ROOT = Path(__file__).resolve().parents[1]
COMPOSITION_ROOTS = {"drsim.cli", "drsim.__main__", "drsim.api"}


def contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["name"]: c for c in config["contracts"]}


def test_every_drsim_module_but_the_composition_roots_is_kept_from_spark():
    """A new drsim module must join the contract's list (or be a composition root)."""
    modules = {f"drsim.{m.name}" for m in pkgutil.iter_modules(drsim.__path__)}
    contract = contracts()["within drsim, only the composition roots drsim.cli and drsim.api "
                           "import spark"]
    assert set(contract["source_modules"]) == modules - COMPOSITION_ROOTS
    assert {"spark", "pyspark"} <= set(contract["forbidden_modules"])


def test_no_contract_ignores_an_import():
    assert all("ignore_imports" not in c for c in contracts().values())
