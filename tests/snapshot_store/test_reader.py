"""Incremental reading: torn tails, corrupt and hostile segments, following a live writer."""

from __future__ import annotations

import os
import pickle
import threading
import time

from snapshot_store import History, Recorder, StoreReader
from snapshot_store import frames as fmt


def _batch(name: str, steps: list[int]) -> bytes:
    return fmt.encode_scalar_batch(
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


def test_history_keeps_the_latest_value_per_step():
    history = History()
    assert (
        history.add([("train", "loss", [0, 1, 2], [0.0] * 3, [0.0] * 3, [1.0, 2.0, 3.0])]) == set()
    )
    rewound = history.add([("train", "loss", [2, 3], [0.0] * 2, [0.0] * 2, [30.0, 4.0])])
    assert rewound == {("train", "loss")}
    steps, _, _, values = history.series(("train", "loss"))
    assert steps == [0, 1, 2, 3] and values == [1.0, 2.0, 30.0, 4.0]


def test_max_bytes_pages_through_a_long_history_reading_each_byte_once(tmp_path):
    store = tmp_path / "run" / "pickle"
    with Recorder(store, flush_interval=0.01, segment_bytes=2_000, rank=0) as rec:
        for step in range(3_000):
            rec.log({"loss": float(step)}, step=step)
            if step % 500 == 0:
                rec.flush()
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
