"""The run summary the writer keeps in ``status.pickle``, as W&B keeps a run's ``summary``.

A runs table of thousands of runs must know each run (its last loss, its best
accuracy, how far it got) without reading its segments. So the writer thread
folds every batch of scalar columns it converts into per-series statistics, and
the status document it rewrites (at most once a second, plus heartbeats) carries
them: the fields of :mod:`snapshot_store.format.summary`, the schema's one owner.

A resumed run continues from the earlier session's status. One that resumes a
store whose earlier status has no summary (an older writer) while segments
exist keeps none: its counts would miss the earlier points, and a reader
computes the summary from the segments then, as for any older store.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any

import numpy as np

from run_core.tags import tag_of
from snapshot_store.format.batches import SeriesColumns
from snapshot_store.format.kinds import ExtraRecord
from snapshot_store.format.summary import MAX_SUMMARY_SERIES, SeriesStats

log = logging.getLogger(__name__)

_PLAIN = (str, int, float, bool, type(None))
# Points in a batch from which one numpy reduction beats min()/max() per series:
# measured on the writer thread of a live loop, a batch of 400 points cost 48 us
# with min()/max() against 97 us with numpy, one of 4,300 points 307 us against
# 138 us (numpy's fixed cost on a thread that wakes every 100 ms is large).
_NUMPY_FROM = 1024
_FMIN_AT, _FMAX_AT = np.fmin.reduceat, np.fmax.reduceat


def _resumed(entry: object) -> SeriesStats | None:
    """The stats an earlier status wrote, or None when ``entry`` is not exactly as this
    writer writes it (a summary continued from a doubtful entry would be wrong for good)."""
    if not isinstance(entry, dict):
        return None
    count, step, last = entry.get("count"), entry.get("step"), entry.get("last")
    lo, hi, wall = entry.get("min"), entry.get("max"), entry.get("time")
    if type(count) is not int or count < 1 or type(step) is not int:
        return None
    if not (type(last) is float and type(wall) is float and _bound(lo) and _bound(hi)):
        return None
    if (lo is None) != (hi is None):
        return None
    return SeriesStats(count, step, last, lo, hi, wall)


def _extremes(columns: list[Sequence[float]]) -> tuple[list[float], list[float]]:
    """Each column's smallest and largest value, NaN skipped (NaN when all are)."""
    lows, highs = [], []
    for values in columns:
        # min() and max() pass over a NaN (every comparison with it is false) unless
        # it comes first: they return it then, and only then are the NaN taken out.
        lo, hi = min(values), max(values)
        if lo != lo:
            numbers = [v for v in values if v == v] or [lo]
            lo, hi = min(numbers), max(numbers)
        lows.append(float(lo))
        highs.append(float(hi))
    return lows, highs


def _batch_extremes(columns: list[Sequence[float]]) -> tuple[list[float], list[float]]:
    """:func:`_extremes` in one numpy reduction each over the batch (fmin and fmax skip
    NaN); columns of steps beyond int64 are lists, packed here."""
    packed = [v if type(v) is array else array("d", v) for v in columns]
    flat = np.frombuffer(b"".join(packed), dtype=np.float64)
    starts = [0, *accumulate(map(len, packed[:-1]))]
    return _FMIN_AT(flat, starts).tolist(), _FMAX_AT(flat, starts).tolist()


def _bound(value: object) -> bool:
    return value is None or (type(value) is float and value == value)


class SummaryKeeper:
    """The series statistics and the last hparams of one run, kept by the writer thread.

    Args:
        kept: False when the summary would be wrong (see the module docstring):
            then only hparams are kept, and no series work is done.
    """

    def __init__(self, kept: bool = True) -> None:
        self.kept = kept
        self.series: dict[str, SeriesStats] = {}
        self.left_out: set[str] = set()
        self._left_out_before = 0  # an earlier session's count (its names are not stored)
        self.hparams: dict[str, Any] | None = None

    def add(self, columns: list[SeriesColumns]) -> None:
        """Fold one converted batch (:meth:`.ScalarColumns.convert`) into the statistics."""
        if not self.kept or not columns:
            return
        series, taken, value_columns, points = self.series, [], [], 0
        for group, name, steps, _epochs, times, values in columns:
            tag = tag_of(group, name)
            stats = series.get(tag)
            if stats is None:
                if len(series) >= MAX_SUMMARY_SERIES:
                    self.left_out.add(tag)
                    continue
                stats = series[tag] = SeriesStats()
            # The columns are in logged order: the last point is the last logged.
            stats.count += len(values)
            stats.step = steps[-1]  # an int, beyond int64 too (list columns)
            stats.last = float(values[-1])
            stats.time = float(times[-1])
            taken.append(stats)
            value_columns.append(values)
            points += len(values)
        extremes = _extremes if points < _NUMPY_FROM else _batch_extremes
        for stats, lo, hi in zip(taken, *extremes(value_columns), strict=True):
            if lo == lo:  # NaN: the batch's values of this series were all NaN
                if stats.min is None or lo < stats.min:
                    stats.min = lo
                if stats.max is None or hi > stats.max:
                    stats.max = hi

    def saw_records(self, records: list[ExtraRecord]) -> None:
        """Keep the hparams dict of the last hparams record among ``records``."""
        for kind, _tag, _step, _wall, data in records:
            if kind == "hparams":
                self.hparams = data["hparams"]

    def fields(self) -> dict[str, Any]:
        """The status fields of the summary (none of the series' when it is not kept)."""
        out: dict[str, Any] = {}
        if self.kept:
            out["series"] = {tag: stats.fields() for tag, stats in self.series.items()}
            # After a resume the names left out before are unknown: at least this many.
            left_out = max(len(self.left_out), self._left_out_before)
            if left_out:
                out["series_left_out"] = left_out
        if self.hparams is not None:
            out["hparams"] = self.hparams
        return out

    def resume(self, status: Mapping[str, Any], had_segments: bool) -> list[str]:
        """Continue from an earlier session's status; what was malformed in it, and ignored.

        ``had_segments``: the store holds scalar segments already, so a status without a
        summary (an older writer) means the summary can not be kept (see the module).
        """
        problems: list[str] = []
        hparams = status.get("hparams")
        if hparams is not None:
            if isinstance(hparams, dict) and all(
                type(k) is str and type(v) in _PLAIN for k, v in hparams.items()
            ):
                self.hparams = hparams
            else:
                problems.append("hparams is not a dict of plain values")
        series = status.get("series")
        if not isinstance(series, dict):
            if series is not None:
                problems.append(f"series is {type(series).__name__}, not a dict")
            self.kept = not had_segments
            return problems
        left_out = status.get("series_left_out", 0)
        if type(left_out) is int and left_out >= 0:
            self._left_out_before = left_out
        else:
            problems.append("series_left_out is not a count")
        for tag, entry in series.items():
            stats = _resumed(entry) if type(tag) is str else None
            if stats is None:
                problems.append(f"series entry {tag!r:.60} is malformed")
            elif len(self.series) < MAX_SUMMARY_SERIES:
                self.series[tag] = stats
            else:
                self._left_out_before += 1
        return problems
