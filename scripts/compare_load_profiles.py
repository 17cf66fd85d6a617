#!/usr/bin/env python
"""Runs :mod:`experiments.compare_load_profiles` (its docstring says what and how)."""

from experiments.compare_load_profiles import main

if __name__ == "__main__":
    raise SystemExit(main())
