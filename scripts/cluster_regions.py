#!/usr/bin/env python
"""Runs :mod:`experiments.cluster_regions` (its docstring says what and how)."""

from experiments.cluster_regions import main

if __name__ == "__main__":
    raise SystemExit(main())
