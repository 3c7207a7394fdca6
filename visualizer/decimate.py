"""Display decimation: at most N points per trace, keeping the curve's shape.

The store keeps every point; only what is drawn is thinned. Each bucket of
consecutive points contributes its minimum and its maximum, so spikes and the
min/max envelope survive, and the first and last points are always kept so the
curve still starts and ends where the data does.
"""

from __future__ import annotations

import numpy as np

MIN_POINTS = 4  # the first and last points plus one bucket's min and max


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
    interior = np.asarray(values[1:-1], dtype=np.float64)
    size = -(-len(interior) // buckets)  # ceil: every interior point is in a bucket
    padded = np.full(buckets * size, np.nan)
    padded[: len(interior)] = interior
    grid = padded.reshape(buckets, size)
    finite = np.isfinite(grid)
    # Padding and NaN must lose both contests; +/-inf are real extremes but are
    # drawn as gaps, so they are treated like NaN here.
    lows = np.where(finite, grid, np.inf).argmin(axis=1)
    highs = np.where(finite, grid, -np.inf).argmax(axis=1)
    base = np.arange(buckets) * size + 1
    picked = np.concatenate(([0], base + lows, base + highs, [n - 1]))
    # A bucket made only of padding points past the end; drop those picks.
    return np.unique(picked[picked <= n - 1])
