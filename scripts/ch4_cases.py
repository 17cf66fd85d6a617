#!/usr/bin/env python
"""Runs :mod:`experiments.ch4_cases` (its docstring says what and how)."""

from experiments.ch4_cases import main

if __name__ == "__main__":
    raise SystemExit(main())
