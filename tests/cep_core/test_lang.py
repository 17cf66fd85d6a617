"""The query language: every dissertation listing parses, AST shapes, readable errors."""

from __future__ import annotations

import logging
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from listings import FIXTURE, load_listings, parse_params

import cep_core
from cep_core import QuerySyntaxError, parse
from cep_core.lang.ast import (
    Aggregate,
    AggregationQuery,
    And,
    Attr,
    BinOp,
    Call,
    Compare,
    EventElem,
    In,
    Index,
    Length,
    Lookup,
    Name,
    Neg,
    Not,
    Num,
    Or,
    OrPattern,
    PatternQuery,
    Return,
    ReturnArg,
    Same,
    SelectItem,
    Seq,
    SetLit,
    Str,
    Within,
)

LISTINGS = load_listings(FIXTURE)
BY_NAME = {name: query for _, name, _, query in LISTINGS}


def ai(attr: str, index: Index | None = None, var: str = "a") -> Attr:
    return Attr(var, attr, index)


I0 = Index("i", 0)


# --------------------------------------------------------------------------- the fixture
def test_fixture_is_complete():
    assert len(LISTINGS) == 16
    assert len(BY_NAME) == 16
    kinds = {kind for kind, *_ in LISTINGS}
    assert kinds == {"compile"}  # every listing compiles
    params = {name: p for _, name, p, _ in LISTINGS}
    assert params["listing-6.1"] == "t_start=1110 t_end=1230 m_user=3 λ"
    assert params["listing-5.1-Q6"] == "REMOTE"  # the note in parentheses is dropped
    assert params["listing-4.2-Q2"] == ""
    assert parse_params(params["listing-6.2-alert"]) == {"γ_user": 0.5, "GroupSize": None}


@pytest.mark.parametrize(("kind", "name", "params", "query"), LISTINGS,
                         ids=[name for _, name, _, _ in LISTINGS])
def test_listing_parses(kind, name, params, query):
    q = parse(query, source=name)
    assert isinstance(q, PatternQuery | AggregationQuery)
    assert q.pos == (1, 1)


# --------------------------------------------------------------------------- AST shapes
def test_listing_6_1():
    q = parse(BY_NAME["listing-6.1"])
    m = Index("param", 0, "m_user")
    assert q == PatternQuery(
        pattern=Seq((EventElem("smartMeterEvent", "a", kleene=True),)),
        where=And((
            Same((Name("houseID"),)),
            Compare(">", ai("time", I0), Name("t_start")),
            Compare("<", ai("time", I0), Name("t_end")),
            Compare(">", ai("accLoad", I0),
                    Lookup("λ", (ai("houseID", I0), ai("time", I0)))),
            Compare("=", BinOp("+", ai("time", I0), Num(1)), ai("time", Index("i", 1))),
            Compare(">", Length("a"), Name("m_user")),
        )),
        within=Within(2, "h"),
        returns=Return("userNonComplianceEvent", tuple(
            ReturnArg(ai(attr, m)) for attr in ("time", "houseID", "groupID", "accLoad"))),
    )
    # positions point into the text
    assert q.pattern.pos == (1, 1)
    assert q.pattern.items[0].pos == (1, 6)
    assert q.where.pos == (2, 7)
    assert q.where.items[1].left.pos == (2, 25)
    assert q.within.pos == (6, 1)


def test_listing_2_1():
    q = parse(BY_NAME["listing-2.1"])
    assert q.pattern == Seq((
        EventElem("Transaction", "t1"),
        OrPattern((
            Seq((EventElem("Deny", "d"), EventElem("Transaction", "t2"))),
            Seq((EventElem("Limit", "l"), EventElem("Transaction", "t3"))),
        )),
    ))
    items = q.where.items
    assert len(items) == 8
    assert items[0] == Same((Name("creditCard"),), value_form=True)
    assert items[1] == Compare(">", Attr("t1", "volume"), Num(10000))
    assert items[3] == Compare("!=", Attr("t1", "location"), Attr("t2", "location"))
    assert items[4] == In(Attr("t2", "location"), Lookup("REMOTE", (Attr("t1", "user"),)),
                          negated=True)
    assert items[5] == Compare(">", Attr("l", "limit"),
                               Lookup("REMOTE", (Attr("t1", "organisation"),)))
    assert items[6].right == Num(50000)
    assert q.within == Within(5, "min")


