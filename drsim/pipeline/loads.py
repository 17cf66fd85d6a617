"""The passes' load curves of a whole scenario, summed from the chunks' rows.

Chunks send their loads as whole µkW (:data:`drsim.pipeline.tasks.LOADS`), so the sums here are
exact and the curves do not depend on chunking, partitioning or the order rows arrive in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from drsim.pipeline.tasks import CONTROL, ESTIMATE, TOTAL
from drsim.scenario import Scenario
from drsim.units import DAY, MICRO
from drsim.utility.control_adjustment import COVARIATES, adjusted_control_kw
from drsim.utility.control_group import group_estimates


@dataclass
class Loads:
    """Per-minute loads [kW] of every pass: per group, per category, and the utility's
    estimates B̂ (``baseline``) and P̂ (``expected``), NaN outside the program window.
    With a control group (:meth:`with_control_group`), the estimates are the control
    group's, the M&V method's sums are kept in ``method_estimate_group_kw``, and the
    control households' load per group in ``control_group_kw``."""

    group_kw: dict[str, np.ndarray]  # pass -> (groups, 1440)
    category_kw: dict[str, dict[str, np.ndarray]]  # pass -> category -> (1440,)
    estimate_group_kw: dict[str, np.ndarray]  # "baseline", "expected" -> (groups, 1440)
    control_group_kw: np.ndarray | None = None  # (groups, 1440), their load on every pass
    method_estimate_group_kw: dict[str, np.ndarray] | None = None
    #: the control households' covariate sums (drsim.utility.control_adjustment.COVARIATES)
    control_covariates: dict[str, np.ndarray] | None = None

    @property
    def system_kw(self) -> dict[str, np.ndarray]:
        """pass -> (1440,) kW of all households."""
        return {name: kw.sum(axis=0) for name, kw in self.group_kw.items()}

    @property
    def estimate_kw(self) -> dict[str, np.ndarray]:
        """"baseline" (B̂), "expected" (P̂) -> (1440,) kW of all households."""
        return {name: kw.sum(axis=0) for name, kw in self.estimate_group_kw.items()}

    def merged(self, other: Loads) -> Loads:
        """These loads and another run's passes (the adaptive pass) together."""
        return replace(self, group_kw={**self.group_kw, **other.group_kw},
                       category_kw={**self.category_kw, **other.category_kw},
                       estimate_group_kw={**self.estimate_group_kw, **other.estimate_group_kw})

    def with_control_group(self, scenario: Scenario) -> Loads:
        """These loads with the group-level estimates of the scenario's control group
        (:func:`drsim.utility.control_group.group_estimates`) in place of the sums of the
        M&V method's, which the deficit at t_nc, the goal and the expected reduction
        read; these loads themselves without a control group. With the covariate sums
        the control households' load is first adjusted on the hour before the notice
        (:func:`drsim.utility.control_adjustment.adjusted_control_kw`)."""
        if self.control_group_kw is None:
            return self
        control = np.array(scenario.control_group_sizes(), dtype=np.int64)
        called = np.array(scenario.called_group_sizes(), dtype=np.int64)
        control_kw = self.control_group_kw if self.control_covariates is None else \
            adjusted_control_kw(self.control_group_kw, self.control_covariates, control, called)
        est = group_estimates(control_kw, control, called,
                              self.estimate_group_kw["baseline"],
                              self.estimate_group_kw["expected"])
        return replace(self, estimate_group_kw={"baseline": est.baseline_kw,
                                                "expected": est.expected_kw},
                       method_estimate_group_kw=self.estimate_group_kw)

    def replayed(self, other: Loads, name: str, until: int) -> Loads:
        """These loads with the minutes before ``until`` taken from pass ``name`` of
        ``other``: the adaptive pass is rendered from DR2's announcement on, and replays
        the traditional pass before it (docs/architecture.md, "The closed loop by
        replay")."""

        def spliced(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
            out = mine.copy()
            out[..., :until] = theirs[..., :until]
            return out

        return Loads({p: spliced(kw, other.group_kw[name]) for p, kw in self.group_kw.items()},
                     {p: {c: spliced(kw, other.category_kw[name][c]) for c, kw in cats.items()}
                      for p, cats in self.category_kw.items()},
                     self.estimate_group_kw)

    def renamed(self, name: str, new: str) -> Loads:
        """Pass ``name``'s loads alone, under the name ``new``."""
        return Loads({new: self.group_kw[name]}, {new: self.category_kw[name]}, {})


def sum_loads(table: pa.Table, n_groups: int, passes: tuple[str, ...]) -> Loads:
    """Sum the rows of :data:`drsim.pipeline.tasks.LOADS` per (pass, group) and per (pass,
    category)."""
    table = table.sort_by([("chunk", "ascending"), ("pass", "ascending"),
                           ("series", "ascending")])
    group = table.column("group").to_numpy()
    pass_ = np.asarray(table.column("pass").to_pylist(), dtype=object)
    series = np.asarray(table.column("series").to_pylist(), dtype=object)
    kw_micro = table.column("kw_micro").combine_chunks().flatten().to_numpy()
    kw_micro = kw_micro.reshape(len(table), DAY)

    def per_group(rows: np.ndarray) -> np.ndarray:
        micro = np.zeros((n_groups, DAY))
        np.add.at(micro, group[rows], kw_micro[rows])  # exact: whole µkW (NaN stays NaN)
        return micro / MICRO

    total = series == TOTAL
    group_kw, category_kw = {}, {}
    for name in passes:
        group_kw[name] = per_group(total & (pass_ == name))
        rows = ~total & (pass_ == name)
        category_kw[name] = {c: kw_micro[rows & (series == c)].sum(axis=0) / MICRO
                             for c in sorted(set(series[rows]))}
    estimates = {name: per_group((pass_ == ESTIMATE) & (series == name))
                 for name in ("baseline", "expected") if ((pass_ == ESTIMATE)
                                                          & (series == name)).any()}
    control = pass_ == CONTROL
    covariates = {name: per_group(control & (series == name)) for name in COVARIATES
                  if (control & (series == name)).any()}
    return Loads(group_kw, category_kw, estimates,
                 per_group(control & total) if control.any() else None,
                 control_covariates=covariates or None)
