"""Snapshot columns: every point back exactly, and JSON that can not end its script element."""

from __future__ import annotations

import json

import numpy as np
import pytest

from visualizer.snapshot.columns import packed, script_json, unpacked


@pytest.mark.parametrize(
    "values",
    [
        np.arange(10_000, dtype=np.int64) * 3 - 2**62,
        np.array([0.1, -0.0, np.nan, np.inf, -np.inf, 5e-324, 1.7976931348623157e308]),
        np.zeros(0, dtype=np.float64),
        np.arange(5, dtype=">f8"),  # big-endian in: little-endian out, as the page reads it
    ],
)
def test_a_column_holds_every_value_exactly(values):
    column = packed(values)
    assert column["n"] == len(values)
    back = unpacked(column)
    assert back.dtype.str in ("<i8", "<f8")
    np.testing.assert_array_equal(back, values)


def test_a_column_is_int64_or_float64():
    with pytest.raises(TypeError, match="int64 or float64"):
        packed(np.zeros(3, dtype=np.float32))


def test_script_json_can_not_end_its_element_and_reads_back_the_same():
    value = {"</script><script>alert(1)</script>": ["<!--", "\u2028\u2029", "a&b", ">"]}
    text = script_json(value)
    for unsafe in ("<", ">", "&", "\u2028", "\u2029"):
        assert unsafe not in text
    assert json.loads(text) == value


def test_script_json_refuses_a_nan_rather_than_write_what_json_parse_rejects():
    with pytest.raises(ValueError):
        script_json({"x": float("nan")})
