"""Parameter sweeps: what-if grids over a scenario, repeated with independent seeds.

A sweep file names a base scenario and the parameters to change::

    name: incentive_beta                 # optional; default: the file name
    scenario: ../paper_100k.yaml         # relative to the sweep file
    overrides:                           # fixed changes, applied to every point
      households: 20000                  #   (scales the groups, like --households)
      ev.penetration: 0.3
    grid:                                # axes: every combination of their values is a point
      incentive.beta: [1.4, 1.8, 2.2]
      groups[*].follow_through_drop: [0.3, 0.5]   # groups[0], groups[G1] or groups[*]
      delay_detection: [0, 10]           # a run option, not a scenario key (minutes)
    seeds: 5                             # runs per point, with independent seeds
    metrics:                             # dotted paths into summary.json (DEFAULT_METRICS)
      - reduction_mwh.adaptive
      - prediction.utility_noncompliance_time

Paths are checked against the scenario model (:mod:`drsim.scenario`), metrics against
summary.json's (:func:`drsim.results.summary_paths.field_type`), and every point is built
and validated before any run starts; problems are reported like the scenario loader's,
``<file>: <field>: <problem>; accepted: <...>``, one line each.

Group size (Figure 6.13, §6.3.3: "every 10,000 consumers form a group"): ``group_size: N`` in
``overrides`` (an integer; not an axis) lays the households (the ``households`` override or
axis, else the base's) out in groups of N, G001, G002, ..., each repeating the settings of the
base's groups in turn (``Scenario.with_groups_of``), instead of scaling the base's groups::

    overrides: {group_size: 10000}
    grid: {households: [100000, 200000, 400000]}   # 10, 20 and 40 groups

Every households value must be a multiple of N (a problem names the point that is not), and
paths must not pick a base group by name or position (``groups[*]`` is fine).

Seeds: replicate 0 runs with the scenario's own seed, replicate r > 0 with a seed derived from
(scenario seed, r) by the counter-based hash of :mod:`drsim.household.rng`. Replicate r uses the
same seed at every point (common random numbers), so differences between points are not noise.

The output folder holds ``runs.jsonl`` (one JSON line per finished run with its summary,
appended and flushed as it completes), ``runs/`` (each run's own result folder), ``sweep.json``
(the sweep as run; ``complete`` turns true at the end), and at the end ``table.csv`` /
``table.parquet`` (one row per point: mean, 95 % Student-t confidence interval and count per
metric) and one PNG per numeric metric against the first axis.

Resuming: a run is known by a hash of its validated scenario (seed included) and run options.
Rerunning a sweep into the same folder skips every run already in ``runs.jsonl``, so an
interrupted sweep continues where it stopped, more seeds add only the new ones, and a sweep
whose grid was extended runs only the new points. Changing the metrics reruns nothing: the
table is rebuilt from the recorded summaries. A folder whose journal records a run at the
same axis values and replicate as one the sweep makes now, but made otherwise (the base
scenario, an override or the seed changed), is refused before any run, one line naming the
run and the field that changed (:func:`~drsim.sweeps.runner.check_resume`): ``--overwrite``
starts afresh.

The package, one job per module: :mod:`~drsim.sweeps.file` (the sweep file's top level as a
pydantic model, :class:`~drsim.sweeps.file.SweepFile`, and the checks of its keys),
:mod:`~drsim.sweeps.spec` (the validated sweep and its points),
:mod:`~drsim.sweeps.paths` (what a key may name: scenario paths, run options),
:mod:`~drsim.sweeps.runner` (running into the output folder, the journal and resuming),
:mod:`~drsim.sweeps.stats` (metrics, confidence intervals, the table),
:mod:`~drsim.sweeps.plots` (the figures) and :mod:`~drsim.sweeps.report` (the table as
``drsim sweep`` and ``drsim report`` print it).
"""

from __future__ import annotations

from drsim.sweeps.file import DEFAULT_METRICS, SweepFile
from drsim.sweeps.paths import RUN_OPTIONS, check_scenario_path
from drsim.sweeps.runner import (
    JOURNAL,
    SWEEP_RECORD,
    TABLE_CSV,
    TABLE_PARQUET,
    Runner,
    SweepChangedError,
    SweepOutcome,
    SweepOutputError,
    SweepRunError,
    check_output,
    check_resume,
    read_journal,
    run_sweep,
)
from drsim.sweeps.spec import (
    Sweep,
    SweepError,
    SweepPoint,
    SweepRun,
    expand_grid,
    load_sweep,
    replicate_seeds,
    sweep_from_dict,
)
from drsim.sweeps.stats import get_metric, mean_ci, t_quantile, tabulate

__all__ = [
    "DEFAULT_METRICS",
    "JOURNAL",
    "RUN_OPTIONS",
    "Runner",
    "SWEEP_RECORD",
    "Sweep",
    "SweepChangedError",
    "SweepError",
    "SweepFile",
    "SweepOutcome",
    "SweepOutputError",
    "SweepPoint",
    "SweepRun",
    "SweepRunError",
    "TABLE_CSV",
    "TABLE_PARQUET",
    "check_output",
    "check_resume",
    "check_scenario_path",
    "expand_grid",
    "get_metric",
    "load_sweep",
    "mean_ci",
    "read_journal",
    "replicate_seeds",
    "run_sweep",
    "sweep_from_dict",
    "t_quantile",
    "tabulate",
]
