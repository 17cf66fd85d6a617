"""The profiles the utility keeps updating (monitoring.remote.updates, §6.3.4) in whole runs:
without an M&V error they change nothing; with a per-household error they are what the
day-of adjustment is, for OP only; BL reads the static profiles; the counters reach
summary.json."""

from __future__ import annotations

import time

import pytest
from small_scenarios import quickstart

from drsim.pipeline import stages as pipeline
from drsim.pipeline.backend import SerialBackend
from drsim.pipeline.tasks import user_events
from drsim.results.summary import build
from drsim.scenario import scenario_from_dict
from drsim.utility import updated_profiles
from drsim.utility.features import plain_twin

HOUSEHOLDS = 2400  # quickstart's three groups of 800: two predicted non-compliant
ZERO = {"kind": "fixed", "seconds": 0.0}
ADJUST = {"window_minutes": 180, "cap": 0.2}
ERROR = {"error": 0.1}
#: the summary sections the monitoring decides (the M&V estimates' own, such as the
#: goal and the households' Eq. 6.2 truth, are the day's M&V and not the profiles served)
TIER_KEYS = ("utility_noncompliance_time", "group_noncompliance_times",
             "groups_compliant_at_prediction", "expected_pass_noncompliance_time",
             "expected_pass_group_noncompliance_times", "expected_pass_groups_latched")


def _run(data: dict) -> tuple[pipeline.Run, dict]:
    run = pipeline.run(scenario_from_dict(data, "updates.yaml"), SerialBackend())
    run = run.timed(0.0, time.perf_counter())
    return run, build(run.simulation, run)


def _events(run: pipeline.Run, name: str):
    rows = user_events(SerialBackend().collect(run.monitored.user_events).to_pandas())
    return rows[rows["pass"] == name].drop(columns="pass").reset_index(drop=True)


def _same_tiers(a: pipeline.Run, b: pipeline.Run, names=("expected", "traditional")) -> None:
    for name in names:
        ours, theirs = a.monitored.outcome[name], b.monitored.outcome[name]
        assert ours.latch == theirs.latch and ours.t_nc == theirs.t_nc
        assert _events(a, name).equals(_events(b, name)), name
    rows = ["kind", "pass", "group", "time", "load", "processed", "partial_matches"]
    tiers = a.monitored.tier_rows
    mine = tiers[tiers["pass"].isin(names)].reset_index(drop=True)[rows]
    assert mine.equals(b.monitored.tier_rows[rows])


