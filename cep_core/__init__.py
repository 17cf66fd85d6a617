"""cep_core: a general complex-event-processing library (no drsim or spark imports)."""

from cep_core.errors import QueryError, QuerySemanticError, QuerySyntaxError
from cep_core.lang import parse
from cep_core.query import CompiledQuery, Session, compile

__all__ = ["QueryError", "QuerySemanticError", "QuerySyntaxError", "parse", "compile",
           "CompiledQuery", "Session"]
