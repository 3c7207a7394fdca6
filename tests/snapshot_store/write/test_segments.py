"""Segment files: two writers on one store never lose each other's frames."""

from __future__ import annotations

from snapshot_store import StoreReader
from snapshot_store.format import batches
from snapshot_store.format import frames as fmt
from snapshot_store.write.segments import SegmentWriter


def _batch(name: str, step: int) -> bytes:
    return batches.encode_scalar_batch([("train", name, [step], [0.0], [1.0], [float(step)])])


def test_two_writers_on_one_store_keep_every_frame(tmp_path, caplog):
    # Both look at the empty store first, so both start at index 0: the second
    # one to open a segment meets the first one's file, and every roll after
    # that races again (a segment per frame).
    writers = {name: SegmentWriter(tmp_path, fmt.SCALARS, max_bytes=1, max_age=60) for name in "ab"}
    for step in range(51):
        for name, writer in writers.items():
            writer.append(_batch(name, step))
    for writer in writers.values():
        writer.close()
    points = {}
    for _group, name, steps, *_ in StoreReader(tmp_path).poll().scalars:
        points.setdefault(name, []).extend(steps)
    assert points == {"a": list(range(51)), "b": list(range(51))}
    assert len(list(tmp_path.glob("scalars-*.pickle"))) == 102
    assert "another writer" in caplog.text and "disk full" not in caplog.text
