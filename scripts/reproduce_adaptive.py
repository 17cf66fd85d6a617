#!/usr/bin/env python
"""Runs :mod:`experiments.reproduce_adaptive` (its docstring says what and how)."""

from experiments.reproduce_adaptive import main

if __name__ == "__main__":
    raise SystemExit(main())
