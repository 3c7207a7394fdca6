"""Framing, the restricted unpickler, whole-file writes and the write probe."""

from __future__ import annotations

import os
import pickle
import sys

import pytest

from snapshot_store import atomic, batches
from snapshot_store import frames as fmt


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


def test_ensure_writable_dir_creates_parents_and_leaves_no_probe(tmp_path):
    store = tmp_path / "a" / "b" / "pickle"

    atomic.ensure_writable_dir(store)
    atomic.ensure_writable_dir(store)  # an existing directory is fine too

    assert store.is_dir() and list(store.iterdir()) == []


def test_ensure_writable_dir_raises_the_os_error_as_is(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(NotADirectoryError):
        atomic.ensure_writable_dir(blocker / "run")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_ensure_writable_dir_refuses_a_directory_that_takes_no_file():
    # /proc exists and takes no new file, even from root, for whom permission bits do not count.
    with pytest.raises(OSError):
        atomic.ensure_writable_dir("/proc")


def test_a_huge_scalar_batch_is_split_into_frames_under_the_limit(monkeypatch):
    monkeypatch.setattr(fmt, "MAX_FRAME_BYTES", 2_000)
    steps = list(range(1_000))
    series = [("train", name, steps, [0.0] * 1000, [1.0] * 1000, [0.5] * 1000) for name in "ab"]
    data = batches.encode_scalar_batch(series)
    frames = list(fmt.iter_frames(data))
    assert len(frames) > 4 and frames[-1].end == len(data)
    assert all(len(f.payload) <= 2_000 for f in frames)
    got: dict[str, list] = {}
    for frame in frames:
        for _, name, s, *_ in batches.decode_scalar_batch(frame.payload, "mem"):
            got.setdefault(name, []).extend(s)
    assert got == {"a": steps, "b": steps}


def test_an_image_above_the_frame_limit_is_dropped_with_an_error(monkeypatch, caplog):
    monkeypatch.setattr(fmt, "MAX_FRAME_BYTES", 2_000)
    small, big = ("g", "small", 0, 0.0, 0.0, b"x"), ("g", "big", 0, 0.0, 0.0, b"x" * 5_000)
    frames = list(fmt.iter_frames(batches.encode_image_batch([small, big])))
    assert [batches.decode_image_batch(f.payload, "mem") for f in frames] == [[small]]
    assert "dropped one images record" in caplog.text
