"""The example notebooks in the docs site: every ``examples/*.ipynb`` of the repository, in the
nav's section "Examples", rendered by mkdocs-jupyter (unexecuted: CI runs them elsewhere).

The notebooks stay where they are, outside ``docs_dir``: each joins the site's files as a
file ``examples/<name>.ipynb`` read from its place in the repository, so nothing is
copied into ``docs/``, and a notebook added or removed changes the site with no edit of
``mkdocs.yml``. Their links: ``repository_links.py``.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

SECTION = "Examples"
FOLDER = "examples"
FIRST = ("quickstart", "what_if")  # the nav's first notebooks, in this order; then by name


def notebooks(config) -> list[Path]:
    """The repository's example notebooks, ``examples/*.ipynb`` beside ``mkdocs.yml``, in
    the nav's order: :data:`FIRST`, then by name."""
    root = Path(config.config_file_path).parent
    order = {name: i for i, name in enumerate(FIRST)}
    return sorted((root / FOLDER).glob("*.ipynb"),
                  key=lambda path: (order.get(path.stem, len(FIRST)), path.name))


def on_config(config):
    """The nav's section of the notebooks (none when there are none)."""
    found = notebooks(config)
    if found and config.nav is not None:
        config.nav.append({SECTION: [f"{FOLDER}/{path.name}" for path in found]})
    return config


@event_priority(50)  # before mkdocs-jupyter's on_files, which takes the .ipynb files it finds
def on_files(files: Files, config) -> Files:
    """The notebooks among the site's files, each read from the repository's ``examples/``."""
    root = Path(config.config_file_path).parent
    for path in notebooks(config):
        # a File whose source folder is the repository's root: its src_uri, and so its
        # place in the site, is examples/<name>.ipynb (mkdocs-jupyter's wrapper of a
        # File reads the path from src_dir and src_uri)
        files.append(File(path.relative_to(root).as_posix(), src_dir=str(root),
                          dest_dir=config.site_dir, use_directory_urls=config.use_directory_urls))
    return files

