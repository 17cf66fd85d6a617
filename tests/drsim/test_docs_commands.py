"""Every shell command of README.md and docs/*.md runs as written, in a small form, or is
checked another way; none is left out.

**What is a command.** Every line of a ```bash block (``\\`` continuations joined, ``#``
comments dropped, ``&&`` splitting a line into commands), and every code span in the text
whose first word is a command: ``drsim <command> ...``, ``python``/``python3 -m ...``,
``python scripts/...`` or ``scripts/X.py --option``, ``pip``, ``pytest``, ``ruff``,
``lint-imports``, ``spark-submit`` (``NAME=value`` before it is its environment). Shell
blocks are labelled ``bash`` (:func:`test_shell_blocks_are_labelled_bash`).

**How each kind is run or checked** (:func:`kind`):

- A *mention* (a command group alone, or a command that writes no argument and leaves out a
  required one: ``drsim run --streaming`` in a sentence): parsed against the real CLI. Its
  command exists, every option it names is one of the command's and in its ``--help``, and
  every ``a|b`` value is one the option's ``--help`` shows.
- A *usage line* (``[optional parts]``, ``a|b`` alternatives or ``...``): checked as a
  mention, and also: an option in brackets is optional in the CLI, an option shown without
  a value takes none, and every required argument and option of the command is shown.
- A *command* (everything else): run through typer's CliRunner on ``drsim.cli.app`` (or
  cep_core's app) in this process, in a temporary folder of its page with ``scenarios``
  linked into it (and drsim cluster's default folder), in the page's order: ``drsim report
  RUN_DIR`` reads the folder an earlier command wrote, and a command whose default folder an
  earlier one wrote is refused, as it would be for a reader. It must exit 0 (or as
  :data:`EXPECTED_EXIT` says, with its reason) and write its result folder
  (``summary.json``, the readings with ``--export-readings``) or sweep table (``table.csv``).
  *Placeholders* (words in capitals) get the values of :data:`PLACEHOLDERS` first. The
  *small form*: ``--households`` :data:`SMALL` (of each group, ``SMALL // 3``, for ``drsim
  baselines``) and ``--backend serial`` where the command takes them, ``--master`` left out
  (Spark is not started), a streamed run's ``--speed`` :data:`FAST`; ``drsim monitor
  --scenario X``: X scaled to :data:`SMALL` households, as the readings' run was; ``--stream
  DIR``: DIR holds readings' files before it runs; a sweep: a copy of its file on
  :data:`SMALL` households, one seed and the first value of each axis, once the file as
  written has loaded (every point built and checked).
- *Not run here* (:data:`NOT_RUN`): each with its reason and the check that replaces it
  (``pip install``: the extras exist; ``drsim cluster up``: a mention; ``spark-submit``:
  the drsim command it launches runs through the page's launcher; ``python scripts/...``:
  the script exists, answers ``--help`` and has every option the text names,
  :func:`test_scripts_named_in_the_docs_answer_help`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import runpy
import shlex
import shutil
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from cep_core.__main__ import app as cep_app
from drsim.cli import app
from drsim.scenario import load_scenario
from drsim.scenario.library import packaged, resolve
from drsim.sweeps import load_sweep

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
SMALL = 600  # households of a run in the small form
FAST = "100000"  # a streamed run's --speed in the small form: the day in a moment

#: Where a command's first words say what it is: run through this program's typer app.
APPS = {"drsim": app, "python -m cep_core": cep_app}
COMMAND_WORDS = ("drsim", "python", "python3", "pip", "pytest", "ruff", "lint-imports",
                 "spark-submit", ".")

#: Commands not run here: (first words, why, what is checked instead).
NOT_RUN = [
    (("pip", "install"), "installs packages into the environment",
     "every extra it names ('.[test]') is one of pyproject.toml's"),
    (("pytest",), "the test suite itself, which this test is part of",
     "every marker it selects (-m) is registered in pyproject.toml"),
    (("ruff", "check"), "CI's lint of the whole tree", "ruff is installed"),
    (("lint-imports",), "CI's check of the layering contracts",
     "lint-imports is installed and pyproject.toml has contracts"),
    (("python3", "-m", "venv"), "makes a virtual environment", "the venv module is there"),
    ((".",), "activates the virtual environment the command before it made (a shell "
             "built-in)", "the activated folder is the one made before it"),
    (("drsim", "cluster", "up"), "starts Spark daemons that outlive the command",
     "parsed against drsim cluster up --help"),
    (("spark-submit",), "needs a running Spark cluster",
     "spark-submit is installed; the drsim command after its launcher runs through the "
     "launcher the page shows, in its small form"),
    (("mkdocs",), "builds or serves the docs site (CI builds it: .ci/docs)",
     "mkdocs.yml is there"),
    (("python", "scripts"), "reproductions and benchmarks that take minutes",
     "the script exists, answers --help, and has every option named"),
    (("scripts",), "a script named without python, as in python scripts/...",
     "the script exists, answers --help, and has every option named"),
]

#: Exit codes other than 0 that a page says a command gives, and why.
EXPECTED_EXIT = {
    "drsim cluster status": (1, "the pages run it after drsim cluster up, which is not run "
                                "here; with no cluster, it exits 1 (docs/cluster.md: exit "
                                "code 1 unless every daemon is ALIVE)"),
}

#: Files a page shows in its ```text blocks and its commands read: page -> {file: block}.
PAGE_FILES = {"docs/cep_core.md": {"rise.cep": 0, "prices.csv": 1}}


# --------------------------------------------------------------------------- extraction
@dataclass(frozen=True)
class Command:
    """One command as a page writes it."""

    page: str
    line: int
    words: tuple[str, ...]  # the command's words, without the environment before it
    env: tuple[str, ...] = ()

    @property
    def written(self) -> str:
        return " ".join(self.words)

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {' '.join((*self.env, *self.words))}"


FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.S | re.M)
ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def fences(text: str) -> list[tuple[str, str, int]]:
    """(label, body, line of the opening fence) of every fenced block."""
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in FENCE.finditer(text)]


def split(line: str, page: str, number: int) -> list[Command]:
    """The commands of one shell line: ``&&`` separates them, ``NAME=value`` before a
    command is its environment."""
    commands, part = [], []
    for word in [*shlex.split(line, comments=True), "&&"]:
        if word != "&&":
            part.append(word)
            continue
        env = []
        while part and ENV.match(part[0]):
            env.append(part.pop(0))
        if part:
            commands.append(Command(page, number, tuple(part), tuple(env)))
        part = []
    return commands


def is_command(words: list[str]) -> bool:
    """Whether a code span's words are a command (not a path, a module or a name)."""
    while words and ENV.match(words[0]):
        words = words[1:]
    if not words:
        return False
    first = words[0]
    if first in ("drsim", "python", "python3", "spark-submit"):
        return len(words) > 1 or first == "spark-submit"
    if re.fullmatch(r"scripts/\w+\.py", first):
        return len(words) > 1
    return first in COMMAND_WORDS


