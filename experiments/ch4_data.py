"""Synthetic data and queries of the dissertation's load-shedding experiments (§4.4.1,
Table 4.1, Listing 4.2), shared by ``scripts/reproduce_ch4.py``, ``scripts/bench_cep.py``
and the tests.

Choices (the text leaves them open): ID and V are integers, both ends inclusive
(``a.V + b.V = c.V`` needs discrete values); timestamps are in ms, evenly spaced at
``rate`` events/s (the text's 1 million events/s puts 8,000 events in Q1's window, beyond
a Python engine; the rate of each experiment is written to its results).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Q1", "q1", "q2", "Q3", "Q4", "make_ds1", "make_ds2"]


def q1(window_ms: float = 8) -> str:
    """Q1 of Listing 4.2 with its window (8 ms as printed; §4.4.3.2 varies it)."""
    return ("PATTERN SEQ(A a, B b, C c) WHERE a.ID=b.ID AND a.ID=c.ID AND a.V+b.V=c.V "
            f"WITHIN {window_ms:g}ms")


Q1 = q1()


def q2(length: int = 4) -> str:
    """Q2 of Listing 4.2 for a pattern of ``length`` events (§4.4.3.2 varies the
    Kleene closure's limit from patterns of four to eight events): ``a``, ``length − 3``
    events in ``b[]``, ``c`` and ``d``. The printed query repeats ``a.ID=c.ID``; once
    is enough."""
    if length < 4:
        raise ValueError("Q2's pattern has at least four events")
    return ("PATTERN SEQ(A a, A+ b[], B c, C d) WHERE a.ID=b[i].ID AND b[i].V=a.V "
            f"AND LENGTH(b+[]) = {length - 3} AND a.ID=c.ID AND a.V+c.V=d.V WITHIN 1ms")


#: Q3 of Listing 4.2; its AVG over the two distances of a and b is their mean
Q3 = ("PATTERN SEQ(A a, B b, C c, D d) WHERE a.ID=b.ID AND a.x >= b.v/2 AND a.x <= b.v "
      "AND a.y >= b.v/2 AND a.y <= b.v AND b.ID=c.ID AND c.ID=d.ID AND b.v=d.v "
      "AND (sqrt(a.x^2+a.y^2)+sqrt(b.x^2+b.y^2))/2 < c.v WITHIN 5ms")

#: Q4 of Listing 4.2 (non-monotonic: a NEG element)
Q4 = "PATTERN SEQ(A a, NEG B b, C c) WHERE a.ID=b.ID AND a.ID=c.ID WITHIN 4ms"


def make_ds1(n: int, rate: float = 1e6, seed: int = 0, c_max: int = 10,
             p_b: float | None = None, change_at: int | None = None) -> list[dict]:
    """DS1 of §4.4.1, Table 4.1: type ~ U({A, B, C, D}), ID ~ U(1, 10), V ~ U(1, 10);
    for Q1, §4.4.2 draws V of C events from U(2, ``c_max``) (§4.4.3.2 varies
    ``c_max``). ``p_b``: the probability of a B event, the other three types sharing
    the rest evenly (Q4, §4.4.3.6). ``change_at``: from this event on, C.V ~ U(12, 20)
    (§4.4.3.5)."""
    rng = np.random.default_rng(seed)
    p = None if p_b is None else [(1 - p_b) / 3, p_b, (1 - p_b) / 3, (1 - p_b) / 3]
    kinds = rng.choice(list("ABCD"), size=n, p=p).tolist()
    ids = rng.integers(1, 11, size=n).tolist()
    v = rng.integers(1, 11, size=n).tolist()
    vc = rng.integers(2, c_max + 1, size=n)
    if change_at is not None:
        vc[change_at:] = rng.integers(12, 21, size=max(0, n - change_at))
    vc = vc.tolist()
    step = 1e3 / rate                                   # ms between events
    return [{"type": k, "time": i * step, "ID": ids[i], "V": vc[i] if k == "C" else v[i]}
            for i, k in enumerate(kinds)]


def make_ds2(n: int, rate: float = 1e6, seed: int = 0) -> list[dict]:
    """DS2 of §4.4.1, Table 4.1: type ~ U({A, B, C, D}), ID ~ U(1, 10); x and y of A
    and B in (0, 2] with probability 1/3 and in (2, 4] otherwise (uniform within);
    B.v = 2 (1/3) or 5; C.v = 3 (1/3) or 5; D.v = 5 (1/3) or 2."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice(list("ABCD"), size=n).tolist()
    ids = rng.integers(1, 11, size=n).tolist()
    low = rng.random((n, 2)) < 1 / 3
    xy = np.where(low, rng.uniform(0, 2, (n, 2)), rng.uniform(2, 4, (n, 2))).round(3)
    first = rng.random(n) < 1 / 3
    v = {"B": np.where(first, 2, 5), "C": np.where(first, 3, 5), "D": np.where(first, 5, 2)}
    step = 1e3 / rate
    out = []
    for i, k in enumerate(kinds):
        e = {"type": k, "time": i * step, "ID": ids[i]}
        if k in "AB":
            e["x"], e["y"] = float(xy[i, 0]), float(xy[i, 1])
        if k in "BCD":
            e["v"] = int(v[k][i])
        out.append(e)
    return out