def test_listing_4_1():
    q = parse(BY_NAME["listing-4.1"])
    assert q.pattern == Seq((EventElem("BikeTrip", "a", kleene=True), EventElem("BikeTrip", "b")))
    assert q.where == And((
        Compare("=", ai("bike", Index("i", 1)), ai("bike", I0)),
        In(Attr("b", "end"), SetLit((Num(7), Num(8), Num(9)))),
        Compare("=", ai("bike", Index("last")), Attr("b", "bike")),
        Compare("=", ai("start", Index("i", 1)), ai("end", I0)),
    ))
    assert q.within == Within(1, "h")
    assert q.returns == Return(None, (ReturnArg(ai("start", Index("const", 0, 1))),
                                      ReturnArg(ai("end", I0)), ReturnArg(Attr("b", "end"))))


def test_q4_negation():
    q = parse(BY_NAME["listing-4.2-Q4"])
    assert q.pattern == Seq((EventElem("A", "a"), EventElem("B", "b", negated=True),
                             EventElem("C", "c")))
    assert q.within == Within(4, "ms")


def test_q3_arithmetic():
    q = parse(BY_NAME["listing-4.2-Q3"])
    assert q.where.items[1] == Compare(">=", Attr("a", "x"),
                                       BinOp("/", Attr("b", "v"), Num(2)))
    sq = lambda v: Call("sqrt", (BinOp("+", BinOp("^", Attr(v, "x"), Num(2)),  # noqa: E731
                                       BinOp("^", Attr(v, "y"), Num(2))),))
    assert q.where.items[-1] == Compare("<", Aggregate("AVG", BinOp("+", sq("a"), sq("b"))),
                                        Attr("c", "v"))


def test_listing_6_2_alert():
    q = parse(BY_NAME["listing-6.2-alert"])
    assert q == AggregationQuery(
        selects=(SelectItem(Aggregate("COUNT", Name("houseID"), distinct=True), "alertNum"),
                 SelectItem(Aggregate("SUM", Name("accLoad")), "sumAccLoad")),
        source="userNonComplianceEvent",
        where=And((Same((Name("groupID"),)),
                   Compare(">", Name("alertNum"),
                           BinOp("*", Name("γ_user"), Lookup("GroupSize", (Name("groupID"),)))))),
        group_by=("time",),
        returns=Return("groupAlertEvent", (ReturnArg(Name("time")), ReturnArg(Name("groupID")),
                                           ReturnArg(Name("sumAccLoad")))),
    )


def test_listing_6_2_group_has_source():
    q = parse(BY_NAME["listing-6.2-group"])
    assert isinstance(q, PatternQuery)
    assert q.source == "groupAlertEvent"
    assert q.returns.args[2] == ReturnArg(ai("sumAccLoad", Index("param", 0, "m_group")))


def test_listing_5_2():
    q = parse(BY_NAME["listing-5.2"])
    assert q.pattern == Seq(tuple(EventElem("Satellite", v) for v in "abc"), kleene=True)
    items = q.where.items
    assert items[0] == Same((Call("OVERLAP", (Name("boundary"),)),))
    assert items[2] == Compare(">=", Attr("a", "time"), Num(360, "clock"))
    assert items[3] == Compare("=", Attr("a", "level"), Name("high"))
    assert items[5] == Compare("=", Lookup("UDF1", (Attr("a", "level"), Attr("b", "level"))),
                               Name("high"))
    assert items[7] == Compare("<", Attr("c", "time"), Num(18 * 60, "clock"))
    assert items[8] == Compare(">=", Lookup("REMOTE", (Attr("c", "temperature"),)),
                               Num(46.51, "°C"))
    assert items[10].right == Num(23.38)


def test_q6_bare_within_and_or_pattern():
    q = parse(BY_NAME["listing-5.1-Q6"])
    assert q.within == Within(50000, None)
    assert isinstance(q.pattern.items[1], OrPattern)


