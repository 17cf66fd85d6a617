"""The pieces Chop-Connect computes (Qi et al., SIGMOD 2014, §4.2) and what an event is to
them: :class:`Letters` names each element's test (its type and local predicate, §3.4)
and tells which tests an event passes; :class:`Piece` is one substring of a query with
its negations (§3.3) and, for SUM, the attribute that weighs one position.

SUM as a weighted count. ``SUM(p.a)`` over the matches of ``SEQ(E1..En)`` is
``Σ_matches a(e_p)``: the count of matches in which the update at position ``p`` (Lemma
1, ``cnt[p] += cnt[p-1]``) is weighted by the event's value, ``cnt[p] += a · cnt[p-1]``
(a START at ``p = 1`` starts at ``a``). Every step of Chop-Connect (the counters, a
snapshot, multi-connect, Lemma 7's product) is linear in the counts, so the same
machinery computes the sum when the piece holding ``p`` weighs that position; the
pieces before and after it are the COUNT's and are shared with it. AVG is SUM / COUNT.

MAX and MIN in the (count, max) semiring. A pair ``(c, m)``, ``c`` a count and ``m`` the
largest value over those ``c`` matches (``-inf`` when ``c = 0``), adds as ``(c1 + c2,
max(m1, m2))`` and multiplies as ``(c1·c2, max(m1, m2))`` (zero when ``c1·c2 = 0``): a
commutative semiring in which a plain count ``k`` is ``(k, -inf)``
(:class:`CountMax`). Chop-Connect's steps use only sums and products, so the query
copy whose weighted position multiplies by ``(1, v)`` (``(1, -v)`` for MIN) carries, at a
trigger, the live matches' count and their largest value: MAX, the same as A-Seq's
per-level maxima (§5). These pieces hold Python objects (slower than the numpy counts).

A negated element ``!E`` between two positions of a piece resets, as in A-Seq
(Lemma 6), the piece's count up to the position before it; one between two pieces
belongs to the earlier piece (its *trailing* gap): it resets that piece's complete
counts, so no snapshot taken after it holds the matches completed before it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cep_core.aggregate.evaluate import Evaluator, names_in, strip_vars
from cep_core.aggregate.seqquery import Element, SeqAgg
from cep_core.errors import QueryError

__all__ = ["CountMax", "Letters", "Piece", "chop", "compile_pieces", "weight", "weight_of"]


NEG_INF = -math.inf


class CountMax:
    """``(count, max)``, an element of the semiring of the module docstring; numbers
    ``k`` stand for ``(k, -inf)``."""

    __slots__ = ("c", "m")

    def __init__(self, c: float, m: float):
        self.c, self.m = c, m

    def __add__(self, o: Any) -> CountMax:
        if isinstance(o, CountMax):
            return CountMax(self.c + o.c, max(self.m, o.m))
        return CountMax(self.c + o, self.m)

    __radd__ = __add__

    def __mul__(self, o: Any) -> CountMax:
        c, m = (self.c * o.c, max(self.m, o.m)) if isinstance(o, CountMax) else (
            self.c * o, self.m)
        return CountMax(c, m) if c > 0 else CountMax(0, NEG_INF)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"CountMax({self.c}, {self.m})"


@dataclass(frozen=True)
class Piece:
    """One substring: the test of each position, what weighs each (``(func, attr)``:
    SUM, MAX or MIN of the attribute; None: 1) and the negated tests after each position
    (the last: before the next piece)."""

    tests: tuple[int, ...]
    weights: tuple[tuple[str, str] | None, ...]
    gaps: tuple[frozenset[int], ...]

    @property
    def weighted(self) -> bool:
        return any(w is not None for w in self.weights)

    @property
    def dtype(self) -> Any:
        """Its counters' dtype: exact integers, float64 sums, or (count, max) pairs."""
        kinds = {w[0] for w in self.weights if w is not None}
        return object if kinds & {"MAX", "MIN"} else float if kinds else np.int64


def weight(e: Mapping[str, Any], w: tuple[str, str]) -> Any:
    """What the event's update multiplies by at a position weighted ``w``: its value
    (SUM), ``(1, v)`` (MAX) or ``(1, -v)`` (MIN)."""
    func, attr = w
    try:
        v = float(e[attr])
    except (KeyError, TypeError, ValueError) as ex:
        raise QueryError(f"{func} over {attr}: event {e.get('type')} at {e.get('time')}: "
                         f"{ex!r}") from None
    return v if func == "SUM" else CountMax(1, v if func == "MAX" else -v)


