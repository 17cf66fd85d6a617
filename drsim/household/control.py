"""Which enrolled households form the control group, the households the utility does not call.

A randomised control trial (dissertation §6.2.1 names it among the M&V techniques B and P̂
are estimated by) keeps a random share of the enrolled households out of the DR events;
their metered load is the counterfactual of the called ones. drsim draws the control
households of each group as the ``baseline.control_group.share`` of it (rounded,
:meth:`drsim.scenario.ControlGroup.households`) with the smallest counter-based hash of
stream ``control_group`` (:mod:`drsim.household.rng`): a simple random sample without
replacement of a fixed size, the same whatever chunk a household falls in, since it is
drawn over the whole group (docs/decisions.md, "The control group").
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from drsim.household import rng

CONTROL_STREAM = "control_group"


def control_ids(scenario, group: int) -> np.ndarray:
    """Return the ids of group ``group``'s control households, sorted.

    The group's ``k`` households (:meth:`drsim.scenario.Scenario.control_group_sizes`)
    of smallest hash of (seed, id, ``control_group``): a simple random sample of ``k``
    of the group's households, drawn over the whole group, so it does not depend on
    chunking.

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario (seed, groups, ``baseline.control_group``).
    group : int
        The group's index.

    Returns
    -------
    numpy.ndarray
        The control households' ids, (k,) int64, ascending; empty without a control group.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.2.1 (randomised control
       trials).

    Examples
    --------
    >>> from drsim.scenario import scenario_from_dict
    >>> s = scenario_from_dict({"name": "doc", "seed": 7, "households": 20,
    ...                         "groups": [{"name": "g", "size": 20}],
    ...                         "baseline": {"control_group": {"share": 0.2}}})
    >>> control_ids(s, 0).tolist()
    [4, 5, 7, 10]
    """
    lo, hi = scenario.group_ranges()[group]
    return _sample(scenario.seed, lo, hi, scenario.control_group_sizes()[group])


@lru_cache(maxsize=64)
def _sample(seed: int, lo: int, hi: int, k: int) -> np.ndarray:
    """Return the ``k`` ids of [lo, hi) of smallest hash, ascending (read-only)."""
    if k == 0:
        out = np.empty(0, dtype=np.int64)
    else:
        ids = np.arange(lo, hi, dtype=np.int64)
        h = rng.hash64(seed, ids, CONTROL_STREAM)
        out = np.sort(ids[np.argsort(h, kind="stable")[:k]])
    out.flags.writeable = False
    return out


def is_control(scenario, ids: np.ndarray) -> np.ndarray:
    """Whether each household of ``ids`` is a control household (:func:`control_ids`).

    Parameters
    ----------
    scenario : drsim.scenario.Scenario
        The scenario.
    ids : numpy.ndarray
        Household ids, (n,) int.

    Returns
    -------
    numpy.ndarray
        (n,) bool, all False without a control group.

    Examples
    --------
    >>> from drsim.scenario import scenario_from_dict
    >>> s = scenario_from_dict({"name": "doc", "seed": 7, "households": 20,
    ...                         "groups": [{"name": "g", "size": 20}],
    ...                         "baseline": {"control_group": {"share": 0.2}}})
    >>> np.flatnonzero(is_control(s, np.arange(2, 10))).tolist()
    [2, 3, 5]
    """
    ids = np.asarray(ids, dtype=np.int64)
    out = np.zeros(ids.shape, dtype=bool)
    if scenario.baseline.control_group is None or ids.size == 0:
        return out
    for g in np.unique(scenario.group_of(ids)).tolist():  # a loop over groups
        out |= np.isin(ids, control_ids(scenario, g))
    return out
