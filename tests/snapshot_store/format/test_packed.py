"""Store format 3: scalar columns packed as little-endian bytes, read back as typed arrays."""

from __future__ import annotations

import math
import pickle
from array import array

import pytest

from run_core import atomic
from snapshot_store import Recorder, StoreReader
from snapshot_store.format import batches, packed, schema
from snapshot_store.format import frames as fmt
from snapshot_store.read.store_reader import read_store


def _payloads(data: bytes) -> list[dict]:
    return [pickle.loads(frame.payload) for frame in fmt.iter_frames(data)]


def test_a_batch_is_stored_packed_and_read_back_exactly():
    steps, values = [0, 1, 2**40, 2**63 - 1], [0.5, math.inf, -0.0, 1e-300]
    series = [("train", "loss", steps, [0.0, 0.0, 1.0, 1.5], [1.7e9, 1.7e9 + 1, 2e9, 3e9], values)]
    data = batches.encode_scalar_batch(series)
    stored = _payloads(data)[0]["series"][0]
    assert stored[2] == b"".join(s.to_bytes(8, "little", signed=True) for s in steps)
    (frame,) = fmt.iter_frames(data)
    (read,) = batches.decode_scalar_batch(frame.payload, "scalars-00000000.pickle")
    assert read[2] == array("q", steps) and read[5] == array("d", values)
    assert [list(c) for c in read[2:]] == [list(c) for c in series[0][2:]]


def test_nan_values_survive_packing():
    (frame,) = fmt.iter_frames(
        batches.encode_scalar_batch([("t", "x", [1], [0.0], [1.0], [math.nan])])
    )
    assert math.isnan(batches.decode_scalar_batch(frame.payload, "s")[0][5][0])


def test_a_step_past_int64_stays_a_list_and_the_reader_reports_it():
    (frame,) = fmt.iter_frames(
        batches.encode_scalar_batch([("t", "x", [2**64], [0.0], [1.0], [1.0])])
    )
    assert pickle.loads(frame.payload)["series"][0][2] == [2**64]
    good, problems = batches.scalar_records(frame.payload, "s")
    assert good == [] and problems == ["t/x: steps holds an integer outside int64"]


@pytest.mark.parametrize(
    ("columns", "problem"),
    [
        ((b"\0" * 8, b"\0" * 8, b"\0" * 8, b"\0" * 16), "columns differ in length"),
        ((b"\0" * 7,) * 4, "packed columns are not a whole number of 8-byte items"),
        ((b"\0" * 8, [0.0], b"\0" * 8, b"\0" * 8), "columns mix packed and list forms"),
        ((array("q", [1]), array("q", [1]), array("d", [1]), array("d", [1])), "columns mix"),
    ],
)
def test_malformed_packed_columns_are_one_bad_record(columns, problem):
    assert problem in schema.series_problem(("t", "x", *columns))


def test_what_a_reader_returns_passes_the_schema_it_came_through():
    (frame,) = fmt.iter_frames(
        batches.encode_scalar_batch([("t", "x", [1, 2], [0, 0], [1, 2], [3, 4])])
    )
    (read,) = batches.decode_scalar_batch(frame.payload, "s")
    assert schema.series_problem(read) is None


def test_a_store_mixing_list_and_packed_frames_reads_as_one_history(tmp_path):
    list_frame = fmt.encode_frame(
        pickle.dumps(
            {"v": 2, "series": [("train", "loss", [0, 1], [0, 0], [1.0, 2.0], [3.0, 2.0])]}
        )
    )
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(list_frame)
    with Recorder(tmp_path, rank=0) as rec:  # a format-3 writer resuming the run
        rec.log({"loss": 1.0}, step=2)
    history, reader, _ = read_store(tmp_path)
    assert history.series(("train", "loss"))[0] == [0, 1, 2]
    assert history.series(("train", "loss"))[3] == [3.0, 2.0, 1.0]
    assert reader.warnings == []


def test_a_store_of_a_newer_format_says_so_once(tmp_path):
    with Recorder(tmp_path, rank=0) as rec:
        rec.log({"loss": 1.0}, step=0)
    path = tmp_path / fmt.META_FILE
    meta = fmt.decode_document(path.read_bytes(), path)
    atomic.write_atomic(
        path, fmt.encode_document({**meta, "format_version": fmt.FORMAT_VERSION + 1})
    )
    reader = StoreReader(tmp_path)
    reader.poll()
    reader.poll()
    assert len(reader.warnings) == 1
    assert f"store format {fmt.FORMAT_VERSION + 1}, newer than this reader's" in reader.warnings[0]


def test_pack_refuses_what_does_not_fit():
    assert packed.pack([[1.5], [0.0], [0.0], [0.0]]) is None  # a float step
    assert packed.pack([[2**63], [0.0], [0.0], [0.0]]) is None
