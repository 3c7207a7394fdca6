"""The schema: each extra kind's checks, and a bad record costs only itself, never its
neighbours or the file."""

from __future__ import annotations

import logging
import pickle

import pytest

from snapshot_store import StoreReader, read_store
from snapshot_store.format import batches, schema
from snapshot_store.format import frames as fmt
from tests.fixtures.logged.records import VALID
from tests.fixtures.runs.export import run_export


def _series(name: str, steps: list, **cols) -> tuple:
    n = len(steps)
    return (
        "train",
        name,
        steps,
        cols.get("epochs", [0.0] * n),
        cols.get("times", [1.0] * n),
        cols.get("values", [float(i) for i in range(n)]),
    )


def _raw_frame(doc: object) -> bytes:
    return fmt.encode_frame(pickle.dumps(doc, protocol=4))


BAD_SERIES = {
    "string step": _series("bad", ["3"]),
    "bool step": _series("bad", [True]),
    "float step": _series("bad", [1.5]),
    "nan step": _series("bad", [float("nan")]),
    "huge step": _series("bad", [2**70]),
    "list value": _series("bad", [1], values=[[1.0]]),
    "bool value": _series("bad", [1], values=[True]),
    "huge int value": _series("bad", [1], values=[10**400]),
    "string epoch": _series("bad", [1], epochs=["x"]),
    "none wall time": _series("bad", [1], times=[None]),
    "column lengths": _series("bad", [1, 2], values=[1.0]),
    "column not a list": _series("bad", (1, 2)),
    "int group": (7, "bad", [1], [0.0], [1.0], [1.0]),
    "short tuple": ("train", "bad", [1]),
    "not a tuple": {"group": "train"},
}


@pytest.mark.parametrize("kind", sorted(BAD_SERIES))
def test_bad_series_is_skipped_with_one_warning_and_its_neighbours_survive(tmp_path, kind, caplog):
    first = batches.encode_scalar_batch([_series("a", [0, 1])])
    mixed = _raw_frame({"v": 1, "series": [_series("b", [0]), BAD_SERIES[kind], _series("b", [1])]})
    later = batches.encode_scalar_batch([_series("a", [2])])
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(first + mixed + later)
    with caplog.at_level(logging.WARNING, logger="snapshot_store.read.store_reader"):
        history, reader, _ = read_store(tmp_path)
    assert history.series(("train", "a"))[0] == [0, 1, 2]
    assert history.series(("train", "b"))[0] == [0, 1]
    assert len(reader.warnings) == 1, reader.warnings
    warning = reader.warnings[0]
    assert "scalars-00000000.pickle" in warning
    assert f"frame at byte {len(first)}" in warning
    assert len(caplog.records) == 1


def test_bad_record_first_in_a_segment_does_not_stall_follow_mode(tmp_path):
    segment = tmp_path / fmt.segment_name(fmt.SCALARS, 0)
    bad = _raw_frame({"v": 1, "series": [_series("a", ["0"])]})
    segment.write_bytes(bad + batches.encode_scalar_batch([_series("a", list(range(100)))]))
    reader = StoreReader(tmp_path)
    assert reader.poll().points == 100
    with segment.open("ab") as f:  # the writer goes on: the reader follows
        f.write(batches.encode_scalar_batch([_series("a", [100])]))
    assert reader.poll().points == 1
    assert len(reader.warnings) == 1


@pytest.mark.parametrize(
    "doc",
    [{"v": 1}, {"v": 1, "series": "x"}, [1, 2], "text", None, {"v": 1, "series": None}],
    ids=repr,
)
def test_frame_of_the_wrong_shape_is_one_bad_record(tmp_path, doc):
    good = batches.encode_scalar_batch([_series("a", [0])])
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(good + _raw_frame(doc) + good)
    history, reader, _ = read_store(tmp_path)
    assert history.points == 2
    assert len(reader.warnings) == 1
    assert f"frame at byte {len(good)}" in reader.warnings[0]


def test_non_finite_values_are_data(tmp_path):
    values = [float("nan"), float("inf"), -float("inf"), 1]
    batch = batches.encode_scalar_batch([_series("loss", [0, 1, 2, 3], values=values)])
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(batch)
    history, reader, _ = read_store(tmp_path)
    assert history.points == 4
    assert reader.warnings == []


