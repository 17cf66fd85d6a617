#!/usr/bin/env python
"""Runs :mod:`experiments.bench_run` (its docstring says what and how)."""

from experiments.bench_run import main

if __name__ == "__main__":
    raise SystemExit(main())
