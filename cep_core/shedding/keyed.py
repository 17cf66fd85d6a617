"""Hybrid load shedding on the keyed vectorized engine, for many modelled devices at once
(dissertation §4.2-4.3 on :class:`cep_core.engine.keyed.KeyedEngine`).

A keyed query's partitions (keys) are served by devices (:class:`DeviceFleet`: each key
on one device, e.g. the meters of one gateway). :class:`KeyedShedder` feeds a session
step by step, one batch of events arriving at one time per step, and per device:

1. reads ℓ, the average or 95th percentile of the latencies of its recent events (all
   events of the batch may complete a match), against its bound θ; overloaded, the
   violation is ``cap = (ℓ − θ)/ℓ`` (Eq. 4.6);
2. *state shedding* (HyS, Hybrid; RS): classifies the device's live runs with the cost
   model (one vectorised tree walk per automaton state) into (state, class, slice) cells,
   chooses the shedding set 𝔻 of Eq. 4.8 over them (:func:`choose_shed_set`) and drops
   the runs in 𝔻 with ``drop_runs``; at most once per time slice (the delay j of
   §4.2.5), after which ℓ is judged on new latencies only;
3. *input shedding* (HyI, Hybrid; RI): while overloaded, masks the batch's events whose
   every label (the (state, class) pairs such events created in the history, from the
   cost model's event trees over their attributes and the predicates they pass alone,
   Eq. 4.9) is wholly in 𝔻, and those that can create nothing at all. The latter go
   first: they cover as much of the violation as their share of the device's work, and
   𝔻 (of HyI and Hybrid) is chosen for the rest only — Eq. 4.8 weighs partial matches,
   and events that create none would otherwise not count towards it. A filter holds at
   least one time slice, and until the latency the device would have without it (ℓ
   scaled by the work offered over the work served) is within the bound: with one batch
   a step, ℓ ≤ θ right after filtering says little of the load the filter keeps away;
4. feeds the batch with the mask (``feed(keep=...)``) and serves each kept event on its
   device: one cost unit for the event and one more when it created or extended its
   key's run (the events and partial matches that the engines count).

Everything is arrays over the batch, the runs and the devices; the only Python loop is
over the overloaded devices when a shedding set is chosen. Random strategies draw from a
hash of (seed, key, time), so a key's draws do not depend on which other keys share the
batch. Early curbing (§4.3.4) has no counterpart here: the keyed engine creates a run
only from an event, which the input filter already decides on.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from cep_core.engine.keyed_stepper import KeyedStepper
from cep_core.errors import QueryError
from cep_core.shedding.features import KEEP
from cep_core.shedding.fleet import DeviceFleet
from cep_core.shedding.knapsack import choose_shed_set

__all__ = ["KeyedShedder", "KEYED_STRATEGIES", "uniform_of"]

KEYED_STRATEGIES = ("NS", "RI", "RS", "HyI", "HyS", "Hybrid")
_INPUT = {"RI", "HyI", "Hybrid"}
_STATE = {"RS", "HyS", "Hybrid"}
_MODEL = {"HyI", "HyS", "Hybrid"}


def uniform_of(seed: int, key: np.ndarray, t: float) -> np.ndarray:
    """A uniform [0, 1) per key at time ``t`` (SplitMix64 finaliser of seed, key, time):
    the same for a key whatever else is in the batch.

    >>> u = uniform_of(1, np.array([5, 6]), 3.0)
    >>> bool(((0 <= u) & (u < 1)).all()), bool(uniform_of(1, np.array([5]), 3.0)[0] == u[0])
    (True, True)
    """
    with np.errstate(over="ignore"):
        x = (np.asarray(key).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             + np.uint64(seed & 0xFFFFFFFF) * np.uint64(0xBF58476D1CE4E5B9)
             + np.uint64(int(t * 1024) & 0xFFFFFFFFFFFF))
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)


class KeyedShedder(KeyedStepper):
    """Load shedding for ``session`` (a keyed session, one partition attribute) on
    ``len(unit_cost)`` devices (module doc), an engine of the protocol through
    :class:`~cep_core.engine.keyed_stepper.KeyedStepper` (its report: :meth:`report`).

    ``device_of``: maps an array of key values to device numbers; ``unit_cost`` [time
    units per cost unit] and ``bound`` [time units] per device (``bound`` None: shed
    nothing, only measure); ``model``: a fitted :class:`~cep_core.shedding.CostModel`
    (HyI, HyS, Hybrid need it); ``statistic``: ``"avg"`` or ``"p95"``; ``window``: the
    latencies per device that ℓ reads; ``min_samples``: how many it needs to judge."""

    name = "keyed-vectorized+shedding"
    reports = "shedding"

    def __init__(self, session: Any, strategy: str, device_of: Any,
                 unit_cost: np.ndarray, bound: np.ndarray | None = None, model: Any = None,
                 statistic: str = "avg", window: int = 64, min_samples: int = 16,
                 seed: int = 0, exact_limit: int = 64):
        if strategy not in KEYED_STRATEGIES:
            raise QueryError(f"shedding.strategy: unknown {strategy!r} for the keyed engine; "
                             f"one of {', '.join(KEYED_STRATEGIES)}")
        if strategy in _MODEL and model is None:
            raise QueryError(f"shedding.model: {strategy} needs a cost model")
        self._wrap(session)
        engine = self.engine
        self.strategy, self.model, self.statistic, self.seed = strategy, model, statistic, seed
        self.device_of, self.exact_limit, self.min_samples = device_of, exact_limit, \
            min_samples
        engine.track(*self._features_of(model))
        self.fleet = DeviceFleet(unit_cost, window)
        n = len(self.fleet)
        self.bound = None if bound is None or strategy == "NS" else \
            np.broadcast_to(np.asarray(bound, dtype=np.float64), (n,)).copy()
        self.window_len = engine.plan.window
        self.slices = model.slices if model is not None else 1
        self.slice_len = self.window_len / self.slices if self.window_len != math.inf \
            else math.inf
        self.cool_until = np.full(n, -np.inf)
        self.filter_until = np.full(n, -np.inf)  # an input filter holds at least a slice
        self.filtered: dict[int, frozenset] = {}  # device -> (state, class) wholly in 𝔻
        self.cap = np.zeros(n)
        self.pm_cap = np.zeros(n)  # the violation left to the partial matches
        self.step_work = np.zeros(n)  # each device's work offered at its latest step
        self.step_served = np.zeros(n)  # and the part of it that was served
        # what happened, per device
        self.events = np.zeros(n, dtype=np.int64)
        self.events_shed = np.zeros(n, dtype=np.int64)
        self.runs_shed = np.zeros(n, dtype=np.int64)
        self.device_work = np.zeros(n, dtype=np.int64)
        self.latency_sum = np.zeros(n)
        self.latencies: list[np.ndarray] = []
        self.dropped: list[tuple[float, np.ndarray]] = []  # (step time, keys) input-shed
        self.served: list[tuple[float, np.ndarray, np.ndarray]] = []  # (t, device, work)
        self.kept: np.ndarray | None = None

    # ------------------------------------------------------------------ a step
    def feed_step(self, batch: pd.DataFrame, as_frame: bool = True) -> Any:
        """Process one batch of events that arrive at one time (module doc); the
        session's outputs."""
        if not len(batch):
            return self.session.feed(batch, as_frame)
        t = self._step_time(batch)
        keys = batch[self.key].to_numpy()
        device = np.asarray(self.device_of(keys), dtype=np.int64)
        np.add.at(self.events, device, 1)
        code, labels = self._event_labels(batch) if self.strategy in _MODEL \
            and self.strategy in _INPUT and self.bound is not None else (None, None)
        if self.bound is not None:
            self._control(t, device, code, labels)
        keep = self._input_mask(keys, device, t, code, labels)
        eng = self.engine
        kid = eng.keyindex.find([keys])
        before = self._run_marks(kid)
        # the batch's events served, set before the session reads them (a fetcher
        # around this one serves their remote data)
        self.kept = keep
        out = self.session.feed(batch, as_frame, keep=keep)
        kid = eng.keyindex.find([keys])
        after = self._run_marks(kid)
        advanced = (after[0] >= 0) & ((before[0] < 0) | (after[0] != before[0])
                                       | (after[1] != before[1]) | (after[2] != before[2]))
        work = 1 + advanced[keep].astype(np.int64)
        dev = device[keep]
        np.add.at(self.events_shed, device[~keep], 1)
        if not keep.all():
            self.dropped.append((t, keys[~keep]))
        np.add.at(self.device_work, dev, work)
        self.step_served = np.bincount(dev, weights=work, minlength=len(self.fleet))
        self.step_work = self.step_served + np.bincount(device[~keep],
                                                        minlength=len(self.fleet))
        latency = self.fleet.serve(dev, t, work)
        np.add.at(self.latency_sum, dev, latency)
        self.latencies.append(latency)
        self.served.append((t, dev, work))
        return out

    def _run_marks(self, kid: np.ndarray) -> tuple[np.ndarray, ...]:
        """(state, first time, total Kleene length) of keys ``kid`` (-1: unknown key)."""
        eng = self.engine
        known = kid >= 0
        if len(eng.state) == 0:
            return (np.full(kid.size, -1), np.zeros(kid.size), np.zeros(kid.size))
        safe = np.where(known, kid, 0)
        state = np.where(known, eng.state[safe], -1)
        first = np.where(known, eng.first_t[safe], 0)
        length = sum((np.where(known, n[safe], 0) for n in eng.length.values()),
                     np.zeros(kid.size, dtype=np.int64))
        return state, first, length

    # ------------------------------------------------------------------ control
    def _control(self, t: float, device: np.ndarray, code: np.ndarray | None,
                 labels: list | None) -> None:
        fleet = self.fleet
        ell = fleet.statistic(self.statistic)
        judged = fleet.samples() >= self.min_samples
        over = judged & (ell > self.bound)
        self.cap = np.where(over, (ell - self.bound) / np.where(ell > 0, ell, 1.0), 0.0)
        self.pm_cap = self.cap
        if code is not None:
            # the events that can create nothing go first, at no cost in results; the
            # partial matches need only cover the rest of the violation (their share
            # of the work: the device's offered work at its previous step)
            free = np.array([lab is not None and not lab for lab in labels])[code]
            share = np.minimum(np.bincount(device[free], minlength=len(fleet))
                               / np.maximum(self.step_work, 1.0), 0.99)
            self.pm_cap = np.maximum(0.0, (self.cap - share) / (1.0 - share))
        # an input filter stops once a slice has passed and the latency the device would
        # have without it — ℓ scaled by the work offered over the work served, as when
        # a step's own work sets its latency — is within the bound
        unfiltered = ell * self.step_work / np.maximum(self.step_served, 1.0)
        lift = judged & (unfiltered <= self.bound) & (t >= self.filter_until)
        for d in np.flatnonzero(lift).tolist():
            self.filtered.pop(d, None)
        if not over.any():
            return
        act = np.flatnonzero(over)
        if self.strategy in _STATE or self.strategy == "HyI":
            self._shed(act, t)

    def _shed(self, devices: np.ndarray, t: float) -> None:
        """Shedding sets for the overloaded ``devices``: state strategies drop runs at
        most once per slice; HyI and Hybrid derive their input filters."""
        eng, strategy = self.engine, self.strategy
        runs = eng.live_runs(*self._features())
        rkeys = np.asarray(runs[self.key])
        rdev = np.asarray(self.device_of(rkeys), dtype=np.int64) if len(rkeys) else \
            np.zeros(0, dtype=np.int64)
        state_due = np.zeros(len(self.fleet), dtype=bool)
        if strategy in _STATE:
            state_due[devices] = t >= self.cool_until[devices]
        if strategy == "RS":
            doomed = state_due[rdev] & (uniform_of(self.seed, rkeys, t)
                                        < self.cap[rdev])
            self._drop(rkeys[doomed], rdev[doomed], devices[state_due[devices]], t)
            return
        cells = self._cells(runs, t)
        doomed = np.zeros(len(rkeys), dtype=bool)
        for d in devices.tolist():
            mine = np.flatnonzero(rdev == d)
            shed = self._shedding_set(cells[mine], self.pm_cap[d])
            if strategy in _INPUT:
                self.filtered[d] = _wholly(shed, cells[mine])
                self.filter_until[d] = t + self._slice()
            if state_due[d] and shed:
                doomed[mine] = np.isin(_codes(cells[mine]), _codes(np.array(sorted(shed))))
        self._drop(rkeys[doomed], rdev[doomed], devices[state_due[devices]], t)

    def _drop(self, keys: np.ndarray, dev: np.ndarray, acted: np.ndarray, t: float) -> None:
        if keys.size:
            self.session.drop_runs(keys)
            np.add.at(self.runs_shed, dev, 1)
        if acted.size:
            self.cool_until[acted] = t + self._slice()
            self.fleet.clear(acted)  # judge the shedding by the latencies after it

    def _slice(self) -> float:
        """The delay j of §4.2.5 before shedding is judged again: one time slice."""
        return self.slice_len if self.slice_len != math.inf else 0.0

    def _features(self) -> list[str]:
        return self._features_of(self.model)

    def _features_of(self, model: Any) -> list[str]:
        """The run features the model's classifiers read (the key aside)."""
        names: dict[str, None] = {}
        if model is not None:
            for sm in model.states.values():
                names.update(dict.fromkeys(sm.attrs))
        return [n for n in names if n.split(".", 1)[1] != self.key]

    def _cells(self, runs: dict, t: float) -> np.ndarray:
        """(runs, 3): state, class and time slice of each live run."""
        state = np.asarray(runs["state"], dtype=np.int64)
        age = t - np.asarray(runs["first_time"], dtype=np.float64)
        if self.slice_len == math.inf:
            sl = np.zeros(len(state), dtype=np.int64)
        else:
            sl = np.clip((age // self.slice_len).astype(np.int64), 0, self.slices - 1)
        cls = np.zeros(len(state), dtype=np.int64)
        for q in np.unique(state).tolist():
            sm = self.model.states.get(q)
            if sm is None or sm.tree is None:
                continue
            at = np.flatnonzero(state == q)
            x = np.column_stack([np.asarray(runs[a] if a.split(".", 1)[1] != self.key
                                            else runs[self.key], dtype=np.float64)[at]
                                 for a in sm.attrs])
            cls[at] = self.model.classify_many(q, x)
        return np.column_stack([state, cls, sl])

    def _shedding_set(self, cells: np.ndarray, cap: float) -> frozenset:
        """𝔻 of Eq. 4.8 over one device's live cells."""
        if not len(cells) or cap <= 0:
            return frozenset()
        items, counts = np.unique(cells, axis=0, return_counts=True)
        model = self.model
        plus, minus, free = [], [], []
        for (q, c, s), n in zip(items.tolist(), counts.tolist(), strict=True):
            gp, gm = model.values(q, c, s)
            plus.append(n * gp)
            minus.append(n * gm)
            free.append(not model.contributes(q, c, s))
        chosen = choose_shed_set(plus, minus, cap, self.exact_limit, free=free)
        return frozenset(tuple(items[i].tolist()) for i in chosen)

    # ------------------------------------------------------------------ input filter
    def _input_mask(self, keys: np.ndarray, device: np.ndarray, t: float,
                    code: np.ndarray | None, labels: list | None) -> np.ndarray:
        keep = np.ones(len(keys), dtype=bool)
        if self.bound is None or self.strategy not in _INPUT:
            return keep
        over = self.cap > 0
        if self.strategy == "RI":
            return ~(over[device] & (uniform_of(self.seed, keys, t) < self.cap[device]))
        for d, f in self.filtered.items():
            dropped = np.array([lab is not None and lab <= f for lab in labels], dtype=bool)
            mine = device == d
            keep[mine] = ~dropped[code[mine]]
        return keep

    def _event_labels(self, batch: pd.DataFrame) -> tuple[np.ndarray, list]:
        """Per event a code into the returned list of labels: what such an event could
        create (:meth:`CostModel.event_labels`), the empty set for a type the pattern
        does not read, None for one the history did not show. A batch of one type (a
        step of meter readings) is read whole, without taking its rows apart."""
        code = np.zeros(len(batch), dtype=np.int64)
        labels: list = []
        plan, model = self.engine.plan, self.model
        kinds, types = pd.factorize(batch["type"], use_na_sentinel=False)
        whole = len(types) == 1
        for i, typ in enumerate(list(types)):
            at = slice(None) if whole else np.flatnonzero(kinds == i)
            em = model.events.get(typ)
            if typ not in plan.types and typ not in plan.neg_types or em is None \
                    or em.tree is None:
                code[at] = len(labels)
                labels.append(frozenset() if typ not in plan.types and typ not in
                              plan.neg_types else None if em is None
                              else em.leaf_labels.get(0))
                continue
            rows = batch if whole else batch.iloc[at]
            x = np.column_stack([rows[a].to_numpy(np.float64) for a in em.attrs]
                                + ([self.engine.event_tests(rows, em.tests)
                                    .astype(np.float64)] if em.tests else []))
            leaf = em.tree.leaves(x)
            leaves = np.flatnonzero(np.bincount(leaf))  # the leaves reached, ascending
            rank = np.zeros(int(leaves[-1]) + 1, dtype=np.int64)
            rank[leaves] = np.arange(len(leaves))
            code[at] = len(labels) + rank[leaf]
            labels += [em.leaf_labels.get(lf) for lf in leaves.tolist()]
        return code, labels

    # ------------------------------------------------------------------ results
    def report(self) -> dict[str, Any]:
        """Per device: events, events shed, runs shed, work [cost units], busy time,
        latency sum; every processed event's latency; and the key and step time of every
        event the input filter dropped (``shed_keys``, ``shed_times``)."""
        times = [np.full(len(k), t) for t, k in self.dropped]
        return {"events": self.events, "events_shed": self.events_shed,
                "runs_shed": self.runs_shed, "work": self.device_work, "busy": self.fleet.busy,
                "latency_sum": self.latency_sum,
                "latencies": np.concatenate(self.latencies) if self.latencies
                else np.zeros(0),
                "shed_keys": np.concatenate([k for _, k in self.dropped]) if self.dropped
                else np.zeros(0, dtype=np.int64),
                "shed_times": np.concatenate(times) if times else np.zeros(0)}


    def report_at(self, unit_cost: np.ndarray) -> dict[str, Any]:
        """The :meth:`report` of this run had its devices cost ``unit_cost`` per unit.

        Only for a shedder that shed nothing (``NS``, or no bound): then what is served
        does not depend on the latencies, and serving the same steps on devices of other
        costs gives their latencies without evaluating the query again."""
        if self.events_shed.any() or self.runs_shed.any():
            raise QueryError("report_at: the run shed events, so its latencies decided "
                             "what it served")
        fleet = DeviceFleet(unit_cost, self.fleet.window.shape[1])
        latency_sum = np.zeros(len(fleet))
        latencies = []
        for t, dev, work in self.served:
            latency = fleet.serve(dev, t, work)
            np.add.at(latency_sum, dev, latency)
            latencies.append(latency)
        return {**self.report(), "busy": fleet.busy, "latency_sum": latency_sum,
                "latencies": np.concatenate(latencies) if latencies else np.zeros(0)}


def _codes(cells: np.ndarray) -> np.ndarray:
    """One integer per (state, class, slice) row."""
    cells = np.asarray(cells, dtype=np.int64).reshape(-1, 3)
    return (cells[:, 0] << 40) + (cells[:, 1] << 20) + cells[:, 2]


def _wholly(shed: frozenset, cells: np.ndarray) -> frozenset:
    """The (state, class) pairs whose live cells are all in ``shed``, and KEEP never."""
    whole: dict[tuple, bool] = {}
    for q, c, s in cells.tolist():
        whole[(q, c)] = whole.get((q, c), True) and (q, c, s) in shed
    return frozenset(k for k, w in whole.items() if w and k != KEEP)
