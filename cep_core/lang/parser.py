"""Parser of the query language: ``grammar.lark`` (LALR) and a Transformer to ``ast``.

``parse(text, source)`` returns a ``PatternQuery`` or an ``AggregationQuery``; any text
that does not parse raises ``QuerySyntaxError`` with the line, the column, the offending
text and what was expected, in readable words. No lark exception escapes.

Readings fixed here (the grammar's comments give the rest):

* ``v[..].attr`` and a lookup ``name[..]`` share their opening (``a[m_user]`` could be
  either), so the bracket holds an expression list and the ``.attr`` that follows decides:
  an attribute's index must be ``i``, ``i+k``, ``i-k``, ``last``, a positive integer or a
  parameter name.
* ``AVG/SUM/COUNT/MIN/MAX`` of one argument (any case) are ``Aggregate``; ``MIN``/``MAX``
  of several arguments stay a scalar ``Call``; ``DISTINCT`` only in a one-argument
  aggregate.
* Unary minus on a number literal is folded into the literal (``-3`` is ``Num(-3)``).
* ``AND``/``OR`` are flattened, parenthesised sub-chains of the same operator included.
"""

from __future__ import annotations

import re
from copy import copy
from functools import lru_cache
from importlib import resources

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from cep_core.errors import QuerySyntaxError
from cep_core.lang import ast

__all__ = ["parse", "TIME_UNITS"]

#: the grammar, read as package data (so it loads from a zip on ``sys.path`` too)
GRAMMAR_FILE = resources.files("cep_core.lang").joinpath("grammar.lark")

#: spellings accepted for the time units of ``WITHIN`` and of number literals
TIME_UNITS = {
    "ms": "ms", "msec": "ms", "millisecond": "ms", "milliseconds": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "min": "min", "mins": "min", "minute": "min", "minutes": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
}
_KILO = ("k", "K")
_AGGREGATES = frozenset({"AVG", "SUM", "COUNT", "MIN", "MAX"})
_END = "end of query"

_ESCAPE_RE = re.compile(r"\\(.)", re.S)
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t"}
_NUMBER_RE = re.compile(r"(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(.*)", re.S)

# Readable names for the regex terminals; string terminals show as their text and
# keywords (``_SEQ``) as ``'SEQ'``.
_TERMINAL_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "CLOCK": "a clock time",
    "STRING": "a string",
    "COMP_OP": "a comparison operator",
    "_STAR": "'*'",
    "_NOT_IN_SYM": "'∉'",
    "$END": _END,
}
_HIDDEN = {"WS", "LINE_COMMENT", "BLOCK_COMMENT"}
_ARITH = {"'+'", "'-'", "'*'", "'/'", "'^'"}


@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(GRAMMAR_FILE.read_text(encoding="utf-8"), parser="lalr",
                lexer="contextual", propagate_positions=True, maybe_placeholders=True)


@lru_cache(maxsize=1)
def _words() -> dict[str, str]:
    words = {}
    for term in _lark().terminals:
        if term.name in _TERMINAL_WORDS or term.name in _HIDDEN:
            continue
        if term.pattern.type == "str":
            words[term.name] = f"'{term.pattern.value}'"
        else:  # a keyword: _SEQ, _WITHIN, ...
            words[term.name] = f"'{term.name.lstrip('_')}'"
    words.update(_TERMINAL_WORDS)
    return words


def _expected(names) -> list[str]:
    """Terminal names -> a short sorted list of readable words."""
    words = _words()
    out = {words.get(n, n) for n in names if n not in _HIDDEN}
    if len(out & _ARITH) >= 4:  # any place an expression may go on
        out = (out - _ARITH) | {"an arithmetic operator"}
    return sorted(out)


def parse(text: str, source: str = "<query>") -> ast.Query:
    """Parse one query into a ``PatternQuery`` or ``AggregationQuery``. The trees are
    immutable, so a text parsed before is not parsed again (a task compiles the same
    monitoring queries with each chunk's tables)."""
    if not isinstance(text, str):
        raise TypeError(f"query text must be str, not {type(text).__name__}")
    return _parse(text, source)


@lru_cache(maxsize=256)
def _parse(text: str, source: str) -> ast.Query:
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(e, text, source) from None
    except LarkError as e:  # defensive: lark raises UnexpectedInput for bad text
        raise QuerySyntaxError(1, 1, text[:20], [str(e)], source) from None
    try:
        return _Builder(text, source).transform(tree)
    except VisitError as e:
        raise e.orig_exc from None


