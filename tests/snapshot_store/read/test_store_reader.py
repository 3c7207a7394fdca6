"""Incremental reading: torn tails, corrupt and hostile segments, following a live writer,
bounded pages on files of any size."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest

from snapshot_store import History, Recorder, StoreReader
from snapshot_store.format import batches
from snapshot_store.format import frames as fmt
from snapshot_store.read.store_reader import MAX_DOCUMENT_BYTES, READ_BYTES, LocalSource


def _batch(name: str, steps: list[int]) -> bytes:
    return batches.encode_scalar_batch(
        [("train", name, steps, [0.0] * len(steps), [1.0] * len(steps), [float(s) for s in steps])]
    )


def _points(update) -> list[tuple[str, int]]:
    return [(s[1], step) for s in update.scalars for step in s[2]]


def test_reader_stops_at_a_torn_frame_cut_at_every_offset_and_resumes(tmp_path):
    data = _batch("a", [0, 1]) + _batch("a", [2])
    segment = tmp_path / fmt.segment_name(fmt.SCALARS, 0)
    for cut in range(len(data) + 1):
        segment.write_bytes(data[:cut])
        reader = StoreReader(tmp_path)
        seen = _points(reader.poll())
        segment.write_bytes(data)  # the writer finishes the frame
        seen += _points(reader.poll())
        assert seen == [("a", 0), ("a", 1), ("a", 2)], cut
        assert reader.warnings == []


def test_corrupt_closed_segment_is_skipped_with_a_warning_and_reading_goes_on(tmp_path, caplog):
    bad = bytearray(_batch("a", [0]) + _batch("a", [1]))
    bad[-3] ^= 0xFF  # the second frame's checksum
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(bytes(bad))
    (tmp_path / fmt.segment_name(fmt.SCALARS, 1)).write_bytes(_batch("a", [2]))
    reader = StoreReader(tmp_path)
    assert _points(reader.poll()) == [("a", 0), ("a", 2)]
    assert len(reader.warnings) == 1 and "scalars-00000000.pickle" in reader.warnings[0]
    assert "checksum" in caplog.text
    assert not reader.poll()  # warned once, not at every poll


class _Touch:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_hostile_frame_is_refused_named_and_skipped(tmp_path):
    victim = tmp_path.parent / f"{tmp_path.name}-pwned"
    hostile = fmt.encode_frame(pickle.dumps({"v": 1, "series": [_Touch(victim)]}))
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(_batch("a", [0]) + hostile)
    (tmp_path / fmt.META_FILE).write_bytes(fmt.encode_frame(pickle.dumps(_Touch(victim))))
    reader = StoreReader(tmp_path)
    update = reader.poll()
    assert _points(update) == [("a", 0)] and update.meta is None
    assert not victim.exists()
    assert len(reader.warnings) == 2
    assert any("meta.pickle" in w and "refused global" in w for w in reader.warnings)
    assert any("scalars-00000000.pickle" in w and "refused global" in w for w in reader.warnings)


def test_malformed_but_safe_payload_is_reported(tmp_path):
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(fmt.encode_frame(fmt.dumps([1, 2])))
    reader = StoreReader(tmp_path)
    assert not reader.poll().scalars
    assert "scalar frame without a 'series' list" in reader.warnings[0]


def test_reader_following_a_live_writer_sees_every_value_once(tmp_path):
    store = tmp_path / "run" / "pickle"
    rec = Recorder(store, flush_interval=0.01, segment_bytes=2048, rank=0)
    reader = StoreReader(store)
    history = History()
    n = 3000

    def write():
        for step in range(n):
            rec.log({"loss": float(step)}, step=step)
            if step % 100 == 0:
                time.sleep(0.005)  # spread over many flushes and segment rolls
        rec.close()

    writer = threading.Thread(target=write)
    writer.start()
    while writer.is_alive():
        history.add(reader.poll().scalars)
    history.add(reader.poll().scalars)
    steps, _, _, values = history.series(("train", "loss"))
    assert steps == list(range(n)) and values == [float(s) for s in range(n)]
    assert len(list(store.glob("scalars-*.pickle"))) > 1  # it rolled while being followed
    assert reader.warnings == []


def _segmented_store(tmp_path, steps: int):
    """A run of ``steps`` losses spread over many small segments."""
    store = tmp_path / "run" / "pickle"
    with Recorder(store, flush_interval=0.01, segment_bytes=2_000, rank=0) as rec:
        for step in range(steps):
            rec.log({"loss": float(step)}, step=step)
            if step % 500 == 0:
                rec.flush()
    return store


def test_max_bytes_pages_through_a_long_history_reading_each_byte_once(tmp_path):
    store = _segmented_store(tmp_path, 3_000)
    segments = list(store.glob("scalars-*.pickle"))
    assert len(segments) > 3
    reader, history, polls = StoreReader(store), History(), 0
    while True:
        history.add(reader.poll(max_bytes=1).scalars)  # one segment per page
        polls += 1
        if not reader.more:
            break
    assert polls == len(segments)
    assert history.series(("train", "loss"))[0] == list(range(3_000))
    assert not reader.poll()


class _ListCount(LocalSource):
    """A real LocalSource that counts its listings (one LIST request each on S3)."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.listings = 0

    def list(self) -> dict[str, tuple]:
        self.listings += 1
        return super().list()


