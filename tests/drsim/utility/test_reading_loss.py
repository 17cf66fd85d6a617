"""Lost meter readings (drsim.utility.readings; docs/decisions.md, "Lost meter readings"): the loss
draws, the approximate meter query on hand-computed households, silent meters, the
threshold's replicas, bad settings, and the summary of a small run."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import drsim
from drsim.cli import app
from drsim.scenario import ReadingLoss, ScenarioError, load_scenario, scenario_from_dict
from drsim.scenario.library import LIBRARY
from drsim.utility.monitoring import NOT_LATCHED, MonitoringPlan, meter_tier
from drsim.utility.reading_slots import reading_minutes
from drsim.utility.readings import lost_readings, silence

# 18:30-20:30, first test 18:50, δ = 5, m = 3 everywhere (tests/drsim/utility/test_monitoring.py)
FIELDS = (1110, 1230, 1130, 5, 3, 3, 3, 0.5, 0.4, 1, 15, 2)
T = {f"{h}:{m:02d}": h * 60 + m for h in (18, 19, 20) for m in range(0, 60, 5)}


def plan(k: int = 0) -> MonitoringPlan:
    return MonitoringPlan(*FIELDS, max_missing=k)


def house(pattern: str, k: int) -> tuple[list[int], list[int]]:
    """One household's user events (times, missing) for a pattern of its test slots:
    F a failed test, P a passing one, L a lost reading (the rest of the tests fail)."""
    p = plan(k)
    tests = len(p.test_times)
    pattern = pattern.ljust(tests, "F")
    fail = np.array([c != "P" for c in pattern])
    lost = np.array([[c == "L" for c in pattern]])
    lam = np.arange(1, tests + 1, dtype=float)[None, :]
    acc = lam + np.where(fail, 0.5, -0.5)
    m = meter_tier(p, np.array([7]), 0, acc, lam, lost=lost)
    return m.events["time"].tolist(), m.events["missing"].tolist()


# --------------------------------------------------------------------------- the draws
def test_losses_are_the_same_for_any_chunking_and_every_call():
    slots = reading_minutes(1110, 1230, 1)
    for loss in (ReadingLoss(rate=0.05), ReadingLoss(rate=0.05, burst_length=5),
                 ReadingLoss(rate=0.02, dark={"share": 0.1, "start": "19:30"})):
        whole = lost_readings(loss, 2021, np.arange(3000), slots)
        parts = [lost_readings(loss, 2021, np.arange(a, min(a + 700, 3000)), slots)
                 for a in range(0, 3000, 700)]
        assert np.array_equal(whole, np.concatenate(parts))
        assert np.array_equal(whole, lost_readings(loss, 2021, np.arange(3000), slots))
        assert not np.array_equal(whole, lost_readings(loss, 2022, np.arange(3000), slots))


def burst_lengths(lost: np.ndarray) -> np.ndarray:
    """Lengths of the runs of lost slots that start and end inside the rows."""
    padded = np.pad(lost.astype(np.int8), ((0, 0), (1, 1)))
    d = np.diff(padded, axis=1)
    starts, ends = np.nonzero(d == 1), np.nonzero(d == -1)
    length = ends[1] - starts[1]
    inside = (starts[1] > 0) & (ends[1] < lost.shape[1])
    return length[inside]


def test_gilbert_elliott_keeps_the_rate_and_the_mean_burst_length():
    """Long-run share r and mean burst length L (geometric: standard error ≈ L/√bursts),
    against independent losses at the same rate (mean burst 1/(1 − r))."""
    slots = np.arange(2000)
    bursts = lost_readings(ReadingLoss(rate=0.05, burst_length=5), 11, np.arange(2000), slots)
    assert bursts.mean() == pytest.approx(0.05, abs=0.003)
    lengths = burst_lengths(bursts)
    assert len(lengths) > 30_000
    assert lengths.mean() == pytest.approx(5.0, abs=0.1)
    alone = lost_readings(ReadingLoss(rate=0.05), 11, np.arange(2000), slots)
    assert alone.mean() == pytest.approx(0.05, abs=0.001)
    assert burst_lengths(alone).mean() == pytest.approx(1 / 0.95, abs=0.01)
    # successive slots: independent without bursts, correlated with them
    same = (alone[:, 1:] & alone[:, :-1]).mean() / alone.mean()
    assert same == pytest.approx(0.05, abs=0.003)
    assert (bursts[:, 1:] & bursts[:, :-1]).mean() / bursts.mean() == pytest.approx(
        0.8, abs=0.01)


def test_dark_meters_lose_everything_from_their_start():
    slots = reading_minutes(1110, 1230, 1)
    lost = lost_readings(ReadingLoss(rate=0.0, dark={"share": 0.2, "start": "19:30"}), 3,
                         np.arange(5000), slots)
    dark = lost.any(axis=1)
    assert dark.mean() == pytest.approx(0.2, abs=0.02)
    assert lost[dark][:, slots >= 1170].all() and not lost[:, slots < 1170].any()


# --------------------------------------------------------------------------- the meter query
def test_a_lost_reading_at_19_00_moves_the_first_user_event_only_without_ace():
    """The issue's example: a household failing every test from 18:50 is flagged at 19:05
    (m_user + 1 = 4 tests). Its 19:00 reading lost: exact matching breaks the run at the
    gap and starts again at 19:05, flagged at 19:20; with k = 1 the run holds the lost slot
    and fires at 19:05, as without loss, its event carrying missing = 1."""
    assert house("", 0) == ([*range(T["19:05"], 1230, 5)], [0] * 17)
    times, missing = house("FFL", 0)
    assert times[0] == T["19:20"] and set(missing) == {0}
    times, missing = house("FFL", 1)
    assert times[:4] == [T["19:05"], T["19:10"], T["19:15"], T["19:20"]]
    assert missing[:4] == [1, 1, 1, 0]  # 19:20: the run 19:05-19:20 misses nothing
    assert house("FFL", 2)[0][0] == T["19:05"]


def test_no_slot_is_inserted_before_the_first_or_after_the_last_real_reading():
    """A run begins and ends with real failed tests: 18:50 lost → flagged at 19:10, not
    19:05; 19:05 lost after three failures → nothing at 19:05, flagged at 19:10."""
    times, missing = house("L", 1)
    assert times[0] == T["19:10"] and missing[0] == 0
    times, missing = house("FFFL", 1)
    assert T["19:05"] not in times and times[0] == T["19:10"] and missing[0] == 1


def test_a_passing_test_always_breaks_a_run():
    times, _ = house("FLPFFF", 2)  # the lost slot cannot carry the run over the pass
    assert times[0] == T["19:20"]
    times, _ = house("FFPLFF", 2)
    assert times[0] == T["19:25"]


def test_at_most_k_lost_slots_in_a_run():
    assert house("FLLF", 1)[0][0] == T["19:20"]  # two lost: too many for k = 1
    times, missing = house("FLLF", 2)
    assert times[0] == T["19:05"] and missing[0] == 2


def test_silent_meters_are_counted_and_never_flagged():
    """Household 0 loses four test readings in a row from 19:10 (silent there, one report),
    household 1 three (not silent); both fail every test."""
    p = plan(1)
    tests = len(p.test_times)
    lost = np.zeros((2, tests), dtype=bool)
    lost[0, 4:8] = True
    lost[1, 4:7] = True
    lam = np.tile(np.arange(1, tests + 1, dtype=float), (2, 1))
    m = meter_tier(p, np.array([0, 1]), 0, lam + 0.5, lam, lost=lost)
    assert m.first_silent.tolist() == [p.test_times[7], NOT_LATCHED]
    assert m.silent_spells.sum() == 1 and m.silent_spells[7] == 1
    assert m.lost.tolist() == lost.sum(axis=0).tolist()
    flagged = m.events.groupby("houseID")["time"].apply(set)
    assert not flagged[0] & set(p.test_times[4:8].tolist())  # never flagged while silent
    assert m.fetches.tolist() == (2 - lost.sum(axis=0)).tolist()  # λ for real readings only
    first, spells = silence(lost, 4)
    assert first.tolist() == [7, -1] and spells.tolist() == m.silent_spells.tolist()


# --------------------------------------------------------------------------- bad settings
PAPER = LIBRARY / "paper_100k.yaml"


@pytest.mark.parametrize(("change", "where"), [
    ({"monitoring": {"max_missing": -1}}, "monitoring.max_missing"),
    ({"monitoring": {"max_missing": 1.5}}, "monitoring.max_missing"),
    ({"monitoring": {"max_missing": 3}}, "monitoring.max_missing"),
    ({"meters": {"reading_loss": {"rate": 1.0}}}, "meters.reading_loss.rate"),
    ({"meters": {"reading_loss": {"rate": -0.01}}}, "meters.reading_loss.rate"),
    ({"meters": {"reading_loss": {"rate": 0.05, "burst_length": 0.5}}},
     "meters.reading_loss.burst_length"),
    ({"meters": {"reading_loss": {"rate": 0.9, "burst_length": 2}}},
     "meters.reading_loss.burst_length"),
    ({"meters": {"reading_loss": {"rate": 0.05, "dark": {"share": 0.1, "start": "21:00"}}}},
     "meters.reading_loss.dark.start"),
])
def test_bad_loss_settings_give_one_line_naming_the_key(change, where):
    with open(PAPER) as f:
        data = yaml.safe_load(f)
    for block, values in change.items():
        data.setdefault(block, {}).update(copy.deepcopy(values))
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(data, source="x.yaml")
    text = str(err.value)
    assert len(text.splitlines()) == 1 and text.startswith(f"x.yaml: {where}:"), text


def test_the_cli_refuses_a_bad_k_and_writes_nothing(tmp_path):
    with open(PAPER) as f:
        data = yaml.safe_load(f)
    data["monitoring"]["max_missing"] = 5
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["run", str(bad), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "monitoring.max_missing" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists() and sorted(p.name for p in tmp_path.iterdir()) \
        == ["bad.yaml"]


# --------------------------------------------------------------------------- a whole run
def small(households: int = 400, chunk_size: int = 100, loss: dict | None = None,
          **monitoring):
    s = load_scenario("scenarios/quickstart.yaml").with_households(households)
    data = s.model_dump(mode="json", exclude={"source_path"})
    data["chunk_size"] = chunk_size
    data["monitoring"].update(gamma_user=0.01, **monitoring)
    if loss is not None:
        data["meters"] = {"reading_loss": loss}
    return scenario_from_dict(data)


@pytest.fixture(scope="module")
def lossy():
    """A small run that surely predicts, with 10 % of the readings lost in bursts of 3,
    some meters dark from 18:40, and k = 1; and the same households without loss."""
    loss = {"rate": 0.1, "burst_length": 3, "dark": {"share": 0.05, "start": "18:40"}}
    run = drsim.run(small(loss=loss, max_missing=1), backend="serial")
    free = drsim.run(small(), backend="serial")
    return run, free


def test_the_summary_reports_the_losses(lossy):
    run, free = lossy
    s, f = run.summary, free.summary
    mon = s["monitoring"]
    assert mon["max_missing"] == 1 and mon["reading_loss"]["burst_length"] == 3
    silent = mon["meters_silent"]
    assert set(silent["per_group"]) == {"north", "south", "east"}
    assert silent["total"] == sum(silent["per_group"].values()) > 0
    lost = mon["lost_readings"]
    assert 0.1 < lost["share_of_readings_lost"] < 0.25
    assert lost["test_readings_lost"] > 0
    assert set(lost["user_events_by_missing"]) == {"0", "1"}
    assert sum(lost["user_events_by_missing"].values()) == \
        s["cost"]["communication"]["user_events"]
    comm, comm_free = s["cost"]["communication"], f["cost"]["communication"]
    assert comm["silent_meter_events"] >= silent["total"] > 0
    assert comm_free["silent_meter_events"] == 0
    assert f["monitoring"]["meters_silent"] is None and f["monitoring"]["max_missing"] == 0
    # the loss does not change the utility's M&V estimates
    assert s["baseline"] == f["baseline"]
    deficit = s["deficit_at_prediction"]
    if deficit is not None:
        assert all(0 < n <= 134 for n in deficit["households_seen"])
        assert deficit["realised_reduction_all_readings_kwh"] is not None


def test_user_events_carry_their_missing_slots(lossy):
    run, _ = lossy
    events = run.tables["user_events"]
    assert {"missing"} <= set(events.columns)
    assert set(events["missing"].unique()) <= {0, 1}


def test_losses_are_the_same_for_any_chunk_size(lossy):
    run, _ = lossy
    loss = {"rate": 0.1, "burst_length": 3, "dark": {"share": 0.05, "start": "18:40"}}
    other = drsim.run(small(loss=loss, max_missing=1, chunk_size=67), backend="serial")
    for key in ("monitoring", "prediction", "deficit_at_prediction", "cost",
                "reduction_mwh"):
        assert other.summary[key] == run.summary[key], key


def test_a_loss_model_that_loses_nothing_is_the_loss_free_run(lossy):
    """rate 0 without dark meters: the loss-free run (no placeholder, the same engine),
    with zero losses reported."""
    _, free = lossy
    zero = drsim.run(small(loss={"rate": 0.0}, max_missing=1), backend="serial").summary
    f = free.summary
    for key in ("prediction", "cost", "reduction_mwh", "deficit_at_prediction", "incentive"):
        assert zero[key] == f[key], key
    mon = zero["monitoring"]
    assert mon["meters_silent"]["total"] == 0
    assert mon["lost_readings"]["readings_lost"] == 0
    assert mon["lost_readings"]["user_events_by_missing"] == {
        "0": f["cost"]["communication"]["user_events"]}


def test_the_sweeps_load_and_read_what_a_lossy_run_reports(lossy):
    from drsim.results.headline import run_table
    from drsim.results.summary_model import Summary
    from drsim.sweeps import get_metric, load_sweep
    from drsim.sweeps.stats import _MISSING

    run, _ = lossy
    for name, runs in (("reading_loss", 45), ("reading_loss_targets", 20)):
        sweep = load_sweep(f"scenarios/sweeps/{name}.yaml")
        assert len(sweep.runs()) == runs
        for metric in sweep.metrics:
            assert get_metric(run.summary, metric) is not _MISSING, metric
    _, rows = run_table(Summary.model_validate(run.summary))
    assert any(r[0].startswith("readings lost / meters silent (max_missing 1)") for r in rows)


@pytest.mark.slow  # a Spark run of a minute on 2 busy cores
def test_spark_gives_the_serial_summary_with_lost_readings(lossy, spark):
    """Losses, silent meters, the approximate query and the deficit from the households
    seen are the same on Spark (local[2], tasks in any order) as on the serial backend."""
    run, _ = lossy
    loss = {"rate": 0.1, "burst_length": 3, "dark": {"share": 0.05, "start": "18:40"}}
    on_spark = drsim.run(small(loss=loss, max_missing=1), backend="spark").summary
    for key in run.summary:
        if key not in ("backend", "timings", "resources"):
            assert on_spark[key] == run.summary[key], key
