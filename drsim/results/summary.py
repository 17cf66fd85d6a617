"""summary.json: one builder for ``simulate`` and ``run``, of the typed records of
:mod:`drsim.results.summary_model` (fields: docs/summary.md).

A ``run`` summary is a ``simulate`` summary plus the sections of the monitoring and the
closed loop (``prediction``, ``deficit_at_prediction``, ``second_event``,
``second_event_note``, ``incentive``, ``cost``, ``monitoring``). Energies are MWh, powers
MW, times of day ``"HH:MM"``, durations seconds or minutes as their names say.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from drsim.pipeline.evaluation import TierOutcome, precision_recall, stops
from drsim.pipeline.memory import peak_rss_bytes, process_peak_rss_bytes
from drsim.pipeline.pass_names import DR_PASSES
from drsim.pipeline.stages import Run, Simulation, pass_costs
from drsim.results import summary_model as model
from drsim.results.op_vs_bl import op_vs_bl
from drsim.scenario import Scenario
from drsim.units import DAY, clock, mwh
from drsim.utility.feature_registry import features_of
from drsim.utility.features import FeatureRun, MonitoringFeature
from drsim.utility.monitoring import CHANGES, NOT_LATCHED

EVENING = (16 * 60, 22 * 60)  # the evening peak is looked for in [16:00, 22:00)
REBOUND_MINUTES = 180  # rebound is looked for in the three hours after t_end
BREAKDOWN = ("ev", "wet", "cold", "rest")  # categories of the reduction breakdown


def build(simulation: Simulation, run: Run | None = None, files: list[str] | None = None,
          streaming: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary of a simulation, or of a run when ``run`` is given (module docstring);
    ``streaming``: a streamed run's section (its clock, micro-batches and latencies)."""
    scenario = simulation.scenario
    return model.Summary(
        scenario=_scenario(simulation),
        code_version=code_version(),
        seeds=model.Seeds(scenario=scenario.seed),
        **_reductions(simulation),
        peaks=_peaks(simulation),
        **({} if run is None else _run_sections(run)),
        reference=(None if scenario.reference is None
                   else scenario.reference.model_dump(mode="json")),
        backend=_backend(simulation),
        timings=_timings(simulation),
        resources=_resources(simulation),
        files=list(files or []),
        **_streaming(streaming),
    ).as_dict()


def _streaming(streaming: dict[str, Any] | None) -> dict[str, Any]:
    """A stream's ``streaming`` section (written last), when there is one."""
    return {} if streaming is None else {"streaming": streaming}


