"""A run's scalar points as numpy columns, and the W&B-shaped table of them (a row a step).

The store's own reader (:class:`~snapshot_store.read.store_reader.StoreReader`) hands packed
columns; they are joined here as arrays, never as a Python object a point, so a
1M-point history becomes a DataFrame in well under a second. The rule is
:func:`~snapshot_store.read.history.kept_points` (the viewer's and the CSV export's):
every value in the order logged, two at one step as two points, a resumed run's
values replacing the earlier ones from the step it went back to.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from run_core.tags import tag_of
from snapshot_store.format.batches import SeriesColumns
from snapshot_store.read.history import kept_points
from snapshot_store.read.store_reader import READ_BYTES, Source, StoreReader

STEP_KEY, TIMESTAMP_KEY = "_step", "_timestamp"  # W&B's names of a history row's step and time
RUNTIME_KEY = "_runtime"  # W&B's: seconds from the run's start
ROW_KEYS = (STEP_KEY, TIMESTAMP_KEY, RUNTIME_KEY)  # every row's own columns, not series
WHOLE_MAX = 2.0**53  # past it a float64 is whole whatever was logged


@dataclass(frozen=True)
class SeriesPoints:
    """One series in logged order, which never goes back in step (steps beyond int64: an
    object array)."""

    tag: str
    steps: np.ndarray
    epochs: np.ndarray
    times: np.ndarray
    values: np.ndarray


def _column(chunks: list[SeriesColumns], index: int) -> np.ndarray:
    # Packed columns are typed arrays: np.asarray takes their buffer as it is.
    return np.concatenate([np.asarray(chunk[index]) for chunk in chunks])


def _kept(
    steps: np.ndarray, epochs: np.ndarray, times: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, ...]:
    """The points :func:`kept_points` keeps, in logged order, of each column."""
    columns = (epochs, times, values)
    keep = kept_points(steps, times)
    if keep is None:
        return (steps, *columns)  # the usual case: steps never went back
    return tuple(column[keep] for column in (steps, *columns))


def read_series(source: Source, tags: Sequence[str] | None = None) -> list[SeriesPoints]:
    """Every scalar series of the store (or those named ``tags``), in first-logged order.

    A bad segment is warned of by the reader (one line) and the rest is read.
    """
    reader = StoreReader(source)
    chunks: dict[str, list[SeriesColumns]] = {}
    while True:
        page = reader.poll(max_bytes=READ_BYTES)
        for columns in page.scalars:
            chunks.setdefault(tag_of(columns[0], columns[1]), []).append(columns)
        if not reader.more:
            break
    wanted = chunks.keys() if tags is None else [tag for tag in tags if tag in chunks]
    out = []
    for tag in wanted:
        parts = chunks[tag]
        steps, epochs, times, values = _kept(*(_column(parts, index) for index in range(2, 6)))
        out.append(SeriesPoints(tag, steps, epochs, times, values))
    return out


@dataclass(frozen=True)
class HistoryTable:
    """Every step any series has: a row each, a column a series (NaN where it has none)."""

    steps: np.ndarray
    timestamps: np.ndarray  # the wall time of the step's first series logged there
    values: dict[str, np.ndarray]
    present: dict[str, np.ndarray | None]  # where each series has a point; None: every row

    def __len__(self) -> int:
        return len(self.steps)

    def having(self, keys: Sequence[str]) -> HistoryTable:
        """The rows where every one of ``keys`` has a point, with those columns only."""
        if any(key not in self.values for key in keys):
            return self.take(np.zeros(0, dtype=np.intp), keys)
        masks = [mask for key in keys if (mask := self.present[key]) is not None]
        rows = np.flatnonzero(np.logical_and.reduce(masks)) if masks else None
        return self.take(rows, keys)

    def take(self, rows: np.ndarray | None, keys: Sequence[str] | None = None) -> HistoryTable:
        """Rows ``rows`` (None: all) of columns ``keys`` (None: all)."""
        keys = list(self.values) if keys is None else [k for k in keys if k in self.values]
        if rows is None:
            return HistoryTable(self.steps, self.timestamps, {k: self.values[k] for k in keys},
                         {k: self.present[k] for k in keys})  # fmt: skip
        present = {k: None if (m := self.present[k]) is None else m[rows] for k in keys}
        values = {k: self.values[k][rows] for k in keys}
        return HistoryTable(self.steps[rows], self.timestamps[rows], values, present)

    def sampled(self, samples: int) -> HistoryTable:
        """At most ``samples`` rows, evenly spaced, the first and the last among them."""
        if samples >= len(self):
            return self
        return self.take(np.unique(np.linspace(0, len(self) - 1, samples).round().astype(np.intp)))

    def columns(self, start: float | None = None) -> dict[str, np.ndarray]:
        """``_step``, a column a series, ``_timestamp`` and, given the run's ``start``,
        ``_runtime``: what a DataFrame is made of. A series of whole numbers at every row is
        int64, as W&B's rows (JSON, 523.0 written 523) make it."""
        out: dict[str, np.ndarray] = {STEP_KEY: self.steps}
        for key, column in self.values.items():
            mask = self.present[key]
            every_row = mask is None or bool(mask.all())
            out[key] = column.astype(np.int64) if every_row and _whole(column) else column
        out[TIMESTAMP_KEY] = self.timestamps
        if start is not None:
            out[RUNTIME_KEY] = self.timestamps - start
        return out

    def rows(self, start: float | None = None) -> Iterator[dict[str, Any]]:
        """A dict a row: ``_step``, the series that have a point there (a series of whole
        numbers as ints), ``_timestamp`` and, given the run's ``start``, ``_runtime``."""
        steps, stamps = self.steps.tolist(), self.timestamps.tolist()
        values = {key: _listed(column, self.present[key]) for key, column in self.values.items()}
        present = {k: None if m is None else m.tolist() for k, m in self.present.items()}
        for i, step in enumerate(steps):
            row: dict[str, Any] = {STEP_KEY: step}
            for key, listed in values.items():
                mask = present[key]
                if mask is None or mask[i]:
                    row[key] = listed[i]
            row[TIMESTAMP_KEY] = stamps[i]
            if start is not None:
                row[RUNTIME_KEY] = stamps[i] - start
            yield row


