"""Scalar and image batches: split under the frame limit, decoded with their records checked."""

from __future__ import annotations

from snapshot_store.format import batches
from snapshot_store.format import frames as fmt


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


def test_a_record_frame_over_the_budget_is_one_problem_not_a_crash():
    record = ("hparams", "hparams", 0, 0.0, {"hparams": {"lr": 10**400}, "metrics": {}})
    fine = ("text", "notes", 1, 0.0, {"text": "ok"})
    payload = fmt.dumps({"v": 2, "records": [record, fine]})
    good, problems = batches.records_of(payload, "extras-00000000.pickle", "records", "extras",
                                        lambda item: None)  # fmt: skip
    assert good == [fine]
    assert problems == ["an integer of 1,329 bits, past what a float holds"]
