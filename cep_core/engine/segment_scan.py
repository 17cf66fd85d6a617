"""A whole-batch path of the keyed engine for one Kleene variable under strict contiguity.

The keyed vectorized engine (:mod:`cep_core.engine.keyed`) processes a batch in waves,
one event per key at a time. For the queries below, a batch is processed at once
instead, with array scans over the events sorted by key, and the outputs, counters and
state are those the waves would give (the differential tests run both).

**The class.** The keyed class, and: the pattern is one Kleene element ``T+ v[]``
without ``NEG``; the policy is strict contiguity (one run per key); the predicates of
the Kleene step (``v[i]`` to ``v[i+1]``) read only the new event and the one before it
(``v[i]``, ``v[i+1]``, ``v[last]``, parameters, lookups), not ``v[1]``, ``v[n]`` or
``LENGTH``.
Acceptance predicates and ``RETURN`` may read anything the keyed engine reads.
Listing 6.1 of the dissertation (§6.2.2, the DR meter tier) is of this class.

**Why one scan suffices.** Under strict contiguity the run of a key after its event
``j`` is live when ``j`` extends it (the run was live after the key's previous event
and ``j`` passes the step predicates: ``a_j``) or starts one (``b_j``, the start
predicates; tried only when ``j`` does not extend). So ``live_j = (live_{j-1} ∧ a_j) ∨
b_j``, which holds exactly when some ``b_i`` with ``i ≤ j`` is followed by ``a`` on
every event of the key after ``i`` up to ``j``: a comparison of two running maxima
(the last ``i`` with ``b_i``, the last event that fails ``a``). A run's events then
lie between its start and ``j``, so ``v[1]``, ``v[n]``, ``v[i]`` and ``LENGTH`` are
gathers at known positions.

The scan applies to a batch when no key of it enters with a live run, no event lacks
an attribute the query reads, the window (``WITHIN``) does not close any run of the
batch, and no row it evaluates has a lookup key missing from its table. Otherwise
:func:`scan_batch` changes nothing and returns False, and the waves run the batch (and
raise the error where there is one).

``eng`` is the running :class:`~cep_core.engine.keyed.KeyedEngine` (not imported here:
the engine imports this module).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from cep_core.engine.keyed_batch import Batch, Outputs
from cep_core.engine.matching import STRICT
from cep_core.engine.vectorize import fields, passes
from cep_core.plan import START

__all__ = ["scan_supported", "scan_batch"]

_STEP_SLOTS = ("single", "back0", "last", "back1")  # what the Kleene step may read


class _Fallback(Exception):
    """The batch is outside what the scan processes; the waves run it."""


def scan_supported(eng: Any) -> bool:
    """Whether batches of ``eng`` may take the scan (see the module doc)."""
    plan, c = eng.plan, eng.c
    if eng.policy != STRICT or len(plan.positions) != 1 or not plan.positions[0].kleene \
            or not plan.extendable[0] or plan.negs:
        return False
    (take,) = plan.out_edges[0]
    for p in take.preds:
        pred, _, lo = c.preds[p.index]
        if pred.mode == "incremental" and 1 - pred.anchor_offset < lo:
            return False  # the step would test it on some lengths only
        if any(r[0] != "attr" or r[2] not in _STEP_SLOTS for r in c.refs_of[p.index]):
            return False
    return True


class _ScanEnv:
    """What a compiled expression reads for the events at key-major positions ``pos``,
    in runs that start at positions ``r0`` and have ``newlen`` events with them (an
    array, or one number for every row)."""

    __slots__ = ("batch", "order", "pos", "r0", "newlen", "size", "deferred", "rows")

    def __init__(self, batch: Batch, order: np.ndarray, pos: np.ndarray | None,
                 r0: np.ndarray | None, newlen: np.ndarray | int):
        """``pos`` None: every position (and ``r0`` None: runs of one event)."""
        self.batch, self.order, self.newlen = batch, order, newlen
        self.pos = np.arange(order.size) if pos is None else pos
        self.r0 = self.pos if r0 is None else r0
        self.size = self.pos.size
        self.rows = order if pos is None else order[pos]
        self.deferred = np.zeros(self.size, dtype=bool)

    def _at(self, attr: str, rows: np.ndarray) -> np.ndarray:
        return self.batch.cols[attr][rows]

    def _shorter(self, n: int) -> np.ndarray | None:
        """Rows whose run has fewer than ``n`` events (None: none)."""
        if isinstance(self.newlen, int):
            return None if self.newlen >= n else np.ones(self.size, dtype=bool)
        return self.newlen < n

    def ref(self, key: tuple) -> tuple[Any, Any]:
        if key[0] == "len":
            return self.newlen, None
        _, _, slot, a, n = key
        if slot in ("single", "back0", "last"):
            return self._at(a, self.rows), None
        if slot == "back1":
            return self._at(a, self.order[self.pos - 1]), self._shorter(2)
        if slot == "first":
            return self._at(a, self.order[self.r0]), None
        at = np.minimum(self.r0 + (n - 1), self.order.size - 1)  # nth
        return self._at(a, self.order[at]), self._shorter(n)


def _masks(eng: Any, preds, b: Batch, env: _ScanEnv, local: dict) -> list[tuple]:
    """Per predicate, in order, over the rows of ``env``: ``(index, holds, missing)``,
    as :meth:`KeyedEngine._check` evaluates each (``missing``: rows whose lookup key is
    not in its table, or None). ``local`` keeps the predicates that read only the new
    event, over every row, between calls with the same rows."""
    out = []
    for p in preds:
        pred, fn, lo = eng.c.preds[p.index]
        if p.index in eng.c.local and env.pos.size == env.order.size:
            if p.index not in local:
                every, missing = eng._local_values(p.index, b)
                local[p.index] = (every[env.rows],
                                  missing[env.rows] if missing is not None else None)
            ok, missing = local[p.index]
        else:
            env.deferred[:] = False
            ok = passes(fn(env), env.size)
            missing = env.deferred.copy() if env.deferred.any() else None
        if pred.mode == "incremental":
            tested = env.newlen - 1 - pred.anchor_offset >= lo
            if not np.all(tested):
                ok = ok | ~tested
                missing = missing & tested if missing is not None else None
        out.append((p.index, ok, missing))
    return out


def _passing(masks: list[tuple], reach: np.ndarray, tally: list) -> np.ndarray:
    """The rows of ``reach`` that pass every predicate in order; the evaluations and
    passes of each go to ``tally`` as (index, evaluated, passed)."""
    at = reach
    for index, holds, missing in masks:
        evaluated = int(np.count_nonzero(at))
        if missing is not None and (missing & at).any():
            raise _Fallback  # the waves raise the missing entry's error
        at = at & holds
        tally.append((index, evaluated, int(np.count_nonzero(at))))
    return at


def _keys_sorted(kid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, first)``: the batch positions in key-major order (stream order per
    key) and where each key's segment begins in it."""
    order = np.argsort(kid, kind="stable")
    k = kid[order]
    first = np.empty(k.size, dtype=bool)
    first[0] = True
    np.not_equal(k[1:], k[:-1], out=first[1:])
    return order, first