def page_commands(page: str) -> list[Command]:
    """Every command of a page, in the page's order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found: list[Command] = []
    for label, body, first in fences(text):
        if label != "bash":
            continue
        lines, start = [], None
        for number, line in enumerate(body.split("\n"), start=first + 1):
            start = number if start is None else start
            if line.endswith("\\"):
                lines.append(line[:-1])
                continue
            joined = " ".join([*lines, line]).strip().removeprefix("$ ")
            found += split(joined, page, start)
            lines, start = [], None
    # spans: outside the blocks (blanked, keeping the line numbers)
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for match in re.finditer(r"`([^`]+)`", prose):
        code = " ".join(match.group(1).replace("\\|", "|").split())
        try:
            words = shlex.split(code)
        except ValueError:
            continue
        if is_command(words):
            found += split(code, page, prose.count("\n", 0, match.start()) + 1)
    return sorted(found, key=lambda c: c.line)


# --------------------------------------------------------------------------- the CLI's shape
def options_of(command) -> dict:
    """A command's options by each of their names."""
    return {name: p for p in command.params if p.param_type_name == "option"
            for name in (*p.opts, *p.secondary_opts)}


def arguments_of(command) -> list:
    return [p for p in command.params if p.param_type_name == "argument"]


def is_group(command) -> bool:
    return hasattr(command, "commands")


