"""Hybrid load shedding (cep_core.shedding; dissertation Ch. 4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import cep_core
from cep_core.errors import QueryError
from cep_core.shedding import (
    DeviceClock,
    LatencyWindow,
    SheddingConfig,
    choose_shed_set,
    fit_cost_model,
    greedy_cover,
    load_cost_model,
    min_contribution_cover,
    unit_cost_for,
    work_units,
)
from experiments import ch4_data

Q1 = ch4_data.Q1


def ds1(n: int, seed: int) -> list[dict]:
    """DS1 of §4.4.1 (Table 4.1) with C.V ~ U(2, 10) as in §4.4.2, at 40,000 events/s
    (320 events in Q1's window)."""
    return ch4_data.make_ds1(n, rate=40_000.0, seed=seed)


def _key(m: dict) -> tuple:
    return tuple(sorted(m.items()))


@pytest.fixture(scope="module")
def q1():
    query = cep_core.compile(Q1, time_unit="ms")
    model = fit_cost_model(query, ds1(6000, seed=1), slices=4, max_classes=10)
    test = ds1(2000, seed=2)
    session = query.start(output="matches", engine="reference")
    truth = session.run(test)  # the device runs its work
    span = test[-1]["time"] - test[0]["time"]
    unit_cost = unit_cost_for(work_units(session.counters), span, 0.9)
    return query, model, test, truth, unit_cost


def _run(q1, strategy: str, **kw) -> tuple[float, dict, list]:
    query, model, test, truth, unit_cost = q1
    kw.setdefault("model", model)
    session = query.start(output="matches",
                          shedding=SheddingConfig(strategy, unit_cost, **kw))
    got = session.feed(test) + session.flush()
    recall = len({_key(m) for m in truth} & {_key(m) for m in got}) / len(truth)
    return recall, session.shedding_report(), got


# ------------------------------------------------------------------ knapsack
def _brute(values, weights, need):
    best = None
    for r in range(len(values) + 1):
        for sub in itertools.combinations(range(len(values)), r):
            if sum(weights[i] for i in sub) >= need:
                v = sum(values[i] for i in sub)
                if best is None or v < best - 1e-12:
                    best = v
    return best


@pytest.mark.parametrize("seed", range(40))
def test_the_knapsack_finds_the_brute_force_optimum(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    values = rng.integers(0, 20, size=n).astype(float).tolist()
    weights = rng.integers(0, 15, size=n).tolist()
    need = int(rng.integers(1, max(2, sum(weights) + 1)))
    chosen = min_contribution_cover(values, weights, need)
    assert sum(weights[i] for i in chosen) >= need
    assert sum(values[i] for i in chosen) == pytest.approx(_brute(values, weights, need))


@pytest.mark.parametrize("seed", range(20))
def test_the_shedding_set_exceeds_the_violation_and_beats_greedy(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 12))
    plus, minus = rng.random(n), rng.random(n) + 0.01
    cap = float(rng.uniform(0.05, 0.9))
    exact = choose_shed_set(plus, minus, cap)
    share_plus, share_minus = plus / plus.sum(), minus / minus.sum()
    assert share_minus[exact].sum() > cap
    greedy = greedy_cover(share_plus, share_minus, cap)
    assert share_minus[greedy].sum() > cap
    # the DP is exact on a grid of 1/1000: it loses at most one grid step of Δ⁺
    assert share_plus[exact].sum() <= share_plus[greedy].sum() + 1e-3 + share_plus.max()


def test_greedy_beyond_the_exact_limit_is_used_and_valid():
    rng = np.random.default_rng(5)
    plus, minus = rng.random(200), rng.random(200) + 0.01
    chosen = choose_shed_set(plus, minus, 0.4, exact_limit=64)
    assert chosen == greedy_cover(plus / plus.sum(), minus / minus.sum(), 0.4)


# ------------------------------------------------------------------ clock
def test_the_device_queues_fifo_and_charges_units():
    clock = DeviceClock(unit_cost=2.0)
    assert clock.serve(clock.start(0.0), 3) == 6.0     # busy 0-6
    assert clock.start(1.0) == 6.0                     # waits for the device
    assert clock.serve(6.0, 1) == 8.0
    assert clock.start(10.0) == 10.0                   # idle in between
    assert clock.busy == 8.0 and clock.utilisation(16.0) == 0.5


def test_the_p95_window_is_the_95th_of_the_recent_latencies():
    rng = np.random.default_rng(0)
    w = LatencyWindow("p95", size=100)
    xs = rng.random(500).tolist()
    for x in xs:
        w.add(x)
    recent = sorted(xs[-100:])
    assert w.value() == recent[95]


# ------------------------------------------------------------------ configuration
@pytest.mark.parametrize(("kw", "field"), [
    ({"strategy": "XX", "unit_cost": 1.0, "bound": 1.0}, "shedding.strategy"),
    ({"strategy": "RI", "unit_cost": 0, "bound": 1.0}, "shedding.unit_cost"),
    ({"strategy": "RI", "unit_cost": 1.0}, "shedding.bound"),
    ({"strategy": "RI", "unit_cost": 1.0, "bound": -2.0}, "shedding.bound"),
    ({"strategy": "RI", "unit_cost": 1.0, "ratio": 1.5}, "shedding.ratio"),
    ({"strategy": "RI", "unit_cost": 1.0, "bound": 1.0, "statistic": "p99"},
     "shedding.statistic"),
    ({"strategy": "RI", "unit_cost": 1.0, "bound": 1.0, "window": 0}, "shedding.window"),
    ({"strategy": "HyS", "unit_cost": 1.0, "bound": 1.0}, "shedding.model"),
])
def test_bad_shedding_configuration_gets_one_line_naming_the_field(kw, field):
    with pytest.raises(QueryError) as err:
        SheddingConfig(**kw)
    message = str(err.value)
    assert message.startswith(field) and "\n" not in message


def test_shedding_applies_to_pattern_queries_only():
    agg = cep_core.compile("SELECT COUNT(x) AS n FROM T STREAM GROUP BY time "
                           "RETURN out(time, n)")
    with pytest.raises(QueryError, match="pattern queries"):
        agg.start(shedding=SheddingConfig("RI", 1.0, ratio=0.1))


# ------------------------------------------------------------------ behaviour
def test_shedding_nothing_gives_the_unshed_matches_and_counters(q1):
    query, _, test, truth, _ = q1
    plain = query.start(output="matches", engine="reference")
    plain_out = plain.feed(test) + plain.flush()
    recall, report, got = _run(q1, "RI", ratio=0.0)
    assert got == plain_out == truth
    assert report["events_shed"] == report["pms_shed"] == 0
    assert report["pms_created"] == plain.counters.pm_created


@pytest.mark.parametrize("strategy", ["RI", "SI", "RS", "SS", "HyI", "HyS", "Hybrid"])
def test_a_bound_never_exceeded_sheds_nothing(q1, strategy):
    recall, report, _ = _run(q1, strategy, bound=1e12)
    assert recall == 1.0
    assert report["events_shed"] == report["pms_shed"] == report["pms_curbed"] == 0
    assert report["shedding_triggered"] == 0


@pytest.mark.parametrize("strategy", ["RI", "RS", "Hybrid"])
def test_shedding_is_deterministic(q1, strategy):
    a = _run(q1, strategy, bound=0.3 * 0.5)
    b = _run(q1, strategy, bound=0.3 * 0.5)
    assert a[1] == b[1] and a[2] == b[2]


def test_a_tight_bound_is_met_better_than_without_shedding(q1):
    _, unshed, _ = _run(q1, "RI", ratio=0.0)
    for strategy in ("RI", "RS", "Hybrid"):
        _, report, _ = _run(q1, strategy, bound=0.5 * unshed["latency_avg"])
        assert report["latency_avg"] < unshed["latency_avg"]
        assert report["events_shed"] + report["pms_shed"] > 0


def test_state_shedding_by_the_cost_model_drops_partial_matches_that_cannot_complete(q1):
    """Q1 with C.V ≤ 10: a partial match (a, b) with a.V + b.V > 10 never completes
    (§4.4.2), and one in its window's last slice rarely does. HyS sheds those first, so
    a share of 15 % of the PMs costs it hardly any match, where random state shedding of
    the same share loses many."""
    hys, report, _ = _run(q1, "HyS", ratio=0.15)
    rs, report_rs, _ = _run(q1, "RS", ratio=0.15)
    # early curbing: PMs of shed cells are not created at all, and count as shed
    shed = report["pms_shed"] + report["pms_curbed"]
    assert shed > 0.1 * (report["pms_created"] + report["pms_curbed"])
    assert report_rs["pms_shed"] > 0.1 * report_rs["pms_created"]
    assert hys >= 0.98
    assert rs < hys - 0.05


def test_input_shedding_by_the_cost_model_beats_random_input_shedding(q1):
    hyi, report, _ = _run(q1, "HyI", ratio=0.1)
    ri, report_ri, _ = _run(q1, "RI", ratio=0.1)
    assert report["events_shed"] > 0.05 * len(q1[2])
    assert hyi > ri


def test_a_saved_cost_model_reloads_to_the_same_decisions(q1, tmp_path):
    query, model, *_ = q1
    path = tmp_path / "q1.joblib"
    model.save(str(path))
    again = load_cost_model(str(path), query.explain())
    first = _run(q1, "Hybrid", bound=0.15, model=model)
    second = _run(q1, "Hybrid", bound=0.15, model=again)
    assert first[1] == second[1] and first[2] == second[2]
    with pytest.raises(ValueError, match="another query"):
        load_cost_model(str(path), "PATTERN SEQ(A a, B b) WITHIN 1ms")


def test_selectivity_input_shedding_drops_the_type_no_match_needs_first(q1):
    """D events take part in no match of Q1 (selectivity 0): SI sheds them before any
    other type, so a tenth of the events costs it no match; RI's tenth does."""
    si, report, _ = _run(q1, "SI", ratio=0.1)
    ri, _, _ = _run(q1, "RI", ratio=0.1)
    assert report["events_shed"] > 0.05 * len(q1[2])
    assert si == 1.0 and ri < 0.9


@pytest.mark.parametrize("statistic", ["avg", "p95"])
def test_keepable_is_the_most_events_a_device_serves_within_the_bound(statistic):
    from cep_core.shedding import DeviceFleet, keepable

    rng = np.random.default_rng(3)

    def stat(backlog: float, cost: float, k: int) -> float:  # on a modelled device
        fleet = DeviceFleet(np.array([cost]), size=64)
        fleet.free_at[0] = 10.0 + backlog
        lat = fleet.serve(np.zeros(k, dtype=np.int64), 10.0, np.ones(k))
        return float(lat.mean() if statistic == "avg"
                     else np.percentile(lat, 95, method="lower"))

    for _ in range(50):
        backlog, cost, n = rng.uniform(0, 3), rng.uniform(0.1, 1), int(rng.integers(1, 30))
        bound = rng.uniform(0.1, 8)
        k = keepable(backlog, cost, n, bound, statistic)
        assert k == 0 or stat(backlog, cost, k) <= bound + 1e-9
        assert k == n or stat(backlog, cost, k + 1) > bound - 1e-9
