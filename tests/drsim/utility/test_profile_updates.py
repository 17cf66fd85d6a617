"""The rule of the utility's updates of the profiles (drsim.utility.profile_updates) and
its application to the chunks and groups (drsim.utility.updated_profiles): when it
updates, which readings it reads, which elements get a version, and the served values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cep_core.remote import Versions
from cep_core.remote.batch import element_hash
from drsim.scenario import ProfileUpdates, RemoteData, Scenario
from drsim.utility.fetching import FetchCounts, MeterFetch, group_fetches, served_values
from drsim.utility.monitoring import MonitoringPlan, meter_tier
from drsim.utility.profile_updates import evidence_ends, published, update_times
from drsim.utility.updated_profiles import gamma_versions, schedule

#: 18:30-18:50, tests at 18:35, 18:40, 18:45; 2 groups
PLAN = MonitoringPlan(1110, 1130, 1115, 5, 1, 1, 0, 0.4, 0.4, 1, 15, 2)


def test_updates_run_from_the_notice_to_the_last_test_and_read_nothing_after_the_notice():
    times = update_times(1050, 1125, 25)
    assert times.tolist() == [1050, 1075, 1100, 1125]
    assert evidence_ends(times, 1050).tolist() == [1050] * 4
    assert evidence_ends(np.array([1000, 1060]), 1050).tolist() == [1000, 1050]
    with pytest.raises(ValueError, match="every 0 minutes"):
        update_times(1050, 1125, 0)
    # default cadence: every test interval δ
    times, ends = schedule(PLAN, ProfileUpdates(), 1050)
    assert times[0] == 1050 and np.diff(times).tolist() == [PLAN.delta] * (len(times) - 1)
    assert times[-1] <= PLAN.test_times[-1] < times[-1] + PLAN.delta
    assert set(ends.tolist()) == {1050}


def test_only_changed_elements_of_tests_not_yet_past_get_a_version():
    keys, tests = np.array([3, 4]), np.array([1115, 1120, 1125])
    table = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    calls = []

    def estimate(end):
        calls.append(end)
        # evidence up to 1110 rescales household 3; from 1118 on household 4 too
        return table * ([[1.5], [1.0]] if end < 1118 else [[1.5], [2.0]])

    times = np.array([1110, 1118, 1119])
    v = published("λ", keys, tests, times, np.minimum(times, 1119) - [0, 0, 1], estimate,
                  table)
    assert calls == [1110, 1118]  # the third update reads the second's evidence
    rows = pd.DataFrame({"publish": v.times, "value": v.values})
    # at 1110 household 3's three tests; at 1118 household 4's tests from 1120 on only
    assert rows["publish"].value_counts().to_dict() == {1110.0: 3, 1118.0: 2}
    assert sorted(rows.loc[rows["publish"] == 1118.0, "value"]) == [4.0, 6.0]
    unchanged = published("λ", keys, tests, times, times, lambda end: table, table)
    assert len(unchanged) == 0


def test_gamma_versions_and_the_values_each_test_was_served():
    gamma = np.full((2, 3), 0.1)
    updated = gamma.copy()
    updated[1, 1:] = 0.2
    v = gamma_versions(PLAN, ProfileUpdates(), 1050, gamma, updated)
    assert len(v) == 2 and set(v.times.tolist()) == {1050.0}
    assert len(gamma_versions(PLAN, ProfileUpdates(), 1050, gamma, None)) == 0
    fixed = RemoteData(strategy="PFetch",
                       latency={"kind": "fixed", "seconds": 3.0})
    got = group_fetches(PLAN, fixed, 2, 1, v)
    # published at the notice, before every fetch: every test reads the new version
    assert got.served.tolist() == [[0, 0, 0], [0, 1, 1]]
    assert got.counts.refetches == got.counts.invalidations == 0
    assert served_values("γ", np.arange(2), PLAN.test_times, gamma, v,
                         got.served).tolist() == updated.tolist()


def test_a_version_published_after_the_fetch_is_fetched_again_and_counted():
    plan = MonitoringPlan(1110, 1130, 1115, 5, 1, 1, 0, 0.4, 0.4, 1, 15, 1)
    ids = np.array([0, 1], dtype=np.int64)
    expected = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    # household 1's element of 18:45 gets a version at 18:42, after its prefetch
    v = Versions("λ", [np.array([1]), np.array([1125])], np.array([1122.0]),
                 np.array([2.5]))
    cfg = RemoteData(strategy="Hybrid", latency={"kind": "fixed", "seconds": 3.0},
                     gateway_households=10)
    fetch = MeterFetch(plan, cfg, ids, 0, 7, v)
    # household 1 fails at 18:40 (2.25 > 2.0) and at 18:45 only against the new version
    used = np.array([[1.0, 2.0, 3.0], [1.0, 2.25, 2.75]])
    m = meter_tier(plan, ids, 0, used, expected, fetch=fetch)
    counts = FetchCounts(*m.fetched)
    assert counts.refetches == 1 and counts.invalidations == 1
    assert counts.requests == 3 * 2 + 1  # each element once, household 1's 18:45 twice
    assert fetch.fetcher.report()["versions"].tolist() == [0, 0, 0, 0, 0, 1]
    # m_user = 1: two failed tests in a row raise a user event, at 18:45
    assert m.outputs.tolist() == [0, 0, 1]
    assert meter_tier(plan, ids, 0, used, expected).outputs.tolist() == [0, 0, 0]


def test_scenario_key():
    s = Scenario(name="u", seed=1, households=3, groups=[{"name": "g", "size": 3}],
                 monitoring={"remote": {"updates": {}}})
    assert s.monitoring.remote.updates == ProfileUpdates()
    assert Scenario(name="u", seed=1, households=3, groups=[{"name": "g", "size": 3}],
                    monitoring={"remote": {}}).monitoring.remote.updates is None
    assert element_hash("γ", [np.array([1]), np.array([1140])]).dtype == np.uint64
