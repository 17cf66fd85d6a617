"""``drsim report FOLDER --html``: the report of a run or sweep folder written as one file.

The file goes beside the folder by default (``results/paper_100k`` →
``results/paper_100k.html``), never into it: a result folder holds only the files its
summary.json lists, which is what lets ``--overwrite`` replace it
(:mod:`drsim.results.folders`). The page is written to a hidden sibling
``.NAME.<hex>.partial`` and renamed into place when complete, so an interrupted write
leaves no file that looks complete. A file already there is replaced only when it is a
report drsim wrote (its page carries :data:`~drsim.report_html.page.GENERATOR`) and
``overwrite`` is asked; anything else is refused and left alone.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from drsim.results.report import ReportError

__all__ = ["MISSING_PLOTLY", "check_html_output", "default_output", "render", "write_html_report"]

MISSING_PLOTLY = ("drsim report --html needs plotly, which is not installed; install it "
                  "with: pip install 'drsim[report]'")


def default_output(folder: str | Path) -> Path:
    """Where the report of ``folder`` goes by default: ``<folder>.html`` beside it.

    >>> default_output("results/paper_100k").as_posix()
    'results/paper_100k.html'
    """
    folder = Path(folder)
    if folder.name in ("", ".", ".."):
        folder = folder.resolve()
    return folder.with_name(folder.name + ".html")


def _is_drsim_report(path: Path) -> bool:
    """Whether the file at ``path`` is a report drsim wrote (its head carries the mark)."""
    from drsim.report_html.page import GENERATOR

    try:
        with path.open("rb") as file:
            return GENERATOR.encode() in file.read(1024)
    except OSError:
        return False


def check_html_output(out: Path, folder: Path, overwrite: bool) -> None:
    """ReportError (one line naming the path) unless the report may be written to ``out``."""
    if out.resolve().is_relative_to(folder.resolve()):
        raise ReportError(f"{out}: inside the reported folder {folder}, which holds only what "
                          "drsim wrote there; accepted: a file outside it (--out)")
    if not os.path.lexists(out):
        if not out.parent.is_dir():
            raise ReportError(f"{out}: its folder {out.parent} does not exist")
        return
    if out.is_symlink() or not out.is_file() or not _is_drsim_report(out):
        raise ReportError(f"{out}: exists and is not a report drsim wrote; it is left alone "
                          "(choose another file with --out)")
    if not overwrite:
        raise ReportError(f"{out}: a report drsim wrote is already there; --overwrite "
                          "replaces it")


def _need_plotly() -> None:
    """ReportError (:data:`MISSING_PLOTLY`) when plotly is not installed."""
    from importlib.util import find_spec

    if find_spec("plotly") is None:
        raise ReportError(MISSING_PLOTLY)


def render(folder: Path) -> str:
    """The page of the run or sweep folder ``folder`` (ReportError when it is neither)."""
    from drsim.report_html.page import run_page, sweep_page
    from drsim.report_html.run_view import read_run_folder
    from drsim.report_html.sweep_view import read_sweep_view
    from drsim.sweeps.report import is_sweep_folder

    if is_sweep_folder(folder):
        sweep = read_sweep_view(folder)
        _need_plotly()
        return sweep_page(sweep)
    run = read_run_folder(folder)
    _need_plotly()
    return run_page(run)


def write_html_report(folder: str | Path, out: str | Path | None = None,
                      overwrite: bool = False) -> Path:
    """Write the HTML report of the run or sweep folder ``folder`` to ``out`` (default:
    :func:`default_output`) atomically and return its path; ReportError, one line naming
    the path, for a folder that cannot be reported or an output that may not be written."""
    folder = Path(folder)
    out = Path(out) if out is not None else default_output(folder)
    if folder.is_dir():
        check_html_output(out, folder, overwrite)  # before any work
    page = render(folder)
    check_html_output(out, folder, overwrite)  # again: it may have changed meanwhile
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex}.partial")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
