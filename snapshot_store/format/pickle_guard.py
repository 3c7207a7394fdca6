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

Most payloads name no index at all, and for them a regular expression steps over
the opcodes in C first (:func:`_names_no_index`): a store document's walk in
Python cost six times its unpickling, and listing 10,000 runs reads 20,000 of
them. Only a payload with a PUT or LONG_BINPUT where an opcode starts is walked.

What a payload unpickles to is then held to a budget (:func:`value_problem`), once, at
the door: a store is written by anyone who can write to the bucket, and ``10**5000``,
a list that holds itself, a kilobyte of shared references that a walk reaches 2**40
times, or lists nested 200,000 deep each ended every reader that touched them
(``repr``, ``float``, ``==``, JSON). Past the budget the document is refused, so
nothing downstream ever meets such a value.
"""

from __future__ import annotations

import pickletools
import re
import sys
from itertools import chain
from typing import Any

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
_RUN = 8  # more of one opcode in a row than this: numpy's step beats the pattern's


def _plain_pattern() -> re.Pattern[bytes]:
    """Opcodes, as the walk steps over them, that stop nothing and name no memo index.

    Not matched: PUT, LONG_BINPUT, STOP and the lookups; an argument cut short; a
    length field longer than one byte; and an opcode with an argument that starts a
    run of more than :data:`_RUN` of it (numpy steps over those faster). Each opcode's
    first byte picks its one alternative; the possessive repeat keeps no backtracking
    state, so a long payload costs no memory.
    """
    stops = {_PUT, _LONG_BINPUT, _STOP, *_LOOKUPS}
    bare, alternatives = [], []
    for code, width in _FIXED.items():
        op = re.escape(bytes([code]))
        if code in stops:
            continue
        if width == 0:
            bare.append(op)
        else:
            token = b"%s.{%d}" % (op, width)
            alternatives.append(b"%s(?!(?:%s){%d}%s)" % (token, token, _RUN - 1, op))
    counted = b"".join(re.escape(bytes([c])) for c, (n, _) in _COUNTED.items() if n == 1)
    lengths = b"|".join(re.escape(bytes([n])) + b".{%d}" % n for n in range(256))
    line_codes = [code for code in _LINES if code not in stops]
    assert all(_LINES[code] == 1 for code in line_codes)  # two-line opcodes are lookups
    lines = b"".join(re.escape(bytes([code])) for code in line_codes)
    alternatives += [b"[%s]" % b"".join(bare), b"[%s](?:%s)" % (counted, lengths)]
    alternatives.append(b"[%s][^\n]*\n" % lines)  # the walk's find of the newline
    return re.compile(b"(?:%s)*+" % b"|".join(alternatives), re.DOTALL)


_PLAIN = _plain_pattern()


def memo_problem(payload: bytes) -> str | None:
    """Why unpickling ``payload`` would grow the memo beyond its opcodes, or None.

    A payload the unpickler will reject for another reason (truncated, unknown
    opcode) passes: the walk stops where the unpickler would.
    """
    return None if _names_no_index(payload) else _walk(payload)


def _names_no_index(payload: bytes) -> bool:
    """Whether the walk would meet no PUT or LONG_BINPUT, so find no problem.

    False is no verdict: the walk, which counts the opcodes, decides.
    """
    size, pos, codes = len(payload), 0, None
    while pos < size:  # an 8-byte length may have sent pos past what match() takes
        plain = _PLAIN.match(payload, pos)
        assert plain is not None  # a repeat that may match nothing always matches
        pos = plain.end()
        code = payload[pos] if pos < size else _STOP  # all stepped over: the walk ends too
        if code in (_PUT, _LONG_BINPUT):
            return False
        width = _FIXED.get(code)
        if width is not None and code != _STOP and code not in _LOOKUPS:
            # a run of one opcode (or one cut short, which ends the payload)
            codes = np.frombuffer(payload, dtype=np.uint8) if codes is None else codes
            pos += _run_length(codes, pos, width + 1, code) * (width + 1)
        elif code in _COUNTED:  # a length field of 4 or 8 bytes, or one cut short
            if (end := _counted_end(payload, pos, code)) is None:
                return True
            pos = end
        else:  # STOP, a lookup, a line without its newline, no opcode: the walk ends
            return True
    return True


def _counted_end(payload: bytes, pos: int, code: int) -> int | None:
    """Where the counted argument of the opcode at ``pos`` ends; None for a negative count."""
    field, signed = _COUNTED[code]
    length = int.from_bytes(payload[pos + 1 : pos + 1 + field], "little", signed=signed)
    return None if length < 0 else pos + 1 + field + length


def _walk(payload: bytes) -> str | None:
    """:func:`memo_problem`, one opcode at a time."""
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
            if (end := _counted_end(payload, pos, code)) is None:
                return None  # the unpickler refuses a negative length
            pos, ops = end, ops + 1
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


# --- what a payload may unpickle to ---------------------------------------------------------

MAX_DEPTH = 128  # containers within containers: wandb.log refuses past 100, a status adds a few
MAX_NODES = 1_000_000  # values a walk reaches, a shared one counted each time it is reached
MAX_TEXT = 16 << 20  # characters of a str, bytes of a bytes
_MAX_INT = int(sys.float_info.max)  # past this an int is no float: float() raises
_LEAVES = frozenset((float, bool, type(None)))
_TEXTS = (str, bytes, bytearray)
# A level this small is walked a value at a time: a status' levels hold tens of values of
# four or five kinds, and splitting each by kind cost three times the walk.
_SMALL_LEVEL = 256
_TOO_MANY = f"more than {MAX_NODES:,} values (a shared one counted each time)"


def value_problem(value: object) -> str | None:
    """Why ``value`` (an unpickled payload) is over the budget, or None.

    Over it: nesting deeper than :data:`MAX_DEPTH` (a value that holds itself is
    infinitely deep), more than :data:`MAX_NODES` values reached (a shared object
    counted each time, as every reader that walks it pays for it), a str or bytes
    longer than :data:`MAX_TEXT`, an int out of float range. The walk goes a level
    at a time: a big level a kind of value at a time (the type checks and sums run in
    C), a small one a value at a time (a status costs about 5 us); it stops at the
    first problem, so it costs at most about :data:`MAX_NODES` steps whatever the value.
    """
    nodes, level = 1, [value]
    for depth in range(MAX_DEPTH + 2):
        if not level:
            return None
        if depth > MAX_DEPTH:
            break
        inner: list[Any] = []
        walk = _small_level if len(level) <= _SMALL_LEVEL else _big_level
        problem, nodes = walk(level, nodes, inner)
        if problem:
            return problem
        level = inner
    return f"values nested more than {MAX_DEPTH} deep (or one that holds itself)"


def _big_level(level: list[Any], nodes: int, inner: list[Any]) -> tuple[str | None, int]:
    """:func:`value_problem`'s walk of one level, a kind of value at a time: the problem
    found (or None) and the values counted so far; the values a level down go in ``inner``."""
    for kind in set(map(type, level)) - _LEAVES:
        same: list[Any] = [x for x in level if type(x) is kind]
        if kind is int:
            if max(same) > _MAX_INT or min(same) < -_MAX_INT:
                return _past_float(max(x.bit_length() for x in same)), nodes
        elif kind in _TEXTS:
            if (longest := max(map(len, same))) > MAX_TEXT:
                return _too_long(kind, longest), nodes
        else:  # a container: dict, list, tuple, set or frozenset
            nodes += sum(map(len, same)) * (2 if kind is dict else 1)
            if nodes > MAX_NODES:
                return _TOO_MANY, nodes
            if kind is dict:
                inner += chain.from_iterable(map(dict.keys, same))
                inner += chain.from_iterable(map(dict.values, same))
            else:
                inner += chain.from_iterable(same)
    return None, nodes


def _small_level(level: list[Any], nodes: int, inner: list[Any]) -> tuple[str | None, int]:
    """:func:`_big_level`, a value at a time."""
    for x in level:
        kind = type(x)
        if kind in _LEAVES:
            continue
        if kind is int:
            if x > _MAX_INT or x < -_MAX_INT:
                return _past_float(x.bit_length()), nodes
        elif kind in _TEXTS:
            if len(x) > MAX_TEXT:
                return _too_long(kind, len(x)), nodes
        else:  # a container: counted before it is looked into (a shared one may be huge)
            nodes += len(x) * (2 if kind is dict else 1)
            if nodes > MAX_NODES:
                return _TOO_MANY, nodes
            if kind is dict:
                inner += x.keys()
                inner += x.values()
            else:
                inner += x
    return None, nodes


def _past_float(bits: int) -> str:
    return f"an integer of {bits:,} bits, past what a float holds"


def _too_long(kind: type, length: int) -> str:
    return f"a {kind.__name__} of {length:,} items, above {MAX_TEXT:,}"
