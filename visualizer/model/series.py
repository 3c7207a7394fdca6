"""Compact in-memory series: step, value and wall time, every value logged (History's rule).

:class:`snapshot_store.History` keeps four columns of Python objects per point;
the visualizer draws ``(step or time, value)``, so it keeps three typed columns
(the step as int32 while every step fits, else int64; a float64 value; and the
wall time as a float32 offset from the series' first one: 16 bytes a point) and
a ten-million-point run stays small.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from typing import Any

import numpy as np

from snapshot_store.read.history import kept_points

# Points per full block of a column. A column grows by adding blocks, never by
# moving what it holds: one array regrown by realloc left a freed copy behind
# at each step, and those holes made up a fifth of a long replay's memory.
BLOCK = 1 << 16
_INT32 = np.iinfo(np.int32)


class Column:
    """A growable 1-D typed array kept as full blocks of :data:`BLOCK` plus a growing tail."""

    __slots__ = ("_blocks", "_size", "dtype")

    def __init__(self, dtype: Any, values: np.ndarray | None = None) -> None:
        self.dtype = np.dtype(dtype)
        self._blocks: list[np.ndarray] = []
        self._size = 0
        if values is not None:
            self.append(values)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        return self._blocks[index // BLOCK][index % BLOCK].item()

    def append(self, new: np.ndarray) -> None:
        """Add ``new`` (cast to this column's dtype) at the end."""
        done = 0
        while done < len(new):
            fill, want = self._size % BLOCK, len(new) - done
            if fill == 0:
                self._blocks.append(np.empty(min(BLOCK, max(16, want)), self.dtype))
            elif fill == len(self._blocks[-1]):  # a tail short of a block, and full: grow it
                grown = np.empty(min(BLOCK, max(2 * fill, fill + want)), self.dtype)
                grown[:fill] = self._blocks[-1]
                self._blocks[-1] = grown
            tail = self._blocks[-1]
            take = min(len(tail) - fill, want)
            tail[fill : fill + take] = new[done : done + take]
            done += take
            self._size += take

    def array(self, start: int = 0, stop: int | None = None, dtype: Any = None) -> np.ndarray:
        """Items ``start:stop`` as a new array (never a view of the column), as ``dtype``."""
        start, stop, _ = slice(start, stop).indices(self._size)
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        if start >= stop:
            return np.empty(0, dtype)
        first, last = start // BLOCK, (stop - 1) // BLOCK
        parts = self._blocks[first : last + 1]
        parts[-1] = parts[-1][: stop - last * BLOCK]
        parts[0] = parts[0][start - first * BLOCK :]
        # One allocation, already in the dtype asked for: no second copy to convert.
        return np.concatenate(parts, dtype=dtype)


def _step_column(steps: np.ndarray) -> Column:
    """``steps`` (int64) as a column: int32 when every one fits, which halves them."""
    fits = len(steps) == 0 or (steps.min() >= _INT32.min and steps.max() <= _INT32.max)
    return Column(np.int32 if fits else np.int64, steps)


def _fits(column: Column, steps: np.ndarray) -> bool:
    return column.dtype == np.int64 or (steps[0] >= _INT32.min and steps[-1] <= _INT32.max)


class Series:
    """Points of one trace in logged order, which never goes back in step: every value,
    two at one step as two points, as :func:`~snapshot_store.read.history.kept_points` keeps.

    Steps normally grow (or repeat), so :meth:`extend` is an append; a step below
    the last one (a resumed run logging again from its checkpoint) replaces the
    points from that step on and reports a rewind.
    """

    __slots__ = ("_steps", "_t0", "_times", "_values", "rewinds")

    def __init__(self) -> None:
        self._steps = Column(np.int32)  # int64 from the first step past int32
        self._values = Column(np.float64)
        # Wall times as offsets from the first one seen: float32 resolves a
        # second within 194 days, and halves what float64 would cost.
        self._times = Column(np.float32)
        self._t0: float | None = None
        # Bumped whenever points already held change: a drawn copy of this
        # series is out of date and must be redrawn, not appended to.
        self.rewinds = 0

    def __len__(self) -> int:
        return len(self._steps)

    @property
    def last_step(self) -> int | None:
        """The highest step held (the last point's), if any."""
        return self._steps[-1] if len(self._steps) else None

    def extend(
        self, steps: Iterable[int], values: Iterable[float], times: Iterable[float] | None = None
    ) -> bool:
        """Add points in logging order; True when earlier points changed (redraw needed).

        ``times`` are the points' wall times (seconds since the epoch); unknown ones are NaN.
        """
        # array() refuses what is not an int (or float): numpy would round a float step.
        new_steps = np.frombuffer(array("q", steps), dtype=np.int64)
        new_values = np.frombuffer(array("d", values), dtype=np.float64)
        if len(new_steps) != len(new_values):
            raise ValueError("steps and values differ in length")
        if not len(new_steps):
            return False
        new_times = self._offsets(times, len(new_steps))
        increasing = bool((new_steps[1:] >= new_steps[:-1]).all())
        if increasing and (not len(self) or new_steps[0] >= self._steps[-1]):
            if not _fits(self._steps, new_steps):
                self._steps = Column(np.int64, self.steps())
            self._steps.append(new_steps)
            self._values.append(new_values)
            self._times.append(new_times)
            return False
        self._merge(new_steps, new_values, new_times)
        self.rewinds += 1
        return True

    def _offsets(self, times: Iterable[float] | None, n: int) -> np.ndarray:
        """``times`` as float32 offsets from the series' first wall time."""
        if times is None:
            return np.full(n, np.nan, dtype=np.float32)
        # array() copies a reader's array('d') in one go, where fromiter walks it.
        absolute = np.frombuffer(array("d", times), dtype=np.float64)
        if len(absolute) != n:
            raise ValueError("steps and wall times differ in length")
        if self._t0 is None:
            finite = absolute[np.isfinite(absolute)]
            if len(finite) == 0:
                return absolute.astype(np.float32)
            self._t0 = float(finite[0])
        return (absolute - self._t0).astype(np.float32)

    def _merge(self, new_steps: np.ndarray, new_values: np.ndarray, new_times: np.ndarray) -> None:
        steps = np.concatenate((self.steps(), new_steps))
        values = np.concatenate((self.values(), new_values))
        times = np.concatenate((self._times.array(), new_times))
        kept = kept_points(steps, times)
        keep = slice(None) if kept is None else kept
        self._steps = _step_column(steps[keep])
        self._values = Column(np.float64, values[keep])
        self._times = Column(np.float32, times[keep])

    def step_at(self, index: int) -> int:
        """The step of point ``index`` (in logged order, which is step order)."""
        return int(self._steps[index])

    def steps(self, start: int = 0) -> np.ndarray:
        """Steps from index ``start`` as an int64 array (a copy: safe to keep)."""
        return self._steps.array(start, dtype=np.int64)

    def values(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Values from index ``start`` (to ``stop``) as a float64 array (a copy: safe to keep)."""
        return self._values.array(start, stop)

    @property
    def first_time(self) -> float | None:
        """Wall time of the first point seen (seconds since the epoch), if known."""
        return self._t0

    @property
    def last_time(self) -> float | None:
        """Wall time of the point at the highest step, if known."""
        if self._t0 is None or not len(self._times):
            return None
        last = self._t0 + float(self._times[-1])
        return last if math.isfinite(last) else None

    def times(self, index: np.ndarray | slice) -> np.ndarray:
        """Wall times (seconds since the epoch, NaN when unknown) of the points at ``index``."""
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self._times))
            offsets = self._times.array(start, stop)[::step]
        else:
            offsets = self._times.array()[index]
        return offsets.astype(np.float64) + (self._t0 if self._t0 is not None else np.nan)
