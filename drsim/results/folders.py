"""Output folders: what drsim may replace, and writing a folder complete or not at all.

drsim deletes or replaces only what it wrote itself. At an output path it replaces

- a **result folder**: a real folder (not a symbolic link) holding a ``summary.json`` that
  drsim wrote (a JSON object whose list ``files`` names what the folder holds, itself
  included) and nothing but those files;
- a **sweep folder** (for a sweep only): ``runs.jsonl`` or ``sweep.json``, the table, the
  plots of the metrics that ``sweep.json`` records, and ``runs/`` holding result folders;
- a **stopped streamed run's folder**: a real folder holding only the run's live folder
  ``stream/``, marked (:data:`STREAM_MARK`) and holding only what a stream writes there
  (:data:`STREAM_ENTRIES`); the mark records what defines the run (:func:`mark_stream`),
  and the same command resumes it only when nothing of that changed (:func:`check_resume`);
- an **empty folder**.

Anything else is refused with a one-line error that names the path and what is there, and
nothing is touched: a file, a symbolic link, a folder with other files.

A folder is written into a hidden sibling ``.NAME.<32 hex digits>.partial`` that holds a
marker (:data:`PARTIAL_MARK`: the writer's process id and host) and is renamed to ``NAME``
when complete. A run killed while writing leaves that sibling behind; the next write to the
same path removes it, and only it: a sibling whose name is ``NAME``'s exactly, that holds
the marker, and whose writer's process is gone from this host. The folder being replaced is
renamed to ``.NAME.<hex>.old`` before it is removed; one left by a killed run is removed the
same way when it is still a result folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

SUMMARY = "summary.json"
PARTIAL_MARK = ".drsim-partial"
RESULT = "result"
SWEEP = "sweep"
Kind = Literal["result", "sweep"]

# a sweep folder's own files (drsim.sweeps.runner names them; kept here so that this module
# depends on nothing else of drsim)
SWEEP_JOURNAL = "runs.jsonl"
SWEEP_RECORD = "sweep.json"
SWEEP_RUNS = "runs"
SWEEP_TABLES = ("table.csv", "table.parquet")
# a streamed run's live folder inside its output folder (drsim.pipeline.streaming): the
# alerts as they happen, the second event's plan, the checkpoint
STREAM = "stream"
STREAM_MARK = ".drsim-stream"
STREAM_ENTRIES = frozenset({STREAM_MARK, "staging", "source", "alerts", "checkpoint",
                            "second_event_plan.json"})


class OutputError(OSError):
    """An output path that drsim may not write (one line naming it and why)."""


class OutputExistsError(OutputError, FileExistsError):
    """Something is at the output path and overwriting it was not asked for, or may not be."""


class OutputNotWritableError(OutputError):
    """The output path's folder cannot be written (read-only, not a folder, no rights)."""


class OutputRefusedError(OutputExistsError):
    """``--overwrite`` was asked for, but what is at the output path is not drsim's."""


class StreamChangedError(OutputExistsError):
    """The output path holds a stopped stream of another run than the one asked for (or
    one whose mark does not say which): it is not resumed."""


# --------------------------------------------------------------------------- what is there
def describe(path: str | Path) -> str:
    """What is at ``path``, in a few words: "a file (12 bytes)", "a symbolic link to X",
    "an empty folder", "a folder with 3 entries (a.txt, b/, c.txt)", "nothing"."""
    path = Path(path)
    if path.is_symlink():
        return f"a symbolic link to {os.readlink(path)}"
    if not path.exists():
        return "nothing"
    if path.is_dir():
        try:
            entries = sorted(path.iterdir())
        except OSError as exc:
            return f"a folder that cannot be read ({exc.strerror})"
        if not entries:
            return "an empty folder"
        return f"a folder with {_entries(entries)}"
    if path.is_file():
        size = path.stat().st_size
        return f"a file ({size:,} byte{'s' if size != 1 else ''})"
    return "a special file"


