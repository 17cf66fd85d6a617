"""The same job gives the same figures on local[1], local[2] and a standalone cluster.

Every run is the ``drsim`` command in a subprocess (``python -m drsim``), started in a folder
outside the repository: it has its own driver JVM, so it cannot collide with the SparkSession
of the ``spark`` fixture that other tests keep in this process. A command under test is the
argument list before ``--out`` and ``--master``: one line of COMMANDS covers a command in
every test here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest

from spark.session import ARCHIVE_PREFIX, PACKAGES

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
HOUSEHOLDS = 400
RUN_TIMEOUT_SECONDS = 600

COMMANDS = [
    pytest.param(["simulate", str(QUICKSTART), "--households", str(HOUSEHOLDS)], id="simulate"),
    pytest.param(["run", str(QUICKSTART), "--households", str(HOUSEHOLDS)], id="run"),
]

# summary.json keys that describe how a run went, not what it found: the backend (master,
# app id, parallelism, partitions, tasks, peak task memory), the timings, the code version
# and the files written
RUN_FACTS = frozenset({"backend", "timings", "code_version", "files"})


# --------------------------------------------------------------------------- helpers
def figures(summary: dict) -> dict[str, object]:
    """The results of a summary.json, flattened to ``{"a.b.c": value}``.

    Leaves out the facts about the run (RUN_FACTS) and every wall-clock duration (a key
    ending in ``_seconds``, wherever it is).
    """
    flat: dict[str, object] = {}

    def walk(value: object, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if not str(key).endswith("_seconds"):
                    walk(item, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")
        else:
            flat[path] = value

    walk({k: v for k, v in summary.items() if k not in RUN_FACTS}, "")
    return flat


def assert_same_figures(summary: dict, expected: dict) -> None:
    got, want = figures(summary), figures(expected)
    numbers = [k for k, v in want.items() if isinstance(v, float)]
    assert len(numbers) >= 10, f"too few figures to compare: {sorted(want)}"
    differ = {k: (got.get(k, "<missing>"), want.get(k, "<missing>"))
              for k in sorted(set(got) | set(want)) if got.get(k, None) != want.get(k, None)}
    assert not differ, (f"{summary['backend']['master']} and {expected['backend']['master']} "
                        f"disagree on {len(differ)} figures: {differ}")


def drsim(command: list[str], out: Path, master: str, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> dict:
    """Run ``python -m drsim COMMAND --out OUT --master MASTER``; its summary.json."""
    run_env = {**os.environ, **(env or {})}
    # the driver imports the project from the repository, installed or not
    path = run_env.get("PYTHONPATH", "")
    run_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), path) if p)
    if cwd is not None:
        run_env["TMPDIR"] = str(cwd)  # the driver's temporary files (the shipped archive)
    args = [sys.executable, "-m", "drsim", *command, "--out", str(out), "--master", master]
    done = subprocess.run(args, cwd=cwd or out.parent, env=run_env, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_SECONDS)
    assert done.returncode == 0, (
        f"{shlex.join(args[2:])} exited with {done.returncode}\n"
        f"--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-8000:]}")
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def slug(master: str) -> str:
    """``local[2]`` → ``local_2``: a master URL as part of a folder name."""
    return re.sub(r"\W+", "_", master).strip("_")


def in_parallel(*runs: Callable[[], dict]) -> list[dict]:
    """Call each function in a thread of its own (each waits on a subprocess); the results."""
    if not runs:
        return []
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        return [future.result() for future in [pool.submit(run) for run in runs]]


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory):
    """``runs(command, *masters)``: the summaries of those local runs, each run made once.

    The runs not made yet run at the same time (each has its own driver JVM).
    """
    cache: dict[tuple[str, str], dict] = {}

    def runs(command: list[str], *masters: str) -> list[dict]:
        key = shlex.join(command)
        missing = [m for m in dict.fromkeys(masters) if (key, m) not in cache]
        # folders made here: tmp_path_factory is not thread-safe
        folders = [tmp_path_factory.mktemp(f"{command[0]}-{slug(m)}") for m in missing]
        done = in_parallel(*(partial(drsim, command, folder / "out", m, cwd=folder)
                             for m, folder in zip(missing, folders, strict=True)))
        cache.update({(key, m): summary for m, summary in zip(missing, done, strict=True)})
        return [cache[key, m] for m in masters]

    return runs


EXECUTOR_PYTHON = '''\
"""Python for the cluster's executors: the project is importable only as the job ships it.

