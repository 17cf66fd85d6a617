"""Remote data on the modelled device clock (dissertation Ch. 5, EIRES): sources with
latency models and element hierarchies, caches (LRU, cost-based two-tier), the utility
model, and the strategies BL1, BL2, BL3, PFetch, LzEval and Hybrid. Start a session with
``CompiledQuery.start(..., remote=RemoteConfig(..))`` on a query compiled with
``remote={name: RemoteSource(..)}``; on the keyed engine, feed the session through a
:class:`KeyedFetcher` (fetches modelled per batch and device, :mod:`.batch`), with the
elements' published versions (:class:`Versions`, §6.3.4) if the source updates them."""

from cep_core.remote.batch import BatchFetcher, KeyedFetcher
from cep_core.remote.cache import CostCache, LRUCache
from cep_core.remote.config import STRATEGIES, RemoteConfig
from cep_core.remote.engine import RemoteEngine
from cep_core.remote.source import FetchStats, LatencyModel, RemoteSource
from cep_core.remote.versions import Versions

__all__ = ["RemoteSource", "LatencyModel", "FetchStats", "LRUCache", "CostCache",
           "RemoteConfig", "RemoteEngine", "STRATEGIES", "BatchFetcher", "KeyedFetcher",
           "Versions"]
