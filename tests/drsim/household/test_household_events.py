"""drsim.household.household_events: a chunk's simulation read back as events (appliance starts, EV
plug-ins, pauses, resumes), the same starts the load is rendered from."""

from __future__ import annotations

import numpy as np
from small_scenarios import quickstart

from drsim.household.household_events import household_events
from drsim.household.population import Population
from drsim.household.sim import ChunkSimulator
from drsim.pipeline.passes import pass_schedules, plan_chunks
from drsim.scenario import Scenario


def _chunk_runs():
    scenario = Scenario.model_validate(quickstart(3000))
    chunk = plan_chunks(scenario)[0]
    pop = Population(scenario, chunk.first, chunk.count)
    sim = ChunkSimulator(pop)
    schedules = pass_schedules(scenario, chunk.group)
    return scenario, pop, {name: sim.run(schedules[name]) for name in ("baseline",
                                                                        "traditional")}


def test_events_are_the_committed_starts_and_the_dr_moves_them():
    scenario, pop, runs = _chunk_runs()
    base = household_events(runs["baseline"], pop.ids)
    trad = household_events(runs["traditional"], pop.ids)
    starts = base[base["type"].str.startswith("start_")]
    committed = runs["baseline"].appliances.t
    assert len(starts) == np.count_nonzero((committed >= 0) & (committed < 1440))
    assert set(base["houseID"]) <= set(pop.ids.tolist())
    assert (base["moved"] == 0).all()  # without DR nothing moves
    assert not base["type"].isin(["ev_pause", "ev_resume"]).any()
    assert np.all(np.diff(trad["time"].to_numpy()) >= 0)
    assert (trad["moved"] > 0).any()  # the program moves deferrable starts
    dr = scenario.dr_program
    pauses = trad[trad["type"] == "ev_pause"]
    resumes = trad[trad["type"] == "ev_resume"]
    assert len(pauses) and (pauses["time"] == dr.start_minute).all()  # paused at its start
    assert (resumes["time"] >= dr.end_minute).all() and \
        set(resumes["houseID"]) <= set(pauses["houseID"])
    every = {name: household_events(run, pop.ids, -10 ** 6, 10 ** 6)
             for name, run in runs.items()}  # (also the sessions DR moved past midnight)
    assert (every["traditional"]["type"] == "ev_plug").sum() == \
        (every["baseline"]["type"] == "ev_plug").sum()  # one per planned session


def test_a_time_range_keeps_its_events_only():
    _, pop, runs = _chunk_runs()
    evening = household_events(runs["traditional"], pop.ids, 16 * 60, 23 * 60)
    assert evening["time"].between(16 * 60, 23 * 60 - 1).all() and len(evening)
