"""Interrupted commands leave nothing that looks finished, and a killed sweep resumes.

Each command runs as ``python -m drsim`` in a session of its own (like a command started
from a shell), so that the test can signal it as a terminal would and can tell when every
process it started (the driver's JVM, pyspark's Python workers) is gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from spark.cluster import command_line, session_processes

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "drsim/data/scenarios" / "quickstart.yaml"
HOUSEHOLDS = 20000  # long enough for a signal to arrive while the tasks run
STARTED_WITHIN_SECONDS = 180  # until the first Python task of a run
GONE_WITHIN_SECONDS = 60  # until every process of an interrupted command has exited
RUN_TIMEOUT_SECONDS = 600

pytestmark = [pytest.mark.skipif(not Path("/proc").is_dir() or sys.platform == "win32",
                                 reason="watches processes through /proc"),
              pytest.mark.spark]  # every command here runs Spark in a subprocess


class Command:
    """``python -m drsim ARGS`` in a session of its own, in ``folder``, output to files."""

    def __init__(self, folder: Path, *args: str, name: str = "drsim"):
        self.folder = folder
        self.stdout, self.stderr = folder / f"{name}.stdout", folder / f"{name}.stderr"
        env = {**os.environ, "TMPDIR": str(folder)}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        with open(self.stdout, "wb") as out, open(self.stderr, "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "drsim", *args], cwd=folder, env=env,
                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return (f"--- stdout ---\n{self.stdout.read_text()[-3000:]}\n"
                f"--- stderr ---\n{self.stderr.read_text()[-5000:]}")

    def processes(self) -> dict[int, str]:
        """The running processes of the command's session: pid -> command line."""
        return {pid: command_line(pid) or "" for pid in session_processes(self.pid)}

    def wait_for_python_workers(self) -> None:
        """Return once pyspark's Python workers run (the first task started); fail if the
        command ends first."""
        deadline = time.monotonic() + STARTED_WITHIN_SECONDS
        while not any("pyspark.daemon" in c for c in self.processes().values()):
            assert self.process.poll() is None, f"the command ended first\n{self.output()}"
            assert time.monotonic() < deadline, "no Python worker started in time"
            time.sleep(0.1)

    def wait_until_gone(self) -> int:
        """The command's exit code, once it and everything it started have exited."""
        code = self.process.wait(timeout=GONE_WITHIN_SECONDS)
        deadline = time.monotonic() + GONE_WITHIN_SECONDS
        while left := self.processes():
            assert time.monotonic() < deadline, f"still running after the command: {left}"
            time.sleep(0.2)
        return code

    def stop(self) -> None:
        """Kill what is left (after a failed test)."""
        for group in set(session_processes(self.pid).values()):
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def traces(out: Path) -> list[str]:
    """What an output folder left in its parent: itself or a hidden ``.NAME.*`` sibling."""
    return sorted(p.name for p in out.parent.iterdir()
                  if p.name == out.name or p.name.startswith(f".{out.name}."))


def interrupted_run(tmp_path: Path, sig: int, group: bool) -> tuple[Command, int]:
    """``drsim run`` on the scaled quickstart, signalled with ``sig`` (to its process group
    if ``group``, as a terminal's Ctrl-C, else to the driver alone) once its tasks run; the
    command and its exit code once everything it started has exited."""
    command = Command(tmp_path, "run", str(QUICKSTART), "--households", str(HOUSEHOLDS),
                      "--out", str(tmp_path / "out"), "--master", "local[2]")
    try:
        command.wait_for_python_workers()
        if group:
            os.killpg(command.pid, sig)
        else:
            os.kill(command.pid, sig)
        code = command.wait_until_gone()
    finally:
        command.stop()
    return command, code


