"""drsim: a distributed smart-grid demand-response simulator (see DESIGN.md)."""

from drsim.dr import DREvent
from drsim.scenario import Scenario, ScenarioError, load_scenario
from drsim.sim import simulate_households

__all__ = ["DREvent", "Scenario", "ScenarioError", "load_scenario", "simulate_households"]
