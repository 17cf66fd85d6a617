"""Cited behaviour data of the load model: EV charging and DR follow-through.

The packaged files hold the numbers and their sources (dissertation §6.3.1;
docs/decisions.md, "Load model data and its sources" and "Follow-through per household"):

* ``drsim/data/ev.yaml``: EV penetration, battery capacity, charger power, charger
  efficiency, weekday sessions per day, start-of-charging time profile (144 ten-minute
  bins) and initial / final state of charge, after the My Electric Avenue and Electric
  Nation trials (Quirós-Tortós, Ochoa, Lees, ISGT LATAM 2015; Quirós-Tortós, Ochoa,
  Butler, IEEE PE Magazine 2018).
* ``drsim/data/follow_through.yaml``: the survey distribution of follow-through rates
  (Raman et al., PLOS ONE 2020; mean 0.45 as in the dissertation).

Every entry names its source ids; ``range`` / ``range_mean`` are the intervals the sources
support, and the loader checks the values against them. Probabilities must be
non-negative and sum to 1 within :data:`PROB_TOL`; they are normalised after the check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import yaml

__all__ = [
    "PROB_TOL",
    "PLUG_IN_BINS",
    "PLUG_IN_STEP_MIN",
    "BehaviourDataError",
    "Discrete",
    "EVData",
    "FollowThroughSurvey",
    "load_ev_data",
    "load_follow_through",
]

PROB_TOL = 1e-6
PLUG_IN_BINS = 144  # ten-minute bins of a day, from 00:00
PLUG_IN_STEP_MIN = 10

_PACKAGE = "drsim.data"
_EV_REF, _EV_FILE = "default", "ev.yaml"
_FT_REF, _FT_FILE = "survey", "follow_through.yaml"


class BehaviourDataError(ValueError):
    """A behaviour data file is missing or invalid.

    The message names the file, the key and what is accepted; ``file`` and ``key``
    are attributes too.
    """

    @classmethod
    def of(cls, file: str, key: str, problem: str, accepted: str) -> BehaviourDataError:
        """Build the error for ``key`` of ``file``.

        The message is the only argument (plain ``args``), so the error pickles and
        re-raises.

        Parameters
        ----------
        file : str
            The file (path or packaged label).
        key : str
            The dotted key of the file, or ``"<file>"`` for the file itself.
        problem : str
            What is wrong.
        accepted : str
            What would be accepted.

        Returns
        -------
        BehaviourDataError
            The error, with ``file`` and ``key`` set.

        Examples
        --------
        >>> str(BehaviourDataError.of("ev.yaml", "efficiency.value", "1.5",
        ...                           "a number in [0.83, 0.94]"))
        "ev.yaml: 'efficiency.value': 1.5 (accepted: a number in [0.83, 0.94])"
        """
        err = cls(f"{file}: '{key}': {problem} (accepted: {accepted})")
        err.file, err.key = file, key
        return err


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class Discrete:
    """A discrete distribution: ``values`` with probabilities ``probs``.

    Both are stored read-only as float arrays; ``probs`` must be non-negative and sum
    to 1 within :data:`PROB_TOL`, and is normalised after the check.

    Parameters
    ----------
    values : array_like
        The outcomes, finite.
    probs : array_like
        Their probabilities, same length [1].

    Raises
    ------
    ValueError
        If the lengths differ or are zero, a value is not finite, a probability is
        negative or the probabilities do not sum to 1.
    """

    values: np.ndarray
    probs: np.ndarray
    _cdf: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Check and normalise the distribution; store it read-only with its CDF."""
        v = np.array(self.values, dtype=float).ravel()
        p = np.array(self.probs, dtype=float).ravel()
        if v.size == 0 or v.shape != p.shape:
            raise ValueError(f"{v.size} values, {p.size} probs: need equal non-zero lengths")
        if not (np.isfinite(v).all() and np.isfinite(p).all()) or (p < 0).any():
            raise ValueError("values must be finite and probs finite and non-negative")
        total = p.sum()
        if abs(total - 1.0) > PROB_TOL:
            raise ValueError(f"probs sum to {total:.9g}, not 1 within {PROB_TOL:g}")
        p = p / total
        object.__setattr__(self, "values", _readonly(v))
        object.__setattr__(self, "probs", _readonly(p))
        object.__setattr__(self, "_cdf", _readonly(np.cumsum(p)))

    def mean(self) -> float:
        """Return the mean of the distribution, Σ values x probs.

        Returns
        -------
        float
            The mean, in the values' unit.

        Examples
        --------
        >>> Discrete([1, 2, 3], [0.5, 0.25, 0.25]).mean()
        1.75
        """
        return float(self.values @ self.probs)

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """Map uniforms in [0, 1) to values by the inverse CDF, vectorized.

        ``u`` in ``[F(v_{i-1}), F(v_i))`` maps to ``v_i``; values of probability 0 are never
        returned.

        Parameters
        ----------
        u : numpy.ndarray
            Uniforms in [0, 1), any shape [1].

        Returns
        -------
        numpy.ndarray
            The values, same shape.

        Raises
        ------
        ValueError
            If a uniform is outside [0, 1].

        Examples
        --------
        >>> Discrete([1, 2, 3], [0.5, 0.25, 0.25]).quantile(np.array([0.0, 0.49, 0.5, 0.99]))
        array([1., 1., 2., 3.])
        """
        u = np.asarray(u, dtype=float)
        if u.size and not (u.min() >= 0.0 and u.max() <= 1.0):
            raise ValueError("quantile() takes uniforms in [0, 1)")
        idx = np.searchsorted(self._cdf, u, side="right")
        return self.values[np.minimum(idx, self.values.size - 1)]


