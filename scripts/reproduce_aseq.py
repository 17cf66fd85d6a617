#!/usr/bin/env python
"""Runs :mod:`experiments.reproduce_aseq` (its docstring says what and how)."""

from experiments.reproduce_aseq import main

if __name__ == "__main__":
    raise SystemExit(main())