BAD_IMAGES = {
    "float step": ("img", "x", 1.0, 0.0, 1.0, b"png"),
    "huge step": ("img", "x", 2**64, 0.0, 1.0, b"png"),
    "bool step": ("img", "x", False, 0.0, 1.0, b"png"),
    "png str": ("img", "x", 1, 0.0, 1.0, "png"),
    "png list": ("img", "x", 1, 0.0, 1.0, [137, 80]),
    "epoch str": ("img", "x", 1, "0", 1.0, b"png"),
    "name none": ("img", None, 1, 0.0, 1.0, b"png"),
    "short": ("img", "x", 1),
    "caption str": ("img", "x", 1, 0.0, 1.0, b"png", "a cat"),
    "caption number": ("img", "x", 1, 0.0, 1.0, b"png", ["a", 1]),
}


@pytest.mark.parametrize("kind", sorted(BAD_IMAGES))
def test_bad_image_record_is_skipped_and_its_neighbours_survive(tmp_path, kind):
    good = ("img", "x", 0, 0.0, 1.0, b"png0")
    first = batches.encode_image_batch([good])
    mixed = _raw_frame({"v": 1, "images": [good, BAD_IMAGES[kind], good]})
    (tmp_path / fmt.segment_name(fmt.IMAGES, 0)).write_bytes(first + mixed + first)
    reader = StoreReader(tmp_path)
    update = reader.poll()
    assert len(update.images) == 4
    assert len(reader.warnings) == 1
    assert "images-00000000.pickle" in reader.warnings[0]
    assert f"frame at byte {len(first)}" in reader.warnings[0]


def test_an_image_reads_with_its_captions_and_one_stored_before_captions_without(tmp_path):
    old = ("img", "x", 0, 0.0, 1.0, b"png0")  # as every store before captions wrote it
    captioned = ("img", "x", 1, 0.0, 1.0, b"png1", ["a cat", "<b>dog</b>"])
    (tmp_path / fmt.segment_name(fmt.IMAGES, 0)).write_bytes(
        batches.encode_image_batch([old, captioned])
    )
    reader = StoreReader(tmp_path)
    assert reader.poll().images == [old, captioned] and reader.warnings == []


def test_unpicklable_frame_still_skips_the_rest_of_its_file(tmp_path):
    good = batches.encode_scalar_batch([_series("a", [0])])
    broken = fmt.encode_frame(b"\x80\x04not a pickle")
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(good + broken + good)
    history, reader, _ = read_store(tmp_path)
    assert history.points == 1
    assert len(reader.warnings) == 1
    assert "rest of" in reader.warnings[0]


@pytest.mark.parametrize("doc", [[1], "x", 3], ids=repr)
def test_documents_that_are_not_dicts_are_skipped(tmp_path, doc):
    (tmp_path / fmt.STATUS_FILE).write_bytes(fmt.encode_frame(pickle.dumps(doc)))
    (tmp_path / fmt.META_FILE).write_bytes(b"garbage")
    update = StoreReader(tmp_path).poll()
    assert update.status is None and update.meta is None


@pytest.mark.integration
def test_export_of_a_store_with_bad_records_exits_0_with_the_good_rows(tmp_path):
    bad = [_raw_frame({"v": 1, "series": [s]}) for s in BAD_SERIES.values()]
    good = batches.encode_scalar_batch([_series("a", [0, 1])])
    data = bad[0] + good + b"".join(bad[1:]) + batches.encode_scalar_batch([_series("a", [2])])
    (tmp_path / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(data)
    result = run_export(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    rows = [line for line in result.stdout.splitlines()[1:] if line]
    assert [row.split(",")[3] for row in rows] == ["0", "1", "2"]


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


def test_a_stored_group_word_names_the_same_group_as_a_section_word():
    assert schema.SECTION_WORDS.items() >= schema.GROUP_WORDS.items()
    assert schema.GROUP_WORDS["val"] == schema.SECTION_WORDS["eval"] == "validation"
    assert "eval" not in schema.GROUP_WORDS  # a stored group "eval" is a window of its own