def _syntax_error(e: UnexpectedInput, text: str, source: str) -> QuerySyntaxError:
    if isinstance(e, UnexpectedToken):
        tok = e.token
        names = _accepts(e.state) or e.expected
        if tok.type == "$END":
            line, col = _end_pos(text)
            return QuerySyntaxError(line, col, "end of input", _expected(names), source)
        start = tok.start_pos if isinstance(tok.start_pos, int) else -1
        for back in (0, 1):  # "/*" without "*/" lexes as '/' '*'
            at = start - back
            if at >= 0 and text.startswith("/*", at) and "*/" not in text[at + 2:]:
                return _open_comment(tok.line, tok.column - back, source)
        return QuerySyntaxError(tok.line, tok.column, str(tok), _expected(names), source)
    if isinstance(e, UnexpectedCharacters):
        offending = text[e.pos_in_stream] if e.pos_in_stream < len(text) else e.char
        if text.startswith("/*", e.pos_in_stream):
            return _open_comment(e.line, e.column, source)
        if offending and offending in "'\"":
            return QuerySyntaxError(e.line, e.column, offending,
                                    [f"a closing {offending} on the same line"], source)
        names = _accepts(getattr(e, "state", None)) or e.allowed
        return QuerySyntaxError(e.line, e.column, offending, _expected(names), source)
    if isinstance(e, UnexpectedEOF):
        line, col = _end_pos(text)
        return QuerySyntaxError(line, col, "end of input", _expected(e.expected), source)
    line, col = getattr(e, "line", 1), getattr(e, "column", 1)
    return QuerySyntaxError(line if isinstance(line, int) and line > 0 else 1,
                            col if isinstance(col, int) and col > 0 else 1,
                            "", [], source)


def _open_comment(line: int, column: int, source: str) -> QuerySyntaxError:
    return QuerySyntaxError(line, column, "/*", ["'*/' (the end of the comment)"], source)


def _accepts(state) -> set[str] | None:
    """The terminals that the LALR parser in ``state`` would really shift (lark's
    ``expected`` holds the merged lookaheads of the state, often far more)."""
    try:
        conf = copy(state.parse_conf)
        conf.callbacks = {}
        out = set()
        for name in state.parse_conf.states[state.position]:
            if not name.isupper():  # a rule, not a terminal
                continue
            trial = state.copy(deepcopy_values=False)
            trial.parse_conf = conf
            try:
                trial.feed_token(Token(name, ""), name == "$END")
            except Exception:  # noqa: BLE001 - UnexpectedToken: not accepted here
                continue
            out.add(name)
        return out or None
    except Exception:  # noqa: BLE001 - no usable parser state: fall back to lark's sets
        return None


def _end_pos(text: str) -> tuple[int, int]:
    """(line, column) just after the last character that is not white space."""
    body = text.rstrip()
    line = body.count("\n") + 1
    return line, len(body) - (body.rfind("\n") + 1) + 1


def _pos_of(x) -> ast.Pos:
    if isinstance(x, Token):
        return (x.line, x.column)
    return getattr(x, "pos", None)


def _flatten(cls, items) -> tuple:
    out = []
    for item in items:
        out.extend(item.items if isinstance(item, cls) else (item,))
    return tuple(out)