@dataclass
class Parsed:
    """A command line parsed against a click command: its words in brackets are optional."""

    path: list[str]  # the command's names after the program, e.g. ["cluster", "status"]
    command: Any  # typer's click command
    arguments: list[tuple[str, bool]] = field(default_factory=list)  # (word, optional)
    options: list[tuple[str, str | None, bool]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lead: list[str] = field(default_factory=list)  # the program's own flags before them

    def param(self, option: str):
        return options_of(self.command)[option]

    def value(self, name: str) -> str | None:
        return next((v for o, v, _ in self.options if name in self.param(o).opts), None)

    def has(self, name: str) -> bool:
        return any(name in self.param(o).opts for o, _, _ in self.options)

    def missing(self) -> list[str]:
        """The required parameters the line does not show."""
        shown = {self.param(o).name for o, _, _ in self.options}
        arguments = arguments_of(self.command)[len(self.arguments):]
        return [*(p.metavar or p.name.upper() for p in arguments if p.required),
                *(p.opts[0] for p in options_of(self.command).values()
                  if p.required and p.name not in shown)]


def brackets(words: list[str]) -> list[str]:
    """``[`` and ``]`` as words of their own."""
    out = []
    for word in words:
        core = word.lstrip("[")
        rest = core.rstrip("]")
        out += ["["] * (len(word) - len(core)) + ([rest] if rest else []) \
            + ["]"] * (len(core) - len(rest))
    return out


def parse(program, words: list[str]) -> Parsed:
    """``words`` (after the program's name) against ``program``'s commands and options; a
    word ``a|b`` where a command is named: both are commands."""
    command, path, words, lead = program, [], brackets(words), []
    while is_group(command) and words:
        if words[0].startswith("-"):  # the program's own option, e.g. drsim --verbose
            if words[0] not in options_of(command):
                return Parsed(path, command, problems=[f"{words[0]}: not an option of "
                                                       f"{' '.join(path) or 'the program'}"])
            lead.append(words.pop(0))
            continue
        names = words.pop(0).split("|")
        missing = [n for n in names if n not in command.commands]
        if missing:
            return Parsed(path, command, problems=[
                f"{', '.join(missing)}: not a command of {' '.join(path) or 'the program'} "
                f"({', '.join(command.commands)})"])
        path.append(names[0])
        command = command.commands[names[0]]
    parsed = Parsed(path, command, lead=lead)
    options = options_of(command)
    depth, i = 0, 0
    while i < len(words):
        word, i = words[i], i + 1
        if word in ("[", "]"):
            depth += 1 if word == "[" else -1
        elif word == "...":
            continue
        elif not (word.startswith("-") and len(word) > 1):
            parsed.arguments.append((word, depth > 0))
        elif (param := options.get(word.partition("=")[0])) is None:
            parsed.problems.append(f"{word.partition('=')[0]} is not an option of "
                                   f"{' '.join(path)}")
        elif param.is_flag:
            parsed.options.append((word, None, depth > 0))
        elif "=" in word:
            name, _, value = word.partition("=")
            parsed.options.append((name, value, depth > 0))
        elif i < len(words) and words[i] not in ("[", "]") and not words[i].startswith("-"):
            parsed.options.append((word, words[i], depth > 0))
            i += 1
        else:
            parsed.options.append((word, "", depth > 0))  # named, its value not shown
    return parsed


HELP: dict[tuple[str, ...], str] = {}


def help_text(program: str, path: list[str]) -> str:
    """``program <path> --help`` (it must exit 0)."""
    key = (program, *path)
    if key not in HELP:
        result = CliRunner().invoke(APPS[program], [*path, "--help"])
        assert result.exit_code == 0, result.output
        HELP[key] = result.output
    return HELP[key]


def check_shape(program: str, parsed: Parsed, usage: bool) -> list[str]:
    """The problems of a usage line (``usage``) or a mention against the CLI."""
    if parsed.problems:
        return parsed.problems
    problems = []
    name = " ".join((program, *parsed.path))
    text = help_text(program, parsed.path)
    for option, value, optional in parsed.options:
        param = parsed.param(option)
        if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text):
            problems.append(f"{option} is not in `{name} --help`")
        if value is not None and "|" in value:  # alternatives: each one the help accepts
            shown = re.search(rf"{re.escape(option)}\s+<([^>]*\|[^>]*)>", text)
            problems += [f"{option} {v}: not a value of `{name} --help`"
                         for v in value.split("|") if v not in (
                             shown.group(1).split("|") if shown else re.findall(r"[\w-]+", text))]
        if usage and value == "":
            problems.append(f"{option} takes a value, and the line shows none")
        if optional and param.required:
            problems.append(f"{option} is shown optional, but `{name}` requires it")
    arguments = arguments_of(parsed.command)
    if len(parsed.arguments) > len(arguments):
        problems.append(f"`{name}` takes {len(arguments)} argument(s), "
                        f"{len(parsed.arguments)} shown")
    if usage:
        problems += [f"`{name}` requires {m}, which the line does not show"
                     for m in parsed.missing()]
    return problems


