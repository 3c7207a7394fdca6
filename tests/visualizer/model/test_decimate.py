"""decimate_indices(): at most N points, min/max envelope and the last point kept; Series == History."""

from __future__ import annotations

import random

import numpy as np
import pytest

from snapshot_store.read.history import History
from visualizer.model.decimate import CHUNK, decimate_indices
from visualizer.model.series import Series


@pytest.mark.parametrize(
    "n,max_points", [(10, 4), (1000, 100), (100_003, 4000), (5, 100), (4001, 4000)]
)
def test_bounded_and_keeps_ends_and_extremes(n, max_points):
    rng = np.random.default_rng(n)
    x = np.arange(n) * 3
    y = rng.normal(size=n).cumsum()
    idx = decimate_indices(y, max_points)
    dx, dy = x[idx], y[idx]
    assert len(dx) <= max_points
    assert len(dx) == min(n, len(dx))
    assert dx[0] == x[0] and dx[-1] == x[-1] and dy[-1] == y[-1]
    assert dy.min() == y.min() and dy.max() == y.max()
    assert np.all(np.diff(dx) > 0), "points stay in step order, no duplicates"
    if n <= max_points:
        assert np.array_equal(dx, x)


def test_every_bucket_keeps_its_envelope():
    """A spike anywhere survives: each bucket's min and max are drawn."""
    y = np.zeros(100_000)
    y[12_345], y[67_890] = 50.0, -50.0
    dy = y[decimate_indices(y, 200)]
    assert 50.0 in dy and -50.0 in dy


def test_non_finite_values_do_not_win_buckets():
    y = np.linspace(0, 1, 10_000)
    y[100:200] = np.nan
    y[5000] = np.inf
    idx = decimate_indices(y, 50)
    assert np.isfinite(y[idx[1:-1]]).all()
    assert idx[-1] == len(y) - 1


def test_all_nan_input_keeps_ends():
    idx = decimate_indices(np.full(1000, np.nan), 10)
    assert idx[0] == 0 and idx[-1] == 999 and len(idx) <= 10


def test_too_small_max_points_refused():
    with pytest.raises(ValueError):
        decimate_indices(np.zeros(10), 3)


def test_series_appends_and_reports_rewinds():
    s = Series()
    assert s.extend([0, 1, 2], [1.0, 2.0, 3.0]) is False
    assert s.extend([3, 4], [4.0, 5.0]) is False
    assert s.rewinds == 0
    assert s.extend([2, 3], [30.0, 40.0]) is True  # resumed run logs steps 2, 3 again
    assert s.rewinds == 1
    assert s.steps().tolist() == [0, 1, 2, 3]  # step 4 is the earlier session's: replaced
    assert s.values().tolist() == [1.0, 2.0, 30.0, 40.0]
    assert s.values(3).tolist() == [40.0]


def test_series_agrees_with_store_history():
    """The visualizer's compact series keeps exactly what the store's History keeps."""
    rnd = random.Random(7)
    history, series = History(), Series()
    step = 0
    for _ in range(300):
        if rnd.random() < 0.1:
            step = max(0, step - rnd.randint(1, 30))  # a resume from an earlier checkpoint
        steps = list(range(step, step + rnd.randint(1, 20)))
        step = steps[-1] + 1
        values = [rnd.random() for _ in steps]
        history.add([("train", "loss", steps, [0.0] * len(steps), [0.0] * len(steps), values)])
        series.extend(steps, values)
    h_steps, _, _, h_values = history.series(("train", "loss"))
    assert series.steps().tolist() == h_steps
    assert series.values().tolist() == h_values


@pytest.mark.parametrize("n", [CHUNK * 3 + 7, 2 * CHUNK + 2])
def test_a_series_longer_than_one_pass_keeps_each_buckets_extremes(n):
    values = np.random.default_rng(n).normal(size=n)
    values[CHUNK + 11] = np.nan  # a gap in the second pass
    max_points = 2 * 37 + 2  # buckets that do not divide the passes evenly
    picked = decimate_indices(values, max_points)
    size = -(-(n - 2) // 37)
    expected = {0, n - 1}
    for start in range(1, n - 1, size):
        bucket = values[start : min(n - 1, start + size)]
        expected |= {start + int(np.nanargmin(bucket)), start + int(np.nanargmax(bucket))}
    assert picked.tolist() == sorted(expected)
