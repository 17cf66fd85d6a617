"""ACEP's large-window runs (experiments/acep_windows.py) on a small fleet: the fleet's
stream, the proxy-match truth against the node-per-partial-match run, and the rows and
statements of one task."""

from __future__ import annotations

from cep_core.approx.rc_acep import BudgetedMatcher
from experiments import acep_windows

SMALL = acep_windows.WindowScale(window=330, copies=2, vehicles=20, households=1500,
                                 minutes=(0, 1440), test=2500, capacity=8,
                                 deltas=(20, 1e6))


def test_the_fleet_numbers_its_vehicles_across_blocks_in_time_order():
    events = acep_windows.fleet(SMALL, seed=1, day=0)
    assert [e["time"] for e in events] == list(range(len(events)))
    assert [e["id"] for e in events] == list(range(len(events)))
    minutes = [e["minute"] for e in events]
    assert minutes == sorted(minutes) and SMALL.minutes[0] <= minutes[0]
    assert minutes[-1] < SMALL.minutes[1]
    vehicles = {e["vehicle"] for e in events}
    assert vehicles == set(range(SMALL.copies * SMALL.vehicles))


def test_one_task_against_the_proxy_truth():
    """The truth's points are the node-per-partial-match run's; at a Δ the device always
    keeps up every method finds all of them, and at 20 µs none finds more."""
    plan, test, _, truth, _ = acep_windows.setup(SMALL, 0)
    full = BudgetedMatcher(plan, acep_windows.K).run(test)
    assert set(truth.points) == full.points() and truth.points
    assert truth.peak_nodes < full.peak_nodes
    rows = [r for task in acep_windows.tasks(SMALL) for r in acep_windows.fractions(task)]
    assert [r["method"] for r in rows] == ["truth (proxy matches)", *acep_windows.METHODS,
                                          *acep_windows.METHODS]
    by = {(r["method"], r["delta_us"]): r for r in rows}
    for method in acep_windows.METHODS:
        assert by[(method, 1e6)]["points"] == 1.0 == by[(method, 1e6)]["bundles"]
        assert 0 <= by[(method, 20)]["points"] < 1.0
    assert by[("truth (proxy matches)", 0)]["truth_points"] == len(truth.points)
    said = acep_windows.statements(rows)
    assert len(said) == 3 and all(isinstance(ok, bool) for _, ok in said)
    assert said[2][1]  # proxies: at most (k + 1) nodes per state and vehicle
