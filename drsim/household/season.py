"""The simulated day's month and day type, applied to the appliance catalogue.

The catalogue (:mod:`drsim.household.appliances`) gives each appliance its mean starts
per day over a year and weekday and weekend start curves; :func:`day_catalogue` turns it
into the catalogue of one day: a month (``Scenario.season``) and a day type
(``Scenario.day_type``). Three things change with the day, each after the CREST demand
model (Richardson et al. 2010, 2009): the activity curves and start counts of weekend days,
the monthly factors of the heating systems, and lighting, whose switch-ons need darkness
(:func:`lighting_weights`, with the month's daylight from ``drsim/data/daylight.yaml``).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from importlib import resources

import numpy as np
import yaml

from drsim.household.appliances import SLOTS, Catalogue, CatalogueError

DAY_TYPES = ("weekday", "saturday", "sunday")
DAYS_IN_MONTH = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
WEEKDAY_SHARE = 5.0 / 7.0  # share of weekdays among the days of a year


@dataclasses.dataclass(frozen=True)
class Daylight:
    """The lighting model's daylight input (``drsim/data/daylight.yaml``).

    Attributes
    ----------
    dark_share : numpy.ndarray
        (12, 144) share of the minutes of each ten-minute slot, over the days of each
        month (January first), at which outdoor global irradiance is below the lighting
        threshold [1].
    light_anyway : float
        Chance that a switch-on happens at an irradiance above the threshold [1].
    summer_time : tuple of int
        Months whose clocks run an hour ahead of ``dark_share``'s (GMT): British Summer
        Time, from the last Sunday of March to the last Sunday of October, taken as whole
        months April to October.
    """

    dark_share: np.ndarray
    light_anyway: float
    summer_time: tuple[int, ...]

    def on_clock(self, month: int) -> np.ndarray:
        """Return the month's dark shares on the households' clock (summer time moved).

        Parameters
        ----------
        month : int
            Month, 1-12.

        Returns
        -------
        numpy.ndarray
            (144,) dark share per ten-minute slot of local clock time [1].

        Examples
        --------
        >>> light = load_daylight()
        >>> bool((light.on_clock(7)[6:] == light.dark_share[6, :-6]).all())  # an hour later
        True
        """
        shift = SLOTS // 24 if month in self.summer_time else 0
        return np.roll(self.dark_share[month - 1], shift)


def year_shares() -> np.ndarray:
    """Return the share of a year's days in each month and day type.

    Months by their days (not a leap year), and in every month 5 weekdays, one Saturday
    and one Sunday in 7: the weights of a yearly mean over :func:`day_catalogue`'s days.

    Returns
    -------
    numpy.ndarray
        (12, 3) shares [1], January first, columns in :data:`DAY_TYPES` order; they sum
        to 1.

    Examples
    --------
    >>> shares = year_shares()
    >>> round(float(shares.sum()), 12), round(float(shares[0, 0] * 365), 3)
    (1.0, 22.143)
    """
    weekend = (1.0 - WEEKDAY_SHARE) / 2.0
    return (DAYS_IN_MONTH / DAYS_IN_MONTH.sum())[:, None] * np.array(
        [WEEKDAY_SHARE, weekend, weekend])


def lighting_weights(occupancy, dark_share, light_anyway):
    r"""Switch-on weight of lighting in each ten-minute slot.

    The CREST lighting model [1]_ switches a lamp on only where someone is active and the
    outdoor irradiance is below a threshold, or, in daylight, with a small chance anyway.
    With the effective occupancy :math:`o(s)` and the share of the slot's minutes below the
    threshold :math:`d(s)`, a slot's weight is (drsim's reading of §2 of [1]_, one mean
    slot rather than a simulated day):

    .. math:: w(s) = o(s) \cdot \left(d(s) + p \cdot (1 - d(s))\right)

    Parameters
    ----------
    occupancy : numpy.ndarray
        Expected effective occupancy of each slot [1] (any positive scale).
    dark_share : numpy.ndarray
        Share of each slot's minutes below the irradiance threshold [1].
    light_anyway : float
        Chance :math:`p` of a switch-on in daylight [1] (CREST: 0.05).

    Returns
    -------
    numpy.ndarray
        The weights, in the units of ``occupancy``.

    References
    ----------
    .. [1] I. Richardson, M. Thomson, D. Infield, A. Delahunty, "Domestic lighting: A
       high-resolution energy demand model", Energy and Buildings 41(7), 781-789, 2009.

    Examples
    --------
    >>> lighting_weights(np.array([1.0, 2.0, 2.0]), np.array([1.0, 0.0, 0.5]), 0.05)
    array([1.  , 0.1 , 1.05])
    """
    dark_share = np.asarray(dark_share, dtype=np.float64)
    return np.asarray(occupancy, dtype=np.float64) * (
        dark_share + light_anyway * (1.0 - dark_share))


def day_weights(weekend_scale):
    r"""Find the expected starts on a weekday and a weekend day per mean start of a year.

    The catalogue's ``starts_per_day`` is CREST's cycles per year over 365 days [1]_, a
    mean over day types; CREST's start probability follows the day type's activity
    curves, so a weekend day has :math:`r` times a weekday's starts (:math:`r` =
    ``weekend_scale``). With 5 weekdays in 7, a weekday's and a weekend day's factors on
    the annual mean are (drsim's reading, the calibration of [1]_ kept over the year):

    .. math:: f_{wd} = \frac{1}{5/7 + 2/7 \cdot r}, \qquad f_{we} = r \cdot f_{wd}

    Parameters
    ----------
    weekend_scale : numpy.ndarray
        Weekend starts per weekday start, :math:`r` [1].

    Returns
    -------
    tuple of numpy.ndarray
        :math:`(f_{wd}, f_{we})` [1].

    References
    ----------
    .. [1] I. Richardson, M. Thomson, D. Infield, C. Clifford, "Domestic electricity use:
       A high-resolution energy demand model", Energy and Buildings 42(10), 1878-1887,
       2010.

    Examples
    --------
    >>> f_wd, f_we = day_weights(np.array([1.0, 1.4]))
    >>> f_wd.round(3).tolist(), f_we.round(3).tolist()
    ([1.0, 0.897], [1.0, 1.256])
    """
    r = np.asarray(weekend_scale, dtype=np.float64)
    f_wd = 1.0 / (WEEKDAY_SHARE + (1.0 - WEEKDAY_SHARE) * r)
    return f_wd, r * f_wd


def day_catalogue(cat: Catalogue, daylight: Daylight, month: int, day_type: str) -> Catalogue:
    r"""Make the catalogue of one day: start curves and mean starts of its month and type.

    For appliance :math:`a` on a day of month :math:`m` and type :math:`t`, the mean
    starts are :math:`n_a \cdot F_{a,m} \cdot f_{a,t}` (``monthly_factor``,
    :func:`day_weights`) and the start curve is the day type's; a weekday uses the
    weekday curve, Saturday and Sunday the weekend curve (CREST has one weekend table
    [1]_). Lighting (category ``lighting``) takes :func:`lighting_weights` of its
    occupancy curve and the month's daylight, and its mean starts
    :math:`n_a \cdot W_{m,t} / \bar W` with :math:`W_{m,t}` the sum of its weights on the
    day and :math:`\bar W` their mean over the days of a year, so that its yearly energy
    stays the catalogue's [2]_.

    Parameters
    ----------
    cat : Catalogue
        The catalogue (:func:`drsim.household.appliances.load_catalogue`).
    daylight : Daylight
        The dark shares of every month (:func:`load_daylight`).
    month : int
        Month of the day, 1-12 [1].
    day_type : str
        One of :data:`DAY_TYPES`.

    Returns
    -------
    Catalogue
        The same appliances, with ``starts_per_day`` and ``start_pmf`` of the day.

    References
    ----------
    .. [1] I. Richardson, M. Thomson, D. Infield, C. Clifford, "Domestic electricity use:
       A high-resolution energy demand model", Energy and Buildings 42(10), 1878-1887,
       2010.
    .. [2] I. Richardson, M. Thomson, D. Infield, A. Delahunty, "Domestic lighting: A
       high-resolution energy demand model", Energy and Buildings 41(7), 781-789, 2009.

    Examples
    --------
    >>> from drsim.household.appliances import load_catalogue
    >>> cat, light = load_catalogue(), load_daylight()
    >>> i = cat.index("storage_heater")
    >>> [float(day_catalogue(cat, light, m, "weekday").starts_per_day[i]) for m in (1, 5, 7)]
    [1.0, 0.5, 0.0]
    """
    if day_type not in DAY_TYPES:
        raise ValueError(f"day_type {day_type!r}; accepted: {', '.join(DAY_TYPES)}")
    weekend = day_type != "weekday"
    f_wd, f_we = day_weights(cat.weekend_scale)
    starts = cat.starts_per_day * cat.monthly_factor[:, month - 1] * (f_we if weekend else f_wd)
    pmf = np.array(cat.weekend_pmf if weekend else cat.start_pmf)
    for a in np.flatnonzero(cat.category == "lighting"):
        # W of every month and day type, weekend curves in the weekday's units
        occ = np.stack([cat.start_pmf[a], cat.weekend_pmf[a] * cat.weekend_scale[a]])
        dark = np.stack([daylight.on_clock(m) for m in range(1, 13)])
        w = lighting_weights(occ[:, None, :], dark[None], daylight.light_anyway)
        total = w.sum(axis=2)  # (2, 12): weekday, weekend x month
        shares = year_shares()
        mean = (shares[:, 0] * total[0] + shares[:, 1:].sum(axis=1) * total[1]).sum()
        day = w[int(weekend), month - 1]
        starts[a] = cat.starts_per_day[a] * day.sum() / mean
        pmf[a] = day / day.sum()
    for array in (starts, pmf):
        array.flags.writeable = False
    return dataclasses.replace(cat, starts_per_day=starts, start_pmf=pmf)


def with_ownership(cat: Catalogue, ownership: dict[str, float]) -> Catalogue:
    """Set the ownership of some appliances (the electric heating systems).

    Parameters
    ----------
    cat : Catalogue
        The catalogue.
    ownership : dict of str to float
        Appliance name -> fraction of households owning it [1]; names the catalogue lacks
        must have 0.

    Returns
    -------
    Catalogue
        A copy with those ownerships.

    Raises
    ------
    CatalogueError
        If a name with a non-zero share is not in the catalogue.
    """
    own = np.array(cat.ownership)
    for name, share in ownership.items():
        if name in cat.names:
            own[cat.index(name)] = share
        elif share:
            raise CatalogueError(f"the appliance catalogue has no {name!r}, so its ownership "
                                 f"cannot be {share:g}; accepted: 0, or a catalogue with it")
    own.flags.writeable = False
    return dataclasses.replace(cat, ownership=own)


@lru_cache(maxsize=1)
def load_daylight() -> Daylight:
    """Load the packaged ``drsim/data/daylight.yaml`` (cached).

    Returns
    -------
    Daylight
        The monthly dark shares and the chance of lighting in daylight.

    Raises
    ------
    CatalogueError
        If the file does not hold 12 rows of 144 shares in [0, 1].
    """
    file = "drsim/data/daylight.yaml"
    doc = yaml.safe_load(resources.files("drsim").joinpath("data", "daylight.yaml")
                         .read_text(encoding="utf-8"))
    dark = np.asarray(doc.get("dark_share"), dtype=np.float64)
    p = float(doc.get("light_anyway", -1))
    if dark.shape != (12, SLOTS) or not ((dark >= 0) & (dark <= 1)).all() or not 0 <= p <= 1:
        raise CatalogueError(f"{file}: field 'dark_share' / 'light_anyway': not 12 x {SLOTS} "
                             "shares and a chance; accepted: numbers in [0, 1]")
    summer = tuple(doc.get("summer_time_months", ()))
    if not all(type(m) is int and 1 <= m <= 12 for m in summer):
        raise CatalogueError(f"{file}: field 'summer_time_months': {summer!r}; accepted: "
                             "months from 1 to 12")
    dark.flags.writeable = False
    return Daylight(dark_share=dark, light_anyway=p, summer_time=summer)
