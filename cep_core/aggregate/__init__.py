"""Aggregation operators of cep_core.

* :mod:`cep_core.aggregate.aseq`: A-Seq, aggregates over sequence patterns without
  constructing matches (DPC, SEM, negation, HPC, PreTree; Qi et al., SIGMOD 2014).
* :mod:`cep_core.aggregate.chop_connect`: A-Seq's Chop-Connect, COUNT queries sharing
  sub-patterns anywhere (snapshots, multi-connect; §4.2).
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
