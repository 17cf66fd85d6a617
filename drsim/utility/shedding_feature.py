"""Load shedding in the three tiers (OP) as a monitoring feature (:class:`LoadShedding`).

With ``monitoring.shedding`` (the model and the shedding: :mod:`drsim.utility.shedding`,
:mod:`drsim.utility.tier_shedding`) a stage before the passes fits each group's cost
model of the meter query where the data is and measures the share of the same simulated
previous day flagged per test, from which the group leaders and the utility estimate
theirs (:func:`cost_model_rows`). Every chunk runs the meter tier of each monitored pass
twice (:func:`drsim.utility.shedding.shed_meter_tier`): under the bound (OP, the pass's
own name) and unshed (BL, its plain twin :func:`drsim.utility.features.plain_twin`), each with its
gateways' figures; the chunks send one row per run (:data:`COLUMNS`). The group leaders
and the utility shed on OP's passes (:class:`drsim.utility.tier_shedding.TierShedding`,
given them by :meth:`LoadShedding.group_inputs` and :meth:`LoadShedding.utility_inputs`)
and report their devices in rows of kind ``device``. The driver sums the figures per tier
and run (:class:`drsim.utility.shedding.DeviceStats`, :class:`SheddingFigures`), and the
feature writes summary.json's ``shedding``: OP beside BL on the same households.

The run folder keeps the stage's rows (:data:`COST_MODELS`, with what they were made for,
:func:`made_for`): ``drsim monitor`` simulates nothing, so it runs OP on recorded readings
with the models of the run they came from, checked to fit the scenario
(:mod:`drsim.pipeline.kept`).

Streamed (docs/streaming.md, "Load shedding and remote profiles"): every device's
decisions look back once it is sized, and its sizing (cost per unit, bound) is measured
on the whole day's unshed runs, so a streamed run takes it from a batch run of the same
day made before the stream (:meth:`LoadShedding.day_sizes`, :class:`DeviceSizes`, after the cost
models in the feature's prepared values); the stream runs OP alone
(:meth:`LoadShedding.without_twins`): the meter stage on each gateway over its tests so far,
the leaders and the utility on their inputs so far, and BL's values come from that day run
(:meth:`LoadShedding.with_twins`, :mod:`drsim.pipeline.day_twins`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from drsim.scenario import Scenario, Shedding
from drsim.units import clock
from drsim.utility.features import (
    FeatureChunk,
    FeatureRun,
    MeterRun,
    MeterRuns,
    MonitoringFeature,
    Preparation,
    is_plain_twin,
    plain_twin,
)
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan
from drsim.utility.quiet_meters import quiet_so_far
from drsim.utility.shedding import (
    DeviceSizing,
    DeviceStats,
    fit_meter_model,
    flagged_shares,
    history_day,
    shed_meter_tier,
)
from drsim.utility.tier_shedding import TierShedding

__all__ = ["COLUMNS", "COST_MODELS", "MODELS", "TIER_UNITS", "CostModels", "DeviceSizes",
           "GatewayRun", "LoadShedding", "SheddingFigures", "cost_model_rows", "cost_models",
           "made_for"]

#: per chunk, monitored pass and run (OP under the pass's name, BL under its twin's): what
#: its gateways did (DeviceStats.as_list), the readings its quiet meters did not send,
#: (tests, interim offsets) flattened (drsim.utility.quiet_meters.quiet_readings), and its
#: gateways' sizing (DeviceSizing: cost per unit, bounds; none when unbounded)
COLUMNS = pa.schema([("run", pa.string()), ("gateways", pa.list_(pa.float64())),
                     ("quiet", pa.list_(pa.int64())), ("unit_cost", pa.list_(pa.float64())),
                     ("bound", pa.list_(pa.float64()))])
#: a group's pickled cost model of the meter query, and the share of its previous day's
#: sample flagged per test time (what the group and utility tiers' models are made of)
MODELS = pa.schema([("group", pa.int32()), ("model", pa.binary()),
                    ("shares", pa.list_(pa.float64()))])
#: the run folder's file that keeps the rows of MODELS (drsim.pipeline.kept)
COST_MODELS = "cost_models.parquet"
#: per tier, its key in summary.json's ``shedding.{op, bl}`` and what its inputs are called
TIER_UNITS = {"meter": ("meter_tier", "readings"), "group": ("group_tier", "user_events"),
              "utility": ("utility_tier", "group_events")}


@dataclass(frozen=True)
class GatewayRun:
    """What one run of a chunk's pass did at its gateways.

    Attributes
    ----------
    stats : drsim.utility.shedding.DeviceStats
        The gateways' figures.
    quiet : numpy.ndarray
        (tests, interim offsets) the readings quiet meters did not send.
    sizing : drsim.utility.shedding.DeviceSizing
        The gateways' cost per unit and bounds.
    """

    stats: DeviceStats
    quiet: np.ndarray
    sizing: DeviceSizing


@dataclass(frozen=True)
class DeviceSizes:
    """Every modelled device's sizing of a run.

    Each a :class:`drsim.utility.shedding.DeviceSizing`: what a streamed run's tiers get
    from a batch run of the whole day, made before the stream (docs/streaming.md, "Load
    shedding and remote profiles").

    Attributes
    ----------
    meter : dict of (int, str) to DeviceSizing
        (chunk, monitored pass) -> its gateways'.
    tiers : dict of (str, int) to DeviceSizing
        (pass or twin, group; the utility: -1) -> the group leader's or the utility's.
    unshed : dict of (int, str) to tuple of int
        (chunk, monitored pass) -> its gateways' unshed run (BL): latency sum [µmin] and
        count [readings] over the whole window, the reference of OP's bound, which a
        stream that runs OP alone reports (:meth:`LoadShedding.without_twins`).
    """

    meter: dict[tuple[int, str], DeviceSizing] = field(default_factory=dict)
    tiers: dict[tuple[str, int], DeviceSizing] = field(default_factory=dict)
    unshed: dict[tuple[int, str], tuple[int, int]] = field(default_factory=dict)


def cost_model_rows(scenario: Scenario, plan: MonitoringPlan, simulate: Callable[..., Any],
                    group: int) -> dict[str, list[Any]]:
    """Fit the utility's cost model of the meter query for ``group``, pickled.

    Fitted on the previous day's households of the group, simulated here
    (:func:`drsim.utility.shedding.history_day`,
    :func:`drsim.utility.shedding.fit_meter_model`); the same households give the share
    flagged per test time (:func:`drsim.utility.shedding.flagged_shares`), which the
    group leaders and the utility combine with γ when they run
    (:class:`drsim.utility.tier_shedding.TierShedding`).

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario of the run.
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan.
    simulate : callable
        The pipeline's simulation of households (``simulate(scenario, first, count,
        group)``).
    group : int
        The group.

    Returns
    -------
    dict
        One row of :data:`MODELS`.
    """
    day, first, n = history_day(scenario, group)
    history = simulate(day, first, n, group)
    model = fit_meter_model(scenario, plan, group, history)
    return {"group": [group], "model": [pickle.dumps(model)],
            "shares": [flagged_shares(plan, group, history).tolist()]}


@dataclass(frozen=True)
class CostModels:
    """What the stage "cost models" made, by group.

    Attributes
    ----------
    meter : tuple of bytes
        Each group's pickled cost model of the meter query.
    shares : tuple of tuple of float
        Each group's share of its previous day's sample flagged per test time [1].
    """

    meter: tuple[bytes, ...]
    shares: tuple[tuple[float, ...], ...]


def cost_models(rows: pd.DataFrame) -> CostModels:
    """Return each group's cost model and shares flagged, in group order.

    Parameters
    ----------
    rows : pandas.DataFrame
        The rows of :data:`MODELS`, one per group.

    Returns
    -------
    CostModels
        By group.
    """
    rows = rows.sort_values("group")
    return CostModels(tuple(rows["model"].tolist()),
                      tuple(tuple(float(x) for x in r) for r in rows["shares"]))


def made_for(scenario: Scenario, plan: MonitoringPlan) -> dict[str, Any]:
    """Return what the cost models of ``scenario`` are made for, as JSON data.

    The groups (each fitted on its own households, :func:`cost_model_rows`), the
    settings of ``monitoring.shedding`` (the gateways, the device and the model's classes
    and slices) and the test times (the shares flagged are per test time).

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        A scenario with ``monitoring.shedding``.
    plan : drsim.utility.monitoring.MonitoringPlan
        Its monitoring plan.

    Returns
    -------
    dict
        ``groups`` ("name (households)"), ``monitoring.shedding``, ``test_times``
        [minutes since midnight].
    """
    return {"groups": [f"{g.name} ({n})" for g, n in zip(scenario.groups,
                                                          scenario.group_sizes(), strict=True)],
            "monitoring.shedding": scenario.monitoring.shedding.model_dump(mode="json"),
            "test_times": plan.test_times.tolist()}


@dataclass(frozen=True)
class SheddingFigures:
    """What the devices of each tier did, per run (a pass, or its BL twin).

    Attributes
    ----------
    meter, group, utility : dict of str to drsim.utility.shedding.DeviceStats
        Run -> the figures of the gateways, the group leaders, the utility.
    quiet : dict of str to numpy.ndarray
        Run -> (groups, tests × interim offsets) the readings quiet meters did not send
        (:func:`drsim.utility.quiet_meters.quiet_readings`).
    """

    meter: dict[str, DeviceStats]
    group: dict[str, DeviceStats] = field(default_factory=dict)
    utility: dict[str, DeviceStats] = field(default_factory=dict)
    #: run -> (groups, tests × interim offsets) the readings quiet meters did not send
    quiet: dict[str, np.ndarray] = field(default_factory=dict)
    #: every device's sizing (not compared: the figures follow from it)
    sizes: DeviceSizes = field(default_factory=DeviceSizes)

    def __eq__(self, other: object) -> bool:
        """Compare the figures (the quiet readings by value)."""
        return isinstance(other, SheddingFigures) and \
            (self.meter, self.group, self.utility) == (other.meter, other.group, other.utility) \
            and self.quiet.keys() == other.quiet.keys() \
            and all(np.array_equal(q, other.quiet[k]) for k, q in self.quiet.items())


@dataclass(frozen=True)
class LoadShedding(MonitoringFeature):
    """Hybrid load shedding in the three tiers under latency bounds (``monitoring.shedding``).

    Attributes
    ----------
    cfg : drsim.scenario.Shedding or None
        The scenario's ``monitoring.shedding``.
    group_firsts : tuple of int
        The id of each group's first household (gateways count from it).
    twins : bool
        Whether the tiers run the plain twins (BL) beside OP; a streamed run's do not
        (:meth:`without_twins`).
    """

    name = "shedding"
    optimises = True
    streamed = True  # with its devices sized on the whole day (day_sizes)
    sized_on_the_day = True
    rows_so_far = True  # the quiet readings of the tests so far: the costs at t_nc
    measures_twins = True  # BL's tiers run unshed on their devices (drsim.utility.tier_shedding)
    scenario_key = "monitoring.shedding"
    schema = COLUMNS
    #: its gateways' model assumes every reading arrives (drsim monitor: readings with holes)
    excludes = ("lost_readings",)

    cfg: Shedding | None
    group_firsts: tuple[int, ...]
    twins: bool = True

    @classmethod
    def of(cls, scenario: Scenario) -> LoadShedding:
        """Return the load shedding of ``scenario`` (None: the unshed BL configuration).

        Parameters
        ----------
        scenario : drsim.scenario.Scenario
            The scenario of the run.

        Returns
        -------
        LoadShedding
            Its ``monitoring.shedding``.
        """
        return cls(scenario.monitoring.shedding,
                   tuple(first for first, _ in scenario.group_ranges()))

    @property
    def active(self) -> bool:
        """Whether the scenario sheds load at the gateways."""
        return self.cfg is not None

    def preparations(self, scenario: Scenario, plan: MonitoringPlan,
                     simulate: Callable[..., Any]) -> tuple[Preparation, ...]:
        """Return the stage "cost models": each group's, fitted where the data is.

        Parameters
        ----------
        scenario : drsim.scenario.Scenario
            The scenario of the run.
        plan : drsim.utility.monitoring.MonitoringPlan
            The monitoring plan.
        simulate : callable
            The pipeline's simulation of households.

        Returns
        -------
        tuple of Preparation
            One task per group (:func:`cost_model_rows`), made into the pickled models
            by group (:func:`cost_models`), its rows kept in :data:`COST_MODELS` with
            :func:`made_for`.
        """
        return (Preparation("cost models", len(self.group_firsts), MODELS,
                            partial(cost_model_rows, scenario, plan, simulate), cost_models,
                            COST_MODELS, made_for(scenario, plan)),)

    def passes(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """Return the passes with their plain twins (BL) after them.

        Parameters
        ----------
        names : tuple of str
            The monitored passes.

        Returns
        -------
        tuple of str
            ``names``, then each one's twin (none :meth:`without_twins`).
        """
        return (*names, *map(plain_twin, names)) if self.twins else names

    def without_twins(self) -> LoadShedding:
        """Return the feature that runs OP alone, BL's values taken from the day run.

        A streamed run's (docs/decisions.md, "BL in a streamed run"): the gateways report
        OP's figures with BL's latencies of the day run (:attr:`DeviceSizes.unshed`) as
        the bound's reference, and :meth:`with_twins` adds the day run's BL figures.

        Returns
        -------
        LoadShedding
            The feature with :attr:`twins` off.
        """
        return replace(self, twins=False)

    def with_twins(self, merged: SheddingFigures, day: SheddingFigures) -> SheddingFigures:
        """Return a streamed run's figures with the plain twins' of the day run.

        Parameters
        ----------
        merged : SheddingFigures
            The stream's (:meth:`tier_merge`), OP's passes only.
        day : SheddingFigures
            The day run's, made before the stream (:func:`drsim.pipeline.stages.day_sized`).

        Returns
        -------
        SheddingFigures
            ``merged`` with the twins' figures and quiet readings of ``day``.
        """
        def joined(mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
            return {**mine, **{n: v for n, v in theirs.items() if is_plain_twin(n)}}

        return replace(merged, **{k: joined(getattr(merged, k), getattr(day, k))
                                  for k in ("meter", "group", "utility", "quiet")})

    def meter_runs(self, chunk: FeatureChunk, runs: MeterRuns) -> MeterRuns:
        """Return the runs of each pass on the chunk's gateways: OP, then BL (unless OP alone).

        Parameters
        ----------
        chunk : drsim.utility.features.FeatureChunk
            The chunk, with the groups' cost models.
        runs : callable
            The plain meter tier (not used: both runs are the gateways').

        Returns
        -------
        callable
            The runs of :func:`drsim.utility.shedding.shed_meter_tier`, each with its
            :class:`drsim.utility.shedding.DeviceStats`.
        """
        model = pickle.loads(chunk.prepared[self.name][0].meter[chunk.group])
        first = self.group_firsts[chunk.group]
        sizes = self._sizes(chunk.prepared)

        def shed(name: str, acc: Any, expected_acc: Any,
                 inputs: Callable[..., Mapping[str, Any]]) -> list[MeterRun]:
            key = (chunk.chunk, name)
            if not self.twins and sizes is None:
                raise ValueError("OP alone needs the day run's device sizes (without_twins)")
            op_given: dict[str, Any] = {}  # OP's inputs: a stream's run, its carry

            def given(plain: bool = False) -> Mapping[str, Any]:
                got = inputs(plain=plain)
                op_given.update({} if plain else got)
                return got

            bl, bl_stats, op, op_stats, (keys, times), sizing = shed_meter_tier(
                chunk.plan, self.cfg, model, chunk.house_ids, chunk.group, first, acc,
                expected_acc, given, shed="meter" in self.cfg.tiers,
                sizing=None if sizes is None else sizes.meter[key],
                reference=None if self.twins else sizes.unshed[key])
            quiet = quiet_so_far(op_given.get("carry"), chunk.plan, chunk.house_ids, keys,
                                 times, chunk.lost)
            op_run = MeterRun(name, op, GatewayRun(op_stats, quiet, sizing))
            return [op_run] if bl is None else [op_run, MeterRun(
                plain_twin(name), bl, GatewayRun(bl_stats, np.zeros_like(quiet), sizing))]

        return shed

    def _sizes(self, prepared: Mapping[str, tuple[Any, ...]] | None) -> DeviceSizes | None:
        """Return the devices' sizes given before the tiers run (a stream's), or None."""
        mine = (prepared or {})[self.name]
        return mine[1] if len(mine) > 1 else None

    def _tiers(self, prepared: Mapping[str, tuple[Any, ...]] | None) -> dict[str, Any]:
        """Return the shedding of the leaders and the utility (shares, sizes if given)."""
        sizes = self._sizes(prepared)
        return {"shed": TierShedding(self.cfg, (prepared or {})[self.name][0].shares,
                                     {} if sizes is None else dict(sizes.tiers))}

    def day_sizes(self, merged: SheddingFigures) -> DeviceSizes:
        """Return every device's sizing from a run of the whole day (:meth:`tier_merge`).

        Parameters
        ----------
        merged : SheddingFigures
            What :meth:`tier_merge` returned.

        Returns
        -------
        DeviceSizes
            The gateways' per chunk and pass, the leaders' and the utility's per pass.
        """
        return merged.sizes

    def group_inputs(self, plan: MonitoringPlan,
                     prepared: Mapping[str, tuple[Any, ...]] | None = None
                     ) -> dict[str, Any]:
        """Return the group leaders' shedding, ``shed`` of the group leader.

        Parameters
        ----------
        plan : drsim.utility.monitoring.MonitoringPlan
            The monitoring plan.
        prepared : mapping of str to tuple
            The features' prepared values (this feature's: :class:`CostModels`).

        Returns
        -------
        dict
            ``{"shed": TierShedding}``.
        """
        return self._tiers(prepared)

    def utility_inputs(self, plan: MonitoringPlan,
                       prepared: Mapping[str, tuple[Any, ...]] | None = None
                       ) -> dict[str, Any]:
        """Return the utility's shedding, ``shed`` of the utility.

        Parameters
        ----------
        plan : drsim.utility.monitoring.MonitoringPlan
            The monitoring plan.
        prepared : mapping of str to tuple
            The features' prepared values (this feature's: :class:`CostModels`).

        Returns
        -------
        dict
            ``{"shed": TierShedding}``.
        """
        return self._tiers(prepared)

    def chunk_rows(self, chunk: FeatureChunk, name: str) -> dict[str, Sequence[Any]]:
        """Return what the chunk's gateways did in each run of pass ``name``.

        Parameters
        ----------
        chunk : drsim.utility.features.FeatureChunk
            The chunk, with the pass's runs.
        name : str
            The monitored pass.

        Returns
        -------
        dict of str to sequence
            One row per run: its name and its gateways' figures.
        """
        runs = chunk.meter_runs
        return {"run": [r.label for r in runs],
                "gateways": [r.extra.stats.as_list() for r in runs],
                "quiet": [r.extra.quiet.ravel().tolist() for r in runs],
                "unit_cost": [list(r.extra.sizing.unit_cost) for r in runs],
                "bound": [list(r.extra.sizing.bound or ()) for r in runs]}

    def merge(self, rows: pd.DataFrame) -> SheddingFigures:
        """Sum the chunks' gateway figures per run, the quiet readings per run and group.

        Parameters
        ----------
        rows : pandas.DataFrame
            The chunks' rows (chunk, group, pass, run, gateways, quiet).

        Returns
        -------
        SheddingFigures
            Run (a pass or its twin) -> its gateways' figures and quiet readings; the
            other tiers' come with :meth:`tier_merge`.
        """
        groups = len(self.group_firsts)
        gateways, quiet = {}, {}
        for name in pd.unique(rows["run"]):
            mine = rows[rows["run"] == name]
            gateways[str(name)] = DeviceStats.merged(mine["gateways"])
            # (a stream's rows of the tests so far are shorter: the later tests' zero)
            width = max(len(q) for q in mine["quiet"])
            per_chunk = np.stack([np.pad(np.asarray(q, dtype=np.int64), (0, width - len(q)))
                                  for q in mine["quiet"]])
            summed = np.zeros((groups, per_chunk.shape[1]), dtype=np.int64)
            np.add.at(summed, mine["group"].to_numpy(np.int64), per_chunk)
            quiet[str(name)] = summed
        own = rows[rows["run"] == rows["pass"]]  # OP's runs: the gateways' sizing
        meter = {(int(c), str(p)): DeviceSizing.of(u, b if len(b) else None)
                 for c, p, u, b in zip(own["chunk"], own["pass"], own["unit_cost"],
                                       own["bound"], strict=True)}
        twin = rows[rows["run"] == rows["pass"].map(plain_twin)]  # BL's: OP's reference
        unshed = {(int(c), str(p)): (s.latency_sum, s.latency_count)
                  for c, p, s in zip(twin["chunk"], twin["pass"],
                                     map(DeviceStats.merged, ([g] for g in twin["gateways"])),
                                     strict=True)}
        return SheddingFigures(gateways, quiet=quiet, sizes=DeviceSizes(meter, unshed=unshed))

    def cost_inputs(self, merged: SheddingFigures, name: str) -> dict[str, Any]:
        """Return the readings the quiet meters of pass ``name`` did not send.

        Parameters
        ----------
        merged : SheddingFigures
            What :meth:`tier_merge` returned.
        name : str
            The monitored pass.

        Returns
        -------
        dict
            ``quiet`` of the costs: (groups, tests × interim offsets).
        """
        return {"quiet": merged.quiet.get(name)}  # (none yet: a stream's plan at t_nc)

    def tier_merge(self, merged: SheddingFigures, rows: pd.DataFrame) -> SheddingFigures:
        """Add the group leaders' and the utility's device figures per run.

        Parameters
        ----------
        merged : SheddingFigures
            What :meth:`merge` returned.
        rows : pandas.DataFrame
            The tiers' rows (:data:`drsim.pipeline.tasks.TIERS`); those of kind
            ``device`` carry a device's :meth:`DeviceStats.as_list` (the utility's with
            group :data:`drsim.pipeline.tasks.UTILITY`, -1).

        Returns
        -------
        SheddingFigures
            ``merged`` with :attr:`SheddingFigures.group` and ``utility``.
        """
        devices = rows[rows["kind"] == "device"]

        def per_run(mine: pd.DataFrame) -> dict[str, DeviceStats]:
            return {str(name): DeviceStats.merged(mine.loc[mine["pass"] == name, "device"])
                    for name in pd.unique(mine["pass"])}

        sized = rows[rows["kind"] == "sizing"]
        tiers = {(str(name), int(group)): DeviceSizing.of(
            figures[0], None if np.isnan(figures[1]) else figures[1])
            for name, group, figures in zip(sized["pass"], sized["group"], sized["device"],
                                            strict=True)}
        return replace(merged, group=per_run(devices[devices["group"] >= 0]),
                       utility=per_run(devices[devices["group"] < 0]),
                       sizes=replace(merged.sizes, tiers=tiers))

    def tier_devices(self, merged: SheddingFigures) -> dict[str, dict[str, Any]]:
        """Return each tier's devices on the traditional pass, for ``op_vs_bl``.

        Parameters
        ----------
        merged : SheddingFigures
            What :meth:`tier_merge` returned.

        Returns
        -------
        dict
            Tier -> whether it sheds, OP's average latency, the unshed average latency
            on the same inputs and the bound, ``bound`` × that unshed average [minutes].
        """
        out = {}
        for tier in TIER_UNITS:
            stats = getattr(merged, tier).get("traditional")
            figures = stats.summary() if stats is not None else {}
            unshed = figures.get("unshed_latency_avg_minutes")
            shed = tier in self.cfg.tiers
            out[tier] = {"shed": shed, "latency_average_minutes":
                         figures.get("latency_avg_minutes"),
                         "unshed_latency_average_minutes": unshed,
                         "bound_minutes": self.cfg.bound * unshed
                         if shed and unshed is not None else None}
        return out

    def summary(self, merged: SheddingFigures | None, run: FeatureRun
                ) -> dict[str, Any] | None:
        """Return ``shedding`` of summary.json (None without shedding).

        Parameters
        ----------
        merged : SheddingFigures or None
            What :meth:`tier_merge` returned.
        run : drsim.utility.features.FeatureRun
            The run's outcomes and costs.

        Returns
        -------
        dict or None
            OP beside BL on the same households: per configuration each tier's devices
            (:data:`TIER_UNITS`: inputs and runs shed, work, utilisation, latency, the
            unshed latency and the bound, whether it sheds), the costs as deployed and
            the prediction.
        """
        if self.cfg is None:
            return None

        def tier(tier: str, name: str) -> dict[str, Any]:
            key, unit = TIER_UNITS[tier]
            stats = getattr(merged, tier).get(name)
            shed = tier in self.cfg.tiers and name == "traditional"
            return {"shed": shed, **(stats.summary(unit) if stats is not None else {})}

        def side(name: str) -> dict[str, Any]:
            outcome, cost = run.outcome[name], run.costs(name)
            return {**{TIER_UNITS[t][0]: tier(t, name) for t in TIER_UNITS},
                    "communication": cost["communication"]["total"],
                    "computation": cost["computation"]["total"],
                    "utility_noncompliance_time": clock(outcome.t_nc) if outcome.predicted
                    else None,
                    "group_noncompliance_times": {
                        g: None if x == NOT_LATCHED else clock(x)
                        for g, x in zip(run.group_names, outcome.latch, strict=True)}}

        op, bl = side("traditional"), side(plain_twin("traditional"))
        return {"config": self.cfg.model_dump(), "op": op, "bl": bl,
                "op_share_of_bl": {k: op[k] / bl[k] if bl[k] else None
                                   for k in ("communication", "computation")}}

    @classmethod
    def headline(cls, section: Any) -> list[tuple[str, str]]:
        """Return the row of what OP shed.

        Parameters
        ----------
        section : object
            ``shedding`` of summary.json.

        Returns
        -------
        list of (str, str)
            What OP shed in each tier (the rest, OP against BL, is ``op_vs_bl``'s).
        """
        if not isinstance(section, Mapping):
            return []
        op = section.get("op", {})
        meter, group = op.get("meter_tier", {}), op.get("group_tier", {})
        return [("OP shed: readings / runs / user events / group events",
                 f"{meter.get('readings_shed')} / {meter.get('runs_shed')} / "
                 f"{group.get('user_events_shed')} / "
                 f"{op.get('utility_tier', {}).get('group_events_shed')}")]
