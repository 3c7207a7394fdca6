"""A check of a pickle's memo indexes that CPython's C unpickler does not make.

The C unpickler keeps its memo in an array that it grows to twice any index a
PUT or LONG_BINPUT names, and zeroes: five hostile bytes (``]r\\xff\\xff\\xff\\x7f``)
ask for gigabytes and the OOM killer ends the reader (CPython gh-115952, fixed
only after 3.11). :func:`memo_problem` walks the opcodes before the unpickler
runs and refuses an index larger than the number of opcodes before it, which
no pickler writes: each memo entry is an object some earlier opcode built.

Protocol 4 (what the store writes) memoizes with MEMOIZE and never names an
index; older protocols name them in order. The walk follows the argument
layouts pickletools documents. Runs of one fixed-width opcode (the floats and
ints of a scalar column) are stepped over with numpy, so a column of a
thousand values costs one vectorised compare, not a thousand Python steps.
"""

from __future__ import annotations

import pickletools

import numpy as np

# Argument layouts, by opcode byte: a fixed width, or where the length is read.
_FIXED: dict[int, int] = {}
_COUNTED: dict[int, tuple[int, bool]] = {}  # opcode -> (length bytes, signed)
_LINES: dict[int, int] = {}  # opcode -> newline-terminated arguments
_COUNT_FIELDS = {
    pickletools.TAKEN_FROM_ARGUMENT1: (1, False),
    pickletools.TAKEN_FROM_ARGUMENT4: (4, True),
    pickletools.TAKEN_FROM_ARGUMENT4U: (4, False),
    pickletools.TAKEN_FROM_ARGUMENT8U: (8, False),
}
for _op in pickletools.opcodes:
    _code = ord(_op.code)
    _arg = _op.arg
    if _arg is None:
        _FIXED[_code] = 0
    elif _arg.n >= 0:
        _FIXED[_code] = _arg.n
    elif _arg.n == pickletools.UP_TO_NEWLINE:
        # GLOBAL and INST name a module and an attribute, a line each.
        _LINES[_code] = 2 if _arg.name.endswith("_pair") else 1
    else:
        _COUNTED[_code] = _COUNT_FIELDS[_arg.n]

_PUT, _LONG_BINPUT, _STOP = ord("p"), ord("r"), ord(".")
# Opcodes that look a global or persistent id up: SafeUnpickler refuses them, so
# nothing after one is ever unpickled and the walk can end there, as at STOP.
_LOOKUPS = frozenset(map(ord, "ci\x93\x82\x83\x84PQ"))
_FIRST_RUN = 1024  # the pickler writes lists in batches of 1,000 items


def memo_problem(payload: bytes) -> str | None:
    """Why unpickling ``payload`` would grow the memo beyond its opcodes, or None.

    A payload the unpickler will reject for another reason (truncated, unknown
    opcode) passes: the walk stops where the unpickler would.
    """
    codes = np.frombuffer(payload, dtype=np.uint8)
    size, pos, ops = len(payload), 0, 0
    while pos < size:
        code = payload[pos]
        if code == _STOP or code in _LOOKUPS:
            return None
        width = _FIXED.get(code)
        if width is not None:
            if code == _LONG_BINPUT and pos + 5 <= size:
                index = int.from_bytes(payload[pos + 1 : pos + 5], "little")
                if index > ops:
                    return f"LONG_BINPUT index {index} after {ops} opcodes"
            stride = width + 1
            if pos + stride < size and payload[pos + stride] == code:
                run = _run_length(codes, pos, stride, code)
                if code != _LONG_BINPUT:  # each one of a LONG_BINPUT run is checked above
                    pos, ops = pos + run * stride, ops + run
                    continue
            pos, ops = pos + stride, ops + 1
        elif code in _COUNTED:
            field, signed = _COUNTED[code]
            length = int.from_bytes(payload[pos + 1 : pos + 1 + field], "little", signed=signed)
            if length < 0:
                return None  # the unpickler refuses a negative length
            pos, ops = pos + 1 + field + length, ops + 1
        elif code in _LINES:
            end = pos
            for _ in range(_LINES[code]):
                end = payload.find(b"\n", end + 1)
                if end < 0:
                    return None  # truncated: the unpickler stops here
            if code == _PUT and (problem := _put_problem(payload[pos + 1 : end], ops)):
                return problem
            pos, ops = end + 1, ops + 1
        else:  # a byte that is no opcode: the unpickler stops here
            return None
    return None


def _put_problem(argument: bytes, ops: int) -> str | None:
    try:
        index = int(argument)
    except ValueError:
        return None  # the unpickler refuses it
    return f"PUT index {index} after {ops} opcodes" if index > ops else None


def _run_length(codes: np.ndarray, pos: int, stride: int, code: int) -> int:
    """How many opcodes ``code`` follow each other from ``pos``, ``stride`` bytes apart."""
    run, chunk = 0, _FIRST_RUN
    while True:
        start = pos + run * stride
        window = codes[start : start + chunk * stride : stride]
        if not len(window):
            return run
        other = np.flatnonzero(window != code)
        if len(other):
            return run + int(other[0])
        run += len(window)
        chunk *= 4
