"""``drsim cluster``: a Spark standalone cluster on this machine (:mod:`spark.cluster`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from drsim.cli.exits import fail as _fail

cluster_app = typer.Typer(
    help="A Spark standalone cluster on this machine: up, status, down (docs/cluster.md).",
    no_args_is_help=True,
)

ClusterDirOpt = Annotated[Path | None, typer.Option(
    "--dir", help="The cluster's folder: state, logs, workers' folders "
                  "(default: ~/.drsim/cluster).")]


def _dir_hint(folder: Path | None) -> str:
    return f" --dir {folder}" if folder is not None else ""


@cluster_app.command("up")
def cluster_up(
    workers: Annotated[int, typer.Option(min=1, help="Workers to start.")],
    cores_per_worker: Annotated[int, typer.Option(min=1, help="Cores of each worker.")] = 1,
    memory_per_worker: Annotated[str, typer.Option(
        help="Memory each worker gives its executors, e.g. 512m or 2g.")] = "2g",
    folder: ClusterDirOpt = None,
) -> None:
    """Start a master and N workers; print the master URL to pass as --master."""
    from spark import cluster

    try:
        state = cluster.up(workers, cores_per_worker, memory_per_worker, folder)
    except ValueError as exc:
        raise _fail(str(exc), 2) from None
    except cluster.ClusterError as exc:
        raise _fail(str(exc), 1) from None
    out = Console(highlight=False, soft_wrap=True)
    out.print(f"cluster up: {workers} worker{'s' if workers != 1 else ''} x "
              f"{cores_per_worker} core{'s' if cores_per_worker != 1 else ''}, "
              f"{memory_per_worker} each", markup=False)
    out.print(f"master: {state.master_url}  (pass it as --master)", markup=False)
    out.print(f"web UI: {state.web_ui_url}", markup=False)
    out.print(f"logs:   {state.logs}", markup=False)
    out.print(f"stop:   drsim cluster down{_dir_hint(folder)}", markup=False)


@cluster_app.command("status")
def cluster_status(folder: ClusterDirOpt = None) -> None:
    """Show the cluster's daemons and applications (exit code 1 unless all are ALIVE)."""
    from spark import cluster

    status = cluster.status(folder)
    if status is None:
        raise _fail(f"no cluster is running in {cluster.resolve(folder)} (start one: drsim "
                    f"cluster up --workers N{_dir_hint(folder)})", 1)
    state = status.state
    table = Table(title=f"cluster {state.master_url}", title_justify="left")
    for column in ("daemon", "pid", "port", "web UI", "state"):
        table.add_column(column)
    for daemon in state.daemons:
        table.add_row(daemon.name, str(daemon.pid), str(daemon.port),
                      f"http://{state.host}:{daemon.webui_port}", status.state_of(daemon))
    out = Console(highlight=False, soft_wrap=True)
    out.print(table)
    apps = status.applications
    out.print(f"{status.alive_workers} of {state.workers} workers alive; applications "
              f"running: {', '.join(apps) if apps else 'none'}; logs: {state.logs}",
              markup=False)
    if not status.healthy:
        raise typer.Exit(1)


@cluster_app.command("down")
def cluster_down(folder: ClusterDirOpt = None) -> None:
    """Stop the cluster: its workers (with their executors) and its master."""
    from spark import cluster

    try:
        state = cluster.down(folder)
    except cluster.ClusterError as exc:
        raise _fail(str(exc), 1) from None
    out = Console(highlight=False, soft_wrap=True)
    if state is None:
        out.print(f"no cluster is running in {cluster.resolve(folder)}; nothing to stop",
                  markup=False)
        return
    out.print(f"stopped the cluster {state.master_url} (master and {state.workers} "
              f"worker{'s' if state.workers != 1 else ''}); logs kept in {state.logs}",
              markup=False)
