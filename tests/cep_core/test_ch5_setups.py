"""The set-ups of the Ch. 5 reproduction (experiments/ch5_setups.py) and the gains it
reports (experiments/ch5_gains.py): the literal set-up is the one the reproduction always
ran, the paper set-up is it with every change, a short paper run finds the same matches
with every strategy, and the summary line has the form the checks read."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields

import pytest

import cep_core
from experiments import ch5_data, ch5_gains
from experiments.ch5_setups import CHANGES, LITERAL, PAPER, query_text, record, with_changes
from experiments.reproduce_ch5 import CALIBRATION_TOLERANCE, STRATEGIES, calibrate, run_one

LINE = re.compile(r"paper setup: Hybrid below every baseline at p50 in \d+ of 16; "
                  r"gain over the best baseline at p50: max \d+\.\dx, median \d+\.\dx")


def test_the_literal_setup_is_the_reading_the_reproduction_always_ran():
    assert LITERAL.queries() == ch5_data.QUERIES
    assert LITERAL.windows == ch5_data.WINDOWS and LITERAL.events == ch5_data.EVENTS
    assert LITERAL.options == {} and LITERAL.capacity == ch5_data.KEYS // 10


def test_the_paper_setup_is_the_literal_one_with_every_change():
    assert with_changes(LITERAL, list(CHANGES), "paper") == PAPER
    for name in CHANGES:  # each change alone sets something the literal set-up lacks
        one = with_changes(LITERAL, [name], name)
        assert any(getattr(one, f.name) != getattr(LITERAL, f.name)
                   for f in fields(LITERAL) if f.name != "name"), name
    assert PAPER.options == {"blocking": "match", "bl1_capacity": 1,
                             "latency_from": "start", "latency_to": "match",
                             "order": "state", "carry_waits": False}
    assert "A e, B f, C g, D h" in PAPER.queries("non-greedy")["Q5"]
    assert "B e, C f, A g, D h" in PAPER.queries("greedy")["Q5"]
    assert set(PAPER.queries()) == {"Q5", "Q5L", "Q6"}
    assert "REMOTE[d.v1, d.v2]" in PAPER.queries()["Q5L"]
    assert query_text("Q6", 2, "a").count("REMOTE[a.v") == 2


def _first_after(events, after, typ, key):
    return next(e["id"] for e in events[after + 1:] if e["type"] == typ
                and e["ID"] == key)


def test_under_first_event_the_first_d_of_the_id_after_c_decides():
    """Non-greedy Q5 of the paper set-up: in every match ``d`` is the first D of a's ID
    after ``c`` and passes ``d.v1 <= a.v1``; the same query without the NEG element
    also matches later D events (so the NEG is what makes the first one decide)."""
    events = ch5_data.stream("DS3", 3_000, 1.0, seed=3, ids=10)
    text = PAPER.queries("non-greedy")["Q5"].format(window=4_000.0)
    assert PAPER.queries("greedy")["Q5"] == query_text("Q5", 2, "a")
    run = {"remote": {"REMOTE": record}}
    found = cep_core.compile(text, **run).matches(events, policy="skip-till-next-match")
    assert len(found) > 20
    for m in found:
        a = events[m["a"]]
        assert m["d"] == _first_after(events, m["c"], "D", a["ID"])
        assert events[m["d"]]["v1"] <= a["v1"]
    loose = cep_core.compile(text.replace("NEG D n1, ", ""), **run).matches(
        events, policy="skip-till-next-match")
    assert any(m["d"] != _first_after(events, m["c"], "D", events[m["a"]]["ID"])
               for m in loose)


def test_a_baseline_match_of_released_q5_waits_for_the_fetches_its_last_event_makes():
    """Non-greedy Q5 in the released pattern: the D that completes a match is the ``d``
    of the partial matches its ``e`` started, so with the released stamp (the last
    event only) BL2's matches wait for fetches only when earlier states go first."""
    made = with_changes(LITERAL, [c for c in CHANGES if c != "state_order"], "made")
    rows = {name: run_one((setup, "DS3", "Q5", "non-greedy", "cost", "BL2", 2_000, 0.5))
            for name, setup in (("made", made), ("state", PAPER))}
    assert rows["made"]["matches"] == rows["state"]["matches"] > 20
    assert rows["made"]["waited"] == pytest.approx(rows["state"]["waited"])
    assert rows["state"]["p50"] > rows["made"]["p50"] + 10.0  # [µs]: fetches of 60+ µs


def test_the_calibration_brings_hybrids_median_to_its_target():
    """The unit cost of the paper set-up gives Hybrid's median of non-greedy Q5 over DS3
    the target, within the tolerance, though the median is not linear in it."""
    with ThreadPoolExecutor(1) as pool:
        u = calibrate(PAPER, 2_000, pool)
    p50 = run_one((PAPER, "DS3", "Q5", "non-greedy", "cost", "Hybrid", 2_000, u))["p50"]
    assert abs(p50 - PAPER.cost[1]) <= CALIBRATION_TOLERANCE * PAPER.cost[1]


def test_a_short_paper_run_finds_the_same_matches_with_every_strategy():
    rows = [run_one((PAPER, "DS3", "Q6", "non-greedy", "cost", s, 400, 0.1))
            for s in STRATEGIES]
    assert len({r["matches"] for r in rows}) == 1 and rows[0]["matches"] > 0
    assert all(r["utilisation"] > 0 for r in rows)
    g = ch5_gains.gains(ch5_gains.groups(rows)[("DS3", "Q6", "non-greedy", "cost")])
    best = min(r["p50"] for r in rows if r["strategy"] in ("BL1", "BL2", "BL3"))
    assert g["best"] == pytest.approx(best / rows[-1]["p50"])


def test_the_summary_line_counts_the_sixteen_configurations():
    def row(d, q, s, c, strategy, p50):
        return {"dataset": d, "query": q, "selection": s, "cache": c,
                "strategy": strategy, "p50": p50, "p95": 2 * p50}
    rows = []
    for i, (d, q, s, c) in enumerate((d, q, s, c) for d in ("DS3", "DS4")
                                     for q in ("Q5", "Q6") for s in ("greedy", "non-greedy")
                                     for c in ("cost", "lru")):
        rows += [row(d, q, s, c, "Hybrid", 10.0), row(d, q, s, c, "BL2", 10.0 + 10 * i),
                 row(d, q, s, c, "BL3", 400.0)]
        if c == "cost":
            rows.append(row(d, q, s, c, "BL1", 300.0))
    line = ch5_gains.summary_line(rows)
    assert LINE.fullmatch(line), line
    # BL2 is the best baseline: gains 1, 2, .., 16; Hybrid below it in 15 (not at 1.0x)
    assert "in 15 of 16" in line and "max 16.0x" in line and "median 8.5x" in line
