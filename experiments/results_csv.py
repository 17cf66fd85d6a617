"""Writing a reproduction's rows to CSV (``scripts/reproduce_*.py``): floats to six
significant digits, written to a partial file first so an interrupted run never leaves a
truncated CSV behind; the options the reproduction scripts share and how they report
their statements and figures, and the pool their runs share."""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from importlib import import_module
from pathlib import Path
from typing import Any


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


def reproduction_parser(description: str, out: Path, quick: str) -> argparse.ArgumentParser:
    """The options every reproduction script takes: ``--quick`` (``quick``: what it cuts),
    ``--out`` (its CSV folder, default ``out``), ``--figures DIR`` and ``--draw CSV``
    (:func:`draw_csv`)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--out", type=Path, default=out)
    ap.add_argument("--figures", type=Path, default=None,
                    help="also draw the figures into this folder")
    ap.add_argument("--draw", type=Path, default=None, metavar="CSV",
                    help="only draw the figures of a CSV this script wrote (to --figures)")
    return ap


def draw_csv(path: Path, folder: Path | None,
             figures: Callable[[list[dict], Path], list[Path]]) -> int:
    """``--draw``: the figures of a CSV written before, into ``folder`` (default the
    CSV's own)."""
    with open(path, newline="") as f:
        for p in figures(list(csv.DictReader(f)), folder or path.parent):
            print(f"wrote {p}")
    return 0


def report(statements: Iterable[tuple[str, bool]], figures: Path | None, module: str,
           *args: Any) -> None:
    """Print each of a reproduction's statements and whether it holds; with ``figures``,
    draw the figures there with ``module``'s ``draw(*args, folder)`` (imported only then:
    matplotlib) and print each file."""
    for text, ok in statements:
        print(f"{'holds' if ok else 'does NOT hold'}: {text}")
    if figures:
        for f in import_module(module).draw(*args, Path(figures)):
            print(f"figure {f}")


def spawn_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes started afresh (spawned: nothing of this process's
    state carried over)."""
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def map_logged(pool: Executor, fn: Callable[[Any], Any], jobs: Sequence[Any], t0: float,
               every: int = 10, log: bool = True) -> list:
    """``pool.map(fn, jobs)`` as a list, printing the runs done and the seconds since
    ``t0`` after every ``every`` runs and the last."""
    rows = []
    for i, row in enumerate(pool.map(fn, jobs), 1):
        rows.append(row)
        if log and (i % every == 0 or i == len(jobs)):
            print(f"  {i}/{len(jobs)} runs, {time.perf_counter() - t0:.0f} s", flush=True)
    return rows
