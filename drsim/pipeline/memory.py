"""Peak resident memory of processes: this one, and another by its pid (the Spark JVM)."""

from __future__ import annotations

import resource
import sys
from pathlib import Path


def peak_rss_bytes() -> int:
    """Peak resident memory of this process [B]."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)  # Linux reports KiB


def process_peak_rss_bytes(pid: int | None) -> int | None:
    """Peak resident memory of a running process [B] (``VmHWM`` of ``/proc/PID/status``);
    None where the system does not say (not Linux, no such process)."""
    if pid is None:
        return None
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # kB
    return None
