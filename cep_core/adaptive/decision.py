"""The reoptimizing decision function D of the detection-adaptation loop.

Source: US 11,693,862 B2, "Reoptimizing Decision Problem" and "Invariant-Based Method":

* ``static``: never true, the first plan stays (the experiments' static plan);
* ``unconditional`` (the tree-based NFA's D): always true, a new plan at every check;
* ``threshold`` (ZStream's D): true when any monitored statistic moved by more than a
  relative ``t`` since the plan was built, |s − s₀| > t·s₀;
* ``invariant``: per building block the K tightest of its deciding conditions
  (K-invariants; K = 1 is the basic method), verified in the plan's block order, true at
  the first violated by more than the distance d: lhs > (1 + d)·rhs. Theorem 1: a
  violation means 𝒜 now builds another plan (no false positive). **Patented (US
  11,693,862 B2).**

>>> from cep_core.adaptive.planning import Inputs
>>> before, after = Inputs((1.0,), ((1.0,),), 1.0), Inputs((1.3,), ((1.0,),), 1.0)
>>> d = Threshold(0.2); d.planned(None, before); d.check(after)
True
"""

from __future__ import annotations

from typing import Any

from cep_core.adaptive.planning import Inputs, Planned

__all__ = ["METHODS", "DISTANCES", "META_FLOOR", "Decision", "Static", "Unconditional",
           "Threshold", "Invariants", "decision", "average_distance", "META_LOW", "META_HIGH"]

METHODS = ("static", "unconditional", "threshold", "invariant")
DISTANCES = ("avg", "meta")  # d chosen from the statistics (module doc)
META_FLOOR = 0.05  # the least d the meta-adaptive method doubles to
META_LOW, META_HIGH = 1.1, 1.5  # a re-plan's gain below: low (d doubles); above: large


class Decision:
    """D: :meth:`planned` when a plan is built, :meth:`check` at each check."""

    def planned(self, plan: Planned | None, stats: Inputs) -> None:  # noqa: B027
        """A new plan was built from ``stats``."""

    def check(self, stats: Inputs) -> bool:
        raise NotImplementedError


class Static(Decision):
    """Never plan again."""

    def check(self, stats: Inputs) -> bool:
        return False


class Unconditional(Decision):
    """Always plan again."""

    def check(self, stats: Inputs) -> bool:
        return True


class Threshold(Decision):
    """Plan again when a statistic moved by more than ``t`` (relative) since the plan."""

    def __init__(self, t: float):
        self.t = t
        self.base: tuple[float, ...] = ()

    def planned(self, plan: Planned | None, stats: Inputs) -> None:
        self.base = stats.values()

    def check(self, stats: Inputs) -> bool:
        t = self.t
        for old, new in zip(self.base, stats.values(), strict=True):
            if abs(new - old) > t * old or (old == 0 and new > 0):
                return True
        return False


def average_distance(conditions: tuple, stats: Inputs) -> float:
    """d_avg (module doc) of ``conditions`` under ``stats`` (0 without any).

    >>> from cep_core.adaptive.planning import Condition
    >>> c = Condition(lambda s: 1.0, lambda s: 1.5, 0.5, "1 < 1.5")
    >>> average_distance((c, Condition(lambda s: 2.0, lambda s: 2.2, 0.2, "")), None)
    0.3
    """
    gaps = []
    for c in conditions:
        lhs, rhs = c.lhs(stats), c.rhs(stats)
        low = min(lhs, rhs)
        if low > 0:
            gaps.append(abs(rhs - lhs) / low)
    return round(sum(gaps) / len(gaps), 12) if gaps else 0.0


class Invariants(Decision):
    """Plan again when one of the plan's invariants (the ``K`` tightest deciding
    conditions of each block) is violated by more than the distance ``d``: a number,
    ``"avg"`` or ``"meta"`` (module doc; :attr:`d` is the distance in use, ``history``
    its values in turn)."""

    def __init__(self, d: float | str = 0.0, k: int = 1):
        self.rule = d if isinstance(d, str) else None
        self.d = 0.0 if isinstance(d, str) else float(d)
        self.k = k
        self.invariants: tuple = ()
        self.current: Planned | None = None
        self.history: list[float] = []

    def planned(self, plan: Planned | None, stats: Inputs) -> None:
        self.invariants = tuple(c for block in plan.blocks for c in block[:self.k])
        if self.rule is not None and self.current is None:
            self.d = average_distance(self.invariants, stats)
            self.history.append(self.d)
        elif self.rule == "meta" and self.current is not None:
            gain = self.current.cost(stats) / max(plan.cost(stats), 1e-300)
            if gain < META_LOW:
                self.d = max(2 * self.d, META_FLOOR)
            elif gain > META_HIGH:
                self.d /= 2
            self.history.append(self.d)
        self.current = plan

    def check(self, stats: Inputs) -> bool:
        d = self.d
        return any(c.violated(stats, d) for c in self.invariants)


def decision(adapt: dict[str, Any]) -> Decision:
    """The D an ``adapt`` option names (checked by :func:`cep_core.adaptive.engine.
    adapt_options`)."""
    method = adapt["method"]
    if method == "static":
        return Static()
    if method == "unconditional":
        return Unconditional()
    if method == "threshold":
        return Threshold(adapt["t"])
    return Invariants(adapt["d"], adapt["K"])
