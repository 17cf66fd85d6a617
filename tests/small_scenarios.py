"""The quickstart scenario, made smaller, for tests that run the whole loop."""

from __future__ import annotations

import yaml

from drsim.scenario.library import LIBRARY


def quickstart(households: int = 1200, remote: dict | None = None,
               shedding: dict | None = None, **baseline) -> dict:
    """The packaged quickstart scenario as a mapping with ``households`` in equal groups, gateways
    of 100 meters under ``remote`` or ``shedding``, and ``baseline`` settings."""
    with open(LIBRARY / "quickstart.yaml") as f:
        data = yaml.safe_load(f)
    data["households"] = households
    share = households // len(data["groups"])
    for g in data["groups"]:
        g.pop("range", None)
        g["size"] = share
    if remote is not None:
        data["monitoring"]["remote"] = {"gateway_households": 100, **remote}
    if shedding is not None:
        data["monitoring"]["shedding"] = {"gateway_households": 100, **shedding}
    data.setdefault("baseline", {}).update(baseline)
    return data
