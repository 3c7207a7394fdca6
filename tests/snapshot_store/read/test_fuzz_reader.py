"""Property-based fuzzing of StoreReader.poll: nothing escapes, nothing runs, good records survive.

The ``deep``-marked variants run 10,000 cases in all under ``make deep`` and a
twentieth of that in ``make test`` (:mod:`tests.fixtures.fuzz`); the unmarked ones
run a few hundred so ``make unit`` stays fast.
"""

from __future__ import annotations

import math
import os
import pickle
import tempfile
import zlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapshot_store import StoreReader
from snapshot_store.format import frames as fmt
from snapshot_store.format import schema
from tests.fixtures.fuzz import cases

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
NUMBER = st.one_of(st.floats(), INT64)
TEXT = st.text(max_size=4)

# A per-case limit that catches a hang, not a speed target: a case takes
# milliseconds, but CI's two cores may be shared with other jobs.
DEADLINE = timedelta(seconds=30)
FAST = settings(
    max_examples=150,
    deadline=DEADLINE,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# A file a hostile payload would create if the unpickler ever ran its global.
SENTINEL = Path(tempfile.gettempdir()) / f"snapshot-store-fuzz-sentinel-{os.getpid()}"


class _Evil:
    """Pickles as a call of ``os.system``: loading it must be refused, never run."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {SENTINEL}",))


class _EvalEvil:
    def __reduce__(self) -> tuple[Any, ...]:
        return (eval, (f"open({str(SENTINEL)!r}, 'w')",))


class MemorySource:
    """Store files held in a dict: the reader's logic without filesystem cost."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def describe(self, name: str) -> str:
        return f"mem://{name}"

    def list(self) -> dict[str, tuple]:
        return {name: (len(data), hash(data)) for name, data in self.files.items()}

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes:
        return self.files[name][offset : None if length is None else offset + length]


# --- records --------------------------------------------------------------------


@st.composite
def good_series(draw: st.DrawFn) -> tuple:
    n = draw(st.integers(0, 4))
    cols = [st.lists(s, min_size=n, max_size=n) for s in (INT64, NUMBER, NUMBER, NUMBER)]
    return (draw(TEXT), draw(TEXT), *(draw(c) for c in cols))


BAD_NAME = st.sampled_from([None, 1, b"x", ["x"], 1.5, True])
BAD_STEP = st.sampled_from(
    ["1", True, 1.5, math.nan, math.inf, 2**63, -(2**63) - 1, None, [1], 2**70]
)
BAD_NUMBER = st.sampled_from(["1", True, False, None, [1.0], {}, 2**64, b"1"])
BAD_COLUMN = st.sampled_from([None, "123", (1, 2), {"a": 1}, 5, b"\x01"])


@st.composite
def bad_series(draw: st.DrawFn) -> Any:
    """A series entry that breaks the schema in exactly one drawn way."""
    item = list(draw(good_series()))
    how = draw(st.sampled_from(["name", "cell", "column", "length", "arity", "type"]))
    if how == "name":
        item[draw(st.integers(0, 1))] = draw(BAD_NAME)
    elif how == "cell":
        col = draw(st.integers(2, 5))
        cells = list(item[col]) or [0]
        item = [c if i != col else [] for i, c in enumerate(item)]
        for c in range(2, 6):  # keep lengths equal so only the bad cell is wrong
            item[c] = list(cells if c == col else [0] * len(cells))
        cells = item[col]
        cells[draw(st.integers(0, len(cells) - 1))] = draw(BAD_STEP if col == 2 else BAD_NUMBER)
    elif how == "column":
        item[draw(st.integers(2, 5))] = draw(BAD_COLUMN)
    elif how == "length":
        item[draw(st.integers(2, 5))].append(0)
    elif how == "arity":
        item = item[: draw(st.integers(0, 5))] + ([] if draw(st.booleans()) else [0, 0])
        return tuple(item) if len(item) != 6 else tuple(item[:5])
    else:
        return draw(st.sampled_from([None, 1, "series", item, {"x": 1}]))
    return tuple(item)


@st.composite
def good_image(draw: st.DrawFn) -> tuple:
    return (
        draw(TEXT),
        draw(TEXT),
        draw(INT64),
        draw(NUMBER),
        draw(NUMBER),
        draw(st.binary(max_size=8)),
    )


@st.composite
def bad_image(draw: st.DrawFn) -> Any:
    item = list(draw(good_image()))
    field = draw(st.integers(0, 6))
    if field <= 1:
        item[field] = draw(BAD_NAME)
    elif field == 2:
        item[2] = draw(BAD_STEP)
    elif field in (3, 4):
        item[field] = draw(BAD_NUMBER)
    elif field == 5:
        item[5] = draw(st.sampled_from(["png", None, [1, 2], 5]))
    else:
        return tuple(item[: draw(st.integers(0, 5))])
    return tuple(item)


# --- frames and files --------------------------------------------------------------


def _frame(doc: object) -> bytes:
    return fmt.encode_frame(pickle.dumps(doc, protocol=4))


@st.composite
def record_frame(draw: st.DrawFn, stream: str) -> tuple[bytes, list]:
    """A frame that unpickles, with good and bad records interleaved; returns (bytes, good)."""
    good, bad, key = (
        (good_series(), bad_series(), "series")
        if stream == fmt.SCALARS
        else (good_image(), bad_image(), "images")
    )
    entries = draw(st.lists(st.tuples(st.booleans(), good | bad), max_size=4))
    records = [(ok, draw(good) if ok else draw(bad)) for ok, _ in entries]
    shape = draw(st.integers(0, 9))
    if shape == 0:  # a frame that unpickles to the wrong shape: one bad record
        return _frame(draw(st.sampled_from([None, [], {"v": 1}, {key: "x"}, "x"]))), []
    return _frame({"v": 1, key: [r for _, r in records]}), [r for ok, r in records if ok]


def hostile_payloads() -> list[bytes]:
    evil = [_Evil(), _EvalEvil()]
    out = [pickle.dumps(e, protocol=p) for e in evil for p in range(6)]
    out.append(pickle.dumps({"v": 1, "series": [("a", "b", [1], [0.0], [0.0], [_Evil()])]}))
    out.append(f"cos\nsystem\n(S'touch {SENTINEL}'\ntR.".encode())
    out.append(f"cposix\nsystem\n(S'touch {SENTINEL}'\ntR.".encode())
    return out


HOSTILE = hostile_payloads()


@st.composite
def breaker(draw: st.DrawFn, last: bytes) -> bytes:
    """Bytes after which the reader may trust nothing more of the file."""
    kind = draw(st.integers(0, 6))
    if kind == 0:  # a payload that asks for a global
        return fmt.encode_frame(draw(st.sampled_from(HOSTILE)))
    if kind == 1:  # a good frame with a flipped byte somewhere
        data = bytearray(last or _frame({"v": 1, "series": []}))
        data[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
        return bytes(data)
    if kind == 2:  # a huge length field with a valid checksum
        length = draw(st.integers(fmt.MAX_FRAME_BYTES - 16, 2**64 - 1))
        raw = length.to_bytes(8, "little")
        return raw + zlib.crc32(raw).to_bytes(4, "little") + b"\x00" * draw(st.integers(0, 8))
    if kind == 3:  # a frame cut short
        data = last or _frame({"v": 1, "series": []})
        return data[: draw(st.integers(0, len(data) - 1))]
    if kind == 4:  # a payload that is not a pickle, or a mutated one
        base = draw(st.sampled_from([*HOSTILE, pickle.dumps({"v": 1, "series": []})]))
        return fmt.encode_frame(draw(st.binary(max_size=16)) + base[: draw(st.integers(0, 8))])
    if kind == 5:
        return draw(st.binary(max_size=40))
    return b""


@st.composite
def store(draw: st.DrawFn) -> tuple[dict[str, bytes], list, list]:
    """Segments of good, bad and broken frames, and the records a reader must return."""
    files: dict[str, bytes] = {}
    expected: dict[str, list] = {fmt.SCALARS: [], fmt.IMAGES: []}
    for stream in (fmt.SCALARS, fmt.IMAGES):
        for index in range(draw(st.integers(0, 3 if stream == fmt.SCALARS else 1))):
            parts = draw(st.lists(record_frame(stream), max_size=4))
            data = b"".join(p for p, _ in parts)
            for _, good in parts:
                expected[stream].extend(good)
            data += draw(breaker(parts[-1][0] if parts else b""))
            files[fmt.segment_name(stream, index)] = data
    for name in (fmt.META_FILE, fmt.STATUS_FILE):
        files[name] = draw(
            st.sampled_from(
                [_frame({"state": "running"}), _frame([1]), fmt.encode_frame(HOSTILE[0])]
            )
            | st.binary(max_size=24)
        )
    return files, expected[fmt.SCALARS], expected[fmt.IMAGES]


def _check_store(case: tuple[dict[str, bytes], list, list]) -> None:
    files, scalars, images = case
    reader = StoreReader(MemorySource(files))
    update = reader.poll()
    # repr compares NaN by spelling; == would call two NaNs different.
    assert repr(update.scalars) == repr(scalars)
    assert repr(update.images) == repr(images)
    assert not reader.poll()  # nothing new, nothing raised
    assert not SENTINEL.exists()


@FAST
@given(store())
def test_fuzz_store_fast(case):
    _check_store(case)


@pytest.mark.integration
@pytest.mark.deep
@pytest.mark.timeout(900)  # 4,000 cases (make deep) take minutes on 2 shared cores
@settings(FAST, max_examples=cases(4_000))
@given(store())
def test_fuzz_store(case):
    _check_store(case)


# --- mutated payloads: bytes the unpickler must survive ------------------------------


@st.composite
def mutated_file(draw: st.DrawFn) -> bytes:
    """Valid frames whose payload bytes were mutated, then framed again with good checksums."""
    out = b""
    for _ in range(draw(st.integers(1, 3))):
        base = draw(
            st.sampled_from(HOSTILE) | st.builds(_payload_of, st.lists(good_series(), max_size=2))
        )
        data = bytearray(base)
        for _ in range(draw(st.integers(0, 4))):
            if not data:
                break
            op = draw(st.integers(0, 2))
            pos = draw(st.integers(0, len(data) - 1))
            if op == 0:
                data[pos] = draw(st.integers(0, 255))
            elif op == 1:
                del data[pos : pos + draw(st.integers(1, 8))]
            else:
                data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        out += fmt.encode_frame(bytes(data))
    return out


def _payload_of(series: list) -> bytes:
    return pickle.dumps({"v": 1, "series": series}, protocol=draw_protocol(series))


def draw_protocol(series: list) -> int:
    return 2 + len(series) % 4  # protocols 2 to 5, spread over the cases


def _check_mutated(data: bytes) -> None:
    reader = StoreReader(
        MemorySource({fmt.segment_name(fmt.SCALARS, 0): data, fmt.STATUS_FILE: data})
    )
    update = reader.poll()
    # Whatever got through is schema-valid: the consumers may trust it.
    assert all(schema.series_problem(s) is None for s in update.scalars)
    assert not SENTINEL.exists()


@FAST
@given(mutated_file())
def test_fuzz_mutated_payloads_fast(data):
    _check_mutated(data)


@pytest.mark.integration
@pytest.mark.deep
@pytest.mark.timeout(900)
@settings(FAST, max_examples=cases(6_000))
@given(mutated_file())
def test_fuzz_mutated_payloads(data):
    _check_mutated(data)
