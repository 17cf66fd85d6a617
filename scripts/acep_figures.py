#!/usr/bin/env python
"""Runs :mod:`experiments.acep_figures` (its docstring says what and how)."""

from experiments.acep_figures import main

if __name__ == "__main__":
    raise SystemExit(main())
