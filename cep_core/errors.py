"""Errors of cep_core: every one names where and what, for a one-line CLI message."""

from __future__ import annotations


class QueryError(ValueError):
    """A query that cannot be used."""


class QuerySyntaxError(QueryError):
    """Text that does not parse: line, column, the offending text and what was expected."""

    def __init__(self, line: int, column: int, text: str, expected: list[str],
                 source: str = "<query>"):
        self.line, self.column, self.text, self.expected = line, column, text, list(expected)
        self.source = source
        want = ", ".join(self.expected) if self.expected else "the end of the query"
        super().__init__(f"{source}: line {line}, column {column}: unexpected {text!r}; "
                         f"expected {want}")

    def __reduce__(self):
        return (type(self), (self.line, self.column, self.text, self.expected, self.source))


class QuerySemanticError(QueryError):
    """A query that parses but cannot be compiled: unknown variable, unbound parameter or
    lookup, unsupported construct. ``pos`` is (line, column) when known."""

    def __init__(self, message: str, pos: tuple[int, int] | None = None,
                 source: str = "<query>"):
        self.message, self.pos, self.source = message, pos, source
        where = f"line {pos[0]}, column {pos[1]}: " if pos else ""
        super().__init__(f"{source}: {where}{message}")

    def __reduce__(self):
        return (type(self), (self.message, self.pos, self.source))


class LostAttribute(KeyError):
    """An attribute of a placeholder event (one that was lost: :mod:`cep_core.approx.
    placeholders`) that the placeholder does not carry."""
