#!/usr/bin/env python
"""Runs :mod:`experiments.bench_stream` (its docstring says what and how)."""

from experiments.bench_stream import main

if __name__ == "__main__":
    main()
