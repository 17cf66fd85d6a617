#!/usr/bin/env python
"""Runs :mod:`experiments.day_variation` (its docstring says what and how)."""

from experiments.day_variation import main

if __name__ == "__main__":
    raise SystemExit(main())