def test_a_paged_replay_lists_the_store_once_and_the_next_poll_sees_new_files(tmp_path):
    store = _segmented_store(tmp_path, 2_000)
    source = _ListCount(store)
    reader, history, polls = StoreReader(source), History(), 0
    while True:
        history.add(reader.poll(max_bytes=1).scalars)
        polls += 1
        if not reader.more:
            break
    assert polls > 3 and source.listings == 1
    with Recorder(store, rank=0) as rec:  # a resumed run: a new segment after the replay
        rec.log({"loss": -1.0}, step=2_000)
    history.add(reader.poll(max_bytes=1).scalars)
    assert source.listings == 2
    assert history.series(("train", "loss"))[0] == list(range(2_001))


class _PageLog(LocalSource):
    """A real LocalSource that remembers how many bytes each read asked for."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.asked: list[int | None] = []

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes:
        self.asked.append(length)
        return super().read(name, offset, length)


def _image_frame(step: int, png: bytes) -> bytes:
    return batches.encode_image_batch([("samples", "grid", step, 0.0, 1.0, png)])


def test_a_segment_larger_than_a_page_is_read_in_bounded_pages(tmp_path):
    png = os.urandom(700_000)  # frames that straddle the 4 MiB pages
    frames = [_image_frame(step, png) for step in range(20)]
    (tmp_path / fmt.segment_name(fmt.IMAGES, 0)).write_bytes(b"".join(frames))
    source = _PageLog(tmp_path)
    reader = StoreReader(source)
    steps = []
    while True:
        steps += [image[2] for image in reader.poll(max_bytes=1).images]
        if not reader.more:
            break
    assert steps == list(range(20)) and reader.warnings == []
    assert len(source.asked) > 3 and set(source.asked) == {READ_BYTES}, "pages, never whole"


@pytest.mark.parametrize("max_bytes", [None, 1])
def test_a_frame_longer_than_a_page_is_read_whole(tmp_path, max_bytes):
    big = _image_frame(1, os.urandom(READ_BYTES + 1000))
    (tmp_path / fmt.segment_name(fmt.IMAGES, 0)).write_bytes(big + _image_frame(2, b"x"))
    reader, steps = StoreReader(tmp_path), []
    for _ in range(5):  # paging makes progress with every poll
        steps += [image[2] for image in reader.poll(max_bytes=max_bytes).images]
        if not reader.more:
            break
    assert steps == [1, 2] and not reader.more


def test_an_oversize_frame_is_skipped_unread_and_the_frames_after_it_are_kept(tmp_path, caplog):
    length = fmt.MAX_FRAME_BYTES + 1
    header = length.to_bytes(8, "little")
    header += zlib.crc32(length.to_bytes(8, "little")).to_bytes(4, "little")
    segment = tmp_path / fmt.segment_name(fmt.SCALARS, 0)
    with segment.open("wb") as f:
        f.write(_batch("a", [0]) + header)
        f.truncate(f.tell() + length + 4)  # sparse: 64 MiB that nobody reads
        f.seek(0, os.SEEK_END)
        f.write(_batch("a", [1]))
    source = _PageLog(tmp_path)
    reader = StoreReader(source)
    assert _points(reader.poll()) == [("a", 0), ("a", 1)]
    assert len(reader.warnings) == 1 and "above the" in reader.warnings[0]
    assert max(n for n in source.asked if n is not None) == READ_BYTES, "not allocated"
    assert not reader.poll()


def test_an_oversize_length_past_the_end_of_the_file_ends_the_file(tmp_path):
    length = 2**63
    raw = length.to_bytes(8, "little")
    data = _batch("a", [0]) + raw + zlib.crc32(raw).to_bytes(4, "little") + b"\0" * 100
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(data)
    (tmp_path / fmt.segment_name(fmt.SCALARS, 1)).write_bytes(_batch("a", [1]))
    reader = StoreReader(tmp_path)
    assert _points(reader.poll()) == [("a", 0), ("a", 1)]
    assert len(reader.warnings) == 1 and "skipped the rest" in reader.warnings[0]


def test_a_huge_document_is_skipped_without_reading_it(tmp_path):
    with (tmp_path / fmt.STATUS_FILE).open("wb") as f:
        f.truncate(MAX_DOCUMENT_BYTES + 1)
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(_batch("a", [0]))
    source = _PageLog(tmp_path)
    reader = StoreReader(source)
    update = reader.poll()
    assert update.status is None and _points(update) == [("a", 0)]
    assert "larger than any document" in reader.warnings[0]
    assert source.asked == [READ_BYTES]  # the segment only


@pytest.mark.integration  # a child process, for its own peak RSS
def test_replaying_a_segment_of_600_mb_stays_small_in_memory(tmp_path):
    png = os.urandom(1 << 20)
    segment = tmp_path / fmt.segment_name(fmt.IMAGES, 0)
    with segment.open("wb") as f:
        for step in range(600):
            f.write(_image_frame(step, png))
    child = (
        "import sys\n"
        "from snapshot_store import read_store\n"
        "history, reader, update = read_store(sys.argv[1], images=False)\n"
        "assert not reader.warnings, reader.warnings\n"
        # VmHWM: this image's own peak (ru_maxrss keeps pytest's across fork+exec)
        "status = open('/proc/self/status').read().splitlines()\n"
        "print(int(next(l for l in status if l.startswith('VmHWM')).split()[1]) // 1024)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path)], capture_output=True, text=True, check=True
    )
    peak_mb = int(out.stdout.split()[-1])
    assert peak_mb < 150, f"{peak_mb} MB resident to read a {segment.stat().st_size >> 20} MiB file"


# A reader held to file modes (as any user is), polling once per line on stdin.
_POLLING_READER = """
import sys
from snapshot_store import StoreReader
reader = StoreReader(sys.argv[1])
for _ in sys.stdin:
    update = reader.poll()
    meta = update.meta["name"] if update.meta else None
    print(meta, update.points, len(reader.warnings), flush=True)
