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

The distance d ("Distance-Based Invariants"): a number (found by parameter scanning,
the patent's direction (i)); ``"avg"``, its direction (ii), the average relative
difference between the two sides of the deciding conditions when the first plan was
built,

    d_avg = AVG_c ( |f_c,2 − f_c,1| / min(f_c,1, f_c,2) )

over the conditions D monitors (the K tightest of each block; a side of 0 left out);
or ``"meta"``, its direction (iii) with "fine-grained per-invariant distances": each
invariant's own d, from d_avg, tuned on the fly. At each re-plan the gain in plan
quality, g = Cost(old plan) / Cost(new plan) under the statistics now
(:meth:`~cep_core.adaptive.planning.Planned.cost`), is observed; a low gain
(g < :data:`META_LOW`, 1.1: the re-plan saved less than a tenth of the plan's cost)
doubles the d of the invariant whose violation asked for it (to at least
:data:`META_FLOOR`), a large one (g > :data:`META_HIGH`, 1.5: a smaller d would have
caught the change sooner) halves it. An invariant is known by its text (the comparison
and the positions before it), so a condition that flaps between two plans keeps its
larger d in every plan that has it, and the others keep d_avg. (One d for all, tried
first, doubled on the flapping conditions until it missed the real drifts: on the
synthetic sequences of size 8, 4 replacements against 11 at d_avg, and 0.42 times its
throughput.) The gain is measured on the plan's cost, not on the invariant's two sides: a
condition of a late block may move by far more than d while the plan's cost, dominated by
its first blocks, hardly moves.

>>> from cep_core.adaptive.planning import Inputs
>>> before, after = Inputs((1.0,), ((1.0,),), 1.0), Inputs((1.3,), ((1.0,),), 1.0)
>>> d = Threshold(0.2); d.planned(None, before); d.check(after)
True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cep_core.adaptive.planning import Inputs, Planned

__all__ = ["METHODS", "DISTANCES", "META_FLOOR", "Decision", "Static", "Unconditional",
           "Threshold", "Invariants", "decision", "average_distance", "META_LOW", "META_HIGH",
           "replan", "decision_report"]

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
        #: meta-adaptive: the distance of each invariant (by its text) tuned so far
        self.own: dict[str, float] = {}
        self.fired: str | None = None  # the invariant whose violation asked for a plan

    def planned(self, plan: Planned | None, stats: Inputs) -> None:
        self.invariants = tuple(c for block in plan.blocks for c in block[:self.k])
        if self.rule is not None and self.current is None:
            self.d = average_distance(self.invariants, stats)
            self.history.append(self.d)
        elif self.rule == "meta" and self.current is not None and self.fired is not None:
            gain = self.current.cost(stats) / max(plan.cost(stats), 1e-300)
            own = self.own.get(self.fired, self.d)
            if gain < META_LOW:
                own = max(2 * own, META_FLOOR)
            elif gain > META_HIGH:
                own /= 2
            self.own[self.fired] = own
            self.history.append(own)
        self.current, self.fired = plan, None

    def check(self, stats: Inputs) -> bool:
        own, d = self.own, self.d
        for c in self.invariants:
            if c.violated(stats, own.get(c.text, d)):
                self.fired = c.text
                return True
        return False


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


def replan(decide: Decision | None, first: bool, stats_of: Callable[[], Inputs],
           plan_of: Callable[[Inputs], Planned], report: dict[str, Any]) -> Planned | None:
    """Ask D at a check and plan where it says so (one step of Algorithm 1).

    The first check always plans; D (``decide``, None for none) is told of the plan. The
    check, the seconds in D (the statistics included) and in planning, and a
    re-optimisation are counted in ``report``. Returns the plan made, or None where D
    keeps the current one; deploying it is the engine's.
    """
    report["checks"] += 1
    t0 = time.perf_counter()
    stats = stats_of()
    go = first or (decide is not None and decide.check(stats))
    t1 = time.perf_counter()
    report["seconds_deciding"] += t1 - t0
    if not go:
        return None
    planned = plan_of(stats)
    if decide is not None:
        decide.planned(planned, stats)
    report["seconds_planning"] += time.perf_counter() - t1
    report["reoptimizations"] += not first
    return planned


def decision_report(decide: Decision | None) -> dict[str, Any]:
    """What an engine's report adds for its D: with invariants the distance d, its values
    in turn and the meta-adaptive distances of the invariants tuned so far."""
    if not isinstance(decide, Invariants):
        return {}
    return {"d": decide.d, "d_history": list(decide.history), "d_own": dict(decide.own)}
