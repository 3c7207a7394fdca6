"""The comparison env: every series of every compared run overlaid, and a table of the runs.

A window per series (``group/name``), a trace per run, each run in the same
color in every window. The runs shown are those whose name matches the
selection (``--runs``, changeable from the page's *compare* pane); the table
lists them with the options that differ between them, sorted by the best value
of a chosen metric (``--sort-by``, also on the page).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from run_core.tags import key_of, tag_of
from visualizer import layout, markup
from visualizer.model.rundata import RunData, SeriesKey
from visualizer.model.summary import run_config
from visualizer.model.traces import BASELINE_COLOR
from visualizer.patterns import Search, is_pattern, searcher
from visualizer.visdom_client import VisdomClient

from .display import run_start
from .envdisplay import EnvDisplay
from .extra_windows import plotted_series
from .fold import MAX_WINDOWS, cap
from .groups import DEFAULT_GROUP_BY, Group, GroupCurves, group_runs, varying_keys
from .hparams import comparison_table
from .palette import assign_colors
from .palette import run_color as run_color  # the snapshot colors its runs alike
from .parcoords import PARCOORDS_WIN, parcoords_message
from .plotmessage import Line
from .view import CONTROLS_WIN, ViewSettings

log = logging.getLogger(__name__)

SELECT_WIN = "compare_select"
TABLE_WIN = "runs"
_RUNS_ROW, _SORT_ROW, _ORDER_ROW, _GROUP_ROW, _COUNT_ROW = 0, 1, 2, 3, 4
DEFAULT_COMPARE = 20  # runs overlaid at once: the most recent, or the best by the sort series
MAX_COMPARE = 500  # however many the page asks for
ORDERS = ("ascending", "descending")
_BY_NAME = "run name"
_NO_GROUPS = "none"
# Points a comparison window draws over all its traces: about one a pixel column of the
# pane for each of 100 runs (min/max decimated; a zoom draws the stored points again), so
# that a browser draws them as fast as 10 (issue 32). Past SMOOTHED_RUNS, half that
# (:class:`~visualizer.panes.plotwindow.PlotWindow`): a pair about every other column.
COMPARE_WINDOW_POINTS = 100 * layout.PLOT_SIZE[0]
# Past this many runs (the default comparison's), each run's curve is drawn once, raw, and
# without a legend: a smoothed copy would double what the browser draws, and a hundred names
# under the plot take longer to draw than the curves, of curves too many to tell apart.
SMOOTHED_RUNS = DEFAULT_COMPARE
# The first row is at least this tall: the compare pane's five rows (the runs table's rows
# decide past it, up to a plot's height; more rows scroll: :meth:`EnvDisplay._fit_header`).
SELECT_HEIGHT = 180


def compile_runs(text: str) -> Search:
    """``text`` as the run-selecting regular expression (searched in linear time:
    :mod:`visualizer.patterns`); ValueError saying why it is none."""
    if (why := is_pattern(text)) is not None:
        raise ValueError(f"{text!r} is not a regular expression: {why}")
    return searcher(text)


def parse_sort_by(text: str) -> SeriesKey:
    """A series' logged name (``val/loss``, ``train_loss``) as its key; ValueError when empty."""
    if not text:
        raise ValueError("empty: give a series' name as logged (e.g. val/loss or train_loss)")
    return key_of(text)


@dataclass(frozen=True)
class Selection:
    """Which runs are compared, how the table sorts them, and the config key runs are
    grouped by ("": no groups)."""

    runs: str = ""  # a regex searched in run names; "" matches every run
    sort_by: SeriesKey | None = None
    descending: bool = False
    group_by: str = DEFAULT_GROUP_BY
    count: int = DEFAULT_COMPARE  # how many runs are overlaid, of those the regex matches

    def matches(self, name: str) -> bool:
        """True when run ``name`` is compared."""
        return searcher(self.runs)(name)

    def none_match(self, where: object, names: Iterable[str]) -> str:
        """The message for runs ``names`` found at ``where``, none of which ``--runs`` selects."""
        names = sorted(names)
        found = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        return f"no run at {where} matches --runs {self.runs!r} (found: {found})"


def window_spec(key: SeriesKey, runs: int, lines: int | None = None) -> layout.WindowSpec:
    """The comparison window of series ``key`` drawing ``runs`` runs as ``lines`` curves (a
    group's runs are one; default a curve a run): after its group's place in a run's env,
    taller as its legend (under the plot, a few curves a row) grows, titled as the run's page
    names the series with the count of runs drawn, saying when they are drawn raw and without
    a legend."""
    group, name = key
    own = layout.window_for(group, name)
    lines = runs if lines is None else lines
    crowded = lines > SMOOTHED_RUNS
    raw = f"; past {SMOOTHED_RUNS}: raw, named on hover" if crowded else ""
    return layout.WindowSpec(
        f"compare_{layout.safe_id(group)}_{layout.safe_id(name)}",
        f"{series_title(key)} ({runs:,} run{'' if runs == 1 else 's'}{raw})",
        name,
        own.order,
        height=layout.PLOT_SIZE[1] + (0 if crowded else 22 * math.ceil(lines / 4)),
        from_zero=own.from_zero,
    )


