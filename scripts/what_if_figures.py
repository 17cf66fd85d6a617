#!/usr/bin/env python
"""Runs :mod:`experiments.what_if_figures` (its docstring says what and how)."""

from experiments.what_if_figures import main

if __name__ == "__main__":
    raise SystemExit(main())