def test_unicode_and_ascii_spellings_are_equal():
    uni = parse("PATTERN SEQ(A a, B b) WHERE a.x ≥ b.x AND a.y ≤ 2 AND a.z ≠ b.z "
                "AND a.w ∈ {1, 2} AND a.v × 2 > b.v AND a.u ∉ REMOTE[b.u]")
    ascii_ = parse("pattern seq(A a, B b) where a.x >= b.x and a.y <= 2 and a.z <> b.z "
                   "and a.w in {1, 2} and a.v * 2 > b.v and a.u not in REMOTE[b.u]")
    bang = parse("Pattern Seq(A a, B b) Where a.x >= b.x AND a.y <= 2 AND a.z != b.z "
                 "AND a.w IN {1, 2} AND a.v * 2 > b.v AND a.u NOT IN REMOTE[b.u]")
    assert uni == ascii_ == bang
    assert uni.where.items[2].op == "!="


def test_kleene_spellings_are_equal():
    assert parse("SEQ(A+ a[], B b)") == parse("PATTERN SEQ(A a+[], B b)")


def test_expression_details():
    q = parse("SEQ(A a) WHERE -a.x - -3 = 2^3^2 AND NOT a.y = 1 AND (a.p OR a.q OR (a.r OR a.s))"
              " AND max(a.x, a.y) > min(a.z) AND a.s = 'it\\'s' AND a.t = \"x\" AND f() = 1.5e3")
    items = q.where.items
    assert items[0] == Compare("=", BinOp("-", Neg(Attr("a", "x")), Num(-3)),
                               BinOp("^", Num(2), BinOp("^", Num(3), Num(2))))
    assert items[1] == Not(Compare("=", Attr("a", "y"), Num(1)))
    assert items[2] == Or(tuple(Attr("a", n) for n in "pqrs"))
    assert items[3] == Compare(">", Call("max", (Attr("a", "x"), Attr("a", "y"))),
                               Aggregate("MIN", Attr("a", "z")))
    assert items[4].right == Str("it's") and items[5].right == Str("x")
    assert items[6] == Compare("=", Call("f", ()), Num(1500.0))


def test_and_binds_tighter_than_or():
    q = parse("SEQ(A a) WHERE a.x = 1 OR a.y = 2 AND a.z = 3")
    assert isinstance(q.where, Or) and isinstance(q.where.items[1], And)


def test_keywords_are_names_where_no_keyword_fits():
    q = parse("seq(SEQUENCE value, Stream from) where value.count > from.sum "
              "and from.value = time")
    assert q.pattern.items == (EventElem("SEQUENCE", "value"), EventElem("Stream", "from"))
    assert q.where.items[0] == Compare(">", Attr("value", "count"), Attr("from", "sum"))
    assert q.where.items[1] == Compare("=", Attr("from", "value"), Name("time"))


def test_comments_and_layout():
    q = parse("-- a comment\nPATTERN /* inline */ SEQ(A a) -- trailing\n"
              "WHERE a.x = 1 /* multi\nline */ WITHIN 2 hours")
    assert q == parse("SEQ(A a) WHERE a.x = 1 WITHIN 2h")
    assert q.where.pos == (3, 7)  # the expression, after WHERE


@pytest.mark.parametrize(("text", "within"), [
    ("2h", Within(2, "h")), ("8ms", Within(8, "ms")), ("5min", Within(5, "min")),
    ("1.5 s", Within(1.5, "s")), ("50K", Within(50000)), ("10k", Within(10000)),
    ("10", Within(10)),
])
def test_within_units(text, within):
    assert parse(f"SEQ(A a) WITHIN {text}").within == within


def test_return_aliases_and_select_without_group():
    q = parse("SELECT AVG(x) AS m FROM T STREAM RETURN Out(m AS mean, x)")
    assert q.group_by == () and q.where is None
    assert q.returns == Return("Out", (ReturnArg(Name("m"), "mean"), ReturnArg(Name("x"))))


# --------------------------------------------------------------------------- errors
def _error(text: str) -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as info:
        parse(text, source="q.cep")
    return info.value


def test_error_missing_paren():
    e = _error("PATTERN SEQ(A a, B b\nWHERE a.x = b.x")
    assert (e.line, e.column, e.text) == (2, 1, "WHERE")
    assert e.expected == ["')'", "'+'", "','"]
    assert str(e) == ("q.cep: line 2, column 1: unexpected 'WHERE'; expected ')', '+', ','")


