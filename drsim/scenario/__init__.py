"""Scenario files: the validated description of one demand-response (DR) experiment.

A scenario YAML file sets every parameter of a run: the households and their groups, the load
model's settings, the DR program, the compliance monitoring of the three tiers (dissertation
Ch. 6, Table 6.2) and the incentive module. The pydantic models (:mod:`drsim.scenario.models`)
are the single place that says what each parameter means, its unit, its default and its
bounds; the packaged scenarios (``drsim/data/scenarios``, :mod:`drsim.scenario.library`)
show them with comments.

Entry points::

    load_scenario(path)          read, validate, and remember the file (for relative paths)
    scenario_from_dict(data)     validate a mapping that is already in memory

A bad scenario raises :class:`ScenarioError` before any work, with one line per problem::

    scenarios/x.yaml: monitoring.gamma_group: Input should be less than or equal to 1
        (got 1.5); accepted: a number in (0, 1]

(printed on one line). Household ids are 0-based inside the simulator; Table 6.2's consumer
numbers ("consumer No.1-No.10,000") are 1-based and inclusive, and group ``range`` uses them.

Modules: ``models`` (the scenario, its groups, appliances and EVs, and its scaling),
``program_settings`` (the DR program, incentive, M&V, reference results),
``monitoring_settings`` (the monitoring and meters), ``fields`` (the shared field types and
limits), ``loading`` (YAML reading and validation), ``errors`` (:class:`ScenarioError`),
``explain`` (pydantic errors as ScenarioError lines), ``library`` (the packaged scenarios
and sweeps: their names, finding one by name, copying one).
None of them loads simulation code.
"""

from drsim.scenario.errors import ScenarioError
from drsim.scenario.loading import load_scenario, read_yaml, scenario_from_dict
from drsim.scenario.models import (
    MAX_CHUNK_SIZE,
    MAX_FOLLOW_THROUGH_FACTOR,
    MAX_GROUPS,
    MAX_HOUSEHOLDS,
    MAX_SEED,
    ApplianceQuery,
    ApplianceSettings,
    BaselineSettings,
    ControlGroup,
    DarkMeters,
    DayOfAdjustment,
    DayVariation,
    DRProgram,
    EVSettings,
    ExpectedShare,
    FollowThrough,
    Group,
    Incentive,
    Meters,
    Monitoring,
    NetworkLatency,
    ProfileUpdates,
    ReadingLoss,
    Reference,
    ReferenceOpVsBl,
    ReferenceReductions,
    RemoteData,
    Scenario,
    Shedding,
)

__all__ = [
    "MAX_CHUNK_SIZE",
    "MAX_FOLLOW_THROUGH_FACTOR",
    "MAX_GROUPS",
    "MAX_HOUSEHOLDS",
    "MAX_SEED",
    "ApplianceQuery",
    "ApplianceSettings",
    "BaselineSettings",
    "ControlGroup",
    "DRProgram",
    "EVSettings",
    "ExpectedShare",
    "FollowThrough",
    "Group",
    "Incentive",
    "Monitoring",
    "Reference",
    "ReferenceOpVsBl",
    "ReferenceReductions",
    "Scenario",
    "ScenarioError",
    "Shedding",
    "ProfileUpdates",
    "RemoteData",
    "NetworkLatency",
    "DayOfAdjustment",
    "DayVariation",
    "DarkMeters",
    "Meters",
    "ReadingLoss",
    "load_scenario",
    "read_yaml",
    "scenario_from_dict",
]
