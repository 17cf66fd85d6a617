#!/usr/bin/env python
"""Runs :mod:`experiments.bench_cep` (its docstring says what and how)."""

from experiments.bench_cep import main

if __name__ == "__main__":
    raise SystemExit(main())
