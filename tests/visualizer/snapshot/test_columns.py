"""Snapshot columns: every point back exactly, and JSON that can not end its script element."""

from __future__ import annotations

import json

import numpy as np
import pytest

from visualizer.snapshot.columns import packed, script_json, unpacked


def _f64(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float64)


@pytest.mark.parametrize(
    "values",
    [
        np.arange(10_000, dtype=np.int64) * 3 - 2**62,
        np.array([0.1, -0.0, np.nan, np.inf, -np.inf, 5e-324, 1.7976931348623157e308]),
        np.zeros(0, dtype=np.float64),
        np.arange(5, dtype=">f8"),  # big-endian in: little-endian out, as the page reads it
        np.array([0.5, -0.0, np.nan, np.inf, 3.0e38], dtype=np.float32).astype(np.float64),
        1.75e9 + _f64(np.arange(1000, dtype=np.float32) * np.float32(0.37)),  # Series' times
        np.array([5, 2**40, 2**40 + 1, -3], dtype=np.int64),  # a jump past int32: int64
        np.array([2**53 + 1, 2**53 + 2], dtype=np.int64),  # past a double's integers: int64
    ],
)
def test_a_column_holds_every_value_exactly(values):
    column = packed(values)
    assert column["n"] == len(values)
    back = unpacked(column)
    assert back.dtype.str in ("<i8", "<f8")
    np.testing.assert_array_equal(back, values)


@pytest.mark.parametrize(
    ("values", "kind", "how"),
    [
        (np.arange(10, 1_000_010, dtype=np.int64), "int32", {"delta": True}),
        (np.array([0.1, 0.25]), "float64", {}),  # 0.1 is no float32 number
        (np.array([0.1, 0.25], dtype=np.float32).astype(np.float64), "float32", {}),
        (1.75e9 + _f64(np.arange(3, dtype=np.float32) * 0.37), "float32", {"base": 1.75e9}),
        (np.array([1.75e9, 3.6e9 + 1e-4]), "float64", {}),  # no float32 offset holds it
    ],
)
def test_a_column_goes_in_the_narrowest_type_that_holds_it_exactly(values, kind, how):
    column = packed(values)
    assert column["type"] == kind
    assert {k: column[k] for k in ("delta", "base") if k in column} == how


def test_a_zeros_sign_is_kept():
    back = unpacked(packed(np.array([-0.0, 0.0, -0.0])))
    assert np.signbit(back).tolist() == [True, False, True]
    shifted = unpacked(packed(np.array([1.0, -0.0])))  # a base would add +0.0 to -0.0
    assert np.signbit(shifted).tolist() == [False, True]


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
