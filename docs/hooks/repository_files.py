"""Links from the docs pages to repository files outside ``docs/``, in the docs site.

A page links to a repository file as GitHub shows it, relative to the page
(``[LICENSE](../LICENSE)``, ``[the quickstart](../scenarios/quickstart.yaml)``). mkdocs
knows only the files under ``docs_dir``; this hook makes each file so linked one of the
site's, under ``_repository/<its path in the repository>``, and points the link there, so
the link works on GitHub and in the site alike. A link to a file that is not there, to a
folder or to a Markdown file outside ``docs/`` is left as written: mkdocs reports it, and
``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

FOLDER = "_repository"  # where the linked files sit in the site
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?((?:\s+\"[^\"]*\")?\))")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def outside_target(page_uri: str, target: str, docs_dir: Path, root: Path) -> str | None:
    """The repository path (``LICENSE``, ``scenarios/quickstart.yaml``) of a link's target,
    written relative to the page ``page_uri`` (a path under ``docs_dir``), when it is a file
    of the repository outside ``docs_dir`` that the site can serve; else None.

    >>> from pathlib import Path
    >>> docs = Path(__file__).resolve().parents[1]
    >>> outside_target("reference/drsim.md", "../../LICENSE", docs, docs.parent)
    'LICENSE'
    >>> outside_target("index.md", "model.md", docs, docs.parent) is None
    True
    """
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return None  # a URL or an absolute path
    page_dir = posixpath.dirname(page_uri)
    inside = posixpath.normpath(posixpath.join(docs_dir.name, page_dir, target))
    if inside == docs_dir.name or inside.startswith(docs_dir.name + "/"):
        return None  # a file of docs_dir: mkdocs's own
    if inside.startswith("../") or inside.endswith(".md") or not (root / inside).is_file():
        return None
    return inside


def page_links(markdown: str) -> list[str]:
    """The link targets of a page's Markdown, outside fenced code blocks."""
    return [match[2] for match in LINK.finditer(FENCE.sub("", markdown))]


@event_priority(50)  # before mkdocs-jupyter's on_files, which wraps the notebooks' files
def on_files(files: Files, config) -> Files:
    """Every repository file outside ``docs_dir`` that a page links to, among the site's
    files as ``_repository/<path>``."""
    docs_dir = Path(config.docs_dir)
    root = docs_dir.parent
    linked = set()
    for file in files.documentation_pages():
        if not file.src_uri.endswith(".md"):
            continue  # a notebook: mkdocs-jupyter renders it, links and all
        markdown = Path(file.abs_src_path).read_text(encoding="utf-8")
        linked.update(path for target in page_links(markdown)
                      if (path := outside_target(file.src_uri, target, docs_dir, root)))
    for path in sorted(linked):
        files.append(File.generated(config, f"{FOLDER}/{path}",
                                    abs_src_path=str(root / path)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """The page's links to repository files outside ``docs_dir`` pointed at the site's
    copies (code blocks left as they are)."""
    docs_dir = Path(config.docs_dir)
    page_dir = posixpath.dirname(page.file.src_uri)

    def point(match: re.Match) -> str:
        path = outside_target(page.file.src_uri, match[2], docs_dir, docs_dir.parent)
        if path is None:
            return match[0]
        target = posixpath.relpath(f"{FOLDER}/{path}", page_dir or ".")
        return f"{match[1]}{target}{match[3] or ''}{match[4]}"

    pieces, last = [], 0
    for fence in FENCE.finditer(markdown):
        pieces += [LINK.sub(point, markdown[last:fence.start()]), fence[0]]
        last = fence.end()
    return "".join([*pieces, LINK.sub(point, markdown[last:])])
