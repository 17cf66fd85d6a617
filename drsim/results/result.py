"""What ``drsim.simulate``, ``drsim.run`` and ``drsim.monitor`` return: the summary, the
tables as pandas DataFrames and the figures of a simulation, a run or a monitoring; in a
notebook, the headline as an HTML table (:mod:`drsim.results.display`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from drsim.pipeline import stages as pipeline
from drsim.pipeline.monitor import Monitoring
from drsim.results import output, run_data
from drsim.results.display import headline_html
from drsim.results.summary_model import Summary

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class _Summarised:
    """A result whose ``summary`` (summary.json's content) reads as its typed model."""

    summary: dict[str, Any]

    @cached_property
    def record(self) -> Summary:
        """The summary as :class:`~drsim.results.summary_model.Summary` (clock times as
        minutes, each field documented)."""
        return Summary.model_validate(self.summary)

    def _repr_html_(self) -> str:
        """The headline as an HTML table, as a notebook shows the result
        (:func:`drsim.results.display.headline_html`)."""
        return headline_html(self.record)


@dataclass(frozen=True)
class SimulationResult(_Summarised):
    """A simulation: its summary, its tables as pandas DataFrames, its figures."""

    summary: dict[str, Any]
    simulation: pipeline.Simulation
    out: Path | None = None  # the result folder, when one was written

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """``load_curves``: pass, group, minute, kw (long format)."""
        loads = self.simulation.loads
        names = [g.name for g in self.simulation.scenario.groups]
        return {"load_curves": output.curves_table(names, loads.group_kw,
                                                   list(loads.group_kw)).to_pandas()}

    def figure(self, name: str) -> Figure:
        """``system_demand`` or ``breakdown`` as a matplotlib Figure."""
        return _figure(name, self.simulation, system_demand="plot_system_demand",
                       breakdown="plot_breakdown")


@dataclass(frozen=True)
class RunResult(_Summarised):
    """A closed-loop run: its summary, its tables as pandas DataFrames, its figures."""

    summary: dict[str, Any]
    run: pipeline.Run
    out: Path | None = None
    #: the user events, collected when no folder was written (they grow with the households)
    user_events: pd.DataFrame | None = field(default=None, repr=False)

    @cached_property
    def data(self) -> run_data.RunData:
        """What the run folder shows (:class:`~drsim.results.run_data.RunData`)."""
        return run_data.run_data(self.run, self.summary, self.user_events)

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """``load_curves``, the tiers' events (``user_events``, ``group_alerts``,
        ``group_events``, ``utility_alerts``) and ``thresholds``, as in the run folder (the
        user events are read from it when the run wrote one)."""
        tables = {name: table.to_pandas() for name, table in output.run_tables(self.data).items()}
        if "user_events" not in tables and self.out is not None:
            import pyarrow.parquet as pq

            tables["user_events"] = pq.read_table(self.out / output.USER_EVENTS).to_pandas()
        return tables

    def figure(self, name: str) -> Figure:
        """``system_demand`` (Figure 6.11) or ``compliance_timeline`` as a Figure."""
        return _figure(name, self.data, system_demand="plot_run_demand",
                       compliance_timeline="plot_compliance_timeline")


def _figure(name: str, data: Any, **draw: str) -> Figure:
    """Figure ``name`` of ``data``, drawn by the :mod:`drsim.results.figures` function
    ``draw[name]``."""
    from drsim.results import figures

    if name not in draw:
        raise KeyError(f"no figure {name!r}; accepted: {', '.join(draw)}")
    return getattr(figures, draw[name])(data)


@dataclass(frozen=True)
class MonitorResult(_Summarised):
    """``drsim monitor`` on recorded readings: its summary and what it found
    (:class:`drsim.pipeline.monitor.Monitoring`)."""

    summary: dict[str, Any]
    monitoring: Monitoring
    out: Path | None = None