@dataclass(frozen=True, eq=False)
class EVData:
    """EV charging model data (``drsim/data/ev.yaml``).

    The grid energy of a session is ΔSoC x capacity / efficiency
    (:func:`drsim.household.ev.session_energy_kwh`).

    Parameters
    ----------
    penetration : float
        Share of the households that own an EV (§6.3.1: 22.48 %) [1].
    battery_kwh : Discrete
        Battery capacity [kWh].
    charger_kw : Discrete
        Home charger power [kW].
    efficiency : float
        Charger efficiency, grid to battery [1].
    sessions_per_day : Discrete
        Home charging sessions on a weekday [sessions].
    plug_in_pmf : numpy.ndarray
        (144,): ``plug_in_pmf[i]`` is the probability that a weekday session starts in
        minutes ``[10 i, 10 i + 10)`` since midnight [1].
    initial_soc, final_soc : Discrete
        State of charge at plug-in and at the end of charging, fractions of the
        capacity [1].
    """

    penetration: float
    battery_kwh: Discrete
    charger_kw: Discrete
    efficiency: float
    sessions_per_day: Discrete
    plug_in_pmf: np.ndarray
    initial_soc: Discrete
    final_soc: Discrete

    def mean_session_soc_gain(self) -> float:
        r"""Compute the mean state-of-charge gain of a charging session.

        The initial and final SoC are drawn independently, and a session with a final
        SoC not above the initial one charges nothing:

        .. math:: E[\max(SoC_{final} - SoC_{initial}, 0)]

        No equation in the source: drsim's consistency check of the EV data (the
        ``daily_grid_kwh_check`` of ``drsim/data/ev.yaml``).

        Returns
        -------
        float
            The mean gain, a fraction of the battery capacity [1].

        References
        ----------
        .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
           dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
        .. [2] J. Quirós-Tortós, L. F. Ochoa, T. Butler, "How electric vehicles and the
           grid work together: Lessons learned from one of the largest EV trials in the
           world", IEEE Power and Energy Magazine 16(6), 2018, pp. 64-76.

        Examples
        --------
        >>> round(load_ev_data().mean_session_soc_gain(), 4)
        0.4329
        """
        gain = np.maximum(self.final_soc.values[None, :] - self.initial_soc.values[:, None], 0.0)
        return float(self.initial_soc.probs @ gain @ self.final_soc.probs)

    def mean_daily_grid_kwh(self) -> float:
        r"""Compute the mean grid energy per EV and weekday.

        .. math:: \bar E = \bar n \cdot \overline{\Delta SoC} \cdot \bar C / \eta

        with n̄ the mean number of sessions per day, the mean SoC gain of a session
        (:meth:`mean_session_soc_gain`), C̄ the mean battery capacity and η the charger
        efficiency. No equation in the source: drsim's consistency check of the EV data,
        whose result must lie in the ``daily_grid_kwh_check`` range of
        ``drsim/data/ev.yaml`` (docs/model.md, "Calibration status").

        Returns
        -------
        float
            The mean energy drawn from the grid [kWh per EV and day].

        References
        ----------
        .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
           dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
        .. [2] J. Quirós-Tortós, L. F. Ochoa, T. Butler, "How electric vehicles and the
           grid work together: Lessons learned from one of the largest EV trials in the
           world", IEEE Power and Energy Magazine 16(6), 2018, pp. 64-76.

        Examples
        --------
        >>> round(load_ev_data().mean_daily_grid_kwh(), 2)
        8.95
        """
        return (
            self.sessions_per_day.mean() * self.mean_session_soc_gain()
            * self.battery_kwh.mean() / self.efficiency
        )


