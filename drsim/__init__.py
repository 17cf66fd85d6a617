"""drsim: a distributed smart-grid demand-response simulator; its Python API is ``drsim.run``,
``drsim.simulate``, ``drsim.monitor`` and ``drsim.sweep`` (the CLI's commands)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DREvent",
    "MonitorResult",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "SimulationResult",
    "load_scenario",
    "monitor",
    "run",
    "simulate",
    "simulate_households",
    "sweep",
]

# Loaded on first use (PEP 562), so that ``import drsim.scenario`` loads no simulation code.
_LAZY = {
    "DREvent": "drsim.household.dr",
    "Scenario": "drsim.scenario",
    "ScenarioError": "drsim.scenario",
    "load_scenario": "drsim.scenario",
    "simulate_households": "drsim.household.sim",
    "run": "drsim.api",
    "simulate": "drsim.api",
    "sweep": "drsim.api",
    "monitor": "drsim.api",
    "MonitorResult": "drsim.api",
    "RunResult": "drsim.api",
    "SimulationResult": "drsim.api",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
