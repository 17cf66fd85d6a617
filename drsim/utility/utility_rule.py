"""What the utility tier tests: the interface of its rules, and Listing 6.3's.

The utility predicts non-compliance (t_nc, §6.2.2-6.2.3) from what the group leaders send
it. A rule says what that is, which query texts it runs and what summary.json records of
it; which rule a run's utility follows is a setting of the monitoring method
(:attr:`drsim.utility.aggregate_method.Aggregate.utility`; every other method follows
Listing 6.3), and :func:`drsim.utility.utility_rules.run_utility` runs it. One subclass per
rule, in a module of its own:

* :class:`UtilityRule`, ``groups``: Listing 6.3 as drsim reads it
  (:func:`drsim.utility.group_and_utility_tiers.utility_tier`): an alert at every tick at
  which more than γ_group of the groups are latched, the prediction at the
  (m_utility + 1)-th alert in a row;
* :class:`drsim.utility.pooled_rule.PooledCusum`, ``pooled``: one CUSUM of the groups'
  summed excess over their references (``aggregate`` only).

The rules are frozen and picklable: they travel to the executors inside the monitoring
plan's method.

References
----------
.. [1] B. Zhao, "State Management for Efficient Event Pattern Detection", dissertation,
   Humboldt-Universität zu Berlin, 2022, §6.2.2 (Listing 6.3) and §6.2.3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["LATCHED_GROUPS", "UtilityRule"]


@dataclass(frozen=True)
class UtilityRule:
    """Listing 6.3 over the groups' latches, and the interface of every rule (module doc).

    Examples
    --------
    >>> rule = UtilityRule()
    >>> rule.name, rule.reads_statistics, rule.queries(), rule.params(), rule.summary()
    ('groups', False, {}, {}, {'utility': 'groups'})
    >>> rule.slowed_from([1136, -1])
    [1136, -1]
    """

    #: its value of ``monitoring.aggregate.utility``
    name: ClassVar[str] = "groups"
    #: whether the group leaders send the utility their group's excess and its variance at
    #: every test time (``excess`` and ``variance`` rows of the tiers' output)
    reads_statistics: ClassVar[bool] = False

    def slowed_from(self, latch: list[int]) -> list[int]:
        """Return, per group, the minute from which its meters read at the settlement rate.

        Listing 6.3 has counted a latched group, so its meters slow down at its latch
        (§6.2.2); NOT_LATCHED (−1): at the prediction or the program's end.

        Parameters
        ----------
        latch : list of int
            Per group, its latch minute or NOT_LATCHED [minutes since midnight].

        Returns
        -------
        list of int
            Per group, the minute or NOT_LATCHED [minutes since midnight].
        """
        return list(latch)

    def queries(self) -> dict[str, str]:
        """Return the query texts it runs beside Listings 6.1-6.3, by name (none)."""
        return {}

    def params(self) -> dict[str, Any]:
        """Return the parameters its query texts read beside the plan's (none)."""
        return {}

    def summary(self) -> dict[str, Any]:
        """Return its part of ``monitoring.method_settings``: its name and settings."""
        return {"utility": self.name}


#: Listing 6.3, the rule of every method but ``aggregate`` with ``utility: pooled``
LATCHED_GROUPS = UtilityRule()
