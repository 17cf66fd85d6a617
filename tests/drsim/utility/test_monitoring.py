"""The three DR tiers (drsim.utility.monitoring) on hand-computed cases: a few households with
known accumulated loads, their user events, the group's alerts and latch, the utility's
prediction time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cep_core
from drsim.scenario import ExpectedShare
from drsim.utility.group_and_utility_tiers import group_tier, utility_tier
from drsim.utility.monitoring import NOT_LATCHED, QUERIES, MonitoringPlan, check_queries, meter_tier
from drsim.utility.threshold import Thresholds

# 18:30-20:30, first test 18:50, δ = 5, m = 3 everywhere, γ_user 0.5, γ_group 0.4, 2 groups
PLAN = MonitoringPlan(1110, 1230, 1130, 5, 3, 3, 3, 0.5, 0.4, 1, 15, 2)


def gamma(group: int, plan: MonitoringPlan = PLAN) -> dict:
    """The constant γ_user of ``plan`` as the lookup γ[groupID, time] of one group."""
    return Thresholds.of(plan, np.ones(plan.n_groups, dtype=np.int64)).table(group)


def loads(fail: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Accumulated loads half a kWh above (fail) or below the expected ones."""
    lam = np.tile(np.arange(1, fail.shape[1] + 1, dtype=float), (fail.shape[0], 1))
    return lam + np.where(fail, 0.5, -0.5), lam


def test_plan_times():
    assert PLAN.test_times.tolist() == list(range(1130, 1230, 5))
    assert PLAN.ticks[0] == 1130 and PLAN.ticks[-1] == 1229


def test_meter_group_utility_by_hand():
    tests = len(PLAN.test_times)
    fail = np.zeros((3, tests), dtype=bool)
    fail[0] = True                           # fails every test: events from the 4th on
    fail[1, :3] = True                       # 3 failures (not enough), a pass, then 5
    fail[1, 4:9] = True
    acc, lam = loads(fail)
    m = meter_tier(PLAN, np.array([10, 11, 12]), 0, acc, lam)
    times = m.events.groupby("houseID")["time"].apply(list).to_dict()
    assert times == {10: list(range(1145, 1230, 5)), 11: [1165, 1170]}
    assert m.first_flag.tolist() == [1145, 1165, NOT_LATCHED]
    assert m.outputs.tolist() == [0, 0, 0, 1, 1, 1, 1, 2, 2] + [1] * 11
    assert m.processed.tolist() == [3] * tests
    # accumulated load at detection is the latest reading's
    first = m.events.iloc[0]
    assert first["accLoad"] == pytest.approx(acc[0, 3])

    g = group_tier(PLAN, 0, 3, m.events, gamma(0))
    # > 1.5 of 3 households flagged at 19:05 and 19:10; each test's alert holds 5 ticks
    assert g.alerts["time"].tolist() == list(range(1165, 1175))
    assert g.latch == 1168                   # the 4th consecutive alert
    assert g.events["time"].tolist() == [1168, 1169, 1170, 1171, 1172, 1173, 1174]

    u = utility_tier(PLAN, {0: g.latch, 1: NOT_LATCHED}, {0: 17.0})
    assert u.alerts["time"].iloc[0] == 1168  # 1 latched group > 0.4 × 2
    assert u.t_nc == 1171


def test_a_lone_flagged_household_does_not_alert_its_group():
    fail = np.zeros((4, len(PLAN.test_times)), dtype=bool)
    fail[0] = True
    fail[1, ::2] = True                      # never 4 in a row
    acc, lam = loads(fail)
    m = meter_tier(PLAN, np.arange(4), 1, acc, lam)
    assert set(m.events["houseID"]) == {0}
    g = group_tier(PLAN, 1, 4, m.events, gamma(1))
    assert g.alerts.empty and g.latch == NOT_LATCHED and g.events.empty
    u = utility_tier(PLAN, {0: NOT_LATCHED, 1: NOT_LATCHED}, {})
    assert u.t_nc == NOT_LATCHED and u.alerts.empty


def test_paper_parameters_give_the_earliest_detection_times():
    """Everyone fails from the first test: user 19:05, group 19:08, utility 19:11
    (docs/decisions.md, "Length and detection time")."""
    acc, lam = loads(np.ones((5, len(PLAN.test_times)), dtype=bool))
    m = meter_tier(PLAN, np.arange(5), 0, acc, lam)
    assert m.events["time"].min() == 1145
    g = group_tier(PLAN, 0, 5, m.events, gamma(0))
    assert g.latch == 1148
    assert utility_tier(PLAN, {0: g.latch, 1: g.latch}, {}).t_nc == 1151


def test_editing_a_query_text_changes_the_outcome():
    fail = np.zeros((3, len(PLAN.test_times)), dtype=bool)
    fail[0] = True
    acc, lam = loads(fail)
    edited = MonitoringPlan(*[getattr(PLAN, f) for f in (
        "t_start", "t_end", "t_first_test", "delta", "m_user", "m_group", "m_utility",
        "gamma_user", "gamma_group", "reading", "settlement", "n_groups")],
        queries=tuple({**QUERIES, "meter": QUERIES["meter"].replace(
            "LENGTH(a+[]) > m_user", "LENGTH(a+[]) > 1")}.items()))
    base = meter_tier(PLAN, np.arange(3), 0, acc, lam).events
    more = meter_tier(edited, np.arange(3), 0, acc, lam).events
    assert base["time"].min() == 1145 and more["time"].min() == 1135


def test_bad_query_replacements_are_reported():
    plan = MonitoringPlan(*[getattr(PLAN, f) for f in (
        "t_start", "t_end", "t_first_test", "delta", "m_user", "m_group", "m_utility",
        "gamma_user", "gamma_group", "reading", "settlement", "n_groups")],
        queries=tuple({**QUERIES, "group": "SEQ (groupAlertEvent a+[]) WHERE b.x > 1"}
                      .items()))
    with pytest.raises(Exception, match="monitoring.queries.group.*unknown variable 'b'"):
        check_queries(plan)


