"""The extras stream: records checked one by one, a hostile frame refused, old stores still read."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from snapshot_store import Recorder, StoreReader, read_store
from snapshot_store.format import frames as fmt
from snapshot_store.format import kinds
from tests.fixtures.logged.records import VALID

V1_STORE = Path(__file__).parents[1] / "data" / "store_v1"


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