# --------------------------------------------------------------------------- kinds
def program_of(words: tuple[str, ...]) -> tuple[str, list[str]] | None:
    """(program, the words after it) for a command run through a typer app."""
    if words[0] == "drsim":
        return "drsim", list(words[1:])
    if words[:3] == ("python", "-m", "cep_core"):
        return "python -m cep_core", list(words[3:])
    return None


def parsed_of(command: Command) -> Parsed:
    program, words = program_of(command.words)
    return parse(typer.main.get_command(APPS[program]), words)


def not_run(command: Command) -> tuple[str, str] | None:
    """(why, what is checked instead) when NOT_RUN lists the command."""
    words = command.words
    for first, why, instead in NOT_RUN:
        if first == ("python", "scripts"):
            matches = words[0] == "python" and len(words) > 1 and words[1].startswith("scripts/")
        elif first == ("scripts",):
            matches = words[0].startswith("scripts/")
        else:
            matches = words[:len(first)] == first
        if matches:
            return why, instead
    return None


def kind(command: Command) -> str:
    """``run``, ``usage``, ``mention``, ``not run`` or ``unknown``."""
    if not_run(command) is not None:
        return "not run"
    if program_of(command.words) is None:
        return "unknown"
    parsed = parsed_of(command)
    words = command.words
    if is_group(parsed.command) or (
            not parsed.problems and not parsed.arguments and parsed.missing()):
        return "mention"
    if any(c in w for w in words for c in "[]|") or "..." in words:
        return "usage"
    return "run"


def script_of(command: Command) -> str | None:
    """The script a ``python scripts/X.py`` or ``scripts/X.py`` command runs."""
    words = command.words
    if words[0] == "python" and len(words) > 1 and words[1].startswith("scripts/"):
        return words[1]
    return words[0] if words[0].startswith("scripts/") else None


# --------------------------------------------------------------------------- running
@dataclass
class Page:
    """A page's temporary folder and what its commands made so far."""

    name: str
    folder: Path
    last: Path | None = None  # the result or sweep folder the latest command wrote
    readings: Path | None = None  # the readings the latest --export-readings wrote
    recorded: Path | None = None  # readings made for a page that has none of its own

    def source(self) -> Path:
        """Readings for READINGS, T and a --stream folder: the page's own, else those of a
        small run of the quickstart (the scenario S stands for)."""
        if self.readings is not None:
            return self.readings
        if self.recorded is None:
            out = self.folder / "recorded"
            result = CliRunner().invoke(app, [
                "run", "scenarios/quickstart.yaml", "--households", str(SMALL),
                "--backend", "serial", "--export-readings", "--out", str(out)])
            assert result.exit_code == 0, result.output
            self.recorded = out / "readings"
        return self.recorded

    def small_scenario(self, path: str) -> str:
        """A copy of the scenario at ``path`` scaled to SMALL households."""
        small = self.folder / "small" / Path(path).name
        if not small.exists():
            scenario = load_scenario(resolve(path)).with_households(SMALL)
            small.parent.mkdir(exist_ok=True)
            small.write_text(yaml.safe_dump(scenario.model_dump(mode="json")),
                             encoding="utf-8")
        return str(small.relative_to(self.folder))

    def small_sweep(self, path: str) -> str:
        """A copy of the sweep file at ``path`` on SMALL households, one seed, the first
        value of each axis (after the file as written has loaded: every point checked)."""
        source = resolve(path)  # the page's folder is the current one
        load_sweep(source)
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
        data["scenario"] = str((source.parent / data["scenario"]).absolute())
        data["seeds"] = 1
        overrides = data.get("overrides") or {}
        grid = {axis: values[:1] for axis, values in (data.get("grid") or {}).items()}
        if "households" in grid:
            grid["households"] = [SMALL]
        else:
            overrides["households"] = SMALL
        if "group_size" in overrides:
            overrides["group_size"] = SMALL // 3
        data["overrides"], data["grid"] = overrides, grid
        small = self.folder / "small" / "sweeps" / source.name
        small.parent.mkdir(parents=True, exist_ok=True)
        small.write_text(yaml.safe_dump(data), encoding="utf-8")
        return str(small.relative_to(self.folder))

    def stream(self, folder: str) -> None:
        """Readings 'arriving' in ``folder`` for drsim monitor --stream: the files of
        :meth:`source`, copied in before the command runs."""
        target = self.folder / folder
        if not target.exists():
            target.mkdir(parents=True)
            for part in sorted((self.folder / self.source()).glob("*.parquet")):
                shutil.copy(part, target / part.name)


