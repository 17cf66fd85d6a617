"""The A-Seq engine's data layout (:mod:`cep_core.aggregate.engine`): the events of one
feed (:class:`EventBatch`), the prefix trees of a query set (:class:`PrefixTree`, PreTree of
Qi et al., SIGMOD 2014, §4.1) with each query's place in them (:class:`QueryPlan`), and a
partition's counters: one vector (:class:`DpcState`, DPC, §3.1) or one per live START
(:class:`SemState`, SEM, §3.2)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd

from cep_core.aggregate import sparse_band
from cep_core.aggregate.seqquery import SeqQuery
from cep_core.errors import QueryError

__all__ = ["NEG_INF", "DpcState", "EventBatch", "PrefixTree", "QueryPlan", "SemState"]

NEG_INF = -math.inf


# --------------------------------------------------------------------------- input
class EventBatch:
    """The events of one ``feed``: a list of dicts or a pandas DataFrame."""

    def __init__(self, events: Any):
        if hasattr(events, "columns") and hasattr(events, "to_dict"):
            self.df = events.reset_index(drop=True)
            self.recs = None
            self.n = len(self.df)
        else:
            self.df = None
            self.recs = events if isinstance(events, list) else list(events)
            self.n = len(self.recs)

    def type_codes(self, code: Mapping[str, int]) -> np.ndarray:
        """``code[type]`` per event, -1 for the types not in ``code``."""
        try:
            if self.df is not None:
                types = self.df["type"]
            else:
                types = np.empty(self.n, dtype=object)
                types[:] = list(map(itemgetter("type"), self.recs))
        except KeyError:
            raise QueryError("every event needs a 'type'") from None
        codes, uniques = pd.factorize(types)
        lut = np.array([code.get(u, -1) for u in uniques] + [-1], dtype=np.int64)
        return lut[codes]

    def times(self) -> np.ndarray:
        try:
            if self.df is not None:
                return self.df["time"].to_numpy(dtype=float)
            return np.fromiter(map(itemgetter("time"), self.recs), float, self.n)
        except KeyError:
            raise QueryError("every event needs a 'time'") from None

    def has(self, name: str) -> bool:
        """Whether the events carry ``name`` (judged by the first event)."""
        if self.df is not None:
            return name in self.df.columns
        return bool(self.n) and name in self.recs[0]

    def column(self, name: str, idx: np.ndarray, required: bool = True) -> list:
        """Attribute ``name`` of the events at ``idx`` (``None`` where missing unless
        ``required``)."""
        if self.df is not None:
            if name not in self.df.columns:
                if not required:
                    return [None] * len(idx)
                raise QueryError(f"the events have no attribute {name!r}")
            return self.df[name].to_numpy()[idx].tolist()
        recs = self.recs
        if not required:
            return [recs[i].get(name) for i in idx.tolist()]
        try:
            return [recs[i][name] for i in idx.tolist()]
        except KeyError:
            bad = next(i for i in idx.tolist() if name not in recs[i])
            raise QueryError(f"event {bad} ({recs[bad].get('type')}) has no attribute "
                             f"{name!r}") from None

    def record(self, i: int) -> Mapping:
        return self.df.iloc[i].to_dict() if self.df is not None else self.recs[i]


# --------------------------------------------------------------------------- plan
class PrefixTree:
    """The prefix tree (PreTree, §4.1) of the queries that share a START element. Node
    ``v`` (1-based; 0 is the empty prefix) is a prefix with the negations after each of
    its positions; ``parent[v-1]`` is its prefix one shorter."""

    def __init__(self):
        self.index: dict[tuple, int] = {}
        self.parent: list[int] = []
        self.depth: list[int] = []
        self.acc_test: list[int] = []        # test accepting the node's element
        self.neg_tests: list[list[int]] = []  # tests negating the gap after the node
        self.sums: list[tuple[int, str]] = []           # (depth, attr)
        self.maxes: list[tuple[int, str, int]] = []     # (depth, attr, sign)
        self.emitters: list[tuple[int, str, int]] = []  # (leaf, kind, spec)

    @property
    def V(self) -> int:
        return len(self.parent)

    def finish(self) -> None:
        self.par = np.asarray(self.parent, dtype=np.intp)
        self.chain = bool(np.array_equal(self.par, np.arange(self.V)))
        dep = np.asarray(self.depth)
        self.sum_nodes = [np.flatnonzero(dep == d) for d, _ in self.sums]
        self.max_nodes = [np.flatnonzero(dep == d) for d, _, _ in self.maxes]
        self.has_neg = any(self.neg_tests)
        # COUNT of one chain without negation, long enough: only accepted cells updated
        self.sparse = (self.chain and not (self.sums or self.maxes or self.has_neg)
                       and len(self.emitters) == 1 and sparse_band.worth_it(self.V))
        # rows of a chunk's band per vector and offset (bounded by _CELL_BUDGET)
        self.band_rows = (max(self.acc_test.count(j) for j in self.acc_test) + 1
                          if self.sparse else self.V + 1)

    def spec(self, lst: list, item: tuple) -> int:
        if item not in lst:
            lst.append(item)
        return lst.index(item)

    def emitter(self, leaf: int, kind: str, spec: int = -1) -> int:
        return self.spec(self.emitters, (leaf, kind, spec))


@dataclass
class QueryPlan:
    query: SeqQuery
    tree: int
    leaf: int
    count: int                                  # emitter of COUNT
    outs: list[tuple[str, str, int]] = field(default_factory=list)  # label, func, emitter


class SemState:
    """SEM state of one partition: one prefix-counter vector per live START (columns)."""

    def __init__(self, tr: PrefixTree):
        V = tr.V
        self.exp = np.empty(0)
        self.C = np.zeros((V + 1, 0), dtype=np.int64)
        self.S = np.zeros((len(tr.sums), V + 1, 0))
        self.M = np.full((len(tr.maxes), V + 1, 0), NEG_INF)

    def take(self, keep: np.ndarray) -> None:
        self.exp, self.C = self.exp[keep], self.C[:, keep]
        self.S, self.M = self.S[:, :, keep], self.M[:, :, keep]


class DpcState:
    """DPC state of one partition: one prefix-counter vector with ``cnt[0] = 1``."""

    def __init__(self, tr: PrefixTree):
        V = tr.V
        self.C = [1] + [0] * V
        self.S = [[0.0] * (V + 1) for _ in tr.sums]
        self.M = [[NEG_INF] * (V + 1) for _ in tr.maxes]
