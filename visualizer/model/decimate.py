"""Display decimation: at most N points per trace, keeping the curve's shape.

The store keeps every point; only what is drawn is thinned. Each bucket of
consecutive points contributes its minimum and its maximum, so spikes and the
min/max envelope survive, and the first and last points are always kept so the
curve still starts and ends where the data does.
"""

from __future__ import annotations

import numpy as np

MIN_POINTS = 4  # the first and last points plus one bucket's min and max
# Points examined per pass: the temporaries of a ten-million-point series stay a few MB.
CHUNK = 1 << 18


def check_max_points(max_points: int) -> None:
    """Refuse a points-per-trace limit too small to keep a curve's ends and one envelope."""
    if max_points < MIN_POINTS:
        raise ValueError(
            f"max_points (--max-points) must be at least {MIN_POINTS}, not {max_points}"
        )


def decimate_indices(values: np.ndarray, max_points: int) -> np.ndarray:
    """Sorted indices into ``values`` to draw: at most ``max_points`` of them.

    Keeps index 0, the last index, and the argmin and argmax of each of
    ``(max_points - 2) // 2`` equal buckets between them. Non-finite values never
    win a bucket unless the whole bucket is non-finite (then they draw a gap).
    """
    n = len(values)
    check_max_points(max_points)
    if n <= max_points:
        return np.arange(n)
    buckets = (max_points - 2) // 2
    size = -(-(n - 2) // buckets)  # ceil: every interior point is in a bucket
    rows = max(1, CHUNK // size)  # buckets per pass: bounds the temporaries of a long series
    picked = [np.array([0, n - 1])]
    for first in range(0, buckets, rows):
        start = 1 + first * size
        if start >= n - 1:
            break  # buckets made only of padding past the end
        picked.append(_extremes(values[start : min(n - 1, start + rows * size)], size) + start)
    return np.unique(np.concatenate(picked))


def _extremes(interior: np.ndarray, size: int) -> np.ndarray:
    """Indices into ``interior`` of the min and max of each bucket of ``size`` points."""
    buckets = -(-len(interior) // size)
    grid = np.full((buckets, size), np.nan)
    grid.ravel()[: len(interior)] = interior
    finite = np.isfinite(grid)
    # Padding and NaN must lose both contests; +/-inf are real extremes but are
    # drawn as gaps, so they are treated like NaN here.
    lows = np.where(finite, grid, np.inf).argmin(axis=1)
    highs = np.where(finite, grid, -np.inf).argmax(axis=1)
    base = np.arange(buckets) * size
    return np.concatenate((base + lows, base + highs))
