"""The names of the simulation passes (§6.3.2, Figure 6.11; docs/decisions.md, "Passes and
the observed follow-through drop"), one source for every module that names them."""

from collections.abc import Iterable

PASSES = ("baseline", "expected", "traditional")  # the passes simulated before any prediction
MONITORED = ("expected", "traditional")  # the passes the three tiers monitor
DR_PASSES = ("expected", "traditional", "adaptive")  # the passes with a DR response
RUN_PASSES = (*PASSES, "adaptive")  # every pass of a run, in Figure 6.11's order


def pass_order(passes: Iterable[str]) -> list[str]:
    """The run's passes in Figure 6.11's order, then any others in the given order.

    >>> pass_order(["adaptive", "x", "baseline"])
    ['baseline', 'adaptive', 'x']
    """
    passes = list(passes)
    return [p for p in RUN_PASSES if p in passes] + [p for p in passes if p not in RUN_PASSES]
