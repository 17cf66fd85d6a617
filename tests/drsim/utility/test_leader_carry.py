"""drsim.utility.leader_carry: a group leader's run of Listing 6.2 (and the utility's of
6.3) continued tick by tick, as a stream makes it, gives what a run over every tick gives
up to each final tick, unshed and on a shedding device sized before."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from drsim.scenario import Shedding
from drsim.utility.features import plain_twin
from drsim.utility.group_and_utility_tiers import GroupResult, group_tier, utility_stream
from drsim.utility.leader_carry import LeaderCarry, SessionRun, TierRuns
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan
from drsim.utility.tier_shedding import UTILITY_DEVICE, TierShedding

#: 18:30-20:30, tests every 5 minutes from 18:40, m_group = 1, one group of 20
PLAN = MonitoringPlan(1110, 1230, 1120, 5, 1, 1, 1, 0.3, 0.4, 1, 15, 1)
SIZE = 20
GAMMA = {(0, int(t)): 0.3 for t in PLAN.test_times}


def flagged(seed: int) -> pd.DataFrame:
    """A group's user events: each household flagged at each test with a share that
    drifts through the evening (sorted by time, as the leader reads them)."""
    rng = np.random.default_rng(seed)
    share = np.linspace(0.1, 0.6, len(PLAN.test_times))[:, None]
    t, h = np.nonzero(rng.random((len(PLAN.test_times), SIZE)) < share)
    return pd.DataFrame({"time": PLAN.test_times[t], "houseID": h,
                         "accLoad": rng.uniform(1, 3, t.size)})


def finals() -> list[int]:
    """The final ticks a stream reaches, one per test: the minute before the next."""
    return [int(t) - 1 for t in PLAN.test_times[1:]] + [PLAN.t_end - 1]


def assert_same_up_to(carried: GroupResult, whole: GroupResult, upto: int) -> None:
    for name in ("alerts", "events"):
        got, want = getattr(carried, name), getattr(whole, name)
        pd.testing.assert_frame_equal(got[got["time"] <= upto].reset_index(drop=True),
                                      want[want["time"] <= upto].reset_index(drop=True),
                                      check_dtype=False)
    final = PLAN.ticks <= upto
    assert (carried.processed[final] == whole.processed[final]).all()
    assert (carried.partial_matches[final] == whole.partial_matches[final]).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_carried_leader_gives_the_whole_run_at_every_final_tick(seed):
    events = flagged(seed)
    whole = group_tier(PLAN, 0, SIZE, events, GAMMA)
    assert len(whole.events)  # the group latches: the bottom query has work to carry
    carry = TierRuns()
    sessions = set()
    for upto in finals():
        carry.upto = upto
        carried = group_tier(PLAN, 0, SIZE, events[events["time"] <= upto], GAMMA,
                             carry=carry)
        assert_same_up_to(carried, whole, upto)
        sessions.add((id(carry.alerts.session), id(carry.group.session)))
    assert carried.latch == whole.latch
    assert len(sessions) == 1  # continued, never started again


def test_rows_that_do_not_extend_those_fed_start_the_session_again():
    events = flagged(0)
    whole = group_tier(PLAN, 0, SIZE, events, GAMMA)
    carry = TierRuns(upto=1160)
    group_tier(PLAN, 0, SIZE, events[events["time"] <= 1160], GAMMA, carry=carry)
    other = events.assign(houseID=events["houseID"] + 100)  # other households: not a prefix
    changed = group_tier(PLAN, 0, SIZE, other, GAMMA, carry=dataclasses.replace(carry,
                                                                                upto=1229))
    assert_same_up_to(changed, group_tier(PLAN, 0, SIZE, other, GAMMA), 1229)
    assert_same_up_to(group_tier(PLAN, 0, SIZE, events, GAMMA,
                                 carry=TierRuns(upto=1229)), whole, 1229)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_carried_shedding_leader_keeps_and_alerts_as_the_whole_run(seed):
    """On a device sized before (a stream's), each tick's kept inputs depend on the ticks
    before it only: the carried runs (unshed, and on the inputs kept) give the whole
    run's alerts, work and kept inputs up to each final tick, and its device's figures
    at the last."""
    events = flagged(seed)
    cfg = Shedding()
    shares = (tuple([0.35] * len(PLAN.test_times)),)
    sized = TierShedding(cfg, shares).group(PLAN, "traditional", 0, SIZE, events, GAMMA)
    for name in ("traditional", plain_twin("traditional")):
        shed = TierShedding(cfg, shares, {(name, 0): sized.sizing})
        whole = shed.group(PLAN, name, 0, SIZE, events, GAMMA)
        carry = LeaderCarry()
        for upto in finals():
            final = events[events["time"] <= upto]
            ran = shed.group(PLAN, name, 0, SIZE, final, GAMMA, carry=carry.until(upto))
            assert_same_up_to(ran.result, whole.result, upto)
            assert (ran.keep == whole.keep[:len(final)]).all()
        assert ran.stats == whole.stats
        assert (~whole.keep).any() == (name == "traditional")  # OP sheds, its twin not


def test_an_empty_stream_ends_as_feed_by_time_ends_it():
    run = SessionRun(("time", "houseID"))
    q = PLAN.compile("group_alert", GroupSize={0: SIZE}, γ=GAMMA)
    out, processed, pms, _ = run.run(q.start, flagged(0).iloc[:0].assign(
        type="userNonComplianceEvent", groupID=0), PLAN.ticks, 1130)
    assert out == [] and processed.sum() == pms.sum() == 0


#: three groups: the utility alerts from 2 latched (γ_group 0.4), predicts at its 2nd alert
UTILITY_PLAN = MonitoringPlan(1110, 1230, 1120, 5, 1, 1, 1, 0.3, 0.4, 1, 15, 3)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_carried_utility_keeps_and_predicts_as_the_whole_run(seed):
    """The utility's runs of Listing 6.3 carried tick by tick on a device sized before:
    up to each final tick, the whole run's alerts, work, kept group events and t_nc
    (once it falls there), and its device's figures at the last; the sessions are
    continued, never started again."""
    plan, rng = UTILITY_PLAN, np.random.default_rng(seed)
    latches = {g: int(rng.integers(1125, 1200)) for g in range(3)}
    loads = {g: float(rng.uniform(1, 9)) for g in range(3)}
    forecasts = [int(t) for t in rng.integers(1125, 1230, 3)]
    cfg = Shedding()
    shares = ((0.35,) * len(plan.test_times),) * 3
    sized = TierShedding(cfg, shares).utility(plan, "traditional", latches, loads, forecasts)
    for name in ("traditional", plain_twin("traditional")):
        shed = TierShedding(cfg, shares, {(name, UTILITY_DEVICE): sized.sizing})
        whole = shed.utility(plan, name, latches, loads, forecasts)
        assert whole.result.t_nc != NOT_LATCHED
        whole_times = utility_stream(plan, latches, loads)["time"].to_numpy()
        carry, sessions = LeaderCarry.at_utility(), set()
        for upto in [*range(1120, plan.t_end, 5), plan.t_end - 1]:
            known = {g: t for g, t in latches.items() if t <= upto}
            ran = shed.utility(plan, name, known, {g: loads[g] for g in known}, forecasts,
                               carry=carry.until(upto))
            got, want = ran.result, whole.result
            pd.testing.assert_frame_equal(got.alerts[got.alerts["time"] <= upto],
                                          want.alerts[want.alerts["time"] <= upto],
                                          check_dtype=False)
            final = plan.ticks <= upto
            assert (got.processed[final] == want.processed[final]).all()
            assert (got.partial_matches[final] == want.partial_matches[final]).all()
            times = utility_stream(plan, known, loads)["time"].to_numpy()
            assert (ran.keep[times <= upto] == whole.keep[whole_times <= upto]).all()
            assert got.t_nc == (want.t_nc if want.t_nc <= upto else NOT_LATCHED)
            sessions.add(tuple(id(r.session) for r in (carry.shed.alerts, carry.shed.group)))
        assert ran.stats == whole.stats and ran.result.t_nc == whole.result.t_nc
        assert len(sessions) == 1 or name != "traditional"
        assert (~whole.keep).any() == (name == "traditional")  # OP sheds, its twin not
