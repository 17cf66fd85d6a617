"""The size of what an engine keeps of the stream (:func:`nbytes`), the compiled plan
apart: the state objects of the keyed, reference, remote and adaptive engines are
dataclasses that pickle, and that this sizes by walking their arrays, containers and
fields."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["nbytes"]


def nbytes(x: Any, _seen: set[int] | None = None) -> int:
    """Bytes held by ``x``: a numpy array's buffer (and each element of an object array),
    the items of containers, the fields of objects (what they pickle), and
    ``sys.getsizeof`` of scalars and strings; each object counted once.

    >>> nbytes({"a": np.zeros(4)}) >= 32
    True
    """
    seen = set() if _seen is None else _seen
    if id(x) in seen:
        return 0
    seen.add(id(x))
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            return x.nbytes + sum(nbytes(v, seen) for v in x.ravel().tolist())
        return x.nbytes
    if isinstance(x, dict):
        return sum(nbytes(k, seen) + nbytes(v, seen) for k, v in x.items())
    if isinstance(x, list | tuple | set | frozenset):
        return sum(nbytes(v, seen) for v in x)
    if isinstance(x, str | bytes | int | float | complex | type(None)):
        return sys.getsizeof(x)
    fields = x.__getstate__()  # what pickles of it (a back-reference left out)
    return sys.getsizeof(x) if fields is None else nbytes(fields, seen)
