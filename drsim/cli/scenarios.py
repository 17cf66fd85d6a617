"""``drsim scenarios``: the packaged scenarios and sweeps (:mod:`drsim.scenario.library`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from drsim.cli.exits import fail

scenarios_app = typer.Typer(
    help="The packaged scenarios and sweeps: list them, copy one to start your own.",
    no_args_is_help=True,
)


@scenarios_app.command("list")
def scenarios_list() -> None:
    """List the packaged scenarios (drsim run NAME) and sweeps (drsim sweep NAME)."""
    from drsim.scenario.library import describe, names

    out = Console(highlight=False, soft_wrap=True)
    width = max(len(n) for n in names())
    for kind, command in (("scenario", "drsim run NAME"), ("sweep", "drsim sweep NAME")):
        out.print(f"{kind}s ({command}):", markup=False)
        for name in names(kind):
            out.print(f"  {name:<{width}}  {describe(name)}".rstrip(), markup=False)


@scenarios_app.command("copy")
def scenarios_copy(
    name: Annotated[str, typer.Argument(metavar="NAME", help="A name of drsim scenarios list.")],
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="The folder to copy into.")],
) -> None:
    """Copy a packaged scenario into DIR to start your own (a sweep with its base scenario,
    in sweeps/ beside it); files already there are refused and left alone (exit code 2)."""
    from drsim.scenario.library import copy

    try:
        files = copy(name, folder)
    except (ValueError, FileExistsError) as exc:
        raise fail(str(exc), 2) from None
    Console(highlight=False, soft_wrap=True).print(
        f"copied {', '.join(str(f) for f in files)}; run it: drsim "
        f"{'sweep' if len(files) > 1 else 'run'} {files[0]}", markup=False)
