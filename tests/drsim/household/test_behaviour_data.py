"""Cited EV and follow-through data (drsim/data/ev.yaml, follow_through.yaml) and their loader."""

from __future__ import annotations

import copy
from importlib import resources

import numpy as np
import pytest
import yaml

from drsim.household.behaviour_data import (
    PLUG_IN_BINS,
    BehaviourDataError,
    Discrete,
    load_ev_data,
    load_follow_through,
)

DISCRETE_EV = ["battery_kwh", "charger_kw", "sessions_per_day", "initial_soc", "final_soc"]


def _raw(name: str) -> dict:
    return yaml.safe_load(resources.files("drsim.data").joinpath(name).read_text("utf-8"))


@pytest.fixture(scope="module")
def ev_raw() -> dict:
    return _raw("ev.yaml")


@pytest.fixture(scope="module")
def ft_raw() -> dict:
    return _raw("follow_through.yaml")


def _ids(entry) -> list:
    return [entry] if isinstance(entry, str) else list(entry)


def _mean(sec: dict, values="values", probs="probs") -> float:
    return float(np.dot(sec[values], sec[probs]) / np.sum(sec[probs]))


# ------------------------------------------------------------------ packaged data and sources


def test_every_source_id_exists(ev_raw, ft_raw):
    for doc in (ev_raw, ft_raw):
        sources = doc["sources"]
        assert all(isinstance(v, str) and len(v) > 20 for v in sources.values())
        for key, sec in doc.items():
            if key == "sources":
                continue
            assert "source" in sec, key
            for field in ("source", "mean_source"):
                for i in _ids(sec.get(field, [])):
                    assert i in sources, (key, field, i)


def test_ev_values_and_means_inside_cited_ranges(ev_raw):
    ev = load_ev_data()
    assert ev.penetration == pytest.approx(0.2248)
    lo, hi = ev_raw["efficiency"]["range"]
    assert lo <= ev.efficiency <= hi
    for key in DISCRETE_EV:
        sec = ev_raw[key]
        dist = getattr(ev, key)
        np.testing.assert_allclose(dist.values, sec["values"])
        assert len(sec["values"]) == len(sec["probs"])
        if "range" in sec:
            lo, hi = sec["range"]
            assert lo <= dist.values.min() and dist.values.max() <= hi, key
        if "range_mean" in sec:
            lo, hi = sec["range_mean"]
            assert lo <= dist.mean() <= hi, key
            assert lo <= _mean(sec) <= hi, key
    assert ev.final_soc.mean() > ev.initial_soc.mean()
    assert set(ev.sessions_per_day.values) <= {0, 1, 2, 3}


def test_mean_daily_grid_energy_inside_cited_check(ev_raw):
    ev = load_ev_data()
    lo, hi = ev_raw["daily_grid_kwh_check"]["range"]
    daily = ev.mean_daily_grid_kwh()
    assert lo <= daily <= hi
    # sessions x E[max(final - initial, 0)] x capacity / efficiency, by brute force
    soc0, soc1 = np.meshgrid(ev.initial_soc.values, ev.final_soc.values, indexing="ij")
    w = np.outer(ev.initial_soc.probs, ev.final_soc.probs)
    gain = float((w * np.maximum(soc1 - soc0, 0)).sum())
    expect = ev.sessions_per_day.mean() * gain * ev.battery_kwh.mean() / ev.efficiency
    assert daily == pytest.approx(expect)
    assert daily == pytest.approx(8.95, abs=0.01)


def test_follow_through_mean_is_the_sources(ft_raw):
    survey = load_follow_through()
    assert abs(survey.mean() - 0.45) <= 1e-9
    assert ft_raw["survey"]["mean"] == 0.45
    np.testing.assert_allclose(survey.levels.values, [0.0, 0.25, 0.5, 0.75, 1.0])
    assert survey.levels.probs.sum() == pytest.approx(1.0, abs=1e-12)


def test_plug_in_profile_peaks_in_the_evening():
    pmf = load_ev_data().plug_in_pmf
    assert pmf.shape == (PLUG_IN_BINS,)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12) and (pmf >= 0).all()
    hour = np.arange(PLUG_IN_BINS) / 6
    evening, night = pmf[(hour >= 16) & (hour < 21)].sum(), pmf[hour < 6].sum()
    assert evening > night
    assert evening > 0.3 and 16 <= hour[np.argmax(pmf)] < 21


def test_packaged_data_is_cached_and_read_only():
    ev = load_ev_data()
    assert ev is load_ev_data() and load_follow_through() is load_follow_through()
    for arr in (ev.plug_in_pmf, ev.battery_kwh.values, ev.battery_kwh.probs):
        with pytest.raises(ValueError):
            arr[0] = 0.0


# ------------------------------------------------------------------------------ quantile


def _all_distributions():
    ev = load_ev_data()
    return {k: getattr(ev, k) for k in DISCRETE_EV} | {"survey": load_follow_through().levels}


@pytest.mark.parametrize("name", [*DISCRETE_EV, "survey"])
def test_quantile_reproduces_probabilities(name):
    dist = _all_distributions()[name]
    n = 400_000
    u = np.random.default_rng(20220301).random(n)
    draws = dist.quantile(u)
    assert draws.shape == u.shape and np.isin(draws, dist.values).all()
    freq = np.array([(draws == v).sum() for v in dist.values]) / n
    # binomial bound: 5 standard deviations of each frequency (plus rounding slack)
    bound = 5 * np.sqrt(dist.probs * (1 - dist.probs) / n) + 1e-12
    assert (np.abs(freq - dist.probs) <= bound).all(), (freq, dist.probs)