def scenario_hash(scenario: Scenario) -> str:
    """SHA-256 of the validated scenario (its JSON form): equal hash, equal inputs."""
    text = json.dumps(scenario.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def code_version() -> dict[str, str | None]:
    """drsim's version and, when the code is in a git work tree, ``git describe``."""
    from importlib import metadata

    import drsim

    try:
        version = metadata.version("drsim")
    except metadata.PackageNotFoundError:  # a source checkout that is not installed
        version = _pyproject_version(Path(drsim.__file__).resolve().parent.parent)
    git = None
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"],
                             cwd=Path(drsim.__file__).resolve().parent, capture_output=True,
                             text=True, timeout=10, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
        if out.returncode == 0 and out.stdout.strip():
            git = out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {"drsim": version, "git": git}


def _pyproject_version(root: Path) -> str | None:
    """The version in ``root/pyproject.toml`` when it is drsim's, else None."""
    import tomllib

    try:
        project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None
    return project.get("version") if project.get("name") == "drsim" else None


def _scenario(simulation: Simulation) -> model.ScenarioSection:
    scenario = simulation.scenario
    return model.ScenarioSection(
        name=scenario.name, file=scenario.source_path.name if scenario.source_path else None,
        hash=scenario_hash(scenario),
        households=simulation.households, ev_households=simulation.ev_households,
        groups=dict(zip([g.name for g in scenario.groups], scenario.group_sizes(),
                        strict=True)),
        settings=scenario.model_dump(mode="json"))


def _passes(simulation: Simulation) -> list[str]:
    return [name for name in DR_PASSES if name in simulation.loads.group_kw]


def _reductions(simulation: Simulation) -> dict[str, Any]:
    """Reductions against the simulated no-DR pass (ground truth) and the utility's
    estimates (:mod:`drsim.utility.baseline`), the goal, the breakdown, energy."""
    scenario, loads = simulation.scenario, simulation.loads
    program = scenario.dr_program
    start, end = program.start_minute, program.end_minute
    system = loads.system_kw
    base = system["baseline"]
    names = _passes(simulation)
    reduction = {name: mwh((base[start:end] - system[name][start:end]).sum())
                 for name in names}
    share = {name: reduction[name] / reduction["expected"] if reduction["expected"] else None
             for name in names if name != "expected"}
    breakdown = {}
    for name in names:
        buckets = dict.fromkeys(BREAKDOWN, 0.0)
        for category, kw in loads.category_kw[name].items():
            saved = loads.category_kw["baseline"][category][start:end] - kw[start:end]
            buckets[category if category in BREAKDOWN else "rest"] += mwh(saved.sum())
        breakdown[name] = model.Breakdown(**buckets)
    groups = {}
    for g, (group, size) in enumerate(zip(scenario.groups, scenario.called_group_sizes(),
                                          strict=True)):
        gb = loads.group_kw["baseline"][g]
        groups[group.name] = model.GroupReductions(households=int(size), reduction_mwh={
            name: mwh((gb[start:end] - loads.group_kw[name][g][start:end]).sum())
            for name in names})
    est = loads.estimate_kw
    evening = base[EVENING[0]:EVENING[1]]
    n = simulation.households
    return {
        "reduction_goal": "expected" if program.reduction_goal_kwh == "expected" else "given",
        "reduction_goal_mwh": simulation.goal_kwh / 1000.0,
        "reduction_mwh": reduction,
        "reduction_share_of_expected": share,
        "reduction_breakdown_mwh": breakdown,
        "groups": groups,
        "baseline": model.BaselineSection(
            **scenario.baseline.model_dump(mode="json"),
            expected_reduction_mwh=simulation.expected_kwh / 1000.0,
            baseline_mwh=mwh(est["baseline"][start:end].sum()),
            expected_mwh=mwh(est["expected"][start:end].sum()),
            simulated_baseline_mwh=mwh(base[start:end].sum()),
            control_households=sum(scenario.control_group_sizes()),
            **_method_estimates(loads, start, end)),
        "energy": model.Energy(
            kwh_per_household_day=float(base.sum()) / 60.0 / n,
            daily_mwh={name: mwh(c.sum()) for name, c in system.items()},
            evening_peak_kw_per_household=float(evening.max()) / n,
            evening_peak_time=EVENING[0] + int(np.argmax(evening))),
    }


def _method_estimates(loads, start: int, end: int) -> dict[str, float | None]:
    """Σ B̂ and P̂ of the M&V method over [start, end) [MWh] when a control group's
    group-level estimates replace them (drsim.utility.control_group), else None."""
    method = loads.method_estimate_group_kw
    if method is None:
        return {"method_baseline_mwh": None, "method_expected_mwh": None}
    return {f"method_{name}_mwh": mwh(method[name][:, start:end].sum())
            for name in ("baseline", "expected")}


def _peaks(simulation: Simulation) -> model.Peaks:
    """Daily peaks of every pass; the rebound in the three hours after the program: its
    peak and the energy above the baseline."""
    system = simulation.loads.system_kw
    base = system["baseline"]
    end = simulation.scenario.dr_program.end_minute
    after = slice(end, min(end + REBOUND_MINUTES, DAY))
    names = _passes(simulation)
    return model.Peaks(
        daily_peak_mw={n: float(c.max()) / 1000.0 for n, c in system.items()},
        rebound_peak_mw={n: float(system[n][after].max()) / 1000.0 for n in names},
        rebound_peak_time={n: end + int(np.argmax(system[n][after])) for n in names},
        rebound_mwh={n: mwh(np.clip(system[n][after] - base[after], 0, None).sum())
                     for n in names})


def _run_sections(run: Run) -> dict[str, Any]:
    scenario = run.simulation.scenario
    monitored = run.monitored
    plan = monitored.plan
    names = [g.name for g in scenario.groups]
    trad, expected = monitored.outcome["traditional"], monitored.outcome["expected"]
    outcomes = monitored.outcomes["traditional"]
    precision, recall, confusion = precision_recall(outcomes, plan.test_times,
                                                    stops(plan, trad))
    whole = np.full(len(names), plan.t_end - 1)  # had every meter been tested to the end
    precision_all, recall_all, _ = precision_recall(outcomes, plan.test_times, whole)
    return {
        "prediction": model.Prediction(
            **_prediction(run),
            household_precision=precision,
            household_recall=recall,
            household_confusion=confusion,
            household_precision_whole_program=precision_all,
            household_recall_whole_program=recall_all,
            expected_pass_noncompliance_time=expected.t_nc if expected.predicted else None,
            expected_pass_group_noncompliance_times=_times(names, expected.latch),
            expected_pass_groups_latched=sum(1 for x in expected.latch if x != NOT_LATCHED),
        ),
        **_loop_sections(run, features_of(scenario)),
    }


def _times(names: list[str], latch: list[int]) -> dict[str, str | None]:
    """Group name -> its latch time, or None."""
    return {n: None if x == NOT_LATCHED else clock(x) for n, x in zip(names, latch, strict=True)}


def _prediction(run: Run, trad: TierOutcome | None = None) -> dict[str, Any]:
    """The utility's prediction on the traditional pass (as deployed; ``trad``: another
    monitored pass's outcome) and γ's setting."""
    monitored = run.monitored
    plan = monitored.plan
    names = [g.name for g in run.simulation.scenario.groups]
    trad = monitored.outcome["traditional"] if trad is None else trad
    t_nc = trad.t_nc
    return {
        "predicted": trad.predicted,
        "utility_noncompliance_time": t_nc if trad.predicted else None,
        "detection_delay_minutes": t_nc - plan.t_first_test if trad.predicted else None,
        "groups_compliant_at_prediction": sum(
            1 for x in trad.latch if x == NOT_LATCHED or x > t_nc) if trad.predicted else None,
        "group_noncompliance_times": _times(names, trad.latch),
        "gamma_user": plan.threshold.describe(),  # values: thresholds.parquet
    }


def _loop_sections(run: Run, features: tuple[MonitoringFeature, ...]) -> dict[str, Any]:
    """What the utility knew at t_nc, the second event and its incentive, the costs and
    the monitoring's settings, with the sections of the monitoring ``features`` (under
    ``features``, those of their own)."""
    scenario = run.simulation.scenario
    plan = run.monitored.plan
    second = run.second
    sections = _feature_sections(run, features)
    return {
        "deficit_at_prediction": run.deficit,
        "second_event": None if second is None else model.SecondEvent(
            announced=second.announced, start=second.start, end=second.end,
            delay_detection_minutes=run.delay_detection),
        "second_event_note": run.note,
        "incentive": None if run.incentive is None else run.incentive.as_dict(),
        "cost": model.Cost(**run.costs, per_household=_per_household(
            run.costs, run.simulation.households)),
        "monitoring": model.Monitoring(
            test_times=plan.test_times.tolist(), changes_from_printed_listings=CHANGES,
            queries_overridden=sorted(scenario.monitoring.queries),
            **plan.method.summary(), **sections.pop("monitoring", {})),
        "features": sections.pop(None, {}),
        **({} if run.bl is None else
           {"op_vs_bl": op_vs_bl(run, _per_household, _prediction)}),
    }


def _feature_sections(run: Run, features: tuple[MonitoringFeature, ...]
                      ) -> dict[str | None, dict[str, Any]]:
    """The monitoring features' parts of summary.json, by the section their keys join
    (None: sections of their own, by name)."""
    scenario, monitored = run.simulation.scenario, run.monitored
    view = FeatureRun(monitored.plan, tuple(g.name for g in scenario.groups),
                      np.array(scenario.called_group_sizes(), dtype=np.int64), monitored.outcome,
                      {name: stops(monitored.plan, outcome)
                       for name, outcome in monitored.outcome.items()},
                      lambda name: run.costs if name == "traditional"
                      else pass_costs(scenario, monitored, name), monitored.thresholds)
    out: dict[str | None, dict[str, Any]] = {}
    for feature in features:
        part = feature.summary(monitored.features.get(feature.name), view)
        if feature.section is None:
            out.setdefault(None, {})[feature.name] = part
        else:
            out.setdefault(feature.section, {}).update(part)
    return out


def build_monitoring(run: Run, readings: dict[str, Any], thresholds_from: str,
                     files: list[str], streaming: dict[str, Any] | None = None
                     ) -> dict[str, Any]:
    """The summary of ``drsim monitor`` (docs/summary.md, "drsim monitor"): the scenario,
    the readings' checks, the prediction on the recorded pass, what the utility knew at
    t_nc, the second event's plan, the costs, the backend and the timings; ``streaming``:
    a monitored stream's section."""
    simulation = run.simulation
    return model.Summary(
        scenario=_scenario(simulation),
        code_version=code_version(),
        readings=readings,
        prediction=model.Prediction(**_prediction(run), thresholds_from=thresholds_from),
        **_monitor_sections(run),
        backend=_backend(simulation),
        timings=_timings(simulation),
        resources=_resources(simulation),
        files=list(files),
        **_streaming(streaming),
    ).as_dict()


def _monitor_sections(run: Run) -> dict[str, Any]:
    """``drsim monitor``'s sections of the closed loop, with those of the monitoring
    features that readings can feed."""
    return _loop_sections(run, tuple(f for f in features_of(run.simulation.scenario)
                                     if f.readings_refusal is None))


def _per_household(costs: dict[str, Any], households: int) -> dict[str, Any]:
    """Each cost divided by the households (Figure 6.13's axis)."""
    return {kind: {tier: value / households for tier, value in tiers.items()}
            for kind, tiers in costs.items()}


def _backend(simulation: Simulation) -> model.Backend:
    info = simulation.backend
    passes = info.jobs[0] if info.jobs else None
    return model.Backend(
        name=info.name, master=info.master, app_id=info.app_id,
        parallelism=info.parallelism, chunks=len(simulation.chunks),
        chunk_size=max((c.count for c in simulation.chunks), default=0),
        partitions=passes.partitions if passes else None,
        tasks=passes.tasks if passes else None,
        jobs=[model.Job(label=job.label, partitions=job.partitions, tasks=job.tasks)
              for job in info.jobs])


def _resources(simulation: Simulation) -> model.Resources:
    """Peak resident memory [B] of the driver's Python process, of its JVM (Spark; None
    elsewhere) and of the processes that ran chunk tasks (their largest)."""
    return model.Resources(
        driver_peak_rss_bytes=peak_rss_bytes(),
        jvm_peak_rss_bytes=process_peak_rss_bytes(simulation.backend.jvm_pid),
        peak_task_memory_bytes=int(simulation.chunk_rows["peak_rss_bytes"].max()))


def _timings(simulation: Simulation) -> model.Timings:
    seconds = simulation.chunk_rows["seconds"].to_numpy(float)
    return model.Timings(
        **{k: float(v) for k, v in simulation.timings.items()},
        chunk_seconds=model.ChunkSeconds(min=float(seconds.min()),
                                         mean=float(seconds.mean()),
                                         max=float(seconds.max())))
