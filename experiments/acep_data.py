"""Streams and queries of the ACEP reproduction (scripts/reproduce_acep.py): Li and Ge,
"History is a mirror to the future", VLDB 2016, §6. Generated here, nothing downloaded.

**Letters** (the paper's Twitter data, §6.1-6.2: 43 letters extracted from tweets, Q1-Q4).
An alphabet of 43 letters: the 20 of Q1-Q4 (``S``/``E`` a tweet's start and end, ``a`` and
``G`` the symbols AAPL and GOOGL, bullish ``b d w r h t c``, good news ``g e u``, bearish
``t1 t2 R H B D``) and 23 other words ``f00``-``f22``. The background is i.i.d. with Zipf
frequencies (exponent 1, the usual word-frequency law), the other words taking the 23
most frequent ranks and Q1-Q4's letters the rest, ``S``/``E`` first: the queries' letters
are rare words, as stock-chart terms are. Trends that the queries look for are
*instances* injected at exponential gaps (mean ``1/rate``): one query's pattern with a
random alternative for each choice, each letter lost with probability ``drop`` (so
matches need insertions) and 1 + geometric(mean ``gap``) background letters between two
of its letters; a share ``truncated`` of them stop at a random letter (a trend that
fizzles: deep partial matches that never complete). Q1 instances are half of them, the
others a sixth each. ``x^{2+}`` of Q1 is written as two copies (docs/decisions.md,
"RC-ACEP: budget, history and proxies").

*Days* (Fig. 17): on day ``d`` the instances use a sliding part of the bullish and the
good-news alternatives (day 0: ``b d w`` and ``g e``; the bullish window moves one letter
a day, the good-news one every second day), so a history built on day 0 knows less and
less of the states of the alternatives in use.

**PHEV** (the paper's plug-in hybrid taxis, §6.1, Q5-Q8): see :func:`phev_stream`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OTHER_WORDS = [f"f{i:02d}" for i in range(23)]
BULL = ["b", "d", "w", "r", "h", "t", "c"]
NEWS = ["g", "e", "u"]
BEAR = ["t1", "t2", "R", "H", "B", "D"]
QUERY_LETTERS = ["S", "E", "a", "G", *BULL, *NEWS, *BEAR]
ALPHABET = OTHER_WORDS + QUERY_LETTERS
assert len(ALPHABET) == 43


def zipf(n: int, exponent: float = 1.0) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** exponent
    return w / w.sum()


# --------------------------------------------------------------------------- queries
class _Names:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return f"x{self.n}"


def _group(v: _Names, sym: str, choice: list[str]) -> list[str]:
    alts = " OR ".join(f"{x} {v()}" for x in choice)
    return [f"S {v()}", f"{sym} {v()}", f"({alts})" if len(choice) > 1 else
            f"{choice[0]} {v()}", f"E {v()}"]


def q1_groups(sym: str = "a") -> list[tuple[str, list[str]]]:
    """Q1 = [Sa(b|d|w|r|h|t|c)E]^{2+}[Sa(g|e|u)E]^{2+}, each ^{2+} as two copies."""
    return [(sym, BULL), (sym, BULL), (sym, NEWS), (sym, NEWS)]


TEMPLATES: dict[str, list[list[tuple[str, list[str]]]]] = {
    # a query: one or more alternatives (OR of SEQs), each a list of groups S sym X E
    "Q1": [q1_groups("a")],
    "Q2": [[("a", ["t1", "t2"]), ("a", ["R", "H"]), ("a", ["B", "D"])]],
    "Q3": [[("G", ["g"]), ("G", ["e"]), ("G", ["u"])]],
    "Q4": [[("a", BULL), ("G", BEAR)], [("G", BULL), ("a", BEAR)]],
}


def letter_query(name: str, window: int, companies: int = 1) -> str:
    """The text of Q1-Q4 (``companies`` > 1: the query as an OR over the symbols of more
    companies, Fig. 11's longer patterns: ``a``, ``G``, then the rare letters ``B``,
    ``D`` standing for two more symbols)."""
    v = _Names()
    branches = []
    syms = ["a", "G", "B", "D"]
    for c in range(companies):
        for groups in TEMPLATES[name]:
            items = []
            for sym, choice in groups:
                items += _group(v, syms[c] if companies > 1 else sym, choice)
            branches.append("SEQ(" + ", ".join(items) + ")")
    pattern = branches[0] if len(branches) == 1 else "(" + " OR ".join(branches) + ")"
    return f"PATTERN {pattern} WITHIN {window}"


def pattern_letters(name: str) -> int:
    """L-states of a query as the paper counts them (every alternative a letter)."""
    return sum(2 + len(choice) + 1 for groups in TEMPLATES[name] for _, choice in groups)


# --------------------------------------------------------------------------- letters
@dataclass(frozen=True)
class LetterStream:
    """Parameters of a letter stream (module doc). The paper gives only the alphabet's
    size (43) and its data rate; the trend rate, gaps, losses and the share of fizzled
    trends are ours, chosen so that a Python engine sees tens of match bundles in 10,000
    letters and so that k = 2 is needed (a trend loses 1.3 of Q1's 16 letters on
    average)."""

    rate: float = 1 / 120
    gap: float = 1.5
    drop: float = 0.08
    truncated: float = 0.25
    exponent: float = 1.0
    mix: tuple[tuple[str, float], ...] = (("Q1", 0.5), ("Q2", 1 / 6), ("Q3", 1 / 6),
                                          ("Q4", 1 / 6))


def day_choices(day: int) -> dict[str, list[str]]:
    """The alternatives the instances of ``day`` use (module doc, Fig. 17): three
    bullish letters, one further each day; two good-news letters, one further every
    second day.

    >>> day_choices(0), day_choices(3)
    ({'bull': ['b', 'd', 'w'], 'news': ['g', 'e']}, {'bull': ['r', 'h', 't'], 'news': ['e', 'u']})
    """
    d = max(0, day)
    return {"bull": BULL[min(d, 4):min(d, 4) + 3], "news": NEWS[min(d // 2, 1):][:2]}


def letters(n: int, seed: int = 0, params: LetterStream = LetterStream(),
            day: int | None = None) -> list[dict]:
    """``n`` letters (``type``, ``time`` = index, ``id``), the background with instances
    injected (module doc); ``day``: the day's alternatives (None: all)."""
    rng = np.random.default_rng(seed)
    p = zipf(len(ALPHABET), params.exponent)
    types = [ALPHABET[i] for i in rng.choice(len(ALPHABET), size=n, p=p)]
    names = [q for q, _ in params.mix]
    weights = np.array([w for _, w in params.mix])
    weights = weights / weights.sum()
    limit = day_choices(day) if day is not None else None
    t = int(rng.exponential(1 / params.rate))
    while t < n:
        q = names[rng.choice(len(names), p=weights)]
        alts = TEMPLATES[q]
        groups = alts[rng.integers(len(alts))]
        seq: list[str] = []
        for sym, choice in groups:
            if limit is not None and choice is BULL:
                choice = limit["bull"]
            elif limit is not None and choice is NEWS:
                choice = limit["news"]
            seq += ["S", sym, choice[rng.integers(len(choice))], "E"]
        if rng.random() < params.truncated:
            seq = seq[:rng.integers(1, len(seq))]
        pos = t
        for x in seq:
            pos += int(rng.geometric(1 / (params.gap + 1)))
            if pos >= n:
                break
            if rng.random() >= params.drop:
                types[pos] = x
        t = pos + 1 + int(rng.exponential(1 / params.rate))
    return [{"type": x, "time": i, "id": i} for i, x in enumerate(types)]


