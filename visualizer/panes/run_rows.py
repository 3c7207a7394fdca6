"""The runs table's rows: which runs the page's filter keeps, in which order, and each
run's cells, all from its summary. :mod:`.runs_table` draws them and takes the page's choices.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from operator import attrgetter
from typing import Any

from run_core.tags import tag_of
from snapshot_store.format.frames import STATES
from snapshot_store.format.summary import RunSummary, SeriesStats
from visualizer import markup
from visualizer.api.filters import Fields, compile_filters, fields_of, sort_key, summary_of
from visualizer.api.query import is_expression
from visualizer.model.status import format_duration
from visualizer.model.summary import best_is_highest, best_of, dotted, state_shown
from visualizer.patterns import searcher

from .values import value_cell

MAX_CONFIG_COLUMNS = 8
MAX_SUMMARY_COLUMNS = 4
MAX_SERIES_CHOICES = 200
MAX_CELL_CHARS = 40
SORTS = ("last update", "run", "state", "step", "started", "duration", "last value", "best value")
ANY_STATE = "any state"
STATE_CHOICES = (ANY_STATE, *STATES)  # the page's filter by state
TABLE_ORDERS = ("descending", "ascending")  # the page's order, a select's values
COMPARED = "●"  # marks the runs overlaid on the comparison page
# A column of the runs that saved checkpoints: how many files, and the newest one's step
# (the trainer's status field ``checkpoints``: {"count", "step"}).
CHECKPOINTS = "checkpoints"


@dataclass(frozen=True)
class RunsTableState:
    """What the table shows: every run's summary, and how many of the runs found are read."""

    summaries: Sequence[RunSummary]
    read: int
    total: int
    version: int  # changes whenever a summary does
    compared: Collection[str] = ()  # the runs overlaid, when only some are


@dataclass(frozen=True)
class TableView:
    """The page's choices: filter, sort and page."""

    filter: str = ""
    state: str = ANY_STATE
    sort: str = SORTS[0]
    descending: bool = True
    series: str | None = None  # None: the most logged series
    page: int = 0


def control_rows(
    view: TableView,
    series: Sequence[str],
    shown: str | None,
    sorts: Sequence[str],
    baseline: str | None,
) -> list[dict[str, Any]]:
    """The runs pane's rows (visdom properties) showing ``view``: the filter, state, sort, order,
    series (``series`` offered, ``shown`` chosen), page and baseline, in the order the
    page's changes name them."""
    return [
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
            "values": list(TABLE_ORDERS),
        },
        {
            "type": "select",
            "name": "series",
            "value": series.index(shown) if shown in series else 0,
            "values": list(series) or ["-"],
        },
        {"type": "number", "name": "page", "value": view.page + 1},
        {"type": "text", "name": "baseline (a run)", "value": baseline or ""},
    ]


def opening_view(sort_by: tuple[str, str] | None, descending: bool = False) -> TableView:
    """The table's choices as the page opens: sorted by ``--sort-by``'s best value, the best
    first (``--sort-descending``: the largest), else by last update."""
    if sort_by is None:
        return TableView()
    tag = tag_of(*sort_by)
    return TableView(sort="best value", descending=best_is_highest(tag, descending), series=tag)


def when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    moment = datetime.fromtimestamp(stamp)
    today = moment.date() == datetime.now().date()
    return moment.strftime("%H:%M:%S" if today else "%Y-%m-%d %H:%M")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _against(value: float | None, baseline: float | None) -> str:
    """A value, and its difference to the baseline run's where both are numbers."""
    if value is None or baseline is None or not math.isfinite(value - baseline):
        return _number(value)
    return f"{value:.6g} ({value - baseline:+.3g})"


def cell(value: Any) -> markup.Html:
    """A config or summary value's cell: the page's number format, the whole on hover."""
    return value_cell(value, MAX_CELL_CHARS)


def matcher(text: str) -> Callable[[str], bool]:
    """Names matching the page's filter: a regular expression matched in linear time, else
    plain text (any case): :mod:`visualizer.patterns`."""
    return searcher(text, ignore_case=True)


RowTest = Callable[[RunSummary], bool]


@lru_cache(maxsize=16)  # asked at each rebuild of the table
def row_filter(text: str) -> tuple[RowTest, str | None]:
    """The runs the filter box keeps, and why its text is refused (None: taken). An expression
    (:mod:`visualizer.api.query`: ``lr>0.01 and seed==3``) is judged as ``Api().runs(filters=)``
    judges it, on the same fields; other text, and a refused expression, searches names
    (:func:`matcher`)."""
    by_name = matcher(text)
    if is_expression(text):
        try:
            test = compile_filters(text)
        except ValueError as err:
            return (lambda s: by_name(s.name)), str(err)
        return (lambda s: test(_fields(s))), None
    return (lambda s: by_name(s.name)), None


class _Summary(Mapping[str, Any]):
    """A run's summary values as a filter sees them (:func:`summary_of`), made when first looked
    at: ``lr>0.01`` or a sort by ``config.lr`` reads the config alone, and making every run's
    summary was half of filtering or sorting 100,000 runs (0.6 of 1.2 s)."""

    __slots__ = ("_run", "_values")

    def __init__(self, run: RunSummary) -> None:
        self._run = run
        self._values: dict[str, Any] | None = None

    def _made(self) -> dict[str, Any]:
        if self._values is None:
            self._values = summary_of(self._run)
        return self._values

    def __getitem__(self, key: str) -> Any:
        return self._made()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._made()

    def __iter__(self) -> Iterator[str]:
        return iter(self._made())

    def __len__(self) -> int:
        return len(self._made())


