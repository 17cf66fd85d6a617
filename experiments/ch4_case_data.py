"""Generated streams and queries of the dissertation's load-shedding case studies
(§4.4.4, Figures 4.1, 4.18 and 4.19): Citi Bike trips for Listing 4.1 and Google
cluster task events for Listing 4.3.

**Generated, not the public data.** The source runs on Citi Bike's trips of October 2018
and on the Google cluster-usage traces of May 2011 (clusterdata-2011-2); no small sample
of either is at hand here (the trips are published as monthly files of about 1.9 million
rows, the traces as about 41 GB compressed), so these generators build streams with the
characteristics the dissertation states, and the results are labelled as generated.
What is stated, and what was chosen (the text is silent):

* trips (§4.1, Example 4.1, §4.4.4.1): one event per trip (type ``BikeTrip``, stamped
  with the trip's end [s]) with ``bike``, ``start`` and ``end`` station and the user type
  (annual member, 24-hour or 3-day pass: the selectivity-based baselines may exploit
  it); a bike's next trip usually starts where its last ended (chosen: with probability
  0.9, otherwise it was moved); stations 7, 8 and 9 are popular destinations (chosen:
  four times as likely as another station); the number of partial matches spikes
  (Figure 4.1; chosen: a rush of three times the base demand over the middle fifth of
  the stream); trips last a lognormal time, median 6 min for members and 15 min for pass
  users (chosen);
* task events (§4.4.4.2): the lifecycle events of tasks (``Submit``, ``Schedule``,
  ``Evict``, ``Fail``, ``Finish``, ``Kill``) with ``task_id``, ``machine`` (-1 for a
  submission) and ``priority`` 0-11; an evicted task is submitted again and rescheduled
  (chosen: on the same machine with probability 0.2, so that Listing 4.3's ``!=`` has
  something to reject); the chances (chosen): eviction 0.45 at the free priorities 0-1,
  0.2 at 2-8 and 0.03 at the production priorities 9-11, up to four times a task; a
  task that is not evicted fails with probability 0.15, is killed with 0.1 and finishes
  otherwise; it waits Exp(30 s) to be scheduled and runs Exp(10 min).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BIKE_QUERY", "CLUSTER_QUERY", "make_trips", "task_event_columns",
           "make_task_events", "GENERATORS"]

#: Listing 4.1 with the minimal path length of §4.4.4.1 (five stations: at least five
#: trips in ``a[]``); its RETURN clause left out (recall compares the matches' events)
BIKE_QUERY = ("PATTERN SEQ(BikeTrip+ a[], BikeTrip b) WHERE a[i+1].bike=a[i].bike "
              "AND b.end IN {7,8,9} AND a[last].bike=b.bike AND a[i+1].start=a[i].end "
              "AND LENGTH(a+[]) >= 5 WITHIN 1h")

#: Listing 4.3 (``WHERE [task_id]`` read as ``SAME[task_id]``)
CLUSTER_QUERY = ("PATTERN SEQ(Submit a, Schedule b, Evict c, Schedule d, Evict e, "
                 "Schedule f, Fail g) WHERE SAME[task_id] AND b.machine=c.machine "
                 "AND b.machine!=d.machine AND d.machine=e.machine "
                 "AND d.machine!=f.machine AND f.machine=g.machine WITHIN 1h")

USER_TYPES = ("Subscriber", "Customer-24h", "Customer-3d")
LIFECYCLE = ("Submit", "Schedule", "Evict", "Fail", "Finish", "Kill")


def _intensity(t: np.ndarray, span: float, rush: float) -> np.ndarray:
    """Demand relative to the base: ``rush`` over the middle fifth of ``span``."""
    return np.where((t >= 0.4 * span) & (t < 0.6 * span), rush, 1.0)


def make_trips(n: int, rate: float = 0.05, seed: int = 0, bikes: int = 60,
               stations: int = 30, chained: float = 0.9, rush: float = 3.0) -> list[dict]:
    """``n`` trip events, at ``rate`` trips/s outside the rush (module doc).

    >>> trips = make_trips(200, seed=1)
    >>> len(trips), sorted(trips[0]) == ["bike", "end", "start", "time", "type", "usertype"]
    (200, True)
    >>> all(a["time"] <= b["time"] for a, b in zip(trips, trips[1:]))
    True
    """
    rng = np.random.default_rng(seed)
    steps = 2 * n // bikes + 2
    span = n / rate                                     # [s], the rush at its middle
    weights = np.ones(stations)
    weights[6:9] = 4.0                                  # stations 7, 8, 9
    weights /= weights.sum()
    user = rng.choice(3, size=(bikes, steps), p=[0.85, 0.1, 0.05])
    median = np.where(user == 0, 360.0, 900.0)
    duration = median * rng.lognormal(0.0, 0.5, size=(bikes, steps))
    end = rng.choice(stations, size=(bikes, steps), p=weights) + 1
    moved = rng.random((bikes, steps)) >= chained
    anywhere = rng.integers(1, stations + 1, size=(bikes, steps))
    idle_mean = max(1.0, bikes / rate - 420.0)          # a bike's cycle: bikes / rate [s]
    start = np.empty((bikes, steps), dtype=np.int64)
    stop = np.empty((bikes, steps))
    start[:, 0] = anywhere[:, 0]
    clock = rng.uniform(0, idle_mean, size=bikes)
    for j in range(steps):                              # vectorised over the bikes
        if j:
            start[:, j] = np.where(moved[:, j], anywhere[:, j], end[:, j - 1])
            clock = stop[:, j - 1] + rng.exponential(idle_mean / _intensity(
                stop[:, j - 1], span, rush))
        stop[:, j] = clock + duration[:, j]
    order = np.argsort(stop, axis=None, kind="stable")[:n]
    b, j = np.unravel_index(order, stop.shape)
    return [{"type": "BikeTrip", "time": round(float(t), 3), "bike": int(bk),
             "start": int(s), "end": int(e), "usertype": USER_TYPES[u]}
            for t, bk, s, e, u in zip(stop[b, j].tolist(), b.tolist(), start[b, j].tolist(),
                                      end[b, j].tolist(), user[b, j].tolist(), strict=True)]


def _lifecycles(rng: np.random.Generator, tasks: int, machines: int,
                span: float) -> tuple[np.ndarray, ...]:
    """Every task's events as parallel arrays (time, kind, task, machine)."""
    submit = np.sort(rng.uniform(0, span, tasks))
    priority = rng.integers(0, 12, tasks)
    p_evict = np.select([priority <= 1, priority <= 8], [0.45, 0.2], 0.03)
    machine = rng.integers(0, machines, tasks)
    t, alive = submit.copy(), np.ones(tasks, dtype=bool)
    cols: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]] = [
        (submit, 0, np.arange(tasks), np.full(tasks, -1))]
    for attempt in range(5):                            # vectorised over the tasks
        who = np.flatnonzero(alive)
        t[who] += rng.exponential(30.0, who.size)
        cols.append((t[who].copy(), 1, who, machine[who].copy()))
        t[who] += rng.exponential(600.0, who.size)
        evicted = (rng.random(who.size) < p_evict[who]) & (attempt < 4)
        ends = rng.choice([3, 5, 4], size=who.size, p=[0.15, 0.1, 0.75])
        kind = np.where(evicted, 2, ends)
        cols.append((t[who].copy(), kind, who, machine[who].copy()))
        again = who[evicted]
        cols.append((t[again].copy(), 0, again, np.full(again.size, -1)))
        other = (machine[again] + rng.integers(1, machines, again.size)) % machines
        machine[again] = np.where(rng.random(again.size) < 0.2, machine[again], other)
        alive[:] = False
        alive[again] = True
    time = np.concatenate([c[0] for c in cols])
    kind = np.concatenate([np.broadcast_to(c[1], c[0].shape) for c in cols])
    task = np.concatenate([c[2] for c in cols])
    mach = np.concatenate([c[3] for c in cols])
    return time, kind, task, mach, priority


