"""Every example of the README runs, and says what it shows.

The Python blocks run in order in one namespace, in a small form: ``drsim.run``,
``drsim.simulate`` and ``drsim.sweep`` are called on the serial backend with at most
:data:`SMALL` households (a sweep with one seed), in a folder of their own beside a link to
the repository's scenarios. The query and events of docs/cep_core.md ("cep_core in five
minutes", linked from the README) are run by its command, and the output must be the one
the page prints."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import drsim
from cep_core.__main__ import app as cep_app
from drsim.scenario.library import resolve
from drsim.sweeps import sweep_from_dict

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CEP_CORE = (ROOT / "docs" / "cep_core.md").read_text(encoding="utf-8")
SMALL = 600


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end >= 0 else len(README)]


def small_sweep(path: str | Path):
    """The sweep file at ``path`` with SMALL households and one seed."""
    path = resolve(path)  # a file, or a packaged sweep
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.setdefault("overrides", {})["households"] = SMALL
    data["seeds"] = 1
    return sweep_from_dict(data, source=str(path), base_dir=path.parent,
                           default_name=path.stem)


@pytest.fixture
def small_api(tmp_path, monkeypatch):
    """drsim's API in the small form; ``calls`` records each call's name and target."""
    calls: list[tuple[str, str]] = []
    real = {name: getattr(drsim, name) for name in ("run", "simulate", "sweep")}

    def small(name):
        def call(target, *args, **options):
            calls.append((name, str(target)))
            options.pop("master", None)
            options["backend"] = "serial"
            if name == "sweep":
                target = small_sweep(target)
            else:
                options["households"] = min(options.get("households") or SMALL, SMALL)
            return real[name](target, *args, **options)
        return call

    for name in real:
        monkeypatch.setattr(drsim, name, small(name))
    monkeypatch.chdir(tmp_path)
    return calls


def test_the_python_examples_run(small_api, tmp_path):
    python = blocks(section("Python API"), "python")
    assert len(python) == 2
    namespace: dict = {}
    for block in python:
        exec(compile(block, "README.md", "exec"), namespace)
    assert [name for name, _ in small_api] == ["run", "run", "run", "simulate", "sweep"]
    assert (tmp_path / "results" / "quickstart" / "summary.json").is_file()
    assert (tmp_path / "results" / "threshold_z" / "table.csv").is_file()
    adaptive = namespace["adaptive"]
    assert len(adaptive) and set(adaptive["pass"]) == {"adaptive"}
    # the kernel example: the numbers its comments and text state are the ones it computes
    kernel = python[1]
    stated = re.search(r"# \[(\d+), (\d+), (\d+)\]", kernel).groups()
    assert namespace["kwh"] == [int(x) for x in stated]
    moved = int(re.search(r"the (\d+) households the second event moves", kernel).group(1))
    assert len(namespace["moved"]) == moved > 0
    text = section("Python API")
    assert f"moves {moved} of them and another {namespace['kwh'][1] - namespace['kwh'][2]} kWh" \
        in " ".join(text.split())


def test_readme_is_read_in_five_minutes():
    """At most 250 lines, and every page it links to exists."""
    assert len(README.splitlines()) <= 250
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links and all((ROOT / link).exists() for link in links), links


def test_cep_core_in_five_minutes(tmp_path):
    text = CEP_CORE
    query, events, output = blocks(text, "text")
    (command,) = blocks(text, "bash")
    words = command.split()
    assert words[:4] == ["python", "-m", "cep_core", "run"]
    (tmp_path / words[4]).write_text(query)
    (tmp_path / words[5]).write_text(events)
    assert len(events.strip().splitlines()) == 5  # a header and four events
    paths = [str(tmp_path / w) for w in words[4:6]]
    result = CliRunner().invoke(cep_app, ["run", *paths, *words[6:]])
    assert result.exit_code == 0, result.output
    assert result.stdout == output
    # the text's claim about skip-till-next-match
    nxt = CliRunner().invoke(cep_app, ["run", *paths, "--policy", "skip-till-next-match"])
    pairs = pd.read_csv(io.StringIO(nxt.stdout))[["first", "last"]].values.tolist()
    stated = re.search(r"\(three\s+rows: (\d)-(\d), (\d)-(\d), (\d)-(\d)\)", text).groups()
    assert pairs == [[int(a), int(b)] for a, b in zip(stated[::2], stated[1::2], strict=True)]
