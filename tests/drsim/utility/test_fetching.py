"""The M&V profiles fetched from the utility (drsim.utility.fetching): a run without network
latency is the run with local tables, latency holds the group alerts back under blocking
fetches and not under prefetching, the chunking changes nothing, and bad configurations
get one-line errors."""

from __future__ import annotations

import time

import pytest
from small_scenarios import quickstart

from drsim.pipeline import stages as pipeline
from drsim.pipeline.backend import SerialBackend
from drsim.scenario import ScenarioError, scenario_from_dict

ZERO = {"kind": "fixed", "seconds": 0.0}


def _run(data: dict, chunk_size: int | None = None):
    return pipeline.run(scenario_from_dict(data, "remote.yaml"), SerialBackend(),
                        chunk_size=chunk_size)


@pytest.fixture(scope="module")
def local():
    return _run(quickstart())


def _same_monitoring(a, b) -> None:
    for name in a.monitored.outcome:
        assert a.monitored.outcome[name].latch == b.monitored.outcome[name].latch
        assert a.monitored.outcome[name].t_nc == b.monitored.outcome[name].t_nc
    rows = ["kind", "pass", "group", "time", "load"]
    assert a.monitored.tier_rows[rows].equals(b.monitored.tier_rows[rows])


@pytest.mark.parametrize("strategy", ["BL1", "Hybrid"])
def test_without_network_latency_the_run_is_the_run_with_local_tables(local, strategy):
    remote = _run(quickstart(remote={"strategy": strategy, "latency": ZERO}),
                  chunk_size=300)
    _same_monitoring(remote, local)
    fetched = remote.monitored.features["remote"].meter["traditional"]
    assert fetched.waited_us == 0 and fetched.delay_us == 0
    assert fetched.decisions == 1200 * len(remote.monitored.plan.test_times)
    if strategy == "BL1":  # a fetch per reading tested, when it is tested: the same costs
        assert remote.costs == local.costs
    else:  # each element once, the next test's sent one test ahead
        assert fetched.requests == fetched.prefetches == fetched.decisions
        assert fetched.hits == fetched.decisions


def test_blocking_fetches_hold_the_alerts_back_and_prefetching_does_not(local):
    latency = {"kind": "lognormal", "seconds": 2.0, "sigma": 0.5}
    bl1 = _run(quickstart(remote={"strategy": "BL1", "latency": latency}))
    hybrid = _run(quickstart(remote={"strategy": "Hybrid", "latency": latency}))
    _same_monitoring(hybrid, local)
    assert hybrid.monitored.features["remote"].meter["traditional"].waited_us == 0
    from drsim.results.summary import build

    meter = bl1.monitored.features["remote"].meter["traditional"]
    timed = bl1.timed(0.0, time.perf_counter())
    group = build(timed.simulation, timed)["remote"]["group_tier"]
    assert meter.waited_us > 0 and group["waited_seconds"] > 0
    assert meter.delay_us / meter.decisions > 2e6 / 2  # at least the median, mostly more
    # every alert of BL1 starts a minute after the same alert without latency
    rows = ["pass", "group", "time"]
    alerts = {name: run.monitored.tier_rows.query("kind == 'alert' and group >= 0")[rows]
              for name, run in (("bl1", bl1), ("local", local))}
    assert len(alerts["bl1"]) and len(alerts["bl1"]) <= len(alerts["local"])
    for name in bl1.monitored.outcome:
        late, now = bl1.monitored.outcome[name].latch, local.monitored.outcome[name].latch
        assert all(a == b == -1 or a >= b for a, b in zip(late, now, strict=True))
    assert sum(bl1.monitored.outcome["traditional"].latch) > \
        sum(local.monitored.outcome["traditional"].latch)


def test_fetch_delays_do_not_depend_on_the_chunking():
    data = quickstart(remote={"strategy": "BL1"})
    small, large = _run(data, chunk_size=100), _run(data, chunk_size=600)
    _same_monitoring(small, large)
    assert small.monitored.features["remote"] == large.monitored.features["remote"]
    assert set(small.monitored.features["remote"].meter) == {"expected", "traditional"}


def test_remote_data_summary_and_user_events_carry_the_delays():
    from drsim.results.summary import build

    run = _run(quickstart(remote={"strategy": "LzEval"})).timed(0.0, time.perf_counter())
    summary = build(run.simulation, run)
    section = summary["remote"]
    # the features' sections sit among the run's, after shedding (docs/summary.md)
    keys = list(summary)
    assert keys[keys.index("shedding"):keys.index("reference")] == [
        "shedding", "remote", "appliance_queries"]
    assert section["config"]["strategy"] == "LzEval"
    assert section["meter_tier"]["data_delay_avg_seconds"] > 0
    assert section["meter_tier"]["waited_seconds"] == 0.0  # lazy: the gateway never waits


def test_bad_remote_configuration_gets_one_line_errors():
    cases = [
        ({"remote": {"strategy": "BL3"}}, "strategy"),
        ({"remote": {"latency": {"kind": "uniform", "low_seconds": 9, "high_seconds": 1}}},
         "low_seconds"),
        ({"remote": {"latency": {"seconds": -1}}}, "seconds"),
        ({"remote": {"cache_elements": -5}}, "cache_elements"),
        ({"remote": {"gateway_households": 50}, "shedding": {}}, "gateway_households"),
    ]
    for kwargs, words in cases:
        with pytest.raises(ScenarioError, match=words) as info:
            scenario_from_dict(quickstart(**kwargs), "bad.yaml")
        lines = [ln for ln in str(info.value).splitlines() if "monitoring.remote" in ln]
        assert len(lines) == 1, str(info.value)