def test_group_tier_counts_its_work_per_tick():
    events = pd.DataFrame({"time": [1145, 1145, 1150], "houseID": [1, 2, 1],
                           "accLoad": [1.0, 2.0, 3.0]})
    g = group_tier(PLAN, 0, 3, events, gamma(0))
    tick = {t: i for i, t in enumerate(PLAN.ticks.tolist())}
    assert g.processed[tick[1145]] >= 2 and g.processed.sum() >= 3


def test_the_threshold_is_read_per_group_and_test_time():
    """Listing 6.2 reads γ[groupID, time]: raising it at 19:05 moves the first alert to
    the next test time (19:10) and the latch three ticks after it."""
    fail = np.ones((3, len(PLAN.test_times)), dtype=bool)
    acc, lam = loads(fail)
    m = meter_tier(PLAN, np.array([10, 11, 12]), 0, acc, lam)
    table = gamma(0)
    assert group_tier(PLAN, 0, 3, m.events, table).latch == 1148
    table[(0, 1145)] = 1.0  # 3 flagged households are not more than 1.0 × 3
    g = group_tier(PLAN, 0, 3, m.events, table)
    assert g.alerts["time"].min() == 1150 and g.latch == 1153


def test_a_replacement_text_may_use_the_printed_constant():
    """The printed ``γ_user × GroupSize[groupID]`` still works with a constant γ_user; with
    the expected share it names the unbound parameter."""
    printed = QUERIES["group_alert"].replace("γ[groupID, time]", "γ_user")
    fields = [getattr(PLAN, f) for f in (
        "t_start", "t_end", "t_first_test", "delta", "m_user", "m_group", "m_utility",
        "gamma_user", "gamma_group", "reading", "settlement", "n_groups")]
    constant = MonitoringPlan(*fields, queries=tuple({**QUERIES, "group_alert": printed}
                                                     .items()))
    check_queries(constant)
    fail = np.ones((3, len(PLAN.test_times)), dtype=bool)
    m = meter_tier(PLAN, np.arange(3), 0, *loads(fail))
    assert group_tier(constant, 0, 3, m.events, {}).latch == 1148
    fields[7] = ExpectedShare(method="expected")
    estimated = MonitoringPlan(*fields, queries=constant.queries)
    with pytest.raises(Exception, match="γ_user"):
        check_queries(estimated)


def test_households_monitored_in_blocks_give_what_one_stream_gives():
    """Listing 6.1 keeps one run per household, so monitoring the households as separate
    blocks (the threshold's replicas, ``streams``) counts the same work, flags and events
    as one stream of them all."""
    rng = np.random.default_rng(11)
    n, k = 60, len(PLAN.test_times)
    expected = np.cumsum(rng.uniform(0.05, 0.3, (n, k)), axis=1)
    acc = expected * (0.95 + rng.normal(0, 0.15, (n, k)))
    ids = np.arange(500, 500 + n)
    one = meter_tier(PLAN, ids, 0, acc, expected)
    blocks = meter_tier(PLAN, ids, 0, acc, expected, streams=3)
    assert one.outputs.sum() > 0
    for name in ("processed", "partial_matches", "outputs", "first_flag", "fetches"):
        np.testing.assert_array_equal(getattr(blocks, name), getattr(one, name))
    order = ["time", "houseID"]
    pd.testing.assert_frame_equal(blocks.events.sort_values(order, ignore_index=True),
                                  one.events.sort_values(order, ignore_index=True))
    with pytest.raises(ValueError, match="equal blocks"):
        meter_tier(PLAN, ids, 0, acc, expected, streams=7)


def test_the_utility_reads_its_alerts_whatever_type_their_return_names():
    """Listing 6.3 bottom reads utilityAlertEvent: an alert query whose RETURN names
    another type passes the check and still predicts (it matched nothing before)."""
    fields = [getattr(PLAN, f) for f in (
        "t_start", "t_end", "t_first_test", "delta", "m_user", "m_group", "m_utility",
        "gamma_user", "gamma_group", "reading", "settlement", "n_groups")]
    renamed = MonitoringPlan(*fields, queries=tuple({**QUERIES, "utility_alert": QUERIES[
        "utility_alert"].replace("utilityAlertEvent(", "alert(")}.items()))
    check_queries(renamed)
    latches, loads_ = {0: 1136, 1: 1140}, {0: 2.5, 1: 1.0}
    assert utility_tier(renamed, latches, loads_).t_nc == utility_tier(
        PLAN, latches, loads_).t_nc != NOT_LATCHED


def test_a_replacement_reading_what_its_tier_does_not_feed_it_is_refused():
    fields = [getattr(PLAN, f) for f in (
        "t_start", "t_end", "t_first_test", "delta", "m_user", "m_group", "m_utility",
        "gamma_user", "gamma_group", "reading", "settlement", "n_groups")]
    for name, old, new, words in [
            ("meter", "a[i].accLoad >", "a[i].load >", "no attribute 'load'"),
            ("group", "a[last].sumAccLoad)", "a[last].sumAccLoad AS sum)",
             "outputs carry no 'sumAccLoad'"),
            ("utility", "SEQ (utilityAlertEvent", "SEQ (utilityAlert", "'utilityAlert'")]:
        plan = MonitoringPlan(*fields, queries=tuple({
            **QUERIES, name: QUERIES[name].replace(old, new)}.items()))
        with pytest.raises(cep_core.QueryError, match=f"monitoring.queries.{name}: .*{words}"):
            check_queries(plan)
