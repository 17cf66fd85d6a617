"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def spark():
    """One local[2] Spark session per test module, stopped at its end."""
    from pyspark.sql import SparkSession

    from spark.session import get_spark

    session = get_spark("local[2]", app_name="drsim-tests")
    yield session
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


# --------------------------------------------------------------------------- standalone cluster
CLUSTER_HOST = "127.0.0.1"
CLUSTER_READY_SECONDS = 120
CLUSTER_STOP_SECONDS = 30


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((CLUSTER_HOST, 0))
        return s.getsockname()[1]


def _tail(path, lines: int = 25) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"({path.name}: no log)"
    return f"--- {path.name} ---\n" + "\n".join(text.splitlines()[-lines:])


def _stop(processes: list) -> None:
    """Stop daemons started each in its own session: SIGTERM to their process groups, then
    SIGKILL to what is left.

    A group holds one daemon and what it started (a worker's executors and their Python
    workers), and nothing else.
    """
    import os
    import signal
    import time

    def alive(process) -> bool:
        process.poll()  # reaps the daemon once it exited: a zombie still counts in the group
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return False
        return True

    for sig, seconds in ((signal.SIGTERM, CLUSTER_STOP_SECONDS), (signal.SIGKILL, 10)):
        running = [p for p in processes if alive(p)]
        for process in running:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + seconds
        while running and time.monotonic() < deadline:
            time.sleep(0.2)
            running = [p for p in running if alive(p)]
        if not running:
            break
    for process in processes:
        process.wait(timeout=10)


def _wait_for_cluster(ui_url: str, processes: dict, logs: dict) -> str:
    """Poll the master's JSON status until it is ALIVE with a worker; its spark:// URL."""
    import json
    import time
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + CLUSTER_READY_SECONDS
    status: dict = {}
    while time.monotonic() < deadline:
        for name, process in processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"the standalone {name} exited with code {process.returncode}"
                                   f"\n{_tail(logs[name])}")
        try:
            with urllib.request.urlopen(ui_url, timeout=5) as response:
                status = json.load(response)
        except (OSError, urllib.error.URLError, ValueError):
            status = {}
        if status.get("status") == "ALIVE" and status.get("aliveworkers", 0) >= 1:
            return status["url"]
        time.sleep(0.5)
    raise RuntimeError(f"the standalone cluster was not ready after {CLUSTER_READY_SECONDS} s "
                       f"(last status: {status or 'no answer'})\n"
                       + "\n".join(_tail(path) for path in logs.values()))


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """A Spark standalone cluster on 127.0.0.1: one master, one worker (2 cores, 2 GiB).

    Yields the master URL ``spark://127.0.0.1:PORT``. Started with ``spark-class`` from the
    Spark that pyspark uses (pip's pyspark has no ``sbin/start-master.sh``), each daemon in
    its own session, logging to files; the daemons and the worker's executors run in a
    temporary folder outside the repository, with no ``PYTHONPATH``, so the executors find
    the project's code only if the job ships it. Stopped, and its folders removed, at the end
    of the session, also when starting it failed.
    """
    import os
    import shutil
    import subprocess

    from pyspark.find_spark_home import _find_spark_home

    from spark.session import java_version

    if java_version() is None:
        pytest.skip("Java not found: a standalone Spark cluster needs Java "
                    "(install it or set JAVA_HOME)")
    spark_class = os.path.join(_find_spark_home(), "bin", "spark-class")
    base = tmp_path_factory.mktemp("spark-standalone")
    dirs = {name: base / name for name in ("logs", "pids", "work", "cwd")}
    for path in dirs.values():
        path.mkdir()
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
           and not key.startswith("SPARK_")}
    env.update({
        "SPARK_LOCAL_IP": CLUSTER_HOST,
        "SPARK_LOCAL_HOSTNAME": CLUSTER_HOST,
        "SPARK_MASTER_HOST": CLUSTER_HOST,
        "SPARK_LOG_DIR": str(dirs["logs"]),
        "SPARK_PID_DIR": str(dirs["pids"]),
        "SPARK_WORKER_DIR": str(dirs["work"]),
        "SPARK_DAEMON_MEMORY": "512m",
    })
    if os.environ.get("SPARK_HOME"):
        env["SPARK_HOME"] = os.environ["SPARK_HOME"]
    port, ui_port, worker_ui_port = _free_port(), _free_port(), _free_port()
    master_url = f"spark://{CLUSTER_HOST}:{port}"
    commands = {
        "master": ["org.apache.spark.deploy.master.Master", "--host", CLUSTER_HOST,
                   "--port", str(port), "--webui-port", str(ui_port)],
        "worker": ["org.apache.spark.deploy.worker.Worker", "--host", CLUSTER_HOST,
                   "--webui-port", str(worker_ui_port), "--cores", "2", "--memory", "2g",
                   "--work-dir", str(dirs["work"]), master_url],
    }
    logs = {name: dirs["logs"] / f"{name}.out" for name in commands}
    processes: dict[str, subprocess.Popen] = {}
    try:
        for name, args in commands.items():
            with open(logs[name], "wb") as log:
                processes[name] = subprocess.Popen(
                    [spark_class, *args], cwd=dirs["cwd"], env=env, stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            (dirs["pids"] / f"{name}.pid").write_text(f"{processes[name].pid}\n")
        url = _wait_for_cluster(f"http://{CLUSTER_HOST}:{ui_port}/json/", processes, logs)
        assert url == master_url, f"the master runs at {url}, not at {master_url}"
        yield master_url
    finally:
        try:
            _stop(list(processes.values()))
        finally:
            shutil.rmtree(base, ignore_errors=True)
