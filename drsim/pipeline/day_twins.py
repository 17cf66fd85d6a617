"""The plain twins (BL) of a streamed run, taken from the day run made before the stream.

BL is the counterfactual of the dissertation's comparison (§6.3.4: OP against "the DR
monitoring without hybrid load shedding and the EIRES framework"); a live deployment runs
the optimised monitoring (OP) alone. A streamed run whose devices are sized on the whole
day already runs the day's passes and tiers in batch before the stream
(:func:`drsim.pipeline.stages.day_sized`), the twins among them. So the stream runs the
monitoring features :meth:`~drsim.utility.features.MonitoringFeature.without_twins`, and
the run assembled from its rows takes the twins' part of that day run
(:class:`DayTwins`): their meter tier's work and outcome counts, the group leaders' and
the utility's rows, latches and t_nc, their user events, and each feature's figures
(:meth:`~drsim.utility.features.MonitoringFeature.with_twins`). The day run is the batch
run of the same scenario, seed and chunks, so these are the values a stream of the twins
gave (docs/decisions.md, "BL in a streamed run: from the day run").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from drsim.pipeline.backend import Backend
from drsim.pipeline.stages import Monitored
from drsim.utility.features import MonitoringFeature

__all__ = ["DayTwins"]


@dataclass(frozen=True)
class DayTwins:
    """The day run's monitoring of the passes a stream does not run.

    Attributes
    ----------
    day : drsim.pipeline.stages.Monitored
        The day run's monitoring (:func:`drsim.pipeline.stages.day_sized`).
    names : tuple of str
        The passes the stream does not run: the plain twins.
    user_events : pandas.DataFrame
        Their user events, rows of :data:`drsim.pipeline.tasks.EVENTS` collected from
        the backend before the stream.
    """

    day: Monitored
    names: tuple[str, ...]
    user_events: pd.DataFrame

    @classmethod
    def of(cls, day: Monitored, backend: Backend, streamed: tuple[str, ...]) -> DayTwins:
        """Return the passes of the day run ``day`` not among ``streamed``, their user
        events collected from ``backend``."""
        names = tuple(n for n in day.names if n not in streamed)
        events = backend.collect(day.user_events).to_pandas()
        return cls(day, names, events[events["pass"].isin(names)].reset_index(drop=True))

    def joined(self, streamed: Monitored, features: tuple[MonitoringFeature, ...]
               ) -> Monitored:
        """Return the stream's monitoring with the twins' values of the day run.

        Parameters
        ----------
        streamed : drsim.pipeline.stages.Monitored
            What the stream's rows gave (:func:`drsim.pipeline.stream_features.monitored_from`).
        features : tuple of MonitoringFeature
            The monitoring features the stream ran; each adds the twins' figures to its
            merge (:meth:`~drsim.utility.features.MonitoringFeature.with_twins`).

        Returns
        -------
        drsim.pipeline.stages.Monitored
            The monitored passes as the stream gave them, then the twins as the day run
            did; the tiers' rows in the batch run's order.
        """
        day = self.day

        def twins(values: dict[str, Any]) -> dict[str, Any]:
            return {n: values[n] for n in self.names}

        rows = pd.concat([streamed.tier_rows,
                          day.tier_rows[day.tier_rows["pass"].isin(self.names)]],
                         ignore_index=True)
        rows = rows.sort_values(["pass", "group", "kind", "time"], kind="stable",
                                ignore_index=True)
        merged = {f.name: f.with_twins(streamed.features[f.name], day.features[f.name])
                  for f in features if f.name in streamed.features and f.name in day.features}
        return replace(streamed,
                       user_events=pd.concat([streamed.user_events, self.user_events],
                                             ignore_index=True),
                       meter_work={**streamed.meter_work, **twins(day.meter_work)},
                       outcomes={**streamed.outcomes, **twins(day.outcomes)},
                       tier_rows=rows, outcome={**streamed.outcome, **twins(day.outcome)},
                       features={**streamed.features, **merged})
