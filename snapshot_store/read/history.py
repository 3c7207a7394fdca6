"""All points of every series a reader has returned, one point per step.

The visualizer's and the exporters' memory of a run: :func:`~.reader.read_store`
fills one from a whole store, a follower adds each poll's scalars.
"""

from __future__ import annotations

import itertools

from snapshot_store.format.batches import SeriesColumns


class History:
    """All points of every series, keeping the latest value per (series, step).

    A resumed run that logs a step again replaces it; steps normally grow, so
    the common path is a plain append.
    """

    def __init__(self) -> None:
        self._series: dict[tuple[str, str], list[list]] = {}
        self._unsorted: set[tuple[str, str]] = set()

    def add(self, batch: list[SeriesColumns]) -> set[tuple[str, str]]:
        """Add a batch of series columns; returns the keys whose earlier points changed.

        A key is returned when a step arrived that is not after the series' last
        step, i.e. a consumer must redraw that series instead of appending.
        """
        rewound = set()
        for group, name, steps, epochs, times, values in batch:
            key = (group, name)
            cols = self._series.get(key)
            if cols is None:
                cols = self._series[key] = [[], [], [], []]
            if (cols[0] and steps and steps[0] <= cols[0][-1]) or any(
                b <= a for a, b in itertools.pairwise(steps)
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
        """``(steps, epochs, wall_times, values)`` sorted by step, one point per step."""
        cols = self._series[key]
        if key in self._unsorted:
            latest = {step: i for i, step in enumerate(cols[0])}  # later index wins
            order = [latest[step] for step in sorted(latest)]
            cols[:] = [[col[i] for i in order] for col in cols]
            self._unsorted.discard(key)
        return cols[0], cols[1], cols[2], cols[3]

    @property
    def points(self) -> int:
        """Points held, counting replaced steps until the series is next read."""
        return sum(len(cols[0]) for cols in self._series.values())
