"""Remote data sources on the modelled device clock (dissertation §5.2.1, §2.1.2).

A remote source answers a look-up ``name[args]`` (a data element ``d``, keyed by
``(name, args)``) after a transmission latency ``ℓ_remote(d)`` drawn from its
:class:`LatencyModel`. Elements have a size ``|d|`` and may be contained in a larger
element: ``ρ(d)`` (§5.2.1; for instance a slot of a household's profile ⊂ the profile ⊂
its group's profile). A fetched container answers every element it contains.

:class:`RemoteSource` is a :class:`cep_core.lookup.Lookup`: passed to
``cep_core.compile(.., remote={"REMOTE": source})``. Run by an ordinary engine it
answers at once, like a local table; run by :class:`cep_core.remote.engine.RemoteEngine`
every answer goes through that engine's cache and device clock.

Latency draws come from a generator seeded per source (:class:`LatencySampler`, a part
of the remote engine's state) and are taken in request order, so a run is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import ndtri

from cep_core.errors import QueryError
from cep_core.lookup import Lookup, as_table, is_frame, is_series

__all__ = ["LatencyModel", "LatencySampler", "RemoteSource", "FetchStats", "Element"]

#: a remote data element: the lookup name and its arguments
Element = tuple[str, tuple]

LATENCY_KINDS = ("fixed", "uniform", "lognormal", "trace")


@dataclass(frozen=True)
class LatencyModel:
    """The transmission latency of a fetch [stream time units].

    * ``fixed``: always ``value``;
    * ``uniform``: U(``low``, ``high``) (the Ch. 5 experiments: U(10, 100) µs, §5.6.2);
    * ``lognormal``: median ``value``, shape ``sigma`` (long-tailed networks);
    * ``trace``: the recorded latencies ``trace``, in order, cycled.

    >>> m = LatencyModel("uniform", low=10.0, high=100.0)
    >>> draw = m.sampler(seed=1)
    >>> 10.0 <= draw() <= 100.0
    True
    >>> m.mean
    55.0
    """

    kind: str = "fixed"
    value: float = 0.0
    low: float = 0.0
    high: float = 0.0
    sigma: float = 0.5
    trace: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in LATENCY_KINDS:
            raise QueryError(f"latency kind must be one of {', '.join(LATENCY_KINDS)}, "
                             f"not {self.kind!r}")
        if self.kind == "uniform" and not 0 <= self.low <= self.high:
            raise QueryError(f"uniform latency needs 0 ≤ low ≤ high, not "
                             f"low={self.low!r}, high={self.high!r}")
        if self.kind in ("fixed", "lognormal") and not self.value >= 0:
            raise QueryError(f"latency value must be ≥ 0, not {self.value!r}")
        if self.kind == "lognormal" and not self.sigma >= 0:
            raise QueryError(f"lognormal sigma must be ≥ 0, not {self.sigma!r}")
        if self.kind == "trace" and (not self.trace or min(self.trace) < 0):
            raise QueryError("a latency trace needs at least one latency, none negative")

    @property
    def mean(self) -> float:
        """The expected latency [time units]."""
        if self.kind == "uniform":
            return (self.low + self.high) / 2
        if self.kind == "lognormal":
            return self.value * float(np.exp(self.sigma ** 2 / 2))
        if self.kind == "trace":
            return float(np.mean(self.trace))
        return self.value

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """The latencies at uniform draws ``u`` ∈ [0, 1) (inverse transform sampling, so
        that a latency can be tied to a hash of what is fetched).

        >>> LatencyModel("uniform", low=10.0, high=20.0).quantile(np.array([0.0, 0.5]))
        array([10., 15.])
        """
        u = np.asarray(u, dtype=np.float64)
        if self.kind == "uniform":
            return self.low + u * (self.high - self.low)
        if self.kind == "lognormal":
            z = ndtri(np.clip(u, 1e-12, 1 - 1e-12))
            return self.value * np.exp(self.sigma * z)
        if self.kind == "trace":
            trace = np.asarray(self.trace, dtype=np.float64)
            return trace[np.minimum((u * len(trace)).astype(np.int64), len(trace) - 1)]
        return np.full(u.shape, self.value)

    def sampler(self, seed: int = 0) -> LatencySampler:
        """A deterministic stream of latencies."""
        return LatencySampler(self, seed)


class LatencySampler:
    """The latencies of a :class:`LatencyModel` in draw order, from a generator seeded
    with ``seed`` (a trace: its latencies, cycled); calling it draws the next. It
    pickles, with where it is in its stream."""

    __slots__ = ("model", "rng", "at")

    def __init__(self, model: LatencyModel, seed: int = 0):
        self.model, self.at = model, 0
        self.rng = np.random.default_rng(seed) if model.kind in ("uniform", "lognormal") \
            else None

    def __getstate__(self):
        return (self.model, self.rng, self.at)

    def __setstate__(self, s):
        self.model, self.rng, self.at = s

    def __call__(self) -> float:
        m = self.model
        if m.kind == "fixed":
            return m.value
        if m.kind == "trace":
            value = m.trace[self.at]
            self.at = (self.at + 1) % len(m.trace)
            return value
        if m.kind == "uniform":
            return float(self.rng.uniform(m.low, m.high))
        return float(m.value * np.exp(m.sigma * self.rng.standard_normal()))


@dataclass
class FetchStats:
    """What a source was asked: ``requests`` (fetches sent), ``prefetches`` (of them,
    sent ahead of need), ``bytes`` (sizes fetched), ``waited`` (time the device stood
    still for data [time units]), ``hits`` and ``misses`` (element needed and available /
    not available in the cache), ``postponed`` (predicates evaluated lazily);
    with versioned elements (:mod:`cep_core.remote.versions`, batched fetches only):
    ``refetches`` (requests of elements whose copy an invalidation had dropped, §6.3.4's
    updated profiles) and ``invalidations`` (copies, cached or in flight, dropped on an
    invalidation)."""

    requests: int = 0
    prefetches: int = 0
    bytes: int = 0
    waited: float = 0.0
    hits: int = 0
    misses: int = 0
    postponed: int = 0
    refetches: int = 0
    invalidations: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(eq=False)
class RemoteSource(Lookup):
    """Remote data: ``table`` answers ``name[args]`` (a dict keyed by the single
    argument or the argument tuple, a pandas Series, or a callable ``f(*args)``) for each name in
    ``names``; ``latency`` the transmission latency; ``size(element)`` its size in bytes
    (default ``element_size`` each); ``parent(element)`` the element containing it, or
    None (ρ of §5.2.1); ``seed`` seeds the latency draws (each engine that fetches from
    it draws from a :meth:`LatencyModel.sampler` of its own)."""

    table: Mapping | Callable
    names: Sequence[str] = ("REMOTE",)
    latency: LatencyModel = field(default_factory=LatencyModel)
    element_size: int = 1
    size: Callable[[Element], int] | None = None
    parent: Callable[[Element], Element | None] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not (isinstance(self.table, Mapping) or is_series(self.table)
                or is_frame(self.table) or callable(self.table)):
            raise QueryError("a remote source's table must be a dict, a pandas Series or "
                             f"DataFrame or a callable, not {type(self.table).__name__}")
        # the per-event table is built on first use: an engine that reads the source in
        # bulk (the keyed engine's index) never builds it
        self._values: Mapping | Callable | None = None
        if self.element_size < 1:
            raise QueryError(f"element_size must be ≥ 1, not {self.element_size!r}")
        self.names = tuple(self.names)
        #: the :class:`~cep_core.remote.state.RemoteCall` of the event a RemoteEngine
        #: is processing, if any (its look-ups go through that engine)
        self.call: Any = None

    def serves(self, name: str) -> bool:
        return name in self.names

    def changed(self, name: str) -> None:
        self._values = None

    def value(self, name: str, args: tuple) -> Any:
        """The element's value at the source (no latency)."""
        table = self._values
        if table is None:
            table = self._values = as_table(self.table)
        if not isinstance(table, Mapping):
            return table(*args)
        key = args[0] if len(args) == 1 else tuple(args)
        try:
            return table[key]
        except KeyError:
            raise QueryError(f"{name}[{', '.join(map(repr, args))}]: no such element "
                             "at the remote source") from None

    def get(self, name: str, args: tuple) -> Any:
        call = self.call
        if call is None:
            return self.value(name, args)
        return call.engine.remote_get(call, self, (name, tuple(args)))

    def size_of(self, d: Element) -> int:
        return self.size(d) if self.size is not None else self.element_size

    def ancestors(self, d: Element) -> list[Element]:
        """ρ*(d) without d: the elements containing d, innermost first."""
        out = []
        if self.parent is not None:
            p = self.parent(d)
            while p is not None:
                out.append(p)
                p = self.parent(p)
        return out
