"""Random and garbled query texts give QuerySyntaxError or QuerySemanticError with a
position, never another exception (and never a hang): the language's front end is
total."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from listings import FIXTURE, load_listings

import cep_core
from cep_core.errors import QuerySemanticError, QuerySyntaxError

SEEDS = [body for _, _, _, body in load_listings(FIXTURE)] + [
    "PATTERN SEQ(NEG X x, A a, NEG B+ b[], C c, NEG D d) WHERE LENGTH(b[]) >= 2 WITHIN 10",
    "PATTERN SEQ(X x, AND(A a, SEQ(B b, C c)), Y y) WHERE a.v < c.v WITHIN 5 RETURN T(a.id)",
    "PATTERN SEQ(A a, B+ b[], C c) WHERE AVG(b[].v) > c.v WITHIN 1h RETURN R(SUM(b[].v))",
    "PATTERN SEQ(A a, B+ b[], C c) WITHIN 1h RETURN R(COUNT(*) AS n)",
]
TOKENS = ["PATTERN", "SEQ", "AND", "OR", "NEG", "WHERE", "WITHIN", "RETURN", "SELECT",
          "FROM", "STREAM", "GROUP", "BY", "SAME", "LENGTH", "COUNT", "AVG", "DISTINCT",
          "(", ")", "[", "]", "{", "}", ",", ".", "+", "-", "*", "/", "^", "=", "<", ">=",
          "!=", "∈", "A", "B", "a", "b", "b[]", "x", "i", "i+1", "last", "1", "2.5", "10k",
          "5ms", "6:00", "'s'", "λ", "--c\n", "\n", " "]


def _check(text: str) -> None:
    try:
        cep_core.compile(text, time_unit="min")
    except QuerySyntaxError as exc:
        assert exc.line >= 1 and exc.column >= 1, text
        assert "\n" not in str(exc)
    except QuerySemanticError as exc:
        assert exc.pos is not None, (text, str(exc))
        assert "\n" not in str(exc)


def garble(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        at = rng.randrange(len(chars) + 1)
        if op < 0.35 and chars:
            del chars[min(at, len(chars) - 1)]
        elif op < 0.7:
            chars.insert(at, rng.choice(TOKENS))
        elif chars:
            chars[min(at, len(chars) - 1)] = rng.choice(TOKENS)
    return "".join(chars)


def test_ten_thousand_garbled_and_random_texts():
    rng = random.Random(2024)
    for n in range(10_000):
        if n % 4:
            text = garble(rng, rng.choice(SEEDS))
        else:
            text = " ".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 25)))
        _check(text)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS + list("abcABC0129()[],.+-*/<>=:'\"#")),
                max_size=40).map("".join))
def test_any_text_of_the_alphabet(text):
    _check(text)


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(SEEDS), st.integers(0, 10_000), st.integers(0, 2**32))
def test_garbled_listings(seed_text, _, salt):
    _check(garble(random.Random(salt), seed_text))


@pytest.mark.parametrize("text", SEEDS[-4:])
def test_the_new_constructs_compile(text):
    cep_core.compile(text, time_unit="min")


def test_every_pattern_example_of_the_language_page_parses():
    """docs/language.md: each construct's example that is a whole query parses."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "language.md").read_text()
    examples = re.findall(r"^\| [^|]+ \| `([^`]+)`", page, re.M)
    whole = [x for x in examples if x.startswith(("PATTERN", "SEQ(", "SELECT"))]
    assert len(whole) >= 12
    for text in whole:
        cep_core.parse(text)
