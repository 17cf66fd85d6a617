"""What a notebook shows of a result: its headline as an HTML table.

``_repr_html_`` of :class:`~drsim.results.result.RunResult` (and of a simulation's and a
monitor's result) and of a sweep's :class:`~drsim.sweeps.runner.SweepOutcome` returns
these tables, so that a result that ends a notebook cell shows the same figures as
``drsim run`` prints (:mod:`drsim.results.headline`), not the dataclass's ``repr``. Every
piece of text is escaped: a scenario's name or a reference's source may hold ``<`` or
``&``.

>>> print(html_table(["quantity", "value"], [("a < b", "1")], title="t & u"))
<div><strong>t &amp; u</strong><table><thead><tr><th style="text-align:left">quantity</th>\
<th style="text-align:right">value</th></tr></thead><tbody><tr><td style="text-align:left">\
a &lt; b</td><td style="text-align:right">1</td></tr></tbody></table></div>
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from drsim.results.headline import headline_table
from drsim.results.summary_model import Summary

__all__ = ["html_table", "headline_html"]


def _cell(tag: str, text: Any, first: bool) -> str:
    align = "left" if first else "right"
    return f'<{tag} style="text-align:{align}">{escape(str(text))}</{tag}>'


def html_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "",
               notes: Sequence[str] = ()) -> str:
    """A table as HTML: ``title`` above it (bold), the first column left-aligned, the others
    right-aligned as the terminal's tables, each of ``notes`` a line below it."""
    head = "".join(_cell("th", c, i == 0) for i, c in enumerate(columns))
    body = "".join("<tr>" + "".join(_cell("td", c, i == 0) for i, c in enumerate(row))
                   + "</tr>" for row in rows)
    top = f"<strong>{escape(title)}</strong>" if title else ""
    below = "".join(f"<p>{escape(note)}</p>" for note in notes)
    return (f"<div>{top}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            f"{below}</div>")


def headline_html(summary: Summary | Mapping[str, Any]) -> str:
    """The headline of a run's, a simulation's or a monitor's summary (read through the
    model when given as JSON) as HTML: for a run, the reductions in MWh with their shares
    of the expected one, the predicted non-compliance time t_nc and the groups compliant
    at it (the dissertation's §6.3.2), and the scenario's published figures in a column of
    their own when it declares them (``reference:``)."""
    if not isinstance(summary, Summary):
        summary = Summary.model_validate(summary)
    title, columns, rows, notes = headline_table(summary)
    return html_table(columns, rows, title, notes)
