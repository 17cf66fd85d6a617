"""How a ``drsim`` command stops on a problem: one red line on stderr and an exit code."""

from __future__ import annotations

import typer
from rich.console import Console


def fail(message: str, code: int) -> typer.Exit:
    """Print ``message`` in red on stderr (no markup, no traceback); the Exit to raise."""
    Console(stderr=True).print(message, style="red", markup=False, highlight=False,
                               soft_wrap=True)
    return typer.Exit(code)
