#!/usr/bin/env python
"""Runs :mod:`experiments.figure_6_14` (its docstring says what and how)."""

from experiments.figure_6_14 import main

if __name__ == "__main__":
    main()