class Letters:
    """The tests of a query set: ``(type, local predicate)``, each numbered once."""

    def __init__(self, params: Mapping | None = None, lookups: Mapping | None = None):
        self.ev = Evaluator(params, lookups)
        self.tests: list[tuple[str, Any]] = []
        self.by_type: dict[str, list[tuple[int, Any]]] = {}

    def test(self, el: Element) -> int:
        pred = el.where
        if pred is not None:
            self.ev.check(pred, names_in(pred), "an attribute")
        key = (el.type, None if pred is None else strip_vars(pred))
        if key not in self.tests:
            self.tests.append(key)
            self.by_type.setdefault(el.type, []).append((len(self.tests) - 1, pred))
        return self.tests.index(key)

    def passing(self, e: Mapping[str, Any]) -> frozenset[int]:
        """The tests the event passes (its type's, whose predicates hold)."""
        return frozenset(j for j, pred in self.by_type.get(e["type"], ())
                         if pred is None or self.ev.truth(pred, e, e))


def chop(pattern: Sequence[Any], shared: Sequence[Sequence[Any]]) -> list[tuple]:
    """``pattern`` cut into substrings at every occurrence of a ``shared`` sub-pattern
    (the first that fits, left to right), the rest in between kept whole:
    ``chop("ABCDEFG", ["DE", "FG"]) == [("A", "B", "C"), ("D", "E"), ("F", "G")]``.
    The items are compared as given (event types, or :class:`Element`)."""
    pattern = tuple(pattern)
    pieces: list[tuple] = []
    rest: list = []
    i = 0
    while i < len(pattern):
        hit = next((tuple(s) for s in shared if s and tuple(pattern[i:i + len(s)]) ==
                    tuple(s)), None)
        if hit is None:
            rest.append(pattern[i])
            i += 1
            continue
        if rest:
            pieces.append(tuple(rest))
            rest = []
        pieces.append(hit)
        i += len(hit)
    if rest:
        pieces.append(tuple(rest))
    return pieces


def _element(x: str | Element) -> Element:
    return x if isinstance(x, Element) else Element(x)


def compile_pieces(name: str, chopped: Sequence[Sequence[str | Element]], letters: Letters,
                   weighed: tuple[int, str, str] | None = None) -> list[Piece]:
    """A query's pieces (each a sequence of event types or :class:`Element`, negated
    ones included) as :class:`Piece`; ``weighed`` = (1-based positive position, SUM, MAX
    or MIN, attribute): the position whose update the attribute weighs."""
    out: list[Piece] = []
    pos = 0
    for j, items in enumerate(chopped):
        els = [_element(x) for x in items]
        if not els or all(e.negated for e in els):
            raise QueryError(f"query {name!r}: piece {j + 1} has no positive element")
        tests: list[int] = []
        weights: list[str | None] = []
        gaps: list[set[int]] = []
        for e in els:
            if e.negated:
                if not tests and not out:
                    raise QueryError(f"query {name!r}: a negated element must stand "
                                     "between two positive ones (A-Seq §3.3)")
                target = gaps[-1] if tests else None
                if target is None:                              # before the piece: the
                    prev = out[-1]                              # previous piece's trailing
                    out[-1] = Piece(prev.tests, prev.weights, prev.gaps[:-1]
                                    + (prev.gaps[-1] | {letters.test(e)},))
                else:
                    target.add(letters.test(e))
                continue
            pos += 1
            tests.append(letters.test(e))
            weights.append(weighed[1:] if weighed is not None and weighed[0] == pos
                           else None)
            gaps.append(set())
        out.append(Piece(tuple(tests), tuple(weights), tuple(frozenset(g) for g in gaps)))
    if out[-1].gaps[-1]:
        raise QueryError(f"query {name!r}: a negated element must stand between two "
                         "positive ones (A-Seq §3.3)")
    if weighed is not None and not 1 <= weighed[0] <= pos:
        raise QueryError(f"query {name!r}: no positive element {weighed[0]}")
    return out


def weight_of(name: str, agg: SeqAgg, chopped: Sequence[Sequence[str | Element]]
              ) -> tuple[int, str, str]:
    """The (1-based positive position, SUM, MAX or MIN, attribute) an aggregate weighs
    (AVG: its SUM)."""
    if agg.attr is None or agg.element is None:
        raise QueryError(f"query {name!r}: {agg.func} needs element.attr")
    func = "SUM" if agg.func == "AVG" else agg.func
    if isinstance(agg.element, int):
        return agg.element, func, agg.attr
    positives = [e for items in chopped for e in map(_element, items) if not e.negated]
    for i, e in enumerate(positives, 1):
        if e.var == agg.element:
            return i, func, agg.attr
    raise QueryError(f"query {name!r}: no positive element {agg.element!r}")
