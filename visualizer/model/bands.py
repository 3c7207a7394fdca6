"""A group of runs as one curve: the mean over its runs at each step, and their min-max band.

Runs are aligned by step: the group has a point at every step any of its runs
logged, and there the mean, min and max are over the runs that have a finite
value at that step (NaN and infinities are left out; a step where none has one
is a gap). Computed per run into running sums, so memory stays one array per
statistic whatever the number of runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .series import Series


@dataclass(frozen=True)
class Band:
    """A group's curve: at each step (sorted), the mean, min and max over its runs, and the
    mean wall time (NaN where none is known)."""

    steps: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    times: np.ndarray


def band(members: Sequence[Series], shifts: Sequence[float] | None = None) -> Band:
    """The mean, min and max of ``members`` aligned by step.

    ``shifts`` (seconds, one per member) move each member's wall times before they
    are averaged: runs started at different times then average in relative time.
    """
    shifts = shifts if shifts is not None else [0.0] * len(members)
    steps = np.unique(np.concatenate([s.steps() for s in members] or [np.empty(0, np.int64)]))
    n = len(steps)
    total, count = np.zeros(n), np.zeros(n, dtype=np.int64)
    low, high = np.full(n, np.inf), np.full(n, -np.inf)
    time_total, time_count = np.zeros(n), np.zeros(n, dtype=np.int64)
    for series, shift in zip(members, shifts, strict=True):
        at = np.searchsorted(steps, series.steps())  # a Series holds each step once
        values = series.values()
        finite = np.isfinite(values)
        where, kept = at[finite], values[finite]
        total[where] += kept
        count[where] += 1
        low[where] = np.minimum(low[where], kept)
        high[where] = np.maximum(high[where], kept)
        times = series.times(slice(None)) - shift
        known = np.isfinite(times)
        time_total[at[known]] += times[known]
        time_count[at[known]] += 1
    empty = count == 0
    mean = np.divide(total, count, out=np.full(n, np.nan), where=~empty)
    low[empty] = high[empty] = np.nan
    times = np.divide(time_total, time_count, out=np.full(n, np.nan), where=time_count > 0)
    return Band(steps, mean, low, high, times)


def mean_series(curve: Band) -> Series:
    """The group's mean as a :class:`Series`, drawn as a run's series is."""
    series = Series()
    times = curve.times.tolist() if len(curve.times) else None
    series.extend(curve.steps.tolist(), curve.mean.tolist(), times)
    return series