def _fields(summary: RunSummary) -> Fields:
    """What a filter or a sort looks at of the run: :func:`fields_of`, its summary made lazily."""
    return fields_of(summary, values=_Summary(summary))


def sort_choices(options: Sequence[str], summary_keys: Sequence[str]) -> tuple[str, ...]:
    """The columns the table sorts by: its fixed ones, then each config and summary column."""
    return (*SORTS, *(f"config.{key}" for key in options), *summary_keys)


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


def summary_cells(summary: RunSummary) -> dict[str, Any]:
    """The summary a run set beside its series (W&B's ``run.summary``: a best model's name, a
    test score), as table columns named as the export names them (``summary.best.epoch``).
    A key that is a series is left out: its last value has a column already."""
    columns: dict[str, Any] = {}
    for key, value in summary.values.items():
        if key not in summary.series:
            dotted(f"summary.{key}", value, columns)
    saved = checkpoints_of(summary)
    if saved is not None:
        columns[CHECKPOINTS] = f"{saved[0]} (step {saved[1]:,})"
    return columns


def checkpoints_of(summary: RunSummary) -> tuple[int, int] | None:
    """How many checkpoint files the run saved and the newest one's step, as its status says
    (None when it says nothing, or nothing well-typed: a store's document is data)."""
    entry = (summary.status or {}).get(CHECKPOINTS)
    if not isinstance(entry, dict):
        return None
    count, step = entry.get("count"), entry.get("step")
    return (count, step) if type(count) is int and type(step) is int else None


def summary_columns(summaries: Sequence[RunSummary]) -> list[str]:
    """The summary columns most runs have (at most a few), the most common first."""
    counts = Counter(
        key
        for s in summaries
        if s.values or CHECKPOINTS in (s.status or ())
        for key in summary_cells(s)
    )
    ranked = sorted(counts, key=lambda key: (-counts[key], key))
    return ranked[:MAX_SUMMARY_COLUMNS]


def series_choices(summaries: Sequence[RunSummary]) -> tuple[str, ...]:
    """The series runs logged, the most logged first (a loss before the rest when tied)."""
    counts = Counter(tag for s in summaries for tag in s.series)
    ranked = sorted(counts, key=lambda tag: (-counts[tag], "loss" not in tag.lower(), tag))
    return tuple(ranked[:MAX_SERIES_CHOICES])


def select(
    summaries: Sequence[RunSummary], view: TableView, tag: str | None, now: float
) -> list[RunSummary]:
    """The runs ``view``'s filter keeps, in its order; those without a value to sort by last."""
    keeps, _why = row_filter(view.filter)
    kept = [s for s in summaries if view.state in (ANY_STATE, s.state) and keeps(s)]
    key = _sort_key(view.sort, tag, now)
    keyed = [(key(s), s) for s in sorted(kept, key=attrgetter("name"))]
    known = [(k, s) for k, s in keyed if k is not None]
    known.sort(key=lambda pair: pair[0], reverse=view.descending)
    return [s for _k, s in known] + [s for k, s in keyed if k is None]


def cells(
    summary: RunSummary,
    tag: str | None,
    columns: tuple[list[str], list[str]],
    link: markup.Html,
    now: float,
    baseline: RunSummary | None = None,
) -> list[object]:
    """One run's row: its link, state, step, times, the series' last and best (each with its
    difference to the ``baseline`` run's), then the ``columns``: its options, its summary."""
    row: list[object] = [
        link,
        state_shown(summary, now),
        "-" if summary.step is None else f"{summary.step:,}",
        when(summary.started),
        "-" if summary.duration is None else format_duration(summary.duration),
        when(summary.updated),
    ]
    if tag is not None:
        stats = summary.series.get(tag)
        base = (
            baseline.series.get(tag) if baseline is not None and baseline is not summary else None
        )
        row += [
            _against(stats.last if stats else None, base.last if base else None),
            _against(_value(stats, tag, False), _value(base, tag, False)),
        ]
    options, summary_keys = columns
    row += [cell(summary.config[key]) if key in summary.config else "-" for key in options]
    values = summary_cells(summary) if summary_keys else {}
    return row + [cell(values[key]) if key in values else "-" for key in summary_keys]


def _value(stats: SeriesStats | None, tag: str, last: bool) -> float | None:
    """Series ``tag``'s last or best value (:func:`~visualizer.model.summary.best_of`); None
    (listed last) when absent or NaN."""
    if stats is None:
        return None
    value = stats.last if last else best_of(tag, stats.min, stats.max)
    return None if value is None or math.isnan(value) else value


def _sort_key(sort: str, tag: str | None, now: float) -> Callable[[RunSummary], Any]:
    """The value a column sorts by (None: no value, listed last)."""
    if sort.startswith(("config.", "summary.")):  # a config or summary column
        key = sort_key(sort)
        return lambda s: key(_fields(s))
    if sort in ("last value", "best value"):
        last = sort == "last value"
        return lambda s: _value(s.series.get(tag), tag, last) if tag else None
    keys: dict[str, Callable[[RunSummary], Any]] = {
        "run": lambda s: s.name.lower(),
        "state": lambda s: state_shown(s, now),
        "step": lambda s: s.step,
        "started": lambda s: s.started,
        "duration": lambda s: s.duration,
        CHECKPOINTS: checkpoints_of,
    }
    return keys.get(sort, lambda s: s.updated)
