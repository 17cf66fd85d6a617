"""The adaptive DR run folder (drsim.results.output.write_run_data) and its figures
(drsim.results.figures) on small synthetic runs."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from matplotlib.figure import Figure

from drsim.results import figures, output
from drsim.results.figures import MAX_GROUP_ROWS, plot_compliance_timeline, plot_run_demand
from drsim.results.folders import OutputExistsError, OutputRefusedError
from drsim.results.headline import run_table, simulate_table
from drsim.results.output import (
    event_table,
    json_safe,
    run_files,
    write_run_data,
)
from drsim.results.run_data import RunData
from drsim.results.summary_model import Summary
from drsim.units import DAY as MINUTES
from drsim.utility.threshold import Thresholds
from drsim.utility.threshold_policy import ExpectedShareThreshold

T_START, T_END = 18 * 60 + 30, 20 * 60 + 30
T_NC = 19 * 60 + 11
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_run(n_groups: int = 3, t_nc: int | None = T_NC, name: str = "synthetic") -> RunData:
    """A made-up run: smooth evening curves, deeper cuts for the DR passes, a few events."""
    rng = np.random.default_rng(7)
    minutes = np.arange(MINUTES)
    evening = np.exp(-(((minutes - 19 * 60) / 150.0) ** 2))
    size = 50.0 + 10.0 * np.arange(n_groups)[:, None]
    base = size * (0.4 + 1.1 * evening)[None, :]
    window = np.zeros(MINUTES)
    window[T_START:T_END] = 1.0
    after = np.zeros(MINUTES)
    after[T_END:T_END + 90] = 1.0
    dr2 = np.zeros(MINUTES)
    if t_nc is not None:
        dr2[t_nc + 10:T_END] = 1.0
    group_kw = {
        "baseline": base,
        "expected": base * (1 - 0.25 * window + 0.1 * after),
        "traditional": base * (1 - 0.15 * window + 0.06 * after),
        "adaptive": base * (1 - 0.15 * window - 0.12 * dr2 + 0.1 * after),
    }
    system = base.sum(axis=0)
    estimate_b = np.where(window > 0, system * 1.02, np.nan)
    estimate_p = np.where(window > 0, system * 0.78, np.nan)
    test_times = np.arange(T_START + 20, T_END, 5)
    ticks = np.arange(T_START + 20, T_END)
    flagged = {
        "expected": rng.uniform(0.0, 0.3, (n_groups, len(test_times))),
        "traditional": np.clip(rng.uniform(0.2, 0.5, (n_groups, len(test_times)))
                               + np.linspace(0, 0.4, len(test_times)), 0, 1),
    }
    latch = [T_NC - 3 if g % 3 != 1 else None for g in range(n_groups)]
    # tests stop once a group is latched, or at the prediction
    stop = [at if at is not None else t_nc if t_nc is not None else T_END - 1 for at in latch]
    alerts = [ticks[(ticks >= T_NC - 13) & (ticks <= (at or T_END))] if at else
              np.array([1140, 1141, 1142, 1150]) for at in latch]
    user_events = pd.DataFrame({
        "pass": ["traditional"] * 4 + ["expected"],
        "time": np.array([1165, 1170, 1170, 1175, 1170], dtype=np.int32),
        "houseID": [3, 3, 8, 3, 12],
        "groupID": [0, 0, 1, 0, 2],
        "accLoad": [1.5, 1.9, 2.2, 2.4, 0.9],
    })
    group_alerts = pd.DataFrame({"pass": "traditional", "time": ticks[:6], "groupID": 0,
                                 "sumAccLoad": np.linspace(10, 12, 6)})
    group_events = pd.DataFrame(columns=["pass", "time", "groupID", "sumAccLoad"])
    utility_alerts = pd.DataFrame({"pass": ["traditional"] * 3,
                                   "time": [T_NC - 2, T_NC - 1, T_NC],
                                   "load": [100.0, 101.0, 102.5]})
    summary = {
        "reference": {"source": "a paper", "reduction_mwh": {
            "expected": 83.28, "traditional": 47.89, "adaptive": 82.61},
            "utility_noncompliance_time": "19:11", "groups_compliant_at_prediction": 2},
        "scenario": {"name": name, "households": 1000,
                     "groups": {f"G{g + 1}": 100 for g in range(n_groups)}},
        "reduction_mwh": {"expected": np.float64(83.284), "traditional": 47.891,
                          "adaptive": 82.6},
        "prediction": {
            "utility_noncompliance_time": "19:11" if t_nc is not None else None,
            "groups_compliant_at_prediction": 1,
            "expected_pass_noncompliance_time": None,
            "household_precision": float("nan"),
            "household_recall": np.float32(0.75),
        },
        "groups": {f"G{g + 1}": {"households": 100, "reduction_mwh": {"expected": 1.0}}
                   for g in range(n_groups)},
        "second_event": (t_nc, t_nc + 10, T_END) if t_nc is not None else None,
        "latches": np.array([1, 2]),
        "peaks": {"daily_peak_mw": {"baseline": float("inf")}},
    }
    return RunData(
        name=name,
        group_names=[f"G{g + 1}" for g in range(n_groups)],
        group_kw=group_kw,
        estimate_kw={"baseline": estimate_b, "expected": estimate_p},
        program=(T_START, T_END),
        second_event=(t_nc, t_nc + 10, T_END) if t_nc is not None else None,
        t_nc=t_nc,
        test_times=test_times,
        ticks=ticks,
        flagged_fraction=flagged,
        group_alert_ticks={"traditional": alerts,
                           "expected": [np.array([], dtype=np.int64)] * n_groups},
        group_latch={"traditional": latch, "expected": [None] * n_groups},
        thresholds=Thresholds(test_times, np.linspace(0.3, 0.5, len(test_times))[None, :]
                              + 0.02 * np.arange(n_groups)[:, None],
                              np.full((n_groups, len(test_times)), 0.25),
                              ExpectedShareThreshold(z=3.0, replicas=4)),
        tier_events={"user_events": user_events, "group_alerts": group_alerts,
                     "group_events": group_events, "utility_alerts": utility_alerts},
        summary=summary,
        monitoring_stop={"traditional": np.array(stop), "expected": np.full(n_groups, T_END - 1)},
        households=1000, reduction_mwh={"expected": 83.284, "traditional": 47.891,
                                        "adaptive": 82.6},
    )


def test_write_run_files_read_back(tmp_path):
    data = make_run()
    out = write_run_data(data, tmp_path / "run")
    assert out == tmp_path / "run"
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no temporary leftovers
    expected_files = ["compliance_timeline.png", "events_group_alerts.parquet",
                      "events_group_events.parquet", "events_user_events.parquet",
                      "events_utility_alerts.parquet", "load_curves.parquet", "summary.json",
                      "system_demand.png", "thresholds.parquet"]
    assert sorted(p.name for p in out.iterdir()) == expected_files
    assert sorted(run_files(data.tier_events)) == expected_files

    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary == {**json_safe(data.summary), "files": run_files(data.tier_events)}
    assert summary["prediction"]["household_precision"] is None  # NaN → null
    assert summary["peaks"]["daily_peak_mw"]["baseline"] is None  # inf → null
    assert summary["reduction_mwh"]["expected"] == pytest.approx(83.284)
    assert summary["second_event"] == [T_NC, T_NC + 10, T_END]
    assert summary["latches"] == [1, 2]

    curves = pq.read_table(out / "load_curves.parquet")
    assert curves.column_names == ["pass", "group", "minute", "kw"]
    assert curves.num_rows == 4 * 3 * MINUTES
    assert curves.schema.field("pass").type == pa.string()
    frame = curves.to_pandas()
    assert list(dict.fromkeys(frame["pass"])) == ["baseline", "expected", "traditional",
                                                  "adaptive"]
    for p, kw in data.group_kw.items():
        for g, name in enumerate(data.group_names):
            rows = frame[(frame["pass"] == p) & (frame["group"] == name)]
            assert rows["minute"].tolist() == list(range(MINUTES))
            np.testing.assert_array_equal(rows["kw"].to_numpy(), kw[g])

    for name, table in data.tier_events.items():
        back = pq.read_table(out / f"events_{name}.parquet")
        assert back.num_rows == len(table)
        assert back.column_names == list(table.columns)
        assert back.schema.field("pass").type == pa.string()
        assert back.schema.field("time").type == pa.int64()
    users = pq.read_table(out / "events_user_events.parquet").to_pandas()
    assert users["houseID"].tolist() == [3, 3, 8, 3, 12]
    assert users["accLoad"].tolist() == [1.5, 1.9, 2.2, 2.4, 0.9]
    empty = pq.read_table(out / "events_group_events.parquet")  # empty: columns and types kept
    assert empty.num_rows == 0
    assert [(f.name, f.type) for f in empty.schema] == [
        ("pass", pa.string()), ("time", pa.int64()), ("groupID", pa.int64()),
        ("sumAccLoad", pa.float64())]
    for figure in ("system_demand.png", "compliance_timeline.png"):
        assert (out / figure).read_bytes()[:8] == PNG_MAGIC

    thresholds = pq.read_table(out / "thresholds.parquet").to_pandas()
    assert list(thresholds.columns) == ["group", "time", "expected_share", "gamma"]
    assert len(thresholds) == 3 * len(data.test_times)
    g2 = thresholds[thresholds["group"] == "G2"]
    assert g2["time"].tolist() == data.test_times.tolist()
    np.testing.assert_array_equal(g2["gamma"].to_numpy(), data.thresholds.gamma[1])
    assert (thresholds["expected_share"] == 0.25).all()


def test_failed_write_leaves_no_folder(tmp_path, monkeypatch):
    def broken(data, path):
        raise RuntimeError("plot failed")

    monkeypatch.setattr(output, "plot_compliance_timeline", broken)
    with pytest.raises(RuntimeError, match="plot failed"):
        write_run_data(make_run(), tmp_path / "run")
    assert list(tmp_path.iterdir()) == []  # neither the folder nor a temporary one

    # replacing an earlier run: the old folder stays as it was
    monkeypatch.undo()
    old = write_run_data(make_run(name="earlier"), tmp_path / "old")
    before = {p.name: p.read_bytes() for p in old.iterdir() if p.is_file()}
    monkeypatch.setattr(output, "plot_compliance_timeline", broken)
    with pytest.raises(RuntimeError, match="plot failed"):
        write_run_data(make_run(), old, overwrite=True)
    assert [p.name for p in tmp_path.iterdir()] == ["old"]
    assert {p.name: p.read_bytes() for p in old.iterdir() if p.is_file()} == before


def test_bad_data_fails_before_any_work(tmp_path):
    data = make_run()
    data.group_kw["adaptive"] = data.group_kw["adaptive"][:, :100]
    with pytest.raises(ValueError, match=r"group_kw\['adaptive'\]"):
        write_run_data(data, tmp_path / "run")
    data = make_run()
    data.flagged_fraction["traditional"] = data.flagged_fraction["traditional"][:2]
    with pytest.raises(ValueError, match="flagged_fraction"):
        write_run_data(data, tmp_path / "run")
    data = make_run()
    data.tier_events["utility_alerts"] = data.tier_events["utility_alerts"].drop(columns="load")
    with pytest.raises(ValueError, match=r"missing columns \['load'\]"):
        write_run_data(data, tmp_path / "run")
    data = make_run()
    data.summary["where"] = object()
    with pytest.raises(TypeError, match="summary.where"):
        write_run_data(data, tmp_path / "run")
    assert list(tmp_path.iterdir()) == []


def test_overwrite_rules(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "marker.txt").write_text("the user's")
    with pytest.raises(OutputExistsError, match="choose another --out"):
        write_run_data(make_run(), out)
    with pytest.raises(OutputRefusedError, match="marker.txt"):  # not a folder drsim wrote
        write_run_data(make_run(), out, overwrite=True)
    assert [p.name for p in out.iterdir()] == ["marker.txt"]  # untouched
    (out / "marker.txt").unlink()

    write_run_data(make_run(name="second"), out, overwrite=True)  # an empty folder
    assert json.loads((out / "summary.json").read_text())["scenario"]["name"] == "second"
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no .old or .partial left
    with pytest.raises(OutputExistsError, match="--overwrite"):
        write_run_data(make_run(), out)

    write_run_data(make_run(name="third"), out, overwrite=True)  # replacing a run folder again
    assert json.loads((out / "summary.json").read_text())["scenario"]["name"] == "third"
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_timeline_heatmap_for_many_groups(tmp_path, monkeypatch):
    calls = []
    for name in ("_compliance_rows", "_compliance_heatmap"):
        original = getattr(figures, name)
        monkeypatch.setattr(figures, name,
                            lambda data, path, _f=original, _n=name: (calls.append(_n),
                                                                      _f(data, path))[1])
    drawn = [plot_compliance_timeline(make_run(n_groups=n), tmp_path / f"{name}.png")
             for n, name in ((150, "many"), (MAX_GROUP_ROWS, "few"), (1, "one"))]
    assert calls == ["_compliance_heatmap", "_compliance_rows", "_compliance_rows"]
    assert all(isinstance(fig, Figure) for fig in drawn)
    for name in ("many.png", "few.png", "one.png"):
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC


def test_plots_without_prediction_or_second_event(tmp_path):
    data = make_run(t_nc=None)
    data.group_latch["traditional"] = [None] * len(data.group_names)
    data.group_kw.pop("adaptive")
    data = replace(data, summary={}, households=None, reduction_mwh={})
    plot_run_demand(data, tmp_path / "demand.png")
    plot_compliance_timeline(data, tmp_path / "timeline.png")
    no_tests = np.array([], dtype=np.int64)
    data = replace(data, test_times=no_tests,
                   flagged_fraction={p: np.zeros((3, 0)) for p in data.flagged_fraction},
                   thresholds=Thresholds(no_tests, np.zeros((3, 0))))
    plot_compliance_timeline(data, tmp_path / "no_tests.png")
    data = replace(data, thresholds=Thresholds(no_tests, np.zeros((40, 0))),
                   group_names=[f"g{i}" for i in range(40)],
                   group_latch={"traditional": [None] * 40},
                   monitoring_stop={"traditional": np.full(40, T_END - 1)},
                   group_alert_ticks={}, flagged_fraction={"traditional": np.zeros((40, 0))})
    plot_compliance_timeline(data, tmp_path / "no_tests_heatmap.png")
    for name in ("demand.png", "timeline.png", "no_tests.png", "no_tests_heatmap.png"):
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC


def test_figures_say_what_they_show():
    """The compliance timeline's axes read "share of households flagged" and each group's
    curve ends where its meters stopped being tested; the utility's B̂ is drawn on top of
    the passes and its legend entry says how far it is from the simulated baseline."""
    data = make_run()
    fig = plot_compliance_timeline(data)
    stop = data.monitoring_stop["traditional"]
    for g, ax in enumerate(fig.axes):
        assert " ".join(ax.get_ylabel().split()) == "share of households flagged"
        red = [line for line in ax.get_lines() if line.get_color() == "tab:red"]
        assert len(red) == 1
        x, y = (np.asarray(v, dtype=np.float64) for v in red[0].get_data())
        assert x[np.isfinite(y)].max() == stop[g]  # held until the stop, not a minute more
        assert data.test_times[data.test_times <= stop[g]].max() in x
    assert not np.isnan(data.flagged_fraction["traditional"]).any()  # the data go on

    demand = plot_run_demand(data).axes[0]
    lines = {line.get_label(): line for line in demand.get_lines()}
    (label,) = [k for k in lines if "B̂" in k]
    assert "+" in label and "MW on average against the simulated one" in label
    assert lines[label].get_zorder() > max(line.get_zorder() for k, line in lines.items()
                                           if k != label)
    data.estimate_kw["baseline"] = np.where(
        np.isfinite(data.estimate_kw["baseline"]), data.group_kw["baseline"].sum(axis=0), np.nan)
    (label,) = [line.get_label() for line in plot_run_demand(data).axes[0].get_lines()
                if "B̂" in line.get_label()]
    assert label.endswith("(equals the simulated one)")


def test_plots_return_figures_and_save_only_given_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = make_run()
    for plot in (plot_run_demand, plot_compliance_timeline):
        fig = plot(data)
        assert isinstance(fig, Figure) and fig.axes
        assert list(tmp_path.iterdir()) == []  # no path: nothing written
        assert plot(data, tmp_path / "fig.png") is not None
        assert (tmp_path / "fig.png").read_bytes()[:8] == PNG_MAGIC
        (tmp_path / "fig.png").unlink()


def _summary(base: dict, **sections) -> Summary:
    """``base`` with ``sections`` replaced (a dict: its keys replaced), read by the model."""
    out = json.loads(json.dumps(base))
    for key, value in sections.items():
        out[key] = {**out[key], **value} if isinstance(value, dict) and out.get(key) \
            else value
    return Summary.model_validate(out)


def test_run_table_values_and_nulls(run_summary):
    data = make_run()
    columns, rows = run_table(_summary(
        run_summary, reference=data.summary["reference"],
        reduction_mwh={"expected": 83.284, "traditional": 47.891, "adaptive": 82.6},
        prediction={"utility_noncompliance_time": "19:11", "groups_compliant_at_prediction": 1,
                    "expected_pass_noncompliance_time": None, "household_precision": None,
                    "household_recall": 0.75, "household_precision_whole_program": None,
                    "household_recall_whole_program": None}))
    assert columns == ["quantity", "this run", "reference"]
    assert [r[0] for r in rows] == [
        "reduction, expected, MWh (share)",
        "reduction, traditional, MWh (share)",
        "reduction, adaptive, MWh (share)", "utility non-compliance predicted",
        "groups compliant at prediction", "prediction on the expected pass",
        "household precision / recall, while tested",
        "household precision / recall, whole program"]
    assert [r[1] for r in rows] == ["83.28 (100.0 %)", "47.89 (57.5 %)", "82.60 (99.2 %)",
                                    "19:11", "1 of 3", "none", "n/a / 0.750", "n/a / n/a"]
    assert [r[2] for r in rows] == ["83.28 (100.0 %)", "47.89 (57.5 %)", "82.61 (99.2 %)",
                                    "19:11", "2 of 3", "not given", "not given",
                                    "not given"]

    columns, rows = run_table(_summary(run_summary, reference=None))  # no reference column
    assert columns == ["quantity", "this run"] and all(len(r) == 2 for r in rows)
    values = {label: value for label, value in run_table(_summary(
        run_summary, reduction_mwh={"expected": 0.0, "traditional": 47.0, "adaptive": 47.0},
        prediction={"utility_noncompliance_time": 1151, "household_recall": math.nan,
                    "household_precision": 0.5}))[1]}
    assert values["reduction, traditional, MWh (share)"] == "47.00"  # no share of 0
    assert values["utility non-compliance predicted"] == "19:11"  # minutes in the model
    assert values["household precision / recall, while tested"] == "0.500 / n/a"

    # five groups; no prediction at all
    values = {label: value for label, value in run_table(_summary(
        run_summary, scenario={"groups": {f"G{g}": 100 for g in range(1, 6)}},
        prediction={"utility_noncompliance_time": None,
                    "groups_compliant_at_prediction": 2}))[1]}
    assert values["groups compliant at prediction"] == "2 of 5"
    assert values["utility non-compliance predicted"] == "none"


def test_simulate_table_rounds_and_sets_the_reference_beside(simulate_summary):
    changes = dict(
        scenario={"ev_households": 22480,
                  "settings": {**simulate_summary["scenario"]["settings"],
                               "dr_program": {"start": "18:30", "end": "20:30"}}},
        energy={"kwh_per_household_day": 13.1449, "evening_peak_kw_per_household": 0.86213,
                "evening_peak_time": "18:56"},
        reduction_mwh={"expected": 21.354417, "traditional": 12.582193},
        baseline={"method": "same_day", "expected_reduction_mwh": 21.5213},
        reduction_goal_mwh=21.5213,
        backend={"chunks": 20, "tasks": 20, "name": "spark", "master": "local[2]"},
        timings={"total_seconds": 12.5})
    columns, rows = simulate_table(_summary(simulate_summary, **changes))
    values = {label: cells for label, *cells in rows}
    assert columns == ["quantity", "this simulation"]
    assert values["reduction 18:30–20:30, traditional, MWh (share)"] == ["12.58 (58.9 %)"]
    assert values["energy per household"] == ["13.14 kWh/day"]
    assert values["evening peak per household"] == ["0.862 kW at 18:56"]
    assert values["chunks / tasks"] == ["20 / 20 on local[2]"]
    assert values["wall time"] == ["12.5 s"]
    changes["reference"] = {"source": "a paper", "reduction_mwh": {
        "expected": 83.28, "traditional": 47.89, "adaptive": None},
        "utility_noncompliance_time": None, "groups_compliant_at_prediction": None}
    columns, rows = simulate_table(_summary(simulate_summary, **changes))
    values = {label: cells for label, *cells in rows}
    assert columns == ["quantity", "this simulation", "reference"]
    assert values["reduction 18:30–20:30, traditional, MWh (share)"] == [
        "12.58 (58.9 %)", "47.89 (57.5 %)"]
    assert values["energy per household"] == ["13.14 kWh/day", ""]


def test_event_table_types():
    frame = pd.DataFrame({"pass": ["adaptive"], "time": [1200], "load": [3], "note": ["x"]})
    table = event_table("utility_alerts", frame)
    assert [(f.name, f.type) for f in table.schema] == [
        ("pass", pa.string()), ("time", pa.int64()), ("load", pa.float64()),
        ("note", pa.string())]
    other = event_table("custom", pd.DataFrame(columns=["pass", "time"]))
    assert other.num_rows == 0 and other.schema.field("pass").type == pa.string()
    with pytest.raises(ValueError, match="no 'pass' column"):
        event_table("custom", pd.DataFrame({"time": [1]}))


def test_json_safe():
    assert json_safe({"a": (np.int64(1), np.nan), "b": {"c": np.array([1.5, np.inf])},
                      np.int32(3): None}) == {"a": [1, None], "b": {"c": [1.5, None]}, 3: None}
    with pytest.raises(TypeError, match=r"summary\.a\[0\]"):
        json_safe({"a": [object()]})