def test_quantile_is_the_inverse_cdf():
    d = Discrete(np.array([1.0, 2.0, 5.0, 7.0]), np.array([0.25, 0.0, 0.5, 0.25]))
    u = np.array([0.0, 0.2499, 0.25, 0.7499, 0.75, 0.999999])
    np.testing.assert_array_equal(d.quantile(u), [1, 1, 5, 5, 7, 7])
    assert d.quantile(np.zeros((2, 3))).shape == (2, 3)
    assert d.mean() == pytest.approx(0.25 + 2.5 + 1.75)
    with pytest.raises(ValueError):
        d.quantile(np.array([1.5]))
    with pytest.raises(ValueError):
        Discrete(np.array([1.0, 2.0]), np.array([0.5, 0.4]))


# ------------------------------------------------------------------------------ bad files


def _set(doc: dict, path: str, value) -> dict:
    doc = copy.deepcopy(doc)
    *head, last = path.split(".")
    node = doc
    for k in head:
        node = node[k]
    node[last] = value
    return doc


EV_BAD = [
    ("battery_kwh.probs", [0.1, 0.25, 0.4, 0.2], "battery_kwh.probs"),
    ("charger_kw.probs", [1.2, -0.2], "charger_kw.probs"),
    ("battery_kwh.probs", [0.5, 0.5], "battery_kwh.probs"),
    ("charger_kw.values", [3.6, 22.0], "charger_kw.values"),
    ("efficiency.value", 0.99, "efficiency.value"),
    ("penetration.value", 1.5, "penetration.value"),
    ("sessions_per_day.values", [0, 1, 2, 2.5], "sessions_per_day.values"),
    ("sessions_per_day.probs", [0.7, 0.2, 0.05, 0.0], "sessions_per_day.probs"),
    ("plug_in_profile.values", [1.0] * 143, "plug_in_profile.values"),
    ("initial_soc.probs", [0.0] * 12 + [1.0], "initial_soc.range_mean"),
    ("final_soc.range_mean", [0.5, 0.4], "final_soc.range_mean"),
    ("initial_soc.source", ["quirostortos2015", "nobody2099"], "initial_soc.source"),
    ("battery_kwh", [24, 40], "battery_kwh"),
]


@pytest.mark.parametrize(("path", "value", "key"), EV_BAD)
def test_bad_ev_file_names_file_and_key(tmp_path, ev_raw, path, value, key):
    (tmp_path / "bad_ev.yaml").write_text(yaml.safe_dump(_set(ev_raw, path, value)), "utf-8")
    with pytest.raises(BehaviourDataError) as err:
        load_ev_data("bad_ev.yaml", tmp_path)
    assert err.value.key == key
    assert "bad_ev.yaml" in str(err.value) and f"'{key}'" in str(err.value)
    assert "accepted:" in str(err.value)


def test_final_soc_must_exceed_initial_soc(tmp_path, ev_raw):
    doc = _set(_set(ev_raw, "final_soc.values", [0.1] * 12), "final_soc.range_mean", [0, 1])
    (tmp_path / "ev.yaml").write_text(yaml.safe_dump(doc), "utf-8")
    with pytest.raises(BehaviourDataError, match="initial_soc mean") as err:
        load_ev_data("ev.yaml", tmp_path)
    assert err.value.key == "final_soc"


def test_implied_daily_energy_outside_check_is_rejected(tmp_path, ev_raw):
    doc = _set(ev_raw, "daily_grid_kwh_check.range", [10.0, 12.0])
    (tmp_path / "ev.yaml").write_text(yaml.safe_dump(doc), "utf-8")
    with pytest.raises(BehaviourDataError) as err:
        load_ev_data("ev.yaml", tmp_path)
    assert err.value.key == "daily_grid_kwh_check.range"


FT_BAD = [
    ("survey.mean", 0.5, "survey.mean"),
    ("survey.shares", [0.2, 0.2, 0.2, 0.2], "survey.shares"),
    ("survey.levels", [0.0, 0.25, 0.5, 0.75, 1.5], "survey.levels"),
    ("survey.source", "raman2021", "survey.source"),
    ("sources", {}, "sources"),
]


@pytest.mark.parametrize(("path", "value", "key"), FT_BAD)
def test_bad_follow_through_file_names_file_and_key(tmp_path, ft_raw, path, value, key):
    (tmp_path / "ft.yaml").write_text(yaml.safe_dump(_set(ft_raw, path, value)), "utf-8")
    with pytest.raises(BehaviourDataError) as err:
        load_follow_through("ft.yaml", tmp_path)
    assert err.value.key == key and "ft.yaml" in str(err.value)


def test_missing_and_unparsable_files(tmp_path):
    with pytest.raises(BehaviourDataError, match="no such file"):
        load_ev_data("nope.yaml", tmp_path)
    (tmp_path / "broken.yaml").write_text("survey: [1, 2\n", "utf-8")
    with pytest.raises(BehaviourDataError, match="broken.yaml"):
        load_follow_through("broken.yaml", tmp_path)


def test_custom_file_probs_within_tolerance_are_normalised(tmp_path, ev_raw):
    doc = _set(ev_raw, "charger_kw.probs", [0.2, 0.8000005])
    (tmp_path / "ev2.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True), "utf-8")
    ev = load_ev_data("ev2.yaml", tmp_path)
    assert ev.charger_kw.probs.sum() == pytest.approx(1.0, abs=1e-15)
    assert ev is not load_ev_data()
