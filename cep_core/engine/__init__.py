"""Engines that run a compiled plan (docs/architecture.md): the reference
engine (per event, every selection policy, any pattern); a keyed vectorized engine joins
it later with the same semantics."""

from cep_core.engine.matching import ANY, NEXT, POLICIES, STRICT, PMView, Statistics
from cep_core.engine.reference import ReferenceEngine

ENGINES = {"reference": ReferenceEngine}

__all__ = ["ANY", "NEXT", "STRICT", "POLICIES", "ENGINES", "PMView", "ReferenceEngine",
           "Statistics"]