# --------------------------------------------------------------------------- drsim run
def test_ctrl_c_stops_a_run_and_leaves_no_result_folder(tmp_path):
    command, code = interrupted_run(tmp_path, signal.SIGINT, group=True)
    assert code == 130, command.output()  # the shell's code for Ctrl-C (typer's exit code)
    assert f"interrupted: nothing was written to {tmp_path / 'out'}" in \
        command.stderr.read_text(), command.output()
    # and nothing else: no Python worker's, py4j's or JVM's trace (drsim --verbose shows them)
    noise = [line for line in command.stderr.read_text().splitlines()
             if any(w in line for w in ("Traceback", "Exception", "at org.apache", "ERROR",
                                        "INFO"))]
    assert noise == [], command.output()
    # nothing at --out, no temporary sibling; no driver JVM or Python worker is left either
    # (interrupted_run waits until they are gone)
    assert traces(tmp_path / "out") == [], command.output()


@pytest.mark.slow
def test_a_killed_run_leaves_nothing_that_looks_finished_and_the_folder_can_be_reused(
        tmp_path):
    command, code = interrupted_run(tmp_path, signal.SIGKILL, group=False)
    assert code == -signal.SIGKILL
    out = tmp_path / "out"
    assert not out.exists(), traces(out)
    # a hidden partial sibling may remain (it was killed while writing), never a summary
    assert not list(tmp_path.glob(f".{out.name}.*/summary.json")), traces(out)
    # the driver's JVM and the Python workers went with the driver (checked above); the
    # same --out works again
    again = Command(tmp_path, "run", str(QUICKSTART), "--households", "300", "--out",
                    str(out), "--master", "local[1]", name="again")
    try:
        assert again.wait_until_gone() == 0, again.output()
    finally:
        again.stop()
    assert json.loads((out / "summary.json").read_text())["scenario"]["households"] == 300
    assert traces(out) == [out.name]  # a partial sibling the killed run left is removed


# --------------------------------------------------------------------------- drsim sweep
BETAS = [1.4, 1.8, 2.2]


@pytest.mark.slow
def test_a_sweep_killed_during_its_second_run_resumes_with_the_same_out(tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({
        "name": "killed", "scenario": str(QUICKSTART), "overrides": {"households": 300},
        "grid": {"incentive.beta": BETAS}, "metrics": ["reduction_mwh.adaptive"]}))
    out = tmp_path / "out"
    journal = out / "runs.jsonl"
    args = ("sweep", str(sweep), "--out", str(out), "--master", "local[1]")

    def recorded() -> list[dict]:
        """The runs in the journal (a line being written is not one yet)."""
        records = []
        for line in (journal.read_text() if journal.exists() else "").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return records

    first = Command(tmp_path, *args, name="first")
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
        while not recorded():  # the first run is finished: the second one starts
            assert first.process.poll() is None, f"the sweep ended first\n{first.output()}"
            assert time.monotonic() < deadline, "the first run did not finish in time"
            time.sleep(0.05)
        os.kill(first.pid, signal.SIGKILL)
        assert first.wait_until_gone() == -signal.SIGKILL
    finally:
        first.stop()
    done = recorded()
    assert len(done) == 1, "the sweep was not killed during its second run"
    assert not (out / "table.csv").exists()

    rerun = Command(tmp_path, *args, name="rerun")
    try:
        assert rerun.wait_until_gone() == 0, rerun.output()
    finally:
        rerun.stop()
    assert "resumed: 1 of 3 runs were already done" in rerun.stderr.read_text(), rerun.output()
    assert "2 runs in" in rerun.stdout.read_text(), rerun.output()
    records = recorded()
    assert len(records) == 3 and records[0] == done[0]  # the first run was kept, not rerun
    assert len({r["key"] for r in records}) == 3
    table = pd.read_csv(out / "table.csv")
    assert table["incentive.beta"].tolist() == BETAS
    assert table["n"].tolist() == table["reduction_mwh.adaptive.n"].tolist() == [1, 1, 1]
    assert table["reduction_mwh.adaptive.mean"].notna().all()
    assert json.loads((out / "sweep.json").read_text())["complete"] is True
