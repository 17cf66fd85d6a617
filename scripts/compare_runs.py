#!/usr/bin/env python
"""Runs :mod:`experiments.compare_runs` (its docstring says what and how)."""

import sys

from experiments.compare_runs import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
