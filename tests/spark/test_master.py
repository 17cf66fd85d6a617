"""An unreachable --master is reported in one line within seconds, before any session
waits a minute for it (spark.master)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drsim.cli import app
from spark.master import MasterError, check_master, master_addresses

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "drsim/data/scenarios" / "quickstart.yaml"
WITHIN_SECONDS = 30


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (one just freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_master_urls_are_read_as_host_and_port():
    assert master_addresses("local[2]") is None
    assert master_addresses("spark://h:7078") == [("h", 7078)]
    assert master_addresses("spark://h1:7077,h2") == [("h1", 7077), ("h2", 7077)]
    with pytest.raises(MasterError, match="'h:x' is not host:port"):
        master_addresses("spark://h:x")


def test_a_listening_master_passes():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        check_master(f"spark://127.0.0.1:{sock.getsockname()[1]}")
    check_master("local[*]")
    check_master(None)


@pytest.mark.parametrize("host", ["127.0.0.1", "nohost.invalid"])
def test_an_unreachable_master_stops_the_run_in_one_line(tmp_path, closed_port, host):
    master = f"spark://{host}:{closed_port}"
    started = time.monotonic()
    result = CliRunner().invoke(app, ["run", str(QUICKSTART), "--master", master,
                                      "--out", str(tmp_path / "out")])
    assert time.monotonic() - started < WITHIN_SECONDS
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"--master {master}: "), result.output
    assert ("nothing accepts connections at 127.0.0.1" if host == "127.0.0.1" else
            "the host nohost.invalid is not known") in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.spark  # asks spark.session for a session (which refuses before any JVM starts)
def test_the_api_refuses_an_unreachable_master_before_starting_spark(tmp_path, closed_port):
    import drsim

    started = time.monotonic()
    with pytest.raises(MasterError, match=f"127.0.0.1:{closed_port}"):
        drsim.run(QUICKSTART, tmp_path / "out", households=300,
                  master=f"spark://127.0.0.1:{closed_port}")
    assert time.monotonic() - started < WITHIN_SECONDS
