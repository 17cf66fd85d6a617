"""What a run with a control group does not do yet, refused before any work.

The control group (``baseline.control_group``, :mod:`drsim.utility.control_group`) runs in
batch beside every M&V method and monitoring method; the refusals here name what it does
not run beside yet (docs/decisions.md, "The control group").
"""

from __future__ import annotations

from drsim.utility.feature_registry import active_features

__all__ = ["check_control_group"]


def check_control_group(scenario, mode: str | None = None) -> None:
    """Refuse what a run with a control group does not do yet, in one line.

    The ValueError names ``baseline.control_group``: the monitoring features (their
    gateways and profiles hold a chunk's contiguous households, the control households
    among them) and, by ``mode`` (e.g. "a streamed run", "drsim monitor",
    "--export-readings"), the runs whose readings stand for every enrolled household.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario.
    mode : str, optional
        The kind of run asked for beside a batch run; None for a batch run.

    Raises
    ------
    ValueError
        If the scenario has a control group (share > 0) and a monitoring feature on, or
        ``mode`` is given.
    """
    if not any(scenario.control_group_sizes()):
        return
    names = [f.scenario_key for f in active_features(scenario)]
    what = mode or (names[0] if names else None)
    if what is not None:
        raise ValueError(f"baseline.control_group: {what} does not run with a control "
                         "group yet; run without it, or in batch without monitoring features")
