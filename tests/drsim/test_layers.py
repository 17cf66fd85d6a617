"""The layering contracts of pyproject.toml (checked by ``lint-imports``) cover the house."""

from __future__ import annotations

import ast
import pkgutil
import tomllib
from pathlib import Path

import drsim

ROOT = Path(__file__).resolve().parents[2]


def contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["name"]: c for c in config["contracts"]}


def test_every_drsim_module_is_in_a_layer():
    """drsim's top level holds only the layers (and ``__main__``, which runs the CLI, and
    the packaged data), and every layer but the composition roots is kept from spark."""
    modules = {f"drsim.{m.name}" for m in pkgutil.iter_modules(drsim.__path__)}
    layers = contracts()["drsim's layers: each imports only the layers below it"]["layers"]
    assert modules == set(layers) | {"drsim.__main__", "drsim.data"}
    kept = contracts()["within drsim, only the composition roots drsim.cli and drsim.api "
                       "import spark"]
    assert set(kept["source_modules"]) == set(layers) - {"drsim.cli", "drsim.api"} \
        | {"drsim.data"}


def test_no_contract_ignores_an_import():
    assert all("ignore_imports" not in c for c in contracts().values())


def imports_of(path: Path, module: str, modules: set[str]) -> set[str]:
    """The house's modules that ``module`` (at ``path``) imports anywhere: at the top,
    under TYPE_CHECKING, inside functions; a name imported from a package counts as its
    module when it is one."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):
                out.add(name)
    return out


def test_no_import_circle():
    """No module of drsim, cep_core, spark or experiments reaches itself through imports,
    counting those under TYPE_CHECKING and inside functions (a module's import of its own
    package is not counted: the package's ``__init__`` gathers its modules)."""
    paths = house_modules()
    graph = {m: imports_of(p, m, set(paths)) for m, p in paths.items()}
    circles = []
    for start in graph:
        stack, seen = [(start, (start,))], set()
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    circles.append(" -> ".join((*trail, start)))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, (*trail, nxt)))
    assert not circles, circles[:5]


def house_modules() -> dict[str, Path]:
    """Module name -> path of every module of drsim, cep_core, spark and experiments."""
    paths = {}
    for package in ("drsim", "cep_core", "spark", "experiments"):
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            paths[name.removesuffix(".__init__")] = path
    return paths


def test_no_private_name_is_imported_across_modules():
    """A name with a leading underscore stays in its module: what another module needs
    is public."""
    imported = []
    for module, path in house_modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.split(".")[0] in ("drsim", "cep_core", "spark"):
                imported += [f"{module}: {node.module}.{a.name}" for a in node.names
                             if a.name.startswith("_") and not a.name.startswith("__")]
    assert imported == []


def test_no_module_is_over_700_lines():
    """One job per module: none of drsim, cep_core, spark or experiments over 700 lines."""
    long = {m: n for m, p in house_modules().items()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 700}
    assert long == {}


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of a function's body after its docstring: from its first statement to the
    end of its last."""
    body = node.body
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


def test_no_function_body_is_over_80_lines():
    """One job per function: no function or method of drsim, cep_core, spark or
    experiments, nested ones included, has a body over 80 lines."""
    long = {f"{module}:{node.lineno} {node.name}": n
            for module, path in house_modules().items()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and (n := body_lines(node)) > 80}
    assert long == {}


def test_a_function_body_is_counted_after_its_docstring():
    tree = ast.parse('def f():\n    """Doc,\n    two lines."""\n    x = 1\n\n    return (x,\n'
                     '            x)\n\n\ndef g():\n    """Only a docstring."""\n')
    f, g = tree.body
    assert (body_lines(f), body_lines(g)) == (4, 0)