@pytest.fixture(scope="module")
def exact():
    """Same-day M&V without error: updated (blocking fetches, no latency) and plain. The
    updated run re-estimates for real: a run skips the re-estimate when the M&V is exact
    (``updated_profiles.mv_is_exact``), and this checks that it would publish nothing."""
    data = quickstart(HOUSEHOLDS, remote={"strategy": "BL1", "latency": ZERO, "updates": {}})
    assert updated_profiles.mv_is_exact(scenario_from_dict(data, "updates.yaml"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(updated_profiles, "mv_is_exact", lambda scenario: False)
        updated = _run(data)
    return updated, _run(quickstart(HOUSEHOLDS))


@pytest.fixture(scope="module")
def erred():
    """A 10 % M&V error per household: updated, and plain with the day-of adjustment."""
    return (_run(quickstart(HOUSEHOLDS, remote={"strategy": "Hybrid", "latency": ZERO,
                                                "updates": {}}, **ERROR)),
            _run(quickstart(HOUSEHOLDS, **ERROR, day_of_adjustment=ADJUST)))


def test_without_an_mv_error_the_updates_change_nothing(exact):
    (run, updated), (plain_run, plain) = exact
    _same_tiers(run, plain_run)
    for key in ("prediction", "deficit_at_prediction", "second_event", "reduction_mwh",
                "cost", "monitoring"):
        assert updated[key] == plain[key], key
    remote = updated["remote"]
    assert remote["meter_tier"]["versions_published"] == 0
    assert remote["group_tier"]["versions_published"] == 0
    assert remote["updates"]["first"] == "17:30" and remote["updates"]["readings_until"] \
        == "17:30"


def test_with_a_household_error_op_reads_what_the_day_of_adjustment_publishes(erred):
    (run, updated), (adjusted_run, adjusted) = erred
    _same_tiers(run, adjusted_run)
    for key in TIER_KEYS:
        assert updated["prediction"][key] == adjusted["prediction"][key], key
    assert updated["prediction"]["predicted"]  # the adjusted profiles detect
    # the same households flagged; whether each is truly non-compliant (Eq. 6.2) is
    # judged against the day's M&V estimates, which the adjustment changes and the
    # updates (what the devices read) do not
    ours = updated["prediction"]["household_confusion"]
    theirs = adjusted["prediction"]["household_confusion"]
    assert ours["true_positives"] + ours["false_positives"] == \
        theirs["true_positives"] + theirs["false_positives"]


def test_the_counters_reach_the_summary(erred):
    (run, updated), _ = erred
    remote = updated["remote"]
    meter, group = remote["meter_tier"], remote["group_tier"]
    tests = len(run.monitored.plan.test_times)
    # a rescaled household's λ changes at every test; every group's γ is re-estimated
    assert 0 < meter["versions_published"] <= HOUSEHOLDS * tests
    assert meter["versions_published"] % tests == 0
    assert 0 < group["versions_published"] <= 3 * tests
    # published at the notice, before any fetch: nothing to invalidate or fetch again
    for tier in (meter, group):
        assert tier["invalidations"] == tier["refetches"] == 0
    assert remote["config"]["updates"] == {"every_minutes": None, **ADJUST}
    assert remote["updates"]["count"] == len(range(17 * 60 + 30, 20 * 60 + 25 + 1, 5))


def test_bl_reads_the_static_profiles_and_op_the_updated_ones(erred):
    (_, _), (_, adjusted) = erred
    # the meter tier sheds (its input filter reads λ); with three groups the utility's
    # device could keep no group event under its bound (docs/decisions.md)
    op_run, op = _run(quickstart(HOUSEHOLDS, remote={"latency": ZERO, "updates": {}},
                                 shedding={"tiers": ["meter"]}, **ERROR))
    plain_run, plain = _run(quickstart(HOUSEHOLDS, **ERROR))
    bl = op["op_vs_bl"]["bl"]
    for key, value in bl["prediction"].items():
        assert value == plain["prediction"][key], key
    assert _events(op_run, plain_twin("traditional")).equals(_events(plain_run, "traditional"))
    assert op["op_vs_bl"]["bl_prediction"] == plain["prediction"]["utility_noncompliance_time"]
    # with the static profiles no group latches; with the updated ones OP predicts when
    # the unshed run with the adjustment does: its gateways' input filter reads the
    # updated λ too, and drops only readings that pass their test alone
    assert set(bl["prediction"]["group_noncompliance_times"].values()) == {None}
    assert adjusted["prediction"]["predicted"]
    for key in ("utility_noncompliance_time", "group_noncompliance_times"):
        assert op["prediction"][key] == adjusted["prediction"][key], key
    assert op["shedding"]["op"]["meter_tier"]["readings_shed"] > 0
    assert op["remote"]["meter_tier"]["versions_published"] > 0


def test_with_the_day_of_adjustment_already_published_nothing_is_published(erred):
    (_, _), (adjusted_run, adjusted) = erred
    run, both = _run(quickstart(HOUSEHOLDS, remote={"latency": ZERO, "updates": {}},
                                **ERROR, day_of_adjustment=ADJUST))
    _same_tiers(run, adjusted_run)
    assert both["prediction"] == adjusted["prediction"]
    assert both["remote"]["meter_tier"]["versions_published"] == 0
    assert both["remote"]["group_tier"]["versions_published"] == 0


def test_the_updates_do_not_depend_on_the_chunking(erred):
    (run, updated), _ = erred
    data = quickstart(HOUSEHOLDS, remote={"strategy": "Hybrid", "latency": ZERO,
                                          "updates": {}}, **ERROR)
    data["chunk_size"] = 300
    small_run, small = _run(data)
    assert len(small_run.simulation.chunks) > len(run.simulation.chunks)
    _same_tiers(small_run, run)
    assert small["remote"] == updated["remote"]
    assert small_run.monitored.features["remote"] == run.monitored.features["remote"]
