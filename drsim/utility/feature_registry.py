"""The registered monitoring features (:class:`drsim.utility.features.MonitoringFeature`).

The pipeline, the stream, ``drsim monitor`` and the results reach the features through
:func:`features_of` and :func:`active_features` only; a new feature is its own module plus
one line in :data:`REGISTERED`.
"""

from __future__ import annotations

from drsim.scenario import Scenario
from drsim.utility.appliance_monitoring import ApplianceQueries
from drsim.utility.features import MonitoringFeature
from drsim.utility.fetching_feature import RemoteProfiles
from drsim.utility.readings_feature import LostReadings
from drsim.utility.shedding_feature import LoadShedding

__all__ = ["REGISTERED", "active_features", "combined", "features_of"]

#: the features, in the order of their sections in summary.json
REGISTERED: tuple[type[MonitoringFeature], ...] = (
    LostReadings,
    LoadShedding,
    RemoteProfiles,
    ApplianceQueries,
)


def features_of(scenario: Scenario) -> tuple[MonitoringFeature, ...]:
    """Return every registered feature with its settings from ``scenario``, on or off.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario of the run.

    Returns
    -------
    tuple of MonitoringFeature
        In the order of :data:`REGISTERED`.
    """
    return tuple(kind.of(scenario) for kind in REGISTERED)


def active_features(scenario: Scenario) -> tuple[MonitoringFeature, ...]:
    """Return the features that ``scenario`` turns on, after checking they combine.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario of the run.

    Returns
    -------
    tuple of MonitoringFeature
        The active ones, in the order of :data:`REGISTERED`.

    Raises
    ------
    ValueError
        When an active feature excludes another active one.
    """
    return combined(tuple(f for f in features_of(scenario) if f.active))


def combined(features: tuple[MonitoringFeature, ...], why: str = "; remove one of them"
             ) -> tuple[MonitoringFeature, ...]:
    """Return ``features`` after checking that none excludes another.

    Parameters
    ----------
    features : tuple of MonitoringFeature
        Active features.
    why : str
        The end of the refusal's line, after "not modelled together with <name>".

    Returns
    -------
    tuple of MonitoringFeature
        ``features``.

    Raises
    ------
    ValueError
        In one line naming the first feature's key and the one it excludes.
    """
    names = {f.name for f in features}
    for feature in features:
        for other in feature.excludes:
            if other in names:
                raise ValueError(f"{feature.scenario_key}: not modelled together with "
                                 f"{other}{why}")
    return features