def _entries(entries: list[Path], shown: int = 3) -> str:
    names = [p.name + ("/" if p.is_dir() and not p.is_symlink() else "") for p in entries]
    more = ", ..." if len(names) > shown else ""
    return (f"{len(names)} entr{'ies' if len(names) != 1 else 'y'} "
            f"({', '.join(names[:shown])}{more})")


def _result_summary(folder: Path) -> dict | None:
    """The summary.json of ``folder`` if drsim wrote it (see the module docstring)."""
    path = folder / SUMMARY
    if path.is_symlink() or not path.is_file():
        return None
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(summary, dict):
        return None
    files = summary.get("files")
    if not isinstance(files, list) or SUMMARY not in files or not all(
            isinstance(f, str) for f in files):
        return None
    return summary


def _not_a_result_folder(folder: Path) -> str | None:
    """Why ``folder`` is not a result folder drsim wrote (None: it is one)."""
    if folder.is_symlink() or not folder.is_dir():
        return describe(folder)
    summary = _result_summary(folder)
    if summary is None:
        return f"{describe(folder)}, and no summary.json written by drsim"
    foreign = sorted(p for p in folder.iterdir() if p.name not in summary["files"])
    if foreign:
        return f"a drsim result folder that also holds files drsim did not write: " \
               f"{_entries(foreign)}"
    return None


