"""The day-of adjustment of B and P̂ at the announcement (drsim.utility.baseline): capped, it
undoes a same-day M&V error, in the day's estimates and in the replicas the threshold of
Listing 6.2 is estimated from."""

from __future__ import annotations

import numpy as np
from small_scenarios import quickstart

from drsim.pipeline.passes import Chunk, simulate_chunk
from drsim.scenario import scenario_from_dict
from drsim.utility.day_of import day_of_ratio
from drsim.utility.monitoring import MonitoringPlan
from drsim.utility.threshold import replica_flags

CHUNK = Chunk(0, 1, 200, 0)


def _chunks(**baseline):
    return {name: simulate_chunk(scenario_from_dict(quickstart(600, **kw), f"{name}.yaml"),
                                 CHUNK, households=True)
            for name, kw in (("exact", {}), ("erred", {"error": 0.1}),
                             ("adjusted", {"error": 0.1, **baseline}))}


def test_day_of_ratio_is_capped_and_leaves_households_without_estimate_alone():
    ratio = day_of_ratio(np.array([[2.0, 2.0], [0.5, 0.5], [1.0, 1.0]]),
                         np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]), 0.25)
    assert ratio.tolist() == [1.25, 0.75, 1.0]


def test_the_day_of_adjustment_undoes_a_same_day_mv_error_within_its_cap():
    est = {name: r.estimate_window_kw
           for name, r in _chunks(day_of_adjustment={"cap": 0.2}).items()}
    factor = est["erred"]["baseline"].sum(axis=1) / est["exact"]["baseline"].sum(axis=1)
    inside = (factor > 1 / 1.2) & (factor < 1 / 0.8)
    assert inside.mean() > 0.9
    for kind in ("baseline", "expected"):
        # exactly: Eq. 6.4 compares with ">", and a household with nothing to shift has
        # its load equal to P̂, so rounding left behind would flag it
        assert np.array_equal(est["adjusted"][kind][inside], est["exact"][kind][inside])
        assert not np.allclose(est["adjusted"][kind], est["exact"][kind])  # the capped
        assert not np.allclose(est["erred"][kind], est["exact"][kind])


def test_the_replicas_of_the_threshold_are_adjusted_like_the_day():
    chunks = _chunks(day_of_adjustment={"cap": 1.0})  # every household's error undone
    flags = {}
    for name, r in chunks.items():
        plan = MonitoringPlan.of(r.population.scenario)
        flags[name] = replica_flags(plan, r.population, r.simulator, 0, r.estimate_exact, 2,
                                    r.before_notice)
    assert chunks["adjusted"].before_notice is not None
    assert chunks["exact"].before_notice is None
    assert np.array_equal(flags["adjusted"], flags["exact"])
    assert not np.array_equal(flags["erred"], flags["exact"])
