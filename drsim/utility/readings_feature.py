"""Lost meter readings as a monitoring feature (:class:`LostReadings`).

With ``meters.reading_loss`` (the loss model: :mod:`drsim.utility.readings`) the meter
tier of every pass sees only the readings that arrive (placeholders for the lost ones
with ``monitoring.max_missing`` ≥ 1), the silent meters are reported to the group
leaders, a lost reading is not sent (the costs), and the utility reads the deficit at
t_nc from the households seen (:func:`drsim.utility.deficit.reduction_seen`). ``drsim
monitor`` takes the lost readings from the recorded ones instead of the model
(docs/decisions.md, "Lost meter readings"). Each chunk sends one row per monitored pass
(:data:`COLUMNS`); the driver merges the traditional pass's (:class:`LossCounts`), and
the feature's keys join the ``monitoring`` section of summary.json. It is streamed
(docs/streaming.md, "Lost readings"): ``drsim run --streaming`` stages the readings
without those the model loses, and a chunk's row comes in two parts, its chunk task's and
the stream's meter stage's (:meth:`LostReadings.chunk_rows`); ``drsim monitor --stream``
makes the whole row in the meter stage from the readings that arrived.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from drsim.household.render import micro_kw
from drsim.scenario import ReadingLoss, Scenario
from drsim.utility.features import FeatureChunk, FeatureRun, MonitoringFeature
from drsim.utility.headline_cells import real
from drsim.utility.monitoring import MonitoringPlan
from drsim.utility.reading_slots import reading_minutes, slot_of
from drsim.utility.readings import lost_readings, silence

__all__ = ["COLUMNS", "LossCounts", "LostReadings", "loss_report", "seen_reduction"]

#: per chunk and monitored pass: per reading slot of the program, the readings lost;
#: households by the test at which they first fall silent (tests + 1, the last: never)
#: then silent spells per test; on the traditional pass, what the utility sees of the
#: deficit (:func:`seen_reduction`, raveled; null on the others); and (tests,
#: max_missing + 1) the user events by the lost test slots in their run, raveled
COLUMNS = pa.schema([("lost", pa.list_(pa.int64())), ("silent", pa.list_(pa.int64())),
                     ("seen", pa.list_(pa.float64())), ("missing", pa.list_(pa.int64()))])


@dataclass(frozen=True)
class LossCounts:
    """The traditional pass's lost readings, summed over each group's chunks.

    Attributes
    ----------
    lost : numpy.ndarray
        (groups, reading slots) the readings lost.
    first_silent : numpy.ndarray
        (groups, tests + 1) households by the test at which they first fall silent (the
        last: never).
    silent_spells : numpy.ndarray
        (groups, tests) silent spells beginning at each test.
    seen : numpy.ndarray
        (groups, 3, program minutes) the households seen and their reduction so far
        (:func:`seen_reduction`).
    by_missing : numpy.ndarray
        (groups, tests, max_missing + 1) user events by the lost test slots in their run.
    """

    lost: np.ndarray
    first_silent: np.ndarray
    silent_spells: np.ndarray
    seen: np.ndarray
    by_missing: np.ndarray


@dataclass(frozen=True)
class LostReadings(MonitoringFeature):
    """Lost meter readings: ``meters.reading_loss``, or those ``drsim monitor`` reads.

    Streamed (docs/streaming.md): ``drsim run --streaming`` stages the readings without
    those the model loses and gives the batch run's values, its rows made in two parts
    (:meth:`chunk_rows`); ``drsim monitor --stream`` takes the readings that did not
    arrive as lost, as ``drsim monitor`` does.

    Attributes
    ----------
    loss : drsim.scenario.ReadingLoss or None
        The scenario's loss model.
    seed : int
        The scenario's seed.
    sizes : tuple of int
        Households per group.
    recorded : bool
        Whether recorded readings (``drsim monitor``) lack some.
    """

    name = "lost_readings"
    scenario_key = "meters.reading_loss"
    schema = COLUMNS
    section = "monitoring"
    streamed = True

    loss: ReadingLoss | None
    seed: int
    sizes: tuple[int, ...]
    recorded: bool = False

    @classmethod
    def of(cls, scenario: Scenario) -> LostReadings:
        """Return the loss model of ``scenario`` (None: off).

        Parameters
        ----------
        scenario : drsim.scenario.Scenario
            The scenario of the run.

        Returns
        -------
        LostReadings
            Its ``meters.reading_loss``.
        """
        return cls(scenario.meters.reading_loss, scenario.seed,
                   tuple(scenario.group_sizes()))

    @property
    def active(self) -> bool:
        """Whether the scenario has a loss model or the readings lack some."""
        return self.loss is not None or self.recorded

    def with_readings(self, lost: int) -> LostReadings:
        """Return the feature on recorded readings of which ``lost`` did not arrive.

        Parameters
        ----------
        lost : int
            The readings that did not arrive.

        Returns
        -------
        LostReadings
            On when some did not arrive.
        """
        return LostReadings(self.loss, self.seed, self.sizes, lost > 0)

    def _lost(self, chunk: FeatureChunk) -> np.ndarray | None:
        """(households, program minutes) the readings lost, or None: none modelled."""
        plan = chunk.plan
        if chunk.arrived is not None:  # drsim monitor: what the readings show
            return ~chunk.arrived if self.recorded or self._drawn else None
        if not self._drawn:
            return None
        slots = reading_minutes(plan.t_start, plan.t_end, plan.reading)
        return lost_readings(self.loss, self.seed, chunk.house_ids, slots)[
            :, slot_of(np.arange(plan.t_start, plan.t_end), plan.t_start, plan.reading)]

    @property
    def _drawn(self) -> bool:
        return self.loss is not None and self.loss.active

    def readings_lost(self, chunk: FeatureChunk) -> np.ndarray | None:
        """Return the chunk's readings lost on the way (None: the model loses none).

        Parameters
        ----------
        chunk : drsim.utility.features.FeatureChunk
            The chunk's households.

        Returns
        -------
        numpy.ndarray or None
            Boolean, (households, program minutes).
        """
        return self._lost(chunk)

    def meter_inputs(self, chunk: FeatureChunk) -> dict[str, Any]:
        """Return the test readings lost, ``lost`` of the meter tier.

        Parameters
        ----------
        chunk : drsim.utility.features.FeatureChunk
            The chunk's households.

        Returns
        -------
        dict
            ``{"lost": (households, tests)}``, or nothing when none is lost.
        """
        lost = self._lost(chunk)
        plan = chunk.plan
        return {} if lost is None else {"lost": lost[:, plan.test_times - plan.t_start]}

    def chunk_rows(self, chunk: FeatureChunk, name: str) -> dict[str, Sequence[Any]]:
        """Return the chunk's row of pass ``name`` (:data:`COLUMNS`; none without loss).

        A streamed run (docs/streaming.md) makes the row in two parts that :meth:`merge`
        sums, each with the other's columns zero: its chunk task, where the simulation
        is, before the meter tier runs in the stream (``chunk.meter`` None: the readings
        lost, the meters silent, what the utility sees of the deficit), and the
        stream's meter stage once the gateway's program is decided, without the loads
        its chunk task had (``chunk.window`` empty: the user events by lost slots).

        Parameters
        ----------
        chunk : drsim.utility.features.FeatureChunk
            The chunk, with the pass's meter tier and window loads.
        name : str
            The monitored pass.

        Returns
        -------
        dict of str to sequence
            One row, or none when no reading is lost.
        """
        lost = self._lost(chunk)
        if lost is None:
            return {c: [] for c in COLUMNS.names}
        plan, m = chunk.plan, chunk.meter
        times = plan.test_times
        k = len(times)
        slots = lost[:, reading_minutes(plan.t_start, plan.t_end, plan.reading)
                     - plan.t_start]
        missing = np.zeros((k, plan.max_missing + 1), dtype=np.int64)
        if m is not None:
            np.add.at(missing, (np.searchsorted(times, m.events["time"].to_numpy()),
                                m.events["missing"].to_numpy()), 1)
        if not chunk.window:  # the stream's part: the meter tier's alone
            zero = {"lost": np.zeros(slots.shape[1], np.int64),
                    "silent": np.zeros(2 * k + 1, np.int64),
                    "seen": None if name != "traditional" else
                    np.zeros(3 * (plan.t_end - plan.t_start))}
            return {**{c: [v] for c, v in zero.items()}, "missing": [missing.ravel()]}
        first, spells = silence(lost[:, times - plan.t_start], plan.m_user + 1)
        silent_at = np.where(first >= 0, first, k)  # (meter_tier's first_silent, indexed)
        seen = None
        if name == "traditional":
            window = chunk.window
            seen = seen_reduction(plan, slots, window["baseline"], window["load"],
                                  window["expected"]).ravel()
        return {"lost": [slots.sum(axis=0)],
                "silent": [np.concatenate([np.bincount(silent_at, minlength=k + 1),
                                           spells])],
                "seen": [seen], "missing": [missing.ravel()]}

    def merge(self, rows: pd.DataFrame) -> LossCounts | None:
        """Sum the traditional pass's rows per group (lost readings: the same in all).

        Parameters
        ----------
        rows : pandas.DataFrame
            The chunks' rows (chunk, group, pass, then :data:`COLUMNS`).

        Returns
        -------
        LossCounts or None
            None when no chunk lost a reading.
        """
        trad = rows[rows["pass"] == "traditional"]
        if not len(trad):
            return None
        groups = trad["group"].to_numpy(np.int64)
        n = len(self.sizes)

        def summed(column: str, dtype: type) -> np.ndarray:
            values = np.stack([np.asarray(v, dtype) for v in trad[column]])
            out = np.zeros((n, values.shape[1]), dtype=dtype)
            np.add.at(out, groups, values)
            return out

        silent = summed("silent", np.int64)
        k = (silent.shape[1] - 1) // 2
        seen = summed("seen", np.float64)  # whole µkW·min: exact in any order
        missing = summed("missing", np.int64)
        return LossCounts(summed("lost", np.int64), silent[:, :k + 1], silent[:, k + 1:],
                          seen.reshape(n, 3, -1), missing.reshape(n, k, -1))

    def cost_inputs(self, merged: LossCounts | None, name: str) -> dict[str, Any]:
        """Return the readings lost (not sent) and the silent meters' reports (sent).

        Parameters
        ----------
        merged : LossCounts or None
            What :meth:`merge` returned.
        name : str
            The monitored pass (the losses are the same in every pass).

        Returns
        -------
        dict
            ``lost`` and ``silent_spells`` of the costs, or nothing.
        """
        return {} if merged is None else {"lost": merged.lost,
                                          "silent_spells": merged.silent_spells}

    def deficit_inputs(self, merged: LossCounts | None) -> dict[str, Any]:
        """Return what the utility sees of the deficit, ``seen``.

        Parameters
        ----------
        merged : LossCounts or None
            What :meth:`merge` returned.

        Returns
        -------
        dict
            ``seen`` of the deficit, or nothing.
        """
        return {} if merged is None else {"seen": merged.seen}

    def summary(self, merged: LossCounts | None, run: FeatureRun) -> dict[str, Any]:
        """Return the keys of lost readings in ``monitoring`` of summary.json.

        Parameters
        ----------
        merged : LossCounts or None
            What :meth:`merge` returned.
        run : drsim.utility.features.FeatureRun
            The run's plan, groups, stops and costs.

        Returns
        -------
        dict
            ``max_missing``, ``reading_loss``, ``meters_silent`` and ``lost_readings``
            (docs/summary.md): on the traditional pass (as deployed) and the expected
            pass the readings lost and the meters silent.
        """
        plan = run.plan
        out: dict[str, Any] = {
            "max_missing": plan.max_missing,
            "reading_loss": None if self.loss is None else self.loss.model_dump(mode="json")}
        if self.loss is None and merged is None:
            return {**out, "meters_silent": None, "lost_readings": None}
        names = list(run.group_names)
        sizes = np.asarray(run.sizes, dtype=np.int64)
        k = len(plan.test_times)
        if merged is None:  # a loss model that loses nothing (rate 0, no dark meters)
            lost = np.zeros((len(names), len(reading_minutes(plan.t_start, plan.t_end,
                                                             plan.reading))), np.int64)
            first_silent = np.zeros((len(names), k + 1), dtype=np.int64)
            first_silent[:, k] = sizes
        else:
            lost, first_silent = merged.lost, merged.first_silent
        report = {name: loss_report(plan, sizes, lost, first_silent, run.stops[name], names)
                  for name in ("traditional", "expected") if name in run.stops}
        trad = report["traditional"]
        expected = {key: report["expected"][key] for key in
                    ("readings_lost", "share_of_readings_lost", "test_readings_lost")} \
            if "expected" in report else None
        if merged is None:  # nothing lost: every user event of the pass is exact
            by_missing = [run.costs("traditional")["communication"]["user_events"]]
        else:
            counted = plan.test_times[None, :] <= run.stops["traditional"][:, None]
            by_missing = (merged.by_missing * counted[:, :, None]).sum(axis=(0, 1))
        return {**out, "meters_silent": trad.pop("meters_silent"),
                "lost_readings": {**trad, "expected_pass": expected,
                                  "user_events_by_missing": {
                                      str(j): int(v) for j, v in enumerate(by_missing)}}}

    @classmethod
    def headline(cls, section: Any) -> list[tuple[str, str]]:
        """Return the row of readings lost and meters silent, when any.

        Parameters
        ----------
        section : object
            The ``monitoring`` section of summary.json.

        Returns
        -------
        list of (str, str)
            The share of readings lost and the meters silent, with max_missing.
        """
        lost = section.get("lost_readings") if isinstance(section, Mapping) else None
        if not isinstance(lost, Mapping):
            return []
        share = real(lost.get("share_of_readings_lost"))
        silent = section.get("meters_silent")
        total = silent.get("total") if isinstance(silent, Mapping) else None
        return [(f"readings lost / meters silent (max_missing {section.get('max_missing')})",
                 f"{'n/a' if share is None else f'{100 * share:.1f} %'} / {total}")]


def seen_reduction(plan: MonitoringPlan, lost: np.ndarray, baseline_kw: np.ndarray,
                   load_kw: np.ndarray, expected_kw: np.ndarray) -> np.ndarray:
    """Return what the utility sees of the deficit.

    For a reading at each minute from ``t_start``: the households whose reading there
    arrives, and over them the reduction realised and expected from ``t_start`` up to
    that minute, Σ (B̂ − P) and Σ (B̂ − P̂), in whole µkW·min (exact for any chunking);
    what the utility reads of the deficit at t_nc (docs/decisions.md, "Lost meter
    readings"; :func:`drsim.utility.deficit.reduction_seen`).

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan.
    lost : numpy.ndarray
        Boolean, (households, reading slots): the readings lost.
    baseline_kw, load_kw, expected_kw : numpy.ndarray
        (households, program minutes) B̂, P and P̂ [kW].

    Returns
    -------
    numpy.ndarray
        (3, program minutes): households seen, Σ (B̂ − P), Σ (B̂ − P̂) before each minute.
    """
    minutes = np.arange(plan.t_start, plan.t_end)
    arrived = ~lost[:, slot_of(minutes, plan.t_start, plan.reading)]

    def upto(kw: np.ndarray) -> np.ndarray:  # whole µkW·min before each minute
        cum = np.cumsum(micro_kw(baseline_kw) - micro_kw(kw), axis=1)
        return np.concatenate([np.zeros((len(cum), 1)), cum[:, :-1]], axis=1)

    return np.stack([arrived.sum(axis=0).astype(np.float64),
                     np.where(arrived, upto(load_kw), 0.0).sum(axis=0),
                     np.where(arrived, upto(expected_kw), 0.0).sum(axis=0)])


def loss_report(plan: MonitoringPlan, sizes: np.ndarray, lost: np.ndarray,
                first_silent: np.ndarray, stop: np.ndarray, names: list[str]
                ) -> dict[str, Any]:
    """Return what the lost readings took from the monitoring of one pass.

    As deployed (each group until its ``stop``): the readings and test readings lost,
    and the meters silent (m_user + 1 lost tests in a row) per group and in all, beside
    the same over the whole program.

    Parameters
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan.
    sizes : numpy.ndarray
        (groups,) households per group.
    lost : numpy.ndarray
        (groups, reading slots) readings lost.
    first_silent : numpy.ndarray
        (groups, tests + 1) households by the test at which they first fall silent (the
        last: never).
    stop : numpy.ndarray
        (groups,) the last minute each group is tested at the monitoring rate.
    names : list of str
        The groups' names.

    Returns
    -------
    dict
        ``readings_lost``, ``share_of_readings_lost``, ``test_readings_lost``,
        ``meters_silent`` and ``meters_silent_whole_program`` (docs/summary.md).
    """
    k = len(plan.test_times)
    scheduled = lost_sum = tests_lost = 0
    test_slots = slot_of(plan.test_times, plan.t_start, plan.reading)
    for g, last in enumerate(np.asarray(stop).tolist()):
        fast = range(plan.t_start, last + 1, plan.reading)
        slow = range(last + plan.settlement, plan.t_end, plan.settlement)
        at = slot_of(np.array([*fast, *slow], dtype=np.int64), plan.t_start, plan.reading)
        scheduled += int(sizes[g]) * len(at)
        lost_sum += int(lost[g, at].sum())
        tests_lost += int(lost[g, test_slots[plan.test_times <= last]].sum())
    counted = plan.test_times[None, :] <= np.asarray(stop)[:, None]  # (groups, tests)
    silent = (first_silent[:, :k] * counted).sum(axis=1)
    ever = first_silent[:, :k].sum(axis=1)
    return {"readings_lost": lost_sum,
            "share_of_readings_lost": lost_sum / scheduled if scheduled else None,
            "test_readings_lost": tests_lost,
            "meters_silent": {"per_group": {n: int(x) for n, x in zip(names, silent,
                                                                      strict=True)},
                              "total": int(silent.sum())},
            "meters_silent_whole_program": {
                "per_group": {n: int(x) for n, x in zip(names, ever, strict=True)},
                "total": int(ever.sum())}}
