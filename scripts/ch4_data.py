"""Synthetic data and queries of the dissertation's load-shedding experiments (§4.4.1,
Table 4.1, Listing 4.2), shared by ``scripts/reproduce_ch4.py``, ``scripts/bench_cep.py``
and the tests."""

from __future__ import annotations

import numpy as np

__all__ = ["Q1", "make_ds1"]

Q1 = ("PATTERN SEQ(A a, B b, C c) WHERE a.ID=b.ID AND a.ID=c.ID AND a.V+b.V=c.V "
      "WITHIN 8ms")


def make_ds1(n: int, rate: float = 1e6, seed: int = 0) -> list[dict]:
    """DS1 of the dissertation's §4.4.1, Table 4.1: type ~ U({A, B, C, D}),
    ID ~ U(1, 10), V ~ U(1, 10) "(or controlled)"; for Q1, §4.4.2 draws V of C events
    from U(2, 10), A and B from U(1, 10). Values chosen here (the text leaves them open):
    ID and V are integers, both ends inclusive (a.V + b.V = c.V needs discrete values);
    timestamps in ms, evenly spaced at ``rate`` events/s — 1 million, the input rate
    stated in §4.4.3."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice(list("ABCD"), size=n).tolist()
    ids = rng.integers(1, 11, size=n).tolist()
    v = rng.integers(1, 11, size=n).tolist()
    vc = rng.integers(2, 11, size=n).tolist()
    step = 1e3 / rate                                   # ms between events
    return [{"type": k, "time": i * step, "ID": ids[i], "V": vc[i] if k == "C" else v[i]}
            for i, k in enumerate(kinds)]
