"""Load shedding at the gateways (OP) as a monitoring feature (:class:`LoadShedding`).

With ``monitoring.shedding`` (the model and the shedding: :mod:`drsim.utility.shedding`)
a stage before the passes fits each group's cost model where the data is
(:func:`cost_model_rows`, on a simulated previous day), and every chunk runs the meter
tier of each monitored pass twice (:func:`drsim.utility.shedding.shed_meter_tier`):
under the bound (OP, the pass's own name) and unshed (BL, its twin
:func:`drsim.utility.shedding.bl_name`), each with its gateways' figures. The chunks send
one row per run (:data:`COLUMNS`); the driver sums them per run
(:class:`drsim.utility.shedding.GatewayStats`), and the feature writes summary.json's
``shedding``: OP beside BL on the same households.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
    pair_cell,
    share_cell,
    time_cell,
)
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan
from drsim.utility.shedding import (
    GatewayStats,
    bl_name,
    fit_meter_model,
    history_day,
    quiet_readings,
    shed_meter_tier,
)

__all__ = ["COLUMNS", "MODELS", "GatewayRun", "LoadShedding", "Shed", "cost_model_rows",
           "cost_models"]

#: per chunk, monitored pass and run (OP under the pass's name, BL under its twin's): what
#: its gateways did (GatewayStats.as_list) and the readings its quiet meters did not send,
#: (tests, interim offsets) flattened (drsim.utility.shedding.quiet_readings)
COLUMNS = pa.schema([("run", pa.string()), ("gateways", pa.list_(pa.float64())),
                     ("quiet", pa.list_(pa.int64()))])
#: a group's pickled cost model of the meter query
MODELS = pa.schema([("group", pa.int32()), ("model", pa.binary())])


@dataclass(frozen=True)
class GatewayRun:
    """What one run of a chunk's pass did at its gateways.

    Attributes
    ----------
    stats : drsim.utility.shedding.GatewayStats
        The gateways' figures.
    quiet : numpy.ndarray
        (tests, interim offsets) the readings quiet meters did not send.
    """

    stats: GatewayStats
    quiet: np.ndarray


@dataclass(frozen=True)
class Shed:
    """The chunks' gateway figures summed per run (a pass or its plain twin).

    Attributes
    ----------
    gateways : dict of str to drsim.utility.shedding.GatewayStats
        Run -> its gateways' figures.
    quiet : dict of str to numpy.ndarray
        Run -> (groups, tests, interim offsets) the readings quiet meters did not send.
    """

    gateways: dict[str, GatewayStats]
    quiet: dict[str, np.ndarray]


def cost_model_rows(scenario: Scenario, plan: MonitoringPlan, simulate: Callable[..., Any],
                    group: int) -> dict[str, list[Any]]:
    """Fit the utility's cost model of the meter query for ``group``, pickled.

    Fitted on the previous day's households of the group, simulated here
    (:func:`drsim.utility.shedding.history_day`,
    :func:`drsim.utility.shedding.fit_meter_model`).

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
    model = fit_meter_model(scenario, plan, group, simulate(day, first, n, group))
    return {"group": [group], "model": [pickle.dumps(model)]}


def cost_models(rows: pd.DataFrame) -> tuple[bytes, ...]:
    """Return each group's pickled cost model, in group order.

    Parameters
    ----------
    rows : pandas.DataFrame
        The rows of :data:`MODELS`, one per group.

    Returns
    -------
    tuple of bytes
        By group.
    """
    return tuple(rows.sort_values("group")["model"].tolist())


