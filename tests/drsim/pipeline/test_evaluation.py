"""drsim.pipeline.evaluation on small hand-made inputs: latches and t_nc from the tiers'
rows, when each group stops being tested, the costs as deployed, household precision and
recall against the realised non-compliance; every expected
value is counted by hand in the comments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from drsim.pipeline.evaluation import (
    TierOutcome,
    costs,
    flagged_fraction,
    precision_recall,
    stops,
    tier_outcome,
)
from drsim.pipeline.tasks import TIERS, UTILITY
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan

#: 18:30-19:10, tests at 18:35 .. 19:05 (7, δ 5), readings every 5 minutes, then every 10
#: after a latch; 2 groups
PLAN = MonitoringPlan(1110, 1150, 1115, 5, 1, 1, 0, 0.4, 0.4, 5, 10, 2)
SIZES = np.array([2, 3])
#: group 0 latched at 18:40, group 1 never; the utility predicted at 18:45
OUTCOME = TierOutcome([1120, NOT_LATCHED], [np.array([]), np.array([])], 1125)
#: lost readings per group and reading slot (18:30, 18:35, ..., 19:05)
LOST = np.array([[0, 0, 1, 1, 2, 0, 0, 0],
                 [0, 0, 0, 1, 5, 1, 0, 0]])


def tiers(*rows) -> pd.DataFrame:
    """Rows of TIERS from (pass, group, kind, time, load, processed, partial_matches), no
    device figures."""
    return pd.DataFrame(rows, columns=TIERS.names[:-1]).assign(device=None)


def test_tier_outcome_reads_latches_alerts_and_the_prediction_of_one_pass():
    rows = tiers(("traditional", 0, "alert", 1120, 0.5, 0, 0),
                 ("traditional", 0, "alert", 1121, 0.5, 0, 0),
                 ("traditional", 0, "event", 1122, 0.5, 0, 0),
                 ("traditional", 0, "event", 1121, 0.5, 0, 0),
                 ("traditional", 2, "event", 1127, 0.5, 0, 0),
                 ("traditional", 1, "work", 1120, 0.0, 2, 3),
                 ("traditional", UTILITY, "t_nc", 1127, 0.0, 0, 0),
                 ("expected", 1, "event", 1118, 0.5, 0, 0),
                 ("expected", UTILITY, "t_nc", NOT_LATCHED, 0.0, 0, 0))
    trad = tier_outcome(rows, "traditional", 3)
    assert trad.latch == [1121, NOT_LATCHED, 1127]  # the first event of each group
    assert [a.tolist() for a in trad.alert_ticks] == [[1120, 1121], [], []]
    assert trad.t_nc == 1127 and trad.predicted
    expected = tier_outcome(rows, "expected", 3)
    assert expected.latch == [NOT_LATCHED, 1118, NOT_LATCHED]
    assert expected.t_nc == NOT_LATCHED and not expected.predicted
    assert tier_outcome(rows, "adaptive", 3).t_nc == NOT_LATCHED  # no rows: no prediction


def test_a_group_stops_at_its_latch_or_the_prediction_or_the_program_end():
    latched = TierOutcome([1120, NOT_LATCHED, 1140], [], 1125)
    assert stops(PLAN, latched).tolist() == [1120, 1125, 1125]
    unpredicted = TierOutcome([1120, NOT_LATCHED, 1140], [], NOT_LATCHED)
    assert stops(PLAN, unpredicted).tolist() == [1120, 1149, 1140]


def meter_work() -> np.ndarray:
    """(groups, 5, tests): processed, partial matches, user events, shed, λ fetches; the
    values after each group's stop (group 0: 2 tests, group 1: 3) are large, so that
    counting them shows."""
    big = 1000
    work = np.full((2, 5, 7), big)
    work[0, :, :2] = [[2, 2], [5, 5], [1, 2], [0, 1], [2, 1]]
    work[1, :, :3] = [[3, 3, 3], [1, 1, 1], [0, 0, 1], [1, 0, 0], [3, 3, 3]]
    return work


def cost_rows() -> pd.DataFrame:
    return tiers(("traditional", 0, "work", 1118, 0.0, 2, 3),
                 ("traditional", 0, "work", 1120, 0.0, 1, 1),
                 ("traditional", 0, "work", 1121, 0.0, 10, 10),  # after the latch
                 ("traditional", 0, "event", 1120, 0.5, 0, 0),
                 ("traditional", 0, "event", 1121, 0.5, 0, 0),  # after the latch
                 ("traditional", 1, "work", 1125, 0.0, 4, 0),
                 ("traditional", 1, "work", 1126, 0.0, 100, 100),  # after t_nc
                 ("traditional", UTILITY, "work", 1124, 0.0, 3, 4),
                 ("traditional", UTILITY, "work", 1125, 0.0, 3, 4),
                 ("traditional", UTILITY, "work", 1126, 0.0, 50, 50),  # after t_nc
                 ("traditional", UTILITY, "t_nc", 1125, 0.0, 0, 0),
                 ("expected", 0, "work", 1118, 0.0, 70, 70),  # another pass
                 ("expected", 0, "event", 1118, 0.5, 0, 0))


def test_costs_count_each_tier_up_to_its_groups_stop():
    got = costs(PLAN, SIZES, meter_work(), cost_rows(), "traditional", OUTCOME)
    # readings: group 0 (2 meters) at 18:30, 18:35, 18:40, then 18:50, 19:00: 2 × 5;
    # group 1 (3 meters) 18:30 .. 18:45, then 18:55, 19:05: 3 × 6; less the shed ones
    # of the tests counted (group 0: 18:35, 18:40; group 1: 18:35 .. 18:45): 1 + 1
    assert got["communication"] == {"meter_readings": 10 + 18 - 2,
                                    "remote_lambda_fetches": 3 + 9, "user_events": 3 + 1,
                                    "silent_meter_events": 0, "group_events": 1,
                                    "total": 26 + 12 + 4 + 0 + 1}
    # meter: processed + partial matches (4 + 10, 9 + 3); group 0: 2 + 3 + 1 + 1,
    # group 1: 4; utility up to t_nc: 2 × (3 + 4)
    assert got["computation"] == {"meter": 14 + 12, "group": 7 + 4, "utility": 14,
                                  "total": 26 + 11 + 14}


def test_events_the_group_leaders_and_the_utility_shed_are_not_sent():
    shed = pd.concat([cost_rows(), tiers(
        ("traditional", 0, "user_events_shed", 1120, 0.0, 2, 0),
        ("traditional", 0, "user_events_shed", 1125, 0.0, 50, 0),  # after the latch
        ("traditional", 1, "user_events_shed", 1120, 0.0, 1, 0),
        ("traditional", 0, "group_event_shed", 1120, 0.0, 1, 0),  # the latch's event
        ("traditional", 0, "group_event_shed", 1121, 0.0, 1, 0),  # after the latch
        ("expected", 0, "user_events_shed", 1120, 0.0, 9, 0))], ignore_index=True)
    got = costs(PLAN, SIZES, meter_work(), shed, "traditional", OUTCOME)
    plain = costs(PLAN, SIZES, meter_work(), cost_rows(), "traditional", OUTCOME)
    # user events of the tests counted: group 0 up to its latch (18:40: 2 shed), group 1
    # up to t_nc (18:45: 1 shed); the group event of group 0's latch is not sent
    assert got["communication"]["user_events"] == plain["communication"]["user_events"] - 3
    assert got["communication"]["group_events"] == plain["communication"]["group_events"] - 1
    assert got["computation"] == plain["computation"]  # the work rows count what ran


def test_costs_leave_out_lost_readings_and_count_the_silent_meters():
    silent = np.zeros((2, 7), dtype=np.int64)
    silent[0] = [0, 1, 1, 9, 9, 9, 9]
    silent[1] = [0, 0, 2, 9, 9, 9, 9]
    got = costs(PLAN, SIZES, meter_work(), cost_rows(), "traditional", OUTCOME, LOST, silent)
    # lost of the readings sent: group 0 slots 0, 1, 2, 4, 6: 1 + 2; group 1 slots 0, 1,
    # 2, 3, 5, 7: 1 + 1
    assert got["communication"]["meter_readings"] == 26 - 3 - 2
    assert got["communication"]["silent_meter_events"] == 1 + 2
    assert got["communication"]["total"] == 21 + 12 + 4 + 3 + 1


def test_without_a_prediction_the_utility_and_unlatched_groups_count_to_the_end():
    outcome = TierOutcome([1120, NOT_LATCHED], [], NOT_LATCHED)
    got = costs(PLAN, SIZES, meter_work(), cost_rows(), "traditional", outcome)
    assert got["computation"]["utility"] == 7 + 7 + 100
    assert got["computation"]["group"] == 7 + 4 + 200
    # group 1 read every 5 minutes for the whole program: 3 × 8; every test counted
    assert got["communication"]["meter_readings"] == 10 + 24 - 1 - (1 + 4 * 1000)


def test_precision_and_recall_compare_the_flags_by_each_stop_with_the_realised_outcome():
    times = np.array([1115, 1120, 1125])
    stop = np.array([1120, 1125])
    # (groups, first flag at 18:35, 18:40, 18:45, never; compliant, non-compliant)
    outcomes = np.array([[[1, 2], [0, 1], [3, 4], [5, 6]],
                         [[0, 0], [1, 0], [0, 2], [1, 1]]])
    precision, recall, counts = precision_recall(outcomes, times, stop)
    # flagged by the stop: group 0 at 18:35, 18:40; group 1 at 18:35 .. 18:45
    # true positives 2 + 1 + 0 + 0 + 2; false positives 1 + 0 + 0 + 1 + 0; false
    # negatives: group 0 flagged after its stop (4) or never (6), group 1 never (1)
    assert counts == {"true_positives": 5, "false_positives": 2, "false_negatives": 11,
                      "households": 22 + 5, "noncompliant_households": 13 + 3}
    assert precision == pytest.approx(5 / 7) and recall == pytest.approx(5 / 16)


def test_precision_and_recall_are_none_without_flags_or_noncompliant_households():
    times = np.array([1115, 1120])
    never_flagged = np.array([[[0, 0], [0, 0], [2, 3]]])
    assert precision_recall(never_flagged, times, np.array([1149]))[:2] == (None, 0.0)
    all_compliant = np.array([[[2, 0], [0, 0], [1, 0]]])
    assert precision_recall(all_compliant, times, np.array([1149]))[:2] == (0.0, None)


def test_the_flagged_fraction_is_the_user_events_per_household():
    work = np.zeros((2, 5, 3))
    work[:, 2] = [[1, 2, 0], [3, 0, 6]]
    assert flagged_fraction(work, np.array([2, 3])).tolist() == [[0.5, 1.0, 0.0],
                                                                [1.0, 0.0, 2.0]]
