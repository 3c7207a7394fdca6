"""visdom's ``main`` env, where the server's bare URL lands: the runs table.

A row per run, from its summary (no series read): the run (a link to its page),
state, step, started, duration, last update, the last and best value of a chosen
series, and the options that differ between runs. The page's *runs* pane filters
by name and state, sorts by any column and pages through :data:`PAGE_ROWS` rows
at a time, so 10,000 runs cost the page 100 rows. One table per visualizer (its
windows' ids name the followed location, so two visualizers on one server keep
one each).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from visualizer import markup
from visualizer.layout import safe_id
from visualizer.markup import Html
from visualizer.model.status import format_duration
from visualizer.model.summary import RunSummary, SeriesStats, higher_is_better
from visualizer.server.client import VisdomClient

log = logging.getLogger(__name__)

INDEX_ENV = "main"
PAGE_ROWS = 100
REFRESH_S = 2.0  # rebuilt at most this often; re-sent only when it changed
MAX_CONFIG_COLUMNS = 8
MAX_SERIES_CHOICES = 200
MAX_CELL_CHARS = 40
SORTS = ("last update", "run", "state", "step", "started", "duration", "last value", "best value")
STATES = ("any state", "running", "finished", "failed", "stopped")
ORDERS = ("descending", "ascending")
_FILTER_ROW, _STATE_ROW, _SORT_ROW, _ORDER_ROW, _SERIES_ROW, _PAGE_ROW = range(6)
_CELL = ' style="padding: 1px 12px 1px 0; text-align: left; white-space: nowrap"'


@dataclass(frozen=True)
class RunsTableState:
    """What the table shows: every run's summary, and how many of the runs found are read."""

    summaries: Sequence[RunSummary]
    read: int
    total: int
    version: int  # changes whenever a summary does


@dataclass(frozen=True)
class TableView:
    """The page's choices: filter, sort and page."""

    filter: str = ""
    state: str = STATES[0]
    sort: str = SORTS[0]
    descending: bool = True
    series: str | None = None  # None: the most logged series
    page: int = 0


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    moment = datetime.fromtimestamp(stamp)
    today = moment.date() == datetime.now().date()
    return moment.strftime("%H:%M:%S" if today else "%Y-%m-%d %H:%M")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def _matcher(text: str) -> Callable[[str], bool]:
    """Names matching the page's filter: a regular expression, else plain text (any case)."""
    try:
        pattern = re.compile(text, re.IGNORECASE)
    except re.error:
        lowered = text.lower()
        return lambda name: lowered in name.lower()
    return lambda name: pattern.search(name) is not None


def varying_options(summaries: Sequence[RunSummary]) -> list[str]:
    """The config keys whose values are not the same in every run (at most a few)."""
    first: dict[str, str] = {}
    varying: dict[str, None] = {}
    for summary in summaries:
        for key, value in summary.config.items():
            text = repr(value)
            if first.setdefault(key, text) != text:
                varying[key] = None
    for summary in summaries:  # a key some runs lack varies too
        varying.update((key, None) for key in first if key not in summary.config)
        if len(varying) >= len(first):
            break
    return sorted(varying)[:MAX_CONFIG_COLUMNS]