@dataclass(frozen=True)
class LoadShedding(MonitoringFeature):
    """Hybrid load shedding of the meter tier under a latency bound (``monitoring.shedding``).

    Attributes
    ----------
    cfg : drsim.scenario.Shedding or None
        The scenario's ``monitoring.shedding``.
    group_firsts : tuple of int
        The id of each group's first household (gateways count from it).
    """

    name = "shedding"
    optimises = True
    scenario_key = "monitoring.shedding"
    schema = COLUMNS
    readings_refusal = ("drsim monitor simulates nothing, and load shedding's cost models "
                        "are fitted on a simulated day; remove it")

    cfg: Shedding | None
    group_firsts: tuple[int, ...]

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
            by group (:func:`cost_models`).
        """
        return (Preparation("cost models", len(self.group_firsts), MODELS,
                            partial(cost_model_rows, scenario, plan, simulate), cost_models),)

    def passes(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """Return the passes with their unshed twins (:func:`bl_name`) after them.

        Parameters
        ----------
        names : tuple of str
            The monitored passes.

        Returns
        -------
        tuple of str
            ``names``, then each one's twin.
        """
        return (*names, *map(bl_name, names))

    def meter_runs(self, chunk: FeatureChunk, runs: MeterRuns) -> MeterRuns:
        """Return the runs of each pass on the chunk's gateways: OP, then BL.

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
            :class:`drsim.utility.shedding.GatewayStats`.
        """
        model = pickle.loads(chunk.prepared[self.name][0][chunk.group])
        first = self.group_firsts[chunk.group]

        def shed(name: str, acc: Any, expected_acc: Any,
                 inputs: Callable[..., Mapping[str, Any]]) -> list[MeterRun]:
            bl, bl_stats, op, op_stats, (keys, times) = shed_meter_tier(
                chunk.plan, self.cfg, model, chunk.house_ids, chunk.group, first, acc,
                expected_acc, inputs)
            quiet = quiet_readings(chunk.plan, chunk.house_ids, keys, times, chunk.lost)
            return [MeterRun(name, op, GatewayRun(op_stats, quiet)),
                    MeterRun(bl_name(name), bl, GatewayRun(bl_stats, np.zeros_like(quiet)))]

        return shed

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
        return {"run": [r.label for r in chunk.meter_runs],
                "gateways": [r.extra.stats.as_list() for r in chunk.meter_runs],
                "quiet": [r.extra.quiet.ravel().tolist() for r in chunk.meter_runs]}

    def merge(self, rows: pd.DataFrame) -> Shed:
        """Sum the chunks' gateway figures per run, the quiet readings per run and group.

        Parameters
        ----------
        rows : pandas.DataFrame
            The chunks' rows (chunk, group, pass, run, gateways, quiet).

        Returns
        -------
        Shed
            Per run (a pass or its twin), its gateways' figures and quiet readings.
        """
        groups = len(self.group_firsts)
        gateways, quiet = {}, {}
        for name in pd.unique(rows["run"]):
            mine = rows[rows["run"] == name]
            gateways[str(name)] = GatewayStats.merged(mine["gateways"])
            per_chunk = np.stack([np.asarray(q, dtype=np.int64) for q in mine["quiet"]])
            summed = np.zeros((groups, per_chunk.shape[1]), dtype=np.int64)
            np.add.at(summed, mine["group"].to_numpy(np.int64), per_chunk)
            quiet[str(name)] = summed
        return Shed(gateways, quiet)

    def cost_inputs(self, merged: Shed, name: str) -> dict[str, Any]:
        """Return the readings the quiet meters of pass ``name`` did not send.

        Parameters
        ----------
        merged : Shed
            What :meth:`merge` returned.
        name : str
            The monitored pass.

        Returns
        -------
        dict
            ``quiet`` of the costs: (groups, tests × interim offsets).
        """
        return {"quiet": merged.quiet[name]}

    def tier_devices(self, merged: Shed) -> dict[str, dict[str, Any]]:
        """Return the meter tier's gateways on the traditional pass, for ``op_vs_bl``.

        Parameters
        ----------
        merged : Shed
            What :meth:`merge` returned.

        Returns
        -------
        dict
            ``meter`` -> shed, OP's average latency, the bound (``bound`` × the unshed
            average latency of the same readings) and that unshed average [minutes].
        """
        op = merged.gateways["traditional"].summary()["latency_avg_minutes"]
        unshed = merged.gateways[bl_name("traditional")].summary()["latency_avg_minutes"]
        return {"meter": {"shed": True, "latency_average_minutes": op,
                          "bound_minutes": None if unshed is None else self.cfg.bound * unshed,
                          "unshed_latency_average_minutes": unshed}}

    def summary(self, merged: Shed | None, run: FeatureRun
                ) -> dict[str, Any] | None:
        """Return ``shedding`` of summary.json (None without shedding).

        Parameters
        ----------
        merged : Shed or None
            What :meth:`merge` returned.
        run : drsim.utility.features.FeatureRun
            The run's outcomes and costs.

        Returns
        -------
        dict or None
            OP beside BL on the same households: per configuration the meter tier's
            gateways (readings and runs shed, work, utilisation, latency), the costs as
            deployed and the prediction.
        """
        if self.cfg is None:
            return None

        def side(name: str) -> dict[str, Any]:
            outcome, cost = run.outcome[name], run.costs(name)
            return {"meter_tier": merged.gateways[name].summary(),
                    "group_tier": "no shedding", "utility_tier": "no shedding",
                    "communication": cost["communication"]["total"],
                    "computation": cost["computation"]["total"],
                    "utility_noncompliance_time": clock(outcome.t_nc) if outcome.predicted
                    else None,
                    "group_noncompliance_times": {
                        g: None if x == NOT_LATCHED else clock(x)
                        for g, x in zip(run.group_names, outcome.latch, strict=True)}}

        op, bl = side("traditional"), side(bl_name("traditional"))
        return {"config": self.cfg.model_dump(), "op": op, "bl": bl,
                "op_share_of_bl": {k: op[k] / bl[k] if bl[k] else None
                                   for k in ("communication", "computation")}}

    @classmethod
    def headline(cls, section: Any) -> list[tuple[str, str]]:
        """Return the rows of OP beside BL, with shedding.

        Parameters
        ----------
        section : object
            ``shedding`` of summary.json.

        Returns
        -------
        list of (str, str)
            The prediction, the costs' share of BL's, the gateways' latency, and the
            readings and runs shed.
        """
        if not isinstance(section, Mapping):
            return []
        op, bl = section.get("op", {}), section.get("bl", {})
        meter_op, meter_bl = op.get("meter_tier", {}), bl.get("meter_tier", {})
        return [("load shedding (OP), prediction",
                 f"{time_cell(op.get('utility_noncompliance_time'))} "
                 f"(unshed: {time_cell(bl.get('utility_noncompliance_time'))})"),
                ("OP communication / computation, share of unshed",
                 pair_cell(section.get("op_share_of_bl", {}), "communication",
                           "computation")),
                ("OP gateway latency avg, min",
                 f"{share_cell(meter_op.get('latency_avg_minutes'))} "
                 f"(unshed: {share_cell(meter_bl.get('latency_avg_minutes'))})"),
                ("OP readings / runs shed",
                 f"{meter_op.get('readings_shed')} / {meter_op.get('runs_shed')}")]
