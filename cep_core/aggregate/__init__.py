"""Aggregation operators of cep_core.

* :mod:`cep_core.aggregate.aseq`: A-Seq, aggregates over sequence patterns without
  constructing matches (DPC, SEM, negation, HPC, PreTree; Qi et al., SIGMOD 2014).
* :mod:`cep_core.aggregate.chop_connect`: A-Seq's Chop-Connect, queries sharing
  sub-patterns anywhere (snapshots, multi-connect; §4.2), with negations, local
  predicates, COUNT, SUM, AVG, MIN and MAX (:mod:`cep_core.aggregate.chop_plan`); its
  sharing plan chosen by cost in :mod:`cep_core.aggregate.chop_planner`.
* :mod:`cep_core.aggregate.sparse_band`: SEM's band for the COUNT of a long chain,
  updated only where an event is accepted.
* :mod:`cep_core.aggregate.stream`: the aggregation queries of Listings 6.2/6.3 (top),
  ``SELECT .. FROM T STREAM WHERE .. GROUP BY time RETURN R(..)``.
"""

from cep_core.aggregate.aseq import PreTree, SeqAggregator, SeqResult
from cep_core.aggregate.chop_connect import ChopConnect, chop
from cep_core.aggregate.seqquery import (
    Element,
    SeqAgg,
    SeqQuery,
    seq_query,
    seq_query_from_ast,
)
from cep_core.aggregate.stream import StreamAggregation, compile_aggregation

__all__ = ["SeqAggregator", "PreTree", "SeqResult", "ChopConnect", "chop", "Element",
           "SeqAgg", "SeqQuery", "seq_query", "seq_query_from_ast", "compile_aggregation",
           "StreamAggregation"]
