"""Quiet by default: a streamed run on Spark prints its progress, its live view, its
headline and nothing of Spark's (no INFO line, no JVM or Python worker trace, no streamed
stage's worker chatter); --verbose shows Spark's log. Each command runs as ``python -m
drsim``, as from a shell, so that the JVM writes where a user would see it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "drsim/data/scenarios" / "quickstart.yaml"
NOISE = ("INFO", "WARN ", "ERROR", "Exception", "at org.apache", "Traceback",
         "TransformWithStateInPandas")

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # Spark in a subprocess, a minute each


def drsim(tmp_path: Path, *args: str, verbose: bool = False) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "DRSIM_VERBOSE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "drsim", *(["--verbose"] if verbose else []),
                           *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)


def test_a_streamed_run_prints_nothing_of_spark_s(tmp_path):
    done = drsim(tmp_path, "run", str(QUICKSTART), "--streaming", "--households", "600",
                 "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr[-3000:]
    noise = [line for line in done.stderr.splitlines() if any(w in line for w in NOISE)]
    assert noise == [], "\n".join(noise[:20])
    # what is left: the JVM's own start-up warning, the progress bars and the live view
    others = [line for line in done.stderr.splitlines() if line.strip()
              and not any(c in line for c in "━│┃┏┓┗┛┡┩┢┪└┘┌┐├┤╇╋┳┻─")
              and "simulated clock" not in line and "behind; late rows" not in line]
    assert len(others) <= 3, others
    assert "written to" in done.stdout


def test_verbose_shows_spark_s_log(tmp_path):
    done = drsim(tmp_path, "run", str(QUICKSTART), "--households", "300", "--out",
                 str(tmp_path / "out"), verbose=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sum(" INFO " in line for line in done.stderr.splitlines()) > 100
