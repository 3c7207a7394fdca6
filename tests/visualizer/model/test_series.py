"""Series and its block-backed Column: what goes in comes out, whatever the block boundaries."""

from __future__ import annotations

import numpy as np
import pytest

from visualizer.model.series import BLOCK, Column, Series


@pytest.mark.parametrize("sizes", [[1], [BLOCK], [BLOCK + 1], [5, BLOCK - 5, 3], [17] * 9000])
def test_a_column_holds_every_item_in_order_across_blocks(sizes):
    column, expected = Column(np.float32), []
    for size in sizes:
        chunk = np.arange(len(expected), len(expected) + size, dtype=np.float64)
        column.append(chunk)
        expected.extend(chunk.tolist())
    n = len(expected)
    assert len(column) == n and column[-1] == expected[-1] and column[0] == 0.0
    assert column.array().tolist() == expected
    for start, stop in [(0, 1), (BLOCK - 1, BLOCK + 1), (3, n), (n - 2, None), (n, None)]:
        assert column.array(start, stop).tolist() == expected[start:stop]
    as_double = column.array(1, dtype=np.float64)
    assert as_double.dtype == np.float64 and as_double.tolist() == expected[1:]


def test_a_column_array_is_a_copy():
    column = Column(np.int64, np.arange(10))
    out = column.array()
    out[:] = -1
    column.append(np.array([10]))
    assert column.array().tolist() == list(range(11))


def test_steps_are_held_in_int32_until_one_needs_int64():
    series = Series()
    series.extend(range(3), [0.0, 1.0, 2.0])
    assert series._steps.dtype == np.int32
    big = 2**40
    assert series.extend([big, big + 1], [3.0, 4.0]) is False  # still an append
    assert series._steps.dtype == np.int64
    assert series.steps().tolist() == [0, 1, 2, big, big + 1]
    assert series.steps().dtype == np.int64 and series.last_step == big + 1


def test_a_step_back_replaces_the_points_from_there_and_reports_it():
    series = Series()
    series.extend(range(BLOCK + 10), np.arange(BLOCK + 10, dtype=np.float64).tolist())
    assert series.extend([5, 6], [-5.0, -6.0]) is True  # a resumed run, from step 5
    assert series.steps().tolist() == list(range(7)) and series.rewinds == 1
    assert series.values().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, -5.0, -6.0]


def test_two_values_at_one_step_are_both_appended_in_logged_order():
    series = Series()
    assert series.extend([0, 1, 1], [0.0, 0.0, 1.0]) is False
    assert series.extend([1, 2], [2.0, 1.0]) is False  # still an append
    assert series.steps().tolist() == [0, 1, 1, 1, 2] and series.rewinds == 0
    assert series.values().tolist() == [0.0, 0.0, 1.0, 2.0, 1.0]


def test_a_float_step_is_refused_not_rounded():
    with pytest.raises(TypeError):
        Series().extend([1.5], [0.0])


def test_times_at_a_slice_and_at_indices():
    series = Series()
    series.extend([1, 2, 3], [0.0, 0.0, 0.0], [100.0, 101.0, float("nan")])
    assert series.times(slice(1, None)).tolist()[0] == 101.0
    picked = series.times(np.array([0, 2]))
    assert picked[0] == 100.0 and np.isnan(picked[1]) and series.last_time is None


def test_the_page_draws_two_values_logged_at_one_step(tmp_path):
    from remote_train_monitor import SummaryWriter
    from snapshot_store import StoreReader
    from visualizer.model.rundata import RunData

    with SummaryWriter(tmp_path / "run") as writer:
        for step, epoch in [(0, 0.0), (1, 0.5), (1, 1.0), (2, 1.0)]:
            writer.add_scalar("train/epoch", epoch, step)
    run = RunData("run")
    run.apply(StoreReader(tmp_path / "run").poll())
    (series,) = run.series.values()
    assert series.steps().tolist() == [0, 1, 1, 2]
    assert series.values().tolist() == [0.0, 0.5, 1.0, 1.0]
