"""drsim's backend on Apache Spark: the session, the backend, streams, a local cluster."""

from __future__ import annotations

import os

VERBOSE = "DRSIM_VERBOSE"  # 1: Spark's log from INFO up and the JVM's own output (--verbose)


def verbose() -> bool:
    """Whether Spark's own output is asked for (``DRSIM_VERBOSE=1``; ``drsim --verbose``)."""
    return os.environ.get(VERBOSE, "").strip().lower() in ("1", "true", "yes", "on")
