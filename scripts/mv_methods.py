#!/usr/bin/env python
"""Runs :mod:`experiments.mv_methods` (its docstring says what and how)."""

from experiments.mv_methods import main

if __name__ == "__main__":
    raise SystemExit(main())
