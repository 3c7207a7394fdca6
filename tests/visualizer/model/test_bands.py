"""A group of runs as one curve: mean, min and max aligned by step."""

from __future__ import annotations

import math

import numpy as np

from visualizer.model.bands import band, mean_series
from visualizer.model.series import Series


def series(steps: list[int], values: list[float], times: list[float] | None = None) -> Series:
    out = Series()
    out.extend(steps, values, times)
    return out


def test_misaligned_runs_average_over_the_runs_that_have_a_point_at_each_step():
    a = series([0, 10, 20], [1.0, 2.0, 3.0])
    b = series([0, 5, 20, 30], [3.0, 7.0, 5.0, 9.0])
    curve = band([a, b])
    assert curve.steps.tolist() == [0, 5, 10, 20, 30]
    assert curve.mean.tolist() == [2.0, 7.0, 2.0, 4.0, 9.0]
    assert curve.low.tolist() == [1.0, 7.0, 2.0, 3.0, 9.0]
    assert curve.high.tolist() == [3.0, 7.0, 2.0, 5.0, 9.0]


def test_a_group_of_one_is_the_run_itself():
    a = series([1, 2, 3], [0.5, 0.25, 0.125], [100.0, 101.0, 102.0])
    curve = band([a])
    assert curve.steps.tolist() == [1, 2, 3]
    assert curve.mean.tolist() == curve.low.tolist() == curve.high.tolist() == [0.5, 0.25, 0.125]
    assert curve.times.tolist() == [100.0, 101.0, 102.0]


def test_nan_and_inf_are_left_out_and_a_step_without_a_finite_value_is_a_gap():
    a = series([0, 1, 2], [1.0, math.nan, math.nan])
    b = series([0, 1, 2], [3.0, 4.0, math.inf])
    curve = band([a, b])
    assert curve.mean[:2].tolist() == [2.0, 4.0] and np.isnan(curve.mean[2])
    assert curve.low[:2].tolist() == [1.0, 4.0] and np.isnan(curve.low[2])
    assert curve.high[:2].tolist() == [3.0, 4.0] and np.isnan(curve.high[2])


def test_times_average_after_each_run_is_shifted_to_the_group_start():
    a = series([0, 1], [1.0, 1.0], [1000.0, 1010.0])
    b = series([0, 1], [1.0, 1.0], [5000.0, 5030.0])
    curve = band([a, b], shifts=[0.0, 4000.0])
    assert curve.times.tolist() == [1000.0, 1020.0]


def test_the_mean_is_a_series_drawn_as_a_run():
    curve = band([series([0, 2], [1.0, 3.0]), series([1, 2], [2.0, 5.0])])
    mean = mean_series(curve)
    assert mean.steps().tolist() == [0, 1, 2] and mean.values().tolist() == [1.0, 2.0, 4.0]


def test_no_runs_no_points():
    assert len(band([]).steps) == 0
