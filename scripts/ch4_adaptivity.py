#!/usr/bin/env python
"""Runs :mod:`experiments.ch4_adaptivity` (its docstring says what and how)."""

from experiments.ch4_adaptivity import main

if __name__ == "__main__":
    raise SystemExit(main())
