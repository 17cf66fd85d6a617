#!/usr/bin/env python
"""Runs :mod:`experiments.bench_simulation` (its docstring says what and how)."""

from experiments.bench_simulation import main

if __name__ == "__main__":
    raise SystemExit(main())
