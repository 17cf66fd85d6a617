"""The CREST demand model as packaged in richardsonpy, for the scripts that compare with it.

Richardson, Thomson, Infield, Clifford, "Domestic electricity use: a high-resolution
energy demand model", Energy and Buildings 42(10), 2010; richardsonpy 0.2.3 (PyPI).
``ElectricLoad`` always simulates a whole year; :func:`crest_days` runs its day loop
(``ElectricLoad.calc_stoch_el_profile`` with its defaults) for chosen days only.
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


def crest_days(occupancy: np.ndarray, occupants: int, first_day: int, days: int,
               global_irradiance: np.ndarray, bulb_set: int = 0) -> np.ndarray:
    """(days, 1440) load in W of one household from day-of-year ``first_day`` (1-based).

    ``occupancy`` is the household's 10-minute active-occupancy profile of those days.
    """
    import richardsonpy
    import richardsonpy.classes.appliance as app_model
    import richardsonpy.classes.electric_load as eload
    import richardsonpy.classes.lighting as light_model
    import richardsonpy.classes.stochastic_el_load_wrapper as wrapper

    inputs = Path(richardsonpy.__file__).parent / "inputs"
    annual = eload.ElectricLoad.standard_consumption["SFH"][occupants]
    appliances = app_model.Appliances(str(inputs / "Appliances.csv"),
                                      annual_consumption=0.91 * annual,
                                      randomize_appliances=True, prev_heat_dev=False)
    lights = light_model.load_lighting_profile(filename=str(inputs / "LightBulbs.csv"),
                                               index=bulb_set)
    profile = wrapper.ElectricityProfile(appliances, lights)
    minutes = np.arange(DAY)
    load = np.empty((days, DAY))
    for j in range(days):
        i = first_day - 1 + j  # richardsonpy's 0-based day of the year
        irr = np.interp(minutes, 60 * minutes, global_irradiance[DAY * i: DAY * (i + 1)])
        total, _, _ = profile.power_sim(irradiation=irr, weekend=is_weekend(i + 1), day=i,
                                        occupancy=occupancy[144 * j: 144 * (j + 1)])
        load[j] = total
    return load


def annual_calibration_kwh(occupants: int) -> float:
    """richardsonpy's built-in annual figure for a single-family house ('SFH')."""
    import richardsonpy.classes.electric_load as eload

    return float(eload.ElectricLoad.standard_consumption["SFH"][occupants])
