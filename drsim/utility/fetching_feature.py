"""The M&V profiles served remotely as a monitoring feature (:class:`RemoteProfiles`).

With ``monitoring.remote`` (the fetches: :mod:`drsim.utility.fetching`) the meter tier
of every OP pass fetches ``λ[houseID, time]`` through its gateways
(:class:`drsim.utility.fetching.MeterFetch`, given to the meter tier), the group leaders
fetch ``γ[groupID, time]`` and the delays hold their alerts back (:class:`AlertDelays`,
given to the group tier). Each chunk sends one row per monitored pass, what its
gateways fetched (:class:`drsim.utility.fetching.FetchCounts`); the driver sums them per
pass (:class:`RemoteCounts`), and the feature writes summary.json's ``remote``.

With ``monitoring.remote.updates`` the utility keeps publishing versions of the profiles
(:mod:`drsim.utility.profile_updates`, :mod:`drsim.utility.updated_profiles`): each chunk
task re-estimates its households' profiles (:meth:`RemoteProfiles.chunk_values`), its
gateways' fetcher serves the ``λ`` versions, and its row carries how many it published
and the threshold's replicas' flags under the re-estimated profiles; on the driver the
``γ`` versions follow from them, the group leaders' fetches serve them, and the OP group
tier reads the γ each test's fetch served (``gamma`` of the group tier). The utility
tier reads γ_group and the number of groups, constants the utility holds itself: it
fetches nothing. BL (the plain twin) reads the static tables.

Streamed as in batch: the fetches only look back (docs/streaming.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from cep_core.remote import Versions
from drsim.scenario import RemoteData, Scenario
from drsim.units import clock
from drsim.utility.features import FeatureChunk, FeatureRun, MonitoringFeature
from drsim.utility.fetching import (
    FetchCounts,
    GroupFetches,
    MeterFetch,
    alert_shift,
    group_fetches,
    served_values,
)
from drsim.utility.monitoring import MonitoringPlan
from drsim.utility.threshold import Thresholds
from drsim.utility.updated_profiles import (
    ChunkUpdates,
    chunk_updates,
    gamma_versions,
    mv_is_exact,
    schedule,
)

__all__ = ["COLUMNS", "AlertDelays", "RemoteCounts", "RemoteProfiles"]

#: per chunk and monitored pass: what its gateways fetched (FetchCounts.as_list); with
#: updates, the chunk's λ versions published and its replicas' flags per test under the
#: re-estimated profiles (null: none, or the static ones)
COLUMNS = pa.schema([("fetched", pa.list_(pa.int64())), ("versions", pa.int64()),
                     ("updated_flags", pa.list_(pa.int64()))])
#: the pass whose rows carry the chunk's updates (the same in every pass's row)
UPDATES_PASS = "traditional"


@dataclass(frozen=True)
class RemoteCounts:
    """What the meter tier fetched, and what the utility's updates made of the chunks.

    Attributes
    ----------
    meter : dict of str to drsim.utility.fetching.FetchCounts
        Monitored pass -> the meter tier's fetches, summed over the chunks.
    lambda_versions : int
        ``λ[houseID, time]`` versions published [elements].
    updated_flags : tuple of tuple of int, or None
        Per group and test the threshold's replicas flagged under the re-estimated
        profiles [households]; None: γ is not re-estimated.
    """

    meter: dict[str, FetchCounts]
    lambda_versions: int = 0
    updated_flags: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True)
class AlertDelays:
    """The group leaders' γ fetch delays, which hold their alerts back.

    Attributes
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan.
    delays : numpy.ndarray
        (groups, tests) the delays of the leaders' γ fetches
        (:func:`drsim.utility.fetching.group_fetches`) [min].
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
    notice : int
        The announcement, the utility's first update [minutes since midnight].
    sizes : tuple of int
        Households per group (γ from the re-estimated replicas' flags).
    """

    name = "remote"
    optimises = True
    scenario_key = "monitoring.remote"
    schema = COLUMNS

    cfg: RemoteData | None
    plan: MonitoringPlan
    seed: int
    group_firsts: tuple[int, ...]
    day_of: dict[str, Any] | None = None
    notice: int = 0
    sizes: tuple[int, ...] = ()
    exact: bool = True  # the M&V estimates have no error (the updates publish nothing)

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
        adjust, program = scenario.baseline.day_of_adjustment, scenario.dr_program
        return cls(scenario.monitoring.remote, MonitoringPlan.of(scenario), scenario.seed,
                   tuple(first for first, _ in scenario.group_ranges()),
                   None if adjust is None else adjust.model_dump(mode="json"),
                   program.start_minute - program.notice_minutes,
                   tuple(scenario.group_sizes()), mv_is_exact(scenario))

    @property
    def active(self) -> bool:
        """Whether the scenario serves the profiles remotely."""
        return self.cfg is not None

    @property
    def updated(self) -> bool:
        """Whether the utility updates the profiles while the program runs."""
        return self.cfg is not None and self.cfg.updates is not None

    @property
    def streamed(self) -> bool:  # type: ignore[override]
        """Whether a streamed run can run it.

        The fetches only look back (docs/streaming.md, "Remote profiles"); the updates'
        re-estimates are the chunk tasks', which a stream does not make, so only updates
        that publish nothing (M&V without error) stream.
        """
        return not self.updated or self.exact

    @property
    def needs_runs(self) -> bool:  # the updates read the readings before the notice
        """Whether the chunk task keeps the passes' runs (with updates)."""
        return self.updated

    @property
    def readings_refusal(self) -> str | None:
        """Why recorded readings cannot feed the updates (None: they can).

        None without updates, or with updates that publish nothing (M&V without error).
        """
        return ("updates: the utility re-estimates the profiles from the readings before "
                "the notice, which recorded readings of the program do not hold"
                if self.updated and not self.exact else None)

    def chunk_values(self, plan: MonitoringPlan, result: Any) -> ChunkUpdates | None:
        """Re-estimate the chunk's profiles as the utility updates them (with updates).

        Parameters
        ----------
        plan : drsim.utility.monitoring.MonitoringPlan
            The monitoring plan.
        result : drsim.pipeline.passes.ChunkResult
            The chunk's simulation, with its passes' runs.

        Returns
        -------
        drsim.utility.updated_profiles.ChunkUpdates or None
            :func:`drsim.utility.updated_profiles.chunk_updates`; None without updates.
        """
        if not self.updated:
            return None
        return chunk_updates(plan, self.cfg.updates, self.notice, result)

    def _updates(self, chunk: FeatureChunk) -> ChunkUpdates | None:
        return chunk.values.get(self.name)

    def meter_inputs(self, chunk: FeatureChunk) -> dict[str, Any]:
        """Return the fetcher of ``λ[houseID, time]``, ``fetch`` of the meter tier.

        Parameters
        ----------
        chunk : drsim.utility.features.FeatureChunk
            The chunk's households (and, with updates, its ``λ`` versions).

        Returns
        -------
        dict
            ``{"fetch": MeterFetch}``, a new one for each run of the meter tier.
        """
        updates = self._updates(chunk)
        return {"fetch": MeterFetch(chunk.plan, self.cfg, chunk.house_ids,
                                    self.group_firsts[chunk.group], self.seed,
                                    None if updates is None else updates.lam)}

    def _group_fetches(self, merged: RemoteCounts | None, thresholds: Thresholds | None
                       ) -> tuple[GroupFetches, Versions | None]:
        """Simulate the group leaders' fetches, with the γ versions the updates publish."""
        versions = None
        if self.updated and thresholds is not None:
            flags = None if merged is None else merged.updated_flags
            updated = None if flags is None else Thresholds.of(
                self.plan, np.array(self.sizes, np.int64), np.array(flags, np.int64)).gamma
            versions = gamma_versions(self.plan, self.cfg.updates, self.notice,
                                      thresholds.gamma, updated)
        return group_fetches(self.plan, self.cfg, len(self.group_firsts), self.seed,
                             versions), versions

    def merged_group_inputs(self, merged: RemoteCounts | None, thresholds: Thresholds
                            ) -> dict[str, Any]:
        """Return the leaders' γ fetch delays and, with updates, the γ they were served.

        Parameters
        ----------
        merged : RemoteCounts or None
            What :meth:`merge` returned.
        thresholds : drsim.utility.threshold.Thresholds
            γ as first published.

        Returns
        -------
        dict
            ``{"alert_delays": AlertDelays}``, and ``"gamma"`` (a
            :class:`~drsim.utility.threshold.Thresholds` of the values served) when a
            γ version was published.
        """
        fetches, versions = self._group_fetches(merged, thresholds)
        out: dict[str, Any] = {"alert_delays": AlertDelays(self.plan, fetches.delays)}
        if versions is not None and len(versions):
            served = served_values("γ", np.arange(len(self.group_firsts), dtype=np.int64),
                                   self.plan.test_times, thresholds.gamma, versions,
                                   fetches.served)
            out["gamma"] = Thresholds(thresholds.test_times, served, thresholds.share,
                                      thresholds.policy)
        return out

    def chunk_rows(self, chunk: FeatureChunk, name: str) -> dict[str, Sequence[Any]]:
        """Return what the chunk's gateways fetched on pass ``name``, and its updates.

        Parameters
        ----------
        chunk : drsim.utility.features.FeatureChunk
            The chunk, with the pass's meter tier.
        name : str
            The monitored pass.

        Returns
        -------
        dict of str to sequence
            One row: :meth:`drsim.utility.fetching.FetchCounts.as_list`, the ``λ``
            versions the chunk published and the re-estimated replicas' flags (0 and
            null without updates); none before the meter tier has run (a streamed run's
            chunk task: the stream's meter stage makes the row, docs/streaming.md).
        """
        if chunk.meter is None:
            return {"fetched": [], "versions": [], "updated_flags": []}
        updates = self._updates(chunk)
        flags = None if updates is None or updates.flags is None else updates.flags
        return {"fetched": [chunk.meter.fetched],
                "versions": [0 if updates is None else len(updates.lam)],
                "updated_flags": [None if flags is None else np.asarray(flags, np.int64)]}

    def merge(self, rows: pd.DataFrame) -> RemoteCounts:
        """Sum the chunks' fetches per pass, and their updates.

        Parameters
        ----------
        rows : pandas.DataFrame
            The chunks' rows (chunk, group, pass, fetched, versions, updated_flags).

        Returns
        -------
        RemoteCounts
            The meter tier's fetches per pass, the ``λ`` versions and the re-estimated
            replicas' flags per group (from the rows of :data:`UPDATES_PASS`).
        """
        meter = {str(name): FetchCounts.merged(rows.loc[rows["pass"] == name, "fetched"])
                 for name in pd.unique(rows["pass"])}
        once = rows[rows["pass"] == UPDATES_PASS]
        flagged = once[once["updated_flags"].notna()]
        flags = None
        if len(flagged):
            stacked = np.stack([np.asarray(x, np.int64) for x in flagged["updated_flags"]])
            flags = np.zeros((len(self.group_firsts), stacked.shape[1]), dtype=np.int64)
            np.add.at(flags, flagged["group"].to_numpy(np.int64), stacked)
        return RemoteCounts(meter, int(once["versions"].fillna(0).sum()),
                            None if flags is None else tuple(map(tuple, flags.tolist())))

    def summary(self, merged: RemoteCounts | None, run: FeatureRun) -> dict[str, Any] | None:
        """Return ``remote`` of summary.json (None: local tables).

        Parameters
        ----------
        merged : RemoteCounts or None
            What :meth:`merge` returned.
        run : drsim.utility.features.FeatureRun
            The run's outcomes and thresholds.

        Returns
        -------
        dict or None
            The configuration, per tier what was fetched and waited for on the
            traditional pass and the versions published, the updates, and the
            prediction.
        """
        if self.cfg is None:
            return None
        trad = run.outcome["traditional"]
        group, versions = self._group_fetches(merged, run.thresholds)
        return {"config": self.cfg.model_dump(mode="json"), "day_of_adjustment": self.day_of,
                "updates": self._updates_summary(),
                "meter_tier": {**merged.meter["traditional"].summary(),
                               "versions_published": merged.lambda_versions},
                "group_tier": {**group.counts.summary(),
                               "versions_published": 0 if versions is None else len(versions)},
                "utility_tier": "no remote data",
                "utility_noncompliance_time": clock(trad.t_nc) if trad.predicted else None}

    def _updates_summary(self) -> dict[str, Any] | None:
        """Describe the updates as run: how many, the first and last, where readings end."""
        if not self.updated:
            return None
        times, ends = schedule(self.plan, self.cfg.updates, self.notice)
        return {"count": len(times), "first": clock(int(times[0])) if len(times) else None,
                "last": clock(int(times[-1])) if len(times) else None,
                "readings_until": clock(int(ends.max())) if len(ends) else None}

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
            The strategy, requests, MB, seconds waited and the mean data delay; with
            updates, the versions published of λ and γ and the refetches they caused.
        """
        if not isinstance(section, Mapping):
            return []
        meter = section.get("meter_tier", {})
        delay = meter.get("data_delay_avg_seconds")
        rows = [(f"profiles fetched ({section.get('config', {}).get('strategy')}): "
                 "requests / MB / waited s / avg delay s",
                 f"{meter.get('requests')} / {meter.get('bytes', 0) / 1e6:.2f} / "
                 f"{meter.get('waited_seconds', 0):.0f} / "
                 f"{'n/a' if delay is None else f'{delay:.2f}'}")]
        if isinstance(section.get("updates"), Mapping):
            group = section.get("group_tier", {})
            rows.append(("profile updates: λ / γ versions published, refetches",
                         f"{meter.get('versions_published')} / "
                         f"{group.get('versions_published')} / "
                         f"{meter.get('refetches', 0) + group.get('refetches', 0)}"))
        return rows
