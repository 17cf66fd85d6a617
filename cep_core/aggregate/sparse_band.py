"""SEM's band updated only where an event is accepted: COUNT of one chain, no negation.

The A-Seq paper (Qi et al., SIGMOD 2014, §3.2, Fig. 5) updates, at each event, the
prefix counters of the live START vectors at the positions the event's type takes
(Lemma 1, ``cnt[m] += cnt[m-1]``): an event costs its positions times the live vectors,
whatever the pattern's length (Fig. 14a). :meth:`cep_core.aggregate.engine.SeqEngine._sweep`
runs a chunk as a band, row ``k`` holding each vector's ``k``-th event (so a chunk of
``L`` events takes about one window's offsets, not ``L`` steps), and updates every
node of every vector at each offset: ``length × vectors`` per event, which grows with
the length. :func:`count_chunk` keeps the band and updates, per offset, only the node
each cell's event is accepted at (a *slot* per position a type takes, highest first,
so a cell reads its counts from before its event), with a gather and a scatter over
the band's columns: ``positions × vectors`` per event.

Counts run in float64 (exact below 2^53) and are kept as int64 when every final count
stays below 2^53 (counts only grow without negation, so the final ones bound all the
others), and the window sums with them when the final leaf counts sum to less than
2^53 (each window sum is at most that; else they are summed again in int64, below
2^62); else the chunk runs again in Python integers.
"""

from __future__ import annotations

import numpy as np

__all__ = ["band_index", "count_chunk", "worth_it"]

_EXACT = 2.0 ** 53


def worth_it(nodes: int) -> bool:
    """Whether a chain of ``nodes`` positions runs faster updated cell by cell than
    node by node: from 8 positions on (the gather and scatter cost about as much as
    updating 8 rows; measured on ``scripts/reproduce_aseq.py``'s Fig. 14a stream,
    docs/aseq.md)."""
    return nodes >= 8


def band_index(t: np.ndarray, starts: np.ndarray, exp: np.ndarray, R0: int) -> np.ndarray:
    """The band of a chunk of ``L`` events at times ``t`` [time units]: ``IDX`` ``(K,
    R)``, each cell's event (``L``: none, past its vector's window or the chunk), for
    ``R0`` old vectors (from the chunk's first event) and the STARTs at ``starts`` (from
    themselves), whose windows end at ``exp`` [time units] (§3.2, Lemma 3).

    >>> band_index(np.arange(4.0), np.array([1]), np.array([1.0, 3.0]), 1).tolist()
    [[0, 1], [1, 2], [4, 3]]
    """
    L = t.size
    a = np.concatenate([np.zeros(R0, np.intp), starts])
    b = np.searchsorted(t, exp, side="right")                   # end of each window
    K = int((b - a).max())
    ix = np.int32 if L < 2 ** 31 - 1 else np.intp
    IDX = a.astype(ix)[None, :] + np.arange(K, dtype=ix)[:, None]  # (K, R): cell's event
    IDX[IDX >= b.astype(ix)[None, :]] = L                       # L: a no-op event
    return IDX


def count_chunk(C0: np.ndarray, IDX: np.ndarray, acc: np.ndarray,
                R0: int) -> tuple[np.ndarray, np.ndarray, int]:
    """One chunk of a chain's COUNT over the band ``IDX`` (module docstring).

    Parameters
    ----------
    C0 : ndarray, shape (V + 1, R0)
        The counts of the live vectors before the chunk (row ``m``: prefix length ``m``).
    IDX : ndarray of int, shape (K, R)
        Each cell's event in the chunk (``L``: none), old vectors first, then one column
        per START of the chunk, whose row 0 is the START itself.
    acc : ndarray of bool, shape (L, V)
        Whether each event is accepted at each position (column ``m - 1``: position m).
    R0 : int
        The number of old vectors.

    Returns
    -------
    C, windows, updates
        The counts of every vector after the chunk ``(V + 1, R)`` (int64 or object); the
        sum, over the vectors live at each event, of their leaf count after it (Lemma
        4; read at the leaf's triggers), ``(L,)``; the number of counter updates.

    Examples
    --------
    >>> acc = np.array([[1, 0], [0, 1], [1, 0], [0, 1]], dtype=bool)     # A B A B
    >>> IDX = np.array([[0, 2], [1, 3], [2, 4], [3, 4]])
    >>> C, windows, _ = count_chunk(np.zeros((3, 0), np.int64), IDX, acc, 0)
    >>> windows[[1, 3]].tolist()
    [1, 3]
    """
    L, V = acc.shape
    K, R = IDX.shape
    slots = _slots(acc, IDX, R0, R)
    updates = int(sum(int(np.count_nonzero(s < (V + 1) * R)) for s in slots))
    for dtype in ((float, object) if C0.dtype != object else (object,)):
        C = np.zeros((V + 3, R), dtype=dtype)                   # + a zero row and a sink
        C[:V + 1, :R0] = C0
        C[1, R0:] = 1
        band = _sweep(C, slots, V, K)
        if dtype is object:
            return C[:V + 1], _sums(IDX, band, L), updates
        top, total = float(C[:V + 1].max(initial=0.0)), float(C[V].sum())
        if total < _EXACT:                                      # every sum exact in float64
            windows = np.bincount(IDX.ravel(), weights=band.ravel(), minlength=L + 1)[:L]
            return C[:V + 1].astype(np.int64), windows.astype(np.int64), updates
        if top < _EXACT and total < 2.0 ** 62:                  # counts exact, sums in int64
            return (C[:V + 1].astype(np.int64), _sums(IDX, band.astype(np.int64), L),
                    updates)
    raise AssertionError("unreachable")


def _slots(acc: np.ndarray, IDX: np.ndarray, R0: int, R: int) -> list[np.ndarray]:
    """Per slot, the flat target ``m * R + column`` of each cell, ``(K, R)``: slot ``s``
    holds the ``s``-th highest position its event is accepted at (from 2 on; a START's
    own cell and cells without one point to the sink row ``V + 2``)."""
    L, V = acc.shape
    later = acc[:, 1:]
    n = later.sum(axis=1)
    rank = np.cumsum(later[:, ::-1], axis=1)                    # accepted, from the top
    sink = (V + 2) * R
    out = []
    for s in range(int(n.max(initial=0))):
        node = np.full(L + 1, V + 2)
        has = n > s
        node[:L][has] = (V - np.argmax(rank == s + 1, axis=1))[has]
        cell = node[IDX]
        flat = cell * R + np.arange(R)[None, :]
        flat[cell == V + 2] = sink
        flat[0, R0:] = sink                                     # a START's own cell
        out.append(flat)
    return out


def _sweep(C: np.ndarray, slots: list[np.ndarray], V: int, K: int) -> np.ndarray:
    """Lemma 1 at each offset in place on ``C``, only at the accepted cells (each reads
    the row before its node; the sink reads the zero row); the leaf's count at every
    cell ``(K, R)``."""
    R = C.shape[1]
    band = np.empty((K, R), dtype=C.dtype)
    flat = C.reshape(-1)
    sink = (V + 2) * R
    src = [np.where(f == sink, (V + 1) * R, f - R) for f in slots]
    leaf = C[V]
    for k in range(K):
        for s, f in zip(src, slots, strict=True):
            flat[f[k]] += flat[s[k]]
        band[k] = leaf
    return band


def _sums(IDX: np.ndarray, band: np.ndarray, L: int) -> np.ndarray:
    """Each event's sum of the band's cells (exact, in the band's integers)."""
    o = np.zeros(L + 1, dtype=band.dtype)
    np.add.at(o, IDX.ravel(), band.ravel())
    return o[:L]
