"""The M&V profiles fetched from the utility (drsim.fetching) and the day-of adjustment
(drsim.baseline): a run without network latency is the run with local tables, latency
holds the group alerts back under blocking fetches and not under prefetching, and bad
configurations get one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from drsim import pipeline
from drsim.backend import SerialBackend
from drsim.baseline import day_of_ratio
from drsim.passes import Chunk, simulate_chunk
from drsim.scenario import ScenarioError, scenario_from_dict

ZERO = {"kind": "fixed", "seconds": 0.0}


def _quickstart(households: int = 1200, remote: dict | None = None,
                shedding: dict | None = None, **baseline) -> dict:
    with open("scenarios/quickstart.yaml") as f:
        data = yaml.safe_load(f)
    data["households"] = households
    share = households // len(data["groups"])
    for g in data["groups"]:
        g.pop("range", None)
        g["size"] = share
    if remote is not None:
        data["monitoring"]["remote"] = {"gateway_households": 100, **remote}
    if shedding is not None:
        data["monitoring"]["shedding"] = {"gateway_households": 100, **shedding}
    data.setdefault("baseline", {}).update(baseline)
    return data


def _run(data: dict, chunk_size: int | None = None):
    return pipeline.run(scenario_from_dict(data, "remote.yaml"), SerialBackend(),
                        chunk_size=chunk_size)


@pytest.fixture(scope="module")
def local():
    return _run(_quickstart())


def _same_monitoring(a, b) -> None:
    for name in a.monitored.outcome:
        assert a.monitored.outcome[name].latch == b.monitored.outcome[name].latch
        assert a.monitored.outcome[name].t_nc == b.monitored.outcome[name].t_nc
    rows = ["kind", "pass", "group", "time", "load"]
    assert a.monitored.tier_rows[rows].equals(b.monitored.tier_rows[rows])


@pytest.mark.parametrize("strategy", ["BL1", "Hybrid"])
def test_without_network_latency_the_run_is_the_run_with_local_tables(local, strategy):
    remote = _run(_quickstart(remote={"strategy": strategy, "latency": ZERO}),
                  chunk_size=300)
    _same_monitoring(remote, local)
    fetched = remote.monitored.fetches["traditional"]
    assert fetched.waited_us == 0 and fetched.delay_us == 0
    assert fetched.decisions == 1200 * len(remote.monitored.plan.test_times)
    if strategy == "BL1":  # a fetch per reading tested, when it is tested: the same costs
        assert remote.costs == local.costs
    else:  # each element once, the next test's sent one test ahead
        assert fetched.requests == fetched.prefetches == fetched.decisions
        assert fetched.hits == fetched.decisions


def test_blocking_fetches_hold_the_alerts_back_and_prefetching_does_not(local):
    latency = {"kind": "lognormal", "seconds": 2.0, "sigma": 0.5}
    bl1 = _run(_quickstart(remote={"strategy": "BL1", "latency": latency}))
    hybrid = _run(_quickstart(remote={"strategy": "Hybrid", "latency": latency}))
    _same_monitoring(hybrid, local)
    assert hybrid.monitored.fetches["traditional"].waited_us == 0
    meter, group = bl1.monitored.fetches["traditional"], bl1.monitored.group_fetches
    assert meter.waited_us > 0 and group.waited_us > 0
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
    data = _quickstart(remote={"strategy": "BL1"})
    small, large = _run(data, chunk_size=100), _run(data, chunk_size=600)
    _same_monitoring(small, large)
    for name in small.monitored.fetches:
        assert small.monitored.fetches[name] == large.monitored.fetches[name]


def test_remote_data_summary_and_user_events_carry_the_delays():
    from drsim.summary import _remote

    run = _run(_quickstart(remote={"strategy": "LzEval"}))
    section = _remote(run)
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
            scenario_from_dict(_quickstart(**kwargs), "bad.yaml")
        lines = [ln for ln in str(info.value).splitlines() if "monitoring.remote" in ln]
        assert len(lines) == 1, str(info.value)


def test_day_of_ratio_is_capped_and_leaves_households_without_estimate_alone():
    ratio = day_of_ratio(np.array([[2.0, 2.0], [0.5, 0.5], [1.0, 1.0]]),
                         np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]), 0.25)
    assert ratio.tolist() == [1.25, 0.75, 1.0]


def test_the_day_of_adjustment_undoes_a_same_day_mv_error_within_its_cap():
    exact = scenario_from_dict(_quickstart(600), "exact.yaml")
    erred = scenario_from_dict(_quickstart(600, error=0.1), "erred.yaml")
    adjusted = scenario_from_dict(_quickstart(600, error=0.1,
                                              day_of_adjustment={"cap": 0.2}), "adj.yaml")
    chunk = Chunk(0, 1, 200, 0)
    est = {name: simulate_chunk(s, chunk, households=True).estimate_window_kw
           for name, s in (("exact", exact), ("erred", erred), ("adjusted", adjusted))}
    factor = est["erred"]["baseline"].sum(axis=1) / est["exact"]["baseline"].sum(axis=1)
    inside = (factor > 1 / 1.2) & (factor < 1 / 0.8)
    assert inside.mean() > 0.9
    for kind in ("baseline", "expected"):
        assert np.allclose(est["adjusted"][kind][inside], est["exact"][kind][inside])
        assert not np.allclose(est["erred"][kind], est["exact"][kind])
