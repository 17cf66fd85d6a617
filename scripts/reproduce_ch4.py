#!/usr/bin/env python
"""Runs :mod:`experiments.reproduce_ch4` (its docstring says what and how)."""

from experiments.reproduce_ch4 import main

if __name__ == "__main__":
    raise SystemExit(main())
