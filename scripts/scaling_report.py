#!/usr/bin/env python
"""Runs :mod:`experiments.scaling_report` (its docstring says what and how)."""

from experiments.scaling_report import main

if __name__ == "__main__":
    raise SystemExit(main())
