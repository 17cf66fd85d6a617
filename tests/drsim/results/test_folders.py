"""What drsim may replace at an output path, and what a killed run leaves (drsim.results.folders).

drsim deletes or replaces only what it wrote: a user's file, a user's folder, a symbolic
link and a run folder with a user's file in it are refused (one line naming the path and
what is there) and left as they were; a run folder and an empty folder are replaced."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from drsim.results import folders
from drsim.results.folders import OutputExistsError, OutputRefusedError, check_output, staged


def snapshot(root):
    """Every path under ``root`` (itself included) with its content or link target."""
    out = {}
    for path in [root, *sorted(root.rglob("*"))] if root.exists() else []:
        if path.is_symlink():
            out[str(path)] = ("link", os.readlink(path))
        elif path.is_file():
            out[str(path)] = ("file", path.read_bytes())
        else:
            out[str(path)] = ("folder", None)
    return out


def write(out, overwrite=False, marker="new"):
    """A result folder written the way drsim writes one (summary.json lists its files)."""
    with staged(out, overwrite) as tmp:
        (tmp / "data.txt").write_text(marker)
        (tmp / "summary.json").write_text(json.dumps(
            {"files": ["summary.json", "data.txt"]}))
    return out


def users_folder(tmp_path):
    mine = tmp_path / "mydocs"
    (mine / "chapters").mkdir(parents=True)
    (mine / "thesis.txt").write_text("three years of work")
    (mine / "chapters" / "one.txt").write_text("chapter one")
    return mine


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_users_folder_is_refused_and_untouched(tmp_path, overwrite):
    mine = users_folder(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(OutputExistsError) as info:
        write(mine, overwrite=overwrite)
    message = str(info.value)
    assert "\n" not in message and str(mine) in message
    assert "a folder with 2 entries (chapters/, thesis.txt)" in message
    assert isinstance(info.value, OutputRefusedError) == overwrite
    assert snapshot(tmp_path) == before  # nothing touched, no temporary sibling left


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_users_file_is_refused_and_called_a_file(tmp_path, overwrite):
    precious = tmp_path / "precious.txt"
    precious.write_text("do not lose me")
    before = snapshot(tmp_path)
    with pytest.raises(OutputExistsError) as info:
        write(precious, overwrite=overwrite)
    message = str(info.value)
    assert f"{precious} already exists and is a file (14 bytes)" in message or \
        f"{precious} is a file (14 bytes)" in message
    assert "output folder" not in message
    assert snapshot(tmp_path) == before


def test_a_symbolic_link_to_a_folder_is_refused_and_untouched(tmp_path):
    target = write(tmp_path / "run")  # even a link to a run folder: drsim made no link
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    before = snapshot(tmp_path)
    with pytest.raises(OutputRefusedError, match="a symbolic link to"):
        write(link, overwrite=True)
    assert snapshot(tmp_path) == before


def test_a_run_folder_and_an_empty_folder_are_replaced(tmp_path):
    out = write(tmp_path / "run", marker="first")
    with pytest.raises(OutputExistsError, match="use --overwrite to replace it"):
        write(out)
    write(out, overwrite=True, marker="second")
    assert (out / "data.txt").read_text() == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no .old or .partial
    empty = tmp_path / "empty"
    empty.mkdir()
    write(empty, overwrite=True)
    assert (empty / "summary.json").is_file()


def test_a_run_folder_holding_a_users_file_is_refused(tmp_path):
    out = write(tmp_path / "run")
    (out / "notes.txt").write_text("my notes on this run")
    before = snapshot(tmp_path)
    with pytest.raises(OutputRefusedError, match=r"files drsim did not write: 1 entry "
                                                 r"\(notes.txt\)"):
        write(out, overwrite=True)
    assert snapshot(tmp_path) == before


def test_a_summary_json_drsim_did_not_write_makes_no_run_folder(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "summary.json").write_text('{"mine": true}')
    with pytest.raises(OutputRefusedError, match="no summary.json written by drsim"):
        write(out, overwrite=True)
    assert json.loads((out / "summary.json").read_text()) == {"mine": True}


def test_what_changed_while_the_folder_was_written_is_checked_again(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(OutputExistsError), staged(out) as tmp:
        (tmp / "summary.json").write_text("{}")
        out.mkdir()  # a user made a folder there in the meantime
        (out / "thesis.txt").write_text("x")
    assert (out / "thesis.txt").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def partial(tmp_path, name, pid=None, host=None, hexdigits="ab" * 16):
    folder = tmp_path / f".{name}.{hexdigits}.partial"
    folder.mkdir()
    (folder / "summary.json").write_text("{}")
    if pid is not None:
        (folder / folders.PARTIAL_MARK).write_text(json.dumps(
            {"pid": pid, "host": host or socket.gethostname()}))
    return folder


def test_the_partial_folder_of_a_killed_run_is_removed_by_the_next_run_and_only_it(tmp_path):
    killed = partial(tmp_path, "out", pid=dead_pid())
    running = partial(tmp_path, "out", pid=os.getppid(), hexdigits="cd" * 16)  # alive
    elsewhere = partial(tmp_path, "out", pid=dead_pid(), host="another-host",
                        hexdigits="ef" * 16)  # nobody here can tell
    unmarked = partial(tmp_path, "out", hexdigits="01" * 16)  # not made by drsim
    other_name = partial(tmp_path, "out.b", pid=dead_pid())  # another --out's
    users = tmp_path / ".out.notes.partial"
    users.mkdir()
    assert folders.leftovers(tmp_path / "out") == [killed]
    write(tmp_path / "out")
    assert not killed.exists()
    for kept in (running, elsewhere, unmarked, other_name, users):
        assert kept.is_dir(), kept
    assert not (tmp_path / "out" / folders.PARTIAL_MARK).exists()


def test_the_old_folder_of_a_run_killed_while_replacing_is_removed(tmp_path):
    out = write(tmp_path / "out")
    old = tmp_path / f".out.{'12' * 16}.old"
    write(old)
    foreign = tmp_path / f".out.{'34' * 16}.old"
    foreign.mkdir()
    (foreign / "thesis.txt").write_text("x")
    write(out, overwrite=True)
    assert not old.exists() and (foreign / "thesis.txt").exists()


def test_describe_names_what_is_there(tmp_path):
    assert folders.describe(tmp_path / "nothing") == "nothing"
    (tmp_path / "f").write_text("x")
    assert folders.describe(tmp_path / "f") == "a file (1 byte)"
    (tmp_path / "d").mkdir()
    assert folders.describe(tmp_path / "d") == "an empty folder"
    for name in "abcd":
        (tmp_path / "d" / name).write_text("")
    assert folders.describe(tmp_path / "d") == "a folder with 4 entries (a, b, c, ...)"
    assert check_output(tmp_path / "new") == tmp_path / "new"


def test_a_run_killed_while_writing_leaves_a_partial_that_the_next_run_removes(tmp_path):
    """A process killed inside the staged block leaves its hidden ``.partial`` sibling;
    ``drsim run`` to the same --out removes it, and not another output's."""
    from pathlib import Path

    from typer.testing import CliRunner

    from drsim.cli import app

    killed = ("import os, signal, sys\nfrom drsim.results.folders import staged\n"
              "with staged(sys.argv[1]) as tmp:\n"
              "    (tmp / 'summary.json').write_text('{\"half\": ')\n"
              "    os.kill(os.getpid(), signal.SIGKILL)\n")
    for name in ("out", "other"):
        done = subprocess.run([sys.executable, "-c", killed, str(tmp_path / name)],
                              capture_output=True)
        assert done.returncode == -9, done.stderr
    left = {p.name.split(".")[1]: p for p in tmp_path.iterdir()}
    assert sorted(left) == ["other", "out"]
    assert all(p.name.endswith(".partial") and (p / "summary.json").exists()
               for p in left.values())
    assert not (tmp_path / "out").exists()  # nothing that looks finished

    quickstart = Path(__file__).resolve().parents[3] / "drsim/data/scenarios" / "quickstart.yaml"
    result = CliRunner().invoke(app, ["run", str(quickstart), "--households", "300",
                                      "--backend", "serial", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["out", left["other"].name])


def test_an_output_under_a_file_is_refused_before_any_work(tmp_path):
    users = tmp_path / "notes.txt"
    users.write_text("mine")
    before = snapshot(tmp_path)
    with pytest.raises(folders.OutputNotWritableError) as caught:
        check_output(users / "run")
    message = str(caught.value)
    assert "\n" not in message and str(users) in message and "a file (4 bytes)" in message
    assert snapshot(tmp_path) == before


def test_an_unwritable_output_folder_is_named_with_the_reason(tmp_path, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(folders.tempfile, "mkstemp", read_only)
    with pytest.raises(folders.OutputNotWritableError,
                       match=r"cannot write .*deep/run: the folder .* is not writable "
                             r"\(Read-only file system\)"):
        check_output(tmp_path / "deep" / "run")


def test_the_writability_check_leaves_nothing_behind(tmp_path):
    assert check_output(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert list(tmp_path.iterdir()) == []
