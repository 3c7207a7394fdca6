"""Compact in-memory series: step, value and wall time, latest value per step.

:class:`snapshot_store.History` keeps four columns of Python objects per point;
the visualizer draws ``(step or time, value)``, so it keeps three typed arrays
(an int64 step, a float64 value, and the wall time as a float32 offset from the
series' first one: 20 bytes a point) and a million-point run stays small.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from itertools import pairwise

import numpy as np


class Series:
    """Points of one trace sorted by step, one value per step (the latest logged).

    Steps normally grow, so :meth:`extend` is an array append; a step at or before
    the last one (a resumed run logging a step again) merges and reports a rewind.
    """

    __slots__ = ("_steps", "_t0", "_times", "_values", "rewinds")

    def __init__(self) -> None:
        self._steps = array("q")
        self._values = array("d")
        # Wall times as offsets from the first one seen: float32 resolves a
        # second within 194 days, and halves what float64 would cost.
        self._times = array("f")
        self._t0: float | None = None
        # Bumped whenever points already held change: a drawn copy of this
        # series is out of date and must be redrawn, not appended to.
        self.rewinds = 0

    def __len__(self) -> int:
        return len(self._steps)

    @property
    def last_step(self) -> int | None:
        """The highest step held, if any."""
        return self._steps[-1] if self._steps else None

    def extend(
        self, steps: Iterable[int], values: Iterable[float], times: Iterable[float] | None = None
    ) -> bool:
        """Add points in logging order; True when earlier points changed (redraw needed).

        ``times`` are the points' wall times (seconds since the epoch); unknown ones are NaN.
        """
        new_steps = array("q", steps)
        new_values = array("d", values)
        if len(new_steps) != len(new_values):
            raise ValueError("steps and values differ in length")
        if not new_steps:
            return False
        new_times = self._offsets(times, len(new_steps))
        increasing = all(b > a for a, b in pairwise(new_steps))
        if increasing and (not self._steps or new_steps[0] > self._steps[-1]):
            self._steps.extend(new_steps)
            self._values.extend(new_values)
            self._times.frombytes(new_times.tobytes())
            return False
        self._merge(new_steps, new_values, new_times)
        self.rewinds += 1
        return True

    def _offsets(self, times: Iterable[float] | None, n: int) -> np.ndarray:
        """``times`` as float32 offsets from the series' first wall time."""
        if times is None:
            return np.full(n, np.nan, dtype=np.float32)
        absolute = np.fromiter(times, dtype=np.float64, count=n)
        if self._t0 is None:
            finite = absolute[np.isfinite(absolute)]
            if len(finite) == 0:
                return absolute.astype(np.float32)
            self._t0 = float(finite[0])
        return (absolute - self._t0).astype(np.float32)

    def _merge(self, new_steps: array, new_values: array, new_times: np.ndarray) -> None:
        steps = np.concatenate((self.steps(), np.frombuffer(new_steps, dtype=np.int64)))
        values = np.concatenate((self.values(), np.frombuffer(new_values, dtype=np.float64)))
        times = np.concatenate((np.frombuffer(self._times, dtype=np.float32), new_times))
        # np.unique keeps the first occurrence: on the reversed arrays that is the
        # latest one logged, which is the value a step must show.
        _, first_in_reversed = np.unique(steps[::-1], return_index=True)
        keep = len(steps) - 1 - first_in_reversed
        self._steps = array("q", steps[keep].tobytes())
        self._values = array("d", values[keep].tobytes())
        self._times = array("f", times[keep].tobytes())

    def step_at(self, index: int) -> int:
        """The step of point ``index`` (in step order)."""
        return self._steps[index]

    def steps(self, start: int = 0) -> np.ndarray:
        """Steps from index ``start`` as an int64 array (a copy: safe to keep)."""
        return np.frombuffer(self._steps, dtype=np.int64)[start:].copy()

    def values(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Values from index ``start`` (to ``stop``) as a float64 array (a copy: safe to keep)."""
        return np.frombuffer(self._values, dtype=np.float64)[start:stop].copy()

    @property
    def first_time(self) -> float | None:
        """Wall time of the first point seen (seconds since the epoch), if known."""
        return self._t0

    @property
    def last_time(self) -> float | None:
        """Wall time of the point at the highest step, if known."""
        if self._t0 is None or not self._times:
            return None
        last = self._t0 + float(self._times[-1])
        return last if math.isfinite(last) else None

    def times(self, index: np.ndarray | slice) -> np.ndarray:
        """Wall times (seconds since the epoch, NaN when unknown) of the points at ``index``."""
        offsets = np.frombuffer(self._times, dtype=np.float32)[index].astype(np.float64)
        return offsets + (self._t0 if self._t0 is not None else np.nan)
