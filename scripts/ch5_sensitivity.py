#!/usr/bin/env python
"""Runs :mod:`experiments.ch5_sensitivity` (its docstring says what and how)."""

from experiments.ch5_sensitivity import main

if __name__ == "__main__":
    raise SystemExit(main())
