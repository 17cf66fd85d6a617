"""Adaptive evaluation plans: sliding-window statistics, order- and tree-based plans,
the decision when to plan again (unconditionally, on a constant threshold, or on
invariants) and the migration of partial matches from one plan to the next.

Source: Schuster and Kolchinsky, *Efficient adaptive detection of complex event
patterns*, US patent 11,693,862 B2 (2023): Algorithm 1 (the detection-adaptation loop),
Algorithm 2 (the greedy order-based plan), Algorithm 3 (ZStream's tree-based plan),
invariants, K-invariants and the distance d (scanned, d_avg or meta-adaptive). **The
method of the invariants is patented (US 11,693,862 B2)**: using it may need a licence
from the patent's owner.

* :mod:`cep_core.adaptive.pattern`: the patterns the plans cover (SEQ, AND, NEG, a
  Kleene element, a top OR), the order their elements must keep, which predicates and
  negated elements each step checks;
* :mod:`cep_core.adaptive.statistics`: arrival rates and selectivities over a sliding
  window;
* :mod:`cep_core.adaptive.planning`: the plan-generation algorithms, recording the
  deciding conditions of each building block;
* :mod:`cep_core.adaptive.decision`: the reoptimizing decision functions D;
* :mod:`cep_core.adaptive.runners`: the lazy order-based and the tree-based evaluation
  of one plan;
* :mod:`cep_core.adaptive.operators`: what a complete match goes through (its Kleene
  sequences, the negated elements);
* :mod:`cep_core.adaptive.engine`: the detection-adaptation loop and plan migration;
* :mod:`cep_core.adaptive.array_engine`: the same loop for an order plan of a sequence
  over batches of events, the plan evaluated as an array join
  (:mod:`cep_core.adaptive.array_join`) and the statistics kept as arrays
  (:mod:`cep_core.adaptive.batch_statistics`);
* :mod:`cep_core.adaptive.branches`: a top disjunction, each branch with its own plan.
"""
