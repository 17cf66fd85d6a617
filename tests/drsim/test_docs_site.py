"""The docs site (mkdocs.yml) without building it: its API reference (docs/reference/*.md,
whose ``::: identifier`` directives mkdocstrings renders from the numpydoc docstrings) shows
every public object of drsim and cep_core, and its nav lists every page of docs/. CI builds
the site strictly (.ci/docs): there a broken link, anchor or docstring fails."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

import cep_core
import cep_core.query
import drsim
import drsim.api
import drsim.sweeps

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"
DIRECTIVE = re.compile(r"^::: ([\w.]+)\n((?:[ ]{4}.*\n)*)", re.M)


def directives(text: str) -> list[tuple[str, list[str] | None]]:
    """A page's ``::: identifier`` directives, each with its ``members`` option (None: the
    default, every public member)."""
    found = []
    for identifier, block in DIRECTIVE.findall(text):
        options = (yaml.safe_load(block) or {}).get("options") or {} if block.strip() else {}
        found.append((identifier, options.get("members")))
    return found


def resolve(identifier: str) -> Any:
    """The object a dotted identifier names: the longest importable module, then
    attributes."""
    parts = identifier.split(".")
    for i in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(identifier)


def shown(module: ModuleType, members: list[str] | None) -> list[Any]:
    """What a directive of a module shows: its ``members``, else the names of its
    ``__all__``, else its public functions and classes defined in it (mkdocstrings leaves
    out what a module without ``__all__`` imports)."""
    if members is None and hasattr(module, "__all__"):
        members = list(module.__all__)
    if members is not None:
        return [getattr(module, name) for name in members]
    return [value for name, value in vars(module).items() if not name.startswith("_")
            and getattr(value, "__module__", None) == module.__name__]


def reference_objects() -> list[Any]:
    """Every object the API reference pages show at the top level of a directive."""
    found: list[Any] = []
    for page in sorted(REFERENCE.glob("*.md")):
        for identifier, members in directives(page.read_text(encoding="utf-8")):
            target = resolve(identifier)
            found += shown(target, members) if inspect.ismodule(target) else [target]
    return found


def public_functions(module: ModuleType) -> dict[str, Any]:
    """The functions a module defines whose names do not start with ``_``."""
    return {name: value for name, value in vars(module).items()
            if inspect.isfunction(value) and not name.startswith("_")
            and value.__module__ == module.__name__}


def test_the_api_reference_shows_the_public_api():
    """Every name of drsim's and cep_core's ``__all__`` and of cep_core.query's, every public
    function of drsim.api, and what ``drsim.sweep`` takes and returns (drsim.sweeps.Sweep,
    SweepOutcome) is shown by a directive of docs/reference/ (the object itself, or its
    module's)."""
    required = {
        **{f"drsim.{name}": getattr(drsim, name) for name in drsim.__all__},
        **{f"drsim.api.{name}": f for name, f in public_functions(drsim.api).items()},
        **{f"cep_core.{name}": getattr(cep_core, name) for name in cep_core.__all__},
        **{f"cep_core.query.{name}": getattr(cep_core.query, name)
           for name in cep_core.query.__all__},
        "drsim.sweeps.Sweep": drsim.sweeps.Sweep,
        "drsim.sweeps.SweepOutcome": drsim.sweeps.SweepOutcome,
    }
    assert len(public_functions(drsim.api)) >= 4 and len(required) >= 25, required
    objects = reference_objects()
    missing = [name for name, value in required.items()
               if not any(value is shown_object for shown_object in objects)]
    assert not missing, f"not in docs/reference/*.md: {missing}"


def test_a_directive_of_a_module_without_members_shows_only_what_it_defines():
    """The reading of a directive that the test above relies on, on drsim.api: its public
    functions, not the classes it imports (which drsim.results.result defines); a
    ``members`` option, its names only."""
    text = "::: a.b\n    options:\n      members: [f, g]\n\n::: a.c\n"
    assert directives(text) == [("a.b", ["f", "g"]), ("a.c", None)]
    objects = shown(drsim.api, None)
    assert drsim.api.run in objects and drsim.api.open_backend in objects
    assert drsim.api.RunResult not in objects
    assert shown(drsim.api, ["run"]) == [drsim.api.run]


def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav names (docs_dir-relative ``.md`` paths), in order."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:\n"):]
    return re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)\s*$", nav, re.M)


def test_the_nav_lists_every_page_once():
    """Every Markdown page under docs/ (but the hooks') is in the nav, once, and every
    page the nav names exists: mkdocs.yml's index is docs/index.md."""
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
                   if "hooks" not in p.relative_to(DOCS).parts)
    listed = nav_pages()
    assert listed[0] == "index.md"
    assert len(listed) == len(set(listed)), listed
    assert sorted(listed) == pages
