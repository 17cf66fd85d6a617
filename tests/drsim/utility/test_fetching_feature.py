"""drsim.utility.fetching_feature on small hand-made inputs: the remote profiles' fetcher
given to the meter tier, the group leaders' γ delays given to the group tier, the chunk
rows and their merge, summary.json's ``remote`` and the headline row."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
from small_scenarios import quickstart

from drsim.scenario import RemoteData, scenario_from_dict
from drsim.utility.features import FeatureChunk, FeatureRun
from drsim.utility.fetching import FetchCounts, MeterFetch
from drsim.utility.fetching_feature import AlertDelays, RemoteCounts, RemoteProfiles
from drsim.utility.monitoring import MonitoringPlan

#: 18:30-18:50, tests at 18:35, 18:40, 18:45; 2 groups
PLAN = MonitoringPlan(1110, 1130, 1115, 5, 1, 1, 0, 0.4, 0.4, 1, 15, 2)
#: one chunk's rows, without updates
ROWS = pd.DataFrame({"chunk": [0], "group": 0, "pass": ["traditional"],
                     "fetched": [[0] * 10], "versions": 0, "updated_flags": None})


def feature(cfg=None) -> RemoteProfiles:
    return RemoteProfiles(cfg, PLAN, 3, (1, 501))


def test_the_feature_is_read_from_the_scenario():
    off = RemoteProfiles.of(scenario_from_dict(quickstart(1200)))
    on = RemoteProfiles.of(scenario_from_dict(quickstart(1200, remote={"strategy": "BL1"})))
    assert not off.active and on.active and on.cfg.strategy == "BL1"
    # quickstart's three groups of 400 households, household ids from 0
    assert on.group_firsts == (0, 400, 800) and on.seed == 7
    assert off.summary(None, None) is None  # local tables: no section
    assert not on.updated and not on.needs_runs and on.readings_refusal is None
    updated = RemoteProfiles.of(scenario_from_dict(quickstart(1200, remote={"updates": {}},
                                                             error=0.1)))
    # the updates read the readings before the notice: the chunk task keeps the runs, and
    # recorded readings (of the program) cannot feed them, nor can a stream
    assert updated.updated and updated.needs_runs and "notice" in updated.readings_refusal
    assert not updated.streamed and on.streamed
    assert updated.notice == 17 * 60 + 30 and updated.sizes == (400, 400, 400)
    # without an M&V error they publish nothing: readings and a stream can run them
    exact = RemoteProfiles.of(scenario_from_dict(quickstart(1200, remote={"updates": {}})))
    assert exact.updated and exact.readings_refusal is None and exact.streamed


def test_each_run_of_the_meter_tier_gets_its_own_fetcher_of_the_chunks_group():
    f = feature(RemoteData(gateway_households=250))
    chunk = FeatureChunk(PLAN, 3, 1, np.arange(501, 1001))
    a, b = f.meter_inputs(chunk)["fetch"], f.meter_inputs(chunk)["fetch"]
    assert isinstance(a, MeterFetch) and a is not b
    # gateways count from the group's first household, 501: two gateways of 250
    assert a.group_first == 501 and a.first == 0 and a.devices == 2


def test_the_group_leaders_alerts_wait_for_their_gamma_fetch():
    f = feature(RemoteData())
    thresholds = SimpleNamespace(gamma=np.full((2, 3), 0.1))
    inputs = f.merged_group_inputs(f.merge(ROWS), thresholds)
    got = inputs["alert_delays"]
    assert isinstance(got, AlertDelays) and got.delays.shape == (2, 3)
    assert "gamma" not in inputs  # the profiles are not updated: the table's γ
    delays = AlertDelays(PLAN, np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0]]))
    events = pd.DataFrame({"time": [1115], "delay": [0.25]})
    # group 0: the user event's quarter minute at 18:35, its γ's 1.5 minutes at 18:40
    assert delays(events, 0).tolist() == [1, 2, 0]
    assert delays(events.iloc[:0], 1).tolist() == [0, 0, 0]


def test_chunk_rows_merge_per_pass():
    f = feature(RemoteData())
    counts = FetchCounts(requests=2, bytes=32, decisions=2)
    chunk = FeatureChunk(PLAN, 0, 0, np.arange(2), meter=SimpleNamespace(
        fetched=counts.as_list()))
    row = f.chunk_rows(chunk, "traditional")
    assert row["versions"] == [0] and row["updated_flags"] == [None]
    rows = pd.DataFrame({"chunk": [0, 1, 0], "group": 0,
                         "pass": ["traditional", "traditional", "expected"],
                         "fetched": [row["fetched"][0]] * 3, "versions": 0,
                         "updated_flags": None})
    got = f.merge(rows)
    assert got.meter["traditional"].requests == 4 and got.meter["expected"].bytes == 32
    assert got.lambda_versions == 0 and got.updated_flags is None


def test_the_chunks_updates_are_merged_once_per_chunk_by_group():
    f = feature(RemoteData(updates={}))
    rows = pd.DataFrame({"chunk": [0, 0, 1, 1], "group": [0, 0, 1, 1],
                         "pass": ["expected", "traditional"] * 2,
                         "fetched": [FetchCounts().as_list()] * 4,
                         "versions": [6, 6, 3, 3],
                         "updated_flags": [[1, 2, 3], [1, 2, 3], [0, 0, 4], [0, 0, 4]]})
    got = f.merge(rows)
    assert got.lambda_versions == 9  # the traditional pass's rows
    assert got.updated_flags == ((1, 2, 3), (0, 0, 4))


def test_the_summary_and_the_headline():
    f = feature(RemoteData(strategy="LzEval"))
    merged = RemoteCounts({"traditional": FetchCounts(requests=4, bytes=2_000_000,
                                                      decisions=2, delay_us=3_000_000)})
    outcome = {"traditional": SimpleNamespace(t_nc=1125, predicted=True)}
    run = FeatureRun(PLAN, ("a", "b"), np.array([1, 1]), outcome, {}, lambda name: {})
    section = f.summary(merged, run)
    assert section["config"]["strategy"] == "LzEval" and section["day_of_adjustment"] is None
    assert section["meter_tier"]["data_delay_avg_seconds"] == 1.5
    assert section["group_tier"]["requests"] == 2 * 3  # 2 leaders, 3 tests, fetched when needed
    assert section["updates"] is None and section["meter_tier"]["versions_published"] == 0
    assert section["utility_noncompliance_time"] == "18:45"
    assert RemoteProfiles.headline(section) == [
        ("profiles fetched (LzEval): requests / MB / waited s / avg delay s",
         "4 / 2.00 / 0 / 1.50")]
    assert RemoteProfiles.headline(None) == []


def test_the_headline_shows_the_updates():
    section = {"config": {"strategy": "Hybrid"}, "updates": {"count": 36},
               "meter_tier": {"requests": 4, "bytes": 64, "versions_published": 40,
                              "refetches": 2},
               "group_tier": {"versions_published": 3, "refetches": 1}}
    rows = RemoteProfiles.headline(section)
    assert rows[1] == ("profile updates: λ / γ versions published, refetches", "40 / 3 / 3")
    assert len(RemoteProfiles.headline({**section, "updates": None})) == 1
