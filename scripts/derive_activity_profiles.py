#!/usr/bin/env python
"""Runs :mod:`experiments.derive_activity_profiles` (its docstring says what and how)."""

from experiments.derive_activity_profiles import main

if __name__ == "__main__":
    raise SystemExit(main())