@v_args(meta=True)
class _Builder(Transformer):
    """Parse tree -> ``cep_core.lang.ast``."""

    def __init__(self, text: str, source: str):
        super().__init__(visit_tokens=False)
        self.text, self.source = text, source

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _p(meta) -> ast.Pos:
        return None if meta.empty else (meta.line, meta.column)

    def _error(self, pos: ast.Pos, text: str, expected: list[str]) -> QuerySyntaxError:
        line, col = pos or (1, 1)
        return QuerySyntaxError(line, col, text, expected, self.source)

    def _number(self, tok: Token) -> ast.Num:
        digits, unit = _NUMBER_RE.fullmatch(str(tok)).groups()
        value: int | float = float(digits) if any(c in digits for c in ".eE") else int(digits)
        pos = (tok.line, tok.column)
        if not unit:
            return ast.Num(value, None, pos=pos)
        if unit in _KILO:
            value = value * 1000
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            return ast.Num(value, None, pos=pos)
        if unit.lower() in TIME_UNITS:
            return ast.Num(value, TIME_UNITS[unit.lower()], pos=pos)
        if unit.startswith("°"):
            return ast.Num(value, unit, pos=pos)
        raise self._error((tok.line, tok.column + len(digits)), unit,
                          ["'K'", "'h'", "'k'", "'min'", "'ms'", "'s'", "'°C'",
                           "no unit"])

    # ------------------------------------------------------------------ queries
    def start(self, meta, children):
        return children[0]

    def pattern_query(self, meta, children):
        pattern, source, where, within, missing, returns = children
        return ast.PatternQuery(pattern, source, where, within, returns, missing,
                                pos=self._p(meta))

    def select_query(self, meta, children):
        *selects, source, where, group_by, returns = children
        return ast.AggregationQuery(tuple(selects), source, where, group_by or (), returns,
                                    pos=self._p(meta))

    def select_item(self, meta, children):
        expr, alias = children
        return ast.SelectItem(expr, str(alias) if alias is not None else None,
                              pos=self._p(meta))

    def from_clause(self, meta, children):
        return str(children[0])

    def where_clause(self, meta, children):
        return children[0]

    def group_clause(self, meta, children):
        return tuple(str(c) for c in children)

    def within_clause(self, meta, children):
        tok, unit_tok = children
        num = self._number(tok)
        unit = num.unit
        if unit is not None and unit not in TIME_UNITS.values():
            raise self._error(_pos_of(tok), str(tok),
                              ["a duration: a number with 'ms', 's', 'min', 'h' or none"])
        if unit_tok is not None:
            word = str(unit_tok)
            if unit is not None or word.lower() not in TIME_UNITS:
                expected = ["'ALLOW'", "'RETURN'", _END] if unit is not None else \
                    ["'ALLOW'", "'RETURN'", "'h'", "'min'", "'ms'", "'s'", _END]
                raise self._error(_pos_of(unit_tok), word, expected)
            unit = TIME_UNITS[word.lower()]
        return ast.Within(num.value, unit, pos=self._p(meta))

    def missing_clause(self, meta, children):
        (tok,) = children
        num = self._number(tok)
        if num.unit is not None or not isinstance(num.value, int):
            raise self._error(_pos_of(tok), str(tok), ["a whole number of elements"])
        return num.value

    def typed_return(self, meta, children):
        name, args = children
        return ast.Return(str(name), args or (), pos=self._p(meta))

    def anon_return(self, meta, children):
        (args,) = children
        return ast.Return(None, args or (), pos=self._p(meta))

    def return_args(self, meta, children):
        return tuple(children)

    def return_arg(self, meta, children):
        expr, alias = children
        return ast.ReturnArg(expr, str(alias) if alias is not None else None,
                             pos=self._p(meta))

    # ------------------------------------------------------------------ patterns
    def seq(self, meta, children):
        return ast.Seq(children[0], False, pos=self._p(meta))

    def kleene_seq(self, meta, children):
        return ast.Seq(children[0], True, pos=self._p(meta))

    def seq_items(self, meta, children):
        return tuple(children)

    def conj(self, meta, children):
        return ast.Conj(children[0], pos=self._p(meta))

    def group(self, meta, children):
        if len(children) == 1:
            return children[0]
        return ast.OrPattern(tuple(children), pos=self._p(meta))

    def event(self, meta, children):
        type_, var = children
        return ast.EventElem(str(type_), str(var), pos=self._p(meta))

    def kleene_event(self, meta, children):
        type_, var = children
        return ast.EventElem(str(type_), str(var), kleene=True, pos=self._p(meta))

    def neg_event(self, meta, children):
        (elem,) = children
        return ast.EventElem(elem.type, elem.var, elem.kleene, True, pos=self._p(meta))

    # ------------------------------------------------------------------ expressions
    def or_expr(self, meta, children):
        return ast.Or(_flatten(ast.Or, children), pos=self._p(meta))

    def and_expr(self, meta, children):
        return ast.And(_flatten(ast.And, children), pos=self._p(meta))

    def not_(self, meta, children):
        return ast.Not(children[0], pos=self._p(meta))

    def compare(self, meta, children):
        left, op, right = children
        op = {"<>": "!=", "≠": "!=", "≤": "<=", "≥": ">="}.get(str(op), str(op))
        return ast.Compare(op, left, right, pos=self._p(meta))

    def in_(self, meta, children):
        item, coll = children
        return ast.In(item, coll, False, pos=self._p(meta))

    def not_in(self, meta, children):
        item, coll = children
        return ast.In(item, coll, True, pos=self._p(meta))

    def _binop(self, op, meta, children):
        left, right = children
        return ast.BinOp(op, left, right, pos=self._p(meta))

    def add(self, meta, children):
        return self._binop("+", meta, children)

    def sub(self, meta, children):
        return self._binop("-", meta, children)

    def mul(self, meta, children):
        return self._binop("*", meta, children)

    def div(self, meta, children):
        return self._binop("/", meta, children)

    def pow(self, meta, children):
        return self._binop("^", meta, children)

    def neg(self, meta, children):
        (operand,) = children
        if isinstance(operand, ast.Num) and operand.unit != "clock":
            return ast.Num(-operand.value, operand.unit, pos=self._p(meta))
        return ast.Neg(operand, pos=self._p(meta))

    def number(self, meta, children):
        return self._number(children[0])

    def clock(self, meta, children):
        tok = children[0]
        hours, minutes = (int(x) for x in str(tok).split(":"))
        if hours > 24 or minutes > 59 or (hours == 24 and minutes):
            raise self._error(_pos_of(tok), str(tok), ["a clock time from 0:00 to 24:00"])
        return ast.Num(hours * 60 + minutes, "clock", pos=_pos_of(tok))

    def string(self, meta, children):
        body = str(children[0])[1:-1]
        value = _ESCAPE_RE.sub(lambda m: _ESCAPES.get(m[1], m[0]), body)
        return ast.Str(value, pos=self._p(meta))

    def name(self, meta, children):
        return ast.Name(str(children[0]), pos=self._p(meta))

    def attr(self, meta, children):
        var, attr = children
        return ast.Attr(str(var), str(attr), None, pos=self._p(meta))

    def indexed_attr(self, meta, children):
        var, args, attr = children
        return ast.Attr(str(var), str(attr), self._index(var, args), pos=self._p(meta))

    def all_attr(self, meta, children):
        var, attr = children
        return ast.Attr(str(var), str(attr), ast.Index("all", pos=self._p(meta)),
                        pos=self._p(meta))

    def _index(self, var: Token, args: tuple) -> ast.Index:
        expected = ["'i'", "'i+1'", "'i-1'", "'last'", "a parameter", "a positive integer"]
        first = args[0]
        pos = first.pos
        if len(args) != 1:
            raise self._error(args[1].pos, self._source_from(args[1].pos, "]"), expected)
        if isinstance(first, ast.Name):
            if first.name == "i":
                return ast.Index("i", 0, pos=pos)
            if first.name.lower() == "last":
                return ast.Index("last", pos=pos)
            return ast.Index("param", 0, first.name, pos=pos)
        if isinstance(first, ast.Num) and first.unit is None and isinstance(first.value, int) \
                and first.value >= 1:
            return ast.Index("const", 0, first.value, pos=pos)
        if isinstance(first, ast.BinOp) and first.op in "+-" \
                and isinstance(first.left, ast.Name) and first.left.name == "i" \
                and isinstance(first.right, ast.Num) and first.right.unit is None \
                and isinstance(first.right.value, int):
            k = first.right.value
            return ast.Index("i", k if first.op == "+" else -k, pos=pos)
        raise self._error(pos, self._source_from(pos, "]"), expected)

    def _source_from(self, pos: ast.Pos, stop: str) -> str:
        """The query text from ``pos`` up to (not including) ``stop`` on that line."""
        if pos is None:
            return ""
        line = self.text.splitlines()[pos[0] - 1]
        rest = line[pos[1] - 1:]
        return rest.split(stop, 1)[0].strip() or rest[:1]

    def lookup(self, meta, children):
        name, args = children
        return ast.Lookup(str(name), args, pos=self._p(meta))

    def call(self, meta, children):
        name, args = children
        args = args or ()
        func = str(name)
        if func.upper() in _AGGREGATES:
            if len(args) == 1:
                return ast.Aggregate(func.upper(), args[0], False, pos=self._p(meta))
            if not (func.upper() in ("MIN", "MAX") and len(args) > 1):
                raise self._error(_pos_of(name), func, ["one argument"])
        return ast.Call(func, args, pos=self._p(meta))

    def distinct_call(self, meta, children):
        name, arg = children
        func = str(name).upper()
        if func not in _AGGREGATES:
            raise self._error(_pos_of(name), str(name),
                              ["'AVG'", "'COUNT'", "'MAX'", "'MIN'", "'SUM'"])
        return ast.Aggregate(func, arg, True, pos=self._p(meta))

    def count_all(self, meta, children):
        (name,) = children
        if str(name).upper() != "COUNT":
            raise self._error(_pos_of(name), str(name), ["'COUNT'"])
        return ast.CountAll(pos=self._p(meta))

    def length(self, meta, children):
        return ast.Length(str(children[0]), pos=self._p(meta))

    def same(self, meta, children):
        return ast.Same(children[0], False, pos=self._p(meta))

    def same_value(self, meta, children):
        return ast.Same(children[0], True, pos=self._p(meta))

    def same_attrs(self, meta, children):
        return tuple(children)

    def setlit(self, meta, children):
        (items,) = children
        return ast.SetLit(items or (), pos=self._p(meta))

    def expr_list(self, meta, children):
        return tuple(children)
