"""The CREST demand model as packaged in richardsonpy, for the scripts that compare with it.

Richardson, Thomson, Infield, Clifford, "Domestic electricity use: a high-resolution
energy demand model", Energy and Buildings 42(10), 2010; richardsonpy 0.2.3 (PyPI).
``ElectricLoad`` always simulates a whole year; :func:`crest_days` runs its day loop
(``ElectricLoad.calc_stoch_el_profile`` with its defaults) for chosen days only, and
:func:`crest_load` for any chosen days, optionally without some appliances and with the
days' own irradiance for the lighting model.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

DAY = 1440


def require_richardsonpy() -> bool:
    """True if richardsonpy imports; otherwise print how to install it."""
    try:
        import richardsonpy  # noqa: F401
        import richardsonpy.classes.electric_load  # noqa: F401
    except ImportError as exc:
        print(f"richardsonpy is not importable ({exc}).\n"
              "Install the benchmark extra from the repository root:\n"
              "    pip install -e '.[bench]'", file=sys.stderr)
        return False
    return True


def is_weekend(day: int) -> bool:
    """richardsonpy's rule for day-of-year ``day`` (1-based), with 1 January a Monday."""
    return day % 7 in (0, 6)


def irradiance() -> tuple[np.ndarray, np.ndarray]:
    """Direct and diffuse irradiance (W/m²) of the packaged test reference year at 60 s."""
    import richardsonpy.functions.change_resolution as cr
    import richardsonpy.functions.load_radiation as loadrad

    q_direct, q_diffuse = loadrad.get_rad_from_try_path()
    return (cr.change_resolution(q_direct, old_res=3600, new_res=60),
            cr.change_resolution(q_diffuse, old_res=3600, new_res=60))


def appliance_names() -> list[str]:
    """Names of the appliances of richardsonpy's ``inputs/Appliances.csv``, in its row order
    (the order of ``Appliances.data`` and of the index ``i`` in its simulation loop)."""
    import csv

    import richardsonpy

    path = Path(richardsonpy.__file__).parent / "inputs" / "Appliances.csv"
    with path.open(encoding="utf8", newline="") as f:
        rows = list(csv.reader(f, delimiter=";"))
    return [row[1] for row in rows[1:] if row]


def crest_appliances(occupants: int, exclude: tuple[str, ...] = ()):
    """richardsonpy's ``Appliances`` of one household, as ``ElectricLoad`` makes them (random
    ownership, calibrated to 0.91 x the SFH annual figure for ``occupants``).

    ``exclude`` names appliances (:func:`appliance_names`) no household owns: they are
    removed after the ownership draw, which therefore uses the same random numbers, and before
    the calibration, which then spreads the same annual energy over the other appliances (as
    richardsonpy's own ``prev_heat_dev=True`` does for the set it removes).
    """
    import richardsonpy
    import richardsonpy.classes.appliance as app_model
    import richardsonpy.classes.electric_load as eload

    names = appliance_names()
    unknown = sorted(set(exclude) - set(names))
    if unknown:
        raise ValueError(f"not in richardsonpy's Appliances.csv: {unknown}")
    dropped = [names.index(n) for n in exclude]

    class _Appliances(app_model.Appliances):
        def randomize(self):
            super().randomize()
            for i in dropped:
                self.data[i][0] = 0

    path = Path(richardsonpy.__file__).parent / "inputs" / "Appliances.csv"
    annual = eload.ElectricLoad.standard_consumption["SFH"][occupants]
    return _Appliances(str(path), annual_consumption=0.91 * annual,
                       randomize_appliances=True, prev_heat_dev=False)


def crest_load(occupancy: np.ndarray, occupants: int, first_day: int, days,
               global_irradiance: np.ndarray, bulb_set: int = 0, *,
               exclude: tuple[str, ...] = (), minute_irradiance: bool = False) -> np.ndarray:
    """(len(days), 1440) load in W of one household on the days-of-year ``days`` (1-based).

    ``occupancy`` is the household's 10-minute active-occupancy profile of the consecutive
    days from ``first_day`` on; ``days`` must lie among them. The household's appliances
    (:func:`crest_appliances`, with ``exclude``) are drawn once for all its days. Each day's
    weekend flag is :func:`is_weekend` (richardsonpy's rule, day 1 a Monday).

    ``minute_irradiance=False`` passes the lighting model what ``ElectricLoad`` passes:
    ``np.interp(range(1440), 60 * range(1440), day)``, which reads minute indices as seconds
    and so gives the irradiance of the first 24 minutes of the day (night: 0 W/m² all day).
    ``True`` passes the day's 1-minute irradiance itself, as CREST intends.
    """
    import richardsonpy
    import richardsonpy.classes.lighting as light_model
    import richardsonpy.classes.stochastic_el_load_wrapper as wrapper

    inputs = Path(richardsonpy.__file__).parent / "inputs"
    appliances = crest_appliances(occupants, exclude)
    lights = light_model.load_lighting_profile(filename=str(inputs / "LightBulbs.csv"),
                                               index=bulb_set)
    profile = wrapper.ElectricityProfile(appliances, lights)
    minutes = np.arange(DAY)
    days = list(days)
    load = np.empty((len(days), DAY))
    for j, d in enumerate(days):
        i = d - 1  # richardsonpy's 0-based day of the year
        k = d - first_day  # the day's place in ``occupancy``
        if k < 0 or 144 * (k + 1) > len(occupancy):
            raise ValueError(f"day {d} is not covered by the occupancy from day {first_day}")
        irr = global_irradiance[DAY * i: DAY * (i + 1)]
        if not minute_irradiance:
            irr = np.interp(minutes, 60 * minutes, irr)
        total, _, _ = profile.power_sim(irradiation=irr, weekend=is_weekend(d), day=i,
                                        occupancy=occupancy[144 * k: 144 * (k + 1)])
        load[j] = total
    return load


def crest_days(occupancy: np.ndarray, occupants: int, first_day: int, days: int,
               global_irradiance: np.ndarray, bulb_set: int = 0) -> np.ndarray:
    """(days, 1440) load in W of one household from day-of-year ``first_day`` (1-based).

    ``occupancy`` is the household's 10-minute active-occupancy profile of those days. The
    day loop of ``ElectricLoad.calc_stoch_el_profile`` with its defaults
    (:func:`crest_load` for consecutive days, irradiance as ``ElectricLoad`` passes it).
    """
    return crest_load(occupancy, occupants, first_day, range(first_day, first_day + days),
                      global_irradiance, bulb_set)


def annual_calibration_kwh(occupants: int) -> float:
    """richardsonpy's built-in annual figure for a single-family house ('SFH')."""
    import richardsonpy.classes.electric_load as eload

    return float(eload.ElectricLoad.standard_consumption["SFH"][occupants])