class RunsTable:
    """The runs table and its controls in the ``main`` env, kept up to date."""

    def __init__(self, client: VisdomClient, name: str, link: Callable[[str], str]) -> None:
        self.client = client
        self.name = name
        self.link = link  # a run's name -> the URL that opens its page
        self.win = f"runs_{safe_id(name)}"
        self.controls_win = f"runs_controls_{safe_id(name)}"
        self.view = TableView()
        self.compare_env: str | None = None  # linked above the rows
        self._html: str | None = None
        self._controls: tuple[TableView, tuple[str, ...]] | None = None
        self._built: tuple[int, TableView, str | None] | None = None
        self._built_at = -math.inf
        self._series: tuple[str, ...] = ()
        self._options: list[str] = []
        self._counted = -1  # the state version the series and options were counted at

    @property
    def pending(self) -> bool:
        """Never: the table holds nothing back."""
        return False

    def invalidate(self) -> None:
        """Forget what the server shows (a restarted server): the next sync re-sends it."""
        self._html = None
        self._controls = None
        self._built = None

    def sync(self, state: RunsTableState, now: float | None = None, force: bool = False) -> bool:
        """Apply the page's choices and re-send the table if it changed; True when sent."""
        now = time.time() if now is None else now
        self._apply_page_events()
        sent = self._sync_controls()
        built = (state.version, self.view, self.compare_env)
        if not force and now - self._built_at < REFRESH_S and self._html is not None:
            return sent  # 10,000 rows are filtered and sorted at most this often
        live = any(s.state == "running" for s in state.summaries)  # may fall silent
        if not force and built == self._built and not live:
            return sent
        self._built, self._built_at = built, now
        self._count(state)
        sent |= self._sync_controls()
        page = self.html(state, now)
        if page == self._html:
            return sent
        self.client.post(
            "events",
            {
                "data": [{"content": page, "type": "text"}],
                "win": self.win,
                "eid": INDEX_ENV,
                "opts": {"title": f"runs: {self.name}", "width": 1100, "height": 640},
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
        """The series to choose from, and the options that differ, as of ``state``."""
        if self._counted != state.version:
            self._counted = state.version
            self._series = self._series_choices(state.summaries)
            self._options = varying_options(state.summaries)

    def rows(self, state: RunsTableState, now: float) -> list[RunSummary]:
        """The runs the page's filter keeps, in its order (every page)."""
        self._count(state)
        view, matches = self.view, _matcher(self.view.filter)
        kept = [
            s
            for s in state.summaries
            if matches(s.name) and (view.state == STATES[0] or s.state == view.state)
        ]
        tag = self.series_shown()
        higher = tag is not None and higher_is_better(tag)
        key = _sort_key(view.sort, tag, higher, now)
        by_name = sorted(kept, key=lambda s: s.name)
        known = [s for s in by_name if key(s) is not None]
        unknown = [s for s in by_name if key(s) is None]  # last, whatever the order
        known.sort(key=key, reverse=view.descending)
        return known + unknown

    def html(self, state: RunsTableState, now: float) -> Html:
        """The page of rows the view asks for, with what is read so far and the pager."""
        rows = self.rows(state, now)
        pages = max(1, math.ceil(len(rows) / PAGE_ROWS))
        page = min(self.view.page, pages - 1)
        shown = rows[page * PAGE_ROWS : (page + 1) * PAGE_ROWS]
        tag = self.series_shown()
        head = ["run", "state", "step", "started", "duration", "last update"]
        head += [f"{tag} (last)", f"{tag} (best)"] if tag else []
        head += self._options
        table = markup.element(
            "table",
            markup.row(head, "th", _CELL),
            *(markup.row(self._cells(s, tag, now), attrs=_CELL) for s in shown),
        )
        counts = f"{len(state.summaries):,} runs"
        if state.read < state.total:
            counts = f"reading {state.read:,} of {state.total:,} runs"
        if len(rows) != len(state.summaries):
            counts += f"; {len(rows):,} match the filter"
        pager = f"page {page + 1} of {pages} ({PAGE_ROWS} rows a page: set 'page' in the runs pane)"
        parts: list[object] = [markup.element("p", counts)]
        if self.compare_env:
            url = self.client.endpoint.env_url(self.compare_env)
            parts.append(markup.element("p", "compared: ", markup.link(url, self.compare_env)))
        return markup.join(*parts, table, markup.element("p", pager))

    def _cells(self, summary: RunSummary, tag: str | None, now: float) -> list[object]:
        cells: list[object] = [
            markup.link(self.link(summary.name), summary.name),
            summary.state_at(now),
            "-" if summary.step is None else f"{summary.step:,}",
            _when(summary.started),
            "-" if summary.duration is None else format_duration(summary.duration),
            _when(summary.updated),
        ]
        if tag is not None:
            stats = summary.series.get(tag)
            best = stats.best(higher_is_better(tag)) if stats is not None else None
            cells += [_number(stats.last if stats else None), _number(best)]
        cells += [
            _cell(summary.config[key]) if key in summary.config else "-" for key in self._options
        ]
        return cells

    @staticmethod
    def _series_choices(summaries: Sequence[RunSummary]) -> tuple[str, ...]:
        """The series runs logged, the most logged first (a loss before the rest when tied)."""
        counts = Counter(tag for s in summaries for tag in s.series)
        ranked = sorted(counts, key=lambda tag: (-counts[tag], "loss" not in tag.lower(), tag))
        return tuple(ranked[:MAX_SERIES_CHOICES])

    # --- the page's runs pane -----------------------------------------------------------

    def _apply_page_events(self) -> None:
        events = self.client.events.subscribe(INDEX_ENV, self.controls_win)
        while not events.empty():
            event = events.get_nowait()
            if event.get("event_type") == "PropertyUpdate":
                self._controls = None  # show what is in use, also when refused
                self.view = self._changed(event)

    def _changed(self, event: dict[str, Any]) -> TableView:
        row, value, view = event.get("propertyId"), event.get("value"), self.view
        try:
            if row == _FILTER_ROW:
                return replace(view, filter=str(value)[:200], page=0)
            if row == _PAGE_ROW:
                return replace(view, page=max(0, min(10**9, int(float(str(value)))) - 1))
            choices = {_STATE_ROW: STATES, _SORT_ROW: SORTS, _ORDER_ROW: ORDERS}
            index = int(str(value))
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
            return replace(view, descending=chosen == ORDERS[0])
        log.warning("ignoring the runs pane's change %r of row %r", value, row)
        return view

    def _sync_controls(self) -> bool:
        drawn = (self.view, self._series)
        if self._controls == drawn:
            return False
        view, series = self.view, self.series_shown()
        rows = [
            {"type": "text", "name": "filter (name)", "value": view.filter},
            {
                "type": "select",
                "name": "state",
                "value": STATES.index(view.state),
                "values": list(STATES),
            },
            {
                "type": "select",
                "name": "sort by",
                "value": SORTS.index(view.sort),
                "values": list(SORTS),
            },
            {
                "type": "select",
                "name": "order",
                "value": int(not view.descending),
                "values": list(ORDERS),
            },
            {
                "type": "select",
                "name": "series",
                "value": self._series.index(series) if series in self._series else 0,
                "values": list(self._series) or ["-"],
            },
            {"type": "number", "name": "page", "value": view.page + 1},
        ]
        message = {
            "data": [{"content": rows, "type": "properties"}],
            "win": self.controls_win,
            "eid": INDEX_ENV,
            "opts": {"title": f"filter, sort, page: {self.name}", "width": 300, "height": 300},
        }
        self.client.post("events", message)
        self._controls = drawn
        return True


def _value(stats: SeriesStats | None, higher: bool, last: bool) -> float | None:
    """A series' last or best value to sort by; None (listed last) when absent or NaN."""
    value = None if stats is None else stats.last if last else stats.best(higher)
    return None if value is None or math.isnan(value) else value


def _sort_key(sort: str, tag: str | None, higher: bool, now: float) -> Callable[[RunSummary], Any]:
    """The value a column sorts by (None: no value, listed last)."""
    if sort in ("last value", "best value"):
        last = sort == "last value"
        return lambda s: _value(s.series.get(tag) if tag else None, higher, last)
    keys: dict[str, Callable[[RunSummary], Any]] = {
        "run": lambda s: s.name.lower(),
        "state": lambda s: s.state_at(now),
        "step": lambda s: s.step,
        "started": lambda s: s.started,
        "duration": lambda s: s.duration,
    }
    return keys.get(sort, lambda s: s.updated)
