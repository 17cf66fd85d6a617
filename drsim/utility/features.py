"""Optional monitoring features behind one interface.

docs/architecture.md, "How to add a monitoring feature", says how to write one. A
monitoring feature is something a scenario may add to the three tiers of Listings
6.1-6.3: lost readings (:mod:`drsim.utility.readings_feature`), load shedding
(:mod:`drsim.utility.shedding_feature`), remote profiles
(:mod:`drsim.utility.fetching_feature`) and appliance-level queries
(:mod:`drsim.utility.appliance_monitoring`). A feature is one :class:`MonitoringFeature`:
it reads its settings from the scenario, checks them before any work, says where it
cannot run (a streamed run, recorded readings), may run a stage before the passes, give
the meter tier, the group leaders and the utility inputs or run the meter tier its own
way, computes its aggregate of one chunk's monitored pass where the data is, as rows of
an Arrow schema of its own, merges the chunks' rows on the driver into a typed value,
gives the costs and the deficit inputs, and writes its section of summary.json and its
lines of the headline from it. The pipeline and the results iterate over
:func:`drsim.utility.feature_registry.features_of` and never name a feature.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa

from drsim.scenario import Scenario
from drsim.utility.monitoring import MeterResult, MonitoringPlan

__all__ = ["FEATURE_KEYS", "FeatureChunk", "FeatureRun", "MeterRun",
           "MonitoringFeature", "Preparation", "feature_output", "feature_schema",
           "is_plain_twin", "plain_twin"]

#: the columns the pipeline puts before a feature's own in each row of its chunk output
FEATURE_KEYS = pa.schema([("chunk", pa.int64()), ("group", pa.int32()),
                          ("pass", pa.string())])
PLAIN_SUFFIX = "_bl"  # the pass name of a monitored pass's plain twin (BL)


def plain_twin(name: str) -> str:
    """Return the name of the plain twin (BL) of monitored pass ``name``.

    BL is the dissertation's baseline of §6.3.4, "the DR monitoring without hybrid load
    shedding and the EIRES framework": the same households monitored by Listings
    6.1-6.3 with no feature that :attr:`~MonitoringFeature.optimises` the monitoring.

    Examples
    --------
    >>> plain_twin("traditional"), is_plain_twin("traditional_bl")
    ('traditional_bl', True)
    """
    return name + PLAIN_SUFFIX


def is_plain_twin(name: str) -> bool:
    """Return whether pass ``name`` is a plain twin (:func:`plain_twin`)."""
    return name.endswith(PLAIN_SUFFIX)


@dataclass(frozen=True)
class MeterRun:
    """One run of the meter tier on a chunk's monitored pass.

    Attributes
    ----------
    label : str
        The pass it is reported as (a feature's twin passes have names of their own).
    result : drsim.utility.monitoring.MeterResult
        The meter tier's result.
    extra : object
        What the feature that ran it keeps of the run (None for the plain meter tier).
    """

    label: str
    result: MeterResult
    extra: Any = None


#: how a chunk's monitored pass is run through the meter tier: (pass, accLoad, λ, the
#: features' inputs of one run, ``inputs(plain=False)``: a plain twin's with ``plain=True``)
#: -> its runs, the pass's own first
MeterRuns = Callable[[str, np.ndarray, np.ndarray, Callable[..., Mapping[str, Any]]],
                     list[MeterRun]]


@dataclass(frozen=True)
class Preparation:
    """A stage of tasks a feature runs where the data is, before the passes.

    Attributes
    ----------
    label : str
        The stage's name (progress, the backend's job, its time ``<label>_seconds``).
    count : int
        Its tasks.
    schema : pyarrow.Schema
        The columns of a task's rows.
    task : callable
        ``task(index)``: the rows of task ``index`` (a mapping of :attr:`schema`'s
        columns); picklable, it travels to the workers.
    finish : callable
        ``finish(rows)``: the tasks' rows (a pandas.DataFrame) made into the value the
        chunk tasks read (``FeatureChunk.prepared``), picklable.
    file : str or None
        The run folder's file that keeps the rows, read by ``drsim monitor`` (which
        simulates nothing) in the stage's place (:mod:`drsim.pipeline.kept`); None: none.
    made_for : mapping or None
        What the rows were made for (JSON data), kept with them and checked against the
        scenario's when they are read back.
    """

    label: str
    count: int
    schema: pa.Schema
    task: Callable[[int], Mapping[str, Sequence[Any]]]
    finish: Callable[[pd.DataFrame], Any]
    file: str | None = None
    made_for: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class FeatureChunk:
    """What a chunk task hands a feature for one monitored pass.

    In a streamed run (docs/streaming.md) a feature's rows of a chunk may come in two
    parts: its chunk task's, before the meter tier that runs in the stream (``meter``
    None), and the stream's meter stage's once the gateway's program is decided
    (``meter`` over every test; ``window`` empty unless the readings are recorded ones,
    which no chunk task has seen, and then ``arrived`` the readings that arrived).

    Attributes
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan of the run.
    chunk, group : int
        The chunk's index and its group's.
    house_ids : numpy.ndarray
        (households,) the chunk's household ids.
    runs : mapping of str to drsim.household.sim.ChunkRun
        Pass name -> the chunk's simulated run of it (empty unless a feature of the
        run has :attr:`MonitoringFeature.needs_runs`).
    signals : tuple of (int, int, int)
        (announced, start, end) of each DR event of the pass [minutes since midnight].
    meter : drsim.utility.monitoring.MeterResult or None
        The meter tier's result on the pass (None before the meter tier has run).
    window : mapping of str to numpy.ndarray
        (households, program minutes) the pass's load ``"load"`` and the utility's
        estimates ``"baseline"`` and ``"expected"`` over the program [kW] (empty before
        the meter tier has run).
    arrived : numpy.ndarray or None
        (households, program minutes) which recorded readings arrived (``drsim
        monitor``); None in a simulated run.
    lost : numpy.ndarray or None
        (households, program minutes) the readings lost on the way
        (:meth:`MonitoringFeature.readings_lost` of the run's features); None: none.
    prepared : mapping of str to tuple
        Feature name -> the values of its preparations (:meth:`MonitoringFeature.preparations`).
    meter_runs : tuple of MeterRun
        The meter tier's runs of the pass, its own first (empty before they run).
    values : mapping of str to object
        Feature name -> what it computed of the chunk's simulation before the meter tier
        (:meth:`MonitoringFeature.chunk_values`; absent: nothing).
    """

    plan: MonitoringPlan
    chunk: int
    group: int
    house_ids: np.ndarray
    runs: Mapping[str, Any] = field(default_factory=dict)
    signals: tuple[tuple[int, int, int], ...] = ()
    meter: Any = None
    window: Mapping[str, np.ndarray] = field(default_factory=dict)
    arrived: np.ndarray | None = None
    lost: np.ndarray | None = None
    prepared: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    meter_runs: tuple[MeterRun, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FeatureRun:
    """What the run's tiers hand a feature's summary.

    Attributes
    ----------
    plan : drsim.utility.monitoring.MonitoringPlan
        The monitoring plan of the run.
    group_names : tuple of str
        The groups, in order.
    sizes : numpy.ndarray
        (groups,) households per group.
    outcome : mapping of str to drsim.pipeline.evaluation.TierOutcome
        Monitored pass -> the tiers' latches and prediction ``t_nc``.
    stops : mapping of str to numpy.ndarray
        Monitored pass -> (groups,) the last minute each group is tested at the
        monitoring rate (:func:`drsim.pipeline.evaluation.stops`).
    costs : callable
        ``costs(pass)``: a monitored pass's costs as deployed
        (:func:`drsim.pipeline.evaluation.costs`).
    thresholds : drsim.utility.threshold.Thresholds or None
        γ[groupID, time] as the run set it (None: not given).
    """

    plan: MonitoringPlan
    group_names: tuple[str, ...]
    sizes: np.ndarray
    outcome: Mapping[str, Any]
    stops: Mapping[str, np.ndarray]
    costs: Callable[[str], Mapping[str, Any]]
    thresholds: Any = None


class MonitoringFeature(ABC):
    """One optional monitoring feature of the DR run.

    Its settings, its work per chunk, its merge on the driver, its section of summary.json
    and its lines of the headline. A subclass sets the class attributes below and
    implements :meth:`of`, :attr:`active`, :meth:`chunk_rows`, :meth:`merge` and
    :meth:`summary`; the other methods have defaults for a feature that needs nothing of
    them. Instances are immutable and picklable: they travel to the workers with the
    chunk tasks.

    Attributes
    ----------
    name : str
        The feature's name: the key of its section of summary.json and, prefixed, of
        its chunk output (:func:`feature_output`).
    scenario_key : str
        The scenario key of its settings, as errors name it.
    schema : pyarrow.Schema
        The columns of its aggregate of one chunk's pass (:meth:`chunk_rows`); the
        pipeline puts :data:`FEATURE_KEYS` before them.
    needs_runs : bool
        Whether a chunk task keeps each pass's simulated run for it
        (:attr:`FeatureChunk.runs`).
    streamed, sized_on_the_day, rows_so_far : bool
        Whether a streamed run (docs/streaming.md) can run it; whether its tiers need
        values only the whole day measures (:meth:`day_sizes`); whether the stream makes
        its rows of the tests so far at every test, for the plan at t_nc.
    readings_refusal : str or None
        Why recorded meter readings (``drsim monitor``) cannot feed it; None if they can.
    excludes : tuple of str
        The names of the features it cannot run together with.
    section : str or None
        The section of summary.json its keys join (None: a section of its own, under
        :attr:`name`).
    optimises : bool
        Whether it is an optimisation of §6.3.4 (OP: load shedding, remote profiles),
        which the plain twins (BL, :func:`plain_twin`) run without; the others are the
        run's conditions (lost readings, appliance queries) and apply to every pass.
    measures_twins : bool
        Whether an optimising feature still measures the plain twins' tiers without
        changing them (load shedding's modelled devices).
    """

    name: ClassVar[str]
    scenario_key: ClassVar[str]
    schema: ClassVar[pa.Schema]
    needs_runs: ClassVar[bool] = False
    streamed: ClassVar[bool] = False
    readings_refusal: ClassVar[str | None] = None
    excludes: ClassVar[tuple[str, ...]] = ()
    section: ClassVar[str | None] = None
    optimises: ClassVar[bool] = False
    measures_twins: ClassVar[bool] = False
    sized_on_the_day: ClassVar[bool] = False
    rows_so_far: ClassVar[bool] = False

    @classmethod
    @abstractmethod
    def of(cls, scenario: Scenario) -> MonitoringFeature:
        """Return the feature with its settings read from ``scenario`` (off or on).

        Parameters
        ----------
        scenario : drsim.scenario.Scenario
            The scenario of the run.

        Returns
        -------
        MonitoringFeature
            The feature; :attr:`active` says whether the scenario turns it on.
        """

    @property
    @abstractmethod
    def active(self) -> bool:
        """Whether the scenario turns the feature on."""

    def check(self) -> None:
        """Raise the error of bad settings before any work (nothing by default).

        Raises
        ------
        cep_core.QueryError or ValueError
            In one line naming the scenario key.
        """
        return None

    def preparations(self, scenario: Scenario, plan: MonitoringPlan,
                     simulate: Callable[..., Any]) -> tuple[Preparation, ...]:
        """Return the stages the feature runs before the passes (none by default).

        Parameters
        ----------
        scenario : drsim.scenario.Scenario
            The scenario of the run.
        plan : drsim.utility.monitoring.MonitoringPlan
            The monitoring plan.
        simulate : callable
            ``simulate(scenario, first, count, group)``: the pipeline's simulation of
            households ``first`` .. ``first + count - 1`` of ``group``, with their
            estimates (:class:`drsim.pipeline.passes.ChunkResult`); picklable.

        Returns
        -------
        tuple of Preparation
            Its stages, in order; their values reach the chunk tasks.
        """
        return ()

    def passes(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """Return the monitored passes the tiers report, given those simulated.

        Parameters
        ----------
        names : tuple of str
            The monitored passes so far.

        Returns
        -------
        tuple of str
            ``names`` by default; a feature whose meter tier runs twice adds its twins.
        """
        return names

    def without_twins(self) -> MonitoringFeature:
        """Return the feature as a streamed run runs it: without the twins it adds.

        Itself by default. The twins' values come from the day's batch run made before
        the stream (:func:`drsim.pipeline.stages.day_sized`, :meth:`with_twins`).
        """
        return self

    def with_twins(self, merged: Any, day: Any) -> Any:
        """Return a streamed run's merge with the twins' values of the day run's ``day``.

        ``merged`` by default (a feature that adds no twins).
        """
        return merged

    def meter_runs(self, chunk: FeatureChunk, runs: MeterRuns) -> MeterRuns:
        """Return how the chunk's passes run through the meter tier.

        Parameters
        ----------
        chunk : FeatureChunk
            The chunk's households and the features' prepared values.
        runs : callable
            How they run so far (the plain meter tier, or another feature's).

        Returns
        -------
        callable
            ``runs`` by default; a feature may run the meter tier its own way.
        """
        return runs

    def with_readings(self, lost: int) -> MonitoringFeature:
        """Return the feature as ``drsim monitor`` runs it on recorded readings.

        By default itself; a feature the readings turn on returns itself on.

        Parameters
        ----------
        lost : int
            The readings that did not arrive (``ReadingsCheck.lost``).

        Returns
        -------
        MonitoringFeature
            The feature, possibly turned on by what the readings show.
        """
        return self

    def readings_lost(self, chunk: FeatureChunk) -> np.ndarray | None:
        """Return which of the chunk's meter readings do not reach the head-end.

        None by default: every one does.

        Parameters
        ----------
        chunk : FeatureChunk
            The chunk's households.

        Returns
        -------
        numpy.ndarray or None
            Boolean, (households, program minutes): True where the reading is lost.
        """
        return None

    def chunk_values(self, plan: MonitoringPlan, result: Any) -> Any:
        """Compute what the feature needs of a chunk's simulation, once per chunk.

        Asked by the chunk task before the meter tier runs; the value reaches the
        feature's other members as ``FeatureChunk.values[name]``. None by default.

        Parameters
        ----------
        plan : drsim.utility.monitoring.MonitoringPlan
            The monitoring plan.
        result : drsim.pipeline.passes.ChunkResult
            The chunk's simulation (population, simulator, estimates, the passes' runs
            when :attr:`needs_runs`).

        Returns
        -------
        object
            Picklable; None for nothing.
        """
        return None

    def meter_inputs(self, chunk: FeatureChunk) -> Mapping[str, Any]:
        """Return the feature's keyword arguments of the meter tier of a chunk.

        Given to :func:`drsim.utility.monitoring.meter_tier`, asked again for each of its
        runs on the chunk's monitored passes (a fetcher is one run's); none by default.

        Parameters
        ----------
        chunk : FeatureChunk
            The chunk's households, before the meter tier runs.

        Returns
        -------
        mapping of str to object
            Keyword arguments.
        """
        return {}

    def group_inputs(self, plan: MonitoringPlan,
                     prepared: Mapping[str, tuple[Any, ...]] | None = None
                     ) -> Mapping[str, Any]:
        """Return the feature's keyword arguments of the group leaders.

        Given to :func:`drsim.pipeline.tasks.group_leader` of every group and pass; none
        by default.

        Parameters
        ----------
        plan : drsim.utility.monitoring.MonitoringPlan
            The monitoring plan.
        prepared : mapping of str to tuple, optional
            Feature name -> the values of its preparations (:meth:`preparations`).

        Returns
        -------
        mapping of str to object
            Keyword arguments (picklable: they travel to the workers).
        """
        return {}

    def utility_inputs(self, plan: MonitoringPlan,
                       prepared: Mapping[str, tuple[Any, ...]] | None = None
                       ) -> Mapping[str, Any]:
        """Return the feature's keyword arguments of the utility.

        Given to :func:`drsim.pipeline.tasks.utility` of every pass; none by default.

        Parameters
        ----------
        plan : drsim.utility.monitoring.MonitoringPlan
            The monitoring plan.
        prepared : mapping of str to tuple, optional
            Feature name -> the values of its preparations (:meth:`preparations`).

        Returns
        -------
        mapping of str to object
            Keyword arguments (picklable: they travel to the workers).
        """
        return {}

    def merged_group_inputs(self, merged: Any, thresholds: Any) -> Mapping[str, Any]:
        """Return the feature's keyword arguments of the group leaders of its OP passes.

        Given, with :meth:`group_inputs`, to :func:`drsim.pipeline.tasks.group_leader`
        of every group and pass, but read from the feature's merge of the chunks' rows
        and the thresholds; none by default.

        Parameters
        ----------
        merged : object
            What :meth:`merge` returned.
        thresholds : drsim.utility.threshold.Thresholds
            γ[groupID, time] as the run set it.

        Returns
        -------
        mapping of str to object
            Keyword arguments (picklable: they travel to the workers).
        """
        return {}

    def cost_inputs(self, merged: Any, name: str) -> Mapping[str, Any]:
        """Return the feature's keyword arguments of the costs of a monitored pass.

        Given to :func:`drsim.pipeline.evaluation.costs`; none by default.

        Parameters
        ----------
        merged : object
            What :meth:`merge` returned.
        name : str
            The monitored pass.

        Returns
        -------
        mapping of str to object
            Keyword arguments.
        """
        return {}

    def deficit_inputs(self, merged: Any) -> Mapping[str, Any]:
        """Return the feature's keyword arguments of what the utility knows at t_nc.

        Given to :func:`drsim.pipeline.stages.deficit_at`; none by default.

        Parameters
        ----------
        merged : object
            What :meth:`merge` returned.

        Returns
        -------
        mapping of str to object
            Keyword arguments.
        """
        return {}

    def day_sizes(self, merged: Any) -> Any:
        """Return what a stream needs of a day's run, from its :meth:`tier_merge` (None)."""
        return None

    def tier_devices(self, merged: Any) -> Mapping[str, Mapping[str, Any]]:
        """Return what the tiers' modelled devices did in OP, for ``op_vs_bl``.

        Parameters
        ----------
        merged : object
            What :meth:`merge` returned.

        Returns
        -------
        mapping of str to mapping
            Tier -> the fields of :class:`drsim.results.summary_model.TierDevice`.
        """
        return {}

    @abstractmethod
    def chunk_rows(self, chunk: FeatureChunk, name: str) -> Mapping[str, Sequence[Any]]:
        """Compute the feature's aggregate of one chunk's pass where the data is.

        Parameters
        ----------
        chunk : FeatureChunk
            The chunk's households, runs and DR signals.
        name : str
            The monitored pass.

        Returns
        -------
        mapping of str to sequence
            The columns of :attr:`schema`, one value per row (any number of rows).
        """

    @abstractmethod
    def merge(self, rows: pd.DataFrame) -> Any:
        """Merge the chunks' rows on the driver into the feature's typed result.

        Parameters
        ----------
        rows : pandas.DataFrame
            Every chunk's rows (:data:`FEATURE_KEYS` then :attr:`schema`), sorted by
            chunk, then pass, then in the order each chunk gave them.

        Returns
        -------
        object
            What :meth:`summary` reads (``Monitored.features[name]``).
        """

    def tier_merge(self, merged: Any, rows: pd.DataFrame) -> Any:
        """Add what the group leaders and the utility reported to the merge.

        ``merged`` unchanged by default.

        Parameters
        ----------
        merged : object
            What :meth:`merge` returned.
        rows : pandas.DataFrame
            The tiers' rows (:data:`drsim.pipeline.tasks.TIERS`), the group leaders'
            and the utility's of every monitored pass.

        Returns
        -------
        object
            What :meth:`summary`, :meth:`cost_inputs` and :meth:`deficit_inputs` read.
        """
        return merged

    @abstractmethod
    def summary(self, merged: Any | None, run: FeatureRun) -> Any:
        """Return the feature's section of a run's summary.json (docs/summary.md).

        Parameters
        ----------
        merged : object or None
            What :meth:`merge` returned; None when the feature is off.
        run : FeatureRun
            The run's plan, groups, stops and costs.

        Returns
        -------
        object
            A JSON value: the section under :attr:`name`, or the keys that join
            :attr:`section`.
        """

    @classmethod
    def headline(cls, section: Any) -> list[tuple[str, str]]:
        """Return the feature's rows of a run's headline (none by default).

        A class method: ``drsim report`` has the summary only, not the scenario.

        Parameters
        ----------
        section : object
            The feature's section of summary.json (:meth:`summary`; :attr:`section`
            when its keys join another).

        Returns
        -------
        list of (str, str)
            (quantity, value) rows after the run's own.
        """
        return []


def feature_output(name: str) -> str:
    """Return the name of a feature's chunk output.

    Parameters
    ----------
    name : str
        The feature's name (:attr:`MonitoringFeature.name`).

    Returns
    -------
    str
        The output's name, beside a chunk task's ``meter`` and ``events``.
    """
    return f"feature_{name}"


def feature_schema(feature: MonitoringFeature) -> pa.Schema:
    """Return the schema of a feature's chunk output: :data:`FEATURE_KEYS`, its columns.

    Parameters
    ----------
    feature : MonitoringFeature
        The feature.

    Returns
    -------
    pyarrow.Schema
        The keys, then :attr:`MonitoringFeature.schema`.
    """
    return pa.schema([*FEATURE_KEYS, *feature.schema])
