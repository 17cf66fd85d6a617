"""Scenario files: the packaged scenarios, the derived helpers, and clear errors for bad input."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from pydantic import BaseModel

from drsim.scenario import (
    ApplianceSettings,
    BaselineSettings,
    DayVariation,
    DRProgram,
    EVSettings,
    ExpectedShare,
    FollowThrough,
    Group,
    Incentive,
    Monitoring,
    Reference,
    ReferenceReductions,
    Scenario,
    ScenarioError,
    load_scenario,
    scenario_from_dict,
)

SCENARIOS = Path(__file__).resolve().parents[3] / "drsim/data/scenarios"

TABLE_6_2_RANGES = [(0, 10_000), (10_000, 30_000), (30_000, 35_000), (35_000, 60_000),
                    (60_000, 100_000)]

MINIMAL = {
    "name": "t",
    "seed": 1,
    "households": 100,
    "groups": [{"name": "a", "size": 40}, {"name": "b", "size": 60}],
}


def write(tmp_path: Path, data: object, name: str = "bad.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def with_changes(**changes: object) -> dict:
    data = copy.deepcopy(MINIMAL)
    data.update(changes)
    return data


def load_error(path: Path) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    return info.value


def assert_problem(error: ScenarioError, source: str, path: str, *accepted: str,
                   problem: str = "") -> str:
    """One line of the error is "<source>: <path>: <problem>; accepted: <...>" with the texts."""
    prefix = f"{source}: {path}: "
    lines = [line for line in str(error).splitlines() if line.startswith(prefix)]
    assert lines, f"no line starts with {prefix!r} in:\n{error}"
    line = lines[0]
    assert "; accepted: " in line, line
    said, accepts = line[len(prefix):].split("; accepted: ", 1)
    assert problem in said, line
    for text in accepted:
        assert text in accepts, line
    return line


# --- the packaged scenarios --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["quickstart", "paper_100k", "scale_1.6M"])
def test_packaged_scenarios_load(name: str) -> None:
    scenario = load_scenario(SCENARIOS / f"{name}.yaml")
    assert scenario.name == name
    assert scenario.source_path is not None and scenario.source_path.name == f"{name}.yaml"
    ranges = scenario.group_ranges()
    assert ranges[0][0] == 0 and ranges[-1][1] == scenario.households
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    # a dump (as summary.json records it) validates back to the same scenario
    again = scenario_from_dict(json.loads(json.dumps(scenario.model_dump(mode="json"))))
    assert again.model_dump() == scenario.model_dump()


def test_quickstart() -> None:
    s = load_scenario(SCENARIOS / "quickstart.yaml")
    assert (s.households, s.seed, s.chunk_size) == (6000, 7, 1000)
    assert s.group_sizes() == [2000, 2000, 2000]
    # one group follows through almost as expected, two barely: shows the loop
    assert [s.effective_follow_through_drop(g) for g in range(3)] == [0.1, 0.6, 0.6]
    assert s.reference is None  # no published results: no reference column
    assert s.baseline.method == "same_day" and s.dr_program.reduction_goal_kwh == "expected"


def test_paper_scenario_is_table_6_2() -> None:
    s = load_scenario(SCENARIOS / "paper_100k.yaml")
    assert s.households == 100_000
    assert [g.name for g in s.groups] == ["G1", "G2", "G3", "G4", "G5"]
    assert [g.range for g in s.groups] == [(1, 10_000), (10_001, 30_000), (30_001, 35_000),
                                           (35_001, 60_000), (60_001, 100_000)]
    assert s.group_ranges() == TABLE_6_2_RANGES
    p = s.dr_program
    assert (p.start, p.end, p.start_minute, p.end_minute) == ("18:30", "20:30", 1110, 1230)
    assert p.reduction_goal_kwh == "expected"  # Table 6.2's goal is its expected reduction
    assert s.baseline.method == "same_day" and s.baseline.error == 0.0
    assert s.monitoring.gamma_user == ExpectedShare(method="expected", z=3.0, replicas=4)
    ref = s.reference
    assert ref is not None and "Zhao" in ref.source
    assert (ref.reduction_mwh.expected, ref.reduction_mwh.traditional,
            ref.reduction_mwh.adaptive) == (83.28, 47.89, 82.61)
    assert (ref.utility_noncompliance_time, ref.groups_compliant_at_prediction) == ("19:11", 2)
    m = s.monitoring
    assert (m.t_wait_minutes, m.delta_minutes) == (20, 5)
    assert (m.m_user, m.m_group, m.m_utility, m.gamma_group) == (3, 3, 3, 0.4)
    assert s.follow_through_drop == 0.4
    # groups differ (docs/decisions.md, "Groups differ"); their household-weighted mean
    # drop is §6.3.2's 40 %
    drops = [s.effective_follow_through_drop(i) for i in range(5)]
    assert len(set(drops)) > 1
    assert sum(d * n for d, n in zip(drops, s.group_sizes(), strict=True)) / s.households \
        == pytest.approx(0.4)
    assert {g.incentive_u for g in s.groups} == set(s.incentive.u_mappings)


def test_scale_scenario() -> None:
    s = load_scenario(SCENARIOS / "scale_1.6M.yaml")
    assert s.households == 1_600_000 and s.chunk_size == 10_000
    assert s.group_sizes() == [10_000] * 160
    # the paper scenario's drop pattern G1-G5, repeated every five groups
    assert [s.effective_follow_through_drop(g) for g in range(160)] == \
        [0.5, 0.1, 0.1, 0.5, 0.5] * 32
    assert s.baseline.method == "same_day" and s.monitoring.gamma_user.method == "expected"


# --- defaults and derived helpers --------------------------------------------------------------


def test_defaults_are_the_papers() -> None:
    s = scenario_from_dict(MINIMAL)
    assert s.source_path is None
    assert s.chunk_size == 5000
    assert s.follow_through_drop == 0.4
    assert (s.appliances.per_household_min, s.appliances.per_household_max) == (20, 25)
    assert s.ev.penetration == 0.2248 and s.ev.pause_in_progress
    assert s.follow_through == FollowThrough(distribution="survey", scale=1.0)
    p = s.dr_program
    assert (p.start_minute, p.end_minute, p.announce_minute, p.duration_minutes) == \
        (1110, 1230, 1050, 120)
    assert p.reduction_goal_kwh == "expected" and p.incentive == 1.0
    m = s.monitoring
    assert (m.t_wait_minutes, m.delta_minutes, m.m_user, m.m_group, m.m_utility) == \
        (20, 5, 3, 3, 3)
    assert (m.gamma_user, m.gamma_group) == (ExpectedShare(method="expected"), 0.4)
    assert (m.gamma_user.z, m.gamma_user.replicas) == (3.0, 4)
    assert (m.reading_interval_minutes, m.settlement_interval_minutes, m.queries) == (1, 15, {})
    assert s.incentive.u_mappings == [1.05, 1.10, 1.15, 1.20] and s.incentive.beta == 1.8
    assert s.incentive.second_event_delay_minutes == 10
    assert s.baseline == BaselineSettings(method="same_day", prior_days=10, error=0.0,
                                          error_per_minute=0.0)
    assert s.reference is None


def test_scenario_is_frozen() -> None:
    s = scenario_from_dict(MINIMAL)
    with pytest.raises(ValueError):
        s.households = 5  # type: ignore[misc]


def test_every_field_has_a_description() -> None:
    models: list[type[BaseModel]] = [Scenario, Group, ApplianceSettings, EVSettings,
                                     FollowThrough, DRProgram, Monitoring, Incentive,
                                     BaselineSettings, ExpectedShare, Reference,
                                     ReferenceReductions, DayVariation]
    for model in models:
        assert model.model_config.get("extra") == "forbid", model
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name}"


def test_json_schema_has_no_source_path() -> None:
    schema = Scenario.model_json_schema()
    assert "source_path" not in schema["properties"]
    assert "households" in schema["properties"]


def test_group_ranges_from_sizes_and_ranges_agree() -> None:
    by_range = load_scenario(SCENARIOS / "paper_100k.yaml")
    sizes = [{"name": f"G{i}", "size": b - a} for i, (a, b) in enumerate(TABLE_6_2_RANGES, 1)]
    by_size = scenario_from_dict({"name": "s", "seed": 0, "households": 100_000,
                                  "groups": sizes})
    assert by_size.group_ranges() == by_range.group_ranges() == TABLE_6_2_RANGES


def test_group_of_is_vectorized() -> None:
    s = load_scenario(SCENARIOS / "paper_100k.yaml")
    ids = np.array([0, 9_999, 10_000, 29_999, 30_000, 34_999, 35_000, 59_999, 60_000, 99_999])
    assert s.group_of(ids).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    all_ids = np.arange(s.households)
    groups = s.group_of(all_ids)
    assert groups.shape == all_ids.shape and groups.dtype.kind == "i"
    assert np.bincount(groups).tolist() == s.group_sizes()
    assert s.group_of(ids.reshape(2, 5)).shape == (2, 5)
    with pytest.raises(ValueError):
        s.group_of(np.array([100_000]))
    with pytest.raises(ValueError):
        s.group_of(np.array([-1]))


def test_with_households_scales_groups_proportionally() -> None:
    s = load_scenario(SCENARIOS / "paper_100k.yaml")
    small = s.with_households(1000)
    assert small.households == 1000
    assert small.group_sizes() == [100, 200, 50, 250, 400]
    assert small.groups[1].range == (101, 300)  # keeps the groups' style
    assert small.source_path == s.source_path
    assert small.dr_program.reduction_goal_kwh == "expected"  # the estimate, at any size
    assert small.reference is None and s.reference is not None  # results of 100,000 only
    assert s.with_households(s.households).reference == s.reference
    given = scenario_from_dict({**MINIMAL, "dr_program": {"reduction_goal_kwh": 1000}})
    assert given.with_households(given.households // 2).dr_program.reduction_goal_kwh == \
        pytest.approx(500)
    assert [g.incentive_u for g in small.groups] == [g.incentive_u for g in s.groups]
    # largest remainder: quotas 0.7 1.4 0.35 1.75 2.8; every group keeps one household
    assert s.with_households(7).group_sizes() == [1, 1, 1, 1, 3]
    assert s.with_households(5).group_sizes() == [1, 1, 1, 1, 1]
    for n in (6, 13, 99, 12_345, 1_000_001):
        sizes = s.with_households(n).group_sizes()
        assert sum(sizes) == n and min(sizes) >= 1
        quotas = [size * n / s.households for size in s.group_sizes()]
        assert all(abs(a - q) < 1 for a, q in zip(sizes, quotas, strict=True))
    big = load_scenario(SCENARIOS / "scale_1.6M.yaml").with_households(100_000)
    assert big.group_sizes() == [625] * 160
    with pytest.raises(ScenarioError) as info:
        s.with_households(4)
    assert_problem(info.value, str(s.source_path), "households", "an integer from 5",
                   problem="5 groups")


def test_with_groups_of_lays_out_figure_6_13s_groups() -> None:
    paper = load_scenario(SCENARIOS / "paper_100k.yaml")
    scale = load_scenario(SCENARIOS / "scale_1.6M.yaml")
    big = paper.with_groups_of(1_600_000, 10_000)
    assert big.households == 1_600_000
    assert [g.name for g in big.groups] == [g.name for g in scale.groups]
    assert big.group_sizes() == scale.group_sizes()
    assert [big.effective_follow_through_drop(i) for i in range(160)] == \
        [scale.effective_follow_through_drop(i) for i in range(160)]
    # every setting of the base's group i mod 5, in the base's style (consecutive ranges)
    assert [g.incentive_u for g in big.groups] == [g.incentive_u for g in paper.groups] * 32
    assert big.groups[1].range == (10_001, 20_000)
    assert big.groups[-1].range == (1_590_001, 1_600_000)
    assert big.reference is None and big.source_path == paper.source_path
    # what else differs from scale_1.6M.yaml: the name, the chunk size, and in the groups the
    # style (ranges, sizes) and incentive_u (scale_1.6M's groups split among u_mappings)
    mine, theirs = big.model_dump(), scale.model_dump()
    assert {key for key in mine if mine[key] != theirs[key]} == {"name", "chunk_size", "groups"}
    assert {g.incentive_u for g in scale.groups} == {None}
    # a layout that is the scenario's own changes nothing
    assert scale.with_groups_of(1_600_000, 10_000) == scale


def test_with_groups_of_sizes_names_goal_and_reference() -> None:
    base = scenario_from_dict({
        **MINIMAL, "groups": [{"name": "a", "size": 40, "follow_through_drop": 0.1},
                              {"name": "b", "size": 60, "follow_through_drop": 0.3}],
        "dr_program": {"reduction_goal_kwh": 1000}, "reference": {"source": "somewhere"}})
    six = base.with_groups_of(300, 50)
    assert [g.name for g in six.groups] == ["G001", "G002", "G003", "G004", "G005", "G006"]
    assert [(g.size, g.range) for g in six.groups] == [(50, None)] * 6
    assert [g.follow_through_drop for g in six.groups] == [0.1, 0.3] * 3
    assert six.dr_program.reduction_goal_kwh == pytest.approx(3000)
    assert six.reference is None
    many = base.with_groups_of(1000, 1)
    assert [g.name for g in many.groups][::999] == ["G0001", "G1000"]  # four digits
    # the same households in other groups: the published results no longer apply
    assert base.with_groups_of(100, 50).reference is None
    own = scenario_from_dict({**MINIMAL, "reference": {"source": "somewhere"},
                              "groups": [{"name": "G001", "size": 50},
                                         {"name": "G002", "size": 50}]})
    assert own.with_groups_of(100, 50) == own


@pytest.mark.parametrize(("households", "group_size", "field", "problem", "accepted"), [
    (150_000, 20_000, "households", "150000 households do not divide into groups of 20000",
     "a multiple of the group size 20000 from 20000 to 20000000"),
    (100_000, 10, "households", "make 10000 groups, more than 1000",
     "a multiple of the group size 10 from 10 to 10000"),
    (5, 10, "households", "5 households make no group of 10", "from 10 to"),
    ("many", 10, "households", "expected an integer, got 'many'", "a multiple of the group"),
    (100_000, 0, "group_size", "got 0", "an integer from 1 to 20000000"),
    (100_000, True, "group_size", "got True", "an integer from 1"),
])
def test_with_groups_of_rejects_sizes_that_do_not_fit(households: object, group_size: object,
                                                       field: str, problem: str,
                                                       accepted: str) -> None:
    paper = load_scenario(SCENARIOS / "paper_100k.yaml")
    with pytest.raises(ScenarioError) as info:
        paper.with_groups_of(households, group_size)  # type: ignore[arg-type]
    assert len(info.value.problems) == 1
    assert_problem(info.value, str(paper.source_path), field, accepted, problem=problem)


def test_resolve_path_is_relative_to_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "cat.yaml").write_text("{}\n")
    path = write(tmp_path, with_changes(appliances={"catalogue": "data/cat.yaml"}), "s.yaml")
    s = load_scenario(path)
    assert s.resolve_path(s.appliances.catalogue) == tmp_path / "data" / "cat.yaml"
    assert s.resolve_path(str(tmp_path / "x.yaml")) == tmp_path / "x.yaml"
    assert scenario_from_dict(MINIMAL).resolve_path("a/b.yaml") == Path("a/b.yaml")


def test_yaml_conveniences(tmp_path: Path) -> None:
    text = yaml.safe_dump(MINIMAL) + (
        "dr_program:\n  start: 17:45\n  end: '9:05 '\n  reduction_goal_kwh: 1e3\n"
        "  notice_minutes: 30\n"
    )
    text = text.replace("households: 100", "households: 1_00")
    with pytest.raises(ScenarioError) as info:  # 09:05 is before 17:45
        load_scenario(write(tmp_path, text))
    assert_problem(info.value, str(tmp_path / "bad.yaml"), "dr_program.end", "after start")
    s = load_scenario(write(tmp_path, text.replace("'9:05 '", "21:00")))
    assert (s.households, s.dr_program.start, s.dr_program.end) == (100, "17:45", "21:00")
    assert s.dr_program.reduction_goal_kwh == 1000.0 and s.dr_program.announce_minute == 1035


# --- bad input: each message names the file, the field path and what is accepted -------------


def test_unknown_top_level_key(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(housholds=100))
    assert_problem(load_error(path), str(path), "housholds", "households", "groups",
                   "dr_program", problem="unknown key 'housholds' (did you mean 'households'?)")


def test_source_path_is_not_a_yaml_key(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(source_path="elsewhere.yaml"))
    line = assert_problem(load_error(path), str(path), "source_path", "households",
                          problem="unknown key")
    assert "source_path," not in line.split("accepted:")[1]


def test_unknown_nested_key(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(dr_program={"strat": "18:00"}))
    assert_problem(load_error(path), str(path), "dr_program.strat", "start", "end",
                   "notice_minutes", problem="did you mean 'start'?")
    groups = copy.deepcopy(MINIMAL["groups"])
    groups[1]["colour"] = "red"
    path = write(tmp_path, with_changes(groups=groups))
    assert_problem(load_error(path), str(path), "groups[1].colour", "name", "size", "range",
                   "follow_through_drop", problem="unknown key 'colour'")


def test_wrong_type(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(households="many"))
    assert_problem(load_error(path), str(path), "households", "an integer from 1 to 20000000",
                   problem="'many'")
    path = write(tmp_path, with_changes(seed=True))  # not silently 1
    assert_problem(load_error(path), str(path), "seed", "an integer from 0",
                   problem="true/false is not a number")
    path = write(tmp_path, with_changes(ev=5))
    assert_problem(load_error(path), str(path), "ev", "penetration", "pause_in_progress",
                   problem="expected a mapping")
    path = write(tmp_path, with_changes(incentive={"u_mappings": 1.1}))
    assert_problem(load_error(path), str(path), "incentive.u_mappings", "a list",
                   "a number in [1, 2]", problem="expected a list")


def test_out_of_range_value(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(monitoring={"gamma_group": 1.5}))
    assert_problem(load_error(path), str(path), "monitoring.gamma_group", "a number in (0, 1]",
                   problem="(got 1.5)")
    path = write(tmp_path, with_changes(incentive={"u_mappings": [1.05, 2.5]}))
    assert_problem(load_error(path), str(path), "incentive.u_mappings[1]",
                   "a number in [1, 2]", problem="2.5")
    groups = copy.deepcopy(MINIMAL["groups"])
    groups[0]["follow_through_drop"] = 1.0
    path = write(tmp_path, with_changes(groups=groups))
    assert_problem(load_error(path), str(path), "groups[0].follow_through_drop",
                   "a number in [0, 1)", "or null (use the scenario's value)")


def test_bad_clock_time(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(dr_program={"start": "25:00"}))
    assert_problem(load_error(path), str(path), "dr_program.start", "HH:MM", "00:00 to 23:59",
                   problem="expected a clock time HH:MM, e.g. 18:30, got '25:00'")
    path = write(tmp_path, with_changes(dr_program={"end": 1230}))
    assert_problem(load_error(path), str(path), "dr_program.end", "HH:MM",
                   problem="expected a clock time HH:MM")


@pytest.mark.parametrize("season", ["autumn", 13, 0, "5", True])
def test_bad_season_is_one_line(tmp_path: Path, season) -> None:
    path = write(tmp_path, with_changes(season=season))
    err = load_error(path)
    assert_problem(err, str(path), "season", "winter, transition, summer, or a month from 1 "
                   "to 12", problem="not a season or a month")
    assert len(str(err).splitlines()) == 1


def test_day_type_and_heating_settings(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(day_type="holiday"))
    assert_problem(load_error(path), str(path), "day_type", "'saturday'")
    path = write(tmp_path, with_changes(appliances={"electric_heating": {"storage_heaters": 2}}))
    assert_problem(load_error(path), str(path), "appliances.electric_heating.storage_heaters",
                   "a number in [0, 1]")
    s = scenario_from_dict(with_changes(season=10, day_type="sunday"))
    assert (s.month, s.day_type) == (10, "sunday")
    assert [scenario_from_dict(with_changes(season=x)).month
            for x in ("winter", "transition", "summer")] == [1, 4, 7]


def test_end_before_start(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(dr_program={"start": "19:00", "end": "18:00"}))
    assert_problem(load_error(path), str(path), "dr_program.end",
                   "a clock time after start (19:00)", problem="end 18:00 is not after start")


def test_sizes_not_adding_up(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(households=120))
    assert_problem(load_error(path), str(path), "groups", "add up to households (120)",
                   problem="the group sizes add up to 100 but households is 120")


def paper_ranges(**changes: tuple[int, int]) -> dict:
    data = yaml.safe_load((SCENARIOS / "paper_100k.yaml").read_text())
    for group in data["groups"]:
        if group["name"] in changes:
            group["range"] = list(changes[group["name"]])
    return data


def test_ranges_with_a_gap(tmp_path: Path) -> None:
    path = write(tmp_path, paper_ranges(G3=(30_002, 35_000)))
    assert_problem(load_error(path), str(path), "groups[2].range",
                   "a range starting at consumer 30001",
                   problem="consumer 30001 is in no group")


def test_ranges_overlapping(tmp_path: Path) -> None:
    path = write(tmp_path, paper_ranges(G2=(10_001, 30_500)))
    assert_problem(load_error(path), str(path), "groups[2].range",
                   "a range starting at consumer 30501",
                   problem="overlaps groups[1] ('G2'), which ends at 30500")


def test_ranges_not_starting_at_one(tmp_path: Path) -> None:
    path = write(tmp_path, paper_ranges(G1=(2, 10_000)))
    assert_problem(load_error(path), str(path), "groups[0].range",
                   "a range starting at consumer 1", problem="must start at 1")


def test_ranges_not_ending_at_households(tmp_path: Path) -> None:
    path = write(tmp_path, paper_ranges(G5=(60_001, 99_000)))
    assert_problem(load_error(path), str(path), "groups[4].range",
                   "the last range ends at households (100000)",
                   problem="ends at consumer 99000 but households is 100000")


def test_range_backwards(tmp_path: Path) -> None:
    path = write(tmp_path, paper_ranges(G3=(35_000, 30_001)))
    assert_problem(load_error(path), str(path), "groups[2].range", "1 <= first <= last",
                   problem="ends before it starts")


def test_mixing_size_and_range(tmp_path: Path) -> None:
    groups = [{"name": "a", "range": [1, 40]}, {"name": "b", "size": 60}]
    path = write(tmp_path, with_changes(groups=groups))
    assert_problem(load_error(path), str(path), "groups[1]", "all size or all range",
                   problem="uses size but groups[0] uses range")
    groups = [{"name": "a", "size": 40, "range": [1, 40]}, {"name": "b", "size": 60}]
    path = write(tmp_path, with_changes(groups=groups))
    assert_problem(load_error(path), str(path), "groups[0]", "exactly one of size",
                   problem="both size and range given")
    path = write(tmp_path, with_changes(groups=[{"name": "a"}]))
    assert_problem(load_error(path), str(path), "groups[0]", "exactly one of size",
                   problem="neither size nor range given")


def test_duplicate_group_names(tmp_path: Path) -> None:
    groups = [{"name": "a", "size": 40}, {"name": "a", "size": 60}]
    path = write(tmp_path, with_changes(groups=groups))
    assert_problem(load_error(path), str(path), "groups[1].name", "a name that no other group",
                   problem="duplicate group name 'a' (also groups[0].name)")


def test_per_household_min_above_max(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(appliances={"per_household_min": 26}))
    assert_problem(load_error(path), str(path), "appliances.per_household_min",
                   "per_household_min <= per_household_max", "1 to 60",
                   problem="per_household_min (26) is greater than per_household_max (25)")


def test_invalid_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "name: t\nseed: 1\ngroups: [{name: a, size: 1}\n")
    assert_problem(load_error(path), str(path), "line 4, column 1", "YAML text",
                   problem="invalid YAML")
    path = write(tmp_path, "name: t\n  seed: 1\n")
    assert_problem(load_error(path), str(path), "line 2, column 7", "YAML text",
                   problem="invalid YAML")


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    path = write(tmp_path, "name: t\nseed: 1\nseed: 2\n")
    assert_problem(load_error(path), str(path), "line 3, column 1", "YAML text",
                   problem="duplicate key 'seed' (first given on line 2)")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"
    assert_problem(load_error(path), str(path), "(file)", "an existing scenario YAML file",
                   problem="no such file")


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    assert_problem(load_error(path), str(path), "(top level)", "a mapping with the keys name",
                   problem="empty")


def test_top_level_not_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "- name: t\n- seed: 1\n")
    assert_problem(load_error(path), str(path), "(top level)", "a mapping with the keys name",
                   problem="expected a mapping of scenario keys, got a list")
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict([1, 2], source="inline")  # type: ignore[arg-type]
    assert_problem(info.value, "inline", "(top level)", "households")


def test_missing_required_key(tmp_path: Path) -> None:
    data = with_changes()
    del data["seed"]
    path = write(tmp_path, data)
    assert_problem(load_error(path), str(path), "seed", "an integer from 0",
                   problem="required key missing")


def test_referenced_file_missing(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(appliances={"catalogue": "my_catalogue.yaml"}))
    assert_problem(load_error(path), str(path), "appliances.catalogue",
                   "'default' or the path of a catalogue YAML file",
                   problem="file not found: 'my_catalogue.yaml'")


def test_every_problem_is_reported_one_per_line(tmp_path: Path) -> None:
    path = write(tmp_path, with_changes(seed=-1, chunk_size=0, colour="red",
                                        monitoring={"m_user": 0}))
    error = load_error(path)
    assert isinstance(error, ValueError)
    assert len(str(error).splitlines()) == len(error.problems) == 4
    assert {p for p, _, _ in error.problems} == {"seed", "chunk_size", "colour",
                                                 "monitoring.m_user"}
    assert all(line.startswith(f"{path}: ") and "; accepted: " in line
               for line in str(error).splitlines())


# --- the threshold, the goal, M&V and the reference ---------------------------------------------


def test_gamma_user_is_a_ratio_or_the_expected_share(tmp_path) -> None:
    ratio = scenario_from_dict(with_changes(monitoring={"gamma_user": 0.05}))
    assert ratio.monitoring.gamma_user == 0.05
    expected = scenario_from_dict(with_changes(
        monitoring={"gamma_user": {"method": "expected", "z": 2, "replicas": 8}}))
    assert expected.monitoring.gamma_user == ExpectedShare(method="expected", z=2.0, replicas=8)
    for bad, where, accepted in [
            (1.5, "monitoring.gamma_user", "a number in (0, 1]"),
            (True, "monitoring.gamma_user", "a number in (0, 1]"),
            ("high", "monitoring.gamma_user", "{method: expected"),
            ({"method": "expected", "z": -1}, "monitoring.gamma_user.z", "a number in [0, 10]"),
            ({"method": "expected", "replicas": 0}, "monitoring.gamma_user.replicas",
             "an integer from 1 to 64"),
            ({"z": 3}, "monitoring.gamma_user.method", "'expected'"),
            ({"method": "expected", "zz": 3}, "monitoring.gamma_user.zz", "the keys method")]:
        path = write(tmp_path, with_changes(monitoring={"gamma_user": bad}))
        assert_problem(load_error(path), str(path), where, accepted)


def test_reduction_goal_is_kwh_or_expected(tmp_path) -> None:
    assert scenario_from_dict(with_changes(
        dr_program={"reduction_goal_kwh": 500})).dr_program.reduction_goal_kwh == 500
    for bad in (0, -3, "expect", True):
        path = write(tmp_path, with_changes(dr_program={"reduction_goal_kwh": bad}))
        assert_problem(load_error(path), str(path), "dr_program.reduction_goal_kwh",
                       "a number of kWh > 0, or 'expected'")


def test_baseline_methods_and_mv_error(tmp_path) -> None:
    for method in ("same_day", "model", "prior_days", "x_of_y", "regression"):
        s = scenario_from_dict(with_changes(baseline={"method": method, "error": 0.05}))
        assert (s.baseline.method, s.baseline.error) == (method, 0.05)
    path = write(tmp_path, with_changes(baseline={"method": "history"}))
    assert_problem(load_error(path), str(path), "baseline.method", "'same_day'", "'model'",
                   "'prior_days'", "'x_of_y'", "'regression'")
    path = write(tmp_path, with_changes(baseline={"error": -0.1}))
    assert_problem(load_error(path), str(path), "baseline.error", "a number in [0, 1]")


def test_settlement_baseline_settings_name_the_bad_field(tmp_path) -> None:
    s = scenario_from_dict(with_changes(baseline={
        "method": "x_of_y", "x_of_y": {"days": 10, "take": 5},
        "regression": {"bin_minutes": 15, "other_day_type_days": 2},
        "day_of_adjustment": {"kind": "additive"}}))
    assert (s.baseline.x_of_y.take, s.baseline.x_of_y.rank) == (5, "high")
    assert (s.baseline.regression.bin_minutes, s.baseline.regression.days) == (15, 10)
    assert s.baseline.day_of_adjustment.kind == "additive"
    path = write(tmp_path, with_changes(baseline={"x_of_y": {"days": 5, "take": 6}}))
    assert_problem(load_error(path), str(path), "baseline.x_of_y.take",
                   "an integer from 1 to 5", problem="take 6 is more than days 5")
    path = write(tmp_path, with_changes(baseline={"x_of_y": {"rank": "low"}}))
    assert_problem(load_error(path), str(path), "baseline.x_of_y.rank", "'high'")
    path = write(tmp_path, with_changes(baseline={"regression": {"bin_minutes": 20}}))
    assert_problem(load_error(path), str(path), "baseline.regression.bin_minutes", "15", "60")
    path = write(tmp_path, with_changes(baseline={"regression": {"other_day_type_days": 31}}))
    assert_problem(load_error(path), str(path), "baseline.regression.other_day_type_days")
    path = write(tmp_path, with_changes(baseline={"day_of_adjustment": {"kind": "ratio"}}))
    assert_problem(load_error(path), str(path), "baseline.day_of_adjustment.kind",
                   "'multiplicative'", "'additive'")


def test_reference_block_is_validated(tmp_path) -> None:
    ref = {"source": "a paper", "reduction_mwh": {"expected": 10, "adaptive": 9.5},
           "utility_noncompliance_time": "19:11", "groups_compliant_at_prediction": 1}
    s = scenario_from_dict(with_changes(reference=ref))
    assert s.reference == Reference(source="a paper",
                                    reduction_mwh=ReferenceReductions(expected=10.0,
                                                                      adaptive=9.5),
                                    utility_noncompliance_time="19:11",
                                    groups_compliant_at_prediction=1)
    for bad, where in [({**ref, "groups_compliant_at_prediction": 3},
                        "reference.groups_compliant_at_prediction"),
                       ({**ref, "utility_noncompliance_time": "7 pm"},
                        "reference.utility_noncompliance_time"),
                       ({**ref, "reduction_mwh": {"expected": -1}},
                        "reference.reduction_mwh.expected"),
                       ({"reduction_mwh": {}}, "reference.source")]:
        path = write(tmp_path, with_changes(reference=bad))
        assert_problem(load_error(path), str(path), where)


def test_loading_a_scenario_loads_no_simulation_code() -> None:
    """``import drsim.scenario`` and loading a file stay light: no SimPy, kernel, Spark or CEP."""
    heavy = ["simpy", "drsim.household.sim", "drsim.household.population",
             "drsim.household.appliances", "drsim.utility.baseline", "cep_core", "pyspark"]
    code = (
        "import sys\n"
        "import drsim.scenario\n"
        f"drsim.scenario.load_scenario({str(SCENARIOS / 'quickstart.yaml')!r})\n"
        f"print([m for m in {heavy!r} if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name", ["../../etc/evil", "a/b", "a\\b", "..", ".", ".hidden", "",
                                  "a b", "a:b", "x" * 101, 12, None])
def test_a_scenario_name_is_a_name_not_a_path(tmp_path, name) -> None:
    path = write(tmp_path, {**MINIMAL, "name": name})
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    (line,) = str(caught.value).splitlines()
    assert line.startswith(f"{path}: name: ") and "accepted: a name of letters" in line


@pytest.mark.parametrize("name", ["quickstart", "paper_100k", "scale_1.6M", "Lastgang-März"])
def test_names_of_letters_digits_dashes_and_dots_are_kept(tmp_path, name) -> None:
    assert load_scenario(write(tmp_path, {**MINIMAL, "name": name})).name == name


@pytest.mark.parametrize("value", [".", "-._", ".inf", "-.inf", ".nan", "1e400"])
def test_a_dot_and_non_finite_numbers_are_refused_in_one_line(tmp_path, value) -> None:
    path = write(tmp_path, "name: t\nseed: 1\nhouseholds: 100\ngroups: [{name: a, size: 100}]\n"
                           f"incentive: {{saved_cost_per_kwh: {value}}}\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    (line,) = str(caught.value).splitlines()
    assert line.startswith(f"{path}: incentive.saved_cost_per_kwh: ")


def test_the_realistic_paper_scenario_is_the_paper_scenario_with_realistic_mv() -> None:
    """scenarios/paper_100k_realistic.yaml: the common day factor on, a settlement-grade
    baseline (not same_day) with a control group, the aggregate test; every other key the
    paper scenario's (docs/mv_and_monitoring.md)."""
    paper = load_scenario(SCENARIOS / "paper_100k.yaml").model_dump(mode="json")
    real = load_scenario(SCENARIOS / "paper_100k_realistic.yaml")
    assert real.day_variation.cv > 0 and real.day_variation.active
    assert real.baseline.method != "same_day"
    assert real.baseline.control_group is not None and real.baseline.control_group.share > 0
    assert real.monitoring.method == "aggregate"
    dumped = real.model_dump(mode="json")
    assert {k for k in paper if paper[k] != dumped[k]} == {
        "name", "day_variation", "monitoring", "baseline", "reference"}
    assert {k for k in paper["monitoring"]
            if paper["monitoring"][k] != dumped["monitoring"][k]} == {"method", "aggregate"}
