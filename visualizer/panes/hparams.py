"""Hyperparameter tables: a run's stored options, and every compared run's side by side.

The options are the ``options`` a run's metadata stores (``meta.pickle``,
already redacted by the recorder). The comparison table puts the options that
differ between runs in columns, beside the best value of a chosen metric, and
sorts the runs by it, the best first; the options every run shares are listed once below.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Iterable, Sequence
from typing import Any

from run_core.tags import tag_of
from visualizer import markup
from visualizer.markup import Html
from visualizer.model.rundata import RunData, SeriesKey
from visualizer.model.summary import best_is_highest, dotted, run_best, run_config

from .values import full_text, value_cell, value_text

# A value longer than this is cut in a table cell (a path, a long list).
_MAX_CELL_CHARS = 80
# A pane's table stops at this many characters, its first rows then a row that says how many
# more and where they all are: 12,000 options made each run's options pane 4.4 MB, the
# comparison's 4.1 MB, and a stop of the viewer 13.5 s.
PANE_CHARS = 100_000
MAX_COLUMNS = 40  # options that differ between runs, as the comparison's columns
FULL_DATA = "all of them: the runs table's CSV, or python -m visualizer export --kind runs"
_CELL = ' style="padding: 1px 12px 1px 0; text-align: left; white-space: nowrap"'


def _options(run: RunData) -> dict[str, Any]:
    """The run's config as the runs table shows it (its stored options, and the hparams it
    logged: :func:`.summary.run_config`), by name (sorted); empty when it stored none."""
    return dict(sorted(run_config(run).items()))


def options_of(run: RunData) -> dict[str, str]:
    """The run's stored options as text, by name; empty when it stored none."""
    return options_text(_options(run))


def options_text(options: dict[str, Any]) -> dict[str, str]:
    """Config values as the page prints them (:func:`.values.value_text`), by name."""
    return {str(key): value_text(value, _MAX_CELL_CHARS) for key, value in options.items()}


def _cell(value: Any) -> Html:
    return value_cell(value, _MAX_CELL_CHARS)


def _compared(text: str | None) -> str | None:
    """An option's text as runs are compared: one spelling per path (``./ckpt`` is ``ckpt``)."""
    if text is None or not ("/" in text or text.startswith(".")):
        return text
    return posixpath.normpath(text)


def last_value(run: RunData, key: SeriesKey | None) -> float | None:
    """The last stored value of series ``key`` (``(group, name)``) of ``run``; None if absent."""
    series = run.series.get(key) if key is not None else None
    if series is None or not len(series):
        return None
    return float(series.values(len(series) - 1)[-1])


def sort_runs(
    runs: Sequence[RunData], key: SeriesKey | None, descending: bool = False
) -> list[RunData]:
    """``runs`` by the best value of ``key``, the best first (runs without one last: the order
    the runs compared are chosen in, :func:`visualizer.runset.compared`), else by name."""
    by_name = sorted(runs, key=lambda run: run.name)
    if key is None:
        return by_name
    highest = best_is_highest(tag_of(*key), descending)

    def rank(run: RunData) -> tuple[bool, float]:
        value = run_best(run, key, descending)
        if value is None or math.isnan(value):
            return True, 0.0
        return False, -value if highest else value

    return sorted(by_name, key=rank)


def table_row(cells: Sequence[object], tag: str = "td") -> Html:
    """One row of the page's tables; each cell escaped unless it is markup built here."""
    return markup.row(cells, tag, _CELL)


def budgeted(rows: Iterable[Html], count: int, what: str, where: str = FULL_DATA) -> list[Html]:
    """The first of ``count`` ``rows`` that fit :data:`PANE_CHARS`, then, when some are left
    out, a row saying how many more ``what`` there are and ``where`` they are. Rows are
    built only as far as they are shown."""
    kept: list[Html] = []
    chars = 0
    for row in rows:
        chars += len(row)
        if chars > PANE_CHARS:
            note = f"… {count - len(kept):,} more {what} ({where})"
            return [*kept, markup.row([note], "td", ' colspan="99" style="color:#555"')]
        kept.append(row)
    return kept


def summary_rows(run: RunData) -> dict[str, Any]:
    """The summary the run set (a W&B-style run's, in its status), nested keys dotted as
    table rows; empty when it set none."""
    summary = (run.status or {}).get("summary")
    rows: dict[str, Any] = {}
    for key, value in summary.items() if isinstance(summary, dict) else ():
        dotted(str(key), value, rows)
    return rows


def run_table(run: RunData) -> Html:
    """One run's options as an HTML table (name, value), then its summary if it set one."""
    options, summary = _options(run), summary_rows(run)
    parts: list[object] = [markup.element("p", "this run stored no options")]
    if options:
        pairs = (table_row([k, _cell(v)]) for k, v in options.items())
        rows = budgeted(pairs, len(options), "options")
        parts = [markup.element("table", table_row(["option", "value"], "th"), *rows)]
    if summary:
        pairs = (table_row([k, _cell(v)]) for k, v in summary.items())
        rows = budgeted(pairs, len(summary), "values")
        parts.append(markup.element("table", table_row(["summary", "value"], "th"), *rows))
    return markup.join(*parts)


def comparison_table(
    runs: Sequence[RunData],
    key: SeriesKey | None,
    descending: bool = False,
    links: dict[str, str] | None = None,
    groups: dict[str, str] | None = None,
) -> Html:
    """The compared runs as an HTML table: a row per run, sorted by ``key``'s best value.

    Columns: the run (linked to its env when ``links`` has it), its group's name when
    ``groups`` (run name -> group) is given, the metric, then each option whose value
    is not the same in every run.
    """
    links = links or {}
    options = {run.name: _options(run) for run in runs}
    names = sorted({name for opts in options.values() for name in opts})
    texts = [{k: _compared(full_text(v)) for k, v in opts.items()} for opts in options.values()]
    varying = [n for n in names if len({text.get(n) for text in texts}) > 1]
    differ = set(varying)
    shared = [n for n in names if n not in differ]
    more = len(varying) - MAX_COLUMNS
    varying = varying[:MAX_COLUMNS]
    metric = f"{tag_of(*key)} (best)" if key else None
    grouping = ["group"] if groups is not None else []
    head = ["run", *grouping, *([metric] if metric else []), *varying]

    def row(run: RunData) -> Html:
        name = markup.link(links[run.name], run.name) if run.name in links else run.name
        value = run_best(run, key, descending)
        cells = [name, *([groups.get(run.name, "-")] if groups is not None else [])]
        cells += [("-" if value is None else f"{value:.6g}")] if metric else []
        cells += [_cell(options[run.name][n]) if n in options[run.name] else "-" for n in varying]
        return table_row(cells)

    rows = budgeted(map(row, sort_runs(runs, key, descending)), len(runs), "runs")
    if more > 0:
        rows.append(table_row([f"… {more:,} more options differ ({FULL_DATA})"]))
    table = markup.element("table", table_row(head, "th"), *rows)
    if shared:  # a table of their own under it, an option a row
        first = options[runs[0].name] if runs else {}
        pairs = (table_row([n, _cell(first[n]) if n in first else "-"]) for n in shared)
        same = budgeted(pairs, len(shared), "options")
        table = markup.join(
            table,
            markup.element(
                "table",
                table_row(["same in every run", "value"], "th"),
                *same,
                attrs=" style='margin-top:10px;color:#555'",
            ),
        )
    return table
