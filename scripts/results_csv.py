"""Writing a reproduction's rows to CSV (``scripts/reproduce_ch4.py``,
``scripts/reproduce_ch5.py``): floats to six significant digits, written to a partial
file first so an interrupted run never leaves a truncated CSV behind."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path


def write_rows(rows: list[dict], path: Path, columns: Sequence[str]) -> None:
    """Write ``rows`` (dicts keyed by ``columns``) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    tmp.replace(path)
