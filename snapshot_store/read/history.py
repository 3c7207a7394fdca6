"""All points of every series a reader has returned, every value kept in logged order.

The visualizer's and the exporters' memory of a run: :func:`~.reader.read_store`
fills one from a whole store, a follower adds each poll's scalars. The rule
(:func:`kept_points`) is the one every reader of the store follows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from snapshot_store.format.batches import SeriesColumns


def kept_points(steps: np.ndarray, times: np.ndarray | None = None) -> np.ndarray | None:
    """Indexes of the points of one series that are kept, in logged order; None when every
    one is, in the order given.

    Logged order is the order of the points' wall times ``times`` (a segment read late,
    once it could be, comes after later ones: its points go back where they were logged).
    Every value is kept, two at one step as two points, in the order logged,
    except that a step logged below the one before it starts over from there:
    it replaces the earlier points at that step and after (a resumed run
    logging again from its checkpoint; TensorBoard purges orphaned events so).
    What is kept never goes back in step. Vectorised: a few numpy passes.
    """
    order = _logged_order(times)
    keep = _kept_in_order(steps if order is None else steps[order])
    if order is None:
        return keep
    return order if keep is None else order[keep]


def _logged_order(times: np.ndarray | None) -> np.ndarray | None:
    """Indexes of the points by wall time; None when they come so already, or a time is
    unknown (then the order they came in is all there is to go by)."""
    if times is None or len(times) < 2:
        return None
    times = np.asarray(times, dtype=np.float64)
    if bool((times[1:] >= times[:-1]).all()) or not bool(np.isfinite(times).all()):
        return None
    return np.argsort(times, kind="stable")


def _kept_in_order(steps: np.ndarray) -> np.ndarray | None:
    """:func:`kept_points` of points already in logged order."""
    if len(steps) < 2:
        return None
    back = np.flatnonzero(steps[1:] < steps[:-1]) + 1  # where the steps go back
    if not len(back):
        return None
    # The lowest step any later step back goes to; a point at or past it is replaced.
    lowest = np.minimum.accumulate(steps[back][::-1])[::-1]
    later = np.searchsorted(back, np.arange(len(steps)), side="right")
    keep = later == len(back)
    ahead = ~keep
    keep[ahead] = steps[ahead] < lowest[later[ahead]]
    return np.flatnonzero(keep)


def step_array(steps: Sequence[int]) -> np.ndarray:
    """``steps`` as int64, or objects when one is past int64 (a store may hold such)."""
    try:
        return np.asarray(steps, dtype=np.int64)
    except OverflowError:
        return np.asarray(steps, dtype=object)


class History:
    """All points of every series, kept as :func:`kept_points` says.

    Steps normally grow (or repeat), so the common path is a plain append; a
    step back (a resumed run) is resolved when the series is next read.
    """

    def __init__(self) -> None:
        self._series: dict[tuple[str, str], list[list]] = {}
        self._unsorted: set[tuple[str, str]] = set()

    def add(self, batch: list[SeriesColumns]) -> set[tuple[str, str]]:
        """Add a batch of series columns; returns the keys whose earlier points changed.

        A key is returned when a step arrived below the series' last step, i.e.
        a consumer must redraw that series instead of appending.
        """
        rewound = set()
        for group, name, steps, epochs, times, values in batch:
            key = (group, name)
            cols = self._series.get(key)
            if cols is None:
                cols = self._series[key] = [[], [], [], []]
            new = step_array(steps)
            if len(new) and (
                (cols[0] and new[0] < cols[0][-1]) or bool((new[1:] < new[:-1]).any())
            ):
                self._unsorted.add(key)
                rewound.add(key)
            cols[0].extend(steps)
            cols[1].extend(epochs)
            cols[2].extend(times)
            cols[3].extend(values)
        return rewound

    def keys(self) -> list[tuple[str, str]]:
        """Every (group, name) seen, in first-seen order."""
        return list(self._series)

    def series(
        self, key: tuple[str, str]
    ) -> tuple[list[int], list[float], list[float], list[float]]:
        """``(steps, epochs, wall_times, values)`` in logged order, which never goes back in
        step: two values logged at one step are two points."""
        cols = self._series[key]
        if key in self._unsorted:
            keep = kept_points(step_array(cols[0]), np.asarray(cols[2], dtype=np.float64))
            if keep is not None:
                order = keep.tolist()
                cols[:] = [[col[i] for i in order] for col in cols]
            self._unsorted.discard(key)
        return cols[0], cols[1], cols[2], cols[3]

    @property
    def points(self) -> int:
        """Points held, counting replaced ones until the series is next read."""
        return sum(len(cols[0]) for cols in self._series.values())