Drops the project's editable-install finder and any path into the repository (but not the
Python environment's own, which may live there), then runs the module Spark asked for
(``-m pyspark.daemon``). Each import of one of the project's packages, in this process or
in the workers it forks, appends a JSON line to REPORT: where it came from and whether
that is a file (not a member of a zip).
"""
import json
import os
import runpy
import sys

ROOT, REPORT, PACKAGES = {root!r}, {report!r}, {packages!r}


def inside(path, folder):
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder + os.sep)


class Recorder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name not in PACKAGES:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is not cls and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        origin = os.path.realpath(spec.origin) if spec is not None and spec.origin else None
        with open(REPORT, "a", encoding="utf-8") as f:
            f.write(json.dumps({{"package": name, "origin": origin,
                                "file": bool(origin) and os.path.isfile(origin),
                                "cwd": os.path.realpath(os.getcwd()), "pid": os.getpid()}})
                    + "\\n")
        return spec


sys.meta_path[:] = [Recorder] + [f for f in sys.meta_path
                                 if not getattr(f, "__module__", "").startswith("__editable__")]
# (a virtual environment may live inside the repository: its site-packages stay)
sys.path[:] = [p for p in sys.path
               if not inside(p or os.getcwd(), ROOT) or inside(p or os.getcwd(), sys.prefix)]
args = sys.argv[1:]
if "-m" not in args:
    os.execv(sys.executable, [sys.executable, *args])
module = args[args.index("-m") + 1]
sys.argv = [module, *args[args.index("-m") + 2:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
'''


def executor_python(folder: Path) -> tuple[Path, Path]:
    """An executable for PYSPARK_PYTHON (see EXECUTOR_PYTHON) and the file it reports to."""
    report = folder / "executor-pythons.jsonl"
    script = folder / "executor_python.py"
    script.write_text(EXECUTOR_PYTHON.format(root=str(ROOT), report=str(report),
                                             packages=PACKAGES), encoding="utf-8")
    launcher = folder / "executor-python"
    launcher.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} "
                        f"{shlex.quote(str(script))} \"$@\"\n", encoding="utf-8")
    launcher.chmod(0o755)
    return launcher, report


def inside(path: str | Path, folder: str | Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


# --------------------------------------------------------------------------- tests
@pytest.mark.parametrize("command", COMMANDS)
def test_local_1_and_local_2_give_the_same_figures(local_runs, command):
    one, two = local_runs(command, "local[1]", "local[2]")
    assert one["backend"]["master"] == "local[1]"
    assert two["backend"]["master"] == "local[2]"
    assert one["backend"]["parallelism"] == 1 and two["backend"]["parallelism"] == 2
    assert one["scenario"]["households"] == two["scenario"]["households"] == HOUSEHOLDS
    assert_same_figures(one, two)


@pytest.mark.parametrize("command", COMMANDS)
def test_standalone_cluster_gives_the_same_figures(local_runs, standalone_cluster, command,
                                                   tmp_path):
    python, report = executor_python(tmp_path)
    summary, [local] = in_parallel(
        partial(drsim, command, tmp_path / "out", standalone_cluster,
                env={"PYSPARK_PYTHON": str(python), "SPARK_LOCAL_IP": "127.0.0.1"},
                cwd=tmp_path),
        partial(local_runs, command, "local[2]"))  # made already when the test above ran
    assert summary["backend"]["master"] == standalone_cluster
    assert summary["backend"]["name"] == "spark"
    assert summary["scenario"]["households"] == HOUSEHOLDS
    assert_same_figures(summary, local)

    # the executors ran outside the repository, on the code the job shipped to them
    assert report.is_file(), "no executor imported the project with the test's PYSPARK_PYTHON"
    imports = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
    assert {"drsim", "spark"} <= {i["package"] for i in imports}, imports
    for imported in imports:
        origin, cwd = imported["origin"], imported["cwd"]
        assert not inside(cwd, ROOT), imported
        assert origin is not None, f"not importable on an executor: {imported}"
        assert inside(origin, cwd), imported
        shipped = Path(origin).relative_to(cwd).parts  # the unpacked archive, the package
        assert shipped[0].startswith(ARCHIVE_PREFIX), imported
        assert shipped[1] == imported["package"], imported
        # unpacked, not imported from a zip: files next to the modules can be read
        assert imported["file"], imported
