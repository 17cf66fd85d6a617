"""The HTML report's page: one self-contained file that opens offline.

The plotting library's JavaScript (plotly.js) is inlined once in the ``<head>``; each
figure is a ``<div>`` with its data and a call of ``Plotly.newPlot``. Every text from the
folder (headline cells, the scenario's YAML, names) is escaped. The page is marked as
drsim's (:data:`GENERATOR`), which is how :mod:`drsim.report_html.writing` knows a file it
may replace.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from drsim.report_html.figures import (
    compliance_figure,
    demand_figure,
    reduction_figure,
    sweep_figures,
)

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from drsim.report_html.run_view import RunView
    from drsim.report_html.sweep_view import SweepView

__all__ = ["GENERATOR", "run_page", "sweep_page"]

#: the page's <meta name="generator">: the mark of a report drsim wrote
GENERATOR = '<meta name="generator" content="drsim report --html">'
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px;
       padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td { text-align: right; } td:first-child { text-align: left; }
th { background: #f2f2f2; }
pre { background: #f7f7f7; padding: 0.8em; overflow: auto; max-height: 40em; }
.note { color: #555; } figure { margin: 1em 0; } .wide { overflow-x: auto; }
"""


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]], css: str) -> str:
    """An HTML table of text cells (escaped)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return (f'<div class="wide"><table class="{css}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _figures(figures: Sequence[go.Figure]) -> str:
    """Each figure as a <div> (plotly.js comes once, from the <head>)."""
    import plotly.io as pio

    config = {"displaylogo": False, "responsive": True}
    return "\n".join(
        f'<figure class="drsim-figure">{pio.to_html(fig, full_html=False, config=config, include_plotlyjs=False, div_id=f"figure-{i}")}</figure>'  # noqa: E501
        for i, fig in enumerate(figures))


def _document(title: str, body: str) -> str:
    """The whole page: the head with plotly.js inlined, then ``body``."""
    from plotly.offline import get_plotlyjs

    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n{GENERATOR}\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n"
            f'<script type="text/javascript">{get_plotlyjs()}</script>\n</head>\n'
            f"<body>\n{body}\n</body>\n</html>\n")


def run_page(view: RunView) -> str:
    """A run folder's report: the headline with its reference column, the system demand
    of the passes, the reduction realised against the goal, the groups' compliance
    against γ and the scenario as it ran."""
    figures = [f for f in (demand_figure(view) if view.system_mw else None,
                           reduction_figure(view), compliance_figure(view)) if f is not None]
    notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in view.notes)
    body = (f"<h1>{html.escape(view.title)}</h1>\n"
            f'<p class="note">drsim report of the folder {html.escape(view.folder.name)}</p>\n'
            f"<h2>Headline</h2>\n{_table(view.columns, view.rows, 'headline')}{notes}\n"
            f"<h2>Figures</h2>\n{_figures(figures)}\n"
            f"<h2>Scenario</h2>\n<pre class=\"scenario\">{html.escape(view.scenario_yaml)}</pre>")
    return _document(view.title, body)


def sweep_page(view: SweepView) -> str:
    """A sweep folder's report: its table (mean ± half-width of the 95 % confidence
    interval per metric), a figure per metric, and the grid and base scenario."""
    title = f"{view.name}: {len(view.rows)} points x {view.seeds} seed" \
            f"{'s' if view.seeds != 1 else ''}"
    body = (f"<h1>{html.escape(title)}</h1>\n"
            f'<p class="note">drsim report of the folder {html.escape(view.folder.name)}</p>\n'
            f"<h2>Table</h2>\n{_table(view.columns, view.rows, 'sweep')}\n"
            '<p class="note">mean ± half-width of the 95 % confidence interval (Student t) '
            "over the seeds</p>\n"
            f"<h2>Figures</h2>\n{_figures(sweep_figures(view))}\n"
            f"<h2>Sweep and base scenario</h2>\n"
            f"<pre class=\"scenario\">{html.escape(view.scenario_yaml)}</pre>")
    return _document(title, body)
