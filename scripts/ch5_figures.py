#!/usr/bin/env python
"""Runs :mod:`experiments.ch5_figures` (its docstring says what and how)."""

from experiments.ch5_figures import main

if __name__ == "__main__":
    raise SystemExit(main())
