"""Compact in-memory series: steps and values only, latest value per step.

:class:`snapshot_store.History` keeps four columns of Python objects per point;
the visualizer only draws ``(step, value)``, so it keeps two typed arrays (an
int64 and a float64 per point) and a million-point run stays small.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from itertools import pairwise

import numpy as np


class Series:
    """Points of one trace sorted by step, one value per step (the latest logged).

    Steps normally grow, so :meth:`extend` is an array append; a step at or before
    the last one (a resumed run logging a step again) merges and reports a rewind.
    """

    __slots__ = ("_steps", "_values", "rewinds")

    def __init__(self) -> None:
        self._steps = array("q")
        self._values = array("d")
        # Bumped whenever points already held change: a drawn copy of this
        # series is out of date and must be redrawn, not appended to.
        self.rewinds = 0

    def __len__(self) -> int:
        return len(self._steps)

    @property
    def last_step(self) -> int | None:
        """The highest step held, if any."""
        return self._steps[-1] if self._steps else None

    def extend(self, steps: Iterable[int], values: Iterable[float]) -> bool:
        """Add points in logging order; True when earlier points changed (redraw needed)."""
        new_steps = array("q", steps)
        new_values = array("d", values)
        if len(new_steps) != len(new_values):
            raise ValueError("steps and values differ in length")
        if not new_steps:
            return False
        increasing = all(b > a for a, b in pairwise(new_steps))
        if increasing and (not self._steps or new_steps[0] > self._steps[-1]):
            self._steps.extend(new_steps)
            self._values.extend(new_values)
            return False
        self._merge(new_steps, new_values)
        self.rewinds += 1
        return True

    def _merge(self, new_steps: array, new_values: array) -> None:
        steps = np.concatenate((self.steps(), np.frombuffer(new_steps, dtype=np.int64)))
        values = np.concatenate((self.values(), np.frombuffer(new_values, dtype=np.float64)))
        # np.unique keeps the first occurrence: on the reversed arrays that is the
        # latest one logged, which is the value a step must show.
        _, first_in_reversed = np.unique(steps[::-1], return_index=True)
        keep = len(steps) - 1 - first_in_reversed
        self._steps = array("q", steps[keep].tobytes())
        self._values = array("d", values[keep].tobytes())

    def step_at(self, index: int) -> int:
        """The step of point ``index`` (in step order)."""
        return self._steps[index]

    def steps(self, start: int = 0) -> np.ndarray:
        """Steps from index ``start`` as an int64 array (a copy: safe to keep)."""
        return np.frombuffer(self._steps, dtype=np.int64)[start:].copy()

    def values(self, start: int = 0) -> np.ndarray:
        """Values from index ``start`` as a float64 array (a copy: safe to keep)."""
        return np.frombuffer(self._values, dtype=np.float64)[start:].copy()
