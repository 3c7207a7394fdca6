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
from visualizer.layout import TWO_COLUMNS, safe_id
from visualizer.markup import Html
from visualizer.visdom_client import VisdomClient

from .run_rows import (
    COMPARED,
    STATE_CHOICES,
    RunsTableState,
    TableView,
    cells,
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
_ORDERS = ("descending", "ascending")
_FILTER_ROW, _STATE_ROW, _SORT_ROW, _ORDER_ROW, _SERIES_ROW, _PAGE_ROW, _BASELINE_ROW = range(7)
_CELL = ' style="padding: 1px 12px 1px 0; text-align: left; white-space: nowrap"'


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
        # A checkbox per row of the page (W&B's eye): a hidden run leaves every comparison
        # window and the parallel coordinates; the viewer's, as the filter is (every page's).
        self.shown_win = f"runs_shown_{safe_id(name)}"
        self.hidden: set[str] = set()
        self._page_names: list[str] = []  # the rows of the page last drawn
        self._shown: tuple[list[str], frozenset[str]] | None = None  # the checkboxes sent
        self._boxes: list[str] = []  # whose they are
        self.view = TableView()
        self.compare_env: str | None = None  # linked above the rows
        self.baseline: str | None = None  # the run each value is also told against (--baseline)
        # Told the baseline a person typed in the runs pane (None: cleared), to remember it.
        self.on_baseline: Callable[[str | None], None] | None = None
        self.exports: Html | None = None  # the sweep's downloads, above the rows
        self._html: str | None = None
        self._controls: tuple[TableView, tuple[str, ...], str | None, tuple[str, ...]] | None = None
        self._built: tuple[int, TableView, str | None, str | None, frozenset[str]] | None = None
        self._built_at = -math.inf
        self._series: tuple[str, ...] = ()
        self._options: list[str] = []
        self._summary_keys: list[str] = []
        self._counted = -1  # the state version the series and columns were counted at
        self._live, self._live_at = False, -1  # whether a run runs, at that state version

    @property
    def pending(self) -> bool:
        """Never: the table holds nothing back."""
        return False

    def invalidate(self) -> None:
        """Forget what the server shows (a restarted server): the next draw re-sends it."""
        self._html = None
        self._controls = None
        self._built = None
        self._shown = None

    def draw(self, state: RunsTableState, now: float | None = None, force: bool = False) -> bool:
        """Apply the page's choices and re-send the table if it changed; True when sent."""
        now = time.time() if now is None else now
        self._apply_page_events()
        built = (state.version, self.view, self.compare_env, self.baseline, frozenset(self.hidden))
        # A page's choice (filter, sort, page, baseline) is drawn at once; the data's changes
        # at most every REFRESH_S (10,000 rows are sorted at most this often for them).
        chosen = self._built is None or built[1:] != self._built[1:]
        if not (force or chosen) and now - self._built_at < REFRESH_S and self._html is not None:
            return self._draw_controls()
        if self._live_at != state.version:  # a running run's row may fall silent
            self._live_at = state.version
            self._live = any(s.state == "running" for s in state.summaries)
        if built == self._built and not self._live and self._html is not None:
            return self._draw_controls()
        self._built, self._built_at = built, now
        self._count(state)  # the series to choose from, before the controls show them
        sent = self._draw_controls()
        page = self.html(state, now)
        sent = self._draw_shown() or sent
        if page == self._html:
            return sent
        self.client.post(
            "events",
            {
                "data": [{"content": page, "type": "text"}],
                "win": self.win,
                "eid": INDEX_ENV,
                "opts": {"title": f"runs: {self.name}", "width": TWO_COLUMNS, "height": 640},
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
        """The runs the page's filter keeps, in its order (every page)."""
        self._count(state)
        return select(state.summaries, self.view, self.series_shown(), now)

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
            if event.get("propertyId") == _BASELINE_ROW:
                self._choose_baseline(event.get("value"))
            else:
                self.view = self._changed(event)
        for event in self._page_events(self.shown_win):
            self._toggle(event.get("propertyId"), event.get("value"))

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
        self._shown = None  # show what is in use, also when refused
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
            choices = {_STATE_ROW: STATE_CHOICES, _SORT_ROW: self.sorts, _ORDER_ROW: _ORDERS}
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
            return replace(view, descending=chosen == _ORDERS[0])
        log.warning("ignoring the runs pane's change %r of row %r", value, row)
        return view

    @property
    def sorts(self) -> tuple[str, ...]:
        """The columns to sort by: the fixed ones, then the config and summary columns."""
        return sort_choices(self._options, self._summary_keys)

    def _draw_controls(self) -> bool:
        drawn = (self.view, self._series, self.baseline, self.sorts)
        if self._controls == drawn:
            return False
        view, series, sorts = self.view, self.series_shown(), self.sorts
        rows = [
            {"type": "text", "name": "filter (name or lr>0.01)", "value": view.filter},
            {
                "type": "select",
                "name": "state",
                "value": STATE_CHOICES.index(view.state),
                "values": list(STATE_CHOICES),
            },
            {
                "type": "select",
                "name": "sort by",
                "value": sorts.index(view.sort) if view.sort in sorts else 0,
                "values": list(sorts),
            },
            {
                "type": "select",
                "name": "order",
                "value": int(not view.descending),
                "values": list(_ORDERS),
            },
            {
                "type": "select",
                "name": "series",
                "value": self._series.index(series) if series in self._series else 0,
                "values": list(self._series) or ["-"],
            },
            {"type": "number", "name": "page", "value": view.page + 1},
            {"type": "text", "name": "baseline (a run)", "value": self.baseline or ""},
        ]
        message = {
            "data": [{"content": rows, "type": "properties"}],
            "win": self.controls_win,
            "eid": INDEX_ENV,
            "opts": {"title": f"filter, sort, page ({self._short})", "width": 300, "height": 300},
        }
        self.client.post("events", message)
        self._controls = drawn
        return True

    def _draw_shown(self) -> bool:
        """The page's rows with a checkbox each, unchecked: hidden from the comparison (one run has none)."""
        drawn = (self._page_names, frozenset(self.hidden))
        if self._shown == drawn or (self._shown is None and len(self._page_names) < 2):
            return False
        rows = [
            {"type": "checkbox", "name": n, "value": n not in self.hidden} for n in self._page_names
        ]
        opts = {"title": f"shown in the comparison ({self._short})", "width": 300, "height": 300}
        pane = [{"content": rows, "type": "properties"}]
        self.client.post(
            "events", {"data": pane, "win": self.shown_win, "eid": INDEX_ENV, "opts": opts}
        )
        self._shown, self._boxes = drawn, self._page_names
        return True