def test_error_misspelt_keyword():
    e = _error("PATTERN SEQ(A a, B b)\nWHERE a.x = b.x\nWITHN 5ms")
    assert (e.line, e.column, e.text) == (3, 1, "WITHN")
    assert "'WITHIN'" in e.expected and "'RETURN'" in e.expected
    assert e.expected == sorted(e.expected) and len(e.expected) < 10
    assert "line 3, column 1" in str(e) and "'WITHIN'" in str(e)

    e = _error("PATERN SEQ(A a)")
    assert (e.line, e.column, e.text) == (1, 1, "PATERN")
    assert e.expected == ["'('", "'AND'", "'PATTERN'", "'SELECT'", "'SEQ'"]


def test_error_unexpected_character():
    e = _error("SEQ(A a) WHERE a.x # 3")
    assert (e.line, e.column, e.text) == (1, 20, "#")
    assert "a comparison operator" in e.expected and "'AND'" in e.expected
    assert "unexpected '#'" in str(e)


def test_error_premature_end():
    e = _error("SEQ(A a) WHERE a.x >\n")
    assert (e.line, e.column, e.text) == (1, 21, "end of input")
    assert e.expected == ["'('", "'-'", "'LENGTH'", "'SAME'", "a clock time", "a name",
                          "a number", "a string"]
    e = _error("")
    assert (e.line, e.column) == (1, 1) and "'SEQ'" in e.expected


@pytest.mark.parametrize(("text", "offending"), [
    ("SEQ(A a) WITHIN 2 foo", "foo"),
    ("SEQ(A a) WITHIN 2x", "x"),
    ("SEQ(A a) WITHIN 40°C", "40°C"),
    ("SEQ(A+ a[]) WHERE a[i*2].x = 1", "i*2"),
    ("SEQ(A+ a[]) WHERE a[0].x = 1", "0"),
    ("SEQ(A a) WHERE a.t > 25:00", "25:00"),
    ("SEQ(A a) WHERE f(DISTINCT a.x) > 1", "f"),
    ("SEQ(A a) WHERE COUNT(a.x, a.y) > 1", "COUNT"),
    ("SEQ(A a) WHERE a.s = 'open", "'"),
    ("SEQ(A a) WHERE a.x = 1 /* open", "/*"),
    ("SEQ(A a, B)", ")"),
    ("SEQ(A a) WHERE [task_id]", "["),
])
def test_other_errors(text, offending):
    e = _error(text)
    assert e.text == offending and e.expected and e.line == 1 and e.column >= 1


def test_error_pickles():
    e = _error("SEQ(A a) WHERE a.x >")
    back = pickle.loads(pickle.dumps(e))
    assert isinstance(back, QuerySyntaxError)
    assert (back.line, back.column, back.text, back.expected, back.source) == \
        (e.line, e.column, e.text, e.expected, e.source)
    assert str(back) == str(e)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([q for *_, q in LISTINGS]), st.integers(0, 10_000), st.integers(1, 3),
       st.sampled_from(["", ")", "(", ",", "#", "WHERE", "'", "/*", "[", "+", "9:99"]))
def test_mangled_listings_raise_only_query_syntax_error(query, at, width, insert):
    at %= len(query)
    text = query[:at] + insert + query[at + width:]
    try:
        parse(text)
    except QuerySyntaxError as e:
        assert e.line >= 1 and e.column >= 1


def test_no_lalr_conflicts(caplog):
    from lark import Lark
    from lark import logger as lark_logger

    from cep_core.lang.parser import GRAMMAR_FILE

    level = lark_logger.level
    lark_logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            Lark(GRAMMAR_FILE.read_text(encoding="utf-8"), parser="lalr", debug=True)
    finally:
        lark_logger.setLevel(level)
    assert not [r for r in caplog.records if "conflict" in r.getMessage().lower()]


def test_public_api():
    assert cep_core.parse is parse
    assert issubclass(cep_core.QuerySyntaxError, cep_core.QueryError)
    assert issubclass(cep_core.QuerySemanticError, ValueError)
