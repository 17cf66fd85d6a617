"""Streams and patterns of the adaptive-plan experiments (scripts/reproduce_adaptive.py;
US 11,693,862 B2, "Experimental Evaluation"). Generated here, nothing downloaded.

**Drift** (a synthetic stand-in for the patent's traffic data, "highly skewed" rates with
"few but extreme" changes, and for its stock data, frequent minor changes): types
``T0``-``T7`` whose rates are a skewed vector (each 1/√2 of the one before, from 16 events
per time unit down to 1.4) assigned to the types by a permutation. Every
``phase`` time units the permutation changes: suddenly (a new permutation at once) or
gradually (the rates blended from the old permutation to the new one over half a phase);
``mixed`` alternates the two.
Each event has ``x`` uniform in [0, 1) and ``k`` in 0..3. Without drift, one permutation
throughout (the control for the cost of adapting).

**DR evening** (drsim's own households, the quickstart scenario): from 16:00 to 23:00,
per household, the appliance starts, EV plug-ins, pauses and resumes of the adaptive
pass (the program 18:30-20:30 and a second event announced at 19:11 for 19:21-20:30, as
in the paper scenario's loop), the DR notices, starts and ends it receives, and
``over_baseline`` at each 5-minute test time when its load exceeds its no-DR load (the
rebound). Times in minutes, ties by household. The program, the second event and the
rebound move the rates of the starts, the pauses and the readings.

Patterns of 3-8 elements. Drift: sequences ``SEQ(T0 v0, T1 v1, ..)`` with ``v0.x < v1.x``
and ``v2.k = v3.k`` style predicates, within one time unit (the patent's Fig. 6 scans
sequences). DR evening: conjunctions, per household (``SAME[houseID]``), of the first
elements of :data:`DR_TYPES` within an hour, in any order ("a household that, within an
hour, started cooking, switched lights and electronics on, ... and was told the event
started"): types whose rates move during the evening (cooking peaks before the program,
lighting rises after dusk, the DR starts come in bursts, readings over the baseline come
in the rebound). A sequence of more than five of these types hardly ever occurs in one
household's hour; their conjunction does at every size.

**The five pattern sets** of the patent's experiments (:data:`PATTERN_SETS`; "Experimental
Setup": sequences; sequences with an additional event under negation; conjunctions;
sequences with a single event under Kleene closure; a disjunction of three sequences,
its size the number of events of each), on either dataset (:func:`drift_query`,
:func:`dr_query`). The negated event stands between the first two elements; the Kleene
element is the second (drift: ``T1+ v1[]`` with ``v1[i].x > 0.8`` on each of its
events, so that a window holds few subsets of them; DR: ``start_cooking+``, a few per
household and hour); a conjunction of the drift dataset holds within a quarter of its
window (any order of up to 8 of its frequent types within one time unit makes millions of
matches); the three sequences of a disjunction take the types in turn from
the first, the third and the fifth.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TYPES = [f"T{i}" for i in range(8)]
PATTERN_SETS = ("sequence", "negation", "conjunction", "kleene", "disjunction")
DR_TYPES = ["start_cooking", "start_lighting", "start_consumer_electronics", "start_cold",
            "start_ict", "over_baseline", "start_water_heating", "dr_start"]


def drift_stream(n: int, phase: float = 40.0, mode: str = "sudden", seed: int = 0
                 ) -> list[dict]:
    """``n`` events of :data:`TYPES` (module doc); ``mode``: sudden, gradual, mixed or
    none."""
    rng = np.random.default_rng(seed)
    base = 16.0 / 2.0 ** (np.arange(len(TYPES)) / 2)
    total = base.sum()
    times = np.cumsum(rng.exponential(1.0 / total, n))
    perms = [rng.permutation(len(TYPES)) for _ in range(int(times[-1] // phase) + 2)]
    k = (times // phase).astype(int) if mode != "none" else np.zeros(n, dtype=int)
    u = rng.random(n)
    probs = np.empty((n, len(TYPES)))
    for j in np.unique(k):
        at = k == j
        now = np.empty(len(TYPES))
        now[perms[j]] = base
        if j > 0 and (mode == "gradual" or (mode == "mixed" and j % 2)):
            before = np.empty(len(TYPES))
            before[perms[j - 1]] = base
            w = np.clip((times[at] - j * phase) / (phase / 2), 0, 1)[:, None]
            probs[at] = (1 - w) * before + w * now
        else:
            probs[at] = now
    probs /= probs.sum(axis=1, keepdims=True)
    typ = (u[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    x, key = rng.random(n), rng.integers(0, 4, n)
    return [{"type": TYPES[t], "time": float(tt), "x": float(xx), "k": int(kk)}
            for t, tt, xx, kk in zip(typ.tolist(), times.tolist(), x.tolist(),
                                     key.tolist(), strict=True)]


def drift_pattern(size: int, conj: bool = False, window: float = 1.0) -> str:
    """A sequence (or conjunction) of the first ``size`` types with predicates between
    neighbours (module doc), within ``window`` time units."""
    elems = [f"{TYPES[i]} v{i}" for i in range(size)]
    preds = [f"v{i}.x < v{i + 1}.x" if i % 2 == 0 else f"v{i}.k = v{i + 1}.k"
             for i in range(0, size - 1, 2)]
    op = "AND" if conj else "SEQ"
    return f"PATTERN {op}({', '.join(elems)}) WHERE {' AND '.join(preds)} WITHIN {window:g}"


def dr_pattern(size: int) -> str:
    """The first ``size`` of :data:`DR_TYPES` in any order, per household, within an hour
    (module doc)."""
    elems = [f"{t} v{i}" for i, t in enumerate(DR_TYPES[:size])]
    return f"PATTERN AND({', '.join(elems)}) WHERE SAME[houseID] WITHIN 60"


def dr_stream(chunks: int = 1, lo: int = 16 * 60, hi: int = 23 * 60) -> list[dict]:
    """The DR evening's events of the first ``chunks`` chunks of the quickstart scenario
    (module doc)."""
    from drsim.household.dr import DREvent
    from drsim.household.household_events import household_events
    from drsim.household.population import Population
    from drsim.household.sim import ChunkSimulator
    from drsim.pipeline.passes import pass_schedules, plan_chunks
    from drsim.scenario import load_scenario

    scenario = load_scenario("scenarios/quickstart.yaml")
    frames = []
    for chunk in plan_chunks(scenario)[:chunks]:
        pop = Population(scenario, chunk.first, chunk.count)
        sim = ChunkSimulator(pop)
        schedules = pass_schedules(scenario, chunk.group)
        adaptive = [*schedules["traditional"], DREvent("19:21", "20:30", "19:11")]
        run = sim.run(adaptive)
        frames.append(household_events(run, pop.ids, lo, hi))
        signals = []
        for ev in adaptive:
            r = ev.resolve(scenario.dr_program.notice_minutes, pop.follow_through)
            for typ, t in (("dr_notice", r.announce), ("dr_start", r.start),
                           ("dr_end", r.end)):
                signals.append(pd.DataFrame({"type": typ, "time": t, "houseID": pop.ids}))
        frames.extend(signals)
        tests = np.arange(lo, hi, 5)
        load = run.load(lo, hi)[:, tests - lo]
        base = sim.run(schedules["baseline"]).load(lo, hi)[:, tests - lo]
        row, col = np.nonzero(load > base + 1e-9)
        frames.append(pd.DataFrame({"type": "over_baseline", "time": tests[col],
                                    "houseID": pop.ids[row]}))
    events = pd.concat(frames, ignore_index=True)
    events = events.sort_values(["time", "houseID", "type"], kind="stable",
                                ignore_index=True)
    return events[["type", "time", "houseID"]].to_dict("records")


def _set_pattern(kind: str, size: int, types: list[str], neg_type: str,
                 kleene_pred: str | None) -> tuple[str, list[str]]:
    """The pattern of set ``kind`` over ``types`` (module doc) and its added predicates
    (``{v}``: the Kleene variable)."""
    if kind == "disjunction":
        seqs = []
        for b, letter in enumerate("vwu"):
            mine = [types[(2 * b + j) % len(types)] for j in range(size)]
            seqs.append("SEQ(" + ", ".join(f"{t} {letter}{j}" for j, t in enumerate(mine))
                        + ")")
        return "(" + " OR ".join(seqs) + ")", []
    elems = [f"{t} v{i}" for i, t in enumerate(types[:size])]
    extra = []
    if kind == "negation":
        elems.insert(1, f"NEG {neg_type} n")
    elif kind == "kleene":
        elems[1] = f"{types[1]}+ v1[]"
        if kleene_pred:
            extra.append(kleene_pred.format(v="v1"))
    op = "AND" if kind == "conjunction" else "SEQ"
    return f"{op}({', '.join(elems)})", extra


def drift_query(kind: str, size: int, window: float = 1.0) -> str:
    """The drift dataset's pattern of set ``kind`` and ``size`` (module doc): the
    predicates between neighbours of :func:`drift_pattern` in each sequence."""
    if kind in ("sequence", "conjunction"):  # a conjunction within a quarter of it
        return drift_pattern(size, conj=kind == "conjunction",
                             window=window / 4 if kind == "conjunction" else window)
    pattern, extra = _set_pattern(kind, size, TYPES, TYPES[size % len(TYPES)],
                                  "{v}[i].x > 0.8")
    letters = "vwu" if kind == "disjunction" else "v"
    preds = [f"{c}{i}.x < {c}{i + 1}.x" if i % 2 == 0 else f"{c}{i}.k = {c}{i + 1}.k"
             for c in letters for i in range(0, size - 1, 2)
             if not (kind == "kleene" and 1 in (i, i + 1))]
    where = " AND ".join(preds + extra)
    return f"PATTERN {pattern}" + (f" WHERE {where}" if where else "") + \
        f" WITHIN {window:g}"


def dr_query(kind: str, size: int) -> str:
    """The DR evening's pattern of set ``kind`` and ``size``, per household within an
    hour (module doc); the negated event: a DR end."""
    if kind == "conjunction":
        return dr_pattern(size)
    types = [DR_TYPES[1], DR_TYPES[0], *DR_TYPES[2:]] if kind == "kleene" else DR_TYPES
    pattern, _ = _set_pattern(kind, size, types, "dr_end", None)
    return f"PATTERN {pattern} WHERE SAME[houseID] WITHIN 60"
