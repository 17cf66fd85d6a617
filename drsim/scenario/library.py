"""The packaged scenarios and sweeps: their names, finding one by name, copying one.

drsim ships its example scenarios as package data (``drsim/data/scenarios``): the
quickstart, the paper scenario of Table 6.2 (dissertation Ch. 6), its OP variant
(§6.3.4), the 1.6-million-household scale of Figure 6.13, and the what-if sweeps in
``sweeps/``. A packaged file is named by its path in that folder without ``.yaml``:
``quickstart``, ``sweeps/threshold_z``.

:func:`resolve` turns what a user typed into a file: a file that exists wins (a folder is
never a scenario: after ``drsim scenarios copy quickstart quickstart`` the name still
works); otherwise ``NAME``, ``NAME.yaml`` or ``scenarios/NAME.yaml`` (as the documentation
writes the packaged files) names a packaged file; otherwise the argument is returned as it
is, and reading it fails with "no such file" and the names (:func:`accepted`).

>>> "quickstart" in names("scenario") and "sweeps/threshold_z" in names("sweep")
True
>>> resolve("quickstart") == resolve("quickstart.yaml") == LIBRARY / "quickstart.yaml"
True
>>> resolve("scenarios/quickstart.yaml").resolve() == (LIBRARY / "quickstart.yaml").resolve()
True
"""

from __future__ import annotations

import re
import shutil
from importlib import resources
from pathlib import Path

__all__ = ["LIBRARY", "SWEEPS", "accepted", "base_of", "copy", "describe", "names", "packaged",
           "resolve"]

LIBRARY = Path(str(resources.files("drsim").joinpath("data", "scenarios")))
SWEEPS = "sweeps"  # the folder of the sweep files in the library
_DOCS_PREFIX = "scenarios/"  # how the documentation writes a packaged file's path
_BASE = re.compile(r"^scenario:\s*(\S+\.yaml)", re.MULTILINE)  # a sweep file's base scenario


def names(kind: str | None = None) -> list[str]:
    """The packaged files' names, sorted; ``kind`` (``"scenario"`` or ``"sweep"``) keeps
    the scenarios or the sweeps only."""
    found = sorted(p.relative_to(LIBRARY).with_suffix("").as_posix()
                   for p in LIBRARY.rglob("*.yaml"))
    if kind is None:
        return found
    return [n for n in found if n.startswith(SWEEPS + "/") == (kind == "sweep")]


def packaged(name: str) -> Path | None:
    """The packaged file ``name`` (``NAME``, ``NAME.yaml`` or ``scenarios/NAME.yaml``),
    None if there is none."""
    name = name.replace("\\", "/").removeprefix(_DOCS_PREFIX).removesuffix(".yaml")
    return LIBRARY / f"{name}.yaml" if name in names() else None


def resolve(argument: str | Path) -> Path:
    """The file ``argument`` names: itself if it is a file, else the packaged file of that
    name, else ``argument`` unchanged (its reader says what is wrong: no such file, a
    folder)."""
    path = Path(argument)
    if path.is_file():
        return path
    return packaged(str(argument)) or path


def accepted(kind: str) -> str:
    """What a missing file's message accepts: a path, or one of the packaged names."""
    return (f"the path of an existing {kind} YAML file, or a packaged {kind}'s name: "
            f"{', '.join(names(kind))} (drsim scenarios list)")


def describe(name: str, width: int = 80) -> str:
    """The first sentence of the packaged file's leading comment, cut to ``width``
    characters at a word (empty if it has none).

    >>> describe("quickstart")
    'Quickstart: a small demand-response (DR) day, 6,000 households, for a first run.'
    """
    path = packaged(name)
    words = []
    for line in (path.read_text(encoding="utf-8").splitlines() if path else []):
        text = line.lstrip("#").strip()
        if not line.startswith("#") or not text:
            break
        words += text.split()
    sentence = re.split(r"(?<=[.?!])\s+(?=[A-Z])", " ".join(words))[0]  # not "Ch. 6"
    if len(sentence) <= width:
        return sentence
    return sentence[:width - 4].rsplit(" ", 1)[0] + " ..."


def base_of(name: str) -> str | None:
    """The name of the packaged scenario a packaged sweep file runs (None: not a sweep)."""
    path = packaged(name)
    m = _BASE.search(path.read_text(encoding="utf-8")) if path else None
    if path is None or m is None:
        return None
    return (path.parent / m.group(1)).resolve().relative_to(LIBRARY.resolve()) \
        .with_suffix("").as_posix()


def copy(name: str, folder: str | Path) -> list[Path]:
    """Copy the packaged file ``name`` into ``folder`` (made if missing) with the files it
    needs, in the library's layout: a sweep goes to ``sweeps/`` beside its base scenario,
    so that its relative ``scenario:`` path still holds. Returns the files written.

    Raises ValueError (one line) for an unknown name, FileExistsError (one line) if any of
    the files is there already: nothing is then written.
    """
    if packaged(name) is None:
        raise ValueError(f"{name}: no packaged scenario or sweep of that name; "
                         f"accepted: {', '.join(names())}")
    wanted = [n for n in (name, base_of(name)) if n is not None]
    sources = [s for s in map(packaged, wanted) if s is not None]
    targets = [Path(folder) / s.relative_to(LIBRARY) for s in sources]
    there = [str(t) for t in targets if t.exists() or t.is_symlink()]
    if there:
        raise FileExistsError(f"{there[0]}: already exists; nothing was copied (remove it "
                              "or copy into another folder)")
    for source, target in zip(sources, targets, strict=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return targets
