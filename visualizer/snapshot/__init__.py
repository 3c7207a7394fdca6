"""``python -m visualizer snapshot``: runs as one self-contained HTML file that opens offline.

:mod:`.content` builds what the file shows from the viewer's own model (the runs table's
rows, each run's windows and series, config, summary and images, the comparison);
:mod:`.columns` packs every point as compressed typed columns; :mod:`.page` puts them,
plotly.js and the page's code (package data beside this module: page.html, page.css,
plots.js, page.js) into one HTML file; :mod:`.cli` is the command.
"""