# --------------------------------------------------------------------------- PHEV
@dataclass(frozen=True)
class PhevStream:
    """Parameters of the PHEV-like stream (:func:`phev_stream`). Reporting cadences
    [min]: ``l``/``n`` every ``power_every`` while plugged in, ``p`` every ``park_every``
    while the vehicle stands, a speed letter every ``speed_every`` while it drives. The
    charging is drsim's (its sources: ``drsim/data/ev.yaml``); the cadences, depots,
    parking and trip durations and the areas' shares are ours (the paper's data set,
    Akhavan-Hejazi et al. 2014, 536 taxis at 54 events/s, is not downloaded), chosen so
    that Q5-Q8 have matches within a 500-event window."""

    vehicles: int = 60
    depots: int = 12
    power_every: int = 15
    park_every: int = 20
    speed_every: int = 5
    park_mean: float = 45.0
    trip_min: int = 10
    trip_max: int = 40
    plug_tail_max: int = 120
    areas: tuple[tuple[str, float], ...] = (("d", 0.3), ("a", 0.1), ("x", 0.6))


SPEEDS = ("z", "L", "M1", "M2", "H")


def phev_stream(params: PhevStream = PhevStream(), seed: int = 0, households: int = 1200,
                scenario: str = "drsim/data/scenarios/quickstart.yaml", day: int = 0,
                first: int = 0) -> list[dict]:
    """Per-vehicle events of the PHEV queries Q5-Q8 (§6.2) from drsim's own EV model.

    The charging comes from drsim: the EV households among the ``households`` of the
    scenario from household ``first`` on (drsim.household.population; 22.48 % own an EV,
    §6.3.1 of the dissertation), their sessions of the DR day and the evening before
    (drsim.household.ev: plug-in time, energy, charger power), with the scenario's DR
    program pausing following EVs that charge at its start and resuming them after it
    (drsim.household.sim.EVProcess). A session's vehicle is
    plugged in from its start until ``U(0, plug_tail_max)`` minutes after it is full;
    between a pause and the resumption it is plugged in and draws nothing.

    The rest is synthesised (the taxi traces of the paper's data are not drsim's): out of
    its charging, a vehicle alternates parked spells (exponential, mean ``park_mean``
    minutes) with trips (``U(trip_min, trip_max)`` minutes) whose speed class follows a
    random walk over ``z`` (0 mph), ``L`` (2-10), ``M1`` (11-20), ``M2`` (21-30) and ``H``
    (> 30) from a standstill. Letters (one event each; ``time`` is the event's index,
    ``minute`` its minute): ``l`` (drawing more than 2.5 kW in the past minute; drsim's
    chargers give 3.6 or 7 kW) and ``n`` (plugged in, no power drawn) every
    ``power_every`` minutes while plugged in, with the vehicle's ``location``, one of
    ``depots`` charging depots (a fleet's vehicles share them: Q8's equivalence test);
    ``p`` (parked) every ``park_every`` minutes while standing; the area letter ``d``
    (downtown), ``c`` (cab depot, when it plugs in) or ``a`` (airport) when it arrives
    somewhere (``x``: elsewhere, no letter); a speed letter every ``speed_every`` minutes
    while driving. Every event has the ``vehicle`` id."""
    from drsim.household.population import Population
    from drsim.household.sim import ChunkSimulator, program_events
    from drsim.scenario import load_scenario

    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    sc = load_scenario(root / scenario)
    pop = Population(sc, first, households)
    run = ChunkSimulator(pop, day_offset=day).run(program_events(sc))
    ev = run.ev
    rows = np.flatnonzero(pop.has_ev)[:params.vehicles]
    rng = np.random.default_rng(seed)
    lo, hi = -24 * 60, 24 * 60  # the evening before and the DR day [min]
    out: list[tuple[int, int, str, int, int]] = []  # (minute, order, letter, vehicle, depot)
    area_names = [a for a, _ in params.areas]
    area_p = np.array([p for _, p in params.areas])
    for v, row in enumerate(rows.tolist()):
        depot = int(rng.integers(params.depots))
        sel = np.flatnonzero(ev.row == row)
        draw = np.zeros(hi - lo, dtype=bool)  # minute by minute
        plugged = np.zeros(hi - lo, dtype=bool)
        for i in sel.tolist():
            start = int(ev.t[i]) - lo
            minutes = int(np.ceil(ev.energy_kwh[i] / ev.kw[i] * 60 - 1e-9))
            draw[max(0, start):max(0, start + minutes)] = True
            tail = int(rng.integers(0, params.plug_tail_max + 1)) if ev.gen[i] == 0 or \
                i == sel[-1] else 0
            plugged[max(0, start):max(0, start + minutes + tail)] = True
        for i in sel.tolist():  # a paused session: plugged in until it resumes
            if ev.gen[i] > 0:
                prev = [j for j in sel.tolist() if ev.gen[j] == ev.gen[i] - 1
                        and ev.j[j] == ev.j[i] and ev.day[j] == ev.day[i]]
                if prev:
                    p0 = int(ev.t[prev[0]]) - lo
                    plugged[max(0, p0):max(0, int(ev.t[i]) - lo)] = True
        m = 0
        n_min = hi - lo
        while m < n_min:
            if plugged[m]:
                out.append((m, 0, "c", v, depot))
                while m < n_min and plugged[m]:
                    if m % params.power_every == 0:
                        out.append((m, 1, "l" if draw[m] else "n", v, depot))
                    if m % params.park_every == 0:
                        out.append((m, 2, "p", v, depot))
                    m += 1
                continue
            # parked, then a trip, until the next plug-in
            area = area_names[rng.choice(len(area_names), p=area_p)]
            if area != "x":
                out.append((m, 0, area, v, depot))
            stay = int(rng.exponential(params.park_mean)) + 1
            end = m + stay
            while m < min(end, n_min) and not plugged[m]:
                if m % params.park_every == 0:
                    out.append((m, 2, "p", v, depot))
                m += 1
            trip = int(rng.integers(params.trip_min, params.trip_max + 1))
            end, speed = m + trip, 0
            while m < min(end, n_min) and not plugged[m]:
                if m % params.speed_every == 0:
                    out.append((m, 1, SPEEDS[speed], v, depot))
                    step = rng.choice([-1, 0, 1], p=[0.25, 0.25, 0.5])
                    speed = min(4, max(0, speed + int(step)))
                m += 1
    out.sort(key=lambda x: (x[0], x[1], x[3]))
    events = []
    for i, (m, order, letter, v, depot) in enumerate(out):
        e = {"type": letter, "time": i, "id": i, "minute": m + lo, "vehicle": v,
             "order": order}
        if letter in ("l", "n"):
            e["location"] = depot
        events.append(e)
    return events


