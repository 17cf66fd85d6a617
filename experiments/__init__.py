"""The dissertation's reproductions and the benchmarks: their data, runs and figures.

``scripts/<name>.py`` runs ``experiments.<name>.main``; the modules import drsim, cep_core
and spark, and none of those imports them (the import-linter contract in pyproject.toml).
"""
