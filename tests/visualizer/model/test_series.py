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


def test_a_rewind_keeps_the_latest_value_per_step_and_reports_it():
    series = Series()
    series.extend(range(BLOCK + 10), np.arange(BLOCK + 10, dtype=np.float64).tolist())
    assert series.extend([5, 6], [-5.0, -6.0]) is True
    values = series.values()
    assert len(series) == BLOCK + 10 and values[5] == -5.0 and values[6] == -6.0
    assert series.steps().tolist() == list(range(BLOCK + 10)) and series.rewinds == 1


def test_a_float_step_is_refused_not_rounded():
    with pytest.raises(TypeError):
        Series().extend([1.5], [0.0])


def test_times_at_a_slice_and_at_indices():
    series = Series()
    series.extend([1, 2, 3], [0.0, 0.0, 0.0], [100.0, 101.0, float("nan")])
    assert series.times(slice(1, None)).tolist()[0] == 101.0
    picked = series.times(np.array([0, 2]))
    assert picked[0] == 100.0 and np.isnan(picked[1]) and series.last_time is None