def phev_fleet(copies: int, params: PhevStream = PhevStream(), seed: int = 0, day: int = 0,
               minutes: tuple[int, int] = (-24 * 60, 24 * 60), households: int = 1200
               ) -> list[dict]:
    """A fleet of ``copies`` × ``params.vehicles`` vehicles: :func:`phev_stream` of
    ``copies`` blocks of the scenario's households (block ``c`` starts at household
    ``c·households`` while the scenario has them, then the blocks repeat on later days,
    ``day + 7·round``; its trips drawn with seed ``seed·1000 + c``), the events of the
    minutes in ``minutes`` merged in time order, vehicles numbered across the blocks.
    With more vehicles the same minutes hold more events, so a window of as many more
    events holds what a smaller fleet's window holds per vehicle: a query with
    ``SAME[vehicle]`` sees each vehicle's letters as rarely as the paper's 536 taxis do
    in its windows of 50,000 events (§6.1; docs/acep.md, "Windows")."""
    from drsim.scenario import load_scenario

    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    blocks = max(1, load_scenario(root / "drsim/data/scenarios/quickstart.yaml").households
                 // households)
    rows: list[tuple] = []
    for c in range(copies):
        part = phev_stream(params, seed=seed * 1000 + c, households=households,
                           first=(c % blocks) * households, day=day + 7 * (c // blocks))
        rows += [(e["minute"], e["order"], e["vehicle"] + c * params.vehicles, e)
                 for e in part if minutes[0] <= e["minute"] < minutes[1]]
    rows.sort(key=lambda r: r[:3])
    return [{**e, "time": i, "id": i, "vehicle": v} for i, (_, _, v, e) in enumerate(rows)]


def _phev_branches(name: str, v: _Names, size: int | None) -> tuple[list[str], str]:
    if name == "Q5":
        r = 5 if size is None else max(1, (size - 8) // 2)
        left = ", ".join([f"l {v()}", *[f"p {v()}" for _ in range(r)],
                          f"(d {v()} OR c {v()} OR a {v()})"])
        right = ", ".join([*[f"p {v()}" for _ in range(r)], f"n {v()}",
                           f"(d {v()} OR c {v()} OR a {v()})"])
        return [f"SEQ({left})", f"SEQ({right})"], "SAME[vehicle]"
    if name == "Q6":
        r = 5 if size is None else max(1, size // 2)
        return ["SEQ(" + ", ".join(f"z {v()}, L {v()}" for _ in range(r)) + ")"], \
            "SAME[vehicle]"
    if name == "Q7":
        n = 5 if size is None else size
        letters = (["z", "L", "M1", "M2", "H"] + ["H"] * max(0, n - 5))[:max(2, n)]
        return ["SEQ(" + ", ".join(f"{x} {v()}" for x in letters) + ")"], "SAME[vehicle]"
    if name == "Q8":
        n = 5 if size is None else size
        names = [v() for _ in range(n)]
        diff = [f"{names[j]}.vehicle != {names[i]}.vehicle"
                for j in range(n) for i in range(j)]
        return ["SEQ(" + ", ".join(f"l {x}" for x in names) + ")"], \
            " AND ".join(["SAME[location]", *diff])
    raise ValueError(f"unknown PHEV query {name}")


def phev_query(name: str, window: int, size: int | None = None) -> str:
    """Q5-Q8 of §6.2 over :func:`phev_stream` (``x^{5+}`` as five copies), or an OR of
    several of Q5-Q7 (``name`` like ``"Q5|Q7"``: Fig. 13's longer patterns). ``size``
    (Fig. 8) grows or shrinks the template by its repeated letter: Q5's ``p`` runs, Q6's
    ``zL`` pairs, Q7 cut or extended with more high-speed letters, Q8's ``l``s."""
    v = _Names()
    branches, where = [], ""
    for part in name.split("|"):
        b, where = _phev_branches(part, v, size)
        branches += b
    pattern = branches[0] if len(branches) == 1 else "(" + " OR ".join(branches) + ")"
    return f"PATTERN {pattern} WHERE {where} WITHIN {window}"
