"""The curve judges' pieces: fed in batches, they see what one batch would."""

from __future__ import annotations

import numpy as np

from snapshot_store.alert_rules.curves import RollingMedian, rolling_median, run_lengths


def test_a_rolling_median_is_the_median_of_each_window():
    values = np.array([5.0, 1.0, 9.0, 3.0, 7.0])
    assert rolling_median(values, 3).tolist() == [5.0, 3.0, 7.0]
    assert rolling_median(values, 6).tolist() == []


def test_run_lengths_carry_over_batches():
    flags = np.array([True, True, False, True])
    assert run_lengths(flags, carried=3).tolist() == [4, 5, 0, 1]
    assert run_lengths(np.array([True]), carried=0).tolist() == [1]


def test_a_smoother_fed_in_pieces_gives_what_it_gives_at_once():
    values = np.random.default_rng(0).normal(size=500)
    steps = np.arange(500) * 10
    whole = RollingMedian(21).feed(steps, values)
    smoother = RollingMedian(21)
    pieces = [smoother.feed(steps[i : i + 7], values[i : i + 7]) for i in range(0, 500, 7)]
    assert np.array_equal(np.concatenate([p[0] for p in pieces]), whole[0])
    assert np.array_equal(np.concatenate([p[1] for p in pieces]), whole[1])
    assert whole[0][0] == 200  # the first point with 21 values behind it
