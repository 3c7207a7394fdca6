"""Framing, segment names, the restricted unpickler and whole-file documents."""

from __future__ import annotations

import os
import pickle

import pytest

from run_core import atomic
from snapshot_store.format import frames as fmt


class _CreatesFile:
    """Pickles to a call of os.system that would create a file if unpickled unsafely."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_frame_round_trip():
    frames = [fmt.encode_frame(p) for p in (b"", b"a", b"x" * 70_000)]
    got = list(fmt.iter_frames(b"".join(frames)))
    assert [f.payload for f in got] == [b"", b"a", b"x" * 70_000]
    assert got[-1].end == sum(map(len, frames))


def test_torn_frame_at_every_offset_yields_only_complete_frames():
    first, second = fmt.encode_frame(b"first payload"), fmt.encode_frame(b"second")
    data = first + second
    for cut in range(len(data) + 1):
        payloads = [f.payload for f in fmt.iter_frames(data[:cut])]
        expected = [b"first payload"] if cut >= len(first) else []
        if cut == len(data):
            expected.append(b"second")
        assert payloads == expected, cut


def test_corrupt_checksum_is_detected():
    frame = bytearray(fmt.encode_frame(b"hello world"))
    frame[14] ^= 0xFF
    with pytest.raises(fmt.CorruptFrameError, match="checksum"):
        list(fmt.iter_frames(bytes(frame)))


def test_corrupt_length_is_detected_not_allocated():
    frame = bytearray(fmt.encode_frame(b"hello"))
    frame[0:8] = (2**62).to_bytes(8, "little")
    with pytest.raises(fmt.CorruptFrameError, match="header"):
        list(fmt.iter_frames(bytes(frame)))


def test_safe_loads_admits_plain_builtins():
    doc = {"a": [1, 2.5, "s", b"b", None, True, (1, 2)], "n": {"x": -1}}
    assert fmt.loads(fmt.dumps(doc)) == doc


def test_hostile_pickle_is_refused_and_nothing_runs(tmp_path):
    victim = tmp_path / "pwned"
    payload = pickle.dumps(_CreatesFile(victim))
    with pytest.raises(
        fmt.UnsafePickleError, match=r"evil\.pickle: refused global (posix|os)\.system"
    ):
        fmt.loads(payload, "evil.pickle")
    assert not victim.exists()


def test_garbage_payload_is_a_store_error_naming_the_source():
    with pytest.raises(fmt.StoreError, match=r"junk\.pickle: unreadable payload"):
        fmt.loads(b"\x80\x04not a pickle", "junk.pickle")


def test_document_round_trip_and_atomic_write(tmp_path):
    path = tmp_path / fmt.STATUS_FILE
    atomic.write_atomic(path, fmt.encode_document({"state": "running"}))
    atomic.write_atomic(path, fmt.encode_document({"state": "finished"}))
    assert fmt.decode_document(path.read_bytes(), path) == {"state": "finished"}
    assert [p.name for p in tmp_path.iterdir()] == [fmt.STATUS_FILE]  # no temp file left
    with pytest.raises(fmt.StoreError, match="exactly one complete frame"):
        fmt.decode_document(path.read_bytes()[:-1], path)


def test_segment_names():
    assert fmt.segment_name(fmt.SCALARS, 3) == "scalars-00000003.pickle"
    assert fmt.parse_segment_name("images-00000012.pickle") == ("images", 12)
    assert fmt.parse_segment_name("meta.pickle") is None
    with pytest.raises(ValueError):
        fmt.segment_name("other", 0)