def sweep_plots(folder: Path) -> set[str]:
    """The plot files of the metrics that the folder's sweep.json records."""
    try:
        record = json.loads((folder / SWEEP_RECORD).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return set()
    metrics = record.get("metrics") if isinstance(record, dict) else None
    if not isinstance(metrics, list):
        return set()
    return {sweep_plot_name(m) for m in metrics if isinstance(m, str)}


def sweep_plot_name(metric: str) -> str:
    """The file name of a sweep's plot of ``metric``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", metric) + ".png"


def is_sweep_folder(folder: Path) -> bool:
    """A real folder holding a sweep's journal or record."""
    return (folder.is_dir() and not folder.is_symlink()
            and ((folder / SWEEP_JOURNAL).is_file() or (folder / SWEEP_RECORD).is_file()))


def _not_a_sweep_folder(folder: Path) -> str | None:
    """Why ``folder`` is not a sweep folder made only of what drsim wrote (None: it is)."""
    if not is_sweep_folder(folder):
        what = describe(folder)
        return what if folder.is_symlink() or not folder.is_dir() else \
            f"{what}, and no {SWEEP_JOURNAL} or {SWEEP_RECORD}"
    own = {SWEEP_JOURNAL, SWEEP_RECORD, SWEEP_RUNS, *SWEEP_TABLES, *sweep_plots(folder)}
    foreign = [p for p in folder.iterdir()
               if p.name not in own and not _is_temporary(p)]
    runs = folder / SWEEP_RUNS
    if runs.is_symlink() or runs.exists() and not runs.is_dir():
        foreign.append(runs)
    elif runs.is_dir():
        for run in runs.iterdir():
            if _not_a_result_folder(run) is not None and not _is_leftover(run):
                foreign.append(run)
    if foreign:
        return (f"a sweep folder that also holds files drsim did not write: "
                f"{_entries(sorted(foreign))}")
    return None


def _is_temporary(path: Path) -> bool:
    """A sweep's file being written (``.sweep.json.tmp``, ``.table.csv.tmp``, ...)."""
    return (path.is_file() and not path.is_symlink() and path.name.startswith(".")
            and ".tmp" in path.name)


def _is_empty_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and not any(path.iterdir())


def _stream_foreign(path: Path) -> list[Path] | None:
    """The entries of ``path``'s marked live folder that a stream does not write (None:
    ``path`` is not a real folder holding only a marked live folder)."""
    if path.is_symlink() or not path.is_dir() or [p.name for p in path.iterdir()] != [STREAM]:
        return None
    live = path / STREAM
    if live.is_symlink() or not (live / STREAM_MARK).is_file():
        return None
    return sorted(p for p in live.iterdir()
                  if p.name not in STREAM_ENTRIES and p.name[1:] not in STREAM_ENTRIES)


def stream_in_progress(path: str | Path) -> bool:
    """A real folder holding only a streamed run's live folder (:data:`STREAM`, marked,
    holding only what a stream writes): a streamed run that has not finished, which the
    same command resumes (:func:`check_resume`)."""
    return _stream_foreign(Path(path)) == []


def mark_stream(live: str | Path, identity: dict, scenario: dict | None = None) -> None:
    """Mark ``live`` as a streamed run's live folder, recording the ``identity`` of the run
    (what defines it, as JSON values) and the ``scenario``'s settings (to name a changed
    field when a resume is refused)."""
    live = Path(live)
    hidden = live / f".{STREAM_MARK}"  # a hidden entry's name: "." + its own
    hidden.write_text(json.dumps({"identity": identity, "scenario": scenario}, indent=1,
                                 sort_keys=True) + "\n", encoding="utf-8")
    os.replace(hidden, live / STREAM_MARK)


def _stream_mark(path: Path) -> dict:
    """The mark of the live folder in ``path`` ({} when it records no identity: written
    by an older drsim)."""
    try:
        mark = json.loads((path / STREAM / STREAM_MARK).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return mark if isinstance(mark, dict) and isinstance(mark.get("identity"), dict) else {}


def check_resume(path: str | Path, identity: dict, scenario: dict | None = None) -> None:
    """:class:`StreamChangedError` unless the stopped stream at ``path`` is the run of
    ``identity`` (:func:`mark_stream`): one line naming what changed, nothing touched."""
    path = Path(path)
    mark = _stream_mark(path)
    advice = "run with --overwrite to start afresh, or another --out"
    if not mark:
        raise StreamChangedError(
            f"--out {path} holds a stopped streamed run whose mark does not record which run "
            f"it is (an older drsim's), so it cannot be resumed safely: {advice}")
    then = mark["identity"]
    changed = []
    for key in [*identity, *(k for k in then if k not in identity)]:
        if then.get(key) == identity.get(key):
            continue
        if key == "scenario_hash" and isinstance(mark.get("scenario"), dict) and scenario:
            changed += changes(mark["scenario"], scenario)
        changed.append(f"{key.replace('_', ' ')} {_shown(then.get(key))} then, "
                       f"{_shown(identity.get(key))} now")
    if changed:
        raise StreamChangedError(f"--out {path} holds a stopped streamed run made with other "
                                 f"inputs ({'; '.join(changed)}): {advice}")


def stream_folder(out: str | Path, overwrite: bool, identity: dict, scenario: dict) -> Path:
    """The live folder of a streamed run into ``out``: the one a stopped run of the same
    ``identity`` left (to resume; another run's is refused, untouched:
    :class:`StreamChangedError`), else a new one, marked with ``identity`` and the
    ``scenario``'s settings (what is at ``out``, a stopped stream too, replaced only as
    ``overwrite`` allows)."""
    out = Path(out)
    if stream_in_progress(out) and not overwrite:
        check_resume(out, identity, scenario)
        return out / STREAM
    check_output(out, overwrite)
    if os.path.lexists(out):
        remove(out)
    (out / STREAM).mkdir(parents=True)
    mark_stream(out / STREAM, identity, scenario)
    return out / STREAM


def file_hash(path: str | Path) -> str:
    """The SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def changes(then: object, now: object, shown: int = 4, at: str = "") -> list[str]:
    """Where two JSON values differ, as "path THEN then, NOW now" (``groups[0].size 2000
    then, 134 now``), the first ``shown`` of them and how many more.

    Examples
    --------
    >>> changes({"a": [1, 2], "b": "x"}, {"a": [1, 3], "b": "x", "c": True})
    ['a[1] 2 then, 3 now', 'c none then, true now']
    """
    found = _changes(then, now, at)
    more = len(found) - shown
    return found[:shown] + ([f"and {more} more field{'s' if more != 1 else ''}"]
                            if more > 0 else [])


def _changes(then: object, now: object, at: str) -> list[str]:
    if isinstance(then, dict) and isinstance(now, dict):
        return [c for key in [*then, *(k for k in now if k not in then)]
                for c in _changes(then.get(key), now.get(key),
                                  f"{at}.{key}" if at else str(key))]
    if isinstance(then, list) and isinstance(now, list) and len(then) == len(now):
        return [c for i, (a, b) in enumerate(zip(then, now, strict=True))
                for c in _changes(a, b, f"{at}[{i}]")]
    return [] if then == now else [f"{at} {_shown(then)} then, {_shown(now)} now"]


def _shown(value: object) -> str:
    """A value in a one-line message: a SHA-256 by its first 12 digits, text as it is."""
    if isinstance(value, str):
        return value[:12] + "…" if re.fullmatch(r"[0-9a-f]{64}", value) else value
    return "none" if value is None else json.dumps(value)


def problem(path: str | Path, kind: Kind = RESULT) -> str | None:
    """Why drsim may not replace what is at ``path`` with a ``kind`` folder, in words that
    name what is there (None: it may, or nothing is there)."""
    path = Path(path)
    if not os.path.lexists(path) or _is_empty_folder(path):
        return None
    if kind == RESULT and (foreign := _stream_foreign(path)) is not None:
        return None if not foreign else \
            f"a stopped streamed run whose {STREAM}/ also holds files drsim did not write: " \
            f"{_entries(foreign)}"
    if kind == SWEEP:
        return _not_a_sweep_folder(path)
    if is_sweep_folder(path):
        return "a sweep folder (drsim sweep replaces it; a run does not)"
    return _not_a_result_folder(path)


# --------------------------------------------------------------------------- checking
def check_writable(path: str | Path) -> Path:
    """``path`` as a Path if a folder can be written there: a marker file is made and
    removed in its nearest existing ancestor (where the hidden sibling, or the missing
    parents, will be made); else :class:`OutputNotWritableError`, one line naming the path
    and why. A read-only disk or a missing right is found before any work, not after it."""
    path = Path(path)
    ancestor = _named(path).absolute().parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputNotWritableError(f"cannot write {path}: {ancestor} is {describe(ancestor)}, "
                                     "not a folder; choose another --out")
    try:
        handle, marker = tempfile.mkstemp(prefix=".drsim-writable.", dir=ancestor)
        os.close(handle)
        os.unlink(marker)
    except OSError as exc:
        raise OutputNotWritableError(
            f"cannot write {path}: the folder {ancestor} is not writable "
            f"({exc.strerror or exc}); choose another --out") from None
    return path


def check_output(path: str | Path, overwrite: bool = False, kind: Kind = RESULT) -> Path:
    """``path`` as a Path if a ``kind`` folder may be written there; else
    :class:`OutputNotWritableError` (:func:`check_writable`), :class:`OutputExistsError`
    (something is there and ``overwrite`` is false) or :class:`OutputRefusedError`
    (``overwrite``, but what is there is not drsim's). Each error is one line naming the
    path and what is there; nothing is touched."""
    path = check_writable(path)
    if not os.path.lexists(path):
        return path
    why = problem(path, kind)
    if not overwrite:
        if why is None:
            raise OutputExistsError(f"output folder {path} already exists "
                                    f"({describe(path)}); use --overwrite to replace it")
        raise OutputExistsError(f"{path} already exists and is {why}; choose another --out")
    if why is not None:
        raise OutputRefusedError(
            f"--overwrite refused: {path} is {why}; drsim replaces only a folder it wrote "
            f"or an empty folder, so nothing was touched (choose another --out)")
    return path


def remove(path: str | Path, kind: Kind = RESULT) -> None:
    """Remove the ``kind`` folder at ``path`` after checking it is drsim's
    (:class:`OutputRefusedError` if it is not; nothing is touched then)."""
    path = check_output(path, overwrite=True, kind=kind)
    if os.path.lexists(path):
        shutil.rmtree(path)


# --------------------------------------------------------------------------- writing
def _named(path: Path) -> Path:
    """``path`` with a last component to name siblings after ("." and ".." resolved)."""
    return path.resolve() if path.name in ("", ".", "..") else path


def _sibling(out: Path, suffix: str) -> Path:
    return out.with_name(f".{out.name}.{uuid.uuid4().hex}.{suffix}")


def _writer_alive(partial: Path) -> bool:
    """Whether the process that writes ``partial`` may still be running (True when its
    marker cannot be read, or names another host: then nobody here can know)."""
    try:
        mark = json.loads((partial / PARTIAL_MARK).read_text(encoding="utf-8"))
        pid, host = int(mark["pid"]), str(mark["host"])
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return True
    if host != socket.gethostname():
        return True
    if pid == os.getpid():
        return False  # this process is not writing it now: it was an earlier run of ours
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_leftover(path: Path) -> bool:
    """A ``.NAME.<hex>.partial`` of a writer that is gone, or a ``.NAME.<hex>.old`` that
    is still a result folder: what a killed run left (see the module docstring)."""
    if path.is_symlink() or not path.is_dir() or not path.name.startswith("."):
        return False
    parts = path.name.rsplit(".", 2)
    if len(parts) != 3 or not re.fullmatch(r"[0-9a-f]{32}", parts[1]):
        return False
    if parts[2] == "partial":
        return (path / PARTIAL_MARK).is_file() and not _writer_alive(path)
    return parts[2] == "old" and _not_a_result_folder(path) is None


def leftovers(out: str | Path) -> list[Path]:
    """The siblings of ``out`` that a killed write to ``out`` left (module docstring)."""
    out = Path(out)
    if not out.parent.is_dir():
        return []
    pattern = re.compile(rf"\.{re.escape(out.name)}\.[0-9a-f]{{32}}\.(partial|old)")
    return sorted(p for p in out.parent.iterdir()
                  if pattern.fullmatch(p.name) and _is_leftover(p))


@contextmanager
def staged(out: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """A hidden sibling folder of ``out`` to write into, renamed to ``out`` when the block
    ends normally (replacing what is there only as :func:`check_output` allows, checked
    again at that moment) and removed when it raises. What a killed write to ``out`` left
    is removed first."""
    out = _named(Path(out))
    check_output(out, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    for left in leftovers(out):
        shutil.rmtree(left, ignore_errors=True)
    tmp = _partial(out)
    try:
        yield tmp
        (tmp / PARTIAL_MARK).unlink()
        _replace(tmp, out, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _partial(out: Path) -> Path:
    """A new hidden sibling ``.NAME.<hex>.partial`` of ``out``, marked with its writer (so
    that the next write removes it if this one is killed: :func:`leftovers`)."""
    tmp = _sibling(out, "partial")
    tmp.mkdir(mode=0o755)
    try:
        (tmp / PARTIAL_MARK).write_text(json.dumps({"pid": os.getpid(),
                                                    "host": socket.gethostname()}),
                                        encoding="utf-8")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def _replace(tmp: Path, out: Path, overwrite: bool) -> None:
    """Rename the finished folder ``tmp`` to ``out``; what is at ``out`` is checked again
    (it may have changed while the folder was written) and moved aside, then removed."""
    check_output(out, overwrite)
    if not os.path.lexists(out):
        tmp.rename(out)
        return
    old = _sibling(out, "old")
    out.rename(old)
    try:
        tmp.rename(out)
    except BaseException:
        old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def publish_beside(out: str | Path, write) -> None:
    """Write files by ``write(folder)`` into a hidden sibling of ``out`` and move them into
    the folder ``out`` (a streamed run's, holding its live folder), summary.json last, so
    that the folder looks complete only when it is; the sibling is removed either way."""
    out = Path(out)
    tmp = _partial(out)
    try:
        write(tmp)
        (tmp / PARTIAL_MARK).unlink()
        for entry in sorted(tmp.iterdir(), key=lambda p: p.name == SUMMARY):
            entry.rename(out / entry.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
