"""``drsim report FOLDER --html``: a run's or a sweep's report as one self-contained HTML
file with interactive figures (plotly, the optional dependency ``drsim[report]``).

One job per module: what a run folder shows (:mod:`~drsim.report_html.run_view`), what a
sweep folder shows (:mod:`~drsim.report_html.sweep_view`), the figures
(:mod:`~drsim.report_html.figures`), the page (:mod:`~drsim.report_html.page`), and
writing it beside the folder (:mod:`~drsim.report_html.writing`).
"""
