"""Extra record kinds: schemas checked record by record, old stores still read."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from snapshot_store import Recorder, StoreReader, kinds, read_store, schema
from snapshot_store import frames as fmt

V1_STORE = Path(__file__).parent / "data" / "store_v1"

VALID = [
    ("text", "note", 1, 10.0, {"text": "hello"}),
    ("tensor", "t", 1, 10.0, {"shape": [2], "dtype": "float32", "values": [1.0, float("nan")]}),
    (
        "histogram",
        "w",
        2,
        10.0,
        {
            "min": 0.0,
            "max": 1.0,
            "num": 3,
            "sum": 1.5,
            "sum_squares": 1.25,
            "limits": [0.0, 1.0],
            "counts": [0.0, 3.0],
        },
    ),
    (
        "hparams",
        "hparams",
        0,
        10.0,
        {"hparams": {"lr": 0.1, "opt": "adam", "wd": None}, "metrics": {"acc": 0.9}},
    ),
    (
        "pr_curve",
        "pr",
        3,
        10.0,
        {
            **{k: [1.0, 0.0] for k in ("tp", "fp", "tn", "fn", "precision", "recall")},
            "num_thresholds": 2,
        },
    ),
    ("audio", "a", 0, 10.0, {"wav": b"RIFF", "sample_rate": 8000.0}),
    ("video", "v", 0, 10.0, {"gif": b"GIF89a", "fps": 4.0}),
    ("points", "e", 0, 10.0, {"x": [0.0, 1.0], "y": [1.0, 0.0], "labels": ["a", "b"]}),
    ("mesh", "m", 0, 10.0, {"vertices": [0.0] * 9, "faces": [0, 1, 2], "colors": []}),
    ("layout", "custom_scalars", 0, 10.0, {"layout": {"cat": {"title": ["Multiline", ["a/b"]]}}}),
]


@pytest.mark.parametrize("record", VALID, ids=lambda r: r[0])
def test_each_kind_has_a_schema_its_valid_records_pass(record):
    assert schema.record_problem(record) is None


@pytest.mark.parametrize(
    "record, why",
    [
        (("text", "t", 0, 1.0, {"text": b"bytes"}), "field 'text' has the wrong type"),
        (("text", "t", 0, 1.0, {"text": "x", "more": 1}), "exactly the fields"),
        (("nope", "t", 0, 1.0, {}), "unknown kind"),
        (("text", "t", True, 1.0, {"text": "x"}), "not an int64"),
        (("text", "t", 2**70, 1.0, {"text": "x"}), "not an int64"),
        (("text", "t", 0, "now", {"text": "x"}), "wall time"),
        (("histogram", "h", 0, 1.0, {**VALID[2][4], "counts": [1.0]}), "differ in length"),
        (("hparams", "h", 0, 1.0, {"hparams": {"x": [1]}, "metrics": {}}), "'hparams'"),
        (("hparams", "h", 0, 1.0, {"hparams": {}, "metrics": {"acc": "high"}}), "'metrics'"),
        (
            ("points", "e", 0, 1.0, {"x": [0.0], "y": [0.0], "labels": ["a", "b"]}),
            "labels for 1 points",
        ),
        (("layout", "l", 0, 1.0, {"layout": {"c": {"t": ["Pie", ["a"]]}}}), "'layout'"),
        (("text", "t", 0, 1.0), "5-tuple"),
        (("mesh", "m", 0, 1.0, {"vertices": [0.0] * 4, "faces": [], "colors": []}), "in threes"),
        (
            ("mesh", "m", 0, 1.0, {"vertices": [0.0] * 6, "faces": [0, 1, 2], "colors": []}),
            "do not exist",
        ),
        (
            ("mesh", "m", 0, 1.0, {"vertices": [0.0] * 6, "faces": [], "colors": [1, 2, 3]}),
            "1 colors for 2",
        ),
    ],
)
def test_records_breaking_their_schema_are_named(record, why):
    assert why in schema.record_problem(record)


def test_a_bad_record_costs_only_itself_in_a_segment(tmp_path):
    frame = fmt.encode_frame(
        fmt.dumps({"v": 2, "records": [VALID[0], ("text", "bad", 0, 1.0, {"text": 5}), VALID[1]]})
    )
    (tmp_path / fmt.segment_name(fmt.EXTRAS, 0)).write_bytes(
        frame + kinds.encode_extra_batch([VALID[2]])
    )
    reader = StoreReader(tmp_path)
    assert [r[1] for r in reader.poll().extras] == ["note", "t", "w"]
    assert len(reader.warnings) == 1 and "bad: text field 'text'" in reader.warnings[0]


def test_a_hostile_extras_frame_runs_nothing(tmp_path):
    victim = tmp_path.parent / f"{tmp_path.name}-pwned"

    class Touch:
        def __reduce__(self):
            return (shutil.copy, (__file__, str(victim)))

    hostile = fmt.encode_frame(pickle.dumps({"v": 2, "records": [Touch()]}))
    (tmp_path / fmt.segment_name(fmt.EXTRAS, 0)).write_bytes(hostile)
    reader = StoreReader(tmp_path)
    assert not reader.poll().extras and not victim.exists()
    assert "refused global" in reader.warnings[0]


def test_the_recorder_writes_every_kind_and_skips_an_invalid_one_with_a_warning(tmp_path, caplog):
    with Recorder(tmp_path, rank=0) as rec:
        for kind, tag, step, wall, data in VALID:
            rec.log_record(kind, tag, data, step, wall_time=wall)
        rec.log_record("text", "broken", {"text": None}, 0)
        rec.log_record("text", "failing", "x", 0, encode=int)  # int("x"): ValueError
        with pytest.raises(ValueError, match="unknown record kind"):
            rec.log_record("pie", "x", {}, 0)
    _, reader, update = read_store(tmp_path)
    assert update.extras[0] == VALID[0] and [r[1] for r in update.extras] == [r[1] for r in VALID]
    assert "'broken'" in caplog.text and "'failing'" in caplog.text and reader.warnings == []
    assert update.meta["format_version"] == fmt.FORMAT_VERSION == 3


def test_a_store_written_by_format_version_1_still_reads(tmp_path):
    history, reader, update = read_store(V1_STORE)
    assert reader.warnings == [] and update.meta["format_version"] == 1
    assert history.series(("train", "loss"))[0] == [0, 1, 2]
    assert history.series(("train", "acc"))[3] == [0.5, 0.6, 0.7]
    assert len(update.images) == 1 and update.extras == []
    # and a version-2 writer resuming it appends its new kinds beside the old segments
    store = tmp_path / "resumed"
    shutil.copytree(V1_STORE, store)
    with Recorder(store, rank=0) as rec:
        rec.log({"loss": 0.1}, step=3)
        rec.log_record("text", "note", {"text": "resumed"}, 3)
    history, reader, update = read_store(store)
    assert history.series(("train", "loss"))[0] == [0, 1, 2, 3] and reader.warnings == []
    assert [r[4] for r in update.extras] == [{"text": "resumed"}] and len(
        update.meta["sessions"]
    ) == 2
