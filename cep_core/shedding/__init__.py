"""Hybrid load shedding (dissertation Ch. 4): a modelled device clock, the cost model,
the shedding-set knapsack and the strategies HyI, HyS, Hybrid and the baselines RI, SI,
RS, SS. Start a session with ``CompiledQuery.start(..., shedding=SheddingConfig(..))``; on
the keyed engine, many modelled devices at once with :class:`KeyedShedder`."""

from cep_core.shedding.clock import DeviceClock, LatencyWindow, unit_cost_for, work_units
from cep_core.shedding.cost_model import CostModel, load_cost_model
from cep_core.shedding.fitting import fit_cost_model
from cep_core.shedding.fleet import DeviceFleet, keepable
from cep_core.shedding.keyed import KEYED_STRATEGIES, KeyedShedder
from cep_core.shedding.knapsack import choose_shed_set, greedy_cover, min_contribution_cover
from cep_core.shedding.strategies import MODEL_STRATEGIES, STRATEGIES, SheddingConfig

__all__ = ["DeviceClock", "LatencyWindow", "unit_cost_for", "work_units", "CostModel",
           "fit_cost_model", "load_cost_model", "choose_shed_set", "greedy_cover",
           "min_contribution_cover", "SheddingConfig", "STRATEGIES", "MODEL_STRATEGIES",
           "DeviceFleet", "keepable", "KeyedShedder", "KEYED_STRATEGIES"]