"""


def test_an_unreadable_meta_and_segment_are_read_once_readable_with_one_warning(tmp_path):
    from tests.fixtures.servers.disk import held_to_file_modes

    store = tmp_path / "run" / "pickle"
    with Recorder(store, rank=0, segment_bytes=1) as rec:
        for first in (0, 5):
            rec.log({"loss": 1.0}, step=first)
            rec.flush()
    locked = [store / fmt.META_FILE, sorted(store.glob("scalars-*.pickle"))[0]]
    for path in locked:
        path.chmod(0)
    reader = subprocess.Popen(
        [*held_to_file_modes(), sys.executable, "-c", _POLLING_READER, str(store)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parents[3],
    )  # fmt: skip
    assert reader.stdin is not None and reader.stdout is not None
    try:
        seen = []
        for unlock in (False, False, True, False):
            if unlock:
                for path in locked:
                    path.chmod(0o644)
            reader.stdin.write("poll\n")
            reader.stdin.flush()
            seen.append(reader.stdout.readline().split())
    finally:
        for path in locked:
            path.chmod(0o644)
        reader.kill()
        reader.communicate()
    # Unreadable: the other segment only, two warnings (meta, segment), not one per poll.
    assert seen[:2] == [["None", "1", "2"], ["None", "0", "2"]]
    assert seen[2] == ["run", "1", "2"]  # readable again: both read, nothing said twice
    assert seen[3] == ["None", "0", "2"]  # and not read twice
