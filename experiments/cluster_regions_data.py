"""Generated data for the cluster case study of the dissertation's §5.6.4 (Listing 5.3,
Figure 5.16b): Google-cluster-like task events as the stream, the region of each machine
as remote data. The source runs on the Google cluster traces; this one is generated,
and every number below is an assumption of drsim's unless the text states it.

**Stream.** The task life cycles of :func:`experiments.ch4_case_data.task_event_columns`
(the generator of Figure 4.19, its chances unchanged: a task is evicted with probability
0.45, 0.2 or 0.03 by priority, up to four times, and rescheduled on another machine with
probability 0.8; one that is not evicted fails with probability 0.15), on
:data:`MACHINES` machines (the text: "a large-scale cluster of 12.5k machines") at
:data:`RATE` events/s (chosen), ``time`` in seconds. Listing 5.3 detects a task
submitted, scheduled and evicted on one machine, rescheduled and evicted on another in a
different region, then rescheduled on a third in yet another region where it fails.
Every event with a machine carries that machine's ``region`` (a Submit, without a
machine, region -1): the listing reads ``b.region`` and ``d.region`` from the events.

**Remote data** (:func:`remote_table`): the regions of each machine, under the machine's
id: the listing's ``b.region NOT IN REMOTE[d.machine]`` reads the region of the machine
a task is rescheduled on from the remote database, as a collection (one region each).
The machines are split into :data:`REGIONS` regions (chosen) of consecutive ids
(:func:`region_of`); a task moved to another machine (uniformly drawn) lands in another
region with probability about 1 − 1/REGIONS.

>>> events = stream(2_000, machines=100, regions=4, seed=1)
>>> sorted({e["type"] for e in events}) == ["Evict", "Fail", "Finish", "Kill",
...                                         "Schedule", "Submit"]
True
>>> all(e["region"] == region_of(e["machine"], 100, 4) for e in events)
True
>>> remote_table(100, 4)[99]
(3,)
"""

from __future__ import annotations

import numpy as np

from experiments.ch4_case_data import LIFECYCLE, task_event_columns

__all__ = ["LISTING_5_3", "MACHINES", "REGIONS", "RATE", "region_of", "remote_table",
           "stream"]

#: Listing 5.3 as the tests' fixture holds it (``WHERE [task_id]`` read as
#: ``SAME[task_id]``)
LISTING_5_3 = (
    "PATTERN SEQ(Submit a, Schedule b, Evict c, Schedule d, Evict e, Schedule f, "
    "Fail g) WHERE SAME[task_id] AND b.machine=c.machine "
    "AND b.region NOT IN REMOTE[d.machine] AND d.machine=e.machine "
    "AND f.machine=g.machine AND d.region NOT IN REMOTE[f.machine] WITHIN 1h")

MACHINES = 12_500  # the text's cluster
REGIONS = 25  # chosen: 500 machines a region
RATE = 50.0  # chosen [events/s]


def region_of(machine, machines: int = MACHINES, regions: int = REGIONS):
    """The region of ``machine`` (an id or an array of them; -1, no machine: -1): the
    machines in ``regions`` blocks of consecutive ids.

    >>> region_of(np.array([0, 499, 500, 12_499, -1]))
    array([ 0,  0,  1, 24, -1])
    """
    m = np.asarray(machine)
    return np.where(m >= 0, m * regions // machines, -1)


def remote_table(machines: int = MACHINES, regions: int = REGIONS) -> dict[int, tuple]:
    """The remote database: each machine's regions (a one-element tuple) by its id."""
    return {m: (r,) for m, r in enumerate(region_of(np.arange(machines), machines,
                                                    regions).tolist())}


def stream(n: int, machines: int = MACHINES, regions: int = REGIONS, rate: float = RATE,
           seed: int = 0) -> list[dict]:
    """The first ``n`` task events of a trace (module doc), in time order, each with its
    machine's ``region``."""
    c = task_event_columns(n, rate, seed, machines)
    region = region_of(c["machine"], machines, regions)
    return [{"type": LIFECYCLE[k], "time": round(t, 3), "task_id": i, "machine": m,
             "region": r, "priority": p}
            for t, k, i, m, r, p in zip(c["time"].tolist(), c["kind"].tolist(),
                                        c["task_id"].tolist(), c["machine"].tolist(),
                                        region.tolist(), c["priority"].tolist(),
                                        strict=True)]
