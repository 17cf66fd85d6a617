"""experiments.scaling_report (scripts/scaling_report.py): Figure 6.13's table, figure and
checks (§6.3.3).

One tiny scaling sweep runs on the serial backend (the packaged sweep file with 5,000 and
10,000 households in groups of 1,000, about 10 s); a fabricated sweep folder checks the
averaging over seeds and that runs of points no longer in the sweep are left out.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import drsim
from drsim.sweeps import JOURNAL, SWEEP_RECORD, read_journal, sweep_from_dict
from experiments import scaling_report as report

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "scaling_report.py"
SCALING = ROOT / "drsim/data/scenarios" / "sweeps" / "scaling.yaml"
PNG = b"\x89PNG\r\n\x1a\n"
SIZES = [5000, 10_000]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    """The packaged scaling sweep (its metrics too), shrunk to SIZES in groups of 1,000."""
    data = yaml.safe_load(SCALING.read_text())
    data["overrides"] = {"group_size": 1000}
    data["grid"] = {"households": SIZES}
    spec = sweep_from_dict(data, source=str(SCALING), base_dir=SCALING.parent)
    out = tmp_path_factory.mktemp("scaling") / "sweep"
    drsim.sweep(spec, out, backend="serial")
    return out


def summaries(folder: Path) -> dict[int, dict]:
    return {r["summary"]["scenario"]["households"]: r["summary"]
            for r in read_journal(folder / JOURNAL).values()}


def table_rows(stdout: str) -> list[dict[str, str]]:
    """The Markdown table of the script's output as {column: cell} per row."""
    lines = [line for line in stdout.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
            for line in lines[2:]]


