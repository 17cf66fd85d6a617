"""The appliance catalogue: data file ``drsim/data/appliances.yaml`` and its loader.

The catalogue is the bottom-up load model's data (dissertation §6.3.1): for each appliance
its UK ownership, mean starts per day over a year, cycle length and power phases, standby
power, weekday and weekend start-time curves, monthly factor and flexibility class
(:mod:`drsim.household.season` makes one day's catalogue from it). The numbers come from
the CREST demand model (Richardson et al., Energy and Buildings 42(10), 2010) and the other
sources named in the data file; the file's header documents the schema.

``load_catalogue()`` validates a catalogue file and returns a :class:`Catalogue` of numpy
arrays indexed by appliance. A bad file raises :class:`CatalogueError` naming the file, the
appliance, the field and the accepted values.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from drsim.units import MICRO

FLEX_DEFERRABLE, FLEX_ADVANCE, FLEX_NONE, FLEX_COLD = 0, 1, 2, 3
FLEXIBILITY: dict[str, int] = {
    "deferrable": FLEX_DEFERRABLE,
    "shiftable_in_advance": FLEX_ADVANCE,
    "non_flexible": FLEX_NONE,
    "cold_cycling": FLEX_COLD,
}
CATEGORIES: tuple[str, ...] = (
    "wet",
    "cold",
    "cooking",
    "consumer_electronics",
    "ict",
    "water_heating",
    "space_heating",
    "lighting",
    "other",
)
SLOTS = 144  # ten-minute slots per day in a start profile

_REQUIRED = (
    "name", "label", "category", "flexibility", "ownership", "always_owned", "starts_per_day",
    "cycle_minutes", "standby_kw", "start_profile", "phases", "source",
)
_OPTIONAL = ("phases_source", "ranges", "drawn", "monthly_factor", "start_count")
START_COUNTS = ("poisson", "at_most_one")
_RANGE_KEYS = ("ownership", "starts_per_day", "cycle_minutes", "mean_cycle_kw", "daily_kwh")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class CatalogueError(ValueError):
    """Signal a catalogue file that cannot be used.

    The message names the file, the appliance, the field and the accepted values.
    """


@dataclass(frozen=True)
class Catalogue:
    """Appliance catalogue as arrays over the A appliances (lighting included).

    Loaded from ``drsim/data/appliances.yaml`` (or a file of the same schema) by
    :func:`load_catalogue`. Arrays are read-only: the default catalogue is cached and
    shared. The values are the data of the bottom-up load model of §6.3.1 [1]_, taken
    from the CREST demand model [2]_ and the other sources the data file names.

    Attributes
    ----------
    names, labels : tuple of str
        Snake-case id and display name of each appliance.
    category : numpy.ndarray
        (A,) category names (:data:`CATEGORIES`).
    flexibility : numpy.ndarray
        (A,) int8 flexibility class, one of the ``FLEX_*`` codes.
    ownership : numpy.ndarray
        (A,) fraction of UK dwellings owning the appliance [1].
    always_owned : numpy.ndarray
        (A,) bool: owned by every household (lighting).
    drawn : numpy.ndarray
        (A,) bool: among the 20-25 appliances drawn per household; else owned
        independently at its ownership rate (heating systems).
    starts_per_day : numpy.ndarray
        (A,) mean cycle starts per day over a year [1/day]; in a day's catalogue
        (:func:`drsim.household.season.day_catalogue`) those of that day.
    cycle_minutes : numpy.ndarray
        (A,) int64 length of one cycle [min].
    standby_kw : numpy.ndarray
        (A,) draw when not running [kW].
    start_pmf : numpy.ndarray
        (A, 144) probability of a start in each ten-minute slot of a weekday from 00:00
        [1] (in a day's catalogue, of that day); rows sum to 1.
    weekend_pmf : numpy.ndarray
        (A, 144) the same for a weekend day (the profile's ``weekend`` curve; the weekday
        curve where it has none) [1]; rows sum to 1.
    weekend_scale : numpy.ndarray
        (A,) expected starts on a weekend day per start on a weekday: the ratio of the
        profile's weekend to weekday weights, kept in the same units [1].
    monthly_factor : numpy.ndarray
        (A, 12) factor on ``starts_per_day`` in each month, January first [1]; ones for
        appliances without a ``monthly_factor``.
    at_most_one : numpy.ndarray
        (A,) bool: at most one start a day (``start_count: at_most_one``), with probability
        ``starts_per_day`` (capped at 1), instead of a Poisson count.
    phase_minutes : numpy.ndarray
        (A, P) int64 length of each phase of a cycle [min], zero-padded.
    phase_kw : numpy.ndarray
        (A, P) power of each phase [kW], zero-padded.

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
    .. [2] I. Richardson, M. Thomson, D. Infield, C. Clifford, "Domestic electricity use:
       A high-resolution energy demand model", Energy and Buildings 42(10), 1878-1887,
       2010.

    Examples
    --------
    >>> cat = load_catalogue()
    >>> i = cat.index("washing_machine")
    >>> cat.phase_minutes[i, :3].tolist(), cat.phase_kw[i, :3].tolist()
    ([15, 93, 30], [2.0, 0.12, 0.4956])
    >>> int(cat.cycle_minutes[i]), bool(cat.flexibility[i] == FLEX_DEFERRABLE)
    (138, True)
    """

    names: tuple[str, ...]
    labels: tuple[str, ...]
    category: np.ndarray  # (A,) category names
    flexibility: np.ndarray  # (A,) int8 FLEX_* codes
    ownership: np.ndarray  # (A,) fraction of UK dwellings owning it
    always_owned: np.ndarray  # (A,) bool
    drawn: np.ndarray  # (A,) bool: in the 20-25 drawn per household; else owned independently
    starts_per_day: np.ndarray  # (A,) mean cycle starts per day
    cycle_minutes: np.ndarray  # (A,) int64
    standby_kw: np.ndarray  # (A,)
    start_pmf: np.ndarray  # (A, 144) start-slot probabilities, rows sum to 1
    weekend_pmf: np.ndarray  # (A, 144) the same on a weekend day
    weekend_scale: np.ndarray  # (A,) weekend starts per weekday start
    monthly_factor: np.ndarray  # (A, 12) factor on starts_per_day per month
    at_most_one: np.ndarray  # (A,) bool: Bernoulli instead of Poisson start count
    phase_minutes: np.ndarray  # (A, P) int64, zero-padded
    phase_kw: np.ndarray  # (A, P) zero-padded

    @property
    def cycle_kwh(self) -> np.ndarray:
        r"""Energy of one cycle of each appliance.

        The energies of the cycle's phases summed, :math:`m_{a,p}` minutes at
        :math:`P_{a,p}` kW each; the data file keeps it equal to CREST's mean cycle power
        times cycle length (its header). drsim's definition, not numbered in the sources
        (docs/decisions.md, "Load model data and its sources"):

        .. math:: E_a = \sum_p m_{a,p} \cdot P_{a,p} / 60

        Returns
        -------
        numpy.ndarray
            (A,) cycle energy [kWh]; 0 for standby-only appliances.

        References
        ----------
        .. [1] I. Richardson, M. Thomson, D. Infield, C. Clifford, "Domestic electricity
           use: A high-resolution energy demand model", Energy and Buildings 42(10),
           1878-1887, 2010.

        Examples
        --------
        >>> cat = load_catalogue()
        >>> i = cat.index("washing_machine")  # 15 min at 2 kW, 93 at 0.12, 30 at 0.4956
        >>> round(float(cat.cycle_kwh[i]), 4)
        0.9338
        """
        return (self.phase_minutes * self.phase_kw).sum(axis=1) / 60.0

    @property
    def daily_kwh(self) -> np.ndarray:
        r"""Mean daily energy of an owned appliance.

        Mean starts per day :math:`n_a` times the cycle energy :math:`E_a`
        (:attr:`cycle_kwh`) plus 24 h of standby power :math:`P^{sb}_a`; the data file's
        ``daily_kwh`` ranges are checked against it. drsim's definition, not numbered in
        the sources (docs/decisions.md, "Load model data and its sources"):

        .. math:: E^{day}_a = n_a \cdot E_a + 24 \cdot P^{sb}_a

        Returns
        -------
        numpy.ndarray
            (A,) mean daily energy [kWh/day].

        References
        ----------
        .. [1] I. Richardson, M. Thomson, D. Infield, C. Clifford, "Domestic electricity
           use: A high-resolution energy demand model", Energy and Buildings 42(10),
           1878-1887, 2010.

        Examples
        --------
        >>> cat = load_catalogue()
        >>> i = cat.index("washing_machine")  # 0.53673 starts/day, 0.001 kW standby
        >>> round(float(cat.daily_kwh[i]), 4)  # 0.53673 · 0.9338 + 24 · 0.001
        0.5252
        """
        return self.starts_per_day * self.cycle_kwh + 24.0 * self.standby_kw

    @cached_property
    def phase_count(self) -> np.ndarray:
        """Number of phases of each appliance's cycle, (A,) int."""
        return (self.phase_minutes > 0).sum(axis=1)

    @cached_property
    def phase_micro_kw(self) -> np.ndarray:
        """Phase power above standby in whole µkW, (A, P) float64.

        These are the weights the load is summed in (exact in float64); entries beyond an
        appliance's :attr:`phase_count` are padding.
        """
        return np.round((self.phase_kw - self.standby_kw[:, None]) * MICRO)

    def index(self, name: str) -> int:
        """Return the position of appliance ``name`` in the catalogue.

        Parameters
        ----------
        name : str
            Snake-case appliance id.

        Returns
        -------
        int
            Index into the catalogue's arrays.

        Raises
        ------
        KeyError
            For an unknown name; the message lists the known names.
        """
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(
                f"unknown appliance {name!r}; known: {', '.join(self.names)}"
            ) from None


def load_catalogue(ref: str = "default", base_dir: Path | None = None) -> Catalogue:
    """Load and validate a catalogue.

    Parameters
    ----------
    ref : str, default "default"
        ``"default"`` is the packaged ``drsim/data/appliances.yaml`` (cached, since every
        Spark task loads it); any other value is a path to a file of the same schema.
    base_dir : pathlib.Path, optional
        Folder a relative ``ref`` is read from (the scenario file's folder).

    Returns
    -------
    Catalogue
        The catalogue, read-only arrays over its appliances.

    Raises
    ------
    CatalogueError
        If the file cannot be read or fails validation; the message names the file, the
        appliance, the field and the accepted values.
    """
    if ref == "default":
        return _default_catalogue()
    path = Path(ref)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogueError(f"{path}: cannot read the appliance catalogue ({exc})") from exc
    return _parse(text, str(path))


@lru_cache(maxsize=1)
def _default_catalogue() -> Catalogue:
    res = resources.files("drsim").joinpath("data", "appliances.yaml")
    return _parse(res.read_text(encoding="utf-8"), "drsim/data/appliances.yaml")


# --------------------------------------------------------------------------- validation
class _Checker:
    def __init__(self, file: str):
        self.file = file

    def fail(self, where: str, field: str, problem: str, accepted: str) -> CatalogueError:
        return CatalogueError(
            f"{self.file}: {where}, field '{field}': {problem}; accepted: {accepted}"
        )

    def number(self, where: str, field: str, value: Any, lo: float = 0.0,
               hi: float = math.inf) -> float:
        accepted = f"a number in [{lo:g}, {hi:g}]"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(where, field, f"{value!r} is not a number", accepted)
        x = float(value)
        if not math.isfinite(x) or x < lo or x > hi:
            raise self.fail(where, field, f"{value!r} is out of range", accepted)
        return x

    def integer(self, where: str, field: str, value: Any, lo: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < lo:
            raise self.fail(where, field, f"{value!r} is not an integer >= {lo}",
                            f"an integer >= {lo}")
        return value

    def choice(self, where: str, field: str, value: Any, options) -> str:
        if value not in options:
            raise self.fail(where, field, f"unknown value {value!r}", ", ".join(options))
        return value


def _parse(text: str, file: str) -> Catalogue:
    ck = _Checker(file)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogueError(f"{file}: not valid YAML ({exc})") from exc
    if not isinstance(doc, dict) or not {"sources", "start_profiles", "appliances"} <= doc.keys():
        raise ck.fail("top level", "sources/start_profiles/appliances", "missing section",
                      "a mapping with sections sources, start_profiles, appliances")
    sources = doc["sources"]
    if not isinstance(sources, dict) or not sources:
        raise ck.fail("top level", "sources", "not a mapping", "a mapping id -> citation")

    profiles = _profiles(ck, doc["start_profiles"], sources)
    factors = _monthly_factors(ck, doc.get("monthly_factors", {}), sources)
    entries = doc["appliances"]
    if not isinstance(entries, list) or not entries:
        raise ck.fail("top level", "appliances", "not a list", "a non-empty list of appliances")

    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        rows.append(_appliance(ck, i, entry, profiles, factors, sources, seen))

    n, p = len(rows), max(1, max(len(r["phases"]) for r in rows))
    phase_minutes = np.zeros((n, p), dtype=np.int64)
    phase_kw = np.zeros((n, p), dtype=np.float64)
    for i, r in enumerate(rows):
        for j, (m, kw) in enumerate(r["phases"]):
            phase_minutes[i, j], phase_kw[i, j] = m, kw
    weekday = np.array([profiles[r["start_profile"]][0] for r in rows]).reshape(n, SLOTS)
    weekend = np.array([profiles[r["start_profile"]][1] for r in rows]).reshape(n, SLOTS)

    arrays = dict(
        category=np.array([r["category"] for r in rows], dtype=object),
        flexibility=np.array([FLEXIBILITY[r["flexibility"]] for r in rows], dtype=np.int8),
        ownership=np.array([r["ownership"] for r in rows], dtype=np.float64),
        always_owned=np.array([r["always_owned"] for r in rows], dtype=bool),
        drawn=np.array([r["drawn"] for r in rows], dtype=bool),
        starts_per_day=np.array([r["starts_per_day"] for r in rows], dtype=np.float64),
        cycle_minutes=np.array([r["cycle_minutes"] for r in rows], dtype=np.int64),
        standby_kw=np.array([r["standby_kw"] for r in rows], dtype=np.float64),
        start_pmf=weekday / weekday.sum(axis=1, keepdims=True),
        weekend_pmf=weekend / weekend.sum(axis=1, keepdims=True),
        weekend_scale=weekend.sum(axis=1) / weekday.sum(axis=1),
        monthly_factor=np.array([factors.get(r["monthly_factor"], np.ones(12)) for r in rows],
                                dtype=np.float64).reshape(n, 12),
        at_most_one=np.array([r["start_count"] == "at_most_one" for r in rows], dtype=bool),
        phase_minutes=phase_minutes,
        phase_kw=phase_kw,
    )
    for a in arrays.values():
        a.flags.writeable = False
    return Catalogue(
        names=tuple(r["name"] for r in rows), labels=tuple(r["label"] for r in rows), **arrays
    )


def _profiles(ck: _Checker, raw: Any, sources: dict) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each profile's (weekday, weekend) weights, in the file's units (weekend: optional)."""
    if not isinstance(raw, dict) or not raw:
        raise ck.fail("top level", "start_profiles", "not a mapping",
                      "a mapping name -> {source, note, values, weekend (optional)}")
    out = {}
    for key, prof in raw.items():
        where = f"start profile '{key}'"
        if not isinstance(prof, dict) or "values" not in prof:
            raise ck.fail(where, "values", "missing", f"a list of {SLOTS} non-negative numbers")
        if "source" in prof:
            ck.choice(where, "source", prof["source"], list(sources))
        weekday = _weights(ck, where, "values", prof["values"])
        weekend = _weights(ck, where, "weekend", prof.get("weekend", prof["values"]))
        out[key] = (weekday, weekend)
    return out


def _weights(ck: _Checker, where: str, field: str, values: Any) -> np.ndarray:
    if not isinstance(values, list) or len(values) != SLOTS:
        got = len(values) if isinstance(values, list) else type(values).__name__
        raise ck.fail(where, field, f"{got} values",
                      f"a list of {SLOTS} non-negative numbers (ten-minute slots from 00:00)")
    v = np.array([ck.number(where, f"{field}[{i}]", x) for i, x in enumerate(values)])
    if v.sum() <= 0:
        raise ck.fail(where, field, "all zero", "at least one positive weight")
    return v


def _monthly_factors(ck: _Checker, raw: Any, sources: dict) -> dict[str, np.ndarray]:
    if not isinstance(raw, dict):
        raise ck.fail("top level", "monthly_factors", "not a mapping",
                      "a mapping name -> {source, note, values: 12 numbers}")
    out = {}
    for key, entry in raw.items():
        where = f"monthly factor '{key}'"
        if not isinstance(entry, dict) or "values" not in entry or "source" not in entry:
            raise ck.fail(where, "values", "missing", "a mapping with source and values")
        ck.choice(where, "source", entry["source"], list(sources))
        values = entry["values"]
        if not isinstance(values, list) or len(values) != 12:
            raise ck.fail(where, "values", f"{values!r}",
                          "a list of 12 non-negative numbers, January first")
        out[key] = np.array([ck.number(where, f"values[{i}]", x) for i, x in enumerate(values)])
    return out


def _appliance(ck: _Checker, i: int, e: Any, profiles: dict, factors: dict, sources: dict,
               seen: set[str]) -> dict[str, Any]:
    if not isinstance(e, dict):
        raise ck.fail(f"appliance #{i}", "(entry)", "not a mapping", "a mapping of fields")
    name = e.get("name")
    where = f"appliance '{name}'" if name is not None else f"appliance #{i}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise ck.fail(where, "name", f"{name!r} is not snake_case", "a snake_case identifier")
    if name in seen:
        raise ck.fail(where, "name", "duplicate name", "a name not used by another appliance")
    seen.add(name)
    for field in _REQUIRED:
        if field not in e:
            raise ck.fail(where, field, "missing", "required fields " + ", ".join(_REQUIRED))
    for field in e:
        if field not in _REQUIRED and field not in _OPTIONAL:
            raise ck.fail(where, field, "unknown field", ", ".join(_REQUIRED + _OPTIONAL))

    r: dict[str, Any] = {"name": name, "label": str(e["label"])}
    r["category"] = ck.choice(where, "category", e["category"], CATEGORIES)
    r["flexibility"] = ck.choice(where, "flexibility", e["flexibility"], list(FLEXIBILITY))
    r["ownership"] = ck.number(where, "ownership", e["ownership"], 0.0, 1.0)
    if not isinstance(e["always_owned"], bool):
        raise ck.fail(where, "always_owned", f"{e['always_owned']!r}", "true or false")
    r["always_owned"] = e["always_owned"]
    r["drawn"] = e.get("drawn", not r["always_owned"])
    if not isinstance(r["drawn"], bool) or (r["drawn"] and r["always_owned"]):
        raise ck.fail(where, "drawn", f"{e.get('drawn')!r}",
                      "true or false (false for always_owned entries)")
    if r["always_owned"] and r["ownership"] != 1.0:
        raise ck.fail(where, "ownership", f"{r['ownership']:g} with always_owned true",
                      "1.0 when always_owned is true")
    r["starts_per_day"] = ck.number(where, "starts_per_day", e["starts_per_day"])
    r["cycle_minutes"] = ck.integer(where, "cycle_minutes", e["cycle_minutes"])
    r["standby_kw"] = ck.number(where, "standby_kw", e["standby_kw"])
    r["start_profile"] = ck.choice(where, "start_profile", e["start_profile"], list(profiles))
    r["monthly_factor"] = e.get("monthly_factor")
    if r["monthly_factor"] is not None:
        ck.choice(where, "monthly_factor", r["monthly_factor"], list(factors))
    r["start_count"] = ck.choice(where, "start_count", e.get("start_count", "poisson"),
                                 START_COUNTS)
    ck.choice(where, "source", e["source"], list(sources))
    if "phases_source" in e:
        ck.choice(where, "phases_source", e["phases_source"], list(sources))
    r["phases"] = _phases(ck, where, e["phases"], r)
    if "ranges" in e:
        _ranges(ck, where, e["ranges"])
    return r


def _phases(ck: _Checker, where: str, raw: Any, r: dict[str, Any]) -> list[tuple[int, float]]:
    accepted = "a list of [minutes, kW] pairs, minutes > 0, kW >= standby_kw"
    if not isinstance(raw, list):
        raise ck.fail(where, "phases", f"{raw!r} is not a list", accepted)
    phases = []
    for j, ph in enumerate(raw):
        if not isinstance(ph, list) or len(ph) != 2:
            raise ck.fail(where, f"phases[{j}]", f"{ph!r} is not a [minutes, kW] pair", accepted)
        m = ck.integer(where, f"phases[{j}] minutes", ph[0], lo=1)
        kw = ck.number(where, f"phases[{j}] kW", ph[1], lo=r["standby_kw"])
        phases.append((m, kw))
    total = sum(m for m, _ in phases)
    if total != r["cycle_minutes"]:
        raise ck.fail(where, "phases", f"phase minutes sum to {total}",
                      f"phases whose minutes sum to cycle_minutes = {r['cycle_minutes']}")
    if r["cycle_minutes"] == 0 and r["starts_per_day"] > 0:
        raise ck.fail(where, "starts_per_day", f"{r['starts_per_day']:g} with no cycle",
                      "0 for standby-only appliances (cycle_minutes 0)")
    return phases


def _ranges(ck: _Checker, where: str, raw: Any) -> None:
    if not isinstance(raw, dict):
        raise ck.fail(where, "ranges", "not a mapping", "a mapping field -> [low, high]")
    for key, rng in raw.items():
        ck.choice(where, "ranges", key, _RANGE_KEYS)
        if not isinstance(rng, list) or len(rng) != 2:
            raise ck.fail(where, f"ranges.{key}", f"{rng!r}", "a [low, high] pair")
        lo = ck.number(where, f"ranges.{key}", rng[0])
        hi = ck.number(where, f"ranges.{key}", rng[1])
        if lo > hi:
            raise ck.fail(where, f"ranges.{key}", f"low {lo:g} > high {hi:g}", "low <= high")
