"""The dissertation's query listings as test fixtures (``tests/fixtures/listings.md``).

Each query is a fenced block under a heading ``## compile: NAME -- PARAMS`` or
``## parse: NAME``; a parenthesised note after the name or the parameters is dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "listings.md"

_HEADING = re.compile(
    r"^##\s*(?P<kind>compile|parse):\s*(?P<name>[^\s(]+)\s*(?:\([^)]*\))?\s*"
    r"(?:--\s*(?P<params>.*?))?\s*(?:\([^)]*\))?\s*$")


def load_listings(path: Path | str = FIXTURE) -> list[tuple[str, str, str, str]]:
    """``[(kind, name, params_text, query_text)]`` in file order; ``kind`` is ``"compile"``
    or ``"parse"``, ``params_text`` the raw text after ``--`` (``""`` when none)."""
    out = []
    heading = None
    block: list[str] | None = None
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if block is not None:
            if line.strip().startswith("```"):
                if heading is None:
                    raise ValueError(f"{path}:{lineno}: query block without a heading")
                kind, name, params = heading
                out.append((kind, name, params, "\n".join(block) + "\n"))
                block, heading = None, None
            else:
                block.append(line)
        elif line.startswith("## "):
            m = _HEADING.match(line)
            heading = (m["kind"], m["name"], (m["params"] or "").strip()) if m else None
        elif line.strip().startswith("```"):
            block = []
    if block is not None:
        raise ValueError(f"{path}: unterminated query block")
    return out


FUNCTION = "function"  # parse_params's value of a function the caller binds


def parse_params(params_text: str) -> dict[str, int | float | str | None]:
    """``"t_start=1110 γ_user=0.5 λ OVERLAP()"`` -> ``{"t_start": 1110, "γ_user": 0.5,
    "λ": None, "OVERLAP": FUNCTION}``: a bare name is a lookup (or table) that the caller
    binds, ``NAME()`` a function."""
    out: dict[str, int | float | str | None] = {}
    for word in params_text.split():
        name, eq, value = word.partition("=")
        if not eq and name.endswith("()"):
            out[name[:-2]] = FUNCTION
        elif not eq:
            out[name] = None
        else:
            out[name] = float(value) if any(c in value for c in ".eE") else int(value)
    return out
