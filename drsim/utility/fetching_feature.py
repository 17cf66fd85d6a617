"""The M&V profiles served remotely as a monitoring feature (:class:`RemoteProfiles`).

With ``monitoring.remote`` (the fetches: :mod:`drsim.utility.fetching`) the meter tier
of every pass fetches ``λ[houseID, time]`` through its gateways
(:class:`drsim.utility.fetching.MeterFetch`, given to the meter tier), the group leaders
fetch ``γ[groupID, time]`` and the delays hold their alerts back (:class:`AlertDelays`,
given to the group tier). Each chunk sends one row per monitored pass, what its
gateways fetched (:class:`drsim.utility.fetching.FetchCounts`); the driver sums them per
pass (:class:`RemoteCounts`), and the feature writes summary.json's ``remote``.
Streamed as in batch: the fetches only look back (docs/streaming.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from drsim.scenario import RemoteData, Scenario
from drsim.units import clock
from drsim.utility.features import FeatureChunk, FeatureRun, MonitoringFeature
from drsim.utility.fetching import FetchCounts, MeterFetch, alert_shift, group_fetch_delays
from drsim.utility.monitoring import MonitoringPlan

__all__ = ["COLUMNS", "AlertDelays", "RemoteCounts", "RemoteProfiles"]

#: per chunk and monitored pass: what its gateways fetched (FetchCounts.as_list)
COLUMNS = pa.schema([("fetched", pa.list_(pa.int64()))])


@dataclass(frozen=True)
class RemoteCounts:
    """What the tiers fetched.

    Attributes
    ----------
    meter : dict of str to drsim.utility.fetching.FetchCounts
        Monitored pass -> the meter tier's fetches, summed over the chunks.
    group : drsim.utility.fetching.FetchCounts
        The group leaders' fetches (the same for every pass).
    """

    meter: dict[str, FetchCounts]
    group: FetchCounts


@dataclass(frozen=True)
class AlertDelays:
    """The group leaders' γ fetch delays, which hold their alerts back.

    Attributes
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan.
    delays : numpy.ndarray
        (groups, tests) the delays of the leaders' γ fetches
        (:func:`drsim.utility.fetching.group_fetch_delays`) [min].
    """

    plan: MonitoringPlan
    delays: np.ndarray

    def __call__(self, events: pd.DataFrame, group: int) -> np.ndarray:
        """Return the shift of each test's alert of ``group`` (``alert_shift``).

        Parameters
        ----------
        events : pandas.DataFrame
            The group's user events (``time``, ``delay``).
        group : int
            The group.

        Returns
        -------
        numpy.ndarray of int64
            The shift per test time [minutes].
        """
        return alert_shift(self.plan, events, self.delays[group])


@dataclass(frozen=True)
class RemoteProfiles(MonitoringFeature):
    """λ[houseID, time] and γ[groupID, time] served by the utility (``monitoring.remote``).

    Attributes
    ----------
    cfg : drsim.scenario.RemoteData or None
        The scenario's ``monitoring.remote``.
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan (the group leaders' fetches).
    seed : int
        The scenario's seed (the elements' latencies).
    group_firsts : tuple of int
        The id of each group's first household (gateways count from it).
    day_of : dict or None
        ``baseline.day_of_adjustment`` as run (the profiles fetched are adjusted).
    """

    name = "remote"
    optimises = True
    streamed = True  # the fetches only look back (docs/streaming.md, "Remote profiles")
    scenario_key = "monitoring.remote"
    schema = COLUMNS

    cfg: RemoteData | None
    plan: MonitoringPlan
    seed: int
    group_firsts: tuple[int, ...]
    day_of: dict[str, Any] | None = None

    @classmethod
    def of(cls, scenario: Scenario) -> RemoteProfiles:
        """Return the remote profiles of ``scenario`` (None: local tables).

        Parameters
        ----------
        scenario : drsim.scenario.Scenario
            The scenario of the run.

        Returns
        -------
        RemoteProfiles
            Its ``monitoring.remote``.
        """
        adjust = scenario.baseline.day_of_adjustment
        return cls(scenario.monitoring.remote, MonitoringPlan.of(scenario), scenario.seed,
                   tuple(first for first, _ in scenario.group_ranges()),
                   None if adjust is None else adjust.model_dump(mode="json"))

    @property
    def active(self) -> bool:
        """Whether the scenario serves the profiles remotely."""
        return self.cfg is not None

    def meter_inputs(self, chunk: FeatureChunk) -> dict[str, Any]:
        """Return the fetcher of ``λ[houseID, time]``, ``fetch`` of the meter tier.

        Parameters
        ----------
        chunk : drsim.utility.features.FeatureChunk
            The chunk's households.

        Returns
        -------
        dict
            ``{"fetch": MeterFetch}``, a new one for each run of the meter tier.
        """
        return {"fetch": MeterFetch(chunk.plan, self.cfg, chunk.house_ids,
                                    self.group_firsts[chunk.group], self.seed)}

    def group_inputs(self, plan: MonitoringPlan,
                     prepared: Mapping[str, tuple[Any, ...]] | None = None) -> dict[str, Any]:
        """Return the group leaders' γ fetch delays, ``alert_delays`` of the group tier.

        Parameters
        ----------
        plan : drsim.utility.monitoring.MonitoringPlan
            The monitoring plan.
        prepared : mapping of str to tuple, optional
            The features' prepared values (not read).

        Returns
        -------
        dict
            ``{"alert_delays": AlertDelays}``.
        """
        return {"alert_delays": AlertDelays(plan, self._group_fetches(plan)[0])}

    def _group_fetches(self, plan: MonitoringPlan) -> tuple[np.ndarray, FetchCounts]:
        return group_fetch_delays(plan, self.cfg, len(self.group_firsts), self.seed)

    def chunk_rows(self, chunk: FeatureChunk, name: str) -> dict[str, Sequence[Any]]:
        """Return what the chunk's gateways fetched on pass ``name``.

        Parameters
        ----------
        chunk : drsim.utility.features.FeatureChunk
            The chunk, with the pass's meter tier.
        name : str
            The monitored pass.

        Returns
        -------
        dict of str to sequence
            One row: :meth:`drsim.utility.fetching.FetchCounts.as_list`; none before the
            meter tier has run (a streamed run's chunk task: the stream's meter stage
            makes the row, docs/streaming.md).
        """
        return {"fetched": [] if chunk.meter is None else [chunk.meter.fetched]}

    def merge(self, rows: pd.DataFrame) -> RemoteCounts:
        """Sum the chunks' fetches per pass; add the group leaders'.

        Parameters
        ----------
        rows : pandas.DataFrame
            The chunks' rows (chunk, group, pass, fetched).

        Returns
        -------
        RemoteCounts
            The meter tier's per pass and the group tier's.
        """
        meter = {str(name): FetchCounts.merged(rows.loc[rows["pass"] == name, "fetched"])
                 for name in pd.unique(rows["pass"])}
        return RemoteCounts(meter, self._group_fetches(self.plan)[1])

    def summary(self, merged: RemoteCounts | None, run: FeatureRun) -> dict[str, Any] | None:
        """Return ``remote`` of summary.json (None: local tables).

        Parameters
        ----------
        merged : RemoteCounts or None
            What :meth:`merge` returned.
        run : drsim.utility.features.FeatureRun
            The run's outcomes.

        Returns
        -------
        dict or None
            The configuration, per tier what was fetched and waited for on the
            traditional pass, and the prediction.
        """
        if self.cfg is None:
            return None
        trad = run.outcome["traditional"]
        return {"config": self.cfg.model_dump(mode="json"), "day_of_adjustment": self.day_of,
                "meter_tier": merged.meter["traditional"].summary(),
                "group_tier": merged.group.summary(),
                "utility_tier": "no remote data",
                "utility_noncompliance_time": clock(trad.t_nc) if trad.predicted else None}

    @classmethod
    def headline(cls, section: Any) -> list[tuple[str, str]]:
        """Return the row of what was fetched, when the profiles are remote.

        Parameters
        ----------
        section : object
            ``remote`` of summary.json.

        Returns
        -------
        list of (str, str)
            The strategy, requests, MB, seconds waited and the mean data delay.
        """
        if not isinstance(section, Mapping):
            return []
        meter = section.get("meter_tier", {})
        delay = meter.get("data_delay_avg_seconds")
        return [(f"profiles fetched ({section.get('config', {}).get('strategy')}): "
                 "requests / MB / waited s / avg delay s",
                 f"{meter.get('requests')} / {meter.get('bytes', 0) / 1e6:.2f} / "
                 f"{meter.get('waited_seconds', 0):.0f} / "
                 f"{'n/a' if delay is None else f'{delay:.2f}'}")]
