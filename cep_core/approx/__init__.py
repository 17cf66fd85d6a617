"""Approximate matching: matches that miss up to k pattern elements (ACEP), and
best-effort matching under a time budget (RC-ACEP).

Source: Li and Ge, "History is a mirror to the future: best-effort approximate complex
event matching with insufficient resources", VLDB 2016.

* :mod:`cep_core.approx.insertions`: ACEPMATCH's skips as inserting transitions of a
  plan (§2 Definition 1, §3.1), which the engines follow with ``max_missing=k``.
* :mod:`cep_core.approx.matchnodes`: ACEPMATCH with explicit match nodes, one candidate
  at a time (§3.1, Algorithm 1), and proxy matches (§3.3, Theorem 2).
* :mod:`cep_core.approx.match_points`: every match point of unbudgeted ACEPMATCH, at any
  window, from a run with proxy matches (§3.2 Definition 3, §3.3 Theorem 2).
* :mod:`cep_core.approx.history`: the history ℋ, match vectors, visit counts, match maps
  and match bundles, double-buffered (§3.2, Definitions 3-4; §5).
* :mod:`cep_core.approx.sketch`: the history sketch (§4, Algorithms 3-4, Theorem 4).
* :mod:`cep_core.approx.heavy_hitters`: Space-Saving, the most visited items in a fixed
  number of slots (Metwally et al., ICDT 2005).
* :mod:`cep_core.approx.filtered_sketch`: the history sketch with its most visited match
  vectors kept apart in Space-Saving slots (ours, for the ranking of Algorithm 2).
* :mod:`cep_core.approx.trajectory_store`: ℋ with counts and maps only for the vectors
  that lead to a bundle, the only ones Algorithm 2's score reads (ours; §3.2, §5).
* :mod:`cep_core.approx.coverage`: greedy maximum coverage with lazy refresh and a
  version table (§3.2, Algorithm 2, Example 6).
* :mod:`cep_core.approx.rc_acep`: RC-ACEP and ACEPMATCH with a timeout on the modelled
  device clock of :mod:`cep_core.shedding.clock` (§2 Definition 2, §3.2, §6).
* :mod:`cep_core.approx.qlearning`: Q-learning agents that refresh ℋ (§5, Algorithms
  5-6).
"""
