"""The query language: grammar (lark), parser and abstract syntax."""

from cep_core.lang import ast
from cep_core.lang.parser import parse

__all__ = ["ast", "parse"]
