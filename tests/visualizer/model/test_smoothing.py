"""The smoothed curve is TensorBoard's debiased EMA over every point, extended incrementally."""

from __future__ import annotations

import math

import numpy as np
import pytest

from visualizer.model.series import Series
from visualizer.model.smoothing import Smoother, check_smoothing


def tensorboard_ema(values: list[float], weight: float) -> list[float]:
    """TensorBoard's smoothing written out point by point, as its line chart does it."""
    last, seen, out = 0.0, 0, []
    constant = all(v == values[0] for v in values)
    for v in values:
        if constant or not math.isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        seen += 1
        out.append(last / (1 - weight**seen))
    return out


def series_of(values) -> Series:
    series = Series()
    series.extend(range(len(values)), values)
    return series


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.6, 0.9, 0.99, 0.999, 0.9999])
def test_every_point_matches_tensorboard(weight):
    rng = np.random.default_rng(7)
    values = (rng.exponential(0.3, 20_000) + np.linspace(2, 0, 20_000)).tolist()
    smoother = Smoother(weight)
    smoother.update(series_of(values))
    np.testing.assert_allclose(smoother.values(), tensorboard_ema(values, weight), rtol=1e-6)


def test_the_last_value_of_a_long_skewed_series_is_the_debiased_ema_of_all_points():
    """The issue's case: on 100k skewed points the smoothed tail is the data's, not the envelope's."""
    rng = np.random.default_rng(0)
    values = rng.exponential(0.28, 100_000)
    smoother = Smoother(0.6)
    smoother.update(series_of(values))
    expected = tensorboard_ema(values.tolist(), 0.6)[-1]
    assert smoother.values()[-1] == pytest.approx(expected, rel=1e-6)


def test_growing_series_is_extended_not_recomputed_and_equals_one_pass():
    rng = np.random.default_rng(3)
    values = rng.normal(1.0, 0.5, 5_000).tolist()
    series, smoother = Series(), Smoother(0.95)
    for start in range(0, 5_000, 137):  # a follower's polls: uneven batches
        chunk = values[start : start + 137]
        series.extend(range(start, start + len(chunk)), chunk)
        before = smoother.values()
        smoother.update(series)
        # What was smoothed before stays as it was: only the new points were added.
        np.testing.assert_array_equal(smoother.values()[: len(before)], before)
    np.testing.assert_allclose(smoother.values(), tensorboard_ema(values, 0.95), rtol=1e-6)


def test_non_finite_values_pass_through_and_leave_the_average_alone():
    values = [1.0, 2.0, math.nan, 3.0, math.inf, 4.0, -math.inf]
    smoother = Smoother(0.5)
    smoother.update(series_of(values))
    got = smoother.values().tolist()
    want = tensorboard_ema(values, 0.5)
    assert math.isnan(got[2]) and got[4] == math.inf and got[6] == -math.inf
    finite = [i for i, v in enumerate(values) if math.isfinite(v)]
    assert [got[i] for i in finite] == pytest.approx([want[i] for i in finite], rel=1e-6)


def test_a_flat_series_is_drawn_flat_until_it_changes():
    smoother, series = Smoother(0.9), series_of([0.1] * 50)
    smoother.update(series)
    assert smoother.values().tolist() == pytest.approx([0.1] * 50, abs=0)  # exactly, as float32
    series.extend([50], [1.1])
    smoother.update(series)
    expected = tensorboard_ema([0.1] * 50 + [1.1], 0.9)[-1]
    assert smoother.values()[-1] == pytest.approx(expected, rel=1e-6)


def test_a_rewound_series_is_smoothed_again_from_the_start():
    series, smoother = series_of([1.0, 2.0, 3.0, 4.0]), Smoother(0.5)
    smoother.update(series)
    series.extend([1], [10.0])  # a resumed run logs step 1 again: steps 2 and 3 are replaced
    smoother.update(series)
    np.testing.assert_allclose(smoother.values(), tensorboard_ema([1.0, 10.0], 0.5), rtol=1e-6)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, math.nan, math.inf])
def test_weights_outside_zero_to_one_are_refused(bad):
    with pytest.raises(ValueError, match="must be at least 0 and below 1"):
        check_smoothing(bad)
