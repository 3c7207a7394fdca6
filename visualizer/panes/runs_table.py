"""visdom's ``main`` env, where the server's bare URL lands: the runs table.

A row per run, from its summary (no series read): the run (a link to its page),
state, step, started, duration, last update, the last and best value of a chosen
series, the options that differ between runs and the summary values runs set (W&B's
summary columns, named as the export names them). The page's *runs* pane filters
by name or by an expression over name, state, config and summary (``lr>0.01 and seed==3``:
:mod:`visualizer.api.query`, as ``Api().runs(filters=)``) and by state, sorts by any column
(config and summary columns too) and pages through :data:`PAGE_ROWS` rows at a time, so
10,000 runs cost the page 100 rows; a checkbox per row hides a run from the comparison. Every
browser sees the one filter, sort, page and hidden runs the viewer keeps (a visdom env's windows
are the same for every page on it). One table per visualizer (its windows' ids name the
followed root, so two visualizers on one server keep one each).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from snapshot_store.format.summary import RunSummary
from visualizer import markup
from visualizer.api.query import MAX_FILTER_CHARS
from visualizer.layout import PANE_MARGIN, TWO_COLUMNS, safe_id
from visualizer.markup import Html
from visualizer.visdom_client import VisdomClient

from .run_rows import (
    COMPARED,
    STATE_CHOICES,
    TABLE_ORDERS,
    RunsTableState,
    TableView,
    cells,
    control_rows,
    row_filter,
    select,
    series_choices,
    sort_choices,
    summary_columns,
    varying_options,
)

log = logging.getLogger(__name__)

INDEX_ENV = "main"
PAGE_ROWS = 100
REFRESH_S = 2.0  # rebuilt for new data at most this often; re-sent only when it changed
_FILTER_ROW, _STATE_ROW, _SORT_ROW, _ORDER_ROW, _SERIES_ROW, _PAGE_ROW, _BASELINE_ROW = range(7)
_CELL = ' style="padding: 1px 12px 1px 0; text-align: left; white-space: nowrap"'
_SHOWN_ROW = _BASELINE_ROW + 1  # 'show all', then a checkbox per row of the page
# The page's two panes, width and height: the runs pane (its controls, then the checkboxes)
# beside the table, as tall: one row TWO_COLUMNS wide, as a run's page's first (at 1,400 px the
# controls and the checkboxes, two panes, took half a row above the table). One pane on the
# left: visdom's page lays panes out in rows in the order they came, and a second one under
# the first would have begun the next visualizer's row on the same server.
CONTROLS_SIZE = (300, 640)
TABLE_SIZE = (TWO_COLUMNS - CONTROLS_SIZE[0] - PANE_MARGIN, CONTROLS_SIZE[1])


def _size(size: tuple[int, int]) -> dict[str, int]:
    return {"width": size[0], "height": size[1]}


# What a table was built from: the runs' version, all read, view, compare env, baseline, hidden.
Built = tuple[int, bool, TableView, str | None, str | None, frozenset[str]]


class RunsTable:
    """The runs table and its controls in the ``main`` env, kept up to date."""

    def __init__(self, client: VisdomClient, name: str, link: Callable[[str], str]) -> None:
        self.client = client
        self.name = name
        self.link = link  # a run's name -> the URL that opens its page
        self.win = f"runs_{safe_id(name)}"
        # A short title a pane's bar can show (a whole path is cut off there).
        parts = [part for part in name.rstrip("/").split("/") if part and part != "pickle"]
        self._short = parts[-1] if parts else name  # a store's run, not its "pickle" folder
        self.controls_win = f"runs_controls_{safe_id(name)}"
        # A checkbox per row of the page, in the runs pane under its controls (W&B's eye): a
        # hidden run leaves every comparison window and the parallel coordinates; the
        # viewer's, as the filter is (every page's).
        self.hidden: set[str] = set()
        self._page_names: list[str] = []  # the rows of the page last drawn
        self._boxes: list[str] = []  # whose they are
        self.view = TableView()
        self.compare_env: str | None = None  # linked above the rows
        self.baseline: str | None = None  # the run each value is also told against (--baseline)
        # Told the baseline a person typed in the runs pane (None: cleared), to remember it.
        self.on_baseline: Callable[[str | None], None] | None = None
        self.exports: Html | None = None  # the sweep's downloads, above the rows
        self._html: str | None = None
        self._controls: tuple[object, ...] | None = None  # what the runs pane shows
        self._built: Built | None = None
        self._built_at = -math.inf
        self._series: tuple[str, ...] = ()
        self._options: list[str] = []
        self._summary_keys: list[str] = []
        self._counted = -1  # the state version the series and columns were counted at
        self._live, self._live_at = False, -1  # whether a run runs, at that state version
        self.on_a_page = True  # an open page shows the table (or none is known): the screen's
        self._selected: tuple[tuple[object, ...], list[RunSummary]] | None = None  # rows() kept

    @property
    def pending(self) -> bool:
        """Never: the table holds nothing back."""
        return False

    def invalidate(self) -> None:
        """Forget what the server shows (a restarted server): the next draw re-sends it."""
        self._html = None
        self._controls = None
        self._built = None

    def draw(self, state: RunsTableState, now: float | None = None, force: bool = False) -> bool:
        """Apply the page's choices and re-send the table if it changed; True when sent."""
        now = time.time() if now is None else now
        self._apply_page_events()
        whole = state.read >= state.total  # every run found is read: its count is final
        hidden = frozenset(self.hidden)
        built = (state.version, whole, self.view, self.compare_env, self.baseline, hidden)
        # A page's choice (filter, sort, page, baseline) is drawn at once, and so is the table
        # once every run is read; the data's other changes at most every REFRESH_S (10,000
        # rows are sorted at most this often for them; the whole table waited up to 2 s).
        chosen = self._built is None or built[1:] != self._built[1:]
        if not (force or chosen) and now - self._built_at < REFRESH_S and self._html is not None:
            return self._draw_controls()
        # A running run's row changes with time ("5 s ago"): redrawn while a page shows it.
        ticking = self.on_a_page and self._running(state)
        if built == self._built and not ticking and self._html is not None:
            return self._draw_controls()
        self._built, self._built_at = built, now
        self._count(state)  # the series to choose from, before the controls show them
        page = self.html(state, now)  # the rows, whose checkboxes the runs pane shows
        sent = self._draw_controls()  # before the table, to its left
        if page == self._html:
            return sent
        self.client.post(
            "events",
            {
                "data": [{"content": page, "type": "text"}],
                "win": self.win,
                "eid": INDEX_ENV,
                "opts": {"title": f"runs: {self.name}", **_size(TABLE_SIZE)},
            },
        )
        self._html = page
        return True

    # --- the rows -----------------------------------------------------------------------

    def series_shown(self) -> str | None:
        """The series whose last and best values have columns."""
        if self.view.series in self._series:
            return self.view.series
        return self._series[0] if self._series else None

    def _count(self, state: RunsTableState) -> None:
        """The series to choose from, the options that differ and the summary columns, as of
        ``state``."""
        if self._counted != state.version:
            self._counted = state.version
            self._series = series_choices(state.summaries)
            self._options = varying_options(state.summaries)
            self._summary_keys = summary_columns(state.summaries)

    def rows(self, state: RunsTableState, now: float) -> list[RunSummary]:
        """The runs the page's filter keeps, in its order (every page): kept while neither the
        runs nor the filter and sort change and no run runs, so that paging through 100,000 runs
        does not filter and sort them again (0.7-1.5 s a page there)."""
        self._count(state)
        key = (state.version, replace(self.view, page=0), self.series_shown())
        if self._selected is None or self._selected[0] != key or self._running(state):
            self._selected = (key, select(state.summaries, self.view, key[2], now))
        return self._selected[1]

    def _running(self, state: RunsTableState) -> bool:
        """Whether a run of ``state`` runs (its row may fall silent: rows change with time)."""
        if self._live_at != state.version:
            self._live_at = state.version
            self._live = any(s.state == "running" for s in state.summaries)
        return self._live

    def html(self, state: RunsTableState, now: float) -> Html:
        """The page of rows the view asks for, under how many runs there are and which."""
        rows = self.rows(state, now)
        pages = max(1, math.ceil(len(rows) / PAGE_ROWS))
        page = min(self.view.page, pages - 1)
        first = page * PAGE_ROWS
        shown = rows[first : first + PAGE_ROWS]
        self._page_names = [s.name for s in shown]
        tag, compared = self.series_shown(), set(state.compared)
        base = next((s for s in state.summaries if s.name == self.baseline), None)
        head = ["run", "state", "step", "started", "duration", "last update"]
        against = f" +/- {self.baseline}" if self.baseline else ""
        head += [f"{tag} (last{against})", f"{tag} (best{against})"] if tag else []
        head += self._options + self._summary_keys
        table = markup.element(
            "table",
            markup.row(head, "th", _CELL),
            *(markup.row(self._cells(s, tag, compared, now, base), attrs=_CELL) for s in shown),
        )
        return markup.join(self._counts(state, len(rows), first, len(shown), page, pages), table)

    def _counts(
        self, state: RunsTableState, kept: int, first: int, shown: int, page: int, pages: int
    ) -> Html:
        """What the rows are of: '1,000 runs: rows 101-200 (page 2 of 10)', reading, compared."""
        runs = len(state.summaries)
        counts = f"{runs:,} run" + ("" if runs == 1 else "s")
        if kept != len(state.summaries):
            counts += f", {kept:,} match the filter"
        counts += f": rows {first + 1:,}-{first + shown:,} (page {page + 1} of {pages})"
        if state.read < state.total:
            counts += f"; reading {state.read:,} of {state.total:,} runs"
        lines: list[object] = [markup.element("p", counts)]
        _keeps, why = row_filter(self.view.filter)
        if why is not None:  # one line, as text: the rows are those whose names hold it
            lines.append(markup.element("p", f"{why} (searched in names instead)"))
        if self.exports is not None:
            lines.append(self.exports)
        if self.compare_env:
            url = self.client.endpoint.env_url(self.compare_env)
            mark = f" ({COMPARED} below)" if state.compared else ""
            lines.append(
                markup.element("p", "compared: ", markup.link(url, self.compare_env), mark)
            )
        return markup.join(*lines)

    def _cells(
        self,
        summary: RunSummary,
        tag: str | None,
        compared: set[str],
        now: float,
        baseline: RunSummary | None,
    ) -> list[object]:
        name = f"{COMPARED} {summary.name}" if summary.name in compared else summary.name
        name += " (baseline)" if summary is baseline else ""
        name += " (hidden)" if summary.name in self.hidden else ""
        columns = (self._options, self._summary_keys)
        link = markup.link(self.link(summary.name), name)
        return cells(summary, tag, columns, link, now, baseline)

    # --- the page's runs pane -----------------------------------------------------------

    def _apply_page_events(self) -> None:
        for event in self._page_events(self.controls_win):
            self._controls = None  # show what is in use, also when refused
            row = event.get("propertyId")
            if row == _BASELINE_ROW:
                self._choose_baseline(event.get("value"))
            elif row == _SHOWN_ROW:
                self.hidden.clear()  # 'show all'
            elif isinstance(row, int) and row > _SHOWN_ROW:
                self._toggle(row - _SHOWN_ROW - 1, event.get("value"))
            else:
                self.view = self._changed(event)

    def _page_events(self, win: str) -> list[dict[str, Any]]:
        """The page's changes to pane ``win`` of the ``main`` env since last asked."""
        events = self.client.events.subscribe(INDEX_ENV, win)
        changes = []
        while not events.empty():
            event = events.get_nowait()
            if event.get("event_type") == "PropertyUpdate":
                changes.append(event)
        return changes

    def _toggle(self, row: object, value: object) -> None:
        """Show (``value`` true) or hide the run of checkbox ``row`` as the page drew it."""
        if not isinstance(row, int) or not 0 <= row < len(self._boxes):
            log.warning("ignoring the shown runs pane's change %r of row %r", value, row)
            return
        name, shown = self._boxes[row], value is True or str(value).lower() == "true"
        (self.hidden.discard if shown else self.hidden.add)(name)
        log.info("run %r %s from the page", name, "shown" if shown else "hidden")

    def _choose_baseline(self, value: object) -> None:
        """The baseline typed in the runs pane (a run's name; empty: none), as --baseline."""
        name = (str(value).strip()[:200] or None) if isinstance(value, str) else None
        if name == self.baseline:
            return
        log.info("baseline %r chosen from the page", name)
        self.baseline = name
        if self.on_baseline is not None:
            self.on_baseline(name)

    def _changed(self, event: dict[str, Any]) -> TableView:
        row, value, view = event.get("propertyId"), event.get("value"), self.view
        try:
            if row == _FILTER_ROW:
                return replace(view, filter=str(value)[:MAX_FILTER_CHARS], page=0)
            if row == _PAGE_ROW:
                return replace(view, page=max(0, min(10**9, int(float(str(value)))) - 1))
            choices = {_STATE_ROW: STATE_CHOICES, _SORT_ROW: self.sorts, _ORDER_ROW: TABLE_ORDERS}
            index = int(str(value))
            if index < 0:
                raise IndexError(index)
            if row == _SERIES_ROW:
                return replace(view, series=self._series[index])
            chosen = choices[row][index] if isinstance(row, int) and row in choices else None
        except (ValueError, IndexError, OverflowError, KeyError):
            chosen = None
        if row == _STATE_ROW and chosen is not None:
            return replace(view, state=chosen, page=0)
        if row == _SORT_ROW and chosen is not None:
            return replace(view, sort=chosen)
        if row == _ORDER_ROW and chosen is not None:
            return replace(view, descending=chosen == TABLE_ORDERS[0])
        log.warning("ignoring the runs pane's change %r of row %r", value, row)
        return view

    @property
    def sorts(self) -> tuple[str, ...]:
        """The columns to sort by: the fixed ones, then the config and summary columns."""
        return sort_choices(self._options, self._summary_keys)

    def _draw_controls(self) -> bool:
        boxes = [] if len(self._page_names) < 2 else self._page_names  # one run: nothing to hide
        drawn = (self.view, self._series, self.baseline, self.sorts, boxes, frozenset(self.hidden))
        if self._controls == drawn:
            return False
        rows = control_rows(self.view, self._series, self.series_shown(), self.sorts, self.baseline)
        if boxes:
            rows.append({"type": "button", "name": "shown in the comparison", "value": "show all"})
            rows += [{"type": "checkbox", "name": n, "value": n not in self.hidden} for n in boxes]
        message = {
            "data": [{"content": rows, "type": "properties"}],
            "win": self.controls_win,
            "eid": INDEX_ENV,
            "opts": {"title": f"filter, sort, page ({self._short})", **_size(CONTROLS_SIZE)},
        }
        self.client.post("events", message)
        self._controls, self._boxes = drawn, boxes
        return True