def task_event_columns(n: int, rate: float = 0.5, seed: int = 0,
                       machines: int = 40) -> dict[str, np.ndarray]:
    """The first ``n`` task events of a trace at about ``rate`` events/s (module doc) as
    columns in time order: ``time`` [s], ``kind`` (the index into :data:`LIFECYCLE`),
    ``task_id``, ``machine`` and ``priority``.

    >>> cols = task_event_columns(300, seed=1, machines=12)
    >>> len(cols["time"]), int(cols["machine"].max()) < 12
    (300, True)
    """
    rng = np.random.default_rng(seed)
    tasks = n // 2 + 10                                 # about 2.6 events a task
    span = tasks * 2.6 / rate
    time, kind, task, mach, priority = _lifecycles(rng, tasks, machines, span)
    order = np.argsort(time, kind="stable")[:n]
    return {"time": time[order], "kind": kind[order], "task_id": task[order],
            "machine": mach[order], "priority": priority[task[order]]}


def make_task_events(n: int, rate: float = 0.5, seed: int = 0,
                     machines: int = 40) -> list[dict]:
    """The events of :func:`task_event_columns` as dicts (``type`` the life-cycle event).

    >>> ev = make_task_events(300, seed=1)
    >>> len(ev), {e["type"] for e in ev} <= set(LIFECYCLE)
    (300, True)
    >>> all(a["time"] <= b["time"] for a, b in zip(ev, ev[1:]))
    True
    """
    c = task_event_columns(n, rate, seed, machines)
    return [{"type": LIFECYCLE[k], "time": round(t, 3), "task_id": i, "machine": m,
             "priority": p}
            for t, k, i, m, p in zip(c["time"].tolist(), c["kind"].tolist(),
                                     c["task_id"].tolist(), c["machine"].tolist(),
                                     c["priority"].tolist(), strict=True)]


#: the generators by the name a case of :mod:`experiments.reproduce_ch4` gives its data
GENERATORS = {"citibike": make_trips, "cluster": make_task_events}
