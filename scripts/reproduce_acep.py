#!/usr/bin/env python
"""Runs :mod:`experiments.reproduce_acep` (its docstring says what and how)."""

from experiments.reproduce_acep import main

if __name__ == "__main__":
    raise SystemExit(main())
