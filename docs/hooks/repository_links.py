"""Links that leave ``docs/``, in the docs site: to repository files, and from the notebooks.

A page links to a repository file as GitHub shows it, relative to the page
(``[LICENSE](../LICENSE)``, ``../drsim/data/scenarios/quickstart.yaml``: a real path, as
GitHub does not follow the symbolic link ``scenarios/``); a notebook of ``examples/``
links likewise, relative to ``examples/`` (``../docs/model.md``, ``what_if.ipynb``).
mkdocs knows only the site's files; this hook makes each repository file so linked one of
them, under ``_repository/<its path in the repository>``, and points the links at the
site's pages and files, so that a link works on GitHub and in the site alike.

What stays broken is reported: a Markdown page's link to a file that is not there, to a
folder or to a Markdown file outside ``docs/`` is left as written, for mkdocs to report; a
notebook's relative link to anything the site does not have is reported here (mkdocs checks
the links of Markdown pages only). Either fails ``mkdocs build --strict``.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

from mkdocs.plugins import event_priority, get_plugin_logger
from mkdocs.structure.files import File, Files

FOLDER = "_repository"  # where the linked files sit in the site
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?((?:\s+\"[^\"]*\")?\))")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
HREF = re.compile(r'href="([^"#:/][^"#:]*)(#[^"]*)?"')  # relative: no scheme, no leading /

log = get_plugin_logger(__name__)


def repository_path(folder: str, target: str) -> str | None:
    """The repository path a link's ``target`` names, written in a file of the repository's
    ``folder``; None for a URL, an absolute path or a path out of the repository.

    >>> repository_path("docs/reference", "../../LICENSE"), repository_path("docs", "model.md")
    ('LICENSE', 'docs/model.md')
    >>> repository_path("examples", "https://example.org"), repository_path("docs", "../..")
    (None, None)
    """
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return None
    path = posixpath.normpath(posixpath.join(folder, target))
    return None if path == ".." or path.startswith("../") else path


def served(path: str, docs: str, root: Path) -> bool:
    """Whether the site may serve the repository file ``path`` as one of ``_repository/``:
    a file outside ``docs`` that is not a Markdown page."""
    return (not (path + "/").startswith(docs + "/") and not path.endswith(".md")
            and (root / path).is_file())


def site_file(path: str, docs: str, root: Path, files: Files) -> File | None:
    """The site's file of the repository file ``path``: a page of ``docs``, a notebook
    (whose place in the site is its place in the repository), or a linked file under
    ``_repository/``; None when the site has none."""
    if (path + "/").startswith(docs + "/"):
        return files.get_file_from_path(path.removeprefix(docs + "/"))
    own = files.get_file_from_path(path)
    if own is not None and own.abs_src_path == str(root / path):
        return own
    return files.get_file_from_path(f"{FOLDER}/{path}")


def folder_of(file: File, root: Path) -> str:
    """The repository folder of a page's source (``docs/reference``, ``examples``)."""
    return Path(file.abs_src_path).parent.relative_to(root).as_posix()


def page_links(file: File) -> list[str]:
    """The link targets of a Markdown page or of a notebook's Markdown cells, outside fenced
    code blocks."""
    text = Path(file.abs_src_path).read_text(encoding="utf-8")
    if file.src_uri.endswith(".ipynb"):
        text = "\n\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"]
                           if cell["cell_type"] == "markdown")
    return [match[2] for match in LINK.finditer(FENCE.sub("", text))]


@event_priority(40)  # after the notebooks' hook, before mkdocs-jupyter wraps their files
def on_files(files: Files, config) -> Files:
    """Every repository file a page or notebook links to, among the site's files as
    ``_repository/<path>``."""
    root, docs = Path(config.docs_dir).parent, Path(config.docs_dir).name
    linked = set()
    for file in files.documentation_pages() + [f for f in files if f.src_uri.endswith(".ipynb")]:
        linked.update(path for target in page_links(file)
                      if (path := repository_path(folder_of(file, root), target))
                      and served(path, docs, root) and site_file(path, docs, root, files) is None)
    for path in sorted(linked):
        files.append(File.generated(config, f"{FOLDER}/{path}",
                                    abs_src_path=str(root / path)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """A Markdown page's links to repository files outside ``docs_dir`` pointed at the
    site's notebooks and copies (code blocks left as they are)."""
    root, docs = Path(config.docs_dir).parent, Path(config.docs_dir).name
    page_dir = posixpath.dirname(page.file.src_uri)

    def point(match: re.Match) -> str:
        path = repository_path(posixpath.join(docs, page_dir), match[2])
        if path is None or (path + "/").startswith(docs + "/"):
            return match[0]  # a URL, or a page of docs_dir: mkdocs's own
        file = site_file(path, docs, root, files)
        if file is None:
            return match[0]  # mkdocs reports it
        target = posixpath.relpath(file.src_uri, page_dir or ".")
        return f"{match[1]}{target}{match[3] or ''}{match[4]}"

    pieces, last = [], 0
    for fence in FENCE.finditer(markdown):
        pieces += [LINK.sub(point, markdown[last:fence.start()]), fence[0]]
        last = fence.end()
    return "".join([*pieces, LINK.sub(point, markdown[last:])])


def on_page_content(html: str, page, config, files: Files) -> str:
    """A notebook's relative links pointed at the site's pages and files; one to anything
    else reported."""
    if not page.file.src_uri.endswith(".ipynb"):
        return html
    root, docs = Path(config.docs_dir).parent, Path(config.docs_dir).name
    folder = posixpath.dirname(page.file.src_uri)  # the notebook's, in the repository too

    def point(match: re.Match) -> str:
        path = repository_path(folder, match[1])
        file = None if path is None else site_file(path, docs, root, files)
        if file is None:
            log.warning(f"{page.file.src_uri} links to {match[1]}, which the site does "
                        f"not have (a link is relative to {folder}/: ../docs/<page>.md)")
            return match[0]
        anchor = match[2] or ""
        return f'href="{file.url_relative_to(page.file)}{anchor}"'

    return HREF.sub(point, html)