@dataclass(frozen=True, eq=False)
class FollowThroughSurvey:
    """Survey distribution of DR follow-through rates (``drsim/data/follow_through.yaml``).

    Each household's follow-through rate θ_o is a randomly chosen survey response
    (§6.3.1; docs/decisions.md, "Follow-through per household").

    Parameters
    ----------
    levels : Discrete
        The follow-through levels and the shares of the respondents [1].

    References
    ----------
    .. [1] B. Zhao, "State Management for Efficient Event Pattern Detection",
       dissertation, Humboldt-Universität zu Berlin, 2022, §6.3.1.
    .. [2] G. Raman, B. AlShebli, M. Waniek, T. Rahwan, J. C.-H. Peng, "How weaponizing
       disinformation can bring down a city's power grid", PLOS ONE 15(8), 2020,
       e0236517.
    """

    levels: Discrete

    def mean(self) -> float:
        """Return the mean follow-through rate of the survey, θ̄_o.

        Returns
        -------
        float
            The mean rate [1]; the packaged survey gives the dissertation's 0.45
            (§6.3.1).

        Examples
        --------
        >>> round(load_follow_through().mean(), 6)
        0.45
        """
        return self.levels.mean()


# ---------------------------------------------------------------------------- loading


def load_ev_data(ref: str = _EV_REF, base_dir: Path | None = None) -> EVData:
    """Load the EV charging data.

    Parameters
    ----------
    ref : str, default "default"
        ``"default"`` for the packaged ``ev.yaml`` (cached); otherwise the path of a file
        of the same schema.
    base_dir : pathlib.Path, optional
        The folder a relative ``ref`` is read from (the scenario file's).

    Returns
    -------
    EVData
        The checked data.

    Raises
    ------
    BehaviourDataError
        If the file is missing, not valid YAML, or a value is outside what its source
        supports.
    """
    if ref == _EV_REF:
        return _packaged_ev()
    path = _resolve(ref, base_dir, _EV_REF, _EV_FILE)
    return _parse_ev(_read(path.read_text(encoding="utf-8"), str(path)), str(path))


def load_follow_through(ref: str = _FT_REF, base_dir: Path | None = None) -> FollowThroughSurvey:
    """Load the follow-through survey distribution.

    Parameters
    ----------
    ref : str, default "survey"
        ``"survey"`` for the packaged ``follow_through.yaml`` (cached); otherwise the
        path of a file of the same schema.
    base_dir : pathlib.Path, optional
        The folder a relative ``ref`` is read from (the scenario file's).

    Returns
    -------
    FollowThroughSurvey
        The checked survey.

    Raises
    ------
    BehaviourDataError
        If the file is missing, not valid YAML, or its levels, shares or mean are invalid.
    """
    if ref == _FT_REF:
        return _packaged_follow_through()
    path = _resolve(ref, base_dir, _FT_REF, _FT_FILE)
    return _parse_follow_through(_read(path.read_text(encoding="utf-8"), str(path)), str(path))


@lru_cache(maxsize=1)
def _packaged_ev() -> EVData:
    label = f"{_PACKAGE}/{_EV_FILE}"
    return _parse_ev(_read(_packaged_text(_EV_FILE), label), label)


@lru_cache(maxsize=1)
def _packaged_follow_through() -> FollowThroughSurvey:
    label = f"{_PACKAGE}/{_FT_FILE}"
    return _parse_follow_through(_read(_packaged_text(_FT_FILE), label), label)


