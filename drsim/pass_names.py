"""The names of the simulation passes (§6.3.2, Figure 6.11; docs/decisions.md, "Passes and
the observed follow-through drop"), one source for every module that names them."""

PASSES = ("baseline", "expected", "traditional")  # the passes simulated before any prediction
MONITORED = ("expected", "traditional")  # the passes the three tiers monitor
DR_PASSES = ("expected", "traditional", "adaptive")  # the passes with a DR response
RUN_PASSES = (*PASSES, "adaptive")  # every pass of a run, in Figure 6.11's order
