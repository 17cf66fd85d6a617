"""summary.json's typed records (drsim.results.summary_model): docs/summary.md documents
every field of the models and no other key; a built summary reads back through the model
to the same JSON; clock times are one type."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

import drsim
from drsim.results.output import json_safe
from drsim.results.summary_model import Summary, read_summary
from drsim.results.summary_paths import (
    UnknownField,
    children,
    feature_sections,
    field_type,
    is_clock_field,
    is_open_json,
)
from drsim.units import clock_minutes
from tests.drsim.pipeline.test_pipeline import small

DOCS = Path(__file__).resolve().parents[3] / "docs"
#: the sections another document lists, field by field
ELSEWHERE = {"streaming": DOCS / "streaming.md"}
ANY = "*"  # a key of a mapping: <group>, <pass>, ...


def _expand(path: str) -> list[str]:
    """``a.{b, c.d}.e`` -> ``a.b.e``, ``a.c.d.e``."""
    match = re.search(r"\{([^{}]*)\}", path)
    if match is None:
        return [path]
    head, tail = path[:match.start()], path[match.end():]
    return [p for part in match[1].split(",") for p in _expand(head + part.strip() + tail)]


def _normal(path: str) -> str:
    """Placeholders and list items as one wildcard: ``groups.<group>`` -> ``groups.*``."""
    path = re.sub(r"<[^<>]*>", ANY, path).replace("[]", f".{ANY}")
    return ".".join(part for part in path.split(".") if part)


def _row_paths(cell: str, under: str, relative: bool = False) -> list[str]:
    """The documented paths of a table row's first cell: a later name in the cell is a
    sibling of the first (``a.b.x``, ``y`` -> ``a.b.y``); a name with a leading dot, or
    every name when ``relative``, is under ``under`` (``scenario.settings``' table)."""
    names = re.findall(r"`([^`]+)`", cell)
    first: list[str] = []
    out = []
    for i, name in enumerate(names):
        if name.startswith(".") or (relative and i == 0):
            name = f"{under}.{name.lstrip('.')}"
        elif i > 0:
            name = ".".join(first[:-1] + [name])
        if i == 0:
            first = name.split(".")
        out += [_normal(p) for p in _expand(name)]
    return out


def documented() -> set[str]:
    """Every documented path of summary.json, normalised (:func:`_normal`)."""
    paths: set[str] = set()
    section = None
    for line in (DOCS / "summary.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:]
        if section is None or section.startswith(("Changes", "streaming")):
            continue
        if line.startswith("| `"):
            cell = line.split("|")[1]
            paths.update(_row_paths(cell, "scenario.settings"))
    for key, doc in ELSEWHERE.items():
        text = doc.read_text(encoding="utf-8").split(f"## summary.json: `{key}`", 1)[1]
        for line in text.splitlines():
            if line.startswith("| `"):
                paths.update(_row_paths(line.split("|")[1], key, relative=True))
    return paths


def model_paths(annotation=Summary, prefix: str = "") -> dict[str, object]:
    """Every field path of the model (mappings' and lists' items as ``*``) -> its type;
    open JSON is not entered."""
    out: dict[str, object] = {}
    for key, child in children(annotation):
        path = f"{prefix}{key}"
        out[path] = child
        if not is_open_json(child):
            out.update(model_paths(child, path + "."))
    return out


def _resolves(path: str) -> bool:
    """Whether a documented path names a field of :class:`Summary`, or lies inside open
    JSON (a feature's section among them)."""
    try:
        field_type(path)
    except UnknownField:
        return False
    return True


def test_docs_document_every_field_of_the_model():
    docs = documented()
    fields = model_paths()
    leaves = {re.sub(r"(\.\*)+$", "", p) for p, kind in fields.items()
              if is_open_json(kind) or not children(kind)}  # a list or mapping of values: one
    undocumented = [p for p in sorted(leaves)
                    if not any(d == p or d.startswith(p + ".") for d in docs)]
    assert not undocumented, f"fields of summary_model missing in docs: {undocumented}"


def test_every_documented_key_is_a_field_or_a_features_section():
    unknown = [p for p in sorted(documented()) if not _resolves(p)]
    assert not unknown, f"documented keys that are no field of summary_model: {unknown}"


def test_the_check_sees_a_missing_and_an_unknown_key():
    assert _resolves("prediction.group_noncompliance_times.*")
    assert _resolves("scenario.settings.dr_program.start")  # the scenario's own JSON
    assert not _resolves("prediction.utility_noncompliance_tme")
    assert not _resolves("energy.evening_peak_time.hours")
    assert not _resolves("features")  # no key of summary.json
    assert _resolves("shedding.op.meter_tier.readings")  # a feature's own section
    assert is_clock_field(field_type("prediction.group_noncompliance_times.G1"))
    assert not is_clock_field(field_type("prediction.detection_delay_minutes"))
    assert _row_paths("`shedding.{op, bl}.meter_tier.latency_avg_minutes`, "
                      "`latency_p95_minutes`", "") == [
        "shedding.op.meter_tier.latency_avg_minutes",
        "shedding.bl.meter_tier.latency_avg_minutes",
        "shedding.op.meter_tier.latency_p95_minutes",
        "shedding.bl.meter_tier.latency_p95_minutes"]
    assert "incentive.lambda_new.*" in documented()


SMALL = {
    "scenario": {"name": "s", "file": None, "hash": "0" * 64, "households": 2,
                 "ev_households": 0, "groups": {"g": 2}, "settings": {"name": "s"}},
    "code_version": {"drsim": None, "git": None},
    "prediction": {"predicted": True, "utility_noncompliance_time": "19:11",
                   "detection_delay_minutes": 21, "groups_compliant_at_prediction": 0,
                   "group_noncompliance_times": {"g": "19:08"},
                   "gamma_user": {"method": "constant", "value": 0.3},
                   "thresholds_from": "the scenario"},
    "my_feature": {"counts": [1, 2]},
    "backend": {"name": "serial", "master": None, "app_id": None, "parallelism": 1,
                "chunks": 1, "chunk_size": 2, "partitions": 1, "tasks": 1, "jobs": []},
    "timings": {"backend_start_seconds": 0.5, "readings_seconds": 1,
                "total_seconds": 2.0,
                "chunk_seconds": {"min": 0.1, "mean": 0.1, "max": 0.1}},
    "resources": {"driver_peak_rss_bytes": 1, "jvm_peak_rss_bytes": None,
                  "peak_task_memory_bytes": 1},
    "files": ["summary.json"],
}


def test_a_summary_reads_back_to_the_same_json_with_clock_times_as_minutes(tmp_path):
    summary = Summary.model_validate(SMALL)
    assert summary.prediction.utility_noncompliance_time == 19 * 60 + 11
    assert summary.prediction.group_noncompliance_times == {"g": 19 * 60 + 8}
    assert summary.features == {"my_feature": {"counts": [1, 2]}}
    written = summary.as_dict()
    assert json.dumps(written) == json.dumps(SMALL)  # the same keys, order and types
    assert written["timings"]["readings_seconds"] == 1  # an int stays an int
    assert "seeds" not in written and "household_precision" not in written["prediction"]
    (tmp_path / "summary.json").write_text(json.dumps(SMALL))
    assert read_summary(tmp_path) == summary


@pytest.mark.parametrize("change, field", [
    ({"prediction": {**SMALL["prediction"], "utility_noncompliance_time": "25:00"}},
     "prediction.utility_noncompliance_time"),
    ({"timings": {**SMALL["timings"], "new_seconds": 1.0}}, "timings.new_seconds"),
    ({"files": "summary.json"}, "files"),
])
def test_a_summary_that_is_not_one_names_the_field(change, field):
    with pytest.raises(ValidationError) as info:
        Summary.model_validate({**SMALL, **change})
    assert field in str(info.value)


def test_built_summaries_are_the_models_json(run_summary, simulate_summary):
    for summary in (run_summary, simulate_summary):
        model = Summary.model_validate(summary)
        text = json.dumps(json_safe(summary), indent=2)
        assert json.dumps(json_safe(model.as_dict()), indent=2) == text
    run = Summary.model_validate(run_summary)
    assert run.is_run and tuple(run.features) == feature_sections()
    assert run.prediction.utility_noncompliance_time == clock_minutes(
        run_summary["prediction"]["utility_noncompliance_time"])
    assert not Summary.model_validate(simulate_summary).is_run


def test_a_results_record_is_its_summary_typed():
    result = drsim.simulate(small(200), backend="serial")
    assert isinstance(result.record, Summary) and result.record is result.record
    assert json.dumps(json_safe(result.record.as_dict())) == json.dumps(json_safe(result.summary))
    assert result.record.energy.evening_peak_time == clock_minutes(
        result.summary["energy"]["evening_peak_time"])