def _packaged_text(name: str) -> str:
    return resources.files(_PACKAGE).joinpath(name).read_text(encoding="utf-8")


def _resolve(ref: str, base_dir: Path | None, default_ref: str, default_file: str) -> Path:
    path = Path(ref)
    if base_dir is not None and not path.is_absolute():
        path = Path(base_dir) / path
    if not path.is_file():
        raise BehaviourDataError.of(
            str(path), "<file>", "no such file",
            f"'{default_ref}' (packaged {default_file}) or the path of a YAML file of its schema",
        )
    return path


def _read(text: str, label: str) -> dict:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BehaviourDataError.of(label, "<file>", f"not valid YAML ({exc})", "YAML") from exc
    if not isinstance(doc, Mapping):
        raise BehaviourDataError.of(label, "<file>", "top level is not a mapping", "a YAML mapping")
    return dict(doc)


class _Checker:
    """Validation helpers that raise :class:`BehaviourDataError` naming file and key."""

    def __init__(self, doc: dict, label: str):
        self.doc, self.label = doc, label
        self.sources = self._sources()

    def fail(self, key: str, problem: str, accepted: str) -> BehaviourDataError:
        return BehaviourDataError.of(self.label, key, problem, accepted)

    def _sources(self) -> dict:
        src = self.doc.get("sources")
        if not isinstance(src, Mapping) or not src:
            raise self.fail("sources", "missing or empty", "a mapping of source id to citation")
        for k, v in src.items():
            if not isinstance(v, str) or not v.strip():
                raise self.fail(f"sources.{k}", "citation missing", "a non-empty string")
        return dict(src)

    def section(self, key: str) -> dict:
        sec = self.doc.get(key)
        if not isinstance(sec, Mapping):
            raise self.fail(key, "missing or not a mapping", "a mapping (see the packaged file)")
        self.cited(key, sec, "source", required=True)
        return dict(sec)

    def cited(self, key: str, sec: Mapping, field_name: str, required: bool) -> None:
        if field_name not in sec:
            if required:
                raise self.fail(f"{key}.{field_name}", "missing", "a source id or a list of them")
            return
        ids = sec[field_name]
        ids = [ids] if isinstance(ids, str) else ids
        if not isinstance(ids, list) or not ids:
            raise self.fail(f"{key}.{field_name}", f"{ids!r}", "a source id or a list of them")
        for i in ids:
            if i not in self.sources:
                raise self.fail(
                    f"{key}.{field_name}", f"unknown source id {i!r}",
                    f"ids under 'sources': {sorted(self.sources)}",
                )

    def number(self, key: str, sec: Mapping, name: str) -> float:
        x = sec.get(name)
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not np.isfinite(x):
            raise self.fail(f"{key}.{name}", f"{x!r}", "a finite number")
        return float(x)

    def numbers(self, key: str, sec: Mapping, name: str, length: int | None = None) -> np.ndarray:
        xs = sec.get(name)
        ok = isinstance(xs, list) and xs and all(
            not isinstance(x, bool) and isinstance(x, (int, float)) and np.isfinite(x) for x in xs
        )
        if not ok:
            raise self.fail(f"{key}.{name}", "missing or not a list of numbers",
                            "a non-empty list of finite numbers")
        if length is not None and len(xs) != length:
            raise self.fail(f"{key}.{name}", f"{len(xs)} entries", f"exactly {length} entries")
        return np.array(xs, dtype=float)

    def interval(self, key: str, sec: Mapping, name: str, required: bool) -> tuple | None:
        if name not in sec and not required:
            return None
        lo_hi = self.numbers(key, sec, name, length=2)
        if lo_hi[0] > lo_hi[1]:
            raise self.fail(f"{key}.{name}", f"{lo_hi.tolist()}", "[lo, hi] with lo <= hi")
        return float(lo_hi[0]), float(lo_hi[1])

    def within(self, key: str, x: float | np.ndarray, lo: float, hi: float, what: str) -> None:
        x = np.atleast_1d(x)
        bad = x[(x < lo) | (x > hi)]
        if bad.size:
            raise self.fail(key, f"{what} {bad.tolist()} outside [{lo:g}, {hi:g}]",
                            f"{what} in [{lo:g}, {hi:g}]")

    def discrete(
        self, key: str, probs_name: str = "probs", values_name: str = "values",
        bounds: tuple = (-np.inf, np.inf), integer: bool = False,
        range_name: str | None = None, mean_name: str | None = None,
        mean_required: bool = True,
    ) -> Discrete:
        sec = self.section(key)
        v = self.numbers(key, sec, values_name)
        p = self.numbers(key, sec, probs_name, length=len(v))
        self.within(f"{key}.{values_name}", v, *bounds, "values")
        if integer and (v != np.round(v)).any():
            raise self.fail(f"{key}.{values_name}", f"{v.tolist()}", "integers")
        if (p < 0).any():
            raise self.fail(f"{key}.{probs_name}", "negative probability", "probabilities >= 0")
        if abs(p.sum() - 1.0) > PROB_TOL:
            raise self.fail(f"{key}.{probs_name}", f"sum to {p.sum():.9g}",
                            f"probabilities summing to 1 within {PROB_TOL:g}")
        dist = Discrete(v, p)
        if range_name is not None:
            lo, hi = self.interval(key, sec, range_name, required=True)
            self.within(f"{key}.{values_name}", v, lo, hi, f"values (cited {range_name})")
        if mean_name is not None:
            iv = self.interval(key, sec, mean_name, required=mean_required)
            if iv is not None:
                self.within(f"{key}.{mean_name}", dist.mean(), *iv, "mean of values x probs")
        return dist