def _last_where(mask: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """At each position, the last position at or before it where ``mask`` holds (-1
    before the first); ``idx`` is ``arange(mask.size)``."""
    return np.maximum.accumulate(np.where(mask, idx, -1))


def scan_batch(eng: Any, call: Any, b: Batch, rows: np.ndarray, kid: np.ndarray,
               typ: np.ndarray, out: Outputs) -> bool:
    """Process the kept events ``rows`` (key ids ``kid``, type codes ``typ``) of batch
    ``b`` at once (``call``: the values of the engine's call of ``feed``); False, with
    nothing changed, when the batch is outside the scan."""
    if any(a in b.missing for a in eng.attrs) or (eng.live_count() and
                                                   (eng.state[kid] >= 0).any()):
        return False
    try:
        return _scan(_ScanView(eng, call), b, rows, kid, typ, out)
    except _Fallback:
        return False


class _ScanView:
    """The engine as :func:`_scan` reads it: its plan and state, with the values of the
    call of ``feed`` being run (the work tally by a column, the predicates on the new
    event alone) and the store of its state."""

    def __init__(self, eng: Any, call: Any):
        self._eng, self._call = eng, call
        self._work_codes, self._tally = call.work_codes, call.tally
        self._put = eng.stream_state.put

    def __getattr__(self, name: str) -> Any:
        return getattr(self._eng, name)

    def _local_values(self, index: int, b: Batch) -> tuple:
        return self._eng._local_values(self._call, index, b)


def _scan(eng: Any, b: Batch, rows, kid, typ, out) -> bool:
    """The batch at once (module doc): the predicates of every event as if offered, the
    runs they make, the matches, then the commit."""
    plan = eng.plan
    (begin,) = plan.out_edges[START]
    (take,) = plan.out_edges[0]
    order, first = _keys_sorted(kid)
    n = order.size
    rows_k = order if n == b.n else rows[order]  # batch rows in key-major order
    fits = typ == eng.types[plan.positions[0].type]  # the event may be the element's
    fits = np.ones(n, dtype=bool) if fits.all() else fits[order]

    # the Kleene step (a_j) and the start (b_j) of every event, as if offered
    local: dict = {}
    step = _masks(eng, take.preds, b, _ScanEnv(b, rows_k, None, None, 2), local)
    start = _masks(eng, begin.preds, b, _ScanEnv(b, rows_k, None, None, 1), local)
    runs = _runs(step, start, fits, first)
    t = b.cols["time"][rows_k]
    _check_window(t, runs, plan.window)

    tally: list = []
    _passing(step, runs.before & fits, tally)
    _passing(start, fits & ~runs.extended, tally)
    at = np.flatnonzero(runs.live)
    acc_env = _ScanEnv(b, rows_k, at, runs.r0[at], runs.newlen[at])
    accept = plan.accept_preds.get(0, ())
    done = at[_passing(_masks(eng, accept, b, acc_env, {}), np.ones(at.size, bool), tally)]
    fields = _returns(eng, b, rows_k, done, runs.r0[done], runs.newlen[done])

    _count(eng, tally, runs, done, rows_k)
    if done.size:
        out.add(rows_k[done], 0, fields, b.cols["time"][rows_k[done]])
    _store(eng, b, kid, order, first, rows_k, t, runs)
    return True


class _Runs(NamedTuple):
    """Where the run of each event's key stands, at key-major positions (module doc)."""

    live: np.ndarray      # a run is live after the event
    before: np.ndarray    # a run was live after the key's previous event
    extended: np.ndarray  # the event extends that run
    started: np.ndarray   # the event starts a run
    r0: np.ndarray        # where the live run began (meaningful where live)
    newlen: np.ndarray    # its events up to this one (meaningful where live)


def _runs(step: list[tuple], start: list[tuple], fits: np.ndarray,
          first: np.ndarray) -> _Runs:
    """The runs from the masks of the Kleene step (``a_j``) and of the start (``b_j``):
    ``live_j = (live_{j-1} ∧ a_j) ∨ b_j``, per key (module doc)."""
    n = fits.size
    idx = np.arange(n)
    a = fits & ~first
    for _, holds, _ in step:
        a = a & holds
    s = fits.copy()
    for _, holds, _ in start:
        s = s & holds
    live = _last_where(s, idx) >= _last_where(~a, idx)
    before = np.zeros(n, dtype=bool)
    before[1:] = live[:-1]
    before &= ~first  # live after the key's previous event
    extended = before & a
    started = live & ~extended
    r0 = _last_where(started, idx)
    return _Runs(live, before, extended, started, r0, idx - r0 + 1)


def _check_window(t: np.ndarray, runs: _Runs, window: float) -> None:
    """:class:`_Fallback` when the window closes a run the scan would extend (``t``: the
    events' times, key-major)."""
    if t.size and t.max() - t.min() > window:  # the waves close a run that is too old
        opened = t[np.maximum(np.concatenate(([0], runs.r0[:-1])), 0)]  # run live before j
        if (runs.before & (t - opened > window)).any():
            raise _Fallback


def _count(eng: Any, tally: list, runs: _Runs, done: np.ndarray, rows_k: np.ndarray) -> None:
    """The commit's counters: the predicates' tallies, the partial matches and outputs,
    and the work by value of a column (:meth:`KeyedEngine.feed`)."""
    c, stats = eng.counters, eng.stats
    for index, evaluated, passed in tally:
        c.predicates += evaluated
        stats.pred_evaluated[index] += evaluated
        stats.pred_passed[index] += passed
    c.pm_extended += int(np.count_nonzero(runs.extended))
    c.pm_dropped += int(np.count_nonzero(runs.before & ~runs.extended))
    c.pm_created += int(np.count_nonzero(runs.started))
    c.outputs += done.size
    if eng._work_codes is not None:  # the work by value of a column (KeyedEngine.feed)
        codes, m = eng._work_codes[rows_k], eng._tally.shape[1]
        for i, at_event in ((1, runs.started), (2, runs.extended)):
            eng._tally[i] += np.bincount(codes[at_event], minlength=m)
        eng._tally[3] += np.bincount(codes[done], minlength=m)


def _store(eng: Any, b: Batch, kid: np.ndarray, order: np.ndarray, first: np.ndarray,
           rows_k: np.ndarray, t: np.ndarray, runs: _Runs) -> None:
    """The commit's state: every key's run after its last event of the batch, with the
    values its predicates read later."""
    var = eng.plan.positions[0].var
    last = np.flatnonzero(np.append(first[1:], True))
    live, r0, newlen = runs.live, runs.r0, runs.newlen
    keys = kid[order[last]]
    eng.state[keys] = np.where(live[last], 0, -1)
    on = last[live[last]]
    kon = kid[order[on]]
    eng.first_t[kon] = t[r0[on]]
    eng.length[var][kon] = newlen[on]
    for sk in eng.store_keys:
        kind, _, attr, nth = sk
        col = b.cols[attr]
        if kind == "last":
            eng._put(sk, kon, col[rows_k[on]])
        elif kind == "first":
            eng._put(sk, kon, col[rows_k[r0[on]]])
        else:  # nth
            has = newlen[on] >= nth
            eng._put(sk, kon[has], col[rows_k[r0[on[has]] + nth - 1]])


def _returns(eng: Any, b: Batch, rows_k, done, r0, newlen) -> list[tuple]:
    """The RETURN fields ``(values, bad)`` of the matches completed at ``done``."""
    env = _ScanEnv(b, rows_k, done, r0, newlen)
    got = fields([fn for _, fn in eng.c.returns], env, done.size)
    if env.deferred.any():
        raise _Fallback  # a lookup key is missing: the waves raise its error
    return got