def test_the_script_prints_one_row_per_size_and_draws_the_figure(sweep_dir, tmp_path):
    figure = tmp_path / "figures" / "figure_6_13.png"
    result = subprocess.run([sys.executable, str(SCRIPT), str(sweep_dir), "--figure",
                             str(figure)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert figure.read_bytes().startswith(PNG)
    rows = table_rows(result.stdout)
    found = summaries(sweep_dir)
    assert [r["households"] for r in rows] == ["5,000", "10,000"]
    assert [r["groups"] for r in rows] == ["5", "10"]
    for r, n in zip(rows, SIZES, strict=True):
        cost = found[n]["cost"]
        # per household = the run's total / its households, as printed (4 digits)
        assert float(r["communication/household"]) == pytest.approx(
            cost["communication"]["total"] / n, rel=5e-4)
        assert float(r["computation/household"]) == pytest.approx(
            cost["computation"]["total"] / n, rel=5e-4)
        assert float(r["· λ fetches"]) == pytest.approx(
            cost["communication"]["remote_lambda_fetches"] / n, rel=5e-4)
        assert r["group→utility messages"] == f"{cost['communication']['group_events']:,}"
        assert float(r["total [s]"]) == pytest.approx(found[n]["timings"]["total_seconds"],
                                                      abs=0.005)
    small, large = (found[n]["timings"]["total_seconds"] for n in SIZES)
    holds = "holds" if large <= 1.25 * 2 * small else "does not hold"
    assert (f"wall(10k) = {large:.2f} s {'≤' if holds == 'holds' else '>'} 1.25 × 2 × wall(5k) "
            f"= 1.25 × 2 × {small:.2f} s = {1.25 * 2 * small:.2f} s: {holds}") in result.stdout
    assert "communication per household at 10k: " in result.stdout
    assert "computation per household at 10k: " in result.stdout


def test_rows_hold_totals_and_per_household_costs_of_every_tier(sweep_dir):
    rows = report.rows(sweep_dir)
    found = summaries(sweep_dir)
    assert [r["households"] for r in rows] == SIZES
    for r in rows:
        summary = found[r["households"]]
        assert r["groups"] == r["households"] // 1000 == len(summary["scenario"]["groups"])
        for kind, tiers in report.COSTS.items():
            for tier in [*tiers, "total"]:
                total = summary["cost"][kind][tier]
                assert r[f"{kind}.{tier}"] == total
                assert r[f"per_household.{kind}.{tier}"] == pytest.approx(
                    total / r["households"])
        for stage in report.STAGES:
            assert r[stage] == pytest.approx(summary["timings"].get(stage, float("nan")),
                                             nan_ok=True)


def fake_summary(base: dict, households: int, groups: int, scale: float,
                 seconds: float) -> dict:
    """``base`` (a run's summary) with made-up households, groups, costs and stage times
    (no adaptive pass)."""
    cost = {"communication": {"meter_readings": round(100 * households * scale),
                              "remote_lambda_fetches": round(20 * households * scale),
                              "user_events": round(households * scale / 10),
                              "silent_meter_events": 0, "group_events": groups, "total": 0},
            "computation": {"meter": round(10 * households * scale),
                            "group": round(households * scale), "utility": groups,
                            "total": 0}}
    for tiers in cost.values():
        tiers["total"] = sum(v for k, v in tiers.items() if k != "total")
    per = {kind: {t: v / households for t, v in tiers.items()} for kind, tiers in cost.items()}
    return {**base,
            "scenario": {**base["scenario"], "households": households,
                         "groups": {f"G{i + 1:03d}": households // groups
                                    for i in range(groups)}},
            "cost": {**cost, "per_household": per},
            "timings": {"backend_start_seconds": 0.0, "passes_seconds": seconds / 2,
                        "tiers_seconds": seconds / 4, "total_seconds": seconds,
                        "chunk_seconds": base["timings"]["chunk_seconds"]}}


def write_folder(folder: Path, records: list[tuple[int, dict]], grid: list[int]) -> None:
    folder.mkdir()
    lines = [json.dumps({"key": f"k{i}", "point": 0, "values": {"households": n},
                         "summary": summary}) for i, (n, summary) in enumerate(records)]
    (folder / JOURNAL).write_text("\n".join(lines) + "\n")
    (folder / SWEEP_RECORD).write_text(json.dumps(
        {"points": [{"point": i, "values": {"households": n}} for i, n in enumerate(grid)]}))


def test_seeds_are_averaged_and_stale_points_left_out(tmp_path, run_summary):
    folder = tmp_path / "sweep"
    write_folder(folder, [(100_000, fake_summary(run_summary, 100_000, 10, 1.0, 10.0)),
                          (100_000, fake_summary(run_summary, 100_000, 10, 1.2, 14.0)),
                          (1_600_000, fake_summary(run_summary, 1_600_000, 160, 1.1, 250.0)),
                          (300_000, fake_summary(run_summary, 300_000, 30, 9.0, 1.0))],
                 grid=[100_000, 1_600_000])  # 300,000 is no longer in the grid
    rows = report.rows(folder)
    assert [(r["households"], r["groups"], r["seeds"]) for r in rows] == \
        [(100_000, 10, 2), (1_600_000, 160, 1)]
    assert rows[0]["per_household.communication.meter_readings"] == pytest.approx(110.0)
    assert rows[0]["total_seconds"] == pytest.approx(12.0)
    assert math.isnan(rows[0]["adaptive_pass_seconds"])  # no run had an adaptive pass
    holds, text = report.wall_check(rows)
    assert not holds  # 250 s > 1.25 x 16 x 12 s = 240 s
    assert text == ("wall(1.6M) = 250.00 s > 1.25 × 16 × wall(100k) = 1.25 × 16 × 12.00 s = "
                    "240.00 s: does not hold")
    ratios = report.cost_ratios(rows)
    assert ratios[0].startswith("communication per household at 1.6M: ")
    # scale 1.1 against the mean of 1.0 and 1.2; one group event per 10,000 at both sizes
    assert "1.000 × that at 100k" in ratios[0]
    table = report.markdown_table(rows)
    assert "| 1,600,000 | 160 |" in table and "| – |" in table  # no adaptive pass ran


def test_wall_check_holds_within_the_margin():
    rows = [{"households": 100_000, "total_seconds": 10.0},
            {"households": 1_600_000, "total_seconds": 199.0}]
    assert report.wall_check(rows)[0]
    rows[1]["total_seconds"] = 200.5
    assert not report.wall_check(rows)[0]


def test_extrapolation_scales_households_and_groups_over_the_cores():
    """Per household for the passes and the adaptive pass, per group for the group tier,
    spread over workers × cores; the utility tier and the driver grow with the groups."""
    measured = {"households": 1_600_000, "groups": 160, "cores": 2.0,
                "passes_seconds": 60.0, "adaptive_pass_seconds": 20.0,
                "group_tier_seconds": 8.0, "utility_tier_seconds": 1.0,
                "backend_start_seconds": 4.0, "total_seconds": 100.0,
                "peak_task_memory_bytes": 2**29}
    text = report.extrapolate(measured, 16_000_000, [10, 20], 2)
    assert "passes + meter tier: 75.0 core-µs per household" in text
    assert "group tier: 0.100 core-s per group" in text
    assert "driver besides the stages 7.0 s" in text and "0.50 GiB" in text
    rows = table_rows(text)
    # 10 workers of 2 cores: 75 µs x 16M / 20 = 60 s; 25 µs x 16M / 20 = 20 s;
    # 0.1 s x 1,600 groups / 20 = 8 s; utility 1 s x 10; start 4 + driver 7 x 10
    assert [rows[0][k] for k in ("passes + meter tier", "adaptive pass", "group tier",
                                 "utility tier", "start + driver", "wall [s]")] == \
        ["60.0", "20.0", "8.0", "10.0", "74.0", "172"]
    assert rows[1]["cores"] == "40" and rows[1]["passes + meter tier"] == "30.0"
