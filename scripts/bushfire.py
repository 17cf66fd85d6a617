#!/usr/bin/env python
"""Runs :mod:`experiments.bushfire` (its docstring says what and how)."""

from experiments.bushfire import main

if __name__ == "__main__":
    raise SystemExit(main())