def series_title(key: SeriesKey) -> str:
    """What a run's page calls series ``key``: its window's title (``learning rate``), and its
    legend's name there where the title does not already say it (``learning rate: lr``)."""
    own = layout.window_for(*key)
    label = layout.trace_label(own, key, 1)
    if own.title in (label, tag_of(*key), f"{key[0]}: {key[1]}"):
        return own.title
    return f"{own.title}: {label}"


def compare_lines(runs: Iterable[RunData]) -> dict[SeriesKey, dict[str, Line]]:
    """Each series' line of each of ``runs``: series -> run name -> line (the comparison's
    windows, before groups; the live page's and the snapshot file's)."""
    by_run: dict[SeriesKey, dict[str, Line]] = {}
    for run in runs:
        origin = run_start(run)  # runs started at different times overlay in relative time
        for key, series in plotted_series(run).items():
            by_run.setdefault(key, {})[run.name] = Line(series, origin)
    return by_run


class CompareDisplay(EnvDisplay):
    """One env overlaying every compared run's series, with the runs' table."""

    SENTINEL = TABLE_WIN

    def __init__(
        self,
        client: VisdomClient,
        env: str,
        max_points: int,
        view: ViewSettings | None = None,
        selection: Selection | None = None,
        links: dict[str, str] | None = None,
    ) -> None:
        super().__init__(client, env, max_points, self.SENTINEL, view)
        # Trace label (a run's, a group's) -> color, the same in every window, which keep
        # this very dict (:func:`~visualizer.panes.palette.assign_colors`).
        self.group_colors: dict[str, str] = {}
        self.colors = self.group_colors
        self.window_points = COMPARE_WINDOW_POINTS
        self.smoothed_lines = SMOOTHED_RUNS
        self.header_height = SELECT_HEIGHT
        self.table_width = layout.COMPARE_TABLE_WIDTH
        self.selection = selection if selection is not None else Selection()
        self.links = links if links is not None else {}  # run name -> its env's URL
        self.baseline: str | None = None  # drawn black and dashed, whatever the page selects
        self.exports: markup.Html | None = None  # "this page as one file", under the runs compared
        self._table: str | None = None
        self._select_drawn: tuple[Selection, tuple[SeriesKey, ...], tuple[str, ...]] | None = None
        self._select_keys: tuple[SeriesKey, ...] = ()  # the sort choices the page shows
        self._group_keys: tuple[str, ...] = ()  # the group-by choices the page shows
        self._curves = GroupCurves()
        self._parcoords: dict[str, Any] | None = None  # the message on the server

    def invalidate(self) -> None:
        super().invalidate()
        self._table = None
        self._select_drawn = None
        self._parcoords = None

    def _forget(self, win: str) -> None:
        super()._forget(win)
        if win == SELECT_WIN:
            self._select_drawn = None
        elif win == TABLE_WIN:
            self._table = None
        elif win == PARCOORDS_WIN:
            self._parcoords = None

    def draw(self, runs: Iterable[RunData], now: float | None = None, force: bool = False) -> bool:
        """Overlay the selected runs' series; True if anything was sent."""
        now = time.time() if now is None else now
        runs = sorted(runs, key=lambda r: r.name)
        versions = [(run.name, run.version) for run in runs]
        if self._idle(versions, now, CONTROLS_WIN, SELECT_WIN):
            return False  # no news from any run or the page
        self._apply_page_events()
        chosen = [r for r in runs if self.selection.matches(r.name) or r.name == self.baseline]
        keys = tuple(sorted({key for run in runs for key in run.series}))
        groups = group_runs(chosen, self.selection.group_by)  # in their config's order
        fixed = {g.label: BASELINE_COLOR for g in groups if g.runs == (self.baseline,)}
        assign_colors([group.label for group in groups], self.group_colors, fixed)
        windows, left_out = cap(self._windows(chosen, groups))
        # A group column only where runs are grouped: groups of one say nothing; where they
        # are, the parallel coordinates draw each run in its group's color.
        together = any(len(group.runs) > 1 for group in groups)
        grouped = {n: g.label for g in groups for n in g.runs} if together else None
        selection = self.selection
        parcoords = parcoords_message(
            chosen,
            selection.sort_by,
            self.env,
            selection.descending,
            selection.group_by,
            {n: self.group_colors[label] for n, label in grouped.items()} if grouped else None,
        )
        extra = [PARCOORDS_WIN] if parcoords is not None else []
        shown = [TABLE_WIN, CONTROLS_WIN, SELECT_WIN, *extra, *(spec.win for spec, _ in windows)]
        self._keep_order(shown)
        sent = self._draw_table(chosen, left_out, grouped)  # first: it sizes the first row
        sent |= self._draw_controls()
        sent |= self._draw_select(keys, varying_keys([run_config(run) for run in runs]))
        sent |= self._draw_parcoords(parcoords)
        sent |= self._draw_plots(windows, now, force)
        self._drawn(now)
        self._drawn_version = versions
        return sent

    def _windows(
        self, runs: list[RunData], groups: list[Group]
    ) -> list[tuple[layout.WindowSpec, dict[str, Line]]]:
        by_run = compare_lines(runs)
        windows = self._curves.lines(by_run, groups, {run.name: run for run in runs})
        specs = {key: window_spec(key, len(by_run[key]), len(windows[key])) for key in windows}
        ordered = sorted(windows, key=lambda key: (specs[key].order, key))
        return [(specs[key], windows[key]) for key in ordered]

    def _draw_table(
        self, runs: list[RunData], left_out: int = 0, groups: dict[str, str] | None = None
    ) -> bool:
        """Send the runs table if it changed (True), the first row fitted to it first: as wide
        as its columns (:func:`~visualizer.layout.compare_row`), as tall as its rows."""
        table = comparison_table(
            runs, self.selection.sort_by, self.selection.descending, self.links, groups
        )
        if left_out:  # too many series for one page: say so where the runs are listed
            note = f"{left_out:,} more series are not overlaid here (at most {MAX_WINDOWS})."
            table = markup.join(table, markup.element("p", note, attrs=" style='color:#9a6700'"))
        if self.exports is not None:
            table = markup.join(table, self.exports)
        width, beside = layout.compare_row(layout.text_pane_width(table))
        if width != self.table_width:  # the row's three panes drawn again at their widths
            self.table_width, self.controls_width = width, beside
            for win in (TABLE_WIN, CONTROLS_WIN, SELECT_WIN):
                self._forget(win)
        height = layout.text_pane_height(table, width)
        self._fit_header(height, SELECT_HEIGHT, TABLE_WIN, SELECT_WIN)
        if table == self._table:
            return False
        title = f"runs compared ({len(runs)})"
        self._text(TABLE_WIN, table, title, width=self.table_width, height=self.header_height)
        self._table = table
        return True

    # --- the page's compare pane ---------------------------------------------------------

    def _apply_page_events(self) -> None:
        for event in self._property_updates(SELECT_WIN):
            self._select_drawn = None  # show what is in use, also when refused
            selection = self._changed(event)
            if selection != self.selection:
                log.info("env %r: comparing %s (from the page)", self.env, selection)
                self.selection = selection

    def _changed(self, event: dict[str, Any]) -> Selection:
        row, value = event.get("propertyId"), str(event.get("value", ""))
        try:
            if row == _RUNS_ROW:
                compile_runs(value)
                return replace(self.selection, runs=value)
            if row == _SORT_ROW:
                keys = self._select_keys
                index = int(value)
                return replace(self.selection, sort_by=keys[index - 1] if index > 0 else None)
            if row == _ORDER_ROW:
                return replace(self.selection, descending=ORDERS[int(value)] == "descending")
            if row == _GROUP_ROW:
                index = int(value)
                return replace(
                    self.selection, group_by=self._group_keys[index - 1] if index else ""
                )
            if row == _COUNT_ROW:
                count = max(1, min(MAX_COMPARE, int(float(value))))
                return replace(self.selection, count=count)
        except (ValueError, IndexError, OverflowError) as err:
            log.warning("ignoring the page's comparison change %r: %s", value, err)
        return self.selection

    def _draw_parcoords(self, message: dict[str, Any] | None) -> bool:
        if message is None or message == self._parcoords:
            return False
        self.client.post("events", message)
        self._parcoords = message
        return True

    def _draw_select(self, keys: tuple[SeriesKey, ...], varying: list[str]) -> bool:
        group_by = self.selection.group_by
        groupings = tuple(sorted({*varying, group_by} - {""}))
        if self._select_drawn == (self.selection, keys, groupings):
            return False
        choices = [_BY_NAME, *(tag_of(group, name) for group, name in keys)]
        sort = self.selection.sort_by
        rows = [
            {"type": "text", "name": "runs (regex)", "value": self.selection.runs},
            {
                "type": "select",
                "name": "sort table by",
                "value": keys.index(sort) + 1 if sort in keys else 0,
                "values": choices,
            },
            {
                "type": "select",
                "name": "order",
                "value": int(self.selection.descending),
                "values": list(ORDERS),
            },
            {
                "type": "select",
                "name": "group by",
                "value": groupings.index(group_by) + 1 if group_by else 0,
                "values": [_NO_GROUPS, *groupings],
            },
            {"type": "number", "name": "runs compared", "value": self.selection.count},
        ]
        message = {
            "data": [{"content": rows, "type": "properties"}],
            "win": SELECT_WIN,
            "eid": self.env,
            "opts": {
                "title": "compare",
                "width": self.controls_width,
                "height": self.header_height,
            },
        }
        self.client.post("events", message)
        self._select_drawn = (self.selection, keys, groupings)
        self._select_keys, self._group_keys = keys, groupings
        return True
