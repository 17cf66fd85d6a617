"""Approximate matching: matches that miss up to k pattern elements (ACEP), and
best-effort matching under a time budget (RC-ACEP).

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016.

* :mod:`cep_core.approx.insertions`: ACEPMATCH's skips as inserting transitions of a
  plan (§2 Definition 1, §3.1), which the engines follow with ``max_missing=k``.
"""