def _listed(column: np.ndarray, mask: np.ndarray | None) -> list[Any]:
    """A series' column as Python numbers, ints when every point is whole (the rows
    without a point hold NaN: 0 there, never read)."""
    if _whole(column if mask is None else column[mask]):
        column = (column if mask is None else np.where(mask, column, 0)).astype(np.int64)
    return list(column.tolist())


def _whole(values: np.ndarray) -> bool:
    """Whether ``values`` (some) are whole numbers int64 holds exactly: W&B's history keeps
    such a series as integers."""
    if not len(values) or values.dtype.kind != "f" or not np.isfinite(values).all():
        return False
    return bool((np.abs(values) <= WHOLE_MAX).all() and (values == np.floor(values)).all())


def _repeats(steps: np.ndarray) -> np.ndarray | None:
    """Each point's rank among its series' values at its step (0, then 1 for a second value
    logged there...); None when every step holds one value."""
    if len(steps) < 2 or not bool((steps[1:] == steps[:-1]).any()):
        return None
    return np.arange(len(steps)) - np.searchsorted(steps, steps, side="left")


def _rows(series: list[SeriesPoints]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The table's steps (a step once per value a series logged there) and each series' rows."""
    ranks = [_repeats(s.steps) for s in series]
    if all(rank is None for rank in ranks):
        steps = np.unique(np.concatenate([s.steps for s in series]))
        return steps, [np.searchsorted(steps, s.steps) for s in series]
    all_steps = np.concatenate([s.steps for s in series])
    all_ranks = np.concatenate(
        [np.zeros(len(s.steps), np.intp) if r is None else r
         for s, r in zip(series, ranks, strict=True)]
    )  # fmt: skip
    order = np.lexsort((all_ranks, all_steps))  # by step, then rank
    by_step, by_rank = all_steps[order], all_ranks[order]
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = (by_step[1:] != by_step[:-1]) | (by_rank[1:] != by_rank[:-1])
    row = np.empty(len(order), np.intp)
    row[order] = np.cumsum(starts) - 1
    bounds = np.cumsum([len(s.steps) for s in series])[:-1]
    return by_step[starts], np.split(row, bounds)


def table(series: list[SeriesPoints]) -> HistoryTable:
    """The table of ``series``: a row for each step any of them has, and one more for each
    further value a series logged at that step (its first row holding the first)."""
    if not series:
        return HistoryTable(np.zeros(0, np.int64), np.zeros(0), {}, {})
    first = series[0].steps
    shared = all(np.array_equal(s.steps, first) for s in series[1:])
    steps, series_rows = (first, []) if shared else _rows(series)
    stamps = series[0].times.astype(np.float64) if shared else np.full(len(steps), np.nan)
    values: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray | None] = {}
    if shared:
        for s in series:
            values[s.tag], present[s.tag] = s.values, None
        return HistoryTable(steps, stamps, values, present)
    for s, rows in zip(series, series_rows, strict=True):
        column, mask = np.full(len(steps), np.nan), np.zeros(len(steps), dtype=bool)
        column[rows], mask[rows] = s.values, True
        values[s.tag], present[s.tag] = column, mask
        unset = np.isnan(stamps[rows])  # a step's time: its first series' logging
        stamps[rows[unset]] = s.times[unset]
    return HistoryTable(steps, stamps, values, present)
