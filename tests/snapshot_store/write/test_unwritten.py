"""Records a recorder could not write before it closed (a real full tmpfs) are counted in its status."""

from __future__ import annotations

import logging

from snapshot_store import Recorder, read_store
from snapshot_store.format import batches
from snapshot_store.write.unwritten import unwritten_records
from tests.fixtures.servers.disk import fill


def test_records_left_on_a_full_disk_are_counted_in_the_final_status(small_disk, caplog):
    store = small_disk / "run" / "pickle"
    # No timed flush before close(): the 20,000 points below are one batch (~0.6 MB).
    recorder = Recorder(store, rank=0, flush_interval=600.0, heartbeat_seconds=600.0)
    recorder.log({"loss": 1.0}, step=0)
    assert recorder.flush()
    # Room for the small status document, not for a batch of 20,000 points (~0.6 MB).
    fill(small_disk, leave=16 * 1024)
    with caplog.at_level(logging.ERROR, logger="snapshot_store"):
        for step in range(1, 20_001):
            recorder.log({"loss": float(step)}, step=step)
        recorder.close()
    assert "could not be written" in caplog.text
    history, reader, update = read_store(store)
    assert not reader.warnings, reader.warnings
    assert update.status["state"] == "finished"
    assert update.status["unwritten_records"] == {"scalars": 20_000}
    steps = history.series(("train", "loss"))[0]
    assert list(steps) == [0]  # what was written reads; nothing torn or half-kept


def test_a_clean_close_counts_nothing(tmp_path):
    with Recorder(tmp_path / "pickle", rank=0) as recorder:
        recorder.log({"a": 1.0, "b": 2.0}, step=1)
    _, _, update = read_store(tmp_path / "pickle")
    assert update.status["unwritten_records"] == {}


def test_counts_points_images_and_extras_of_encoded_batches():
    from snapshot_store.format import frames as fmt
    from snapshot_store.format import kinds

    scalars = batches.encode_scalar_batch(
        [("train", "loss", [1, 2, 3], [0.0] * 3, [0.0] * 3, [1.0] * 3)]
    )
    images = batches.encode_image_batch([("images", "x", 1, 0.0, 0.0, b"png")])
    extras = kinds.encode_extra_batch([("text", "note", 1, 0.0, {"text": "hi"})])
    counts = unwritten_records(
        {fmt.SCALARS: [scalars, scalars], fmt.IMAGES: [images], fmt.EXTRAS: [extras]}
    )
    assert counts == {"scalars": 6, "images": 1, "extras": 1}