def _thresholds(page: Page, option: str, line: int) -> str:
    return str(page.source().parent / "thresholds.parquet")


#: A placeholder's value: a word, a word by the option it is the value of, or what the
#: page made (page, option, line -> word).
PLACEHOLDERS: dict[str, str | dict[str, str] | Callable[[Page, str, int], str]] = {
    "SCENARIO": "scenarios/quickstart.yaml",
    "S": "scenarios/quickstart.yaml",
    "SWEEP": "scenarios/sweeps/threshold_z",  # SWEEP.yaml
    "NAME": "detection_delay",  # scenarios/sweeps/NAME.yaml: the first sweep sweeps.md shows
    "N": {"--seeds": "1", "--households": str(SMALL), "--speed": FAST},
    "MIN": "10",
    "DIR": lambda page, option, line: f"results/dir_{line}",  # a new folder
    "FOLDER": lambda page, option, line: f"results/folder_{line}",
    "RUN_DIR": lambda page, option, line: str(page.last),
    "READINGS": lambda page, option, line: str(page.source()),
    "T": _thresholds,
    "FILE": _thresholds,
}
PLACEHOLDER = re.compile(r"(?<![\w.])([A-Z][A-Z0-9_]*)(?!\w)")


def substitute(page: Page, command: Command, word: str, option: str) -> str:
    """``word`` with its placeholders replaced (``option``: the option it is the value of)."""
    def value(match: re.Match) -> str:
        given = PLACEHOLDERS.get(match.group(1))
        if isinstance(given, dict):
            given = given.get(option)
        if given is None:
            raise AssertionError(f"{command}: no value for {match.group(1)} after "
                                 f"{option or 'the command'} (add one to PLACEHOLDERS)")
        return given(page, option, command.line) if callable(given) else given

    return PLACEHOLDER.sub(value, word)


