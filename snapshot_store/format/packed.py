"""Scalar columns packed as little-endian bytes: the form store format 3 writes.

A column of a million floats pickled as a list is a million opcodes to unpickle,
a million Python objects to type-check and a million to convert again for
plotting; as bytes it is one opcode, a length check and a copy. Steps are int64,
epochs, wall times and values float64: what the writer holds anyway (the
recorder turns every value into a float), so packing loses nothing.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence

# Typecodes of (steps, epochs, wall times, values), each 8 bytes an item.
TYPECODES = ("q", "d", "d", "d")
_ITEM_BYTES = 8
_SWAP = sys.byteorder == "big"  # the store is little-endian on every machine


def pack(columns: Sequence[Sequence[float]]) -> tuple[bytes, ...] | None:
    """The four columns as bytes, or None when one does not fit its type (a step past int64).

    Columns already typed arrays of the right typecode are taken as they are.
    """
    try:
        arrays = [
            col if type(col) is array and col.typecode == code else array(code, col)
            for code, col in zip(TYPECODES, columns, strict=True)
        ]
    except (OverflowError, TypeError):
        return None
    if _SWAP:
        return tuple(_swapped(packed).tobytes() for packed in arrays)
    return tuple(packed.tobytes() for packed in arrays)


def _swapped(column: array) -> array:
    swapped = array(column.typecode, column)  # a copy: the column may be the caller's
    swapped.byteswap()
    return swapped


def packed_problem(columns: Sequence[object]) -> str | None:
    """Why four columns are neither valid packed bytes nor what :func:`unpack` made of them."""
    if all(type(col) is bytes for col in columns):
        if len({len(col) for col in columns}) > 1:  # type: ignore[arg-type]
            return "columns differ in length"
        if len(columns[0]) % _ITEM_BYTES:  # type: ignore[arg-type]
            return f"packed columns are not a whole number of {_ITEM_BYTES}-byte items"
        return None
    if all(
        isinstance(col, array) and col.typecode == code
        for code, col in zip(TYPECODES, columns, strict=True)
    ):
        return None if len({len(col) for col in columns}) == 1 else "columns differ in length"  # type: ignore[arg-type]
    return "columns mix packed and list forms"


def unpack(columns: Sequence[bytes]) -> tuple[array, ...]:
    """Valid packed columns (see :func:`packed_problem`) as typed arrays."""
    out = []
    for code, data in zip(TYPECODES, columns, strict=True):
        column = array(code)
        column.frombytes(data)
        if _SWAP:
            column.byteswap()
        out.append(column)
    return tuple(out)
