"""Whether two result folders hold the same results, value by value: every field of
summary.json (timings, resources, the Spark application's id and jobs, and the code
version aside) and every Parquet table, row by row. For a change that must not change
behaviour: run a scenario before and after it, then

    python scripts/compare_runs.py BEFORE_DIR AFTER_DIR

Prints the differences (the first 40) and exits 1 when there is any, 0 otherwise.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pyarrow.parquet as pq

IGNORED = ("timings", "resources", "backend.app_id", "backend.jobs", "code_version")


def flatten(value, prefix: str = "") -> dict:
    """``{"a.b.c": leaf}`` for nested mappings (lists stay leaves)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: value}


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def summary_differences(before: Path, after: Path) -> list[str]:
    a = flatten(json.loads((before / "summary.json").read_text(encoding="utf-8")))
    b = flatten(json.loads((after / "summary.json").read_text(encoding="utf-8")))
    keys = sorted(k for k in set(a) | set(b) if not k.startswith(IGNORED))
    return [f"summary.json {k}: {a.get(k, '<absent>')!r} -> {b.get(k, '<absent>')!r}"
            for k in keys if not same(a.get(k), b.get(k))]


def table_differences(before: Path, after: Path) -> list[str]:
    out = []
    names = sorted({p.name for p in before.glob("*.parquet")}
                   | {p.name for p in after.glob("*.parquet")})
    for name in names:
        if not (before / name).exists() or not (after / name).exists():
            out.append(f"{name}: only in {'after' if (after / name).exists() else 'before'}")
            continue
        ta, tb = pq.read_table(before / name), pq.read_table(after / name)
        if ta.schema != tb.schema:
            out.append(f"{name}: schema {ta.schema} -> {tb.schema}")
        elif not (ta.equals(tb) or ta.to_pandas().equals(tb.to_pandas())):  # NaN = NaN
            out.append(f"{name}: {ta.num_rows} rows -> {tb.num_rows} rows, values differ")
    return out


def main(argv: list[str]) -> int:
    if argv in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(argv) != 2:
        print(__doc__)
        return 2
    before, after = map(Path, argv)
    for folder in (before, after):
        if not (folder / "summary.json").is_file():
            print(f"{folder}: no summary.json (not a result folder)")
            return 2
    diffs = summary_differences(before, after) + table_differences(before, after)
    for line in diffs[:40]:
        print(line)
    print(f"{len(diffs)} differences" if diffs else "the same results")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