def small_form(page: Page, command: Command, parsed: Parsed) -> list[str]:
    """The command's words after the program: placeholders replaced, in the small form."""
    name = " ".join(parsed.path)
    arguments = [substitute(page, command, w, "") for w, _ in parsed.arguments]
    options = [(o, v if v is None else substitute(page, command, v, o))
               for o, v, _ in parsed.options if o not in ("--master", "--backend")]
    takes = options_of(parsed.command)
    if name in ("run", "simulate"):
        options = [(o, FAST if o == "--speed" else v) for o, v in options
                   if o != "--households"] + [("--households", str(SMALL))]
    elif name == "monitor":
        options = [(o, page.small_scenario(v) if takes[o].name == "scenario_file" else v)
                   for o, v in options]
        for o, v in options:
            if takes[o].name == "stream":
                page.stream(v)
    elif name == "sweep":
        arguments[0] = page.small_sweep(arguments[0])
        options = [(o, "1" if o == "--seeds" else v) for o, v in options]
    elif "--households" in takes:  # drsim baselines: N households of each group
        options = [(o, str(SMALL // 3) if o == "--households" else v) for o, v in options]
    if "--backend" in takes:
        options.append(("--backend", "serial"))
    words = [*parsed.lead, *parsed.path, *arguments]
    for option, value in options:
        words += [option] if value is None else [option, value]
    return words


def snapshot(folder: Path) -> dict[Path, tuple[int, int]]:
    """Every summary.json and table.csv under ``folder``: (inode, mtime)."""
    return {path: (path.stat().st_ino, path.stat().st_mtime_ns)
            for name in ("summary.json", "table.csv") for path in folder.rglob(name)}


def run_command(page: Page, command: Command, launcher: Path | None = None) -> list[str]:
    """Run one command in its small form; its problems."""
    program, _ = program_of(command.words)
    parsed = parsed_of(command)
    if parsed.problems:
        return parsed.problems
    args = small_form(page, command, parsed) if program == "drsim" else [
        *parsed.lead, *parsed.path,
        *(substitute(page, command, w, "") for w, _ in parsed.arguments),
        *(w for o, v, _ in parsed.options for w in ((o,) if v is None else (o, v)))]
    before = snapshot(page.folder)
    if launcher is None:
        result = CliRunner().invoke(APPS[program], args)
        code, output = result.exit_code, result.output
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            output += f"\n{result.exception!r}"
    else:
        code, output = run_launcher(launcher, args), ""
    expected = EXPECTED_EXIT.get(command.written, (0, ""))[0]
    if code != expected:
        tail = "\n".join(output.strip().splitlines()[-10:])
        return [f"ran as `{program} {shlex.join(args)}`: exit code {code}, expected "
                f"{expected}\n{tail}"]
    return wrote(page, command, parsed, before) if program == "drsim" else []


def run_launcher(launcher: Path, args: list[str]) -> int:
    """The exit code of a launcher file run in this process with ``args``."""
    saved = sys.argv
    sys.argv = [launcher.name, *args]
    try:
        runpy.run_path(str(launcher), run_name="__main__")
        return 0
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
    finally:
        sys.argv = saved


def wrote(page: Page, command: Command, parsed: Parsed, before: dict) -> list[str]:
    """What the command must have written; the page's state after it."""
    name = " ".join(parsed.path)
    changed = [p for p, stamp in snapshot(page.folder).items() if before.get(p) != stamp]
    if name in ("run", "simulate", "monitor", "baselines"):
        folders = [p.parent for p in changed if p.name == "summary.json"
                   and not p.is_relative_to(page.folder / "recorded")]
        if len(folders) != 1:
            return [f"wrote {len(folders)} result folders, not 1"]
        page.last = folders[0].relative_to(page.folder)
        if parsed.has("--export-readings"):
            if not (folders[0] / "readings").is_dir():
                return [f"no readings in {page.last}"]
            page.readings = page.last / "readings"
    elif name == "sweep":
        tables = [p.parent for p in changed if p.name == "table.csv"]
        if len(tables) != 1:
            return [f"wrote {len(tables)} sweep tables, not 1"]
        page.last = tables[0].relative_to(page.folder)
    return []


# --------------------------------------------------------------------------- not run here
def check_not_run(page: Page, command: Command, text: str) -> list[str]:
    """The check that replaces running a command NOT_RUN lists (the scripts':
    test_scripts_named_in_the_docs_answer_help)."""
    words = command.words
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    if words[:2] == ("pip", "install"):
        extras = project["project"].get("optional-dependencies", {})
        named = [e for w in words for m in re.findall(r"^\.\[([\w,-]+)\]$", w)
                 for e in m.split(",")]
        return [f"no extra {e!r} in pyproject.toml" for e in named if e not in extras]
    if words[0] == "pytest":
        markers = [m.split(":")[0] for m in project["tool"]["pytest"]["ini_options"]["markers"]]
        return [f"marker {m!r} is not registered" for i, m in enumerate(words[1:])
                if words[i] == "-m" and m not in markers]
    if words[0] in ("ruff", "lint-imports", "spark-submit"):
        problems = [] if shutil.which(words[0]) else [f"{words[0]} is not installed"]
        if words[0] == "lint-imports" and "importlinter" not in project["tool"]:
            problems.append("pyproject.toml has no [tool.importlinter] contracts")
        if words[0] == "spark-submit" and len(words) > 1:
            problems += submit(page, command, text)
        return problems
    if words[:3] == ("python3", "-m", "venv"):
        return [] if importlib.util.find_spec("venv") else ["no venv module"]
    if words[0] == ".":
        return [] if words[1:] == (".venv/bin/activate",) else [
            "activates something else than the .venv the command before it made"]
    if words[:3] == ("drsim", "cluster", "up"):
        return check_shape("drsim", parsed_of(command), usage=False)
    if words[0] == "mkdocs":
        return [] if (ROOT / "mkdocs.yml").is_file() else ["no mkdocs.yml"]
    return []


def submit(page: Page, command: Command, text: str) -> list[str]:
    """``spark-submit ... LAUNCHER.py ARGS``: LAUNCHER.py is the last ```python block above
    the command; it runs ARGS as a drsim command, in the small form."""
    launchers = [w for w in command.words if w.endswith(".py")]
    blocks = [body for label, body, line in fences(text)
              if label == "python" and line < command.line]
    if len(launchers) != 1 or not blocks:
        return ["no launcher .py shown in a ```python block above it"]
    launcher = page.folder / launchers[0]
    launcher.write_text(blocks[-1], encoding="utf-8")
    rest = command.words[command.words.index(launchers[0]) + 1:]
    return run_command(page, Command(command.page, command.line, ("drsim", *rest)),
                       launcher=launcher)


# --------------------------------------------------------------------------- the tests
def commands_by_page() -> dict[str, list[Command]]:
    return {page: commands for page in PAGES if (commands := page_commands(page))}


def check(page: Page, command: Command, text: str) -> list[str]:
    """Run or check one command; its problems, each naming the command."""
    what = kind(command)
    if what == "unknown":
        problems = ["not a command this test knows: run it (APPS) or list it in NOT_RUN "
                    "with the reason"]
    elif what in ("usage", "mention"):
        problems = check_shape(program_of(command.words)[0], parsed_of(command),
                               usage=what == "usage")
    elif what == "run":
        problems = run_command(page, command)
    else:
        problems = check_not_run(page, command, text)
    return [f"{command}\n  {p}" for p in problems]


@pytest.fixture
def page_folder(tmp_path, monkeypatch):
    """The page's folder (the current one), which holds no ``scenarios``: the pages'
    ``scenarios/NAME.yaml`` are the packaged files; drsim cluster's default folder inside
    it, not in the user's home."""
    import spark.cluster

    folder = tmp_path / "page"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setattr(spark.cluster, "DEFAULT_FOLDER", tmp_path / "home" / ".drsim" /
                        "cluster")
    return folder


@pytest.mark.parametrize("page", list(commands_by_page()))
def test_the_commands_of_a_page_run_as_written(page, page_folder):
    """The page's commands in its order, in a folder of its own: each runs in its small form
    and exits as the page says, or is checked as its kind says."""
    text = (ROOT / page).read_text(encoding="utf-8")
    shown = [body for label, body, _ in fences(text) if label == "text"]
    for name, index in PAGE_FILES.get(page, {}).items():
        (page_folder / name).write_text(shown[index], encoding="utf-8")
    state = Page(page, page_folder)
    problems = [p for command in commands_by_page()[page]
                for p in check(state, command, text)]
    assert not problems, "\n".join(problems)


def test_every_command_has_a_kind():
    """Every command found is run, checked as a usage line or a mention, or listed in
    NOT_RUN: a new kind of command fails here until it is given one."""
    kinds: dict[str, list[str]] = {}
    for command in (c for cs in commands_by_page().values() for c in cs):
        kinds.setdefault(kind(command), []).append(str(command))
    assert kinds.pop("unknown", []) == []
    assert {k: len(v) >= 5 for k, v in kinds.items()} == dict.fromkeys(
        ("run", "usage", "mention", "not run"), True), {k: len(v) for k, v in kinds.items()}


def script_help(script: str) -> tuple[int, str]:
    """``python <script> --help`` in this process (the entry point imports its
    ``experiments`` module as any package; nothing is put on sys.path): exit code, output."""
    saved = sys.argv
    sys.argv = [script, "--help"]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            runpy.run_path(str(ROOT / script), run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
    finally:
        sys.argv = saved
    return code, out.getvalue()


def test_scripts_named_in_the_docs_answer_help():
    """Every ``python scripts/X.py`` (or ``scripts/X.py --option``) the pages name exists,
    answers ``--help`` with exit code 0 and has every option named (and each ``a|b`` value
    of one); a scenario it names exists."""
    calls = [c for cs in commands_by_page().values() for c in cs if script_of(c)]
    scripts = sorted({script_of(c) for c in calls})
    assert len(scripts) >= 15, scripts
    problems = [f"{s}: no such file" for s in scripts if not (ROOT / s).is_file()]
    helps = {}
    for script in scripts:
        if (ROOT / script).is_file():
            code, helps[script] = script_help(script)
            if code != 0:
                problems.append(f"{script} --help: exit code {code}\n{helps[script]}")
    for call in calls:
        script = script_of(call)
        text = helps.get(script, "")
        words = brackets(list(call.words[call.words.index(script) + 1:]))
        for i, word in enumerate(words):
            option = word.partition("=")[0]
            if word.startswith("--") and not re.search(
                    rf"(?<![\w-]){re.escape(option)}(?![\w-])", text):
                problems.append(f"{call}: {option} is not in `{script} --help`")
            if word.startswith("--") and i + 1 < len(words) and "|" in words[i + 1]:
                problems += [f"{call}: {option} {v} is not in `{script} --help`"
                             for v in words[i + 1].split("|") if v not in text]
            if word.startswith("scenarios/") and packaged(word) is None:
                problems.append(f"{call}: {word}: no such file")
    assert not problems, "\n".join(problems)


def test_shell_blocks_are_labelled_bash():
    """Every fenced block has a label; a block of shell commands is ```bash (not sh, shell,
    console or none) without prompts, and no block of another label starts with one."""
    problems = []
    for page in PAGES:
        for label, body, line in fences((ROOT / page).read_text(encoding="utf-8")):
            lines = [ln for ln in body.splitlines() if ln.strip()]
            first = lines[0].removeprefix("$ ").split() if lines else []
            if label in ("", "sh", "shell", "console", "zsh"):
                problems.append(f"{page}:{line}: a block labelled {label or 'nothing'}")
            elif label == "bash" and any(ln.startswith("$ ") for ln in lines):
                problems.append(f"{page}:{line}: a prompt ($) in a bash block")
            elif label != "bash" and first and is_command(first):
                problems.append(f"{page}:{line}: shell commands in a ```{label} block")
    assert not problems, "\n".join(problems)


def test_the_readings_columns_are_named_as_the_code_names_them():
    """README's and docs/monitor.md's columns of recorded readings are the ones drsim
    monitor reads (``time``, not ``minute``)."""
    from drsim.pipeline.recorded import REQUIRED, ROWS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("`drsim monitor READINGS")
    listed = readme[start:readme.index(")", readme.index("Parquet file or dataset", start))]
    named = re.findall(r"`(\w+)`", listed)
    assert "time" in named and set(REQUIRED) <= set(named) <= set(ROWS.names), named
    page = (ROOT / "docs" / "monitor.md").read_text(encoding="utf-8")
    table = page[page.index("## The readings"):page.index("\n\n", page.index("| column |"))]
    assert sorted(re.findall(r"^\| `(\w+)` \|", table, re.M)) == sorted(ROWS.names)


def test_the_functions_readme_names_are_the_clis_commands():
    """README's 'functions of drsim' are exported by drsim, are drsim.api's, and are
    commands of the CLI."""
    import drsim
    import drsim.api

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(ln for ln in readme.splitlines() if "are functions of `drsim`" in ln)
    names = [n for n in re.findall(r"`(?:drsim )?(\w+)`", line) if n != "drsim"]
    commands = typer.main.get_command(app).commands
    assert names == ["run", "simulate", "monitor", "sweep"]
    for name in names:
        assert name in drsim.__all__ and name in commands
        assert getattr(drsim, name) is getattr(drsim.api, name)