def _parse_ev(doc: dict, label: str) -> EVData:
    c = _Checker(doc, label)
    pen = c.section("penetration")
    penetration = c.number("penetration", pen, "value")
    c.within("penetration.value", penetration, 0.0, 1.0, "value")

    battery = c.discrete("battery_kwh", bounds=(1e-9, np.inf), range_name="range",
                         mean_name="range_mean", mean_required=False)
    charger = c.discrete("charger_kw", bounds=(1e-9, np.inf), range_name="range")

    eff = c.section("efficiency")
    efficiency = c.number("efficiency", eff, "value")
    c.within("efficiency.value", efficiency, 1e-9, 1.0, "value")
    c.within("efficiency.value", efficiency, *c.interval("efficiency", eff, "range", True),
             "value (cited range)")

    sessions = c.discrete("sessions_per_day", bounds=(0, np.inf), integer=True,
                          mean_name="range_mean")

    prof = c.section("plug_in_profile")
    w = c.numbers("plug_in_profile", prof, "values", length=PLUG_IN_BINS)
    if (w < 0).any() or w.sum() <= 0:
        raise c.fail("plug_in_profile.values", "negative weights or all zero",
                     "non-negative relative weights with a positive sum")

    initial = c.discrete("initial_soc", bounds=(0.0, 1.0), mean_name="range_mean")
    final = c.discrete("final_soc", bounds=(0.0, 1.0), mean_name="range_mean")
    if not final.mean() > initial.mean():
        raise c.fail("final_soc", f"mean {final.mean():.4f} <= initial_soc mean "
                     f"{initial.mean():.4f}", "final_soc mean above initial_soc mean")

    data = EVData(
        penetration=penetration, battery_kwh=battery, charger_kw=charger,
        efficiency=efficiency, sessions_per_day=sessions,
        plug_in_pmf=_readonly(w / w.sum()), initial_soc=initial, final_soc=final,
    )
    if "daily_grid_kwh_check" in doc:
        chk = c.section("daily_grid_kwh_check")
        lo, hi = c.interval("daily_grid_kwh_check", chk, "range", required=True)
        c.within("daily_grid_kwh_check.range", data.mean_daily_grid_kwh(), lo, hi,
                 "implied mean daily grid energy (kWh)")
    return data


def _parse_follow_through(doc: dict, label: str) -> FollowThroughSurvey:
    c = _Checker(doc, label)
    levels = c.discrete("survey", probs_name="shares", values_name="levels", bounds=(0.0, 1.0))
    sec = c.section("survey")
    c.cited("survey", sec, "mean_source", required=False)
    mean = c.number("survey", sec, "mean")
    if abs(levels.mean() - mean) > PROB_TOL:
        raise c.fail("survey.mean", f"{mean:g} but the shares give {levels.mean():.9g}",
                     f"the mean of levels x shares within {PROB_TOL:g}")
    return FollowThroughSurvey(levels=levels)
