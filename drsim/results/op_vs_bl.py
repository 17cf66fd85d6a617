"""summary.json's ``op_vs_bl``: the run's monitoring (OP) against the plain one (BL).

The dissertation's §6.3.4 compares the optimised monitoring, "OP" (hybrid load shedding
and the EIRES framework), with "the DR monitoring without hybrid load shedding and the
EIRES framework", "BL", on the same households: communication and computation (Figure
6.14 a-b, as §6.3.3 counts them), the time of the prediction and the energy reduced with
the same incentive scheme (Figure 6.14 c). A run that sheds load monitors the plain twin
of each pass beside it (:func:`drsim.utility.features.plain_twin`) and closes BL's loop
too (:func:`drsim.pipeline.stages.plain_loop`); this section sets the two side by side
(docs/summary.md, docs/optimised_monitoring.md). ``drsim monitor`` plans BL's second event
but simulates neither a baseline nor an adaptive pass
(:func:`drsim.pipeline.stages.plain_plan`): its section has no reductions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from drsim.pipeline.evaluation import TierOutcome
from drsim.pipeline.stages import PlainLoop, Run
from drsim.results import summary_model as model
from drsim.units import mwh
from drsim.utility.feature_registry import features_of

__all__ = ["TIERS", "op_vs_bl", "ratio"]

TIERS = ("meter", "group", "utility")  # Listings 6.1, 6.2, 6.3


def ratio(op: float, bl: float) -> float | None:
    """OP's figure over BL's (None when BL's is 0).

    Examples
    --------
    >>> ratio(7, 10), ratio(1, 0)
    (0.7, None)
    """
    return op / bl if bl else None


def op_vs_bl(run: Run, per_household: Callable[[dict[str, Any], int], Any],
             prediction: Callable[[Run, TierOutcome], dict[str, Any]]
             ) -> dict[str, Any] | None:
    """Return the ``op_vs_bl`` section of ``run`` (None without a plain twin).

    Parameters
    ----------
    run : drsim.pipeline.stages.Run
        The run; its :attr:`~drsim.pipeline.stages.Run.bl` is BL's closed loop.
    per_household : callable
        ``per_household(costs, households)``: the costs per household of summary.json's
        ``cost``.
    prediction : callable
        ``prediction(run, outcome)``: the fields of summary.json's ``prediction`` for
        a monitored pass's outcome.

    Returns
    -------
    dict or None
        The fields of :class:`drsim.results.summary_model.OpVsBl` (without BL's adaptive
        pass, :attr:`~drsim.pipeline.stages.PlainLoop.adaptive_kw` None: no reductions).
    """
    bl = run.bl
    if bl is None:
        return None
    op_outcome, bl_outcome = run.monitored.outcome["traditional"], run.monitored.outcome[bl.name]
    reductions = _reductions(run, bl) if bl.adaptive_kw is not None else None
    both = op_outcome.predicted and bl_outcome.predicted
    return {
        "communication": ratio(run.costs["communication"]["total"],
                               bl.costs["communication"]["total"]),
        "computation": ratio(run.costs["computation"]["total"],
                             bl.costs["computation"]["total"]),
        "prediction_minutes_after_bl": op_outcome.t_nc - bl_outcome.t_nc if both else None,
        "adaptive_share_of_bl": None if reductions is None else ratio(
            reductions["op_adaptive"], reductions["adaptive"]),
        "bl_prediction": bl_outcome.t_nc if bl_outcome.predicted else None,
        "tiers": _tiers(run),
        "bl": model.PlainLoop(
            prediction=model.Prediction(**prediction(run, bl_outcome)).model_dump(),
            deficit_at_prediction=None if bl.second.deficit is None
            else model.Deficit(**bl.second.deficit).model_dump(),
            second_event=None if bl.second.second is None else model.SecondEvent(
                announced=bl.second.second.announced, start=bl.second.second.start,
                end=bl.second.second.end, delay_detection_minutes=run.delay_detection
            ).model_dump(),
            second_event_note=bl.second.note,
            cost=model.Cost(**bl.costs, per_household=per_household(
                bl.costs, run.simulation.households)).model_dump(),
            reduction_mwh=None if reductions is None else {
                k: reductions[k] for k in ("expected", "traditional", "adaptive")},
            reduction_share_of_expected=None if reductions is None else {
                k: ratio(reductions[k], reductions["expected"])
                for k in ("traditional", "adaptive")}),
    }


def _reductions(run: Run, bl: PlainLoop) -> dict[str, float]:
    """The program's reductions against the simulated baseline [MWh]: expected,
    traditional, BL's adaptive and OP's (``op_adaptive``)."""
    scenario, loads = run.simulation.scenario, run.simulation.loads
    window = slice(scenario.dr_program.start_minute, scenario.dr_program.end_minute)
    system = loads.system_kw
    base = system["baseline"][window]

    def saved(kw: np.ndarray) -> float:
        return mwh((base - kw[window]).sum())

    return {"expected": saved(system["expected"]), "traditional": saved(system["traditional"]),
            "adaptive": saved(bl.adaptive_kw.sum(axis=0)),
            "op_adaptive": saved(system["adaptive"])}


def _tiers(run: Run) -> dict[str, model.TierDevice]:
    """Per tier, OP's devices (:meth:`~drsim.utility.features.MonitoringFeature.tier_devices`;
    a tier no feature reports does not shed)."""
    out: dict[str, Any] = {t: {"shed": False, "latency_average_minutes": None,
                               "bound_minutes": None, "unshed_latency_average_minutes": None}
                           for t in TIERS}
    for feature in features_of(run.simulation.scenario):
        if feature.name in run.monitored.features:
            for tier, fields in feature.tier_devices(run.monitored.features[feature.name]).items():
                out[tier] = {**out[tier], **fields}
    return {t: model.TierDevice(**v) for t, v in out.items()}
