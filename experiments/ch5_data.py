"""Data and queries of the dissertation's Ch. 5 experiments (§5.6.1, Table 5.1,
Listing 5.1), seeded.

DS3: Type ~ U{A, B, C, D}, ID ~ U(1, 100), V1, V2 ~ U(1, K); DS4 the same with V1, V2
Zipf-distributed, P(x) ∝ x^−1.01 on 1..K (Table 5.1). Events are evenly spaced at
``rate`` events per time unit (µs). Choice: K = 100, not Table 5.1's 100,000: with
Listing 5.1's equality predicates over values of 100,000, a stream a Python engine can
run holds no match of Q5 (two equalities, probability 10⁻¹⁰ per candidate), so there
would be no latencies to compare; K = 100 gives Q5 about five matches per 1,000 events
under skip-till-next-match. The remote element of key ``x`` holds ``x`` itself (the
predicate compares an event's value with the remote record it refers to), so
``a.v1 = REMOTE[d.v1]`` holds as ``a.v1 = d.v1`` would, as in the EIRES evaluation.

Windows (:data:`WINDOWS`, in events of the stream: Listing 5.1's ``8min`` and ``50K``
read as lengths that keep each query's partial matches within what a Python engine can
hold) and stream lengths (:data:`EVENTS`) are per query and selection policy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["KEYS", "QUERIES", "WINDOWS", "EVENTS", "stream", "remote_table"]

KEYS = 100

Q5 = ("PATTERN SEQ(A a, B b, C c, D d, B e, C f, A g, D h) "
      "WHERE SAME[ID] AND a.v1=REMOTE[d.v1] AND a.v2=h.v2 WITHIN {window}")
Q6 = ("PATTERN SEQ(A a, (SEQ(B b, C d, D f) OR SEQ(C c, B e))) "
      "WHERE a.v1=b.v1 AND a.v2=e.v1 AND d.v1=REMOTE[a.v1] AND c.v2=REMOTE[a.v2] "
      "WITHIN {window}")
QUERIES = {"Q5": Q5, "Q6": Q6}

#: window per (query, selection) in events of the stream (times 1/rate for µs)
WINDOWS = {("Q5", "non-greedy"): 20_000, ("Q5", "greedy"): 5_000,
           ("Q6", "non-greedy"): 500, ("Q6", "greedy"): 150}

#: events per stream per (query, selection): (quick run, full run); Q5 under
#: skip-till-next-match completes about one run in 200 events
EVENTS = {("Q5", "non-greedy"): (15_000, 40_000), ("Q5", "greedy"): (5_000, 8_000),
          ("Q6", "non-greedy"): (3_000, 6_000), ("Q6", "greedy"): (3_000, 8_000)}


def stream(dataset: str, n: int, rate: float, seed: int, keys: int = KEYS,
           ids: int = 100) -> list[dict]:
    """``n`` events of DS3 (uniform values) or DS4 (Zipf 1.01), ``rate`` events per
    time unit, IDs of 1..``ids``, seeded."""
    if dataset not in ("DS3", "DS4"):
        raise ValueError(f"dataset must be DS3 or DS4, not {dataset!r}")
    rng = np.random.default_rng(seed)
    types = rng.choice(np.array(list("ABCD")), n)
    key = rng.integers(1, ids + 1, n)
    if dataset == "DS3":
        v1, v2 = rng.integers(1, keys + 1, n), rng.integers(1, keys + 1, n)
    else:
        p = np.arange(1, keys + 1, dtype=float) ** -1.01
        p /= p.sum()
        v1 = rng.choice(np.arange(1, keys + 1), n, p=p)
        v2 = rng.choice(np.arange(1, keys + 1), n, p=p)
    return [{"type": str(t), "time": i / rate, "ID": int(k), "v1": int(a), "v2": int(b),
             "id": i} for i, (t, k, a, b) in enumerate(zip(types, key, v1, v2, strict=True))]


def remote_table(keys: int = KEYS) -> dict[int, int]:
    """The remote records: key ``x`` holds ``x`` (module doc)."""
    return {x: x for x in range(1, keys + 1)}
