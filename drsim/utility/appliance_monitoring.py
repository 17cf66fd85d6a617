"""Appliance-level utility queries in the DR run, with adaptive evaluation plans.

The three tiers of the dissertation's Ch. 6 watch the households' meter readings. A
utility may also watch what the households *do* while the program runs, as events: the
appliance starts, EV plug-ins, pauses and resumes of the simulation
(:mod:`drsim.household.household_events`), the DR signals each household receives (``dr_notice``,
``dr_start``, ``dr_end`` of every event of the pass's schedule), and ``over_baseline`` at
every δ minutes of the evening, on the grid of the test times (t_first_test + kδ,
§6.2.1), when the household's load over the δ minutes before exceeds its load without DR
(the baseline pass: B under the same-day M&V of §6.3.1, "both baseline and expected
reduction are estimated" from the simulated day; the utility's own B̂ exists over the
program only, and the rebound comes after it). The rates of these events move sharply at the
notice, at the start, and in the rebound, which is where an evaluation plan that follows
the statistics (cep_core.adaptive, Schuster and Kolchinsky, US 11,693,862 B2, patented)
earns its keep; for example "a household paused its EV at the event's start and then
started a deferrable appliance before its end"::

    PATTERN SEQ(dr_start s, ev_pause p, start_wet w, dr_end e)
    WHERE SAME[houseID] WITHIN 3h

Each query (scenario key ``monitoring.appliance_queries``) runs per chunk on each
monitored pass, over the evening from two hours before the program to two hours after
it; it must be partitioned by household (``SAME[houseID]``), so that the chunks' runs add
up to the run over every household. What leaves the chunk is a row of counts per query
(:data:`COUNTS`). The queries are a monitoring feature (:class:`ApplianceQueries`,
:mod:`drsim.utility.features`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

import cep_core
from cep_core.reads import check_events
from drsim.household.appliances import CATEGORIES
from drsim.household.household_events import household_events
from drsim.scenario import ApplianceQuery, Scenario
from drsim.utility.features import FeatureChunk, MonitoringFeature

__all__ = ["COUNTS", "EVENTS", "ApplianceQueries", "appliance_stream",
           "compile_appliance_queries", "run_appliance_query", "evening"]

#: per query, chunk and pass: outputs (alerts), events processed, partial matches
#: created, predicates evaluated, checks of D, re-optimisations, plan replacements
COUNTS = ("alerts", "events", "partial_matches", "predicates", "checks", "reoptimizations",
          "replacements")
_MARGIN = 120  # minutes of the evening before and after the program
#: the events of :func:`appliance_stream`: event type -> attributes (besides type and time)
EVENTS: dict[str, tuple[str, ...]] = {
    kind: ("houseID",) for kind in (*(f"start_{c}" for c in CATEGORIES), "ev_plug",
                                    "ev_pause", "ev_resume", "dr_notice", "dr_start",
                                    "dr_end", "over_baseline")}


def evening(t_start: int, t_end: int) -> tuple[int, int]:
    """Return the minutes [lo, hi) the appliance queries read: the program ± two hours.

    Parameters
    ----------
    t_start, t_end : int
        The DR program [minutes since midnight].

    Returns
    -------
    lo, hi : int
        The evening, within the day [minutes since midnight].

    Examples
    --------
    >>> evening(1110, 1230), evening(60, 1400)
    ((990, 1350), (0, 1440))
    """
    return max(0, t_start - _MARGIN), min(1440, t_end + _MARGIN)


def compile_appliance_queries(queries: dict[str, ApplianceQuery]
                              ) -> dict[str, cep_core.CompiledQuery]:
    """Compile each appliance query (times in minutes) and check its plan options.

    Parameters
    ----------
    queries : dict of str to drsim.scenario.ApplianceQuery
        The scenario's ``monitoring.appliance_queries``.

    Returns
    -------
    dict of str to cep_core.CompiledQuery
        The compiled queries by name.

    Raises
    ------
    cep_core.QueryError
        When a query does not compile, reads an event type or an attribute that the
        households' events do not carry (:data:`EVENTS`), has bad plan options, or is not
        partitioned by household (one line naming it).
    """
    out = {}
    for name, spec in queries.items():
        source = f"monitoring.appliance_queries.{name}.query"
        q = cep_core.compile(spec.query, time_unit="min", source=source)
        if q.plan is None or tuple(q.plan.partition) != ("houseID",):
            raise cep_core.QueryError(f"{source}: an appliance query is partitioned by "
                                      "household (WHERE SAME[houseID] ...), so that each "
                                      "chunk runs it alone")
        check_events(q, EVENTS, source=source)
        q.engine_for("skip-till-any-match", plan=spec.plan, adapt=_adapt(spec))  # checked
        out[name] = q
    return out


def appliance_stream(run: Any, baseline: Any, house_ids: np.ndarray,
                     signals: list[tuple[int, int, int]], t_first_test: int, delta: int,
                     t_start: int, t_end: int) -> pd.DataFrame:
    r"""Build the events of one pass of a chunk that the appliance queries read.

    Over the evening (:func:`evening`): the households' appliance starts, EV plug-ins,
    pauses and resumes (:func:`drsim.household.household_events.household_events`), the DR
    signals ``dr_notice``, ``dr_start`` and ``dr_end`` of each DR event of the pass, and
    ``over_baseline`` at each minute T of the test grid t_first_test + kδ (§6.2.1),
    extended over the evening, at which the household's load over the δ minutes before
    exceeds its load on the baseline pass (no DR):

    .. math:: \sum_{t = T - \delta}^{T - 1} (P_{k,t} - B_{k,t}) > 0

    ``over_baseline`` is drsim's own event, not the dissertation's (module doc;
    docs/adaptive_plans.md, "In the DR run").

    Parameters
    ----------
    run, baseline : drsim.household.sim.ChunkRun
        The pass's and the baseline pass's run of the chunk.
    house_ids : numpy.ndarray
        (households,) the chunk's household ids, one per row of the runs.
    signals : list of (int, int, int)
        (announced, start, end) of each DR event of the pass [minutes since midnight].
    t_first_test : int
        The first test of the program [minutes since midnight].
    delta : int
        The test interval δ [minutes].
    t_start, t_end : int
        The DR program [minutes since midnight].

    Returns
    -------
    pandas.DataFrame
        Columns type, time [minutes since midnight], houseID; in time order, then
        household, then type.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (test times) and §6.3.1
       (baseline from the simulated day).

    Examples
    --------
    Two households; house 6 starts a wet appliance at 20:00 and draws 2 kW more than on
    the baseline pass for six minutes, so it is over its baseline at the grid minutes
    20:05 and 20:10.

    >>> from types import SimpleNamespace as NS
    >>> kw = np.zeros((2, 1440))
    >>> kw[1, 1200:1206] = 2.0
    >>> run = NS(pop=NS(catalogue=NS(category=np.array(["wet"]), names=["washer"])),
    ...          appliances=NS(appliance=np.array([0]), t=np.array([1200]),
    ...                        row=np.array([1]), gen=np.array([1])),
    ...          ev=[], load=lambda lo, hi: kw[:, lo:hi])
    >>> baseline = NS(load=lambda lo, hi: np.zeros((2, hi - lo)))
    >>> appliance_stream(run, baseline, np.array([5, 6]), [(1050, 1110, 1230)],
    ...                  1130, 5, 1110, 1230)
                type  time  houseID
    0      dr_notice  1050        5
    1      dr_notice  1050        6
    2       dr_start  1110        5
    3       dr_start  1110        6
    4      start_wet  1200        6
    5  over_baseline  1205        6
    6  over_baseline  1210        6
    7         dr_end  1230        5
    8         dr_end  1230        6
    """
    lo, hi = evening(t_start, t_end)
    parts = [household_events(run, house_ids, lo, hi)[["type", "time", "houseID"]]]
    n = len(house_ids)
    for announced, start, end in signals:
        for typ, t in (("dr_notice", announced), ("dr_start", start), ("dr_end", end)):
            if lo <= t < hi:
                parts.append(pd.DataFrame({"type": typ, "time": np.full(n, t, np.int64),
                                           "houseID": house_ids}))
    excess = run.load(lo, hi) - baseline.load(lo, hi)
    cum = np.concatenate([np.zeros((n, 1)), np.cumsum(excess, axis=1)], axis=1)
    first = t_first_test - ((t_first_test - lo - delta) // delta) * delta
    grid = np.arange(first, hi + 1, delta)  # readings with δ minutes behind them
    ends = grid - lo
    over = cum[:, ends] - cum[:, ends - delta] > 1e-9
    row, col = np.nonzero(over)
    parts.append(pd.DataFrame({"type": "over_baseline", "time": grid[col],
                               "houseID": np.asarray(house_ids, np.int64)[row]}))
    stream = pd.concat(parts, ignore_index=True)
    return stream.sort_values(["time", "houseID", "type"], kind="stable", ignore_index=True)


def _adapt(spec: ApplianceQuery) -> dict[str, Any] | None:
    """Return the adapt option of a query (None for the text-order plan)."""
    return spec.adapt if spec.plan != "text" else None


def run_appliance_query(query: cep_core.CompiledQuery, spec: ApplianceQuery,
                        stream: pd.DataFrame) -> np.ndarray:
    """Count what one query did over one chunk's stream (:data:`COUNTS`).

    The query runs under skip-till-any-match, one run per event, as the adaptive plans
    evaluate (cep_core.adaptive).

    Parameters
    ----------
    query : cep_core.CompiledQuery
        The query, from :func:`compile_appliance_queries`.
    spec : drsim.scenario.ApplianceQuery
        Its settings (plan, adapt).
    stream : pandas.DataFrame
        The chunk's events (:func:`appliance_stream`).

    Returns
    -------
    numpy.ndarray
        (len(COUNTS),) the counts in the order of :data:`COUNTS`; checks,
        re-optimisations and replacements are 0 for the text-order plan.

    Examples
    --------
    >>> spec = ApplianceQuery(query="PATTERN SEQ(dr_start s, start_wet w, dr_end e) "
    ...                             "WHERE SAME[houseID] WITHIN 3h")
    >>> query = compile_appliance_queries({"wet_in_event": spec})["wet_in_event"]
    >>> stream = pd.DataFrame({"type": ["dr_start", "start_wet", "dr_end"],
    ...                        "time": [1110, 1200, 1230], "houseID": 6})
    >>> dict(zip(COUNTS[:2], run_appliance_query(query, spec, stream)[:2].tolist()))
    {'alerts': 1, 'events': 3}
    """
    session = query.start("skip-till-any-match", plan=spec.plan, adapt=_adapt(spec))
    alerts = len(session.feed(stream)) + len(session.flush())
    c = session.counters
    report = session.adaptation_report() if spec.plan != "text" and \
        session.engine_name.startswith("adaptive") else {}
    return np.array([alerts, c.events, c.pm_created, c.predicates, report.get("checks", 0),
                     report.get("reoptimizations", 0), report.get("replacements", 0)],
                    dtype=np.int64)


@dataclass(frozen=True)
class ApplianceQueries(MonitoringFeature):
    """The appliance-level queries as a monitoring feature (module doc).

    Each chunk runs every query on each monitored pass and sends one row per query with
    its :data:`COUNTS`; the driver sums them per pass and query.

    Attributes
    ----------
    specs : mapping of str to drsim.scenario.ApplianceQuery
        The scenario's ``monitoring.appliance_queries``, by name, in its order.
    """

    name = "appliance_queries"
    scenario_key = "monitoring.appliance_queries"
    schema = pa.schema([("query", pa.string()), *((c, pa.int64()) for c in COUNTS)])
    needs_runs = True
    readings_refusal = ("they read each appliance's starts, which meter readings do not "
                        "hold; remove them")

    specs: Mapping[str, ApplianceQuery]

    @classmethod
    def of(cls, scenario: Scenario) -> ApplianceQueries:
        """Return the queries of ``scenario`` (none: off).

        Parameters
        ----------
        scenario : drsim.scenario.Scenario
            The scenario of the run.

        Returns
        -------
        ApplianceQueries
            Its ``monitoring.appliance_queries``.
        """
        return cls(dict(scenario.monitoring.appliance_queries))

    @property
    def active(self) -> bool:
        """Whether the scenario has any appliance query."""
        return bool(self.specs)

    def check(self) -> None:
        """Compile every query (:func:`compile_appliance_queries`).

        Raises
        ------
        cep_core.QueryError
            For a query that does not compile or fit the households' events.
        """
        compile_appliance_queries(dict(self.specs))

    def chunk_rows(self, chunk: FeatureChunk, name: str) -> dict[str, Sequence[Any]]:
        """Run every query over pass ``name`` of the chunk (:func:`appliance_stream`).

        Parameters
        ----------
        chunk : drsim.utility.features.FeatureChunk
            The chunk, with its runs of the pass and of the baseline pass.
        name : str
            The monitored pass.

        Returns
        -------
        dict of str to sequence
            One row per query, in the scenario's order: its name and :data:`COUNTS`.
        """
        plan = chunk.plan
        stream = appliance_stream(chunk.runs[name], chunk.runs["baseline"], chunk.house_ids,
                                  list(chunk.signals), plan.t_first_test, plan.delta,
                                  plan.t_start, plan.t_end)
        specs = dict(self.specs)
        queries = compile_appliance_queries(specs)
        counts = np.stack([run_appliance_query(queries[q], specs[q], stream) for q in specs])
        return {"query": list(specs), **{c: counts[:, j] for j, c in enumerate(COUNTS)}}

    def merge(self, rows: pd.DataFrame) -> dict[str, np.ndarray]:
        """Sum the chunks' counts per pass and query.

        Parameters
        ----------
        rows : pandas.DataFrame
            The chunks' rows (chunk, group, pass, query and :data:`COUNTS`).

        Returns
        -------
        dict of str to numpy.ndarray
            Monitored pass -> (queries, len(COUNTS)) the counts, queries in the
            scenario's order.

        Examples
        --------
        >>> spec = ApplianceQuery(query="PATTERN SEQ(dr_start s, dr_end e) "
        ...                             "WHERE SAME[houseID] WITHIN 3h")
        >>> rows = pd.DataFrame({"chunk": [0, 1], "group": 0, "pass": "traditional",
        ...                      "query": "q", **{c: [1, 2] for c in COUNTS}})
        >>> ApplianceQueries({"q": spec}).merge(rows)["traditional"][0].tolist()
        [3, 3, 3, 3, 3, 3, 3]
        """
        out = {}
        for name in pd.unique(rows["pass"]):
            sums = rows[rows["pass"] == name].groupby("query", sort=False)[list(COUNTS)].sum()
            out[str(name)] = sums.reindex(list(self.specs)).to_numpy(np.int64)
        return out

    def summary(self, merged: dict[str, np.ndarray] | None, run: Any = None
                ) -> dict[str, Any]:
        """Return ``appliance_queries`` of summary.json (docs/summary.md).

        Parameters
        ----------
        merged : dict of str to numpy.ndarray or None
            What :meth:`merge` returned; None without queries.
        run : drsim.utility.features.FeatureRun, optional
            The run (not read).

        Returns
        -------
        dict
            Per query its text, plan and adapt options, and per monitored pass its
            counts summed over the chunks.
        """
        passes = merged or {}
        return {name: {"query": spec.query, "plan": spec.plan, "adapt": spec.adapt,
                       "passes": {p: dict(zip(COUNTS, map(int, counts[j]), strict=True))
                                  for p, counts in passes.items()}}
                for j, (name, spec) in enumerate(self.specs.items())}
