"""The meter stage's runs of Listing 6.1, kept between micro-batches where they ran.

The meter stage decides a gateway's tests one micro-batch at a time and runs the meter
tier over the tests so far each time (:mod:`drsim.pipeline.stream_tiers`). With load
shedding and remote profiles each run steps the gateways' modelled devices event by
event, so running every test again at every micro-batch grows with the square of the
tests. A :class:`~drsim.utility.session_feed.MeterCarry` keeps a run's feeder and feeds
it only the new tests; the carries live in the memory of the process that ran the stage
(a cache: the stage's state stays the truth). A micro-batch of a gateway that lands
where its carries are not (another worker, a restart) runs its tests so far again, as
it would without them, and keeps the carries there from then on: the result is the same
either way (docs/streaming.md, "The meter stage's runs"). The group leaders' and the
utility's runs of Listings 6.2 and 6.3 are kept alike.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from drsim.utility.leader_carry import LeaderCarry
from drsim.utility.monitoring import MonitoringPlan
from drsim.utility.session_feed import MeterCarry

__all__ = ["KEPT_RUNS", "forget", "kept_leader", "kept_run", "kept_utility"]

#: the most runs a process keeps (the least recently used go first): a gateway of 5,000
#: households keeps a few MB per run, a leader's far less
KEPT_RUNS = 256
_kept: OrderedDict[tuple, MeterCarry | LeaderCarry] = OrderedDict()


def _kept_one(key: tuple, new: Callable[[], Any]) -> Any:
    """The carry kept under ``key``, made by ``new()`` if this process has none (the least
    recently used go first beyond :data:`KEPT_RUNS`)."""
    carry = _kept.pop(key, None) or new()
    _kept[key] = carry
    while len(_kept) > KEPT_RUNS:
        _kept.popitem(last=False)
    return carry


def kept_run(stream: str, gateway: int, name: str, plain: bool, plan: MonitoringPlan
             ) -> MeterCarry:
    """The carry of one run of the meter tier: stream ``stream``'s gateway ``gateway``,
    pass ``name``, the plain twin or not (each pass has one run of each), new if this
    process has none.

    Parameters
    ----------
    stream : str
        The stream's id (:attr:`drsim.pipeline.stream_tiers.StreamContext.stream_id`).
    gateway : int
        The gateway (chunk) index.
    name : str
        The monitored pass.
    plain : bool
        Whether the run is the pass's plain twin (:func:`drsim.pipeline.tasks.meter_inputs`).
    plan : drsim.utility.monitoring.MonitoringPlan
        The program's monitoring (every test).

    Returns
    -------
    drsim.utility.session_feed.MeterCarry
        The run, kept.
    """
    return _kept_one((stream, gateway, name, plain), lambda: MeterCarry(plan))


def kept_leader(stream: str, name: str, group: int) -> LeaderCarry:
    """The carry of a group leader's runs of Listing 6.2 (:mod:`drsim.utility.leader_carry`):
    stream ``stream``'s pass ``name`` (a twin too) at group ``group``, new if this process
    has none.

    Parameters
    ----------
    stream : str
        The stream's id.
    name : str
        The monitored pass.
    group : int
        The group.

    Returns
    -------
    drsim.utility.leader_carry.LeaderCarry
        The runs, kept.
    """
    return _kept_one(("leader", stream, name, group), LeaderCarry)


def kept_utility(stream: str, name: str) -> LeaderCarry:
    """The carry of the utility's runs of Listing 6.3 on its device
    (:meth:`drsim.utility.leader_carry.LeaderCarry.at_utility`): stream ``stream``'s pass
    ``name`` (a twin too), new if this process has none.

    Parameters
    ----------
    stream : str
        The stream's id.
    name : str
        The monitored pass.

    Returns
    -------
    drsim.utility.leader_carry.LeaderCarry
        The runs, kept.
    """
    return _kept_one(("utility", stream, name), LeaderCarry.at_utility)


def forget(stream: str, gateway: int, name: str) -> None:
    """Drop the runs kept of a gateway's pass whose program is decided."""
    for key in [k for k in _kept if k[:3] == (stream, gateway, name)]:
        del _kept[key]
